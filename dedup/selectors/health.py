"""An upload's progress and the index's health."""

from __future__ import annotations

from django.db.models import Count

from dedup.index.segments import PgSegmentIndex
from dedup.models import (
    Article,
    ArticleStatus,
    Fingerprint,
    Match,
    PassageKey,
    RebuildJob,
    SegmentRow,
    UploadBatch,
    UploadState,
)
from dedup.selectors.settings import settings_current

# A bucket is hot when it holds this many times the rows even spreading gives, and at least
# HOT_MINIMUM (as MemIndex.hot_buckets).
HOT_FACTOR = 20
HOT_MINIMUM = 64
HOT_SHOWN = 20


def upload_status(*, upload_id: int) -> dict:
    """Return an upload's state, counts, progress (0..1) and per-row errors."""
    batch = UploadBatch.objects.get(id=upload_id)
    busy = (ArticleStatus.PENDING, ArticleStatus.PROCESSING)
    counts = dict(
        Article.objects.filter(upload_id=upload_id)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    processed = sum(n for status, n in counts.items() if status not in busy)
    if batch.state in (UploadState.DONE, UploadState.FAILED):
        progress = 1.0
    elif batch.state == UploadState.PROCESSING and batch.accepted:
        progress = min(1.0, processed / batch.accepted)
    else:
        progress = 0.0
    return {
        "id": batch.pk,
        "name": batch.name,
        "source": batch.source,
        "state": batch.state,
        "total_rows": batch.total_rows,
        "accepted": batch.accepted,
        "rejected": batch.rejected,
        "processed": processed,
        "failed": counts.get(ArticleStatus.FAILED, 0),
        "exact": counts.get(ArticleStatus.EXACT, 0),
        "progress": round(progress, 4),
        "errors": batch.errors,
        "message": batch.message,
        "created_at": batch.created_at,
        "finished_at": batch.finished_at,
    }


def index_health() -> dict:
    """Return counts by status and kind, the backlog, the rebuild and any hot buckets."""
    settings = settings_current()
    version = settings.active_version
    articles = dict(
        Article.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    matches = dict(
        Match.objects.values_list("kind").annotate(n=Count("id")).values_list("kind", "n")
    )
    fingerprints = Fingerprint.objects.filter(version=version)
    indexed = fingerprints.exclude(value=None).count()
    rebuild = RebuildJob.objects.order_by("-id").first()
    return {
        "active_version": version,
        "index_version": settings.index_version,
        "articles": {status: articles.get(status, 0) for status in ArticleStatus.values},
        "backlog": articles.get(ArticleStatus.PENDING, 0)
        + articles.get(ArticleStatus.PROCESSING, 0),
        "fingerprints": fingerprints.count(),
        "segment_rows": SegmentRow.objects.filter(version=version).count(),
        "passage_keys": PassageKey.objects.filter(version=version).count(),
        "matches": {kind: matches.get(kind, 0) for kind in ("exact", "near", "partial")},
        "rebuild": None
        if rebuild is None
        else {
            "id": rebuild.pk,
            "version": rebuild.version,
            "state": rebuild.state,
            "done": rebuild.done,
            "total": rebuild.total,
            "message": rebuild.message,
        },
        "hot_buckets": _hot_buckets(settings.active(), version, indexed),
    }


def _hot_buckets(settings, version: str, indexed: int) -> list[dict]:
    """Return (table_no, key, rows) of buckets far above the size even spreading gives."""
    if not indexed:
        return []
    plan = settings.plan()
    hot = PgSegmentIndex(plan, version).hot_buckets(factor=HOT_FACTOR, minimum=HOT_MINIMUM)
    return [
        {
            "table_no": table,
            "key": key,
            "rows": size,
            "expected": round(indexed / 2 ** plan.key_bits[table], 2),
        }
        for table, key, size in hot[:HOT_SHOWN]
    ]
