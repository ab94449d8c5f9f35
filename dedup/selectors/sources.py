"""Who copies whom: the sources overview and graph, a source's copies, the edges' CSV.

Counts come from SourceEdge (kept by triggers on the match table, migration 0032): a few rows
per pair of sources and day, whatever the number of matches. A source's own list of copies
reads the matches of its articles, newest copies first, a page at a time. A period is a range
of the copies' days (UTC), both ends included; None leaves an end open."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Q, Sum

from dedup.models import Article, SourceEdge
from dedup.models.sources import ANY, Span

PER_PAGE = 50


def _month_next(day: dt.date) -> dt.date:
    return (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)


@dataclass(frozen=True)
class Period:
    since: dt.date | None = None
    until: dt.date | None = None

    @property
    def whole(self) -> bool:
        """All time: read from one row a pair (span "a")."""
        return self.since is None and self.until is None

    def q(self) -> Q:
        """The SourceEdge rows that count the period once: months wholly inside it, and the
        days of its ragged ends."""
        if self.since is None and self.until is None:
            return Q(span=Span.ALL)
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


def _summed(rows, *, whole: bool = False):
    """Rows summed per (original, copier), most copies first; `whole`: the rows are one a
    pair already (all time), read as they are."""
    fields = ("original", "copier")
    if whole:
        rows = rows.filter(copies__gt=0).values_list(
            *fields, "copies", "exact", "near", "partial", "lag_seconds"
        )
        return rows.order_by("-copies", *fields)
    return (
        rows.values_list(*fields)
        .annotate(
            n=Sum("copies"), e=Sum("exact"), m=Sum("near"), p=Sum("partial"), g=Sum("lag_seconds")
        )
        .filter(n__gt=0)
        .order_by("-n", *fields)
    )


def source_edges(
    period: Period = Period(), *, source: str | None = None, among: list[str] | None = None
) -> list[Edge]:
    """Return the edges over a period, most copies first (then by names): all, those of one
    source (as original or as copier), or those between the sources `among`. Summed in the
    database: one row per pair."""
    rows = SourceEdge.objects.filter(period.q()).exclude(original=ANY).exclude(copier=ANY)
    if source is not None:
        rows = rows.filter(Q(original=source) | Q(copier=source))
    if among is not None:
        rows = rows.filter(original__in=among, copier__in=among)
    return [Edge(*row) for row in _summed(rows, whole=period.whole)]


def source_edge_rows(period: Period = Period()):
    """Yield every edge over a period as (original, copier, copies, exact, near, partial,
    lag_seconds), most copies first, read from the database in chunks (the CSV)."""
    rows = SourceEdge.objects.filter(period.q()).exclude(original=ANY).exclude(copier=ANY)
    return _summed(rows, whole=period.whole).iterator(chunk_size=5000)


@dataclass
class Ranked:
    source: str
    copies: int
    partners: int = 0


def _partners(period: Period, side: str, names: list[str]) -> dict[str, int]:
    """How many sources each of `names` copied (side copier) or was copied by (original)."""
    other = "original" if side == "copier" else "copier"
    rows = (
        SourceEdge.objects.filter(period.q(), **{f"{side}__in": names})
        .exclude(**{other: ANY})
        .values_list(side)
        .annotate(n=Count(other, distinct=True))
    )
    return dict(rows)


def sources_overview(period: Period = Period(), *, limit: int = 20, nodes: int = 24) -> dict:
    """Return over a period: the top copiers and the most copied sources (with how many
    sources each copied or was copied by), the total of copies, and the graph's edges (those
    between the `nodes` sources busiest as copiers and originals together)."""
    totals = SourceEdge.objects.filter(period.q()).filter(Q(original=ANY) | Q(copier=ANY))
    totals = list(_summed(totals, whole=period.whole))
    copiers, copied, busy, copies = [], [], {}, 0
    for original, copier, n, *_ in totals:
        if original == ANY and copier == ANY:
            copies = n
        elif original == ANY:
            copiers.append(Ranked(copier, n))
        else:
            copied.append(Ranked(original, n))
        for name in (original, copier):
            if name != ANY:
                busy[name] = busy.get(name, 0) + n
    copiers, copied = copiers[:limit], copied[:limit]
    for side, ranked in (("copier", copiers), ("original", copied)):
        partners = _partners(period, side, [r.source for r in ranked])
        for row in ranked:
            row.partners = partners.get(row.source, 0)
    drawn = sorted(busy, key=lambda name: (-busy[name], name))[:nodes]
    return {
        "copiers": copiers,
        "copied": copied,
        "copies": copies,
        "sources": len(busy),
        "edges": source_edges(period, among=drawn) if drawn else [],
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


# A batch of the source's own articles, newest first (its index on source, dated_at, id), then
# their matches' partners: read batch after batch until a page is full, so that a source of
# 200,000 articles reads a few hundred of them.
_MINE = """
    SELECT id, dated_at FROM dedup_article
    WHERE source = %s {period} {after}
    ORDER BY dated_at DESC, id DESC LIMIT %s
"""
_PARTNERS = """
    SELECT m.id, m.kind, m.similarity, mine.id, mine.title, mine.source, mine.dated_at,
           p.id, p.title, p.source, p.dated_at
    FROM dedup_article mine
    JOIN dedup_match m ON m.a_id = mine.id OR m.b_id = mine.id
    JOIN dedup_article p ON p.id = CASE WHEN m.a_id = mine.id THEN m.b_id ELSE m.a_id END
    WHERE mine.id = ANY(%s) AND p.source <> %s AND p.source <> '' AND {order} {period}
    ORDER BY mine.dated_at DESC, mine.id DESC, p.dated_at DESC, p.id DESC
"""
BATCH_FIRST = 200


def _where(conditions: list[tuple[str, object]]) -> tuple[str, list]:
    kept = [(sql, value) for sql, value in conditions if value is not None]
    return "".join(f" AND {sql}" for sql, _ in kept), [value for _, value in kept]


def source_copies(
    name: str, *, taken: bool = False, period: Period = Period(), page: int = 1
) -> tuple[list[Copy], bool]:
    """Return a page of a source's copies and whether more follow: the copies others made of
    its articles (newest original first), or (taken) those it made of others' (newest copy
    first). The period bounds the copies' dates."""
    since, until = period.bounds()
    if taken:  # the source's articles are the copies
        order = "(p.dated_at, p.id) < (mine.dated_at, mine.id)"
        mine_sql, mine_params = _where([("dated_at >= %s", since), ("dated_at < %s", until)])
        partner_sql, partner_params = "", []
    else:  # the originals; their partners the copies
        order = "(mine.dated_at, mine.id) < (p.dated_at, p.id)"
        mine_sql, mine_params = _where([("dated_at < %s", until)])
        partner_sql, partner_params = _where(
            [("p.dated_at >= %s", since), ("p.dated_at < %s", until)]
        )
    need = page * PER_PAGE + 1
    found: list[tuple] = []
    last, batch = None, BATCH_FIRST
    with connection.cursor() as cursor:
        while len(found) < need:
            after = "AND (dated_at, id) < (%s, %s)" if last else ""
            cursor.execute(
                _MINE.format(period=mine_sql, after=after),
                [name, *mine_params, *(last or ()), batch],
            )
            mine = cursor.fetchall()
            if mine:
                cursor.execute(
                    _PARTNERS.format(order=order, period=partner_sql),
                    [[row[0] for row in mine], name, *partner_params],
                )
                found += cursor.fetchall()
            if len(mine) < batch:
                break
            last = (mine[-1][1], mine[-1][0])
            batch *= 4
    rows = found[(page - 1) * PER_PAGE : need]
    copies = []
    for match, kind, similarity, *mine, pid, ptitle, psource, pdated in rows:
        partner = [pid, ptitle, psource, pdated]
        original, copy = (partner, mine) if taken else (mine, partner)
        copies.append(Copy(match, kind, similarity, *original, *copy))
    return copies[:PER_PAGE], len(copies) > PER_PAGE


def source_known(name: str) -> bool:
    """Whether any article names the source."""
    return name != "" and Article.objects.filter(source=name).exists()
