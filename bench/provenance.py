"""Provenance: the header every results file under bench/results/ starts with.

A figure without its commit, machine, versions and command cannot be compared with the next
run, so every bench writes its results through `write`, which puts `header` first.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- provenance -->"
FIELDS = ("commit", "date", "CPU", "Python", "libraries", "command")
# The distributions whose versions can change a figure: the engine's, the service's, the
# benches' comparison methods.
LIBRARIES = (
    "numpy",
    "django",
    "psycopg",
    "celery",
    "mmh3",
    "jieba",
    "rjieba",
    "opencc",
    "datasketch",
    "simhash",
)


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def commit() -> str:
    """Return HEAD's hash, and the files that differ from it when the tree is dirty."""
    head = _git("rev-parse", "HEAD").strip() or "unknown (not a git checkout)"
    # Each line is "XY name": the status's two columns (a space where unchanged), then a space.
    changed = [line[3:] for line in _git("status", "--porcelain", "--", ".").splitlines() if line]
    if changed:
        return f"{head}, tree dirty: {', '.join(changed)}"
    return f"{head}, tree clean"


def cpu() -> str:
    """Return the CPU model and the cores this process may use."""
    model = platform.processor() or platform.machine() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores usable, {platform.platform()}"


def libraries(names: tuple[str, ...] = LIBRARIES) -> str:
    """Return 'name version' for each installed distribution of `names`."""
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or "none installed"


def header(command: str | None = None) -> list[str]:
    """Return the provenance lines: commit, date, CPU, Python, libraries, command."""
    if command is None:
        module = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "?"
        command = " ".join([f"python -m bench.{module}", *sys.argv[1:]])
    return [
        MARK,
        f"- commit: {commit()}",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- CPU: {cpu()}",
        f"- Python: {platform.python_version()}",
        f"- libraries: {libraries()}",
        f"- command: `{command}`",
        "",
    ]


def write(path: Path, text: str, command: str | None = None) -> None:
    """Write `text` to `path` under the provenance header."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(header(command)) + "\n" + text, encoding="utf-8")
