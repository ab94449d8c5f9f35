"""Storing articles in the index: fingerprints with their packed features, segment rows and
passage keys (index_store), and the VACUUM that keeps look-ups index-only
(index_vacuum_if_due)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.db import connection

from dedup.db import columns, pg_cursor
from dedup.engine import screen
from dedup.engine.fingerprint import Fingerprint as EngineFingerprint
from dedup.engine.hamming import to_signed
from dedup.engine.plan import Plan
from dedup.engine.verify import Features
from dedup.index.segments import segment_rows, segments_insert

# Rows per INSERT statement, and candidates whose features are loaded at once.
BATCH = 2000
FEATURES_BATCH = 500


@dataclass(frozen=True)
class Indexed:
    """One article's fingerprint and features, ready to be stored."""

    article_id: int
    fingerprint: EngineFingerprint
    features: Features


def index_store(*, items: Iterable[Indexed], version: str, plan: Plan) -> int:
    """Write fingerprints, segment rows and passage keys; return how many index rows were
    written. Call it inside a transaction.

    The fingerprint row, unique per (article, version), is the gate: an article whose
    fingerprint is stored already (a task run twice) gets no index rows again, so the index
    tables need no unique constraint of their own to stay free of doubles."""
    items = list(items)
    if not items:
        return 0
    fingerprints = [
        (
            item.article_id,
            _signed(item.features.fingerprint),
            str(item.fingerprint.status),
            item.fingerprint.tokens,
            item.features.to_bytes(),
            len(item.features.shingles),
            screen.sketch(item.features.shingles).astype("<u4").tobytes(),
        )
        for item in items
    ]
    new = _fingerprints_insert(fingerprints, version)
    items = [item for item in items if item.article_id in new]
    with_value = [item for item in items if item.features.fingerprint is not None]
    segments = segment_rows(  # (key, fingerprint, article)
        plan,
        np.array([item.article_id for item in with_value], dtype=np.int64),
        np.array([item.features.fingerprint for item in with_value], dtype=np.uint64),
    )
    # Its passage keys, then its fact keys (numbered after its passages: dedup.engine.facts).
    passages = [
        (key, number, item.article_id)
        for item in items
        for number, key in enumerate(_keys_of(item.features))
    ]
    _index_rows_insert(segments, passages, version)
    return len(segments) + len(passages)


def _keys_of(features: Features) -> list[int]:
    """Return an article's passage keys and fact keys, signed (as stored)."""
    keys = np.concatenate([features.passage_keys, features.fact_keys]).astype(np.uint64)
    return keys.view(np.int64).tolist()


def _fingerprints_insert(fingerprints: list[tuple], version: str) -> set[int]:
    """Insert the fingerprint rows not stored yet, in one statement; return their articles."""
    with pg_cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO dedup_fingerprint (article_id, version, value, status, tokens, features,
                                           shingles, sketch, created_at)
            SELECT a, %s, v, s, t, f, n, k, now()
            FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::bytea[],
                        %s::int[], %s::bytea[])
                AS u(a, v, s, t, f, n, k)
            ON CONFLICT DO NOTHING
            RETURNING article_id
            """,
            [version, *columns(fingerprints)],
        )
        return {row[0] for row in cursor.fetchall()}


def _index_rows_insert(segments: list[tuple], passages: list[tuple], version: str) -> None:
    """Write segment rows and passage keys, one statement each, every column as one array."""
    segments_insert(segments, version)
    with pg_cursor() as cursor:
        if passages:
            cursor.execute(
                """
                INSERT INTO dedup_passagekey (version, key, passage_no, article_id)
                SELECT %s, k, n, a FROM unnest(%s::bigint[], %s::int[], %s::bigint[]) AS u(k, n, a)
                """,
                [version, *columns(passages)],
            )


# Index rows a worker process writes between two VACUUMs of the index tables (PostgreSQL).
VACUUM_EVERY_ROWS = 40_000
_rows_since_vacuum = 0


def index_vacuum_if_due(rows: int) -> bool:
    """Count index rows written; VACUUM the index tables when enough are new. Return whether
    it ran.

    A look-up reads only the index (an index-only scan) where the table's pages are marked
    all-visible, which only VACUUM does; rows not yet marked cost a visit to the table each,
    about five times the time. Autovacuum wakes once a minute at best, and an upload adds
    hundreds of thousands of rows in that time. SKIP_LOCKED: if another worker is at it,
    this one goes on."""
    global _rows_since_vacuum
    _rows_since_vacuum += rows
    if _rows_since_vacuum < VACUUM_EVERY_ROWS or connection.in_atomic_block:
        return False
    _rows_since_vacuum = 0
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (SKIP_LOCKED) dedup_passagekey, dedup_segment")
    return True


def _signed(value: int | None) -> int | None:
    return None if value is None else to_signed(value)
