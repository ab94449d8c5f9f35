"""The in-memory segment index answers every query exactly: all and only the stored
fingerprints within distance k, for every plan the planner can emit, checked by brute force."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dedup.engine.memindex import Hits, MemIndex
from dedup.engine.plan import Plan, PlanError

MAX = 2**64 - 1
fingerprints = st.integers(min_value=0, max_value=MAX)


def planner_plans() -> list[Plan]:
    """Every even plan for k_max 0..8 up to about 200 tables or 16 blocks, and uneven ones."""
    plans = []
    for k_max in range(0, 9):
        for blocks in range(k_max + 1, 17):
            if math.comb(blocks, blocks - k_max) > 220:
                break
            plans.append(Plan.even(blocks, k_max))
    plans += [
        Plan((20, 20, 12, 12), 3),
        Plan((12, 12, 20, 20), 3),
        Plan((40, 8, 8, 8), 3),
        Plan((1, 63), 1),
        Plan((63, 1), 1),
        Plan((3, 5, 7, 11, 13, 25), 2),
        Plan((2, 2, 2, 2, 56), 4),
    ]
    return plans


PLANS = planner_plans()


# --- data helpers ---------------------------------------------------------------------------


def block_bits(plan: Plan, block: int) -> list[int]:
    """Return the bit positions (0 = least significant) of one block."""
    start = plan.starts[block]
    return list(range(start, start + plan.widths[block]))


def flip_spread(rng: np.random.Generator, plan: Plan, value: int, k: int) -> int:
    """Return value with exactly k bits flipped, one in each of k distinct blocks."""
    assert k <= plan.blocks
    for block in rng.choice(plan.blocks, size=k, replace=False).tolist():
        value ^= 1 << int(rng.choice(block_bits(plan, block)))
    return value


def flip_in_one_block(rng: np.random.Generator, plan: Plan, value: int, k: int) -> int | None:
    """Return value with exactly k bits flipped, all in one block (None if no block is wide)."""
    wide = [b for b in range(plan.blocks) if plan.widths[b] >= k]
    if not wide:
        return None
    block = wide[int(rng.integers(len(wide)))]
    for bit in rng.choice(block_bits(plan, block), size=k, replace=False).tolist():
        value ^= 1 << int(bit)
    return value


def flip_outside_table(
    rng: np.random.Generator, plan: Plan, value: int, table: int, top: bool = False
) -> int:
    """Return value with one bit flipped in each of the k_max blocks that `table` leaves out
    (a random bit, or each block's top bit): at distance k_max, it shares a key with value in
    that table only."""
    for block in sorted(set(range(plan.blocks)) - set(plan.tables[table])):
        bit = block_bits(plan, block)[-1] if top else int(rng.choice(block_bits(plan, block)))
        value ^= 1 << bit
    return value


def blocks_touched(plan: Plan, diff: int) -> list[int]:
    return [b for b in range(plan.blocks) if any(diff >> i & 1 for i in block_bits(plan, b))]


def test_flip_helpers_flip_exactly_k_bits_where_told():
    rng = np.random.default_rng(1)
    plan = Plan.even(5, 3)
    for k in range(0, 6):
        value = int(rng.integers(0, 2**64, dtype=np.uint64))
        spread = flip_spread(rng, plan, value, k)
        assert (spread ^ value).bit_count() == k
        assert len(blocks_touched(plan, spread ^ value)) == k
        one = flip_in_one_block(rng, plan, value, k)
        assert (one ^ value).bit_count() == k
        assert len(blocks_touched(plan, one ^ value)) == min(k, 1)
    for t in range(plan.table_count):
        value = int(rng.integers(0, 2**64, dtype=np.uint64))
        for top in (False, True):
            other = flip_outside_table(rng, plan, value, t, top)
            assert (other ^ value).bit_count() == 3
            shared = [
                u for u in range(plan.table_count) if plan.key(value, u) == plan.key(other, u)
            ]
            assert shared == [t]


def make_data(plan: Plan, bases: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (ids, values): random fingerprints, near copies at every distance up to k_max + 1
    (spread over distinct blocks, and packed in one block), copies of the first base that share
    a key with it in one table only (one per table), exact copies, 0 and 2**64 - 1."""
    rng = np.random.default_rng(seed)
    values = [int(v) for v in rng.integers(0, 2**64, size=120, dtype=np.uint64)]
    for top in (False, True):
        values += [flip_outside_table(rng, plan, bases[0], t, top) for t in range(plan.table_count)]
    for base in [*bases, 0, MAX]:
        values.append(base)
        for _ in range(int(rng.integers(1, 4))):  # exact copies under other ids
            values.append(base)
        for k in range(1, min(plan.k_max + 1, plan.blocks) + 1):
            values.append(flip_spread(rng, plan, base, k))
            packed = flip_in_one_block(rng, plan, base, k)
            if packed is not None:
                values.append(packed)
    values = np.array(values, dtype=np.uint64)
    # ids are neither positions nor in order, so that a mix-up would show
    ids = rng.permutation(len(values)).astype(np.int64) * 7 + 1000
    return ids, values


def make_queries(plan: Plan, bases: list[int], values: np.ndarray, seed: int) -> np.ndarray:
    """Return queries: the bases, 0, 2**64 - 1, stored values, near copies of both, random."""
    rng = np.random.default_rng(seed + 1)
    queries = [*bases, 0, MAX]
    queries += [int(v) for v in rng.choice(values, size=8)]
    for base in [*bases[:3], int(values[0])]:
        for k in range(1, min(plan.k_max + 1, plan.blocks) + 1):
            queries.append(flip_spread(rng, plan, base, k))
    queries += [int(v) for v in rng.integers(0, 2**64, size=3, dtype=np.uint64)]
    return np.array(queries, dtype=np.uint64)


def brute(ids: np.ndarray, values: np.ndarray, query: int, k: int) -> list[tuple[int, int]]:
    """Return (id, distance) of every value within k of the query, nearest first."""
    d = np.bitwise_count(values ^ np.uint64(query))
    near = np.flatnonzero(d <= k)
    return sorted(
        zip(ids[near].tolist(), d[near].tolist(), strict=True), key=lambda h: (h[1], h[0])
    )


def brute_many(ids, values, queries, k) -> list[tuple[int, int, int]]:
    d = np.bitwise_count(values[None, :] ^ queries[:, None])
    q, j = np.nonzero(d <= k)
    return sorted(zip(q.tolist(), ids[j].tolist(), d[q, j].tolist(), strict=True))


def hits_list(hits: Hits) -> list[tuple[int, int, int]]:
    return sorted(zip(hits.query.tolist(), hits.id.tolist(), hits.distance.tolist(), strict=True))


def assert_exact(index: MemIndex, ids, values, queries, ks) -> None:
    """Check query and query_many against brute force for every query and every k."""
    for k in ks:
        for q in queries.tolist():
            assert index.query(q, k) == brute(ids, values, q, k), (q, k)
        hits = index.query_many(queries, k)
        assert hits.distance.dtype == np.uint8
        assert hits_list(hits) == brute_many(ids, values, queries, k), k


# --- the core property ----------------------------------------------------------------------


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.version)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bases=st.lists(fingerprints, min_size=1, max_size=5, unique=True),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
@example(bases=[0x0123456789ABCDEF], seed=0)
@example(bases=[1, 1 << 63, MAX - 1], seed=1)
def test_query_returns_all_and_only_fingerprints_within_k_for_every_plan(plan, bases, seed):
    ids, values = make_data(plan, bases, seed)
    index = MemIndex.build(plan, ids, values)
    queries = make_queries(plan, bases, values, seed)
    assert_exact(index, ids, values, queries, range(plan.k_max + 1))


@pytest.mark.parametrize(
    "plan", [Plan.even(4, 3), Plan.even(5, 3), Plan.even(3, 2), Plan.even(5, 4)], ids=str
)
def test_large_crowded_index_is_exact(plan):
    # Thousands of fingerprints, half of them sharing their top 32 bits: long runs per key and
    # a directory wider than 8 bits.
    rng = np.random.default_rng(17)
    spread = rng.integers(0, 2**64, size=6000, dtype=np.uint64)
    crowd = rng.integers(0, 2**32, size=6000, dtype=np.uint64) | np.uint64(0x9E3779B9 << 32)
    near = np.array(
        [flip_spread(rng, plan, int(v), int(rng.integers(0, plan.k_max + 2))) for v in crowd[:500]],
        dtype=np.uint64,
    )
    values = np.concatenate([spread, crowd, near, crowd[:300]])
    ids = np.arange(len(values), dtype=np.int64)[::-1].copy()
    index = MemIndex.build(plan, ids, values)
    queries = np.concatenate([crowd[:150], near[:100], spread[:50]])
    for k in range(plan.k_max + 1):
        assert hits_list(index.query_many(queries, k)) == brute_many(ids, values, queries, k)
        for q in queries[::10].tolist():
            assert index.query(q, k) == brute(ids, values, q, k)


DEEP_PLANS = [
    Plan.even(2, 0),
    Plan.even(16, 0),
    Plan.even(4, 1),
    Plan.even(3, 2),
    Plan.even(10, 2),
    Plan.even(4, 3),
    Plan.even(5, 3),
    Plan.even(6, 3),
    Plan.even(6, 4),
    Plan.even(8, 5),
    Plan.even(9, 8),
    Plan((20, 20, 12, 12), 3),
    Plan((3, 5, 7, 11, 13, 25), 2),
]


@pytest.mark.parametrize("plan", DEEP_PLANS, ids=lambda p: p.version)
def test_index_of_32k_fingerprints_with_a_15_bit_directory_is_exact(plan):
    # Enough fingerprints that the directory reaches into the second block of most keys, and
    # for every table, copies of the bases that share a key with them in that table only.
    rng = np.random.default_rng(plan.table_count)
    bases = [int(v) for v in rng.integers(0, 2**64, size=4, dtype=np.uint64)]
    values = [int(v) for v in rng.integers(0, 2**64, size=2**15, dtype=np.uint64)]
    for base in bases:
        for top in (False, True):
            values += [flip_outside_table(rng, plan, base, t, top) for t in range(plan.table_count)]
    values = np.array(values, dtype=np.uint64)
    ids = np.arange(len(values), dtype=np.int64) * 3
    index = MemIndex.build(plan, ids, values)
    queries = np.array([*bases, *values[:20].tolist()], dtype=np.uint64)
    for k in range(plan.k_max + 1):
        assert hits_list(index.query_many(queries, k)) == brute_many(ids, values, queries, k)
    for base in bases:
        assert index.query(base, plan.k_max) == brute(ids, values, base, plan.k_max)


def test_plan_list_covers_every_k_max_and_the_original_layouts():
    assert {p.k_max for p in PLANS} == set(range(9))
    assert Plan.even(4, 3) in PLANS
    assert Plan.even(5, 3) in PLANS
    assert Plan.even(16, 0) in PLANS
    assert Plan.even(16, 2) in PLANS
    assert max(p.table_count for p in PLANS) >= 200


@pytest.mark.parametrize("plan", [Plan.even(4, 3), Plan.even(5, 3), Plan((20, 20, 12, 12), 3)])
def test_near_copies_at_exactly_k_spread_over_k_blocks_are_found_at_k_not_below(plan):
    rng = np.random.default_rng(3)
    base = int(rng.integers(0, 2**64, dtype=np.uint64))
    copies = [flip_spread(rng, plan, base, k) for k in range(4)]
    index = MemIndex.build(plan, np.arange(4), np.array(copies, dtype=np.uint64))
    for k in range(4):
        assert index.query(base, k) == [(i, i) for i in range(k + 1)]


def test_query_results_are_nearest_first_then_by_id():
    plan = Plan.even(4, 3)
    base = 0xFFFF_0000_FFFF_0000
    values = [base ^ 0b111, base, base ^ (1 << 40), base ^ 0b11 ^ (1 << 63), base]
    index = MemIndex.build(plan, [50, 40, 30, 20, 10], np.array(values, dtype=np.uint64))
    assert index.query(base, 3) == [(10, 0), (40, 0), (30, 1), (20, 3), (50, 3)]


def test_query_accepts_python_ints_and_numpy_uint64_above_2_63():
    plan = Plan.even(5, 3)
    values = np.array([MAX, MAX ^ 1, 1 << 63], dtype=np.uint64)
    index = MemIndex.build(plan, [1, 2, 3], values)
    assert index.query(MAX, 1) == [(1, 0), (2, 1)]
    assert index.query(np.uint64(MAX), 1) == [(1, 0), (2, 1)]
    assert index.query(1 << 63, 0) == [(3, 0)]


def test_query_many_in_small_chunks_numbers_queries_from_the_start():
    plan = Plan.even(5, 3)
    ids, values = make_data(plan, [12345, 2**60 + 7], 11)
    index = MemIndex.build(plan, ids, values)
    queries = make_queries(plan, [12345, 2**60 + 7], values, 11)
    for chunk in (1, 7, len(queries), 4096):
        hits = index.query_many(queries, 3, chunk=chunk)
        assert hits_list(hits) == brute_many(ids, values, queries, 3)


def test_query_many_of_no_queries_is_empty():
    index = MemIndex.build(Plan.even(4, 3), [1], np.array([5], dtype=np.uint64))
    hits = index.query_many(np.empty(0, np.uint64), 3)
    assert len(hits.query) == len(hits.id) == len(hits.distance) == 0


def test_empty_index_finds_nothing():
    index = MemIndex(Plan.even(5, 3))
    assert len(index) == 0
    assert index.query(0, 3) == []
    assert hits_list(index.query_many(np.array([0, MAX], dtype=np.uint64), 3)) == []
    assert MemIndex.build(Plan.even(5, 3), [], []).query(MAX, 3) == []


# --- k outside the plan ---------------------------------------------------------------------


@pytest.mark.parametrize("k", [4, 5, 64, -1])
def test_k_outside_0_to_k_max_raises_plan_error(k):
    index = MemIndex.build(Plan.even(4, 3), [1], np.array([5], dtype=np.uint64))
    with pytest.raises(PlanError, match=f"k={k} is outside 0..3") as info:
        index.query(5, k)
    assert "p1-k3-16.16.16.16" in str(info.value)
    with pytest.raises(PlanError, match=f"k={k} is outside 0..3"):
        index.query_many(np.array([5], dtype=np.uint64), k)
