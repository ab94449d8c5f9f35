"""Who copies whom: the sources overview and graph, a source's copies, the edges' CSV.

Counts come from SourceEdge (kept by triggers on the match table, migration 0032): a few rows
per pair of sources and day, whatever the number of matches. A source's own list of copies
reads the matches of its articles, newest copies first, a page at a time. A period is a range
of the copies' days (UTC), both ends included; None leaves an end open."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, Sum

from dedup.models import Article, SourceEdge
from dedup.models.sources import Span

PER_PAGE = 50


def _month_next(day: dt.date) -> dt.date:
    return (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)


@dataclass(frozen=True)
class Period:
    since: dt.date | None = None
    until: dt.date | None = None

    def q(self) -> Q:
        """The SourceEdge rows that count the period once: months wholly inside it, and the
        days of its ragged ends."""
        if self.since is None and self.until is None:
            return Q(span=Span.MONTH)
        full_from = None
        if self.since is not None:
            full_from = self.since if self.since.day == 1 else _month_next(self.since)
        end = self.until + dt.timedelta(days=1) if self.until is not None else None
        full_to = end.replace(day=1) if end is not None else None  # months before it: whole
        if full_from is not None and full_to is not None and full_from >= full_to:
            return Q(span=Span.DAY, day__gte=self.since, day__lt=end)
        months = Q(span=Span.MONTH)
        days = Q()
        if full_from is not None:
            months &= Q(day__gte=full_from)
            days |= Q(span=Span.DAY, day__gte=self.since, day__lt=full_from)
        if full_to is not None:
            months &= Q(day__lt=full_to)
            days |= Q(span=Span.DAY, day__gte=full_to, day__lt=end)
        return months | days

    def bounds(self) -> tuple[dt.datetime | None, dt.datetime | None]:
        """The period as instants: from the first day's start to the day after the last."""
        since = dt.datetime.combine(self.since, dt.time(), dt.UTC) if self.since else None
        until = (
            dt.datetime.combine(self.until + dt.timedelta(days=1), dt.time(), dt.UTC)
            if self.until
            else None
        )
        return since, until


@dataclass
class Edge:
    """Copies of `original`'s articles by `copier`'s over a period."""

    original: str
    copier: str
    copies: int = 0
    exact: int = 0
    near: int = 0
    partial: int = 0
    lag_seconds: int = 0

    @property
    def lag_mean(self) -> float:
        """Mean seconds from an original's date to its copy's."""
        return self.lag_seconds / self.copies if self.copies else 0.0

    def json(self) -> dict:
        return {
            "original": self.original,
            "copier": self.copier,
            "copies": self.copies,
            "exact": self.exact,
            "near": self.near,
            "partial": self.partial,
            "lag_mean_seconds": round(self.lag_mean, 1),
        }


def source_edges(period: Period = Period(), *, source: str | None = None) -> list[Edge]:
    """Return the edges over a period, most copies first (then by names): all, or those of
    one source (as original or as copier). Summed in the database: one row per pair."""
    rows = SourceEdge.objects.filter(period.q())
    if source is not None:
        rows = rows.filter(Q(original=source) | Q(copier=source))
    grouped = (
        rows.values_list("original", "copier")
        .annotate(
            n=Sum("copies"), e=Sum("exact"), m=Sum("near"), p=Sum("partial"), g=Sum("lag_seconds")
        )
        .filter(n__gt=0)
        .order_by("-n", "original", "copier")
    )
    return [Edge(*row) for row in grouped]


@dataclass
class Ranked:
    source: str
    copies: int
    partners: int


def _ranked(edges: list[Edge], side: str, limit: int) -> list[Ranked]:
    totals: dict[str, list[int]] = {}
    for edge in edges:
        total = totals.setdefault(getattr(edge, side), [0, 0])
        total[0] += edge.copies
        total[1] += 1
    ranked = [Ranked(name, copies, partners) for name, (copies, partners) in totals.items()]
    ranked.sort(key=lambda r: (-r.copies, r.source))
    return ranked[:limit]


def sources_overview(period: Period = Period(), *, limit: int = 20) -> dict:
    """Return the top copiers, the most copied sources and every edge over a period."""
    edges = source_edges(period)
    return {
        "copiers": _ranked(edges, "copier", limit),
        "copied": _ranked(edges, "original", limit),
        "edges": edges,
        "copies": sum(e.copies for e in edges),
    }


@dataclass
class Copy:
    """One match seen from a source: the original and its copy, dated, with the lag."""

    match: int
    kind: str
    similarity: float
    original_id: int
    original_title: str
    original_source: str
    original_at: dt.datetime
    copy_id: int
    copy_title: str
    copy_source: str
    copy_at: dt.datetime

    @property
    def lag_seconds(self) -> float:
        return (self.copy_at - self.original_at).total_seconds()

    def json(self) -> dict:
        return {
            "match": self.match,
            "kind": self.kind,
            "similarity": round(self.similarity, 4),
            "original": {
                "id": self.original_id,
                "title": self.original_title,
                "source": self.original_source,
                "dated_at": self.original_at.isoformat(),
            },
            "copy": {
                "id": self.copy_id,
                "title": self.copy_title,
                "source": self.copy_source,
                "dated_at": self.copy_at.isoformat(),
            },
            "lag_seconds": self.lag_seconds,
        }


# One branch of the union: `mine` is the source's article (o when it is the original, c when
# the copy), its partner found through the match's other side.
_BRANCH = """
    SELECT m.id, m.kind, m.similarity, o.id, o.title, o.source, o.dated_at,
           c.id, c.title, c.source, c.dated_at
    FROM dedup_article {mine}
    JOIN dedup_match m ON m.{side} = {mine}.id
    JOIN dedup_article {other} ON {other}.id = m.{other_side}
    WHERE {mine}.source = %s AND {other}.source <> %s AND {other}.source <> ''
      AND (o.dated_at, o.id) < (c.dated_at, c.id) {period}
"""


def source_copies(
    name: str, *, taken: bool = False, period: Period = Period(), page: int = 1
) -> tuple[list[Copy], bool]:
    """Return a page of a source's copies and whether more follow: the copies others made of
    its articles (newest original first, then newest copy), or (taken) those it made of
    others' (newest copy first)."""
    mine, other = ("c", "o") if taken else ("o", "c")
    since, until = period.bounds()
    clauses, bounds = "", []
    if since:
        clauses += " AND c.dated_at >= %s"
        bounds.append(since)
    if until:
        clauses += " AND c.dated_at < %s AND o.dated_at < %s"
        bounds += [until, until]
    branches, params = [], []
    for side, other_side in (("a_id", "b_id"), ("b_id", "a_id")):
        branches.append(
            _BRANCH.format(mine=mine, other=other, side=side, other_side=other_side, period=clauses)
        )
        params += [name, name, *bounds]
    # Newest first by the source's own article (the original, or the copy when taken): what
    # its index on (source, dated_at) reads in order, stopping after a page.
    order = "11 DESC, 8 DESC" if taken else "7 DESC, 4 DESC, 11 DESC, 8 DESC"
    sql = " UNION ALL ".join(branches) + f" ORDER BY {order} LIMIT %s OFFSET %s"
    params += [PER_PAGE + 1, (page - 1) * PER_PAGE]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [Copy(*row) for row in cursor.fetchall()]
    return rows[:PER_PAGE], len(rows) > PER_PAGE


def source_known(name: str) -> bool:
    """Whether any article names the source."""
    return name != "" and Article.objects.filter(source=name).exists()
