"""What the review pages show: the façade the views read through (query parameters in
review_params, the queue in queue_page, a cluster in cluster_page), and two articles side by
side (compare_context) with the next pair to look at.

Reads only; the views stay short and the decisions go through dedup.services.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dedup import selectors
from dedup.articles import web_url
from dedup.engine.verify import Detector
from dedup.models import Article, Match, Settings
from dedup.selectors import clusterings, pair_latest
from webui import evidence
from webui.cluster_page import (
    PageAsked,
    cluster_context,
    cluster_member_ids,
    cluster_waiting_pairs,
)
from webui.queue_page import queue_context
from webui.review_params import ParamError, Threshold, day_parse, threshold_parse

__all__ = [
    "PageAsked",
    "ParamError",
    "Threshold",
    "cluster_context",
    "cluster_member_ids",
    "cluster_waiting_pairs",
    "compare_context",
    "day_parse",
    "next_pair",
    "passage_detector",
    "queue_context",
    "threshold_parse",
]


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
