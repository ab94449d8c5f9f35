"""Read articles from JSON Lines, CSV or a directory of text files, reporting bad rows."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

TEXT_SUFFIXES = (".txt", ".html", ".htm")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
# A CSV field may hold a whole article; the csv module's default limit is 128 KiB.
csv.field_size_limit(64 * 1024 * 1024)


class InputError(Exception):
    """The input as a whole cannot be read; the message says which file and what to do."""


@dataclass(frozen=True, slots=True)
class Record:
    """One article read from the input."""

    id: str | int
    text: str | None
    fingerprint: str | None = None  # hex, when the input is `fingerprint` output
    status: str | None = None


@dataclass(frozen=True, slots=True)
class BadRow:
    """A row that could not be read, and why; it is skipped, the rest is still read."""

    where: str  # "file:line"
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}; skipped"


Row = Record | BadRow


def read_records(source: str) -> Iterator[Row]:
    """Yield the articles of a file, a directory or `-` (standard input), in input order."""
    if source == "-":
        yield from _read_stream(sys.stdin.buffer, "<stdin>", kind=None)
        return
    path = Path(source)
    if path.is_dir():
        yield from _read_directory(path)
        return
    if not path.exists():
        raise InputError(f"{source}: no such file or directory")
    suffix = path.suffix.lower()
    kind = "csv" if suffix == ".csv" else "jsonl" if suffix in JSONL_SUFFIXES else None
    with path.open("rb") as stream:
        yield from _read_stream(stream, source, kind=kind)


def count_rows(source: str) -> int | None:
    """Return about how many rows a source holds (for a progress bar), or None if unknown."""
    if source == "-":
        return None
    path = Path(source)
    if path.is_dir():
        return sum(1 for _ in _text_files(path))
    try:
        with path.open("rb") as stream:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 20), b""))
    except OSError:
        return None


def _read_stream(stream: BinaryIO, name: str, *, kind: str | None) -> Iterator[Row]:
    if kind is None:  # sniff: JSON Lines start with an object, anything else is CSV
        head = stream.peek(64) if hasattr(stream, "peek") else b""
        kind = "jsonl" if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") else "csv"
    if kind == "jsonl":
        yield from _read_jsonl(stream, name)
    else:
        yield from _read_csv(stream, name)


def _read_jsonl(stream: BinaryIO, name: str) -> Iterator[Row]:
    for item in jsonl_objects(stream, name, example='{"id": ..., "text": ...}'):
        yield item if isinstance(item, BadRow) else record_of(item[1], item[0])


def jsonl_objects(
    lines: Iterable[bytes], name: str, *, example: str
) -> Iterator[tuple[str, dict] | BadRow]:
    """Yield ("name:line", object) for each JSON object line, or a BadRow saying what is wrong
    with it (`example` shows the expected shape); blank lines are skipped."""
    for number, raw in enumerate(lines, start=1):
        item = jsonl_object(raw, f"{name}:{number}", first=number == 1, example=example)
        if item is not None:
            yield item


def jsonl_object(
    raw: bytes, where: str, *, first: bool, example: str
) -> tuple[str, dict] | BadRow | None:
    """Return (where, object) for one JSON Lines line, a BadRow saying what is wrong with it,
    or None for a blank line."""
    try:
        line = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as error:
        return BadRow(
            where,
            f"not UTF-8 (byte {raw[error.start]:#04x} at column "
            f"{error.start + 1}); save the file as UTF-8",
        )
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as error:
        # ("Unterminated string starting at" ends in "at" already.)
        return BadRow(
            where, f"not valid JSON ({error.msg.removesuffix(' at')} at column {error.colno})"
        )
    except RecursionError:
        return BadRow(where, "nested too deeply to read; send one flat object per line")
    except ValueError:  # json.loads' other refusal: an integer of more than 4300 digits
        return BadRow(where, "not readable JSON (a number of more than 4300 digits)")
    if not isinstance(obj, dict):
        return BadRow(where, f"expected an object like {example}")
    return where, obj


def record_of(obj: dict, where: str) -> Row:
    """Return the Record of a parsed row (id and text), or a BadRow saying what is wrong."""
    ident = obj.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int) or ident == "":
        return BadRow(where, 'needs an "id" (a string or an integer)')
    # "body" is the service's name for the text (its API and uploads take either).
    field = "body" if obj.get("text") is None and obj.get("body") is not None else "text"
    text = obj.get(field)
    fingerprint = obj.get("fingerprint")
    if text is None and "fingerprint" not in obj:
        return BadRow(
            where, 'needs a "text" or "body" (or a "fingerprint", for fingerprint output)'
        )
    if text is not None and not isinstance(text, str):
        return BadRow(where, f'"{field}" must be a string, not {type(text).__name__}')
    if fingerprint is not None:
        if not isinstance(fingerprint, str) or not _is_hex64(fingerprint):
            return BadRow(where, '"fingerprint" must be 16 hex digits or null')
        fingerprint = fingerprint.lower()
    status = obj.get("status")
    return Record(ident, text, fingerprint, status if isinstance(status, str) else None)


def _is_hex64(value: str) -> bool:
    return len(value) == 16 and all(c in "0123456789abcdefABCDEF" for c in value)


def _read_csv(stream: BinaryIO, name: str) -> Iterator[Row]:
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="strict", newline="")
    reader = csv.reader(text)
    try:
        header = next(reader, None)
    except (UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"{name}: cannot read the CSV header ({error})") from error
    if header is None:
        return
    columns = [h.strip().lower() for h in header]
    if "id" not in columns or not ({"text", "body", "fingerprint"} & set(columns)):
        raise InputError(
            f"{name}: the first line must name the columns, with id and text (or body) "
            f"(e.g. 'id,text'); it has {', '.join(header) or 'nothing'}"
        )
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as error:
            # The decoder fails on a whole buffer: nothing after it can be trusted.
            raise InputError(
                f"{name}: not UTF-8 ({error.reason}); save the file as UTF-8"
            ) from error
        except csv.Error as error:
            yield BadRow(f"{name}:{reader.line_num}", f"not valid CSV ({error})")
            continue
        where = f"{name}:{reader.line_num}"
        if not any(f.strip() for f in fields):
            continue
        if len(fields) != len(columns):
            yield BadRow(where, f"has {len(fields)} fields, the header has {len(columns)}")
            continue
        row = dict(zip(columns, fields, strict=True))
        obj = {"id": row["id"].strip(), "text": row.get("text", row.get("body"))}
        if "fingerprint" in row:
            obj["fingerprint"] = row["fingerprint"].strip() or None
        yield record_of(obj, where)


def _text_files(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for file in sorted(files):
            if file.lower().endswith(TEXT_SUFFIXES) and not file.startswith("."):
                yield Path(root) / file


def _read_directory(directory: Path) -> Iterator[Row]:
    for path in _text_files(directory):
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            yield BadRow(
                f"{path}",
                f"not UTF-8 ({error.reason} at byte {error.start}); save the file as UTF-8",
            )
            continue
        except OSError as error:
            yield BadRow(f"{path}", f"cannot be read ({error.strerror})")
            continue
        yield Record(str(path), text)
