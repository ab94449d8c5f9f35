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

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from dedup.engine.fingerprint import Fingerprint as EngineFingerprint
from dedup.engine.hamming import to_signed, to_unsigned
from dedup.engine.plan import Plan
from dedup.engine.verify import MAX_PASSAGE_OWNERS, Detector, Duplicate, Features
from dedup.models import Fingerprint, Match, PassageKey, SegmentRow, Settings

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


def index_store(*, items: Iterable[Indexed], version: str, plan: Plan) -> None:
    """Write fingerprints, segment rows and passage keys; rows that exist are left alone."""
    items = list(items)
    if not items:
        return
    Fingerprint.objects.bulk_create(
        [
            Fingerprint(
                article_id=item.article_id,
                version=version,
                value=_signed(item.features.fingerprint),
                status=str(item.fingerprint.status),
                tokens=item.fingerprint.tokens,
                features=item.features.to_bytes(),
            )
            for item in items
        ],
        ignore_conflicts=True,
        batch_size=FEATURES_BATCH,
    )
    with_value = [item for item in items if item.features.fingerprint is not None]
    if with_value:
        values = np.array([item.features.fingerprint for item in with_value], dtype=np.uint64)
        keys = plan.keys(values).view(np.int64)  # signed, the same bits
        segments = [
            SegmentRow(
                version=version,
                table_no=table,
                key=int(keys[table, j]),
                fingerprint=to_signed(item.features.fingerprint),
                article_id=item.article_id,
            )
            for j, item in enumerate(with_value)
            for table in range(plan.table_count)
        ]
        SegmentRow.objects.bulk_create(segments, ignore_conflicts=True, batch_size=BATCH)
    passages = [
        PassageKey(version=version, key=key, passage_no=number, article_id=item.article_id)
        for item in items
        for number, key in enumerate(item.features.passage_keys.view(np.int64).tolist())
    ]
    PassageKey.objects.bulk_create(passages, ignore_conflicts=True, batch_size=BATCH)


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
    found: set[int] = set()
    if features.fingerprint is not None:
        found.update(_near_fingerprints(features.fingerprint, version, plan, k, since))
    keys = sorted(set(features.passage_keys.view(np.int64).tolist()))
    if keys:
        found.update(_passage_sharers(keys, version, since))
    found.discard(exclude)
    return found


def _passage_sharers(keys: list[int], version: str, since: datetime | None) -> set[int]:
    """Return the articles holding one of these passage keys; a key held by more than
    MAX_PASSAGE_OWNERS articles (a footer, a menu) is boilerplate and finds nothing."""
    held = PassageKey.objects.filter(version=version, key__in=keys)
    # Two statements: the common keys first (few), then the owners of the others. One statement
    # with the first as a subquery measured slower (bench/pipeline.py: 108 against 130/s).
    common = set(
        held.values("key")
        .annotate(owners=Count("article_id", distinct=True))
        .filter(owners__gt=MAX_PASSAGE_OWNERS)
        .values_list("key", flat=True)
    )
    usable = [key for key in keys if key not in common]
    if not usable:
        return set()
    rows = PassageKey.objects.filter(version=version, key__in=usable)
    if since is not None:
        rows = rows.filter(article__dated_at__gte=since)
    return set(rows.values_list("article_id", flat=True).distinct())


def _near_fingerprints(
    value: int, version: str, plan: Plan, k: int, since: datetime | None
) -> set[int]:
    """Return the articles whose fingerprint is within distance k: one query, each table's
    bucket read under its own key."""
    keys = plan.keys(np.array([value], dtype=np.uint64)).view(np.int64)[:, 0].tolist()
    if connection.vendor == "postgresql":
        # The distance is checked in the database: only the matches come back.
        joined = "JOIN dedup_article a ON a.id = s.article_id AND a.dated_at >= %s" if since else ""
        sql = f"""
            SELECT DISTINCT s.article_id
            FROM unnest(%s::smallint[], %s::bigint[]) AS q(table_no, key)
            JOIN dedup_segmentrow s ON s.version = %s AND s.table_no = q.table_no
                AND s.key = q.key
            {joined}
            WHERE bit_count((s.fingerprint # %s)::bit(64)) <= %s
        """
        params = [list(range(len(keys))), keys, version, *([since] if since else [])]
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, to_signed(value), k])
            return {row[0] for row in cursor.fetchall()}
    buckets = Q()
    for table, key in enumerate(keys):
        buckets |= Q(table_no=table, key=key)
    rows = SegmentRow.objects.filter(buckets, version=version)
    if since is not None:
        rows = rows.filter(article__dated_at__gte=since)
    return {
        article_id
        for article_id, other in rows.values_list("article_id", "fingerprint").iterator()
        if (to_unsigned(other) ^ value).bit_count() <= k
    }


# Features of recently matched articles, per worker process: a family of copies is verified
# against the same originals again and again. Stored features never change under a version.
FEATURES_CACHED = 4000
_features_cache: OrderedDict[tuple[str, int], Features] = OrderedDict()
_features_lock = threading.Lock()


def features_load(*, article_ids: Iterable[int], version: str) -> dict[int, Features]:
    """Return the stored features of articles under a version (those that have them)."""
    loaded, missing = {}, []
    with _features_lock:
        for article_id in sorted(set(article_ids)):
            cached = _features_cache.get((version, article_id))
            if cached is None:
                missing.append(article_id)
            else:
                _features_cache.move_to_end((version, article_id))
                loaded[article_id] = cached
    for start in range(0, len(missing), FEATURES_BATCH):
        rows = Fingerprint.objects.filter(
            version=version, article_id__in=missing[start : start + FEATURES_BATCH]
        ).values_list("article_id", "features")
        for article_id, data in rows:
            loaded[article_id] = Features.from_bytes(data)
            with _features_lock:
                _features_cache[version, article_id] = loaded[article_id]
                if len(_features_cache) > FEATURES_CACHED:
                    _features_cache.popitem(last=False)
    return loaded


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
    others = sorted(stored.items())
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
