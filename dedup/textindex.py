"""The text's trigram index for search, built a range of articles at a time (issue 15).

One GIN index over every finished article's text (migration 0025) took each article's
trigrams, about a thousand for a thousand Chinese characters, as it was finished: on the
pipeline bench that was 64% of the workers' time at 100,000 articles, and it grew with the
index (bench/results/pipeline.md). A GIN index built at once sorts its entries and writes each
page once, many times cheaper than as many insertions. So the index is a series of partial
indexes, one per range of article ids, each built once when enough articles past the last
range are stored and nearly all of them finished (`text_index_seal_if_due`, after a chunk):

    article_text_<lo>_<hi>: UPPER(body) gin_trgm_ops WHERE id > lo AND id <= hi

An article past the last range (at most about DEDUP_TEXT_INDEX_ROWS of them, the newest) is
in no index: search reads its text through the primary key (`text_has`). Nothing writes an
article's trigrams when it is stored, claimed or finished, except the few that a range holds
before they are finished (a range waits until at most 1% of its articles are not).
DEDUP_TEXT_INDEX_ROWS=0 builds none (search then reads every text); `manage.py text_index`
shows, drops or builds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.conf import settings
from django.db import connection
from django.db.models import Q

PREFIX = "article_text_"
_NAME = re.compile(rf"^{PREFIX}(\d+)_(\d+)$")
FINISHED = ("done", "exact", "failed")
# A range is built when at most this share of its articles is not finished yet (each of those
# writes its trigrams when its status changes, as every article did before).
UNFINISHED_SHARE = 0.01
# pg_try_advisory_lock's key: one builder at a time ("dedup text" in ASCII).
_LOCK = 0x6465_6475_7074_7874 & 0x7FFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class TextRange:
    """Articles lo < id <= hi, whose text one partial index holds."""

    lo: int
    hi: int
    valid: bool = True

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.lo}_{self.hi}"


def text_ranges(*, invalid: bool = False) -> list[TextRange]:
    """Return the ranges built, by lo; with `invalid`, also indexes a failed build left."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = 'dedup_article'::regclass AND c.relname LIKE %s",
            [PREFIX.replace("_", r"\_") + "%"],
        )
        found = []
        for name, valid in cursor.fetchall():
            parsed = _NAME.match(name)
            if parsed and (valid or invalid):
                found.append(TextRange(int(parsed[1]), int(parsed[2]), valid))
    return sorted(found, key=lambda r: (r.lo, r.hi))


def text_has(q: str) -> Q:
    """Return the articles whose text holds q (case aside): each range's through its index,
    the articles in no range (the newest, or a range a failed build left out) by reading
    their text through the primary key. Every article is in exactly one part."""
    parts, at = [], 0
    for r in text_ranges():
        if r.lo < at:  # overlapping another (not made here): its ids are read instead
            continue
        if r.lo > at:
            parts.append(Q(id__gt=at, id__lte=r.lo))
        parts.append(Q(id__gt=r.lo, id__lte=r.hi))
        at = r.hi
    parts.append(Q(id__gt=at))
    return reduce(or_, (part & Q(body__icontains=q) for part in parts))


def create_sql(r: TextRange, *, concurrently: bool = True) -> str:
    how = "CONCURRENTLY IF NOT EXISTS" if concurrently else "IF NOT EXISTS"
    return (
        f"CREATE INDEX {how} {r.name} ON dedup_article"
        f" USING gin (UPPER(body::text) gin_trgm_ops) WHERE id > {r.lo} AND id <= {r.hi}"
    )


def text_index_seal(
    rows: int | None = None, *, everything: bool = False, concurrently: bool | None = None
) -> list[TextRange]:
    """Build the next range's index when `rows` articles (DEDUP_TEXT_INDEX_ROWS) past the
    last range are stored, at most 1% of them not finished; with `everything`, one range up
    to the newest article now. Return the ranges built. One process builds at a time (an
    advisory lock: another returns at once); an index a failed build left is dropped first.
    Concurrently (writes go on) unless in a transaction."""
    rows = settings.DEDUP_TEXT_INDEX_ROWS if rows is None else rows
    if rows <= 0 and not everything:
        return []
    if concurrently is None:
        concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK])
        if not cursor.fetchone()[0]:
            return []
        try:
            for r in text_ranges(invalid=True):
                if not r.valid:
                    how = "CONCURRENTLY " if concurrently else ""
                    cursor.execute(f"DROP INDEX {how}IF EXISTS {r.name}")
            lo = max((r.hi for r in text_ranges()), default=0)
            hi = _newest(cursor, lo) if everything else _due(cursor, lo, rows)
            if hi is None:
                return []
            made = TextRange(lo, hi)
            cursor.execute(create_sql(made, concurrently=concurrently))
            return [made]
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])


def _newest(cursor, lo: int) -> int | None:
    cursor.execute("SELECT max(id) FROM dedup_article WHERE id > %s", [lo])
    return cursor.fetchone()[0]


def _due(cursor, lo: int, rows: int) -> int | None:
    """Return the last id of the next range when it is due (`rows` articles past lo, nearly
    all finished), else None: one index-only step when it is not."""
    cursor.execute(
        "SELECT id FROM dedup_article WHERE id > %s ORDER BY id OFFSET %s LIMIT 1", [lo, rows - 1]
    )
    found = cursor.fetchone()
    if found is None:
        return None
    hi = found[0]
    cursor.execute(
        "SELECT count(*) FROM dedup_article WHERE id > %s AND id <= %s AND NOT (status = ANY(%s))",
        [lo, hi, list(FINISHED)],
    )
    return hi if cursor.fetchone()[0] <= UNFINISHED_SHARE * rows else None


def text_index_seal_if_due() -> bool:
    """After a chunk: build the next range if it is due (not inside a transaction)."""
    if connection.in_atomic_block or settings.DEDUP_TEXT_INDEX_ROWS <= 0:
        return False
    return bool(text_index_seal())


def text_index_drop() -> int:
    """Drop every range's index (search then reads the text); return how many."""
    found = text_ranges(invalid=True)
    how = "" if connection.in_atomic_block else "CONCURRENTLY "
    with connection.cursor() as cursor:
        for r in found:
            cursor.execute(f"DROP INDEX {how}IF EXISTS {r.name}")
    return len(found)
