"""Following along: new matches and editors' decisions after a cursor, a page at a time.

A cursor is a place in a change sequence (the rows' ids, which writers take in commit order,
see dedup.db.change_lock), so that a caller who pages on with `next` sees every change once,
however many arrive meanwhile."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query

from dedup import selectors
from dedup.api.core import READ, TokenAuth, api
from dedup.api.schemas import DecisionPage, MatchPage
from dedup.models import MatchKind, Verdict

from .articles import ERRORS, PAGE_MAX


@api.get(
    "/matches",
    auth=TokenAuth(READ),
    response={200: MatchPage, **ERRORS},
    url_name="matches_changed",
    tags=["following along"],
    summary="New matches after a cursor",
)
def matches_changed(
    request: HttpRequest,
    after: int = Query(0, ge=0, description="the `next` of the page before; 0 from the start"),
    limit: int = Query(100, ge=1, le=PAGE_MAX),
    kind: MatchKind | None = Query(None, description="exact, near or partial"),
    min_similarity: float = Query(0.0, ge=0.0, le=1.0),
    source: str | None = Query(None, description="either article's source"),
):
    """Return the matches found after the cursor, oldest first, with both articles' external
    ids. Filters narrow the page but the cursor still moves past what they leave out."""
    page = selectors.match_changes(
        after=after, limit=limit, kind=kind, min_similarity=min_similarity, source=source
    )
    return {
        "matches": [selectors.match_change_json(m) for m in page.rows],
        "next": page.next,
        "more": page.more,
    }


@api.get(
    "/decisions",
    auth=TokenAuth(READ),
    response={200: DecisionPage, **ERRORS},
    url_name="decisions_changed",
    tags=["following along"],
    summary="Editors' decisions after a cursor",
)
def decisions_changed(
    request: HttpRequest,
    after: int = Query(0, ge=0, description="the `next` of the page before; 0 from the start"),
    limit: int = Query(100, ge=1, le=PAGE_MAX),
    verdict: Verdict | None = Query(None, description="duplicate, not_duplicate or original"),
    source: str | None = Query(None, description="either article's source"),
):
    """Return the decisions editors made after the cursor, oldest first; the latest on a pair
    is the one that counts."""
    page = selectors.decision_changes(after=after, limit=limit, verdict=verdict, source=source)
    return {
        "decisions": [selectors.decision_change_json(d) for d in page.rows],
        "next": page.next,
        "more": page.more,
    }
