"""Clusters from stored matches: one story each (no chains), links between stories, rejected
pairs, similarity bars, originals."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from dedup import selectors
from dedup.engine.graph import CARRIES, components
from dedup.selectors import clusterings
from dedup.selectors.clusterings import (
    DUPLICATE,
    REJECTED,
    UNDECIDED,
    Bars,
    MatchTable,
    QueueFilter,
    cluster_queue,
    member_paths,
)


def table(edges, *, n=None, dated=None, decisions=None, chosen=None, lengths=None, sources=None):
    """Build a match table from (a, b, kind, distance, similarity) over nodes 0..n-1."""
    n = n or 1 + max(max(e[0], e[1]) for e in edges)
    m = len(edges)
    return MatchTable(
        a=np.array([e[0] for e in edges], np.int32),
        b=np.array([e[1] for e in edges], np.int32),
        kind=np.array([clusterings.KIND_CODES[e[2]] for e in edges], np.int8),
        distance=np.array([-1 if e[3] is None else e[3] for e in edges], np.int16),
        similarity=np.array([e[4] for e in edges], np.float32),
        decision=np.array(decisions or [UNDECIDED] * m, np.int8),
        decision_id=np.zeros(m, np.int64),
        match_id=np.arange(1, m + 1, dtype=np.int64),
        article_id=np.arange(10, 10 + n, dtype=np.int64),
        dated=np.array(dated or list(range(n)), np.int64),
        length=np.array(lengths or [800] * n, np.int32),
        source=np.array(sources or [0] * n, np.int32),
        sources=["a", "b"],
        titles=[f"title {i} news" for i in range(n)],
        chosen=np.array(chosen or [0] * n, np.int64),
        pair_keys=np.zeros(0, np.int64),
        pair_order=np.zeros(0, np.int64),
    )


def groups(clustering):
    """Return the clusters as sets of article ids."""
    out = []
    for c in range(len(clustering.size)):
        out.append({int(clustering.table.article_id[i]) for i in clustering.members(c)})
    return sorted(out, key=min)


def test_components_label_each_node_with_least_node_of_its_component():
    a = np.array([0, 1, 3, 6])
    b = np.array([1, 2, 4, 5])
    assert components(7, a, b).tolist() == [0, 0, 0, 3, 3, 5, 5]


def test_components_of_a_long_chain_in_reverse_order_converge():
    n = 2000
    a = np.arange(n - 2, -1, -1)
    assert set(components(n, a, a + 1).tolist()) == {0}


def test_components_match_a_plain_union_find_on_random_graphs():
    rng = np.random.default_rng(7)
    n = 500
    a, b = rng.integers(0, n, 400), rng.integers(0, n, 400)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in zip(a, b, strict=True):
        parent[find(x)] = find(y)
    labels = components(n, a, b)
    for x in range(n):
        for y in range(0, n, 37):
            assert (labels[x] == labels[y]) == (find(x) == find(y))


def test_a_chain_is_cut_at_the_copy_of_a_copy_which_stays_linked():
    t = table([(0, 1, "near", 2, 0.8), (1, 2, "near", 3, 0.7)])  # 0 ~ 1 ~ 2, 0 far from 2
    found = t.clustering(Bars())
    assert groups(found) == [{10, 11}]
    members, _ = member_paths(found, 0)
    assert [(m.article_id, m.hops, m.via) for m in members] == [(10, 0, None), (11, 1, 10)]
    (link,) = found.links(0)
    assert (link.here, link.other, link.other_cluster, link.quotes) == (1, 2, -1, False)


def test_two_stories_sharing_one_sentence_are_two_clusters_linked_both_ways():
    # Story A: 0 and its repost 1; story B: 2 and its repost 3. Article 2 holds one sentence
    # of 0: a partial match carrying under half of the smaller article (2).
    t = table(
        [(0, 1, "near", 2, 0.9), (0, 2, "partial", 20, 0.42), (2, 3, "near", 1, 0.95)],
        lengths=[900, 900, 240, 240],
    )
    found = t.clustering(Bars())
    assert groups(found) == [{10, 11}, {12, 13}]
    a, b = int(found.label[0]), int(found.label[2])
    assert [(x.here, x.other, x.other_cluster, x.quotes) for x in found.links(a)] == [
        (0, 2, b, False)  # quoted by story B
    ]
    assert [(x.here, x.other, x.other_cluster, x.quotes) for x in found.links(b)] == [
        (2, 0, a, True)  # quotes story A
    ]
    # The link is reviewed in neither: each cluster waits on its own pair.
    assert found.waiting.tolist() == [1, 1] and found.matches.tolist() == [1, 1]
    assert sorted(found.edges(a).tolist() + found.edges(b).tolist()) == [0, 2]


def test_a_page_embedding_most_of_a_story_is_in_the_story():
    # 0 is the story, 1 its repost, 2 a later page of twice its length holding nearly all of it.
    t = table(
        [(0, 1, "near", 1, 0.9), (0, 2, "partial", 25, 0.93), (1, 2, "partial", 26, 0.9)],
        lengths=[500, 500, 1200],
    )
    found = t.clustering(Bars())
    assert groups(found) == [{10, 11, 12}]
    assert found.links(0) == []


def test_clusters_are_pure_where_connected_components_chain_stories():
    # Four stories of an original and copies (s * 10 + copy), chained by quotes: shared
    # sentences (partial under half) and one near copy's copy pair across stories.
    edges, story = [], {}
    for s in range(4):
        for c in range(1, 4):
            edges.append((s * 10, s * 10 + c, "near", 2, 0.8))
        for node in range(s * 10, s * 10 + 4):
            story[node] = s
    edges += [(1, 12, "partial", 20, 0.45), (13, 21, "partial", 20, 0.41)]
    edges += [(23, 32, "partial", 20, 0.3), (3, 33, "partial", 30, 0.49)]
    t = table(edges, n=34)
    found = t.clustering(Bars())

    def purity(labels):
        clustered = [x for x in story if labels[x] >= 0]
        majority = 0
        for c in set(labels[clustered].tolist()):
            inside = [story[x] for x in clustered if labels[x] == c]
            majority += max(inside.count(s) for s in set(inside))
        return majority / len(clustered)

    assert purity(found.label) == 1.0 and len(found.size) == 4
    assert found.size.tolist() == [4, 4, 4, 4]
    shown = t.shown(Bars())
    assert purity(components(34, t.a[shown], t.b[shown])) < 0.5  # the old clusters: one


def test_higher_bar_splits_a_chain():
    t = table([(0, 1, "near", 2, 0.8), (1, 2, "near", 3, 0.7)])
    assert groups(t.clustering(Bars(near=0.75))) == [{10, 11}]


def test_every_member_is_a_direct_copy_of_its_original_at_any_bars():
    rng = np.random.default_rng(3)
    edges = [
        (int(x), int(y), kind, int(d), float(s))
        for x, y, kind, d, s in zip(
            rng.integers(0, 60, 80),
            rng.integers(60, 120, 80),
            rng.choice(["near", "partial"], 80),
            rng.integers(0, 20, 80),
            rng.random(80),
            strict=True,
        )
    ]
    t = table(edges, n=120, dated=rng.integers(0, 50, 120).tolist())
    for bar in (1.0, 0.8, 0.6, 0.4, 0.2, 0.0):
        found = t.clustering(Bars(near=bar, partial=min(1.0, bar + 0.1)))
        shown = found.shown
        joins = shown & ((t.kind != clusterings.PARTIAL) | (t.similarity >= CARRIES))
        for c in range(len(found.size)):
            centre = int(found.original[c])
            assert t.rank[centre] == t.rank[found.members(c)].min()  # the earliest
            for m in found.members(c).tolist():
                if m != centre:
                    lo, hi = min(m, centre), max(m, centre)
                    assert np.any(joins & (t.a == lo) & (t.b == hi))


def test_rejected_pair_is_never_shown_again():
    t = table([(0, 1, "near", 1, 0.9), (1, 2, "near", 1, 0.9)], decisions=[REJECTED, UNDECIDED])
    assert groups(t.clustering(Bars())) == [{11, 12}]


def test_fingerprint_distance_never_hides_a_verified_copy():
    # A near copy whose fingerprint landed far (distance 12, beyond any k_max), one with no
    # fingerprint, a short text's near copy below the usual near bar, a partial copy.
    t = table(
        [
            (0, 1, "near", 12, 0.83),
            (2, 3, "near", None, 0.6),
            (4, 5, "near", 1, 0.25),
            (6, 7, "partial", 30, 0.6),
        ]
    )
    everything = [{10, 11}, {12, 13}, {14, 15}, {16, 17}]
    assert groups(t.clustering(Bars())) == everything
    assert t.shown(Bars()).all()


def test_each_kind_has_its_own_bar_and_exact_copies_are_always_shown():
    t = table([(0, 1, "exact", 0, 1.0), (2, 3, "partial", 30, 0.6), (4, 5, "near", 4, 0.9)])
    assert groups(t.clustering(Bars(near=0.95, partial=0.5))) == [{10, 11}, {12, 13}]
    assert groups(t.clustering(Bars(near=0.5, partial=0.7))) == [{10, 11}, {14, 15}]
    assert groups(t.clustering(Bars(near=1.0, partial=1.0))) == [{10, 11}]


def test_near_bar_hides_weak_near_matches():
    t = table([(0, 1, "near", 1, 0.45), (0, 2, "near", 1, 0.95)])
    assert groups(t.clustering(Bars(near=0.5))) == [{10, 12}]


def test_similarity_histograms_count_each_kind_apart():
    t = table(
        [(0, 1, "near", 1, 0.45), (0, 2, "near", 9, 0.95), (3, 4, "partial", 20, 0.5)],
        decisions=[UNDECIDED, REJECTED, UNDECIDED],
    )
    assert clusterings.similarity_histogram(t, "near") == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert clusterings.similarity_histogram(t, "partial") == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]


def test_original_is_the_earliest_unless_an_editor_chose_one():
    edges = [(0, 1, "near", 1, 0.9), (1, 2, "near", 1, 0.9)]
    early = table(edges, dated=[50, 20, 30])
    assert early.clustering(Bars()).original.tolist() == [1]
    chosen = table(edges, dated=[50, 20, 30], chosen=[0, 0, 7])
    assert chosen.clustering(Bars()).original.tolist() == [2]
    tie = table(edges, dated=[5, 5, 5])
    assert tie.clustering(Bars()).original.tolist() == [0]


def test_queue_shows_waiting_clusters_largest_first():
    edges = [(0, 1, "near", 1, 0.9), (2, 3, "near", 1, 0.9), (2, 4, "near", 1, 0.9)]
    t = table(edges, decisions=[DUPLICATE, UNDECIDED, UNDECIDED])
    found = t.clustering(Bars())
    waiting = cluster_queue(found, QueueFilter())
    assert [groups_of(found, c) for c in waiting] == [{12, 13, 14}]
    everything = cluster_queue(found, QueueFilter(status="all"))
    assert [groups_of(found, c) for c in everything] == [{12, 13, 14}, {10, 11}]
    reviewed = cluster_queue(found, QueueFilter(status="reviewed"))
    assert [groups_of(found, c) for c in reviewed] == [{10, 11}]


def test_queue_filters_by_source_band_date_and_hits():
    edges = [(0, 1, "near", 1, 0.9), (2, 3, "near", 1, 0.9)]
    t = table(edges, sources=[0, 0, 0, 1], lengths=[100, 100, 900, 900], dated=[1, 2, 30, 40])
    found = t.clustering(Bars())

    def shown(**kw):
        return [groups_of(found, c) for c in cluster_queue(found, QueueFilter(status="all", **kw))]

    assert shown(source="b") == [{12, 13}]
    assert shown(source="nowhere") == []
    assert shown(band="short") == [{10, 11}]
    assert shown(date_from=35) == [{12, 13}]
    assert shown(date_to=10) == [{10, 11}]
    assert shown(hits=np.array([11, 999])) == [{10, 11}]


def test_title_search_ignores_letter_case():
    t = table([(0, 1, "near", 1, 0.9)])
    assert t.title_search("TITLE 1").tolist() == [11]
    assert t.title_search("nothing").tolist() == []


def groups_of(found, c):
    return {int(found.table.article_id[i]) for i in found.members(c)}


@pytest.mark.django_db
def test_table_load_reads_matches_decisions_and_articles(django_user_model):
    from dedup.models import Article, Decision, Match

    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    made = [
        Article.objects.create(body=f"text {i}", dated_at=when, length=100 + i, source="s")
        for i in range(4)
    ]
    ids = [a.id for a in made]
    Match.objects.create(a_id=ids[0], b_id=ids[1], kind="near", distance=2, similarity=0.8)
    Match.objects.create(a_id=ids[1], b_id=ids[2], kind="partial", distance=None, similarity=0.6)
    Decision.objects.create(a_id=ids[0], b_id=ids[1], verdict="duplicate")
    Decision.objects.create(a_id=ids[0], b_id=ids[1], verdict="not_duplicate")
    Decision.objects.create(a_id=ids[2], verdict="original")
    selectors.table_forget()
    t = selectors.match_table()
    assert t.article_id.tolist() == ids[:3]
    assert t.decision.tolist() == [REJECTED, UNDECIDED]
    assert t.distance.tolist() == [2, -1]
    assert t.length.tolist() == [100, 101, 102]
    assert t.chosen[2] > 0
    found = t.clustering(Bars())
    assert groups(found) == [{ids[1], ids[2]}]
    assert t.article_id[found.original[0]] == ids[2]
    assert selectors.match_table() is t  # nothing changed: the cached table
    Decision.objects.create(a_id=ids[2], b_id=ids[1], verdict="duplicate")
    again = selectors.match_table()
    assert again is not t and again.decision.tolist() == [REJECTED, DUPLICATE]
    assert t.decision.tolist() == [REJECTED, UNDECIDED]  # a copy: clusterings stay consistent
    assert vars(again)["rank"] is t.rank  # no new article: their order in time is kept
    Match.objects.create(a_id=ids[2], b_id=ids[3], kind="exact", distance=0, similarity=1.0)
    four = selectors.match_table()
    assert len(four.article_id) == 4 and four.rank.tolist() == [0, 1, 2, 3]


def test_rank_orders_nodes_by_date_then_id():
    t = table([(0, 1, "near", 1, 0.9), (1, 2, "near", 1, 0.9)], dated=[50, 20, 20])
    assert t.rank.tolist() == [2, 0, 1]
