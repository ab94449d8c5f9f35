"""The matches and decisions after a cursor: what the API's listings and webhooks read."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Max, Q

from dedup.models import Decision, Match
from dedup.selectors.articles import article_ref


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
