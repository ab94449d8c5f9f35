"""Connected components of a graph given as edge arrays, vectorised."""

from __future__ import annotations

import numpy as np


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return each of n nodes' component label: the least node index in its component.

    Union by minimum: every edge pulls both ends' labels down to the lesser one, then pointer
    jumping follows labels to their roots; repeated until no label changes.
    """
    labels = np.arange(n, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if not len(a):
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
        if np.array_equal(before, labels):
            return labels


# A partial copy joins a story only when it carries most of the smaller article: its
# similarity is the share of the smaller article found in the other (verification's
# containment C, stored from 0.4: Settings.partial). Calibrated on bench.corpus (build_corpus,
# labelled families): the demo's (seed 2024, per_band 40) and a held-out mixed collection
# (seed 1998, per_band 100). Below half, a partial match is as often a passage two stories
# share as an excerpt; from half, the share of clustered articles in their cluster's majority
# story is 1.000 on both, against 0.990 and 0.971 for connected components (docs/design.md,
# "Clusters", gives the figures). Between 0.4 and this bar a match links two stories.
CARRIES = 0.5


def story_joins(partial: np.ndarray, similarity: np.ndarray) -> np.ndarray:
    """Return the mask of matches that make their two articles one story: every exact and
    near copy, and a partial copy carrying at least CARRIES of the smaller article."""
    return ~np.asarray(partial, bool) | (np.asarray(similarity) >= np.float32(CARRIES))


def stars(n: int, a: np.ndarray, b: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Return each of n nodes' centre: centre (star) clustering over the edges (a, b).

    Nodes are taken in `rank` order (a permutation of 0..n-1: earliest first). A node no
    earlier centre has claimed becomes a centre, and claims every unclaimed node it has an
    edge to; a member is claimed by its earliest centre neighbour. Members join through their
    own edge to the centre, never through another member, so one shared edge cannot chain two
    stories. A node without edges is its own centre.

    Vectorised in rounds instead of a loop over nodes: an undecided node none of whose edges
    from earlier nodes is left is a centre (those earlier neighbours are all members), and
    claims its undecided later neighbours at once; an edge from a member, or to a decided
    node, drops out. Each round decides at least the earliest undecided node.
    """
    rank = np.asarray(rank, np.int64)
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    keep = a != b
    early = np.where(rank[a] < rank[b], a, b)[keep]
    late = np.where(rank[a] < rank[b], b, a)[keep]
    UNDECIDED, CENTRE, MEMBER = 0, 1, 2
    state = np.zeros(n, np.int8)
    u, v = early, late  # the live edges: both ends undecided
    while True:
        blocked = np.zeros(n, bool)
        blocked[v] = True
        state[(state == UNDECIDED) & ~blocked] = CENTRE
        if not len(v):
            break
        state[v[state[u] == CENTRE]] = MEMBER
        live = (state[u] == UNDECIDED) & (state[v] == UNDECIDED)
        u, v = u[live], v[live]
    centre = np.arange(n, dtype=np.int64)
    claims = (state[early] == CENTRE) & (state[late] == MEMBER)
    first = np.full(n, n, np.int64)  # the earliest centre's rank claiming each member
    np.minimum.at(first, late[claims], rank[early[claims]])
    node_at = np.empty(n, np.int64)
    node_at[rank] = np.arange(n)
    members = state == MEMBER
    centre[members] = node_at[first[members]]
    return centre


def story_clusters(
    n: int, a: np.ndarray, b: np.ndarray, partial: np.ndarray, similarity: np.ndarray, rank
) -> np.ndarray:
    """Return each of n nodes' centre, its story's original (docs/design.md, "Clusters"):
    centre clustering (`stars`, in `rank` order) over the matches that join a story."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    joins = story_joins(partial, similarity)
    return stars(n, a[joins], b[joins], rank)
