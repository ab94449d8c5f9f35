"""The stories a cluster or an article is linked to: matches shown between two clusters (a
quoted passage, a shared sentence) that do not make them one story ("quotes", "quoted by").

Presentation only: which matches are links is the clustering's (Clustering.links).
"""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext as _

from dedup import selectors
from dedup.models import Article, MatchKind
from dedup.selectors.clusterings import KIND_NAMES, Clustering, Link
from webui.review_params import Threshold

LINKS_SHOWN = 50  # a cluster's links listed, the most similar first


def _relation(link: Link) -> str:
    return _("quotes") if link.quotes else _("quoted by")


def cluster_links(found: Clustering, cluster: int, threshold: Threshold) -> dict:
    """Return the rows of a cluster's links (the most similar first, LINKS_SHOWN of them) and
    how many there are: each with its article, the other one and the other's cluster."""
    table = found.table
    links = found.links(cluster)
    shown = links[:LINKS_SHOWN]
    ids = table.article_id
    titles = dict(
        Article.objects.filter(
            id__in={int(ids[x]) for link in shown for x in (link.here, link.other)}
        ).values_list("id", "title")
    )
    kinds = dict(MatchKind.choices)
    query = threshold.query()
    rows = []
    for link in shown:
        here, other = int(ids[link.here]), int(ids[link.other])
        if link.other_cluster >= 0:
            original = int(ids[found.original[link.other_cluster]])
            target = reverse("webui:cluster", args=[original]) + "?" + query
        else:
            target = reverse("webui:article", args=[other])
        rows.append(
            {
                "relation": _relation(link),
                "quotes": link.quotes,
                "here": here,
                "here_title": titles.get(here, ""),
                "other": other,
                "other_title": titles.get(other, ""),
                "other_in_cluster": link.other_cluster >= 0,
                "target": target,
                "kind": str(kinds[KIND_NAMES[int(table.kind[link.edge])]]),
                "similarity": f"{float(table.similarity[link.edge]):.3f}",
                "compare": reverse("webui:compare", args=sorted((here, other))) + "?" + query,
            }
        )
    return {"links": rows, "links_total": len(links)}


def article_story(article_id: int, threshold: Threshold | None = None) -> dict:
    """Return where an article's story is at these bars (the queue's defaults when none: its
    cluster page, or none) and, per article it matches, how the two relate: one story, or
    which quotes which."""
    threshold = threshold or Threshold()
    table = selectors.match_table()
    found = table.clustering(threshold.bars)
    node = table.node(article_id)
    if node is None:
        return {"story_url": "", "relations": {}}
    cluster = int(found.label[node])
    story_url = ""
    relations: dict[int, dict] = {}
    if cluster >= 0:
        original = int(table.article_id[found.original[cluster]])
        story_url = reverse("webui:cluster", args=[original]) + "?" + threshold.query()
        for e in found.edges(cluster).tolist():
            x, y = int(table.a[e]), int(table.b[e])
            if node in (x, y):
                other = int(table.article_id[y if x == node else x])
                relations[other] = {"relation": _("same story"), "link": False}
    rank = table.rank
    touching = found.shown & ((table.a == node) | (table.b == node)) & ~found.inside
    for e in touching.nonzero()[0].tolist():
        x, y = int(table.a[e]), int(table.b[e])
        other = y if x == node else x
        quotes = bool(rank[node] > rank[other])
        other_cluster = int(found.label[other])
        other_id = int(table.article_id[other])
        url = ""
        if other_cluster >= 0:
            original = int(table.article_id[found.original[other_cluster]])
            url = reverse("webui:cluster", args=[original]) + "?" + threshold.query()
        relations[other_id] = {
            "relation": _("quotes") if quotes else _("quoted by"),
            "link": True,
            "url": url,
        }
    return {"story_url": story_url, "relations": relations}
