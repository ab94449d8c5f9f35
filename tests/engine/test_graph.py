"""Connected components: the engine's one function, used by all-pairs clusters and the
dashboard's clusters, equals a plain union-find."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.engine.graph import components
from dedup.engine.pairs import Pairs, clusters


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
def test_all_pairs_clusters_are_the_components_of_the_pairs(graph):
    n, edges = graph
    edges = sorted({(min(e), max(e)) for e in edges if e[0] != e[1]})
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    found = Pairs(a, b, np.zeros(len(a), np.uint8))
    grouped = clusters(np.zeros(n, np.uint64), found)
    roots = union_find(n, edges)
    expected = {}
    for node in sorted({x for e in edges for x in e}):
        expected.setdefault(roots[node], []).append(node)
    assert [c.members.tolist() for c in grouped] == list(expected.values())
