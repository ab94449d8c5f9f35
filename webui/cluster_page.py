"""What a cluster's page shows: its members, how each reaches the original, distances and
decisions, a page of each at a time; and the pairs and members a decision on the whole cluster
applies to.

Rows are plain strings made here: a cluster of hundreds renders without a tag per cell. The
members and the other pairs are paged in an order no decision changes, so every one of them is
on exactly one page and a decided row stays where it was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.core.paginator import Page, Paginator
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup import selectors
from dedup.models import Article, Decision, Fingerprint, MatchKind, Settings, Verdict
from dedup.selectors import clusterings, original_latest
from dedup.selectors.clusterings import KIND_NAMES, Member
from webui import story_links
from webui.review_params import Threshold

MEMBERS_PER_PAGE = 150  # in breadth-first order from the original: the closest first
PAIRS_PER_PAGE = 100  # the matches that are no member's path, the most similar first


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
    """Return the cluster's matches that are no member's path, the most similar first (then
    by match index): an order no decision changes."""
    others = edges[~np.isin(edges, np.fromiter(tree, np.int64, len(tree)))]
    return others[np.lexsort((others, -table.similarity[others]))].tolist()


def member_rows(
    original: Member, members: list[Member], edges: np.ndarray, edge_rows: EdgeRows, settings
) -> tuple[list[dict], dict[int, Article]]:
    """Return a row per member of one page (its article, distance and similarity to the
    original, the match it is reached by) and the articles of these members and the original."""
    table, links = edge_rows.table, edge_rows.links
    original_id = original.article_id
    ids = [original_id, *(m.article_id for m in members)]
    articles = Article.objects.defer("body").in_bulk(ids)
    prints = dict(
        Fingerprint.objects.filter(article_id__in=ids, version=settings.active_version).values_list(
            "article_id", "value"
        )
    )
    start = original.node
    touching = edges[(table.a[edges] == start) | (table.b[edges] == start)]
    direct = {}  # node -> its match with the original
    for e, x, y in zip(
        touching.tolist(), table.a[touching].tolist(), table.b[touching].tolist(), strict=True
    ):
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


@dataclass(frozen=True)
class PageAsked:
    """The pages of a cluster asked for (raw query values; None: not asked)."""

    members: str | None = None
    pairs: str | None = None


def page_address(original_id: int, threshold: Threshold, members: Page, pairs: Page) -> str:
    """Return the address of a cluster page at these pages: where a decision returns to."""
    query = f"{threshold.query()}&members_page={members.number}&pairs_page={pairs.number}"
    return reverse("webui:cluster", args=[original_id]) + "?" + query


def cluster_pages(members: list[Member], others: list[int], anchor: int, asked: PageAsked):
    """Return the page of members and the page of other pairs asked for; without a members
    page asked, the one holding the article the page was opened for."""
    number = asked.members
    if number is None:
        where = next(i for i, m in enumerate(members) if m.article_id == anchor)
        number = where // MEMBERS_PER_PAGE + 1
    members_page = Paginator(members, MEMBERS_PER_PAGE).get_page(number)
    return members_page, Paginator(others, PAIRS_PER_PAGE).get_page(asked.pairs)


def cluster_context(
    article: Article, threshold: Threshold, settings: Settings, asked: PageAsked = PageAsked()
) -> dict:
    """Gather the cluster holding an article: members, paths, distances and decisions, a
    page of members and a page of the other pairs at a time.

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
    tree = {m.edge for m in members if m.edge is not None}
    others = other_edges(table, edges, tree)
    members_page, pairs_page = cluster_pages(members, others, article.id, asked)
    shown, shown_others = list(members_page.object_list), list(pairs_page.object_list)
    paths = {m.edge for m in shown if m.edge is not None}
    edge_rows = EdgeRows.of(table, paths | set(shown_others), Links.at(threshold))
    rows, articles = member_rows(members[0], shown, edges, edge_rows, settings)
    ids = [m.article_id for m in members]
    latest_original = original_latest(ids)
    return {
        **context,
        "members": shown,
        "rows": rows,
        "total": len(members),
        "original": articles.get(ids[0]),
        "other_edges": [edge_rows.row(e) for e in shown_others],
        "other_total": len(others),
        "members_page": members_page,
        "pairs_page": pairs_page,
        "here": page_address(ids[0], threshold, members_page, pairs_page),
        "chosen": latest_original if latest_original and latest_original.a_id in ids else None,
        "seen_original": latest_original.id if latest_original else 0,
        "waiting": int(found.waiting[cluster]),
        **story_links.cluster_links(found, cluster, threshold),
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
