"""Every benchmark result says which commit, machine, versions and command made it."""

import platform
import re
import subprocess
from pathlib import Path

import pytest

from bench import provenance

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted((ROOT / "bench" / "results").glob("*.md"))
WRITERS = sorted(
    p
    for p in (ROOT / "bench").glob("*.py")
    if "\nRESULTS = " in p.read_text(encoding="utf-8") and p.stem not in ("index", "pgindex")
)


def header_fields(text: str) -> dict[str, str]:
    """Return the provenance fields at the top of a results file, in order."""
    lines = text.splitlines()
    if not lines or lines[0] != provenance.MARK:
        return {}
    fields = {}
    for line in lines[1:]:
        match = re.fullmatch(r"- (\w+): (.+)", line)
        if not match:
            break
        fields[match[1]] = match[2]
    return fields


def test_results_and_writers_found():
    assert len(RESULTS) >= 5
    assert len(WRITERS) >= 5


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_results_file_starts_with_provenance(path):
    fields = header_fields(path.read_text(encoding="utf-8"))
    assert tuple(fields) == provenance.FIELDS, f"{path.name}: header is {fields}"
    assert re.match(r"[0-9a-f]{40}\b", fields["commit"]), fields["commit"]
    assert re.match(r"20\d\d-\d\d-\d\d", fields["date"])
    assert fields["command"].startswith("`python -m bench.")


def test_header_names_this_checkout_and_interpreter():
    lines = provenance.header("python -m bench.speed --rounds 2")
    fields = header_fields("\n".join(lines))
    assert tuple(fields) == provenance.FIELDS
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert fields["commit"].startswith(head)
    assert fields["Python"] == platform.python_version()
    assert "numpy " in fields["libraries"] and "django " in fields["libraries"]
    assert fields["command"] == "`python -m bench.speed --rounds 2`"


def test_write_puts_header_first(tmp_path):
    path = tmp_path / "results" / "x.md"
    provenance.write(path, "| a |\n", "python -m bench.x")
    text = path.read_text(encoding="utf-8")
    assert tuple(header_fields(text)) == provenance.FIELDS
    assert text.endswith("\n| a |\n")


@pytest.mark.parametrize("path", WRITERS, ids=lambda p: p.name)
def test_bench_writes_results_through_provenance(path):
    source = path.read_text(encoding="utf-8")
    assert "provenance.write(" in source, f"{path.name} writes results without the header"


def test_a_dirty_tree_names_each_changed_file_whole(tmp_path, monkeypatch):
    """`git status --porcelain` starts a modified file's line with a space: the first file's
    name kept its first letter only once that line was no longer stripped."""

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for name in ("alpha.py", "beta.py"):
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    for name in ("alpha.py", "beta.py"):
        (tmp_path / name).write_text("x = 2\n", encoding="utf-8")
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    assert provenance.commit().endswith(", tree dirty: alpha.py, beta.py")
