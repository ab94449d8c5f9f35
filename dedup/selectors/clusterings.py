"""Clusters drawn from stored matches at any threshold, without re-fingerprinting.

Every match is held in numpy arrays (`MatchTable`, loaded and kept current by
`dedup.selectors.matches`). What editors see is decided by kind
and verified similarity alone (`Bars`): the fingerprint distance only found the candidates.
A cluster is one story (docs/design.md, "Clusters"): an original and its copies, grouped
around the earliest by centre clustering (`dedup.engine.graph.story_clusters`) over the
matches that join a story; every other match shown between two clusters is a link ("quotes",
"quoted by"), never a merge. Vectorised: a Python loop over 150,000 edges would cost most of
the time budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dedup.engine.graph import story_clusters
from dedup.selectors.floors import Floor

_lock = threading.Lock()  # the clusterings a table caches, shared by a process's threads

KIND_CODES = {"exact": 0, "near": 1, "partial": 2}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}
# Decision codes per match: no decision, duplicate, not a duplicate (hidden for good).
UNDECIDED, DUPLICATE, REJECTED = 0, 1, 2
EXACT, NEAR, PARTIAL = KIND_CODES["exact"], KIND_CODES["near"], KIND_CODES["partial"]


@dataclass(frozen=True)
class Bars:
    """The least similarity of the matches shown, per kind; 0 shows every verified match.

    A stored near or partial match shows only while it meets the settings' bar for its kind
    now (the table's `Floor`: Settings.near, or near_short for short texts, Settings.partial);
    a bar here raises the cut above that, never lowers it. Exact copies are always shown."""

    near: float = 0.0  # Jaccard similarity of a near copy
    partial: float = 0.0  # share of the smaller article found in the other

    def key(self) -> tuple[float, float]:
        return round(float(self.near), 3), round(float(self.partial), 3)


@dataclass
class MatchTable:
    """Every stored match and what the review needs of its articles, as arrays."""

    a: np.ndarray  # node index of the earlier article (int32)
    b: np.ndarray  # node index of the later article
    kind: np.ndarray  # KIND_CODES (int8)
    distance: np.ndarray  # Hamming distance, -1 when unknown (int16)
    similarity: np.ndarray  # float32
    decision: np.ndarray  # UNDECIDED, DUPLICATE or REJECTED: the latest decision on the pair
    decision_id: np.ndarray  # the id of that decision, 0 when none (int64)
    match_id: np.ndarray  # int64
    article_id: np.ndarray  # node index -> article id (sorted, int64)
    dated: np.ndarray  # node index -> dated_at as epoch seconds (int64)
    length: np.ndarray  # node index -> characters (int32)
    source: np.ndarray  # node index -> index into sources (int32)
    sources: list[str]
    titles: list[str]  # node index -> title, case-folded (searched in memory)
    chosen: np.ndarray  # node index -> id of an "original" decision naming it, else 0
    pair_keys: np.ndarray  # node a * 2**32 + node b of every match (pair_key), sorted
    pair_order: np.ndarray  # match index of each of pair_keys
    decisions_seen: int = 0  # the latest decision id read into the table
    shared_chars: np.ndarray | None = None  # per match (int32); None: none known (all 0)
    # The settings' bars the table is served under (selectors.matches keeps them current).
    floor: Floor = field(default_factory=Floor)
    _clusterings: OrderedDict = field(default_factory=OrderedDict, repr=False)

    @cached_property
    def rank(self) -> np.ndarray:
        """Return each node's place in time: earliest dated first, ties by id (node order).
        Computed once per table: node order and dates change only in a new table."""
        order = np.lexsort((np.arange(len(self.dated)), self.dated))
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return rank

    def node(self, article_id: int) -> int | None:
        """Return the node index of an article, or None when it has no match."""
        return sorted_find(self.article_id, article_id)

    def pair(self, x: int, y: int) -> int | None:
        """Return the index of the match between two articles (either order), or None."""
        i, j = self.node(x), self.node(y)
        if i is None or j is None:
            return None
        found = sorted_find(self.pair_keys, pair_key(min(i, j), max(i, j)))
        return None if found is None else int(self.pair_order[found])

    def shown(self, bars: Bars, *, rejected: bool = False) -> np.ndarray:
        """Return the mask of matches shown at these bars; pairs an editor rejected only
        with `rejected` (a cluster's page keeps them in place, marked)."""
        near, partial = bars.key()
        sim, floor = self.similarity, self.floor
        chars = self.shared_chars if self.shared_chars is not None else np.zeros(len(sim))
        shorter = np.minimum(self.length[self.a], self.length[self.b])
        # float32 bars, as the similarities: a match verified at the bar stays at it
        near_ok = (sim >= near) & (sim >= floor.near_bar(shorter).astype(np.float32))
        partial_ok = (sim >= partial) & (sim >= floor.partial_bar(chars).astype(np.float32))
        keep = np.where(self.kind == NEAR, near_ok, self.kind == EXACT)
        keep |= (self.kind == PARTIAL) & partial_ok
        return keep if rejected else keep & (self.decision != REJECTED)

    def title_search(self, q: str) -> np.ndarray:
        """Return the ids of matched articles whose title contains q (any letter case)."""
        q = q.casefold()
        return self.article_id[[i for i, title in enumerate(self.titles) if q in title]]

    def clusterings_forget(self) -> None:
        """Drop the clusterings computed from this table (benchmarks time them afresh)."""
        with _lock:
            self._clusterings.clear()

    def clustering(self, bars: Bars, *, rejected: bool = False) -> Clustering:
        """Return the clusters at these bars, cached: a slider moved back and forth costs
        nothing. With `rejected`, pairs an editor rejected still join their articles: what a
        cluster's page shows, so that a decision moves no row."""
        key = (Bars(*bars.key()), rejected)
        with _lock:
            found = self._clusterings.get(key)
            if found is not None:
                self._clusterings.move_to_end(key)
                return found
        found = Clustering.build(self, key[0], rejected=rejected)
        with _lock:
            self._clusterings[key] = found
            while len(self._clusterings) > 16:
                self._clusterings.popitem(last=False)
        return found


@dataclass
class Clustering:
    """Clusters at one set of bars: members, originals and per-cluster figures, all arrays."""

    table: MatchTable
    bars: Bars
    shown: np.ndarray  # mask over matches
    label: np.ndarray  # node -> cluster number, -1 when the node is in no cluster
    size: np.ndarray  # cluster number -> members
    original: np.ndarray  # cluster number -> node of its original
    newest: np.ndarray  # cluster number -> latest dated of a member
    waiting: np.ndarray  # cluster number -> shown matches inside it without a decision
    matches: np.ndarray  # cluster number -> shown matches inside it
    nodes: np.ndarray  # the nodes in some cluster
    inside: np.ndarray  # mask over matches: shown, both articles in one cluster (the rest
    # of the shown ones link two clusters, or a cluster and an article in none)

    @classmethod
    def build(cls, table: MatchTable, bars: Bars, *, rejected: bool = False) -> Clustering:
        n = len(table.article_id)
        shown = table.shown(bars, rejected=rejected)
        a, b = table.a[shown], table.b[shown]
        partial, similarity = table.kind[shown] == PARTIAL, table.similarity[shown]
        centre = story_clusters(n, a, b, partial, similarity, table.rank)
        # A cluster is a centre with at least one member; number them 0..c-1 by centre.
        in_cluster = np.bincount(centre, minlength=n)[centre] > 1
        centres, numbered = np.unique(centre[in_cluster], return_inverse=True)
        label = np.full(n, -1, np.int64)
        label[in_cluster] = numbered
        c = len(centres)
        size = np.bincount(numbered, minlength=c)
        members = np.flatnonzero(in_cluster)
        # The original: the latest chosen one, else the earliest (the centre).
        order = np.lexsort((table.rank[members], -table.chosen[members]))
        ordered = members[order]
        _, firsts = np.unique(label[ordered], return_index=True)
        first = ordered[firsts]
        newest = np.zeros(c, np.int64)
        np.maximum.at(newest, label[members], table.dated[members])
        inner = (label[a] >= 0) & (label[a] == label[b])
        inside = np.zeros(len(shown), bool)
        inside[np.flatnonzero(shown)[inner]] = True
        edge_label = label[a[inner]]
        undecided = table.decision[shown][inner] == UNDECIDED
        waiting = np.bincount(edge_label[undecided], minlength=c)
        matches = np.bincount(edge_label, minlength=c)
        return cls(
            table, bars, shown, label, size, first, newest, waiting, matches, members, inside
        )

    def members(self, cluster: int) -> np.ndarray:
        """Return the node indexes of one cluster."""
        return np.flatnonzero(self.label == cluster)

    def edges(self, cluster: int) -> np.ndarray:
        """Return the indexes of the shown matches inside one cluster."""
        return np.flatnonzero(self.inside & (self.label[self.table.a] == cluster))

    def links(self, cluster: int) -> list[Link]:
        """Return the shown matches between one cluster and articles outside it, each as the
        cluster's article, the other one and which quotes which: the later one quotes."""
        table = self.table
        a, b = table.a, table.b
        mine_a, mine_b = self.label[a] == cluster, self.label[b] == cluster
        found = np.flatnonzero(self.shown & (mine_a != mine_b))
        found = found[np.lexsort((found, -table.similarity[found]))]
        here = np.where(mine_a[found], a[found], b[found])
        other = np.where(mine_a[found], b[found], a[found])
        quotes = table.rank[here] > table.rank[other]
        rows = zip(found, here, other, self.label[other], quotes, strict=True)
        return [Link(*(int(v) for v in row[:4]), bool(row[4])) for row in rows]


@dataclass(frozen=True)
class Link:
    """A shown match from a cluster's article to an article of another cluster (or of none):
    the two share text without being one story."""

    edge: int
    here: int  # node in the cluster
    other: int  # node outside it
    other_cluster: int  # its cluster, -1 when it is in none
    quotes: bool  # here is the later article: it quotes the other (else it is quoted by it)


@dataclass(frozen=True)
class Member:
    """A cluster member as the cluster page shows it: how it reaches the original."""

    node: int
    article_id: int
    hops: int  # matches between it and the original (0 for the original)
    via: int | None  # article id it is reached from, None for the original
    edge: int | None  # index of that match


def member_paths(
    clustering: Clustering, cluster: int, edges: np.ndarray | None = None
) -> tuple[list[Member], np.ndarray]:
    """Return members in breadth-first order from the original, and the cluster's edges."""
    table = clustering.table
    if edges is None:
        edges = clustering.edges(cluster)
    neighbours: dict[int, list[tuple[int, int]]] = {}
    for e, x, y in zip(
        edges.tolist(), table.a[edges].tolist(), table.b[edges].tolist(), strict=True
    ):
        neighbours.setdefault(x, []).append((y, e))
        neighbours.setdefault(y, []).append((x, e))
    start = int(clustering.original[cluster])
    ids = table.article_id
    found = {start: Member(start, int(ids[start]), 0, None, None)}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        here = found[node]
        # Strongest link first: the path shown is the most similar one of the shortest.
        for other, e in sorted(neighbours.get(node, ()), key=lambda p: -table.similarity[p[1]]):
            if other not in found:
                found[other] = Member(other, int(ids[other]), here.hops + 1, here.article_id, e)
                queue.append(other)
    return list(found.values()), edges


def sorted_find(sorted_values: np.ndarray, value: int) -> int | None:
    """Return where a value is in a sorted array, or None when it is not there."""
    i = int(np.searchsorted(sorted_values, value))
    return i if i < len(sorted_values) and sorted_values[i] == value else None


def pair_key(a, b):
    """Return one int64 per pair of node indexes (int32 each, so the key never overflows);
    works on arrays and on ints alike."""
    return (np.asarray(a, np.int64) << 32) | np.asarray(b, np.int64)


BANDS = {  # length bands of a cluster's original, in characters: [low, high)
    "short": (0, 140),
    "medium": (140, 500),
    "long": (500, 2000),
    "longest": (2000, 1 << 31),
}


@dataclass(frozen=True)
class QueueFilter:
    """What the review queue shows: status, source, dates, length band, search hits, order."""

    status: str = "waiting"  # waiting, reviewed or all
    source: str = ""
    date_from: int | None = None  # epoch seconds, inclusive
    date_to: int | None = None  # epoch seconds, exclusive
    band: str = ""
    sort: str = "size"  # size (largest first) or newest
    hits: np.ndarray | None = None  # article ids a search found; None: no search


def cluster_queue(clustering: Clustering, f: QueueFilter) -> np.ndarray:
    """Return the cluster numbers the queue shows, in order."""
    table, label = clustering.table, clustering.label
    c = len(clustering.size)
    keep = np.ones(c, bool)
    if f.status == "waiting":
        keep &= clustering.waiting > 0
    elif f.status == "reviewed":
        keep &= clustering.waiting == 0
    nodes = clustering.nodes

    def any_member(mask: np.ndarray) -> np.ndarray:
        return np.bincount(label[nodes[mask]], minlength=c) > 0

    for mask in node_masks(table, f):  # the source, the dates
        keep &= any_member(mask[nodes])
    if f.band in BANDS:
        low, high = BANDS[f.band]
        chars = table.length[clustering.original]
        keep &= (chars >= low) & (chars < high)
    if f.hits is not None:
        keep &= any_member(np.isin(table.article_id[nodes], f.hits))
    if f.sort == "newest":
        order = np.lexsort((-clustering.size, -clustering.newest))
    else:
        order = np.lexsort((-clustering.newest, -clustering.size))
    return order[keep[order]]


def waiting_pairs(
    clustering: Clustering,
    clusters: np.ndarray,
    *,
    kind: str = "",
    low=0.0,
    high=1.0,
    within: QueueFilter | None = None,
) -> np.ndarray:
    """Return the shown undecided matches inside some clusters, of one kind (any when empty)
    and with a similarity from low to high (both included), the most similar first. With
    `within`, only pairs inside its source and dates: one of the two articles of the source,
    one dated inside the dates (a pair of two other sources' articles is not the filter's)."""
    table = clustering.table
    inside = np.zeros(len(clustering.size), bool)
    inside[clusters] = True
    edges = np.flatnonzero(clustering.inside & (table.decision == UNDECIDED))
    edges = edges[inside[clustering.label[table.a[edges]]]]
    if kind:
        edges = edges[table.kind[edges] == KIND_CODES[kind]]
    similarity = table.similarity[edges]  # float32: the bounds too, so 0.8 takes 0.8
    edges = edges[(similarity >= np.float32(low)) & (similarity <= np.float32(high))]
    if within is not None:
        for mask in node_masks(table, within):
            edges = edges[mask[table.a[edges]] | mask[table.b[edges]]]
    return edges[np.lexsort((edges, -table.similarity[edges]))]


def node_masks(table: MatchTable, f: QueueFilter) -> list[np.ndarray]:
    """Return a mask over nodes per filter on articles in force: the source, the dates."""
    masks = []
    if f.source:
        code = table.sources.index(f.source) if f.source in table.sources else -1
        masks.append(table.source == code)
    if f.date_from is not None or f.date_to is not None:
        inside = np.ones(len(table.dated), bool)
        if f.date_from is not None:
            inside &= table.dated >= f.date_from
        if f.date_to is not None:
            inside &= table.dated < f.date_to
        masks.append(inside)
    return masks


def similarity_histogram(table: MatchTable, kind: str, bins: int = 10) -> list[int]:
    """Return how many matches of a kind (shown, not rejected) fall in each tenth of similarity."""
    shown = table.shown(Bars())  # at the settings' bars, without rejected pairs
    sim = table.similarity[(table.kind == KIND_CODES[kind]) & shown]
    where = np.clip((sim * bins).astype(np.int64), 0, bins - 1)
    return np.bincount(where, minlength=bins).tolist()


def cluster_groups(clustering: Clustering) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the matches inside clusters grouped by cluster and each cluster's [start, end)
    in it."""
    shown = np.flatnonzero(clustering.inside)
    by = clustering.label[clustering.table.a[shown]]
    order = np.argsort(by, kind="stable")
    starts = np.searchsorted(by[order], np.arange(len(clustering.size) + 1))
    return shown[order], starts[:-1], starts[1:]
