"""Clusters drawn from stored matches at any threshold, without re-fingerprinting.

Every match is loaded once per process into numpy arrays (`MatchTable`), refreshed when a match
or a decision is added (one cheap query per request tells). What editors see is decided by kind
and verified similarity alone (`Bars`): the fingerprint distance only found the candidates.
Clusters are the connected components of the matches shown, found by vectorised label
propagation with pointer jumping: a Python loop over 150,000 edges would cost most of the time
budget.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

from dedup.engine.graph import components

KIND_CODES = {"exact": 0, "near": 1, "partial": 2}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}
# Decision codes per match: no decision, duplicate, not a duplicate (hidden for good).
UNDECIDED, DUPLICATE, REJECTED = 0, 1, 2
EXACT, NEAR, PARTIAL = KIND_CODES["exact"], KIND_CODES["near"], KIND_CODES["partial"]


@dataclass(frozen=True)
class Bars:
    """The least similarity of the matches shown, per kind; 0 shows every verified match.

    Every stored near or partial match passed its verification bar (Settings.near, or
    near_short for short texts, and Settings.partial) when it was found, so the defaults show
    them all; a bar raises the cut above verification, never lowers it. Exact copies are
    always shown."""

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
    pair_keys: np.ndarray  # a * 2**32 + b of every match, sorted
    pair_order: np.ndarray  # match index of each of pair_keys
    _clusterings: OrderedDict = field(default_factory=OrderedDict, repr=False)

    def node(self, article_id: int) -> int | None:
        """Return the node index of an article, or None when it has no match."""
        return _index(self.article_id, article_id)

    def shown(self, bars: Bars, *, rejected: bool = False) -> np.ndarray:
        """Return the mask of matches shown at these bars; pairs an editor rejected only
        with `rejected` (a cluster's page keeps them in place, marked)."""
        near, partial = bars.key()
        keep = np.where(self.kind == NEAR, self.similarity >= near, self.kind == EXACT)
        keep |= (self.kind == PARTIAL) & (self.similarity >= partial)
        return keep if rejected else keep & (self.decision != REJECTED)

    def title_search(self, q: str) -> np.ndarray:
        """Return the ids of matched articles whose title contains q (any letter case)."""
        q = q.casefold()
        return self.article_id[[i for i, title in enumerate(self.titles) if q in title]]

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
    waiting: np.ndarray  # cluster number -> shown matches without a decision
    matches: np.ndarray  # cluster number -> shown matches
    nodes: np.ndarray  # the nodes in some cluster

    @classmethod
    def build(cls, table: MatchTable, bars: Bars, *, rejected: bool = False) -> Clustering:
        n = len(table.article_id)
        shown = table.shown(bars, rejected=rejected)
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
        return cls(table, bars, shown, label, size, first, newest, waiting, matches, members)

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


def similarity_histogram(table: MatchTable, kind: str, bins: int = 10) -> list[int]:
    """Return how many matches of a kind (not rejected) fall in each tenth of similarity."""
    sim = table.similarity[(table.kind == KIND_CODES[kind]) & (table.decision != REJECTED)]
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
    """Return (latest match id, matches, latest decision id): what changes them (one query)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT max(id) FROM dedup_match), (SELECT count(*) FROM dedup_match),"
            " (SELECT max(id) FROM dedup_decision)"
        )
        return tuple(cursor.fetchone())


def match_table() -> MatchTable:
    """Return the process's match table, refreshed when matches or decisions changed.

    New decisions alone are applied to a copy of the arrays (milliseconds); new or removed
    matches read everything again (seconds at 150,000 matches, once)."""
    global _cached
    version = table_version()
    cached = _cached
    if cached is not None and cached[0] == version:
        return cached[1]
    if cached is not None and cached[0][:2] == version[:2]:
        table = decisions_apply(cached[1], since=cached[0][2] or 0)
    else:
        table = table_load()
    _cached = (version, table)
    return table


def table_forget() -> None:
    """Drop the cached table (tests and benchmarks)."""
    global _cached
    _cached = None


def _rows(sql: str, params=()) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _column(rows: list[tuple], i: int, dtype) -> np.ndarray:
    return np.fromiter((r[i] for r in rows), dtype, len(rows))


def table_load() -> MatchTable:
    """Read every match, the latest decision per pair and the matched articles into arrays."""

    rows = _rows(
        "SELECT id, a_id, b_id,"
        " CASE kind WHEN 'exact' THEN 0 WHEN 'partial' THEN 2 ELSE 1 END,"
        " COALESCE(distance, -1), similarity FROM dedup_match ORDER BY id"
    )
    match_id, a_ids, b_ids = (_column(rows, i, np.int64) for i in range(3))
    kind = _column(rows, 3, np.int8)
    distance = _column(rows, 4, np.int16)
    similarity = _column(rows, 5, np.float32)
    del rows
    article_id = np.unique(np.concatenate([a_ids, b_ids]))
    n = len(article_id)
    dated = np.zeros(n, np.int64)
    length = np.zeros(n, np.int32)
    source = np.zeros(n, np.int32)
    sources: list[str] = []
    titles: list[str] = []
    if n:
        epoch = "CAST(EXTRACT(EPOCH FROM dated_at) AS BIGINT)"
        # One range scan beats an IN list of 100,000 ids; articles without a match are skipped.
        rows = _rows(
            f"SELECT id, {epoch}, length, source, title FROM dedup_article"
            " WHERE id BETWEEN %s AND %s",
            [int(article_id[0]), int(article_id[-1])],
        )
        ids = _column(rows, 0, np.int64)
        where = np.minimum(np.searchsorted(article_id, ids), n - 1)
        hit = article_id[where] == ids
        names, codes = np.unique(np.array([r[3] for r in rows], dtype=object), return_inverse=True)
        sources = [str(x) for x in names]
        dated[where[hit]] = _column(rows, 1, np.int64)[hit]
        length[where[hit]] = _column(rows, 2, np.int64)[hit]
        source[where[hit]] = codes[hit]
        folded = np.full(n, "", dtype=object)
        folded[where[hit]] = np.array([r[4].casefold() for r in rows], dtype=object)[hit]
        titles = folded.tolist()
    pair_key = a_ids * (1 << 32) + b_ids  # matches come with a < b
    by_key = np.argsort(pair_key)
    table = MatchTable(
        a=np.searchsorted(article_id, a_ids).astype(np.int32),
        b=np.searchsorted(article_id, b_ids).astype(np.int32),
        kind=kind,
        distance=distance,
        similarity=similarity,
        decision=np.zeros(len(match_id), np.int8),
        decision_id=np.zeros(len(match_id), np.int64),
        match_id=match_id,
        article_id=article_id,
        dated=dated,
        length=length,
        source=source,
        sources=sources,
        titles=titles,
        chosen=np.zeros(n, np.int64),
        pair_keys=pair_key[by_key],
        pair_order=by_key,
    )
    return decisions_apply(table, since=0, copy=False)


def decisions_apply(table: MatchTable, *, since: int, copy: bool = True) -> MatchTable:
    """Return the table with the decisions after id `since` applied (the latest counts)."""
    if copy:
        table = dataclasses.replace(
            table,
            decision=table.decision.copy(),
            decision_id=table.decision_id.copy(),
            chosen=table.chosen.copy(),
            _clusterings=OrderedDict(),
        )
    codes = {"duplicate": DUPLICATE, "not_duplicate": REJECTED}
    rows = _rows(
        "SELECT id, a_id, b_id, verdict FROM dedup_decision WHERE id > %s ORDER BY id", [since]
    )
    for did, x, y, verdict in rows:  # in id order: the latest decision wins
        if y is None:
            i = _index(table.article_id, x)
            if verdict == "original" and i is not None:
                table.chosen[i] = did
            continue
        j = _index(table.pair_keys, min(x, y) * (1 << 32) + max(x, y))
        if j is not None:
            match = table.pair_order[j]
            table.decision[match] = codes.get(verdict, UNDECIDED)
            table.decision_id[match] = did
    return table
