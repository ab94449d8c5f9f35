"""The examples in README.md and docs/*.md run as shown, and their links lead somewhere.

Runnable blocks: ```console (each `$ ` line is run from the checkout's root with bash; what
follows it, up to the next `$ ` line, is its standard output, then its standard error, then
`(exit status N)` when N is not 0; `...` in a line stands for any text), ```console lines (the
same, but the lines shown need only appear, in order, among the output's), and ```python
(executed). Commands running `manage.py` get the test database.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    command: str
    expected: tuple[str, ...]
    exact: bool

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, language: str) -> list[tuple[int, str, str]]:
    """Return (line, info string, body) of the page's fenced blocks whose language is given."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        info = match[1].strip()
        if info.split(" ")[0] == language:
            found.append((text.count("\n", 0, match.start()) + 2, info, match[2]))
    return found


def console_examples() -> list[Example]:
    examples = []
    for page in PAGES:
        for line, info, body in blocks(page, "console"):
            exact = info == "console"
            command, start, expected = None, line, []
            for number, row in enumerate(body.splitlines(), start=line):
                if row.startswith("$ "):
                    if command is not None:
                        examples.append(Example(page, start, command, tuple(expected), exact))
                    command, start, expected = row[2:], number, []
                elif command is not None:
                    expected.append(row)
            if command is not None:
                examples.append(Example(page, start, command, tuple(expected), exact))
    return examples


def python_examples() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{line}", body)
        for page in PAGES
        for line, _, body in blocks(page, "python")
    ]


def run(command: str, env: dict[str, str] | None = None) -> list[str]:
    """Run a shown command as a reader would in ./dev shell; return the lines it printed."""
    environment = {**os.environ, **(env or {})}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment.setdefault("DEBUG", "1")
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    if done.returncode:
        lines.append(f"(exit status {done.returncode})")
    return lines


def line_pattern(shown: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def matches(example: Example, lines: list[str]) -> bool:
    """Whether the output is as shown: every line (exact), or the shown lines in order."""
    patterns = [line_pattern(shown) for shown in example.expected]
    if example.exact:
        return len(patterns) == len(lines) and all(
            p.fullmatch(line) for p, line in zip(patterns, lines, strict=True)
        )
    rest = iter(lines)
    return all(any(p.fullmatch(line) for line in rest) for p in patterns)


ENGINE = [e for e in console_examples() if "manage.py" not in e.command]
SERVICE = [e for e in console_examples() if "manage.py" in e.command]


def test_docs_have_runnable_examples():
    assert len(ENGINE) >= 5
    assert SERVICE
    assert python_examples()


@pytest.mark.parametrize("example", ENGINE, ids=lambda e: e.name)
def test_console_example_prints_what_it_shows(example):
    lines = run(example.command)
    assert matches(example, lines), f"$ {example.command}\nprinted:\n" + "\n".join(lines)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("example", SERVICE, ids=lambda e: e.name)
def test_manage_example_prints_what_it_shows(example):
    from django.db import connection

    from dedup.textindex import text_index_drop

    # As on a fresh install: the tables are emptied between tests, but the text index's ranges
    # are indexes, which a migration test (0026 builds a range) may leave behind.
    text_index_drop()
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    lines = run(example.command, {"DATABASE_URL": url})
    assert matches(example, lines), f"$ {example.command}\nprinted:\n" + "\n".join(lines)


@pytest.mark.parametrize("name,source", python_examples(), ids=[n for n, _ in python_examples()])
def test_python_example_runs(name, source):
    exec(compile(source, name, "exec"), {"__name__": "docs_example"})


def test_matching_reads_wildcards_and_order():
    shown = Example(ROOT, 1, "x", ("a ... c", "d"), exact=True)
    assert matches(shown, ["a b c", "d"])
    assert not matches(shown, ["a b c", "d", "e"])
    assert not matches(shown, ["a b", "d"])
    lines = Example(ROOT, 1, "x", ("b", "d"), exact=False)
    assert matches(lines, ["a", "b", "c", "d"])
    assert not matches(lines, ["d", "b"])


# --- links ------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")


def slug(heading: str) -> str:
    """Return GitHub's anchor for a heading: lower case, punctuation dropped, spaces as '-'."""
    text = CODE_SPAN.sub(lambda m: m[0].strip("`"), heading.strip()).lower()
    kept = "".join(
        c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN" or c == "\u200d"
    )
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_pages_have_links():
    assert sum(len(links(page)) for page in PAGES) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_slug_follows_github():
    assert slug("The segment index") == "the-segment-index"
    assert slug("`python -m dedup pairs` and `clusters`") == "python--m-dedup-pairs-and-clusters"
    assert slug("Verified duplicates: near and partial copies") == (
        "verified-duplicates-near-and-partial-copies"
    )
