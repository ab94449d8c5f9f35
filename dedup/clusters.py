"""Clusters drawn from stored matches at any threshold, without re-fingerprinting.

Every match is loaded once per process into numpy arrays (`MatchTable`), refreshed when a match
or a decision is added (one cheap query per request tells). A threshold (k, s) picks the matches
shown; clusters are the connected components of those, found by vectorised label propagation
with pointer jumping: a Python loop over 150,000 edges would cost most of the time budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

KIND_CODES = {"exact": 0, "near": 1, "partial": 2}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}
# Decision codes per match: no decision, duplicate, not a duplicate (hidden for good).
UNDECIDED, DUPLICATE, REJECTED = 0, 1, 2


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
    chosen: np.ndarray  # node index -> id of an "original" decision naming it, else 0
    _clusterings: OrderedDict = field(default_factory=OrderedDict, repr=False)

    def node(self, article_id: int) -> int | None:
        """Return the node index of an article, or None when it has no match."""
        return _index(self.article_id, article_id)

    def shown(self, k: int, s: float) -> np.ndarray:
        """Return the mask of matches shown at distance k and least similarity s."""
        near_ok = (self.distance >= 0) & (self.distance <= k) & (self.similarity >= s)
        keep = np.where(self.kind == 1, near_ok, self.kind == 0)
        keep |= (self.kind == 2) & (self.similarity >= s)  # a page's fingerprint drifts
        return keep & (self.decision != REJECTED)

    def clustering(self, k: int, s: float) -> Clustering:
        """Return the clusters at (k, s), cached: a slider moved back and forth costs nothing."""
        key = (int(k), round(float(s), 3))
        with _lock:
            found = self._clusterings.get(key)
            if found is not None:
                self._clusterings.move_to_end(key)
                return found
        found = Clustering.build(self, *key)
        with _lock:
            self._clusterings[key] = found
            while len(self._clusterings) > 16:
                self._clusterings.popitem(last=False)
        return found


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return each of n nodes' component label: the least node index in its component."""
    labels = np.arange(n, dtype=np.int64)
    if not len(a):
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        while True:  # pointer jumping: follow labels to their roots
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
        if np.array_equal(before, labels):
            return labels


@dataclass
class Clustering:
    """Clusters at one (k, s): members, originals and per-cluster figures, all arrays."""

    table: MatchTable
    k: int
    s: float
    shown: np.ndarray  # mask over matches
    label: np.ndarray  # node -> cluster number, -1 when the node is in no cluster
    size: np.ndarray  # cluster number -> members
    original: np.ndarray  # cluster number -> node of its original
    newest: np.ndarray  # cluster number -> latest dated of a member
    waiting: np.ndarray  # cluster number -> shown matches without a decision
    matches: np.ndarray  # cluster number -> shown matches
    nodes: np.ndarray  # the nodes in some cluster

    @classmethod
    def build(cls, table: MatchTable, k: int, s: float) -> Clustering:
        n = len(table.article_id)
        shown = table.shown(k, s)
        a, b = table.a[shown], table.b[shown]
        roots = components(n, a, b)
        in_cluster = np.zeros(n, bool)
        in_cluster[a] = in_cluster[b] = True
        # Number clusters 0..c-1 by their root, keep only nodes with a shown match.
        root_ids, numbered = np.unique(roots[in_cluster], return_inverse=True)
        label = np.full(n, -1, np.int64)
        label[in_cluster] = numbered
        c = len(root_ids)
        size = np.bincount(numbered, minlength=c)
        members = np.flatnonzero(in_cluster)
        # The original: the latest chosen one, else the earliest (dated, then id: node order).
        order = np.lexsort((members, table.dated[members], -table.chosen[members]))
        ordered = members[order]
        _, firsts = np.unique(label[ordered], return_index=True)
        first = ordered[firsts]
        newest = np.zeros(c, np.int64)
        np.maximum.at(newest, label[members], table.dated[members])
        edge_label = label[a]
        undecided = table.decision[shown] == UNDECIDED
        waiting = np.bincount(edge_label[undecided], minlength=c)
        matches = np.bincount(edge_label, minlength=c)
        return cls(table, k, s, shown, label, size, first, newest, waiting, matches, members)

    def members(self, cluster: int) -> np.ndarray:
        """Return the node indexes of one cluster."""
        return np.flatnonzero(self.label == cluster)

    def edges(self, cluster: int) -> np.ndarray:
        """Return the indexes of the shown matches inside one cluster."""
        inside = self.shown & (self.label[self.table.a] == cluster)
        return np.flatnonzero(inside)


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


def _index(sorted_values: np.ndarray, value: int) -> int | None:
    i = int(np.searchsorted(sorted_values, value))
    return i if i < len(sorted_values) and sorted_values[i] == value else None


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

    if f.source:
        code = table.sources.index(f.source) if f.source in table.sources else -1
        keep &= any_member(table.source[nodes] == code)
    if f.date_from is not None or f.date_to is not None:
        dated = table.dated[nodes]
        inside = np.ones(len(nodes), bool)
        if f.date_from is not None:
            inside &= dated >= f.date_from
        if f.date_to is not None:
            inside &= dated < f.date_to
        keep &= any_member(inside)
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


def distance_histogram(table: MatchTable, k_max: int) -> list[int]:
    """Return how many near matches (not rejected) have each distance 0..k_max.

    Only near matches: k does not cut exact copies (distance 0 always) nor partial ones
    (their page's fingerprint drifts)."""
    usable = (table.kind == 1) & (table.distance >= 0) & (table.decision != REJECTED)
    d = np.minimum(table.distance[usable], k_max).astype(np.int64)
    return np.bincount(d, minlength=k_max + 1).tolist()


def similarity_histogram(table: MatchTable, bins: int = 10) -> list[int]:
    """Return how many matches (not rejected) fall in each tenth of similarity."""
    sim = table.similarity[table.decision != REJECTED]
    where = np.clip((sim * bins).astype(np.int64), 0, bins - 1)
    return np.bincount(where, minlength=bins).tolist()


def cluster_groups(clustering: Clustering) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return shown match indexes grouped by cluster and each cluster's [start, end) in it."""
    shown = np.flatnonzero(clustering.shown)
    by = clustering.label[clustering.table.a[shown]]
    order = np.argsort(by, kind="stable")
    starts = np.searchsorted(by[order], np.arange(len(clustering.size) + 1))
    return shown[order], starts[:-1], starts[1:]


# --- loading ----------------------------------------------------------------------------


_lock = threading.Lock()
_cached: tuple[tuple, MatchTable] | None = None


def table_version() -> tuple:
    """Return what changes when matches or decisions do (one query)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT max(id) FROM dedup_match), (SELECT count(*) FROM dedup_match),"
            " (SELECT max(id) FROM dedup_decision)"
        )
        return tuple(cursor.fetchone())


def match_table() -> MatchTable:
    """Return the process's match table, reloaded when matches or decisions changed."""
    global _cached
    version = table_version()
    cached = _cached
    if cached is not None and cached[0] == version:
        return cached[1]
    table = table_load()
    _cached = (version, table)
    return table


def table_forget() -> None:
    """Drop the cached table (tests and benchmarks)."""
    global _cached
    _cached = None


def table_load() -> MatchTable:
    """Read every match, the latest decision per pair and its articles into arrays."""
    from dedup.models import Article, Decision, Match

    rows = list(
        Match.objects.order_by("id").values_list(
            "id", "a_id", "b_id", "kind", "distance", "similarity"
        )
    )
    m = len(rows)
    match_id = np.fromiter((r[0] for r in rows), np.int64, m)
    a_ids = np.fromiter((r[1] for r in rows), np.int64, m)
    b_ids = np.fromiter((r[2] for r in rows), np.int64, m)
    kind = np.fromiter((KIND_CODES.get(r[3], 1) for r in rows), np.int8, m)
    distance = np.fromiter((-1 if r[4] is None else r[4] for r in rows), np.int16, m)
    similarity = np.fromiter((r[5] for r in rows), np.float32, m)
    del rows
    article_id = np.unique(np.concatenate([a_ids, b_ids]))
    a = np.searchsorted(article_id, a_ids).astype(np.int32)
    b = np.searchsorted(article_id, b_ids).astype(np.int32)

    decision = np.zeros(m, np.int8)
    decision_id = np.zeros(m, np.int64)
    chosen = np.zeros(len(article_id), np.int64)
    pair_key = a_ids * (1 << 32) + b_ids  # matches come with a < b
    by_key = np.argsort(pair_key)
    sorted_keys = pair_key[by_key]
    verdict_codes = {"duplicate": DUPLICATE, "not_duplicate": REJECTED}
    rows = list(Decision.objects.order_by("id").values_list("id", "a_id", "b_id", "verdict"))
    for did, x, y, verdict in rows:  # in id order: the latest decision wins
        if y is None:
            if verdict == "original":
                i = _index(article_id, x)
                if i is not None:
                    chosen[i] = did
            continue
        key = min(x, y) * (1 << 32) + max(x, y)
        j = _index(sorted_keys, key)
        if j is not None:
            decision[by_key[j]] = verdict_codes.get(verdict, UNDECIDED)
            decision_id[by_key[j]] = did

    n = len(article_id)
    dated = np.zeros(n, np.int64)
    length = np.zeros(n, np.int32)
    source = np.zeros(n, np.int32)
    sources: list[str] = []
    if n:
        # One range scan beats an IN list of 100,000 ids; articles without a match are skipped.
        rows = list(
            Article.objects.filter(id__gte=article_id[0], id__lte=article_id[-1])
            .order_by()
            .values_list("id", "dated_at", "length", "source")
        )
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        where = np.searchsorted(article_id, ids)
        hit = where < n
        hit[hit] = article_id[where[hit]] == ids[hit]
        when = np.fromiter((r[1].timestamp() for r in rows), np.float64, len(rows))
        chars = np.fromiter((r[2] for r in rows), np.int64, len(rows))
        names, codes = np.unique(np.array([r[3] for r in rows], dtype=object), return_inverse=True)
        sources = [str(x) for x in names]
        dated[where[hit]] = when[hit].astype(np.int64)
        length[where[hit]] = chars[hit]
        source[where[hit]] = codes[hit]
    return MatchTable(
        a=a,
        b=b,
        kind=kind,
        distance=distance,
        similarity=similarity,
        decision=decision,
        decision_id=decision_id,
        match_id=match_id,
        article_id=article_id,
        dated=dated,
        length=length,
        source=source,
        sources=sources,
        chosen=chosen,
    )
