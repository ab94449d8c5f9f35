"""What the review queue shows: one page of clusters with their originals, the figures the
filters select, and the similarity histograms."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

import numpy as np
from django.core.paginator import Paginator
from django.db.models.functions import Substr

from dedup import selectors
from dedup.engine.verify import SHORT
from dedup.models import Article, Settings
from dedup.selectors import clusterings
from dedup.selectors.clusterings import BANDS
from webui.review_params import QueueParams, queue_params_parse, threshold_parse

PER_PAGE = 25
TEXT_SEARCHED = 3_000  # clusters whose original's text a search reads, in queue order


def search_hits(q: str, found: clusterings.Clustering, candidates: np.ndarray) -> np.ndarray:
    """Return ids of matched articles whose title contains q, or whose text does among the
    originals of the first candidate clusters (the text of 100,000 articles is too much to
    read per request; copies share most of their original's text)."""
    originals = found.table.article_id[found.original[candidates[:TEXT_SEARCHED]]].tolist()
    # Chinese has no letter case: LIKE on the text is enough and cheaper than ILIKE.
    texts = Article.objects.filter(id__in=originals, body__contains=q).order_by()
    ids = list(texts.values_list("id", flat=True))
    return np.concatenate([found.table.title_search(q), np.array(ids, np.int64)])


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


def queue_rows(found: clusterings.Clustering, numbers: list[int]) -> list[dict]:
    """Return the rows of some clusters: each one's original and a few other members."""
    table = found.table
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
    return [
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


def queue_counts(found: clusterings.Clustering, counted: np.ndarray, listed: int) -> dict:
    """Return the figures of the clusters the queue lists (filters, search and status)."""
    return {
        "clusters": len(counted),
        "articles": int(found.size[counted].sum()),
        "waiting": int(np.count_nonzero(found.waiting[counted])),
        "matches": int(found.matches[counted].sum()),
        "listed": listed,
        "filtered": len(counted) < len(found.size),
        "any": len(found.size),  # clusters at these bars, whatever the filters
    }


def listed_clusters(found: clusterings.Clustering, qp: QueueParams):
    """Return the cluster numbers the queue lists with these filters, in order; the ids the
    search found (None without a search) and whether it read the text of only some."""
    order = clusterings.cluster_queue(found, qp.filter(None))
    if not qp.q:
        return order, None, False
    hits = search_hits(qp.q, found, order)
    return clusterings.cluster_queue(found, qp.filter(hits)), hits, len(order) > TEXT_SEARCHED


def queue_context(params, settings: Settings, page_number: str | None) -> dict:
    """Gather the queue: counts, histograms, one page of clusters with their originals."""
    threshold = threshold_parse(params)
    qp = queue_params_parse(params)
    table = selectors.match_table()
    found = table.clustering(threshold.bars)
    order, hits, text_limited = listed_clusters(found, qp)
    # The figures count what the list shows: the clusters of these filters, the search and
    # the status (a headline of 48 clusters over a list of 35 waiting read as a contradiction).
    counted = order
    page = Paginator(order, PER_PAGE).get_page(page_number)
    query = {key: v for key, v in params.items() if key not in ("page", "k") and v != ""}
    return {
        "threshold": threshold,
        "params": qp,
        "page": page,
        "rows": queue_rows(found, [int(c) for c in page.object_list]),
        "query": urlencode(query),
        # The export's parameters: the bars once (the query may carry them too), then the rest.
        "export_query": urlencode(
            {"near": f"{threshold.near:g}", "partial": f"{threshold.partial:g}"}
            | {key: v for key, v in query.items() if key not in ("near", "partial")}
        ),
        "sources": table.sources,
        "text_limited": text_limited,
        "text_searched": TEXT_SEARCHED,
        "bands": list(BANDS),
        "counts": queue_counts(found, counted, len(order)),
        # What a bulk decision over these filters would select (bulk_page.selection_read).
        "waiting_pairs": len(clusterings.waiting_pairs(found, order, within=qp.filter(hits))),
        **{
            f"{kind}_chart": similarity_chart(
                clusterings.similarity_histogram(table, kind), getattr(threshold, kind)
            )
            for kind in ("near", "partial")
        },
        "verified": verified_bars(settings),
    }
