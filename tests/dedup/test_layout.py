"""The house rules that keep the code readable, held by a test: no module over 400 lines and
no function over 60 in dedup/ and webui/ (migrations aside), one database engine (no branch on
the connection's vendor), and no private name imported from another module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    path
    for package in ("dedup", "webui")
    for path in sorted((ROOT / package).rglob("*.py"))
    if "migrations" not in path.parts
]


def test_modules_and_functions_stay_short():
    long = []
    for path in SOURCES:
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > 400:
            long.append(f"{path.relative_to(ROOT)}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert len(SOURCES) > 50 and not long, long


def test_one_database_engine():
    branches = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*SOURCES, *sorted((ROOT / "dedup" / "migrations").glob("*.py"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.vendor\b|sqlite", line)
    ]
    assert not branches, branches


def test_no_private_name_is_imported_from_another_module():
    imported = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dedup"):
                imported += [
                    f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert not imported, imported
