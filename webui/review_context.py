"""What the review pages show: query parameters read, clusters and articles gathered.

Reads only; the views stay short and the decisions go through dedup.services.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

import numpy as np
from django.db.models.functions import Substr
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup import selectors
from dedup.articles import web_url
from dedup.engine.verify import SHORT, Detector
from dedup.models import Article, Decision, Fingerprint, Match, MatchKind, Settings, Verdict
from dedup.selectors import clusterings, original_latest, pair_latest
from dedup.selectors.clusterings import BANDS, KIND_NAMES, Bars, QueueFilter
from webui import evidence

PER_PAGE = 25
MEMBERS_SHOWN = 150  # a bigger cluster lists the members closest to the original
OTHER_EDGES_SHOWN = 100
SEARCH_HITS = 20_000
TEXT_SEARCHED = 3_000  # clusters whose original's text a search reads, in queue order
STATUSES = ("waiting", "reviewed", "all")
SORTS = ("size", "newest")


class ParamError(ValueError):
    """A query parameter the page cannot use; the message says what to send instead."""


@dataclass(frozen=True)
class Threshold:
    """The least similarity of the near and partial copies shown (clusterings.Bars); 0 shows
    every verified copy."""

    near: float = 0.0
    partial: float = 0.0

    @property
    def bars(self) -> Bars:
        return Bars(self.near, self.partial)

    @property
    def everything(self) -> bool:
        """Whether every verified copy is shown (the defaults)."""
        return not self.near and not self.partial

    def query(self) -> str:
        return urlencode({"near": f"{self.near:g}", "partial": f"{self.partial:g}"})


def _share(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise ParamError(
            _("The least similarity %(name)s must be a number from 0 to 1.") % {"name": name}
        )
    return round(min(max(value, 0.0), 1.0), 3)


def threshold_parse(params) -> Threshold:
    """Read the bars near and partial (0..1; out-of-range values are clamped) from a query.

    Older addresses still work: s (one least similarity for both kinds) fills a bar not given,
    and k (a fingerprint distance, which no longer hides verified copies) is ignored."""
    old = params.get("s", "").strip()
    fallback = _share(old, "s") if old else 0.0
    bars = {}
    for name in ("near", "partial"):
        raw = params.get(name, "").strip()
        bars[name] = _share(raw, name) if raw else fallback
    return Threshold(**bars)


def day_parse(raw: str, name: str) -> dt.date | None:
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ParamError(
            _("The date %(name)s must look like 2024-05-31.") % {"name": name}
        ) from None


def _epoch(day: dt.date) -> int:
    start = dt.datetime.combine(day, dt.time(), tzinfo=timezone.get_current_timezone())
    return int(start.timestamp())


@dataclass(frozen=True)
class QueueParams:
    status: str
    source: str
    date_from: dt.date | None
    date_to: dt.date | None
    band: str
    sort: str
    q: str

    def filter(self, hits: np.ndarray | None) -> QueueFilter:
        return QueueFilter(
            status=self.status,
            source=self.source,
            date_from=_epoch(self.date_from) if self.date_from else None,
            # The last day is included: up to the start of the next.
            date_to=_epoch(self.date_to + dt.timedelta(days=1)) if self.date_to else None,
            band=self.band,
            sort=self.sort,
            hits=hits,
        )


def queue_params_parse(params) -> QueueParams:
    """Read the queue's filters; unknown choices fall back to the defaults."""
    status = params.get("status", "waiting")
    sort = params.get("sort", "size")
    band = params.get("band", "")
    return QueueParams(
        status=status if status in STATUSES else "waiting",
        source=params.get("source", "")[:200],
        date_from=day_parse(params.get("from", "").strip(), "from"),
        date_to=day_parse(params.get("to", "").strip(), "to"),
        band=band if band in BANDS else "",
        sort=sort if sort in SORTS else "size",
        q=" ".join(params.get("q", "").split())[:200],
    )


def search_hits(q: str, found: clusterings.Clustering, candidates: np.ndarray) -> np.ndarray:
    """Return ids of matched articles whose title contains q, or whose text does among the
    originals of the first candidate clusters (the text of 100,000 articles is too much to
    read per request; copies share most of their original's text)."""
    originals = found.table.article_id[found.original[candidates[:TEXT_SEARCHED]]].tolist()
    # Chinese has no letter case: LIKE on the text is enough and cheaper than ILIKE.
    texts = Article.objects.filter(id__in=originals, body__contains=q).order_by()
    ids = list(texts.values_list("id", flat=True))
    return np.concatenate([found.table.title_search(q), np.array(ids, np.int64)])


# --- queue ---------------------------------------------------------------------------------


def histogram_bars(counts: list[int], cut: int, labels: list[str], width: int = 260) -> dict:
    """Return the geometry of an inline SVG bar chart; bars up to `cut` are the ones shown."""
    height, top = 70, 4
    most = max(counts) or 1
    step = width / max(len(counts), 1)
    bars = []
    for i, (count, label) in enumerate(zip(counts, labels, strict=True)):
        h = 0 if not count else max(2.0, (height - top) * count / most)
        bars.append(
            {
                "x": round(i * step + 1, 1),
                "w": round(step - 2, 1),
                "y": round(height - h, 1),
                "h": round(h, 1),
                "count": count,
                "label": label,
                "lx": round(i * step + step / 2, 1),
                "shown": i <= cut,
            }
        )
    return {"bars": bars, "width": width, "height": height, "cut_x": round((cut + 1) * step, 1)}


def verified_bars(settings: Settings) -> dict:
    """Return the bars the engine verifies copies at: what a slider at 0 shows."""
    return {
        "near": settings.near,
        "near_short": settings.near_short,
        "short": SHORT,
        "partial": settings.partial,
    }


def similarity_chart(counts: list[int], least: float) -> dict:
    """Return the bars of a histogram by tenths of similarity, highest first; bars at or above
    `least` are the ones shown."""
    cut = min(int(least * 10), 9)
    labels = [f"{i / 10:.1f}" for i in range(9, -1, -1)]
    return histogram_bars(counts[::-1], 9 - cut, labels)


def queue_context(params, settings: Settings, page_number: str | None) -> dict:
    """Gather the queue: counts, histograms, one page of clusters with their originals."""
    from django.core.paginator import Paginator

    threshold = threshold_parse(params)
    qp = queue_params_parse(params)
    table = selectors.match_table()
    found = table.clustering(threshold.bars)
    order = clusterings.cluster_queue(found, qp.filter(None))
    text_limited = False
    hits = None
    if qp.q:
        hits = search_hits(qp.q, found, order)
        text_limited = len(order) > TEXT_SEARCHED
        order = clusterings.cluster_queue(found, qp.filter(hits))
    # The figures follow the filters and the search, whatever the status: they say how many
    # of the clusters these filters select wait for review.
    counted = clusterings.cluster_queue(found, dataclasses.replace(qp, status="all").filter(hits))
    page = Paginator(order, PER_PAGE).get_page(page_number)
    numbers = [int(c) for c in page.object_list]
    originals = [int(table.article_id[found.original[c]]) for c in numbers]
    samples = {}
    for c in numbers:
        others = [int(table.article_id[n]) for n in found.members(c)[:5]]
        samples[c] = [i for i in others if i not in originals][:3]
    wanted = set(originals) | {i for ids in samples.values() for i in ids}
    # An untitled article is shown by the start of its text.
    articles = (
        Article.objects.only("id", "title", "source", "dated_at", "length")
        .annotate(head=Substr("body", 1, 60))
        .in_bulk(wanted)
    )
    rows = [
        {
            "number": c,
            "original": articles.get(original),
            "original_id": original,
            "size": int(found.size[c]),
            "waiting": int(found.waiting[c]),
            "matches": int(found.matches[c]),
            "others": [articles[i] for i in samples[c] if i in articles],
            "newest": dt.datetime.fromtimestamp(int(found.newest[c]), tz=dt.UTC),
        }
        for c, original in zip(numbers, originals, strict=True)
    ]
    charts = {
        kind: similarity_chart(
            clusterings.similarity_histogram(table, kind), getattr(threshold, kind)
        )
        for kind in ("near", "partial")
    }
    query = {key: v for key, v in params.items() if key not in ("page", "k") and v != ""}
    return {
        "threshold": threshold,
        "params": qp,
        "page": page,
        "rows": rows,
        "query": urlencode(query),
        "sources": table.sources,
        "text_limited": text_limited,
        "text_searched": TEXT_SEARCHED,
        "bands": list(BANDS),
        "counts": {
            "clusters": len(counted),
            "articles": int(found.size[counted].sum()),
            "waiting": int(np.count_nonzero(found.waiting[counted])),
            "matches": int(found.matches[counted].sum()),
            "listed": len(order),
            "filtered": len(counted) < len(found.size),
        },
        "near_chart": charts["near"],
        "partial_chart": charts["partial"],
        "verified": verified_bars(settings),
    }


# --- one cluster ---------------------------------------------------------------------------


def _popcount(x: int) -> int:
    return (x & 0xFFFFFFFFFFFFFFFF).bit_count()


def cluster_context(article: Article, threshold: Threshold, settings: Settings) -> dict:
    """Gather the cluster holding an article: members, paths, distances and decisions.

    Rejected pairs stay in the cluster, marked, and rows keep their order whatever is
    decided: the row under an editor's pointer is the one they meant."""
    table = selectors.match_table()
    found = table.clustering(threshold.bars, rejected=True)
    node = table.node(article.id)
    context = {"article": article, "threshold": threshold, "members": None}
    if node is None or found.label[node] < 0:
        return context
    cluster = int(found.label[node])
    members, edges = clusterings.member_paths(found, cluster)
    total = len(members)
    members = members[:MEMBERS_SHOWN]
    ids = [m.article_id for m in members]
    articles = Article.objects.defer("body").in_bulk(ids)
    version = settings.active_version
    prints = dict(
        Fingerprint.objects.filter(article_id__in=ids, version=version).values_list(
            "article_id", "value"
        )
    )
    original_id = ids[0]
    start = members[0].node
    direct = {}
    for e in edges.tolist():
        x, y = int(table.a[e]), int(table.b[e])
        if start in (x, y):
            direct[y if x == start else x] = e
    tree = {m.edge for m in members if m.edge is not None}
    others = [e for e in edges.tolist() if e not in tree]
    if len(others) > OTHER_EDGES_SHOWN:  # the undecided first: what a reviewer looks at next
        others.sort(
            key=lambda e: (table.decision[e] != clusterings.UNDECIDED, -table.similarity[e])
        )
        others = others[:OTHER_EDGES_SHOWN]
    others.sort(key=lambda e: (-table.similarity[e], e))  # an order no decision changes
    decision_ids = {int(table.decision_id[e]) for e in tree | set(others)} - {0}
    decisions = Decision.objects.select_related("decided_by").in_bulk(decision_ids)

    # Rows are plain strings made here: a cluster of hundreds renders without a tag per cell.
    query = threshold.query()
    compare = reverse("webui:compare", args=[1, 2]).replace("/1/2/", "/{}/{}/") + "?" + query
    page_of = reverse("webui:article", args=[1]).replace("/1/", "/{}/")
    kinds = {code: str(MatchKind(name).label) for code, name in KIND_NAMES.items()}
    verdicts = dict(Verdict.choices)

    def when(moment) -> str:
        return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")

    def edge_row(e: int) -> dict:
        x, y = int(table.article_id[table.a[e]]), int(table.article_id[table.b[e]])
        did = int(table.decision_id[e])
        d = int(table.distance[e])
        decision = decisions.get(did)
        who = ""
        if decision is not None:
            name = decision.decided_by.get_username() if decision.decided_by else ""
            who = f"{name} {when(decision.decided_at)}".strip()
        undone = decision is not None and decision.verdict == Verdict.UNDONE
        if undone:
            decision = None  # the pair waits again; `who` says who took it back
        return {
            "a": x,
            "b": y,
            "pair": f"{x}:{y}:{did}",
            "url": compare.format(x, y),
            "kind": kinds[int(table.kind[e])],
            "distance": None if d < 0 else d,
            "similarity": f"{float(table.similarity[e]):.3f}",
            "decision": decision,
            "verdict": str(verdicts.get(decision.verdict, "")) if decision else "",
            "who": who,
            "undone": undone,
        }

    rows = []
    fo = prints.get(original_id)
    for m in members:
        fm = prints.get(m.article_id)
        e_direct = direct.get(m.node)
        distance = None
        if fo is not None and fm is not None:
            distance = _popcount(fo ^ fm)
        elif e_direct is not None and table.distance[e_direct] >= 0:
            distance = int(table.distance[e_direct])
        shown = articles.get(m.article_id)
        edge = None if m.edge is None else edge_row(m.edge)
        if edge is not None:  # the link from the article it is reached from
            edge["url"] = compare.format(m.via, m.article_id)
        rows.append(
            {
                "member": m,
                "article": shown,
                "dated": when(shown.dated_at) if shown else "",
                "chars": _("%(n)s chars") % {"n": shown.length} if shown else "",
                "distance": distance,
                "similarity": ""
                if e_direct is None
                else f"{float(table.similarity[e_direct]):.3f}",
                "steps": _("%(n)s steps") % {"n": m.hops} if m.hops > 1 else "",
                "compare_url": compare.format(original_id, m.article_id),
                "article_url": page_of.format(m.article_id),
                "edge": edge,
            }
        )
    latest_original = original_latest(ids)
    return {
        **context,
        "members": members,
        "rows": rows,
        "total": total,
        "original": articles.get(original_id),
        "other_edges": [edge_row(e) for e in others],
        "other_total": len(edges) - len(tree),
        "chosen": latest_original if latest_original and latest_original.a_id in ids else None,
        "seen_original": latest_original.id if latest_original else 0,
        "waiting": int(found.waiting[cluster]),
    }


def cluster_waiting_pairs(article_id: int, threshold: Threshold) -> list[tuple[int, int, int]]:
    """Return (a, b, seen) of every undecided pair of the cluster holding an article, as its
    page shows it (not only the rows on screen); seen is the decision an undo left, or 0."""
    table = selectors.match_table()
    found = table.clustering(threshold.bars, rejected=True)
    node = table.node(article_id)
    if node is None or found.label[node] < 0:
        return []
    edges = found.edges(int(found.label[node]))
    waiting = edges[table.decision[edges] == clusterings.UNDECIDED]
    ids = table.article_id
    return [
        (int(ids[table.a[e]]), int(ids[table.b[e]]), int(table.decision_id[e]))
        for e in waiting.tolist()
    ]


def cluster_member_ids(article_id: int, threshold: Threshold) -> list[int]:
    """Return the ids of the members of the cluster holding an article (empty when none), as
    its page shows them (rejected pairs included)."""
    table = selectors.match_table()
    found = table.clustering(threshold.bars, rejected=True)
    node = table.node(article_id)
    if node is None or found.label[node] < 0:
        return []
    return table.article_id[found.members(int(found.label[node]))].tolist()


# --- two articles ---------------------------------------------------------------------------


@lru_cache(maxsize=4)
def passage_detector(config) -> Detector:
    return Detector(config)


def next_pair(article_id: int, threshold: Threshold, skip: tuple[int, int]) -> tuple | None:
    """Return the most similar undecided pair (a, b) of the cluster holding an article, other
    than `skip`, or None when every pair there is decided."""
    table = selectors.match_table()
    found = table.clustering(threshold.bars, rejected=True)
    node = table.node(article_id)
    if node is None or found.label[node] < 0:
        return None
    edges = found.edges(int(found.label[node]))
    waiting = edges[table.decision[edges] == clusterings.UNDECIDED]
    lo, hi = sorted(skip)
    for e in waiting[np.argsort(-table.similarity[waiting], kind="stable")].tolist():
        pair = int(table.article_id[table.a[e]]), int(table.article_id[table.b[e]])
        if pair != (lo, hi):
            return pair
    return None


def compare_context(left: Article, right: Article, settings: Settings) -> dict:
    """Gather two articles as text (HTML stripped), their word-level differences and the
    passages they share, boilerplate folded."""
    lo, hi = sorted((left.id, right.id))
    match = Match.objects.filter(a_id=lo, b_id=hi).first()
    detector = passage_detector(settings.active().engine_config())
    version = settings.active_version or settings.index_version  # the features' version
    latest = pair_latest(lo, hi)
    return {
        "left": left,
        "right": right,
        "left_url": web_url(left.url),
        "right_url": web_url(right.url),
        "match": match,
        **evidence.pair_evidence(detector, left, right, match, version),
        "decision": latest,
        "seen": latest.id if latest else 0,
    }
