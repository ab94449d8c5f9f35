"""Reads: articles by the ids callers know them by, an article's matches, the matches and
decisions after a cursor, an upload's progress, the index's health."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Max, Q
from django.db.models.functions import Left

from dedup.clusters import Bars
from dedup.engine.hamming import to_unsigned
from dedup.index import settings_current
from dedup.models import (
    URL_KEY,
    Article,
    ArticleStatus,
    Decision,
    Fingerprint,
    Match,
    MatchKind,
    PassageKey,
    RebuildJob,
    SegmentRow,
    UploadBatch,
    UploadState,
    Verdict,
)

# A bucket is hot when it holds this many times the rows even spreading gives, and at least
# HOT_MINIMUM (as MemIndex.hot_buckets).
HOT_FACTOR = 20
HOT_MINIMUM = 64
HOT_SHOWN = 20


def fingerprint_hex(value: int | None) -> str | None:
    """Return a stored (signed) fingerprint as 16 lowercase hex digits, or None."""
    return None if value is None else f"{to_unsigned(value):016x}"


def articles_find(
    *,
    external_id: str | None = None,
    url: str | None = None,
    source: str | None = None,
    after: int = 0,
    limit: int = 100,
) -> list[Article]:
    """Return the articles with this external id, URL and source (those given), after an id,
    oldest first."""
    found = Article.objects.filter(id__gt=after).defer("body")
    if external_id is not None:
        found = found.filter(external_id=external_id.strip()).exclude(external_id="")
    if url is not None:
        url = url.strip()
        found = found.annotate(url_key=Left("url", URL_KEY)).filter(url_key=url[:URL_KEY], url=url)
        found = found.exclude(url="")
    if source is not None:
        found = found.filter(source=source.strip())
    return list(found.order_by("id")[:limit])


def article_fingerprints(*, article_ids: list[int]) -> dict[int, Fingerprint]:
    """Return the current fingerprint of each article that has one: under the active version,
    else its newest."""
    version = settings_current().active_version
    found: dict[int, Fingerprint] = {}
    rows = Fingerprint.objects.filter(article_id__in=article_ids).defer("features", "sketch")
    for row in rows.order_by("article_id", "created_at", "id"):
        current = found.get(row.article_id)
        if current is None or current.version != version:
            found[row.article_id] = row
    return found


@dataclass(frozen=True)
class ChangePage:
    rows: list
    next: int  # the cursor to read on from
    more: bool  # the page is full: more may follow at once


def _change_page(rows, after: int, limit: int) -> ChangePage:
    """Return a page of rows after a cursor (filtered or not) and the cursor to read on from.

    The newest id is read first; rows up to it are all committed (dedup.db.change_lock), so a
    page short of the limit moves the cursor to it even past rows the filters left out, and
    a later read starts where this one's snapshot ended."""
    newest = rows.model.objects.aggregate(newest=Max("id"))["newest"] or 0
    page = list(rows.filter(id__gt=after, id__lte=newest).order_by("id")[: limit + 1])
    if len(page) > limit:
        return ChangePage(page[:limit], page[limit - 1].id, True)
    return ChangePage(page, max(after, newest), False)


def match_changes(
    *,
    after: int = 0,
    limit: int = 100,
    kind: str | None = None,
    min_similarity: float = 0.0,
    source: str | None = None,
) -> ChangePage:
    """Return the matches found after a cursor (oldest first), with their articles."""
    rows = Match.objects.select_related("a", "b").defer("a__body", "b__body")
    if kind:
        rows = rows.filter(kind=kind)
    if min_similarity > 0:
        rows = rows.filter(similarity__gte=min_similarity)
    if source is not None:
        rows = rows.filter(Q(a__source=source) | Q(b__source=source))
    return _change_page(rows, after, limit)


def decision_changes(
    *, after: int = 0, limit: int = 100, verdict: str | None = None, source: str | None = None
) -> ChangePage:
    """Return the decisions made after a cursor (oldest first), with their articles."""
    rows = Decision.objects.select_related("a", "b", "decided_by").defer("a__body", "b__body")
    if verdict:
        rows = rows.filter(verdict=verdict)
    if source is not None:
        rows = rows.filter(Q(a__source=source) | Q(b__source=source))
    return _change_page(rows, after, limit)


def article_ref(article: Article | None) -> dict | None:
    """Return how listings and webhooks name an article: ids, title, source and URL."""
    if article is None:
        return None
    return {
        "id": article.pk,
        "external_id": article.external_id,
        "title": article.title,
        "source": article.source,
        "url": article.url,
    }


def match_change_json(match: Match) -> dict:
    """Return a match as listings and webhooks show it."""
    return {
        "id": match.pk,
        "a": article_ref(match.a),
        "b": article_ref(match.b),
        "kind": match.kind,
        "distance": match.distance,
        "similarity": match.similarity,
        "shared_chars": match.shared_chars,
        "found_at": match.found_at,
    }


def decision_change_json(decision: Decision) -> dict:
    """Return a decision as listings and webhooks show it."""
    return {
        "id": decision.pk,
        "verdict": decision.verdict,
        "a": article_ref(decision.a),
        "b": article_ref(decision.b),
        "decided_by": decision.decided_by.username if decision.decided_by else None,
        "decided_at": decision.decided_at,
        "note": decision.note,
    }


def article_matches(
    *, article_id: int, bars: Bars | None = None, k: int | None = None
) -> list[Match]:
    """Return the matches of an article the review queue shows at these bars, most similar
    first: MatchTable.shown in SQL (exact copies, near and partial ones at their bar, no pair
    an editor rejected). k keeps those within a fingerprint distance: a diagnostic only."""
    near, partial = (bars or Bars()).key()
    shown = (
        Q(kind=MatchKind.EXACT)
        | Q(kind=MatchKind.NEAR, similarity__gte=near)
        | Q(kind=MatchKind.PARTIAL, similarity__gte=partial)
    )
    matches = Match.objects.filter(Q(a_id=article_id) | Q(b_id=article_id)).filter(shown)
    if k is not None:
        matches = matches.filter(distance__lte=k)
    rejected = _rejected_partners(article_id)
    found = matches.select_related("a", "b").order_by("-similarity", "distance", "id")
    return [m for m in found if (m.b_id if m.a_id == article_id else m.a_id) not in rejected]


def _rejected_partners(article_id: int) -> set[int]:
    """Return the articles whose pair with this one an editor's latest decision rejected."""
    latest = {}
    decisions = Decision.objects.filter(Q(a_id=article_id) | Q(b_id=article_id), b__isnull=False)
    for a, b, verdict in decisions.order_by("id").values_list("a_id", "b_id", "verdict"):
        latest[b if a == article_id else a] = verdict
    return {other for other, verdict in latest.items() if verdict == Verdict.NOT_DUPLICATE}


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
    key_bits = settings.plan().key_bits
    limits = [max(HOT_MINIMUM, HOT_FACTOR * indexed / 2**bits) for bits in key_bits]
    rows = (
        SegmentRow.objects.filter(version=version)
        .values("table_no", "key")
        .annotate(rows=Count("id"))
        .filter(rows__gt=min(limits))
        .order_by("-rows")
    )
    hot = []
    for row in rows[: HOT_SHOWN * 10]:
        table = row["table_no"]
        if table < len(limits) and row["rows"] > limits[table]:
            expected = indexed / 2 ** key_bits[table]
            hot.append({**row, "expected": round(expected, 2)})
    return hot[:HOT_SHOWN]
