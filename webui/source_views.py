"""The sources pages: who copies whom over a period (the overview with its graph), one
source's copies both ways, and the edges as CSV. For editors and admins."""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dedup import selectors
from dedup.selectors.sources import Period
from webui.access import editor_required
from webui.review_views import csv_cell
from webui.source_graph import copy_graph

BOM = "\ufeff"  # so that Excel reads the CSV as UTF-8 (source names are often Chinese)


class PeriodError(ValueError):
    pass


def period_parse(query) -> Period:
    """Read ?since=YYYY-MM-DD&until=YYYY-MM-DD, or ?days=N (the last N days to today)."""
    try:
        if query.get("days"):
            days = int(query["days"])
            if not 1 <= days <= 3660:
                raise ValueError(days)
            today = dt.datetime.now(dt.UTC).date()
            return Period(since=today - dt.timedelta(days=days - 1), until=today)
        since = dt.date.fromisoformat(query["since"]) if query.get("since") else None
        until = dt.date.fromisoformat(query["until"]) if query.get("until") else None
    except ValueError as error:
        raise PeriodError(_("Give days as YYYY-MM-DD and a number of days from 1.")) from error
    if since and until and since > until:
        raise PeriodError(_("The period ends before it starts."))
    return Period(since=since, until=until)


def _page(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 10_000))
    except ValueError:
        return 1


def _period_query(period: Period) -> str:
    parts = []
    if period.since:
        parts.append(f"since={period.since.isoformat()}")
    if period.until:
        parts.append(f"until={period.until.isoformat()}")
    return "&".join(parts)


def _bad(request: HttpRequest, error: Exception) -> HttpResponse:
    return render(request, "webui/review/bad_request.html", {"message": str(error)}, status=400)


@require_GET
@editor_required
def sources(request: HttpRequest) -> HttpResponse:
    """Show the top copiers, the most copied and the copy graph over a period."""
    try:
        period = period_parse(request.GET)
    except PeriodError as error:
        return _bad(request, error)
    overview = selectors.sources_overview(period)
    context = {
        **overview,
        "graph": copy_graph(overview["edges"], sources=overview["sources"]),
        "period": period,
        "period_query": _period_query(period),
    }
    return render(request, "webui/sources/overview.html", context)


@require_GET
@editor_required
def source(request: HttpRequest, name: str) -> HttpResponse:
    """Show what one source published first that others copied, and what it took."""
    if not selectors.source_known(name):
        raise Http404(_("No article has this source."))
    try:
        period = period_parse(request.GET)
    except PeriodError as error:
        return _bad(request, error)
    page, taken_page = _page(request.GET.get("page")), _page(request.GET.get("taken_page"))
    copied, copied_more = selectors.source_copies(name, period=period, page=page)
    taken, taken_more = selectors.source_copies(name, taken=True, period=period, page=taken_page)
    edges = selectors.source_edges(period, source=name)
    context = {
        "name": name,
        "period": period,
        "period_query": _period_query(period),
        "copiers": [e for e in edges if e.original == name],
        "originals": [e for e in edges if e.copier == name],
        "copied": copied,
        "copied_more": copied_more,
        "page": page,
        "taken": taken,
        "taken_more": taken_more,
        "taken_page": taken_page,
    }
    return render(request, "webui/sources/source.html", context)


EDGE_HEAD = ["original", "copier", "copies", "exact", "near", "partial", "lag_mean_seconds"]
CHUNK_ROWS = 2000  # CSV rows a streamed chunk holds


def _edge_lines(rows):
    """Yield the CSV in chunks: a byte-order mark, the head, then the rows, each source name
    guarded against formulas once (there are far fewer names than pairs)."""
    guard = functools.lru_cache(maxsize=100_000)(csv_cell)
    out = io.StringIO()
    writer = csv.writer(out)
    out.write(BOM)
    writer.writerow(EDGE_HEAD)
    for n, (original, copier, copies, exact, near, partial, lag) in enumerate(rows, 1):
        lag_mean = round(lag / copies, 1) if copies else 0.0
        writer.writerow([guard(original), guard(copier), copies, exact, near, partial, lag_mean])
        if n % CHUNK_ROWS == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


@require_GET
@editor_required
def edges_export(request: HttpRequest) -> HttpResponse:
    """Stream the edges over a period as CSV (UTF-8 with a byte-order mark)."""
    try:
        period = period_parse(request.GET)
    except PeriodError as error:
        return _bad(request, error)
    response = StreamingHttpResponse(
        _edge_lines(selectors.source_edge_rows(period)), content_type="text/csv; charset=utf-8"
    )
    span = "-".join(d.isoformat() for d in (period.since, period.until) if d) or "all"
    response["Content-Disposition"] = f'attachment; filename="source-edges-{span}.csv"'
    return response
