"""The segment index in the database (SegmentRow, one row per fingerprint per table of the
plan, under one index version) as a storage.SegmentIndex: the PostgreSQL side of the engine's
one index interface, which MemIndex implements in memory.

index_store writes its rows through `segment_rows` and `segments_insert`, and candidates_find
reads them through `PgSegmentIndex.query_many`: one key function (Plan.keys), one lookup
statement. A row's key is one bigint, the table number in its top byte and the table's key
below (`combined_keys`), so that a look-up is one `key = ANY(array)` over one index: an
index-only scan on every day partition, with no join or sub-select (a distributed
PostgreSQL routes it as it is). The Hamming distance is checked here, on the rows it returns.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
from django.db import transaction

from dedup.db import columns, int_array, pg_cursor
from dedup.engine.plan import Plan
from dedup.engine.popular import MAX_POPULAR_OWNERS, POPULAR_HOLDERS
from dedup.engine.storage import EMPTY_HITS, HOT_FACTOR, HOT_MINIMUM, Hits, check_k
from dedup.index.caches import features_lock, hot_buckets
from dedup.models.versions import version_number, version_register

# Queries per lookup statement in query_many.
QUERY_CHUNK = 1_000
_MASK = (1 << 64) - 1
TABLE_SHIFT = 56  # a combined key's table number sits above this bit
# A bucket is read up to its BUCKET_ROWS earliest articles. Fingerprints spread evenly fill a
# bucket with a few rows (HOT_FACTOR); one holding this many is a hot bucket: a template
# filled in again by the thousand ("Order N has shipped"), whose fillings share one
# fingerprint. It is judged as one, like a passage held by too many (dedup.engine.popular): an
# article finds, through hot buckets, their HOT_BUCKET_HITS earliest articles within k (its
# original among them, if it copies one), not all of them: a 100,000-row upload of one
# template verified each row against 5.9 million candidates a chunk (issue 32).
BUCKET_ROWS = MAX_POPULAR_OWNERS
HOT_BUCKET_HITS = POPULAR_HOLDERS
# The rows under any of these keys, of one version: the buckets of every query and table.
LOOKUP = """
    SELECT key, fingerprint, article_id FROM dedup_segment
    WHERE version = %s AND key = ANY(%s::bigint[])
"""
# The earliest rows of a hot bucket, from each day partition's index in article order
# (migration 0030), not the whole bucket.
HOT_LOOKUP = """
    SELECT key, fingerprint, article_id FROM dedup_segment
    WHERE version = %s AND key = %s
    ORDER BY article_id
    LIMIT %s
"""
# Hot buckets are remembered per worker process (caches.hot_buckets: (version, key) -> when)
# for HOT_BUCKET_SECONDS: a bucket only fills, but for the retention window's pruning.
HOT_BUCKET_SECONDS = 600.0
HOT_BUCKETS_CACHED = 100_000


def combined_keys(plan: Plan, values: np.ndarray) -> np.ndarray:
    """Return each fingerprint's key in every table as one uint64 (tables, n): the table
    number in the top byte, xor the table's key (a key wider than 56 bits shares a few bits
    with the number: its bucket may hold another table's rows, which the distance check
    leaves out)."""
    keys = plan.keys(values)
    tables = np.arange(plan.table_count, dtype=np.uint64)[:, None] << np.uint64(TABLE_SHIFT)
    return keys ^ tables


def fingerprint_array(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """Return fingerprints as a flat uint64 array, refusing anything that is not one."""
    if isinstance(values, np.ndarray):
        if values.dtype != np.uint64:
            raise TypeError(
                f"fingerprints must be a uint64 array, not {values.dtype}: convert stored "
                "BIGINT values with hamming.to_unsigned (or .view(np.uint64) on an int64 array)"
            )
        return values.reshape(-1)
    values = list(values)
    if not all(isinstance(v, int | np.unsignedinteger) for v in values):
        raise TypeError("fingerprints must be integers from 0 to 2**64 - 1")
    if any(not 0 <= int(v) <= _MASK for v in values):
        raise ValueError(
            "a fingerprint is outside 0..2**64 - 1: pass unsigned 64-bit fingerprints, "
            "converting stored BIGINT values with hamming.to_unsigned"
        )
    return np.array([int(v) for v in values], dtype=np.uint64)


def id_array(ids: Iterable[int] | np.ndarray) -> np.ndarray:
    """Return article ids as a flat int64 array."""
    ids = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    if ids.size and ids.dtype.kind not in "iu":
        raise TypeError(f"article ids must be integers, not {ids.dtype}")
    if ids.dtype == np.uint64 and ids.size and ids.max() >= 2**63:
        raise ValueError("an article id does not fit a BIGINT column (at most 2**63 - 1)")
    return ids.astype(np.int64).reshape(-1)


def segment_rows(plan: Plan, ids: np.ndarray, values: np.ndarray) -> list[tuple[int, ...]]:
    """Return the (key, fingerprint, article_id) rows of fingerprints, the combined key and
    the fingerprint signed (the same bits), table by table."""
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    keys = combined_keys(plan, values).view(np.int64).tolist()
    signed = values.view(np.int64).tolist()
    ids = np.asarray(ids, dtype=np.int64).tolist()
    rows: list[tuple[int, ...]] = []
    for table in range(plan.table_count):
        rows += zip(keys[table], signed, ids, strict=True)
    return rows


def segments_insert(rows: list[tuple[int, ...]], version: str) -> None:
    """Write segment rows (segment_rows) in one statement, every column as one array; each
    goes to the partition of its article's day (UTC; today for an id with no article). The
    day is read per row by the article's primary key (a sub-select the planner cannot turn
    into a hash join over every article)."""
    if not rows:
        return
    number = version_register(version)
    with pg_cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO dedup_segment (version, key, fingerprint, article_id, day)
            SELECT %s, u.k, u.f, u.a, coalesce(
                (SELECT (a.dated_at AT TIME ZONE 'UTC')::date FROM dedup_article AS a
                 WHERE a.id = u.a), current_date)
            FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(k, f, a)
            """,
            [number, *columns(rows)],
        )


class PgSegmentIndex:
    """The SegmentRow rows of one index version, searchable within k <= the plan's k_max.

    Statements run on Django's connection, in the caller's transaction. `add` writes rows
    as given: index_store calls it only for articles whose Fingerprint row is new (unique per
    version), which keeps an article from being indexed twice."""

    def __init__(self, plan: Plan, version: str) -> None:
        self.plan = plan
        self.version = version

    def add(self, ids: Iterable[int] | np.ndarray, values: Iterable[int] | np.ndarray) -> None:
        """Store fingerprints with their article ids."""
        ids, values = id_array(ids), fingerprint_array(values)
        if len(ids) != len(values):
            raise ValueError(f"{len(ids)} ids for {len(values)} fingerprints: pass one id each")
        segments_insert(segment_rows(self.plan, ids, values), self.version)

    def remove(self, ids: Iterable[int] | np.ndarray) -> int:
        """Forget these articles' rows; return how many articles' fingerprints went."""
        with pg_cursor() as cursor:
            cursor.execute(
                "DELETE FROM dedup_segment WHERE version = %s AND article_id = ANY(%s::bigint[])",
                [version_number(self.version), int_array(id_array(ids).tolist())],
            )
            return cursor.rowcount // self.plan.table_count

    def query(self, value: int, k: int) -> list[tuple[int, int]]:
        """Return (article id, distance) within distance k, nearest first, then by id."""
        if not isinstance(value, int | np.unsignedinteger):
            raise TypeError(
                f"a fingerprint must be an unsigned 64-bit integer, not {type(value).__name__}: "
                "convert stored BIGINT values with hamming.to_unsigned"
            )
        hits = self.query_many([value], k)
        return sorted(zip(hits.id.tolist(), hits.distance.tolist(), strict=True), key=_nearest)

    def query_many(self, values: Iterable[int] | np.ndarray, k: int) -> Hits:
        """Return every (query number, article id, distance) within distance k: one statement
        per QUERY_CHUNK queries, reading the buckets of every query in every table, the
        distance checked on the rows it returns."""
        check_k(self.plan, k)
        values = fingerprint_array(values)
        parts = [
            self._lookup(values[start : start + QUERY_CHUNK], k, start)
            for start in range(0, len(values), QUERY_CHUNK)
        ]
        if not parts:
            return EMPTY_HITS
        found = np.concatenate(parts)
        return Hits(found[:, 0], found[:, 1], found[:, 2].astype(np.uint8))

    def _lookup(self, values: np.ndarray, k: int, offset: int) -> np.ndarray:
        """Return (query number, article, distance) rows, each once, for some queries."""
        keys = combined_keys(self.plan, values).reshape(-1)  # table by table
        queries = np.tile(np.arange(len(values), dtype=np.int64), self.plan.table_count)
        order = np.argsort(keys, kind="stable")
        keys, queries = keys[order], queries[order]
        wanted = np.unique(keys)
        rows = self._bucket_rows(wanted)
        # Each row against every query that asked for its key.
        row_keys = rows[:, 0].view(np.uint64)
        first = np.searchsorted(keys, row_keys, side="left")
        count = np.searchsorted(keys, row_keys, side="right") - first
        row_of = np.repeat(np.arange(len(rows)), count)
        at = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
        query = queries[at]
        distance = np.bitwise_count(
            rows[row_of, 1].view(np.uint64) ^ values[query].astype(np.uint64)
        ).astype(np.int64)
        near = distance <= k
        hot = rows[:, 3]
        found = np.stack(
            [query[near] + offset, rows[row_of[near], 2], distance[near], hot[row_of[near]]],
            axis=1,
        )
        return _hot_hits_capped(found)

    def _bucket_rows(self, wanted: np.ndarray) -> np.ndarray:
        """Return (key, fingerprint, article, hot) rows of the buckets under `wanted` keys
        (sorted uint64): every row of a bucket, or the BUCKET_ROWS earliest of a hot one."""
        version = version_number(self.version)
        signed = wanted.view(np.int64).tolist()
        now = time.monotonic()
        with features_lock:
            seen = [hot_buckets.get((version, key)) for key in signed]
        known = {
            k for k, at in zip(signed, seen, strict=True) if at and now - at < HOT_BUCKET_SECONDS
        }
        with transaction.atomic(), pg_cursor() as cursor, _index_scans(cursor):
            cursor.execute(
                LOOKUP, [version, int_array([k for k in signed if k not in known])], binary=True
            )
            rows = cursor.fetchall()
            for key in sorted(known):
                cursor.execute(HOT_LOOKUP, [version, key, BUCKET_ROWS], binary=True)
                rows += cursor.fetchall()
        rows = np.array(rows, dtype=np.int64).reshape(-1, 3)
        # A bucket met full for the first time: its earliest rows, and remembered.
        rows = rows[np.lexsort((rows[:, 2], rows[:, 0]))]
        keys, starts, sizes = np.unique(rows[:, 0], return_index=True, return_counts=True)
        full = sizes >= BUCKET_ROWS
        rank = np.arange(len(rows)) - np.repeat(starts, sizes)
        hot = np.repeat(full, sizes)
        keep = rank < BUCKET_ROWS
        fresh = set(keys[full].tolist()) - known
        if fresh:
            with features_lock:
                if len(hot_buckets) + len(fresh) > HOT_BUCKETS_CACHED:
                    hot_buckets.clear()
                hot_buckets.update(dict.fromkeys([(version, key) for key in fresh], now))
        return np.column_stack([rows[keep], hot[keep].astype(np.int64)])

    def hot_buckets(
        self, factor: float = HOT_FACTOR, minimum: int = HOT_MINIMUM
    ) -> list[tuple[int, int, int]]:
        """Return (table_no, key, distinct fingerprints) of the buckets far above the size
        even spreading gives, largest first (see storage.SegmentIndex)."""
        number = version_number(self.version)
        with pg_cursor() as cursor:
            cursor.execute(
                "SELECT count(DISTINCT fingerprint) FROM dedup_segment WHERE version = %s",
                [number],
            )
            n = cursor.fetchone()[0]
            cursor.execute(
                "SELECT key, count(DISTINCT fingerprint) FROM dedup_segment WHERE version = %s "
                "GROUP BY key HAVING count(DISTINCT fingerprint) >= %s",
                [number, minimum],
            )
            found = cursor.fetchall()
        rows = []
        for combined, size in found:
            table = (combined & _MASK) >> TABLE_SHIFT
            if table < self.plan.table_count:
                bits = self.plan.key_bits[table]
                if size > max(minimum, factor * n / 2**bits):
                    rows.append((table, (combined & _MASK) ^ (table << TABLE_SHIFT), size))
        return sorted(rows, key=lambda row: (-row[2], row[0], row[1]))

    def explain(self, value: int) -> str:
        """Return PostgreSQL's plan for the lookup of one fingerprint in every table."""
        keys = combined_keys(self.plan, fingerprint_array([value])).view(np.int64).reshape(-1)
        with pg_cursor() as cursor:
            cursor.execute(
                "EXPLAIN " + LOOKUP, [version_number(self.version), int_array(keys.tolist())]
            )
            return "\n".join(row[0] for row in cursor.fetchall())


def _hot_hits_capped(found: np.ndarray) -> np.ndarray:
    """Return (query, article, distance) of each hit once, from (query, article, distance,
    hot) rows: a hit found only through hot buckets is kept among its query's
    HOT_BUCKET_HITS earliest such hits."""
    if not len(found):
        return found.reshape(-1, 4)[:, :3]
    # Each (query, article) once, through a bucket that is not hot where one found it.
    found = found[np.lexsort((found[:, 3], found[:, 1], found[:, 0]))]
    first = (np.diff(found[:, 0], prepend=-1) != 0) | (np.diff(found[:, 1], prepend=-1) != 0)
    found = found[first]
    hot = found[:, 3] == 1
    if not hot.any():
        return found[:, :3]
    # Hot hits are in article order within their query: keep the first HOT_BUCKET_HITS.
    query = found[hot, 0]
    starts = np.flatnonzero(np.diff(query, prepend=query[0] - 1))
    rank = np.arange(len(query)) - np.repeat(starts, np.diff(np.append(starts, len(query))))
    keep = ~hot
    keep[np.flatnonzero(hot)[rank < HOT_BUCKET_HITS]] = True
    return found[keep, :3]


@contextmanager
def _index_scans(cursor) -> Iterator[None]:
    """Have the statements in the block read indexes, not whole partitions, then set the
    planner back as it was (in the caller's transaction).

    With thousands of keys in the array, PostgreSQL's cost model (pages read at random cost
    four times a sequential one) prefers a sequential scan of a partition of a few hundred
    thousand rows to thousands of index descents, though the index's pages are in memory:
    measured (bench/partitions.py), about twice the time of the index-only scans."""
    names = ("enable_seqscan", "enable_bitmapscan")
    cursor.execute(
        "SELECT current_setting(%s), current_setting(%s), "
        "set_config(%s, 'off', true), set_config(%s, 'off', true)",
        [*names, *names],
    )
    before = cursor.fetchone()[:2]
    # Set back only after success: a statement that failed (a check's statement_timeout) has
    # aborted the transaction, so a statement here would replace its error with "current
    # transaction is aborted"; rolling back the savepoint or the transaction undoes these
    # settings (set_config local to the transaction) anyway.
    yield
    cursor.execute(
        "SELECT set_config(%s, %s, true), set_config(%s, %s, true)",
        [names[0], before[0], names[1], before[1]],
    )


def _nearest(hit: tuple[int, int]) -> tuple[int, int]:
    return hit[1], hit[0]
