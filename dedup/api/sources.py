"""Who copies whom: the sources overview (top copiers, most copied, the edges of the copy
graph) and one source's copies, over a period of the copies' days."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest
from ninja import Query

from dedup import selectors
from dedup.api.core import READ, ApiError, TokenAuth, api
from dedup.api.schemas import Error, SourceCopyPage, SourcesOut

from .articles import ERRORS

PAGES_MAX = 10_000


def _period(since: str | None, until: str | None) -> selectors.Period:
    try:
        period = selectors.Period(
            since=dt.date.fromisoformat(since) if since else None,
            until=dt.date.fromisoformat(until) if until else None,
        )
    except ValueError:
        raise ApiError(400, "since and until must be dates, YYYY-MM-DD.") from None
    if period.since and period.until and period.since > period.until:
        raise ApiError(400, "The period ends before it starts.")
    return period


SINCE = Query(None, description="the first day of the copies counted, YYYY-MM-DD (UTC)")
UNTIL = Query(None, description="the last day of the copies counted, YYYY-MM-DD (UTC)")


@api.get(
    "/sources",
    auth=TokenAuth(READ),
    response={200: SourcesOut, **ERRORS},
    url_name="sources",
    tags=["sources"],
    summary="Who copies whom",
)
def sources(
    request: HttpRequest,
    since: str | None = SINCE,
    until: str | None = UNTIL,
    limit: int = Query(20, ge=1, le=1000, description="how many top copiers and most copied"),
    nodes: int = Query(
        24, ge=1, le=1000, description="the edges between this many of the busiest sources"
    ),
):
    """Return the top copiers, the most copied sources and the edges of the copy graph (an
    original source, the source that copied it, how many copies of each kind and the mean
    lag) between the `nodes` busiest sources, over a period. Matches within one source are
    not counted."""
    overview = selectors.sources_overview(_period(since, until), limit=limit, nodes=nodes)
    ranked = lambda rows: [  # noqa: E731
        {"source": r.source, "copies": r.copies, "partners": r.partners} for r in rows
    ]
    return {
        "copies": overview["copies"],
        "copiers": ranked(overview["copiers"]),
        "copied": ranked(overview["copied"]),
        "edges": [edge.json() for edge in overview["edges"]],
    }


@api.get(
    "/sources/{path:name}/copies",
    auth=TokenAuth(READ),
    response={200: SourceCopyPage, 404: Error, **ERRORS},
    url_name="source_copies",
    by_alias=True,  # "copy" (a pydantic model's method, so the field is copy_)
    tags=["sources"],
    summary="A source's copies",
)
def source_copies(
    request: HttpRequest,
    name: str,
    taken: bool = Query(
        False,
        description="false: copies others made of its articles; true: copies it made of others'",
    ),
    since: str | None = SINCE,
    until: str | None = UNTIL,
    page: int = Query(1, ge=1, le=PAGES_MAX),
):
    """Return a page of a source's copies, the newest copy first: each match with the
    original and the copy (id, title, source, date) and the lag between them in seconds."""
    if not selectors.source_known(name):
        raise ApiError(404, "No article has this source.")
    rows, more = selectors.source_copies(name, taken=taken, period=_period(since, until), page=page)
    return {"source": name, "copies": [row.json() for row in rows], "more": more}
