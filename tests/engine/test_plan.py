"""Index plans: block widths, tables, keys, and the planner's choice for n and k_max."""

import math
import re
from itertools import combinations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dedup.engine.memindex import MemIndex
from dedup.engine.pairs import pairs
from dedup.engine.plan import MAX_TABLES, Plan, PlanError

MAX = 2**64 - 1
fingerprints = st.integers(min_value=0, max_value=MAX)

# A spread of plans: even ones of every shape the tests can afford, plus uneven widths.
SAMPLE_PLANS = [
    Plan.even(1, 0),
    Plan.even(4, 0),
    Plan.even(64, 0),
    Plan.even(2, 1),
    Plan.even(4, 3),
    Plan.even(5, 3),
    Plan.even(6, 3),
    Plan.even(7, 2),
    Plan.even(9, 8),
    Plan.even(11, 4),
    Plan((20, 20, 12, 12), 3),
    Plan((1, 63), 1),
    Plan((63, 1), 0),
    Plan((3, 5, 7, 11, 13, 25), 2),
]


def bit_string_key(plan: Plan, value: int, table: int) -> int:
    """Return the key built from the bit string: the table's blocks, concatenated in order."""
    bits = format(value, "064b")
    cuts = np.concatenate([[0], np.cumsum(plan.widths)]).tolist()
    blocks = [bits[cuts[i] : cuts[i + 1]] for i in range(plan.blocks)]
    return int("".join(blocks[b] for b in plan.tables[table]), 2)


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("widths", "k_max", "message"),
    [
        ((16, 16, 16), 1, "add up to 64"),
        ((16, 16, 16, 17), 1, "add up to 64"),
        ((32, 32, 0), 1, "positive"),
        ((33, 32, -1), 1, "positive"),
        ((), 0, "add up to 64"),
        ((64,), 1, "use at least 2"),
        ((16, 16, 16, 16), 4, "use at least 5"),
        ((16, 16, 16, 16), 5, "use at least 6"),
        ((32, 32), -1, "k_max=-1"),
    ],
)
def test_plan_refuses_bad_widths_and_k_max(widths, k_max, message):
    with pytest.raises(PlanError, match=re.escape(message)):
        Plan(widths, k_max)


def test_plan_error_is_a_value_error():
    assert issubclass(PlanError, ValueError)


@pytest.mark.parametrize(("blocks", "k_max"), [(16, 8), (15, 7), (20, 5), (64, 3)])
def test_plan_with_too_many_tables_is_refused_with_count_limit_and_advice(blocks, k_max):
    tables = math.comb(blocks, blocks - k_max)
    assert tables > MAX_TABLES
    with pytest.raises(PlanError) as info:
        Plan.even(blocks, k_max)
    message = str(info.value)
    assert f"{tables:,} tables" in message
    assert f"{MAX_TABLES:,}" in message
    assert "fewer blocks" in message


def test_plan_at_the_table_limit_is_accepted():
    # C(32, 3) = 4,960 tables: the largest k_max=3 plan under the limit.
    assert Plan.even(32, 3).table_count == 4960 <= MAX_TABLES
    with pytest.raises(PlanError):
        Plan.even(33, 3)


@pytest.mark.parametrize("blocks", [0, -1, 65, 100])
def test_even_refuses_block_counts_outside_1_to_64(blocks):
    with pytest.raises(PlanError, match="from 1 to 64"):
        Plan.even(blocks, 0)


def test_widths_are_normalised_to_python_ints():
    plan = Plan(tuple(np.array([16, 16, 16, 16])), 3)
    assert plan.widths == (16, 16, 16, 16)
    assert all(type(w) is int for w in plan.widths)
    assert plan == Plan((16, 16, 16, 16), 3)


# --- shape ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocks", "widths"),
    [
        (1, (64,)),
        (2, (32, 32)),
        (3, (22, 21, 21)),
        (4, (16, 16, 16, 16)),
        (5, (13, 13, 13, 13, 12)),
        (6, (11, 11, 11, 11, 10, 10)),
        (7, (10, 9, 9, 9, 9, 9, 9)),
        (10, (7, 7, 7, 7, 6, 6, 6, 6, 6, 6)),
        (16, (4,) * 16),
        (64, (1,) * 64),
    ],
)
def test_even_widths_are_as_even_as_possible_wider_first(blocks, widths):
    assert Plan.even(blocks, 0).widths == widths


@pytest.mark.parametrize("blocks", range(1, 65))
def test_even_widths_sum_to_64_and_differ_by_at_most_one(blocks):
    widths = Plan.even(blocks, 0).widths
    assert len(widths) == blocks
    assert sum(widths) == 64
    assert max(widths) - min(widths) <= 1
    assert list(widths) == sorted(widths, reverse=True)


@pytest.mark.parametrize(
    ("blocks", "k_max"),
    [(b, k) for k in range(0, 9) for b in range(k + 1, 17) if math.comb(b, b - k) <= MAX_TABLES],
)
def test_tables_are_every_choice_of_b_minus_k_distinct_blocks(blocks, k_max):
    plan = Plan.even(blocks, k_max)
    assert plan.blocks == blocks
    assert plan.table_count == math.comb(blocks, blocks - k_max) == len(plan.tables)
    assert len(set(plan.tables)) == plan.table_count
    for table in plan.tables:
        assert len(table) == blocks - k_max
        assert len(set(table)) == len(table)
        assert list(table) == sorted(table)
        assert all(0 <= b < blocks for b in table)


def test_any_k_max_blocks_are_left_out_of_some_table():
    # The pigeonhole guarantee: whichever k_max blocks differ, one table keys on the others.
    plan = Plan.even(6, 3)
    for differing in map(set, combinations(range(6), 3)):
        assert any(not differing & set(table) for table in plan.tables)


@pytest.mark.parametrize(
    ("plan", "key_bits"),
    [
        (Plan.even(4, 3), (16, 16, 16, 16)),
        (Plan.even(5, 3), (26, 26, 26, 25, 26, 26, 25, 26, 25, 25)),
        (Plan.even(4, 0), (64,)),
        (Plan.even(2, 1), (32, 32)),
        (Plan((20, 20, 12, 12), 3), (20, 20, 12, 12)),
        (Plan((20, 20, 12, 12), 2), (40, 32, 32, 32, 32, 24)),
        (Plan((1, 63), 1), (1, 63)),
    ],
)
def test_key_bits_are_the_widths_of_each_tables_blocks(plan, key_bits):
    assert plan.key_bits == key_bits
    assert plan.key_bits == tuple(sum(plan.widths[b] for b in t) for t in plan.tables)


@pytest.mark.parametrize(
    ("plan", "starts"),
    [
        (Plan.even(4, 3), (48, 32, 16, 0)),
        (Plan.even(5, 3), (51, 38, 25, 12, 0)),
        (Plan((1, 63), 1), (63, 0)),
        (Plan.even(1, 0), (0,)),
    ],
)
def test_block_zero_holds_the_highest_bits(plan, starts):
    assert plan.starts == starts


# --- version --------------------------------------------------------------------------------


def test_version_is_stable_for_equal_plans():
    assert Plan.even(5, 3).version == Plan((13, 13, 13, 13, 12), 3).version
    assert Plan.even(5, 3).version == Plan.even(5, 3).version
    assert Plan.even(4, 3).version == "p1-k3-16.16.16.16"


def test_version_differs_whenever_widths_or_k_max_differ():
    plans = {
        Plan.even(b, k) for k in range(0, 9) for b in range(k + 1, 17) if math.comb(b, k) <= 5000
    }
    plans |= {
        Plan((20, 20, 12, 12), 3),
        Plan((12, 12, 20, 20), 3),
        Plan((20, 20, 12, 12), 2),
        Plan((12, 20, 20, 12), 3),
        Plan((1, 63), 1),
        Plan((63, 1), 1),
        Plan((63, 1), 0),
    }
    versions = {p.version for p in plans}
    assert len(versions) == len(plans)


# --- keys -----------------------------------------------------------------------------------


@pytest.mark.parametrize("plan", SAMPLE_PLANS, ids=lambda p: p.version)
@settings(max_examples=25, deadline=None)
@given(values=st.lists(fingerprints, min_size=1, max_size=20))
@example(values=[0, MAX, 1, 1 << 63, 0x0123456789ABCDEF])
def test_keys_numpy_equals_key_python_equals_bit_string_construction(plan, values):
    keys = plan.keys(np.array(values, dtype=np.uint64))
    assert keys.shape == (plan.table_count, len(values))
    assert keys.dtype == np.uint64
    for t in range(plan.table_count):
        for i, value in enumerate(values):
            expected = bit_string_key(plan, value, t)
            assert plan.key(value, t) == expected
            assert int(keys[t, i]) == expected
            assert expected < 2 ** plan.key_bits[t]
        assert plan.keys(np.array(values, dtype=np.uint64), t).tolist() == keys[t].tolist()


def test_keys_of_an_empty_array_have_one_row_per_table():
    plan = Plan.even(5, 3)
    assert plan.keys(np.empty(0, np.uint64)).shape == (10, 0)


def test_keys_of_the_4_block_plan_are_the_16_bit_quarters():
    value = 0x1111_2222_3333_4444
    plan = Plan.even(4, 3)
    assert [plan.key(value, t) for t in range(4)] == [0x1111, 0x2222, 0x3333, 0x4444]


def test_keys_of_k_max_0_are_the_value_itself():
    values = np.array([0, 1, MAX, 0xDEADBEEF << 20], dtype=np.uint64)
    for blocks in (1, 3, 8, 64):
        assert np.array_equal(Plan.even(blocks, 0).keys(values)[0], values)


def test_fingerprints_within_k_max_share_a_key_in_some_table():
    plan = Plan.even(5, 3)
    rng = np.random.default_rng(7)
    for _ in range(200):
        a = int(rng.integers(0, 2**64, dtype=np.uint64))
        bits = rng.choice(64, size=3, replace=False)
        b = a ^ sum(1 << int(x) for x in bits)
        assert any(plan.key(a, t) == plan.key(b, t) for t in range(plan.table_count))


def test_the_memory_index_and_all_pairs_key_fingerprints_with_the_plans_keys(monkeypatch):
    # Keys of the inverted fingerprints: another key function, with the same pigeonhole
    # property. Answers stay exact only if every part of the engine keys with Plan.keys.
    calls = []
    plain = Plan.keys

    def inverted(self, values, table=None):
        calls.append(table)
        return plain(self, ~np.asarray(values, dtype=np.uint64), table)

    monkeypatch.setattr(Plan, "keys", inverted)
    plan = Plan.even(5, 3)
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2**64, 300, dtype=np.uint64)
    values[150:] = values[:150] ^ np.uint64(0b1011 << 20)
    index = MemIndex.build(plan, np.arange(300), values)
    built = len(calls)
    assert index.query(int(values[0]), 3) == [(0, 0), (150, 3)]
    hits = index.query_many(values[:150], 3)
    assert sorted(zip(hits.query.tolist(), hits.id.tolist(), strict=True)) == [
        pair for i in range(150) for pair in ((i, i), (i, i + 150))
    ]
    found = pairs(values, 3, plan=plan)
    assert list(zip(found.a.tolist(), found.b.tolist(), strict=True)) == [
        (i, i + 150) for i in range(150)
    ]
    assert built >= plan.table_count and len(calls) > built + plan.table_count
