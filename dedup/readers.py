"""Read an uploaded file into article rows: JSON Lines, CSV, .txt/.html, or a .zip of those.

The command line's readers (dedup.engine.records) keep only an id and a text; an upload also
carries a title, source, URL and date, so its rows are read here as whole objects, with the
same kinds of input, the same bad-row reports (`BadRow`) and the same whole-file errors
(`InputError`). A row is numbered by its place in the upload (1, 2, ...), bad rows included.

Everything is streamed with bounded sizes: a line, a CSV row or a page is read only up to
`Limits.article_bytes` (an article over it is refused with its row and size, the rest kept; a
CSV row over it is read on a piece at a time to find its end, never held whole), and
the members of a .zip are unpacked as they are read, up to `Limits.unpacked_bytes` in all (a zip
bomb stops there, with the rows read before it kept).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from dedup.engine.records import (
    JSONL_SUFFIXES,
    TEXT_SUFFIXES,
    BadRow,
    InputError,
    jsonl_object,
)

SUPPORTED = (
    "upload JSON Lines (.jsonl, one object per line with a text), CSV with a header row naming "
    "a text column (.csv), a .txt or .html page, or a .zip of those"
)
MAX_ZIP_MEMBERS = 10_000
MAX_JSON_ARRAY_BYTES = 64 * 2**20  # a JSON array is parsed whole: about 8 times this in memory
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
READ_SUFFIXES = (*TEXT_SUFFIXES, *JSONL_SUFFIXES, ".csv", ".tsv")
_PLAIN_RUN = re.compile(r'[^",\r\n]+')  # what a CSV reader never looks at twice

Row = tuple[str, dict] | BadRow  # (where, fields) or why the row was skipped


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of an upload is read: one article, and all a .zip unpacks to."""

    article_bytes: int
    unpacked_bytes: int


def megabytes(size: int) -> str:
    """Return a size in bytes as people read it: "1.2 MB", "340 KB"."""
    if size >= 2**20:
        return f"{size / 2**20:,.1f} MB"
    return f"{max(1, round(size / 2**10)):,} KB"


class _OverBudget(Exception):
    """A .zip unpacked to more than Limits.unpacked_bytes."""


class _Budget:
    def __init__(self, total: int):
        self.total, self.used = total, 0

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > self.total:
            raise _OverBudget


class _Raw(io.RawIOBase):
    """A file-like object as a raw stream, to be buffered; with a budget (a zip member's), it
    counts what it reads against it."""

    def __init__(self, inner: BinaryIO, budget: _Budget | None = None):
        self._inner, self._budget = inner, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._inner.read(len(buffer))
        if self._budget is not None:
            self._budget.spend(len(data))
        buffer[: len(data)] = data
        return len(data)


def upload_rows(stream: BinaryIO, name: str, *, limits: Limits) -> Iterator[Row]:
    """Yield the rows of an uploaded file, in order; raise InputError if it cannot be read."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".zip":
        yield from _read_zip(stream, name, limits=limits)
    else:
        yield from _read_one(_buffered(stream), name, suffix, limits=limits, size=_size(stream))


def _buffered(stream: BinaryIO) -> io.BufferedReader:
    return stream if hasattr(stream, "peek") else io.BufferedReader(_Raw(stream), 1 << 16)


def _size(stream: BinaryIO) -> int | None:
    try:
        here = stream.tell()
        size = stream.seek(0, io.SEEK_END)
        stream.seek(here)
    except (OSError, AttributeError, ValueError):
        return None
    return size


def _read_one(
    stream: io.BufferedReader, name: str, suffix: str, *, limits: Limits, size: int | None
) -> Iterator[Row]:
    head = stream.peek(4096)[:4096]
    if head.startswith(UTF16_BOMS):
        raise InputError(f"{name}: is UTF-16; save the file as UTF-8 (in Excel: CSV UTF-8)")
    if suffix in TEXT_SUFFIXES:
        yield _read_page(stream, name, limits=limits, size=size)
        return
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if suffix in JSONL_SUFFIXES or (suffix not in (".csv", ".tsv") and head.startswith(b"{")):
        if head.startswith(b"["):
            yield from _read_json_array(stream, name, limits=limits)
        else:
            yield from _read_jsonl(stream, name, limits=limits)
    elif suffix in (".csv", ".tsv") or not suffix:
        yield from _read_csv(stream, name, limits=limits)
    else:
        raise InputError(f"{name}: cannot read {suffix} files; {SUPPORTED}")


def _over_article(where: str, size: int | None, limits: Limits, what: str = "article") -> BadRow:
    shown = f"{megabytes(size)}, " if size else ""
    return BadRow(
        where,
        f"the {what} is {shown}over the limit of {megabytes(limits.article_bytes)} per article "
        "(DEDUP_MAX_ARTICLE_MB); split it into smaller articles",
    )


def _read_page(stream: BinaryIO, name: str, *, limits: Limits, size: int | None) -> Row:
    data = stream.read(limits.article_bytes + 1)
    if len(data) > limits.article_bytes:
        return _over_article(name, size, limits, "page")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return BadRow(name, f"not UTF-8 (at byte {error.start}); save the file as UTF-8")
    stem = PurePosixPath(name).stem
    return name, {"id": name, "title": stem, "body": text}


def _lines(stream: BinaryIO, limit: int) -> Iterator[bytes | int]:
    """Yield the lines of a stream; a line longer than `limit` is skipped and yields its size."""
    while line := stream.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while rest := stream.readline(1 << 20):
            size += len(rest)
            if rest.endswith(b"\n"):
                break
        yield size


def _read_jsonl(stream: BinaryIO, name: str, *, limits: Limits) -> Iterator[Row]:
    example = '{"title": ..., "text": ...}'
    for number, line in enumerate(_lines(stream, limits.article_bytes), start=1):
        where = f"{name}:{number}"
        if isinstance(line, int):
            yield _over_article(where, line, limits, "line")
        elif (item := jsonl_object(line, where, first=number == 1, example=example)) is not None:
            yield item


def _read_json_array(stream: BinaryIO, name: str, *, limits: Limits) -> Iterator[Row]:
    data = stream.read(MAX_JSON_ARRAY_BYTES + 1)
    if len(data) > MAX_JSON_ARRAY_BYTES:
        raise InputError(
            f"{name}: a JSON array over {megabytes(MAX_JSON_ARRAY_BYTES)} is not read; "
            "send JSON Lines (one object per line) instead"
        )
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except RecursionError:
        raise InputError(f"{name}: nested too deeply to read; {SUPPORTED}") from None
    except (UnicodeDecodeError, ValueError) as error:
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


class _BoundedLines:
    """The lines of a CSV text for csv.reader, counting the bytes of the record being read:
    past `limit`, the rest of that record is read a piece at a time and reaches the reader with
    each run of plain characters shrunk to one (quotes, commas and line ends kept, so the reader
    still finds where the record ends), never held whole."""

    PIECE = 1 << 16

    def __init__(self, text: io.TextIOWrapper, limit: int):
        self.text, self.limit, self.used = text, limit, 0

    @property
    def over(self) -> bool:
        return self.used > self.limit

    def record_start(self) -> None:
        self.used = 0

    def _read(self, size: int) -> str:
        line = self.text.readline(size)
        self.used += len(line.encode("utf-8", "surrogatepass"))
        return line

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self._read(max(1, self.limit + 1 - self.used) if not self.over else self.PIECE)
        if not line:
            raise StopIteration
        if not self.over:
            return line
        pieces = [_shrink(line)]
        while not line.endswith(("\n", "\r")) and (line := self._read(self.PIECE)):
            pieces.append(_shrink(line))
        return _shrink("".join(pieces))


def _shrink(text: str) -> str:
    return _PLAIN_RUN.sub("x", text)


def _read_csv(stream: BinaryIO, name: str, *, limits: Limits) -> Iterator[Row]:
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="strict", newline="")
    lines = _BoundedLines(text, limits.article_bytes)
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
    except UnicodeDecodeError as error:
        raise InputError(
            f"{name}: not UTF-8 ({error.reason}); save the file as UTF-8 "
            "(GBK and other encodings are not read)"
        ) from error
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
        lines.record_start()
        try:
            fields = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as error:
            # The decoder fails on a whole buffer: nothing after it can be trusted.
            yield BadRow(
                f"{name}:{start}",
                f"not UTF-8 ({error.reason}) from here on; the rest of the file was not read; "
                "save the file as UTF-8",
            )
            return
        except csv.Error as error:
            yield BadRow(f"{name}:{start}", f"not valid CSV ({error})")
            continue
        if not any(f.strip() for f in fields):
            continue
        where = f"{name}:{start}"
        if lines.over:
            yield _over_article(where, lines.used, limits, "row")
            continue
        if len(fields) != len(columns):
            yield BadRow(where, f"has {len(fields)} fields, the header has {len(columns)}")
            continue
        size = sum(len(f.encode("utf-8", "surrogatepass")) for f in fields)
        if size > limits.article_bytes:
            yield _over_article(where, size, limits, "row")
            continue
        yield where, dict(zip(columns, fields, strict=True))


def _read_zip(stream: BinaryIO, name: str, *, limits: Limits) -> Iterator[Row]:
    try:
        archive = zipfile.ZipFile(stream)
        members = [info for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise InputError(f"{name}: not a readable .zip ({error}); {SUPPORTED}") from error
    if len(members) > MAX_ZIP_MEMBERS:
        raise InputError(
            f"{name}: holds {len(members):,} files, at most {MAX_ZIP_MEMBERS:,} are read; "
            "upload it in smaller parts"
        )
    budget = _Budget(limits.unpacked_bytes)
    over = (
        f"not read: the .zip unpacks to more than {megabytes(limits.unpacked_bytes)} "
        "(DEDUP_MAX_UNPACKED_MB); upload it in smaller parts"
    )
    with archive:
        for info in sorted(members, key=lambda i: i.filename):
            if info.filename.startswith("__MACOSX/"):  # macOS's resource forks, not files
                continue
            inner = f"{name}/{info.filename}"
            suffix = PurePosixPath(info.filename).suffix.lower()
            if PurePosixPath(info.filename).name.startswith("."):
                yield BadRow(
                    inner, "skipped: a hidden file (its name starts with '.'); rename it to read it"
                )
            elif suffix == ".zip":
                yield BadRow(inner, "a .zip inside a .zip is not read; upload it on its own")
            elif suffix not in READ_SUFFIXES:
                yield BadRow(inner, f"cannot read {suffix or 'files without a suffix'} here")
            elif budget.used >= budget.total:
                yield BadRow(inner, over)
            else:
                yield from _read_member(archive, info, inner, suffix, limits, budget, over)


def _read_member(archive, info, inner, suffix, limits, budget, over) -> Iterator[Row]:
    try:
        with archive.open(info) as member:
            stream = io.BufferedReader(_Raw(member, budget), 1 << 16)
            yield from _read_one(stream, inner, suffix, limits=limits, size=info.file_size)
    except _OverBudget:
        yield BadRow(inner, over.replace("not read:", "stopped here:", 1))
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, zlib.error) as error:
        yield BadRow(inner, f"cannot be unpacked ({error})")
    except InputError as error:  # one bad member does not sink the others
        yield BadRow(inner, str(error).removeprefix(f"{inner}: "))
