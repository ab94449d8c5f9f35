"""Articles by the ids callers know them by, their fingerprints and the matches an article has."""

from __future__ import annotations

import numpy as np
from django.db.models import Q
from django.db.models.functions import Left

from dedup.engine.hamming import to_unsigned
from dedup.models import URL_KEY, Article, Decision, Fingerprint, Match, MatchKind, Verdict
from dedup.selectors.clusterings import Bars
from dedup.selectors.floors import Floor
from dedup.selectors.settings import settings_current


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


def article_matches(
    *, article_id: int, bars: Bars | None = None, k: int | None = None
) -> list[Match]:
    """Return the matches of an article the review queue shows at these bars, most similar
    first: MatchTable.shown (exact copies, near and partial ones at their bar and at the
    settings' bar now, no pair an editor rejected). k keeps those within a fingerprint
    distance: a diagnostic only."""
    near, partial = (bars or Bars()).key()
    shown = (
        Q(kind=MatchKind.EXACT)
        | Q(kind=MatchKind.NEAR, similarity__gte=near)
        | Q(kind=MatchKind.PARTIAL, similarity__gte=partial)
    )
    matches = Match.objects.filter(Q(a_id=article_id) | Q(b_id=article_id)).filter(shown)
    if k is not None:
        matches = matches.filter(distance__lte=k)
    rejected = rejected_partners(article_id)
    found = matches.select_related("a", "b").order_by("-similarity", "distance", "id")
    floor = Floor.of(settings_current())
    return [
        m
        for m in found
        if (m.b_id if m.a_id == article_id else m.a_id) not in rejected and _floor_met(m, floor)
    ]


def _floor_met(match: Match, floor: Floor) -> bool:
    """Tell whether a match meets the settings' bar for its kind now (as MatchTable.shown)."""
    if match.kind == MatchKind.NEAR:
        bar = floor.near_bar(min(match.a.length, match.b.length))
    elif match.kind == MatchKind.PARTIAL:
        bar = floor.partial_bar(match.shared_chars)
    else:
        return True
    return bool(np.float32(match.similarity) >= np.float32(bar))


def rejected_partners(article_id: int) -> set[int]:
    """Return the articles whose pair with this one an editor's latest decision rejected."""
    latest = {}
    decisions = Decision.objects.filter(Q(a_id=article_id) | Q(b_id=article_id), b__isnull=False)
    for a, b, verdict in decisions.order_by("id").values_list("a_id", "b_id", "verdict"):
        latest[b if a == article_id else a] = verdict
    return {other for other, verdict in latest.items() if verdict == Verdict.NOT_DUPLICATE}
