"""The segment and passage index in the database, through the ORM.

An article is indexed under one version (Settings.index_version) as its Fingerprint (with the
packed verification features), one SegmentRow per table of the plan (the fingerprint under
that table's key, `Plan.keys`, as in MemIndex and PgIndex) and one PassageKey per passage.
Every write ignores rows that exist already, so a retried task adds nothing twice.

Candidates are read back in one query for the fingerprint's bucket in every table (on
PostgreSQL the Hamming distance is checked in SQL, on SQLite here, on the bucket rows), and
one for the passage keys, leaving out keys more than MAX_PASSAGE_OWNERS articles hold. They
are verified on their stored features: an old article is never tokenised again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import repeat

import numpy as np
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from dedup.db import columns, int_array, pg_cursor
from dedup.engine import screen
from dedup.engine.fingerprint import Fingerprint as EngineFingerprint
from dedup.engine.hamming import to_signed, to_unsigned
from dedup.engine.plan import Plan
from dedup.engine.verify import MAX_PASSAGE_OWNERS, Detector, Duplicate, Features
from dedup.models import Article, Fingerprint, Match, PassageKey, SegmentRow, Settings

logger = logging.getLogger(__name__)

# Rows per INSERT statement, and candidates whose features are loaded at once.
BATCH = 2000
FEATURES_BATCH = 500

_detectors: dict[tuple, Detector] = {}
_detectors_lock = threading.Lock()


def settings_current() -> Settings:
    """Return the settings row, with active_version set on first use."""
    row = Settings.load()
    if not row.active_version:
        Settings.objects.filter(pk=row.pk, active_version="").update(
            active_version=row.index_version, active_config=row.config_fields()
        )
        row.refresh_from_db()
    return row


def detector_for(settings: Settings) -> Detector:
    """Return a Detector for these settings, built once per process (it loads dictionaries)."""
    key = (settings.engine_config().version, settings.k_max, settings.near, settings.partial)
    with _detectors_lock:
        detector = _detectors.get(key)
        if detector is None:
            detector = Detector(
                settings.engine_config(),
                k_article=settings.k_max,
                near=settings.near,
                partial=settings.partial,
            )
            _detectors[key] = detector
        return detector


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
    if connection.vendor == "postgresql":
        new = _fingerprints_insert_pg(fingerprints, version)
    else:
        new = _fingerprints_insert(fingerprints, version)
    items = [item for item in items if item.article_id in new]
    with_value = [item for item in items if item.features.fingerprint is not None]
    segments: list[tuple[int, int, int, int]] = []  # (table_no, key, fingerprint, article)
    if with_value:
        values = np.array([item.features.fingerprint for item in with_value], dtype=np.uint64)
        keys = plan.keys(values).view(np.int64).tolist()  # signed, the same bits
        signed = values.view(np.int64).tolist()
        ids = [item.article_id for item in with_value]
        for table in range(plan.table_count):
            segments += zip(repeat(table), keys[table], signed, ids, strict=False)
    passages = [
        (key, number, item.article_id)
        for item in items
        for number, key in enumerate(item.features.passage_keys.view(np.int64).tolist())
    ]
    if connection.vendor == "postgresql":
        _index_rows_insert_pg(segments, passages, version)
    else:
        SegmentRow.objects.bulk_create(
            [
                SegmentRow(version=version, table_no=t, key=k, fingerprint=f, article_id=a)
                for t, k, f, a in segments
            ],
            batch_size=BATCH,
        )
        PassageKey.objects.bulk_create(
            [
                PassageKey(version=version, key=k, passage_no=n, article_id=a)
                for k, n, a in passages
            ],
            batch_size=BATCH,
        )
    return len(segments) + len(passages)


def _fingerprints_insert(fingerprints: list[tuple], version: str) -> set[int]:
    """Insert the fingerprint rows not stored yet (ORM); return their articles."""
    ids = [row[0] for row in fingerprints]
    stored = set(
        Fingerprint.objects.filter(version=version, article_id__in=ids).values_list(
            "article_id", flat=True
        )
    )
    now = timezone.now()
    Fingerprint.objects.bulk_create(
        [
            Fingerprint(
                article_id=a,
                version=version,
                value=v,
                status=s,
                tokens=t,
                features=f,
                shingles=n,
                sketch=k,
                created_at=now,
            )
            for a, v, s, t, f, n, k in fingerprints
            if a not in stored
        ],
        batch_size=FEATURES_BATCH,
    )
    return set(ids) - stored


def _fingerprints_insert_pg(fingerprints: list[tuple], version: str) -> set[int]:
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


def _index_rows_insert_pg(segments: list[tuple], passages: list[tuple], version: str) -> None:
    """Write segment rows and passage keys, one statement each, every column as one array."""
    with pg_cursor() as cursor:
        if segments:
            cursor.execute(
                """
                INSERT INTO dedup_segmentrow (version, table_no, key, fingerprint, article_id)
                SELECT %s, t, k, f, a
                FROM unnest(%s::smallint[], %s::bigint[], %s::bigint[], %s::bigint[])
                    AS u(t, k, f, a)
                """,
                [version, *columns(segments)],
            )
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
    if (
        _rows_since_vacuum < VACUUM_EVERY_ROWS
        or connection.vendor != "postgresql"
        or connection.in_atomic_block
    ):
        return False
    _rows_since_vacuum = 0
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (SKIP_LOCKED) dedup_passagekey, dedup_segmentrow")
    return True


def _signed(value: int | None) -> int | None:
    return None if value is None else to_signed(value)


def retention_start(settings: Settings, now: datetime | None = None) -> datetime | None:
    """Return the earliest dated_at inside the retention window, or None when it is off."""
    if not settings.retention_days:
        return None
    return (now or timezone.now()) - timedelta(days=settings.retention_days)


def candidates_find(
    *,
    features: Features,
    version: str,
    plan: Plan,
    k: int,
    since: datetime | None = None,
    exclude: int | None = None,
) -> set[int]:
    """Return the articles within distance k of the fingerprint or sharing a passage key."""
    return candidates_find_many(
        queries=[(exclude, features)], version=version, plan=plan, k=k, since=since
    )[0]


def candidates_find_many(
    *,
    queries: Sequence[tuple[int | None, Features]],
    version: str,
    plan: Plan,
    k: int,
    since: datetime | None = None,
) -> list[set[int]]:
    """Return, for each (article id or None, features), the other articles within distance k
    of its fingerprint or sharing one of its passage keys: a few statements for them all."""
    found: list[set[int]] = [set() for _ in queries]
    with_value = [
        (i, f.fingerprint) for i, (_, f) in enumerate(queries) if f.fingerprint is not None
    ]
    if with_value:
        for i, article_id in _near_fingerprints(with_value, version, plan, k):
            found[i].add(article_id)
    keys = [f.passage_keys.view(np.int64).tolist() for _, f in queries]
    owners = _passage_owners(sorted({key for some in keys for key in some}), version)
    for i, some in enumerate(keys):
        for key in some:
            found[i].update(owners.get(key, ()))
    for (exclude, _), some in zip(queries, found, strict=True):
        some.discard(exclude)
    if since is not None:
        every = set().union(*found)
        if every:
            old = set(
                Article.objects.filter(id__in=every, dated_at__lt=since).values_list(
                    "id", flat=True
                )
            )
            for some in found:
                some -= old
    return found


# Passage keys found to be boilerplate, per worker process: (version, key) -> when. A key
# only gains owners, except when the retention window prunes them: an entry is trusted for
# HOT_KEY_SECONDS. Most passages of a site's pages are its boilerplate, looked up again and
# again.
HOT_KEYS_CACHED = 500_000
HOT_KEY_SECONDS = 600.0
_hot_keys: dict[tuple[str, int], float] = {}


def _passage_owners(keys: list[int], version: str) -> dict[int, list[int]]:
    """Return the articles holding each passage key; a key held by more than
    MAX_PASSAGE_OWNERS articles (a footer, a menu) is boilerplate and is left out."""
    now = time.monotonic()
    with _features_lock:
        seen = [_hot_keys.get((version, key)) for key in keys]
    keys = [k for k, at in zip(keys, seen, strict=True) if at is None or now - at > HOT_KEY_SECONDS]
    if not keys:
        return {}
    limit = MAX_PASSAGE_OWNERS + 1
    owners: dict[int, list[int]] = {}
    if connection.vendor == "postgresql":
        # Each key's first owners, in one statement: a boilerplate key stops at limit rows.
        with pg_cursor() as cursor:
            cursor.execute(
                """
                SELECT q.key, p.article_id
                FROM unnest(%s::bigint[]) AS q(key)
                CROSS JOIN LATERAL (
                    SELECT DISTINCT article_id FROM dedup_passagekey
                    WHERE version = %s AND key = q.key
                    ORDER BY article_id
                    LIMIT %s
                ) AS p
                """,
                [int_array(keys), version, limit],
                binary=True,
            )
            rows = cursor.fetchall()
    else:
        rows = []
        for start in range(0, len(keys), 500):
            rows += (
                PassageKey.objects.filter(version=version, key__in=keys[start : start + 500])
                .values_list("key", "article_id")
                .distinct()
            )
    for key, article_id in rows:
        owners.setdefault(key, []).append(article_id)
    hot = [key for key, ids in owners.items() if len(ids) >= limit]
    if hot:
        with _features_lock:
            if len(_hot_keys) + len(hot) > HOT_KEYS_CACHED:
                _hot_keys.clear()
            _hot_keys.update(dict.fromkeys([(version, key) for key in hot], now))
    return {key: ids for key, ids in owners.items() if len(ids) < limit}


def _near_fingerprints(
    values: list[tuple[int, int]], version: str, plan: Plan, k: int
) -> list[tuple[int, int]]:
    """Return (query number, article) for every stored fingerprint within distance k of the
    queries' (number, fingerprint): one statement, each table's bucket read under its key."""
    numbers = [number for number, _ in values]
    unsigned = np.array([value for _, value in values], dtype=np.uint64)
    keys = plan.keys(unsigned).view(np.int64)  # (tables, queries)
    tables = plan.table_count
    if connection.vendor == "postgresql":
        # The distance is checked in the database: only the matches come back.
        with pg_cursor() as cursor:
            cursor.execute(
                """
                SELECT q.i, s.article_id
                FROM unnest(%s::int[], %s::smallint[], %s::bigint[], %s::bigint[])
                    AS q(i, table_no, key, fp)
                JOIN dedup_segmentrow s ON s.version = %s AND s.table_no = q.table_no
                    AND s.key = q.key
                WHERE bit_count((s.fingerprint # q.fp)::bit(64)) <= %s
                """,
                [
                    int_array(numbers * tables),
                    int_array(t for t in range(tables) for _ in numbers),
                    int_array(keys.reshape(-1).tolist()),
                    int_array(unsigned.view(np.int64).tolist() * tables),
                    version,
                    k,
                ],
                binary=True,
            )
            return list(set(cursor.fetchall()))
    found = set()
    for j, (number, value) in enumerate(values):
        buckets = Q()
        for table in range(tables):
            buckets |= Q(table_no=table, key=int(keys[table, j]))
        rows = SegmentRow.objects.filter(buckets, version=version)
        for article_id, other in rows.values_list("article_id", "fingerprint").iterator():
            if (to_unsigned(other) ^ value).bit_count() <= k:
                found.add((number, article_id))
    return sorted(found)


# Features of recently matched articles, per worker process: a family of copies is verified
# against the same originals again and again. Stored features never change under a version.
FEATURES_CACHED = 20_000  # about 150 MB per worker
_features_cache: OrderedDict[tuple[str, int], Features] = OrderedDict()
_features_lock = threading.Lock()


def caches_clear() -> None:
    """Forget this process's cached features, sketches and boilerplate keys, and which
    versions' unreadable features it has logged (tests)."""
    with _features_lock:
        _features_cache.clear()
        _sketch_cache.clear()
        _hot_keys.clear()
        _unreadable_logged.clear()


def _cached(cache: OrderedDict, version: str, article_ids: Iterable[int]) -> tuple[dict, list]:
    """Return what a per-worker cache holds of some articles, and the ids it does not."""
    loaded, missing = {}, []
    with _features_lock:
        for article_id in sorted(set(article_ids)):
            cached = cache.get((version, article_id))
            if cached is None:
                missing.append(article_id)
            else:
                cache.move_to_end((version, article_id))
                loaded[article_id] = cached
    return loaded, missing


def features_load(*, article_ids: Iterable[int], version: str) -> dict[int, Features]:
    """Return the stored features of articles under a version (those that have them)."""
    loaded, missing = _cached(_features_cache, version, article_ids)
    if missing and connection.vendor == "postgresql":
        with pg_cursor() as cursor:
            cursor.execute(
                "SELECT article_id, features FROM dedup_fingerprint"
                " WHERE version = %s AND article_id = ANY(%s)",
                [version, int_array(missing)],
                binary=True,
            )
            rows = cursor.fetchall()
    else:
        rows = []
        for start in range(0, len(missing), FEATURES_BATCH):
            rows += Fingerprint.objects.filter(
                version=version, article_id__in=missing[start : start + FEATURES_BATCH]
            ).values_list("article_id", "features")
    unpacked = _features_unpack(rows, version)
    with _features_lock:
        for article_id, features in unpacked.items():
            loaded[article_id] = features
            _features_cache[version, article_id] = features
            if len(_features_cache) > FEATURES_CACHED:
                _features_cache.popitem(last=False)
    return loaded


# Versions whose unreadable features this process has logged: one line per version, not one
# per candidate of every chunk.
_unreadable_logged: set[str] = set()


def _features_unpack(rows: Iterable[tuple[int, bytes]], version: str) -> dict[int, Features]:
    """Unpack stored features; leave out (and log once per version) those this code cannot
    read, so that their articles are not verified instead of failing whoever asked."""
    unpacked, unreadable = {}, {}
    for article_id, data in rows:
        try:
            unpacked[article_id] = Features.from_bytes(data)
        except ValueError as error:
            # Rows of an older release (another FEATURES_FORMAT), read while the rebuild to
            # this release's version runs.
            unreadable[article_id] = error
    if unreadable:
        with _features_lock:
            first_time = version not in _unreadable_logged
            _unreadable_logged.add(version)
        if first_time:
            article_id, error = min(unreadable.items())
            logger.warning(
                "the stored features of %d article(s) under version %s cannot be read (the "
                "first, article %s: %s); such articles are not verified until a rebuild "
                "re-indexes them (logged once per version)",
                len(unreadable),
                version,
                article_id,
                error,
            )
    return unpacked


def duplicates_find(
    *,
    article_id: int | None,
    features: Features,
    candidates: Iterable[int],
    version: str,
    detector: Detector,
) -> list[Duplicate]:
    """Verify candidates on their stored features; return the duplicates, a < b where known.

    With an article id, each duplicate is oriented so that `a` is the lower id (its shared
    passages too); without one (a text being checked), `a` is the text, numbered 0.
    """
    stored = features_load(article_ids=candidates, version=version)
    return _judge(article_id, features, candidates, stored, detector)


def duplicates_find_many(
    *,
    queries: Sequence[tuple[int, Features]],
    candidates: Sequence[Iterable[int]],
    version: str,
    detector: Detector,
    counts: dict[str, int] | None = None,
) -> list[list[Duplicate] | Exception]:
    """Verify each article's candidates; return each article's duplicates, or the error that
    stopped its verification. `counts`, if given, gets the candidates and how many of them
    were verified in full.

    The candidates are screened on their sketches first (dedup.engine.screen); the features of
    those that pass are loaded once for the whole chunk."""
    candidates = [sorted(set(some)) for some in candidates]
    sketches = sketches_load(article_ids=set().union(*candidates), version=version)
    least = min(detector.near, detector.partial)
    passing = []
    for (_, features), some in zip(queries, candidates, strict=True):
        known = [b for b in some if b in sketches]
        keep = screen.may_pass(
            screen.sketch(features.shingles),
            len(features.shingles),
            [sketches[b][1] for b in known],
            [sketches[b][0] for b in known],
            least,
        )
        passing.append(
            {b for b, ok in zip(known, keep.tolist(), strict=True) if ok}
            | {b for b in some if b not in sketches}
        )
    stored = features_load(article_ids=set().union(*passing), version=version)
    if counts is not None:
        counts["candidates"] = counts.get("candidates", 0) + sum(map(len, candidates))
        counts["verified"] = counts.get("verified", 0) + sum(map(len, passing))
    results: list[list[Duplicate] | Exception] = []
    for (article_id, features), some in zip(queries, passing, strict=True):
        try:
            results.append(_judge(article_id, features, some, stored, detector))
        except Exception as error:  # one article's bad features must not sink the chunk
            results.append(error)
    return results


SKETCHES_CACHED = 50_000
_sketch_cache: OrderedDict[tuple[str, int], tuple[int, np.ndarray]] = OrderedDict()


def sketches_load(*, article_ids: Iterable[int], version: str) -> dict[int, tuple[int, np.ndarray]]:
    """Return (shingle count, sketch) of articles under a version that have a sketch."""
    loaded, missing = _cached(_sketch_cache, version, article_ids)
    if missing and connection.vendor == "postgresql":
        with pg_cursor() as cursor:
            cursor.execute(
                "SELECT article_id, shingles, sketch FROM dedup_fingerprint"
                " WHERE version = %s AND article_id = ANY(%s) AND sketch IS NOT NULL",
                [version, int_array(missing)],
                binary=True,
            )
            rows = cursor.fetchall()
    else:
        rows = []
        for start in range(0, len(missing), FEATURES_BATCH):
            rows += Fingerprint.objects.filter(
                version=version,
                article_id__in=missing[start : start + FEATURES_BATCH],
                sketch__isnull=False,
            ).values_list("article_id", "shingles", "sketch")
    with _features_lock:
        for article_id, size, data in rows:
            loaded[article_id] = (size, np.frombuffer(bytes(data), dtype="<u4"))
            _sketch_cache[version, article_id] = loaded[article_id]
            if len(_sketch_cache) > SKETCHES_CACHED:
                _sketch_cache.popitem(last=False)
    return loaded


def _judge(article_id, features, candidates, stored, detector) -> list[Duplicate]:
    others = sorted((b, stored[b]) for b in candidates if b in stored)
    if not others:
        return []
    me = article_id if article_id is not None else 0
    found = detector.judge_many(me, features, others)
    if article_id is None:
        return found
    return [d if d.a < d.b else _flip(d) for d in found]


def _flip(d: Duplicate) -> Duplicate:
    return Duplicate(
        a=d.b,
        b=d.a,
        kind=d.kind,
        distance=d.distance,
        similarity=d.similarity,
        shared_passages=[(y, x) for x, y in d.shared_passages],
    )


def match_rows(duplicates: Iterable[Duplicate], *, version: str) -> list[Match]:
    """Return unsaved Match rows for verified duplicates (a < b)."""
    return [
        Match(
            a_id=d.a,
            b_id=d.b,
            kind=d.kind,
            distance=d.distance,
            similarity=float(d.similarity),
            shared_passages=[[int(x), int(y)] for x, y in d.shared_passages],
            version=version,
        )
        for d in duplicates
    ]
