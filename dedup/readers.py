"""Read an uploaded file into article rows: JSON Lines, CSV, .txt/.html, or a .zip of those.

The command line's readers (dedup.engine.records) keep only an id and a text; an upload also
carries a title, source, URL and date, so its rows are read here as whole objects, with the
same kinds of input, the same bad-row reports (`BadRow`) and the same whole-file errors
(`InputError`). A row is numbered by its place in the upload (1, 2, ...), bad rows included.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

from dedup.engine.records import (
    JSONL_SUFFIXES,
    TEXT_SUFFIXES,
    BadRow,
    InputError,
    jsonl_objects,
)

# How much a .zip may hold once unpacked, as a multiple of its own size limit (zip bombs).
ZIP_EXPANSION = 20
SUPPORTED = (
    "upload JSON Lines (.jsonl, one object per line with a text), CSV with a header row naming "
    "a text column (.csv), a .txt or .html page, or a .zip of those"
)

Row = tuple[str, dict] | BadRow  # (where, fields) or why the row was skipped


def upload_rows(stream: BinaryIO, name: str, *, max_bytes: int) -> Iterator[Row]:
    """Yield the rows of an uploaded file, in order; raise InputError if it cannot be read."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".zip":
        yield from _read_zip(stream, name, max_bytes=max_bytes)
    else:
        yield from _read_one(stream, name, suffix)


def _read_one(stream: BinaryIO, name: str, suffix: str) -> Iterator[Row]:
    if suffix in TEXT_SUFFIXES:
        yield _read_page(stream.read(), name)
        return
    data = stream.read()
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if suffix in JSONL_SUFFIXES or (suffix != ".csv" and head.startswith((b"{", b"["))):
        if head.startswith(b"["):
            yield from _read_json_array(data, name)
        else:
            yield from _read_jsonl(data, name)
    elif suffix == ".csv" or not suffix or suffix == ".tsv":
        yield from _read_csv(data, name)
    else:
        raise InputError(f"{name}: cannot read {suffix} files; {SUPPORTED}")


def _read_page(data: bytes, name: str) -> Row:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return BadRow(name, f"not UTF-8 (at byte {error.start}); save the file as UTF-8")
    stem = PurePosixPath(name).stem
    return name, {"id": name, "title": stem, "body": text}


def _read_jsonl(data: bytes, name: str) -> Iterator[Row]:
    yield from jsonl_objects(data.splitlines(), name, example='{"title": ..., "text": ...}')


def _read_json_array(data: bytes, name: str) -> Iterator[Row]:
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(
            f"{name}: not a valid JSON array ({error}); {SUPPORTED}; JSON Lines is safest"
        ) from error
    if not isinstance(items, list):
        raise InputError(f"{name}: expected a JSON array of objects; {SUPPORTED}")
    for number, obj in enumerate(items, start=1):
        where = f"{name}[{number}]"
        if isinstance(obj, dict):
            yield where, obj
        else:
            yield BadRow(where, 'expected an object like {"title": ..., "text": ...}')


def _read_csv(data: bytes, name: str) -> Iterator[Row]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{name}: not UTF-8 (at byte {error.start}); save the file as UTF-8"
        ) from error
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise InputError(f"{name}: cannot read the CSV header ({error}); {SUPPORTED}") from error
    if header is None:
        return
    columns = [h.strip().lower() for h in header]
    if not {"text", "body"} & set(columns):
        shown = ", ".join(header)[:200] or "nothing"
        raise InputError(
            f"{name}: the first line must name the columns, with a text (or body) column, "
            f"e.g. 'id,title,text'; it has {shown}"
        )
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield BadRow(f"{name}:{start}", f"not valid CSV ({error})")
            continue
        if not any(f.strip() for f in fields):
            continue
        where = f"{name}:{start}"
        if len(fields) != len(columns):
            yield BadRow(where, f"has {len(fields)} fields, the header has {len(columns)}")
            continue
        yield where, dict(zip(columns, fields, strict=True))


def _read_zip(stream: BinaryIO, name: str, *, max_bytes: int) -> Iterator[Row]:
    try:
        archive = zipfile.ZipFile(stream)
        members = [
            info
            for info in archive.infolist()
            if not info.is_dir()
            and not info.filename.startswith("__MACOSX/")
            and not PurePosixPath(info.filename).name.startswith(".")
        ]
    except (zipfile.BadZipFile, OSError) as error:
        raise InputError(f"{name}: not a readable .zip ({error}); {SUPPORTED}") from error
    if sum(info.file_size for info in members) > max_bytes * ZIP_EXPANSION:
        raise InputError(
            f"{name}: unpacks to more than {ZIP_EXPANSION} times the upload limit; "
            "upload it in smaller parts"
        )
    with archive:
        for info in sorted(members, key=lambda i: i.filename):
            inner = f"{name}/{info.filename}"
            suffix = PurePosixPath(info.filename).suffix.lower()
            if suffix not in (*TEXT_SUFFIXES, *JSONL_SUFFIXES, ".csv"):
                yield BadRow(inner, f"cannot read {suffix or 'files without a suffix'} here")
                continue
            try:
                data = archive.read(info)
            except (zipfile.BadZipFile, OSError, RuntimeError) as error:
                yield BadRow(inner, f"cannot be unpacked ({error})")
                continue
            try:
                yield from _read_one(io.BytesIO(data), inner, suffix)
            except InputError as error:  # one bad member does not sink the others
                yield BadRow(inner, str(error).removeprefix(f"{inner}: "))
