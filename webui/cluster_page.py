"""What a cluster's page shows: its members, how each reaches the original, distances and
decisions; and the pairs and members a decision on the whole cluster applies to.

Rows are plain strings made here: a cluster of hundreds renders without a tag per cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup import selectors
from dedup.models import Article, Decision, Fingerprint, MatchKind, Settings, Verdict
from dedup.selectors import clusterings, original_latest
from dedup.selectors.clusterings import KIND_NAMES, Member
from webui.review_params import Threshold

MEMBERS_SHOWN = 150  # a bigger cluster lists the members closest to the original
OTHER_EDGES_SHOWN = 100


def when(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")


def popcount(x: int) -> int:
    """Return the bits set in a stored (signed) fingerprint."""
    return (x & 0xFFFFFFFFFFFFFFFF).bit_count()


@dataclass
class Links:
    """The addresses of a cluster page's links, as format strings of article ids."""

    compare: str
    article: str

    @classmethod
    def at(cls, threshold: Threshold) -> Links:
        compare = reverse("webui:compare", args=[1, 2]).replace("/1/2/", "/{}/{}/")
        article = reverse("webui:article", args=[1]).replace("/1/", "/{}/")
        return cls(compare + "?" + threshold.query(), article)


@dataclass
class EdgeRows:
    """Rows of a cluster's matches: the pair, its kind and figures, and its decision."""

    table: clusterings.MatchTable
    decisions: dict[int, Decision]
    links: Links

    @classmethod
    def of(cls, table: clusterings.MatchTable, edges: set[int], links: Links) -> EdgeRows:
        ids = {int(table.decision_id[e]) for e in edges} - {0}
        return cls(table, Decision.objects.select_related("decided_by").in_bulk(ids), links)

    def row(self, e: int) -> dict:
        table = self.table
        x, y = int(table.article_id[table.a[e]]), int(table.article_id[table.b[e]])
        did = int(table.decision_id[e])
        d = int(table.distance[e])
        decision = self.decisions.get(did)
        who = ""
        if decision is not None:
            name = decision.decided_by.get_username() if decision.decided_by else ""
            who = f"{name} {when(decision.decided_at)}".strip()
        undone = decision is not None and decision.verdict == Verdict.UNDONE
        if undone:
            decision = None  # the pair waits again; `who` says who took it back
        verdicts = dict(Verdict.choices)
        return {
            "a": x,
            "b": y,
            "pair": f"{x}:{y}:{did}",
            "url": self.links.compare.format(x, y),
            "kind": str(MatchKind(KIND_NAMES[int(table.kind[e])]).label),
            "distance": None if d < 0 else d,
            "similarity": f"{float(table.similarity[e]):.3f}",
            "decision": decision,
            "verdict": str(verdicts.get(decision.verdict, "")) if decision else "",
            "who": who,
            "undone": undone,
        }


def other_edges(table: clusterings.MatchTable, edges: np.ndarray, tree: set[int]) -> list[int]:
    """Return the cluster's matches that are no member's path, the undecided first when they
    are too many to show, in an order no decision changes."""
    others = [e for e in edges.tolist() if e not in tree]
    if len(others) > OTHER_EDGES_SHOWN:  # the undecided first: what a reviewer looks at next
        undecided = clusterings.UNDECIDED
        others.sort(key=lambda e: (table.decision[e] != undecided, -table.similarity[e]))
        others = others[:OTHER_EDGES_SHOWN]
    others.sort(key=lambda e: (-table.similarity[e], e))
    return others


def member_rows(
    members: list[Member], edges: np.ndarray, edge_rows: EdgeRows, settings: Settings
) -> tuple[list[dict], dict[int, Article]]:
    """Return a row per member (its article, distance and similarity to the original, the
    match it is reached by) and the members' articles."""
    table, links = edge_rows.table, edge_rows.links
    ids = [m.article_id for m in members]
    articles = Article.objects.defer("body").in_bulk(ids)
    prints = dict(
        Fingerprint.objects.filter(article_id__in=ids, version=settings.active_version).values_list(
            "article_id", "value"
        )
    )
    start, original_id = members[0].node, ids[0]
    direct = {}  # node -> its match with the original
    for e in edges.tolist():
        x, y = int(table.a[e]), int(table.b[e])
        if start in (x, y):
            direct[y if x == start else x] = e
    rows = []
    fo = prints.get(original_id)
    for m in members:
        fm, e_direct = prints.get(m.article_id), direct.get(m.node)
        distance = None
        if fo is not None and fm is not None:
            distance = popcount(fo ^ fm)
        elif e_direct is not None and table.distance[e_direct] >= 0:
            distance = int(table.distance[e_direct])
        shown = articles.get(m.article_id)
        edge = None if m.edge is None else edge_rows.row(m.edge)
        if edge is not None:  # the link from the article it is reached from
            edge["url"] = links.compare.format(m.via, m.article_id)
        similarity = "" if e_direct is None else f"{float(table.similarity[e_direct]):.3f}"
        rows.append(
            {
                "member": m,
                "article": shown,
                "dated": when(shown.dated_at) if shown else "",
                "chars": _("%(n)s chars") % {"n": shown.length} if shown else "",
                "distance": distance,
                "similarity": similarity,
                "steps": _("%(n)s steps") % {"n": m.hops} if m.hops > 1 else "",
                "compare_url": links.compare.format(original_id, m.article_id),
                "article_url": links.article.format(m.article_id),
                "edge": edge,
            }
        )
    return rows, articles


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
    tree = {m.edge for m in members if m.edge is not None}
    others = other_edges(table, edges, tree)
    edge_rows = EdgeRows.of(table, tree | set(others), Links.at(threshold))
    rows, articles = member_rows(members, edges, edge_rows, settings)
    ids = [m.article_id for m in members]
    latest_original = original_latest(ids)
    return {
        **context,
        "members": members,
        "rows": rows,
        "total": total,
        "original": articles.get(ids[0]),
        "other_edges": [edge_rows.row(e) for e in others],
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
