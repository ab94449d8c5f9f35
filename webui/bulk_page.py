"""Deciding every waiting pair a filtered queue selects at once: which pairs (the queue's
filters choose the clusters; a kind and a similarity range narrow their waiting pairs), and
what the confirmation page shows before anything is written."""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models.functions import Substr
from django.utils.translation import gettext as _

from dedup import selectors
from dedup.models import Article, MatchKind
from dedup.selectors import clusterings
from webui.queue_page import listed_clusters
from webui.review_params import (
    ParamError,
    QueueParams,
    Threshold,
    queue_params_parse,
    threshold_parse,
)

SAMPLE = 10  # pairs the confirmation lists
BULK_MAX = 5_000  # pairs one request decides; more are refused: narrow the filters
OWN_PARAMS = ("kind", "low", "high", "verdict", "expected", "csrfmiddlewaretoken", "page", "k")


@dataclass(frozen=True)
class PairFilter:
    """Which waiting pairs of the selected clusters: a kind (any when empty), a similarity
    range (both ends included)."""

    kind: str = ""
    low: float = 0.0
    high: float = 1.0


def _bound(params, name: str, default: float) -> float:
    raw = params.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ParamError(
            _("The similarity %(name)s must be a number from 0 to 1.") % {"name": name}
        )
    return round(value, 3)


def pair_filter_parse(params) -> PairFilter:
    """Read the kind and the similarity range; a kind not known is refused, not ignored:
    what is decided must be what the editor asked for."""
    kind = params.get("kind", "")
    if kind and kind not in clusterings.KIND_CODES:
        raise ParamError(_("The kind must be exact, near or partial (or empty for any)."))
    low, high = _bound(params, "low", 0.0), _bound(params, "high", 1.0)
    if low > high:
        raise ParamError(_("The similarity range is empty: “from” is above “to”."))
    return PairFilter(kind, low, high)


@dataclass
class Selection:
    """The waiting pairs a filtered queue and a pair filter select, as (a, b, seen)."""

    threshold: Threshold
    queue: QueueParams
    pair_filter: PairFilter
    clusters: int  # clusters the queue lists with these filters
    pairs: list[tuple[int, int, int]]
    facts: list[tuple[str, float]]  # each pair's kind and similarity
    text_limited: bool  # the search read the text of only some clusters
    carried: list[tuple[str, str]]  # the queue's own parameters, as the queue had them

    @property
    def too_many(self) -> bool:
        return len(self.pairs) > BULK_MAX

    def queue_query(self) -> str:
        return urlencode(self.carried)

    def query(self) -> str:
        """Return the address's query: the queue's and the pair filter's parameters."""
        f = self.pair_filter
        own = [("kind", f.kind), ("low", f"{f.low:g}"), ("high", f"{f.high:g}")]
        return urlencode(self.carried + own)


def selection_read(params) -> Selection:
    """Return the waiting pairs of the clusters the queue lists with these parameters (status,
    source, dates, length band, search, similarity bars) of the kind and similarity asked;
    with a source or dates, only the pairs holding an article of them."""
    threshold = threshold_parse(params)
    qp = queue_params_parse(params)
    pair_filter = pair_filter_parse(params)
    table = selectors.match_table()
    found = table.clustering(threshold.bars)
    order, hits, text_limited = listed_clusters(found, qp)
    edges = clusterings.waiting_pairs(
        found,
        order,
        kind=pair_filter.kind,
        low=pair_filter.low,
        high=pair_filter.high,
        within=qp.filter(hits),
    )
    ids = table.article_id
    pairs = list(
        zip(
            ids[table.a[edges]].tolist(),
            ids[table.b[edges]].tolist(),
            table.decision_id[edges].tolist(),
            strict=True,
        )
    )
    facts = list(
        zip(
            [clusterings.KIND_NAMES[k] for k in table.kind[edges].tolist()],
            table.similarity[edges].tolist(),
            strict=True,
        )
    )
    carried = [(k, v) for k, v in params.items() if k not in OWN_PARAMS and v != ""]
    return Selection(threshold, qp, pair_filter, len(order), pairs, facts, text_limited, carried)


def filters_shown(qp: QueueParams) -> list[tuple[str, str]]:
    """Return the queue's filters in force, as (name, value) in the editor's words."""
    statuses = {"waiting": _("waiting"), "reviewed": _("reviewed"), "all": _("all")}
    bands = {
        "short": _("under 140 characters"),
        "medium": _("140–500 characters"),
        "long": _("500–2,000 characters"),
        "longest": _("over 2,000 characters"),
    }
    filters = [
        (_("status"), statuses[qp.status]),
        (_("source"), qp.source),
        (_("from"), str(qp.date_from or "")),
        (_("to"), str(qp.date_to or "")),
        (_("length"), bands.get(qp.band, "")),
        (_("search"), qp.q),
    ]
    return [(name, value) for name, value in filters if value]


def sample_rows(pairs: list[tuple[int, int, int]], facts: list[tuple[str, float]]) -> list[dict]:
    """Return the first pairs with their articles' titles (an untitled one by its text), their
    kind and similarity."""
    ids = {i for a, b, _seen in pairs for i in (a, b)}
    articles = Article.objects.only("id", "title").annotate(head=Substr("body", 1, 40))
    found = articles.in_bulk(ids)

    def name(i: int) -> str:
        shown = found.get(i)
        return (shown.title or shown.head) if shown else ""

    kinds = dict(MatchKind.choices)
    return [
        {
            "a": a,
            "b": b,
            "a_title": name(a),
            "b_title": name(b),
            "kind": str(kinds[kind]),
            "similarity": f"{similarity:.3f}",
        }
        for (a, b, _seen), (kind, similarity) in zip(pairs, facts, strict=True)
    ]


def selection_context(selection: Selection) -> dict:
    """Gather what the confirmation page shows: the filters, the count, the first pairs."""
    return {
        "selection": selection,
        "threshold": selection.threshold,
        "filters": filters_shown(selection.queue),
        "kinds": [("", _("any kind")), *MatchKind.choices],
        "count": len(selection.pairs),
        "sample": sample_rows(selection.pairs[:SAMPLE], selection.facts[:SAMPLE]),
        "sample_rest": max(len(selection.pairs) - SAMPLE, 0),
        "bulk_max": BULK_MAX,
    }
