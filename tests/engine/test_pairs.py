"""All pairs within distance k over a corpus, and clusters of copies, checked by brute force."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dedup.engine.pairs import Cluster, Pairs, clusters, pairs, plan_for_pairs
from dedup.engine.plan import MAX_TABLES, Plan, PlanError
from tests.engine.by_sets import stars_by_a_loop

MAX = 2**64 - 1
fingerprints = st.integers(min_value=0, max_value=MAX)


# --- helpers --------------------------------------------------------------------------------


def brute_pairs(values: np.ndarray, k: int) -> list[tuple[int, int, int]]:
    """Return the upper triangle of the distance matrix within k: (a, b, distance), a < b."""
    values = np.asarray(values, dtype=np.uint64)
    d = np.bitwise_count(values[:, None] ^ values[None, :])
    a, b = np.triu_indices(len(values), 1)
    near = d[a, b] <= k
    return list(zip(a[near].tolist(), b[near].tolist(), d[a, b][near].tolist(), strict=True))


def as_list(found: Pairs) -> list[tuple[int, int, int]]:
    return list(zip(found.a.tolist(), found.b.tolist(), found.distance.tolist(), strict=True))


def flip(rng: np.random.Generator, value: int, bits: int, avoid: int = 0) -> int:
    """Return value with exactly `bits` bits flipped, none of them in the mask `avoid`."""
    free = [i for i in range(64) if not avoid >> i & 1]
    for i in rng.choice(free, size=bits, replace=False).tolist():
        value ^= 1 << int(i)
    return value


def corpus(bases: list[int], groups: list[int], seed: int) -> np.ndarray:
    """Random fingerprints, groups of exact copies, near copies at 1..6 bits, and chains
    A - B - C with A and C twice as far apart as each link; shuffled."""
    rng = np.random.default_rng(seed)
    values = [int(v) for v in rng.integers(0, 2**64, size=40, dtype=np.uint64)]
    values += bases
    pool = [*bases, *values[:10]]
    values += [values[0], values[0]]  # always some exact copies
    for size in groups:
        values += [pool[int(rng.integers(len(pool)))]] * size
    for base in pool[:6]:
        values += [flip(rng, base, bits) for bits in range(1, 7)]
    for base, step in zip(pool[:6], [1, 2, 3, 2, 3, 1], strict=False):
        b = flip(rng, base, step)
        c = flip(rng, b, step, avoid=base ^ b)  # A - C is exactly 2 * step
        values += [b, c]  # A is already in the corpus
    values = np.array(values, dtype=np.uint64)
    return values[rng.permutation(len(values))]


def plans_for(k: int) -> list[Plan | None]:
    plans = [None, Plan.even(k + 1, k), Plan.even(k + 2, k), Plan.even(6, 5), Plan.even(8, 5)]
    if k <= 3:
        plans += [Plan((20, 20, 12, 12), 3), Plan.even(5, 3)]
    if k == 0:
        plans += [Plan.even(1, 0)]
    return plans


def check_clusters(values: np.ndarray, k: int, order: np.ndarray | None) -> list[Cluster]:
    """Check clusters() against centre clustering by a plain loop over the brute-force pairs
    (nodes in time order); return them."""
    values = np.asarray(values, dtype=np.uint64)
    n = len(values)
    rank = np.arange(n) if order is None else np.asarray(order)
    expected = brute_pairs(values, k)
    centre = stars_by_a_loop(n, [(a, b) for a, b, _ in expected], rank.tolist())
    stories: dict[int, set[int]] = {}
    for x in range(n):
        stories.setdefault(centre[x], set()).add(x)
    found = clusters(values, pairs(values, k), order)
    assert {frozenset(c.members.tolist()) for c in found} == {
        frozenset(g) for g in stories.values() if len(g) > 1
    }
    for c in found:
        members = c.members.tolist()
        assert c.original == members[0] == min(members, key=lambda m: rank[m])
        assert [rank[m] for m in members] == sorted(rank[m] for m in members)
        exact = [(int(values[m]) ^ int(values[c.original])).bit_count() for m in members]
        assert c.distance.tolist() == exact and max(exact) <= k  # no chain
        assert c.linked_to[0] == -1 and c.linked_distance[0] == 0
        assert set(c.linked_to[1:].tolist()) <= {c.original}
        assert c.linked_distance[1:].tolist() == exact[1:]
    assert [rank[c.original] for c in found] == sorted(rank[c.original] for c in found)
    return found


# --- pairs: the core property ---------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bases=st.lists(fingerprints, min_size=0, max_size=6),
    groups=st.lists(st.integers(min_value=2, max_value=20), max_size=5),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
@example(bases=[0, MAX], groups=[20, 2], seed=0)
@example(bases=[], groups=[], seed=1)
def test_pairs_equal_the_brute_force_upper_triangle_for_every_k_and_plan(bases, groups, seed):
    values = corpus(bases, groups, seed)
    for k in range(0, 6):
        expected = brute_pairs(values, k)
        for plan in plans_for(k):
            found = pairs(values, k, plan=plan)
            assert found.a.dtype == found.b.dtype == np.int64
            assert found.distance.dtype == np.uint8
            assert as_list(found) == expected, (k, plan)
            assert len(found) == len(expected)


@pytest.mark.parametrize("k", range(0, 6))
def test_pairs_of_empty_and_one_element_inputs_are_empty(k):
    for values in ([], [12345], [MAX]):
        assert as_list(pairs(np.array(values, dtype=np.uint64), k)) == []


def test_pairs_of_two_far_values_is_empty_and_of_two_copies_is_one_pair():
    assert as_list(pairs(np.array([0, MAX], dtype=np.uint64), 5)) == []
    assert as_list(pairs(np.array([MAX, MAX], dtype=np.uint64), 0)) == [(0, 1, 0)]


def test_many_exact_copies_pair_every_position_once():
    rng = np.random.default_rng(2)
    values = np.concatenate(
        [np.full(300, 0xABCD, dtype=np.uint64), rng.integers(0, 2**64, 50, dtype=np.uint64)]
    )
    values = values[rng.permutation(len(values))]
    found = pairs(values, 3)
    assert as_list(found) == brute_pairs(values, 3)
    copies = np.flatnonzero(values == np.uint64(0xABCD))
    assert np.sum(np.isin(found.a, copies) & np.isin(found.b, copies)) == math.comb(300, 2)


def test_copies_of_two_near_values_pair_across_both_groups():
    values = np.array([5, 4, 5, 4, 5, 99 << 40], dtype=np.uint64)  # 5 ^ 4 = 1 bit
    assert as_list(pairs(values, 1)) == [
        (0, 1, 1),
        (0, 2, 0),
        (0, 3, 1),
        (0, 4, 0),
        (1, 2, 1),
        (1, 3, 0),
        (1, 4, 1),
        (2, 3, 1),
        (2, 4, 0),
        (3, 4, 1),
    ]
    assert as_list(pairs(values, 0)) == [(0, 2, 0), (0, 4, 0), (1, 3, 0), (2, 4, 0)]


def test_chain_pairs_only_its_links():
    a, b, c = 0, 0b111, 0b111111  # a - b: 3, b - c: 3, a - c: 6
    values = np.array([a, b, c], dtype=np.uint64)
    assert as_list(pairs(values, 3)) == [(0, 1, 3), (1, 2, 3)]
    assert as_list(pairs(values, 5)) == [(0, 1, 3), (1, 2, 3)]
    assert as_list(pairs(values, 2)) == []


@pytest.mark.parametrize(("k", "plan"), [(4, Plan.even(4, 3)), (1, Plan.even(1, 0))])
def test_pairs_refuse_k_above_the_plans_k_max(k, plan):
    with pytest.raises(PlanError, match=f"k={k} is above the plan's k_max={plan.k_max}"):
        pairs(np.array([1, 2, 3], dtype=np.uint64), k, plan=plan)


def test_progress_is_called_once_per_table_with_the_count_done():
    seen = []
    plan = Plan.even(5, 3)
    pairs(np.arange(100, dtype=np.uint64), 3, plan=plan, progress=seen.append)
    assert seen == list(range(1, plan.table_count + 1))


# --- plan_for_pairs -------------------------------------------------------------------------


def candidates(plan: Plan, n: int) -> float:
    return sum(n * n / 2 ** (bits + 1) for bits in plan.key_bits)


@pytest.mark.parametrize("k", range(0, 9))
@pytest.mark.parametrize("n", [0, 1, 10, 1000, 10**5, 10**7, 10**9])
def test_plan_for_pairs_picks_the_even_plan_with_least_work(n, k):
    plan = plan_for_pairs(n, k)
    assert plan.k_max == k
    assert plan.widths == Plan.even(plan.blocks, k).widths
    assert plan.table_count <= MAX_TABLES
    work = plan.table_count * n + candidates(plan, n)
    for blocks in range(k + 1, 65):
        if math.comb(blocks, blocks - k) > MAX_TABLES:
            break
        other = Plan.even(blocks, k)
        assert work <= other.table_count * n + candidates(other, n)


@pytest.mark.parametrize(
    ("n", "k"),
    [(n, k) for k in range(0, 3) for n in (1, 10, 1000, 10**5, 10**6)]
    + [(n, 3) for n in (1, 10, 1000, 10**4)]
    + [(1000, 4), (100, 5), (10, 6)],
)
def test_plan_for_pairs_expects_at_most_n_candidate_pairs_for_small_corpora(n, k):
    assert candidates(plan_for_pairs(n, k), n) <= max(n, 1)


def test_plan_for_pairs_with_k3_uses_the_original_layouts():
    assert plan_for_pairs(1000, 3) == Plan.even(4, 3)
    assert plan_for_pairs(10**8, 3).blocks >= 5


def test_pairs_use_plan_for_pairs_by_default():
    values = np.arange(50, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    seen = []
    pairs(values, 2, progress=seen.append)
    assert seen[-1] == plan_for_pairs(50, 2).table_count


# --- clusters -------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bases=st.lists(fingerprints, min_size=0, max_size=6),
    groups=st.lists(st.integers(min_value=2, max_value=20), max_size=5),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    k=st.integers(min_value=0, max_value=5),
)
@example(bases=[0, MAX], groups=[20, 2], seed=0, k=3)
def test_clusters_are_stars_around_the_earliest_unclaimed(bases, groups, seed, k):
    values = corpus(bases, groups, seed)
    check_clusters(values, k, None)
    rng = np.random.default_rng(seed)
    check_clusters(values, k, rng.permutation(len(values)))  # explicit ranks in time
    check_clusters(values, k, np.arange(len(values))[::-1])  # latest position first


def test_a_chain_is_no_cluster_beyond_k_of_its_original():
    values = np.array([0b111111, 0xFFFF << 40, 0b111, 0], dtype=np.uint64)  # c, far, b, a
    (cluster,) = clusters(values, pairs(values, 3))
    assert cluster.original == 0
    assert cluster.members.tolist() == [0, 2]  # a is 6 from c: its pair with b is a link
    assert cluster.distance.tolist() == [0, 3]
    assert cluster.linked_to.tolist() == [-1, 0]
    assert cluster.linked_distance.tolist() == [0, 3]
    # ranked by time the other way round, a is the original and c is left out
    (cluster,) = clusters(values, pairs(values, 3), order=np.array([3, 0, 2, 1]))
    assert cluster.original == 3
    assert cluster.members.tolist() == [3, 2]
    assert cluster.distance.tolist() == [0, 3]
    assert cluster.linked_to.tolist() == [-1, 3]


def test_clusters_are_ordered_by_their_originals_rank():
    values = np.array([7, 0xFF << 40, 7, 0xFF << 40, MAX, MAX], dtype=np.uint64)
    found = clusters(values, pairs(values, 0))
    assert [c.original for c in found] == [0, 1, 4]
    assert [c.members.tolist() for c in found] == [[0, 2], [1, 3], [4, 5]]
    found = clusters(values, pairs(values, 0), order=np.array([5, 4, 3, 2, 1, 0]))
    assert [c.original for c in found] == [5, 3, 2]
    assert [c.members.tolist() for c in found] == [[5, 4], [3, 1], [2, 0]]


def test_clusters_leave_out_positions_without_a_near_copy():
    values = np.array([1, 0xFFFF << 30, 1, MAX], dtype=np.uint64)
    found = clusters(values, pairs(values, 2))
    assert [c.members.tolist() for c in found] == [[0, 2]]


@pytest.mark.parametrize("values", [[], [12345], [0, MAX], [0, 0xFF << 20, 0xFF << 40]])
def test_clusters_of_input_without_pairs_is_empty(values):
    # BUG (fails): with no pairs, np.split(empty, []) yields one empty group and clusters()
    # raises "IndexError: index 0 is out of bounds for axis 0 with size 0" at members[0].
    values = np.array(values, dtype=np.uint64)
    assert clusters(values, pairs(values, 3)) == []
