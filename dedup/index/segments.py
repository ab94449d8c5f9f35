"""The segment index in the database (SegmentRow, one row per fingerprint per table of the
plan, under one index version) as a storage.SegmentIndex: the PostgreSQL side of the engine's
one index interface, which MemIndex implements in memory.

index_store writes its rows through `segment_rows` and `segments_insert`, and candidates_find
reads them through `PgSegmentIndex.query_many`: one key function (Plan.keys), one lookup
statement.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dedup.db import columns, int_array, pg_cursor
from dedup.engine.plan import Plan
from dedup.engine.storage import EMPTY_HITS, HOT_FACTOR, HOT_MINIMUM, Hits, check_k

# Queries per lookup statement in query_many.
QUERY_CHUNK = 1_000
_MASK = (1 << 64) - 1
# Every (query number, table, key, fingerprint) against the rows under that table's key.
LOOKUP = """
    SELECT DISTINCT q.i, s.article_id, bit_count((s.fingerprint # q.fp)::bit(64))
    FROM unnest(%s::int[], %s::smallint[], %s::bigint[], %s::bigint[]) AS q(i, table_no, key, fp)
    JOIN dedup_segmentrow s ON s.version = %s AND s.table_no = q.table_no AND s.key = q.key
    WHERE bit_count((s.fingerprint # q.fp)::bit(64)) <= %s
"""


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
    """Return the (table_no, key, fingerprint, article_id) rows of fingerprints, key and
    fingerprint signed (the same bits), table by table."""
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    keys = plan.keys(values).view(np.int64).tolist()
    signed = values.view(np.int64).tolist()
    ids = np.asarray(ids, dtype=np.int64).tolist()
    rows: list[tuple[int, ...]] = []
    for table in range(plan.table_count):
        rows += zip([table] * len(ids), keys[table], signed, ids, strict=True)
    return rows


def segments_insert(rows: list[tuple[int, ...]], version: str) -> None:
    """Write segment rows (segment_rows) in one statement, every column as one array."""
    if not rows:
        return
    with pg_cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO dedup_segmentrow (version, table_no, key, fingerprint, article_id)
            SELECT %s, t, k, f, a
            FROM unnest(%s::smallint[], %s::bigint[], %s::bigint[], %s::bigint[]) AS u(t, k, f, a)
            """,
            [version, *columns(rows)],
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
                "DELETE FROM dedup_segmentrow "
                "WHERE version = %s AND article_id = ANY(%s::bigint[])",
                [self.version, int_array(id_array(ids).tolist())],
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
        per QUERY_CHUNK queries, each table's bucket read under its key, the distance checked
        in the database."""
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
        with pg_cursor() as cursor:
            cursor.execute(LOOKUP, self._params(values, k, offset), binary=True)
            return np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, 3)

    def _params(self, values: np.ndarray, k: int, offset: int) -> list:
        tables, n = self.plan.table_count, len(values)
        return [
            int_array(np.tile(np.arange(n) + offset, tables).tolist()),
            int_array(np.repeat(np.arange(tables), n).tolist()),
            int_array(self.plan.keys(values).view(np.int64).reshape(-1).tolist()),
            int_array(np.tile(values.view(np.int64), tables).tolist()),
            self.version,
            k,
        ]

    def hot_buckets(
        self, factor: float = HOT_FACTOR, minimum: int = HOT_MINIMUM
    ) -> list[tuple[int, int, int]]:
        """Return (table_no, key, distinct fingerprints) of the buckets far above the size
        even spreading gives, largest first (see storage.SegmentIndex)."""
        with pg_cursor() as cursor:
            cursor.execute(
                """
                WITH n AS (
                    SELECT count(DISTINCT fingerprint) AS n FROM dedup_segmentrow
                    WHERE version = %(version)s AND table_no = 0
                )
                SELECT s.table_no, s.key, count(DISTINCT s.fingerprint) AS size
                FROM dedup_segmentrow AS s
                JOIN unnest(%(table_nos)s::int2[], %(key_bits)s::int4[]) AS t(table_no, bits)
                    USING (table_no)
                CROSS JOIN n
                WHERE s.version = %(version)s
                GROUP BY s.table_no, s.key, t.bits, n.n
                HAVING count(DISTINCT s.fingerprint)
                    > greatest(%(minimum)s, %(factor)s * n.n / 2 ^ t.bits)
                """,
                {
                    "version": self.version,
                    "table_nos": list(range(self.plan.table_count)),
                    "key_bits": list(self.plan.key_bits),
                    "minimum": minimum,
                    "factor": float(factor),
                },
            )
            rows = [(t, key & _MASK, size) for t, key, size in cursor.fetchall()]
        return sorted(rows, key=lambda row: (-row[2], row[0], row[1]))

    def explain(self, value: int) -> str:
        """Return PostgreSQL's plan for the lookup of one fingerprint at k_max."""
        params = self._params(fingerprint_array([value]), self.plan.k_max, 0)
        with pg_cursor() as cursor:
            cursor.execute("EXPLAIN " + LOOKUP, params)
            return "\n".join(row[0] for row in cursor.fetchall())


def _nearest(hit: tuple[int, int]) -> tuple[int, int]:
    return hit[1], hit[0]
