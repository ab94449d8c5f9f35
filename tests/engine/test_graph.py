"""The engine's graph code: connected components equal a plain union-find; stories (centre
clustering), used by all-pairs clusters and the dashboard's clusters, equal a plain loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.engine.graph import CARRIES, components, stars, story_joins
from dedup.engine.pairs import Pairs, clusters
from tests.engine.by_sets import stars_by_a_loop


def union_find(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Return each node's least node in its component, by a plain union-find."""
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)
    return [root(x) for x in range(n)]


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 60))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=90))
    return n, edges


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_components_equal_a_plain_union_find(graph):
    n, edges = graph
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    assert components(n, a, b).tolist() == union_find(n, edges)


def test_components_of_no_edges_are_the_nodes_themselves():
    empty = np.empty(0, np.int64)
    assert components(4, empty, empty).tolist() == [0, 1, 2, 3]


def test_a_long_chain_given_backwards_is_one_component():
    n = 5000
    a = np.arange(n - 1)[::-1].copy()
    assert set(components(n, a, a + 1).tolist()) == {0}


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_all_pairs_clusters_are_the_stars_of_the_pairs(graph):
    n, edges = graph
    edges = sorted({(min(e), max(e)) for e in edges if e[0] != e[1]})
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    found = Pairs(a, b, np.zeros(len(a), np.uint8))
    grouped = clusters(np.zeros(n, np.uint64), found)
    centre = stars_by_a_loop(n, edges, list(range(n)))
    expected: dict[int, list[int]] = {}
    for node in range(n):
        expected.setdefault(centre[node], []).append(node)
    assert [c.members.tolist() for c in grouped] == [g for g in expected.values() if len(g) > 1]


# --- stars: a cluster is one story -----------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_stars_equal_the_plain_loop_over_nodes_in_time_order(graph, rnd):
    n, edges = graph
    rank = list(range(n))
    rnd.shuffle(rank)
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    assert stars(n, a, b, np.array(rank)).tolist() == stars_by_a_loop(n, edges, rank)


def test_stars_never_chain_two_stories_through_a_shared_member():
    # 0 and 3 are two originals (in that order); 1 copies 0, 2 copies 3, and 1 ~ 2 (they
    # share a passage that happens to join): 2 stays with its own original.
    a, b = np.array([0, 2, 1]), np.array([1, 3, 2])
    assert stars(4, a, b, np.array([0, 2, 3, 1])).tolist() == [0, 0, 3, 3]


def test_stars_of_a_long_chain_alternate_centres_and_members():
    n = 2001
    a = np.arange(n - 2, -1, -1)
    centre = stars(n, a, a + 1, np.arange(n))
    assert centre.tolist() == [i - (i % 2) for i in range(n)]


def test_story_joins_take_every_copy_and_partials_carrying_most_of_the_smaller():
    partial = np.array([False, False, True, True, True])
    similarity = np.array([0.4, 1.0, CARRIES, CARRIES - 0.01, 0.2], np.float32)
    assert story_joins(partial, similarity).tolist() == [True, True, True, False, False]
