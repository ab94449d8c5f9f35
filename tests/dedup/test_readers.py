"""The upload reader's bounds on CSV (no database): a field over the article limit is refused
with its row number while only about the limit is held in memory, and the rows after it are
read as they are."""

from __future__ import annotations

import io
import tracemalloc

from dedup.readers import Limits, upload_rows

MB = 2**20
LIMITS = Limits(article_bytes=MB, unpacked_bytes=64 * MB)


def rows_of(data: bytes, name: str = "a.csv") -> list:
    return list(upload_rows(io.BytesIO(data), name, limits=LIMITS))


def peak_while(read) -> int:
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_csv_field_is_refused_with_its_row_without_being_held():
    huge = b"x" * (40 * MB)
    data = b'id,text\n1,"first"\n2,"' + huge + b'"\n3,"third"\n'
    stream, rows = io.BytesIO(data), []
    peak = peak_while(lambda: rows.extend(upload_rows(stream, "a.csv", limits=LIMITS)))
    assert [r[1]["id"] for r in rows if isinstance(r, tuple)] == ["1", "3"]
    bad = [r for r in rows if not isinstance(r, tuple)]
    assert [b.where for b in bad] == ["a.csv:3"]
    assert "the row is 40.0 MB, over the limit of 1.0 MB per article" in bad[0].reason
    assert peak < 8 * MB, f"{peak / MB:.1f} MB held to refuse a 40 MB field"


def test_a_huge_quoted_field_over_many_lines_is_skipped_to_its_end():
    many_lines = b"\n".join([b'line, with ""quotes"" and commas'] * 60_000)  # ~2 MB
    data = b'id,text\n1,"first"\n2,"' + many_lines + b'"\n3,"third, after"\n4,fourth\n'
    rows = rows_of(data)
    kept = [r[1] for r in rows if isinstance(r, tuple)]
    assert [(r["id"], r["text"]) for r in kept] == [
        ("1", "first"), ("3", "third, after"), ("4", "fourth")
    ]  # fmt: skip
    assert [b.where for b in rows if not isinstance(b, tuple)] == ["a.csv:3"]


def test_rows_under_the_limit_are_read_as_the_csv_module_reads_them():
    data = 'id,title,text\n1,"a, b","第一行\n第二行"\r\n2,plain,"say ""hi"""\n'.encode()
    rows = rows_of(data)
    assert [r[1] for r in rows] == [
        {"id": "1", "title": "a, b", "text": "第一行\n第二行"},
        {"id": "2", "title": "plain", "text": 'say "hi"'},
    ]
