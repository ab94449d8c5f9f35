"""The segment index in PostgreSQL: every fingerprint within distance k of a query, exactly.

One segment table holds a row (table_no, key, fingerprint, article_id) per stored fingerprint
per table of the plan. A composite index on (table_no, key) INCLUDE (fingerprint, article_id)
answers a lookup from the index alone; the primary key (article_id, table_no) makes re-adding
an article a no-op and serves removal. A small metadata table records the plan's version, so
an index is never read with keys computed for another plan.

Fingerprints and keys are unsigned 64-bit in the engine and stored in BIGINT columns with the
same bit pattern (`hamming.to_signed`); the arrays are cast with a numpy view, which is that
conversion vectorised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import psycopg
from psycopg import sql

from dedup.engine.hamming import to_signed
from dedup.engine.memindex import Hits
from dedup.engine.plan import Plan, PlanError
from dedup.pgrows import (
    COPY_HEADER,
    COPY_TRAILER,
    article_id_array,
    copy_rows,
    fingerprint_array,
)

DEFAULT_PREFIX = "dedup_segment"
# Leaves room for the suffixes of the metadata table and the indexes within PostgreSQL's
# 63-byte identifiers; lowercase only, so the names need no quoting in psql either.
PREFIX_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,47}")
# Fingerprints per COPY buffer (times the plan's tables in rows), to bound client memory.
LOAD_CHUNK = 100_000
# An add() of at least this many fingerprints into an empty index loads the rows before
# building the indexes.
BULK_LOAD_MINIMUM = 20_000
# Queries per statement in query_many.
QUERY_CHUNK = 1_000


class PlanMismatch(PlanError):
    """The stored index was built with another plan than the one in use."""


class PgIndex:
    """Fingerprints (uint64) with article ids in PostgreSQL, searchable within k <= k_max.

    Given a conninfo string, the index opens its own autocommit connection. Given a connection,
    the transactions are the caller's: a write joins an open transaction as a savepoint (and is
    undone with it), or runs in a transaction of its own when none is open.
    """

    bulk_load_minimum = BULK_LOAD_MINIMUM

    def __init__(
        self,
        connection: psycopg.Connection | str,
        plan: Plan,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        if not isinstance(prefix, str) or not PREFIX_PATTERN.fullmatch(prefix):
            raise ValueError(
                f"table prefix {prefix!r} is not a safe identifier: use 1 to 48 characters "
                "from a-z, 0-9 and _, not starting with a digit"
            )
        if isinstance(connection, str):
            # Our own connection: autocommit, so that reads never hold a transaction open.
            self.conn = psycopg.connect(connection, autocommit=True)
            self._owns_connection = True
        else:
            self.conn = connection
            self._owns_connection = False
        self.plan = plan
        self.prefix = prefix
        self.segment = sql.Identifier(prefix)
        self.meta = sql.Identifier(f"{prefix}_meta")
        self.lookup_index = sql.Identifier(f"{prefix}_lookup")
        self.primary_key = sql.Identifier(f"{prefix}_pkey")
        self._load = sql.Identifier(f"{prefix}_load")
        self._table_nos = list(range(plan.table_count))
        self._lookup = self._sql(
            """
            SELECT DISTINCT s.article_id, bit_count((s.fingerprint # %(fp)s)::bit(64)) AS distance
            FROM {segment} AS s
            JOIN unnest(%(table_nos)s::int2[], %(keys)s::int8[]) AS q(table_no, key)
                USING (table_no, key)
            WHERE bit_count((s.fingerprint # %(fp)s)::bit(64)) <= %(k)s
            ORDER BY distance, article_id
            """
        )
        try:
            self._check_plan()
        except BaseException:
            self.close()
            raise

    # --- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> PgIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection if this index opened it."""
        if self._owns_connection:
            self.conn.close()

    def _sql(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(
            segment=self.segment,
            meta=self.meta,
            lookup_index=self.lookup_index,
            primary_key=self.primary_key,
            load=self._load,
        )

    def exists(self) -> bool:
        """Return whether the index's tables exist."""
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
            (self.prefix, f"{self.prefix}_meta"),
        ).fetchone()
        return bool(row[0])

    def _check_plan(self) -> None:
        """Raise PlanMismatch when the stored index was built with another plan."""
        if not self.exists():
            return
        row = self.conn.execute(
            self._sql("SELECT value FROM {meta} WHERE name = 'plan'")
        ).fetchone()
        if row is not None and row[0] != self.plan.version:
            raise PlanMismatch(
                f"index {self.prefix} was built with plan {row[0]}; this code uses plan "
                f"{self.plan.version}: rebuild it (drop() then create() and add() again) or "
                "use another table prefix"
            )

    def create(self) -> None:
        """Create the tables and indexes if they are missing (safe to call again)."""
        with self.conn.transaction():
            # Two processes creating the same index at once would otherwise race in the catalog.
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.prefix,))
            self.conn.execute(
                self._sql(
                    """
                    CREATE TABLE IF NOT EXISTS {meta} (name text PRIMARY KEY, value text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {segment} (
                        table_no smallint NOT NULL,
                        key bigint NOT NULL,
                        fingerprint bigint NOT NULL,
                        article_id bigint NOT NULL,
                        CONSTRAINT {primary_key} PRIMARY KEY (article_id, table_no)
                    );
                    CREATE INDEX IF NOT EXISTS {lookup_index}
                        ON {segment} (table_no, key) INCLUDE (fingerprint, article_id);
                    """
                )
            )
            self.conn.execute(
                self._sql(
                    "INSERT INTO {meta} (name, value) VALUES ('plan', %s) ON CONFLICT DO NOTHING"
                ),
                (self.plan.version,),
            )
        self._check_plan()

    def drop(self) -> None:
        """Drop the tables (and with them every stored fingerprint)."""
        with self.conn.transaction():
            self.conn.execute(self._sql("DROP TABLE IF EXISTS {segment}, {meta}"))

    def vacuum(self) -> None:
        """Vacuum and analyze the segment table, so lookups can be index-only scans at once."""
        # VACUUM cannot run inside a transaction block: give it an autocommit moment.
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise RuntimeError(
                "vacuum() cannot run inside a transaction: commit or roll back the "
                "connection's open transaction first"
            )
        autocommit = self.conn.autocommit
        self.conn.autocommit = True
        try:
            self.conn.execute(self._sql("VACUUM (ANALYZE) {segment}"))
        finally:
            self.conn.autocommit = autocommit

    # --- writing ------------------------------------------------------------------------------

    def add(self, ids: Iterable[int] | np.ndarray, values: Iterable[int] | np.ndarray) -> None:
        """Store fingerprints with their article ids; an id already stored is left as it is."""
        ids = article_id_array(ids)
        values = fingerprint_array(values)
        if len(ids) != len(values):
            raise ValueError(f"{len(ids)} ids for {len(values)} fingerprints: pass one id each")
        if not len(ids):
            return
        if len(np.unique(ids)) != len(ids):
            raise ValueError(
                "an article id repeats within one add(): an article has one fingerprint, "
                "so pass each id once"
            )
        with self.conn.transaction():
            if len(ids) >= self.bulk_load_minimum and self._lock_if_empty():
                self._bulk_load(ids, values)
            else:
                self._merge(ids, values)

    def _copy(
        self, table: sql.Composable, ids: np.ndarray, values: np.ndarray, freeze: bool = False
    ) -> None:
        """Stream every (table_no, key, fingerprint, article_id) row into a table, binary COPY."""
        options = sql.SQL("FORMAT BINARY, FREEZE" if freeze else "FORMAT BINARY")
        statement = sql.SQL("COPY {} (table_no, key, fingerprint, article_id) FROM STDIN ({})")
        with self.conn.cursor().copy(statement.format(table, options)) as copy:
            copy.write(COPY_HEADER)
            for start in range(0, len(ids), LOAD_CHUNK):
                part = slice(start, start + LOAD_CHUNK)
                copy.write(copy_rows(self.plan, ids[part], values[part]))
            copy.write(COPY_TRAILER)

    def _merge(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Add rows through a temporary table, skipping those already stored."""
        self.conn.execute(
            self._sql(
                """
                CREATE TEMP TABLE {load} (
                    table_no smallint, key bigint, fingerprint bigint, article_id bigint
                )
                """
            )
        )
        self._copy(self._load, ids, values)
        # ON CONFLICT makes a retried add() a no-op instead of a duplicate or an error.
        self.conn.execute(
            self._sql(
                """
                INSERT INTO {segment} (table_no, key, fingerprint, article_id)
                SELECT table_no, key, fingerprint, article_id FROM {load}
                ON CONFLICT (article_id, table_no) DO NOTHING
                """
            )
        )
        self.conn.execute(self._sql("DROP TABLE {load}"))

    def _lock_if_empty(self) -> bool:
        """Lock the segment table for a bulk load and return True if it is empty."""
        # Unlocked look first, so that adding to a filled index never blocks its readers.
        if self.conn.execute(self._sql("SELECT EXISTS (SELECT FROM {segment})")).fetchone()[0]:
            return False
        self.conn.execute(self._sql("LOCK TABLE {segment} IN ACCESS EXCLUSIVE MODE"))
        row = self.conn.execute(self._sql("SELECT EXISTS (SELECT FROM {segment})")).fetchone()
        return not row[0]

    def _bulk_load(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Fill the empty, locked segment table: rows first, then the indexes, in one go."""
        # Building a B-tree from sorted rows is several times faster than inserting into it row
        # by row. The table is empty and the ids distinct, so nothing can conflict; TRUNCATE
        # lets COPY FREEZE mark the pages all-visible, so lookups are index-only at once.
        self.conn.execute(
            self._sql(
                """
                DROP INDEX {lookup_index};
                ALTER TABLE {segment} DROP CONSTRAINT {primary_key};
                TRUNCATE {segment};
                SET LOCAL maintenance_work_mem = '512MB'
                """
            )
        )
        self._copy(self.segment, ids, values, freeze=True)
        self.conn.execute(
            self._sql(
                """
                ALTER TABLE {segment}
                    ADD CONSTRAINT {primary_key} PRIMARY KEY (article_id, table_no);
                CREATE INDEX {lookup_index}
                    ON {segment} (table_no, key) INCLUDE (fingerprint, article_id);
                ANALYZE {segment}
                """
            )
        )

    def remove(self, ids: Iterable[int] | np.ndarray) -> int:
        """Remove these articles; return how many of them were stored."""
        ids = article_id_array(ids)
        with self.conn.transaction():
            cursor = self.conn.execute(
                self._sql("DELETE FROM {segment} WHERE article_id = ANY(%s::int8[])"),
                (ids.tolist(),),
            )
        return cursor.rowcount // self.plan.table_count

    # --- searching ----------------------------------------------------------------------------

    def _check(self, k: int) -> None:
        if not 0 <= k <= self.plan.k_max:
            raise PlanError(
                f"k={k} is outside 0..{self.plan.k_max}, what this index's plan answers "
                f"({self.plan.version}); build it with a plan for k_max >= {k}"
            )

    def _params(self, value: int, k: int) -> dict:
        if not isinstance(value, int | np.unsignedinteger):
            raise TypeError(
                f"a fingerprint must be an unsigned 64-bit integer, not {type(value).__name__}: "
                "convert stored BIGINT values with hamming.to_unsigned"
            )
        value = int(value)
        return {
            "fp": to_signed(value),
            "table_nos": self._table_nos,
            "keys": [to_signed(self.plan.key(value, t)) for t in self._table_nos],
            "k": k,
        }

    def query(self, value: int, k: int) -> list[tuple[int, int]]:
        """Return (article_id, distance) of every fingerprint within distance k, nearest first."""
        self._check(k)
        rows = self.conn.execute(self._lookup, self._params(value, k)).fetchall()
        return [(article_id, int(distance)) for article_id, distance in rows]

    def query_many(self, values: Iterable[int] | np.ndarray, k: int) -> Hits:
        """Return every (query, article_id, distance) within distance k, a statement per chunk."""
        self._check(k)
        values = fingerprint_array(values)
        statement = self._sql(
            """
            SELECT DISTINCT q.query, s.article_id, bit_count((s.fingerprint # q.fp)::bit(64))
            FROM unnest(%(queries)s::int4[], %(fps)s::int8[], %(table_nos)s::int2[],
                        %(keys)s::int8[]) AS q(query, fp, table_no, key)
            JOIN {segment} AS s USING (table_no, key)
            WHERE bit_count((s.fingerprint # q.fp)::bit(64)) <= %(k)s
            """
        )
        tables = self.plan.table_count
        parts = []
        for start in range(0, len(values), QUERY_CHUNK):
            chunk = values[start : start + QUERY_CHUNK]
            n = len(chunk)
            params = {
                "queries": np.tile(np.arange(n, dtype=np.int64), tables).tolist(),
                "fps": np.tile(chunk.view(np.int64), tables).tolist(),
                "table_nos": np.repeat(np.arange(tables), n).tolist(),
                "keys": self.plan.keys(chunk).view(np.int64).reshape(-1).tolist(),
                "k": k,
            }
            rows = self.conn.execute(statement, params).fetchall()
            found = np.array(rows, dtype=np.int64).reshape(-1, 3)
            found[:, 0] += start
            parts.append(found)
        found = np.concatenate(parts) if parts else np.empty((0, 3), np.int64)
        order = np.lexsort((found[:, 1], found[:, 2], found[:, 0]))
        found = found[order]
        return Hits(found[:, 0], found[:, 1], found[:, 2].astype(np.uint8))

    def explain(self, value: int, analyze: bool = False) -> str:
        """Return PostgreSQL's plan for the lookup of one fingerprint (at k = k_max)."""
        option = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") if analyze else sql.SQL("EXPLAIN ")
        rows = self.conn.execute(option + self._lookup, self._params(value, self.plan.k_max))
        return "\n".join(row[0] for row in rows)

    # --- health -------------------------------------------------------------------------------

    def count(self) -> int:
        """Return the number of stored articles."""
        # Every article has exactly one row in table 0: counting those reads one index range.
        row = self.conn.execute(
            self._sql("SELECT count(*) FROM {segment} WHERE table_no = 0")
        ).fetchone()
        return int(row[0])

    def __len__(self) -> int:
        return self.count()

    def hot_buckets(self, factor: float = 20.0, minimum: int = 64) -> list[tuple[int, int, int]]:
        """Return (table_no, key, size) of buckets far above the size even spreading gives."""
        rows = self.conn.execute(
            self._sql(
                """
                WITH n AS (SELECT count(*) AS n FROM {segment} WHERE table_no = 0)
                SELECT s.table_no, s.key, count(*) AS size
                FROM {segment} AS s
                JOIN unnest(%(table_nos)s::int2[], %(key_bits)s::int4[]) AS t(table_no, bits)
                    USING (table_no)
                CROSS JOIN n
                GROUP BY s.table_no, s.key, t.bits, n.n
                HAVING count(*) > greatest(%(minimum)s, %(factor)s * n.n / 2 ^ t.bits)
                ORDER BY size DESC, s.table_no, s.key
                """
            ),
            {
                "table_nos": self._table_nos,
                "key_bits": list(self.plan.key_bits),
                "minimum": minimum,
                "factor": float(factor),
            },
        ).fetchall()
        return [(table_no, key & (2**64 - 1), size) for table_no, key, size in rows]
