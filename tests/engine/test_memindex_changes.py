"""The in-memory segment index changed, kept and watched: additions and removals keep it
exact, it saves and loads with identical answers (refusing files that are not an index), and
it reports hot buckets and sizes."""

import numpy as np
import pytest

from dedup.engine import memindex
from dedup.engine.memindex import MemIndex
from dedup.engine.plan import Plan
from tests.engine.test_memindex import assert_exact, hits_list, make_data, make_queries

# --- additions ------------------------------------------------------------------------------

SOME_PLANS = [Plan.even(4, 3), Plan.even(5, 3), Plan((20, 20, 12, 12), 3), Plan.even(1, 0)]


@pytest.mark.parametrize("plan", SOME_PLANS, ids=lambda p: p.version)
def test_add_after_build_waits_in_pending_and_is_found(plan):
    bases = [0xABCDEF0123456789, 42]
    ids, values = make_data(plan, bases, 5)
    half = len(ids) // 2
    index = MemIndex.build(plan, ids[:half], values[:half])
    index.add(ids[half:], values[half:])
    assert index.stats()["pending"] == len(ids) - half
    assert len(index) == len(ids)
    queries = make_queries(plan, bases, values, 5)
    assert_exact(index, ids, values, queries, range(plan.k_max + 1))


@pytest.mark.parametrize("plan", SOME_PLANS, ids=lambda p: p.version)
def test_add_after_compact_is_found_and_compact_merges_pending(plan):
    bases = [7, 0x8000_0000_0000_0001]
    ids, values = make_data(plan, bases, 6)
    third = len(ids) // 3
    index = MemIndex.build(plan, ids[:third], values[:third])
    index.add(ids[third : 2 * third], values[third : 2 * third])
    index.compact()
    assert index.stats()["pending"] == 0
    assert len(index) == 2 * third
    queries = make_queries(plan, bases, values, 6)
    assert_exact(index, ids[: 2 * third], values[: 2 * third], queries, range(plan.k_max + 1))
    index.add(ids[2 * third :], values[2 * third :])
    assert_exact(index, ids, values, queries, range(plan.k_max + 1))
    index.compact()
    assert_exact(index, ids, values, queries, range(plan.k_max + 1))


def test_add_into_an_empty_index_is_searchable():
    plan = Plan.even(5, 3)
    ids, values = make_data(plan, [99], 8)
    index = MemIndex(plan)
    index.add(ids, values)
    queries = make_queries(plan, [99], values, 8)
    assert_exact(index, ids, values, queries, range(4))


def test_many_additions_compact_automatically(monkeypatch):
    monkeypatch.setattr(memindex, "PENDING_LIMIT", 10)
    plan = Plan.even(5, 3)
    ids, values = make_data(plan, [3, 4], 9)
    index = MemIndex(plan)
    for start in range(0, len(ids), 7):
        index.add(ids[start : start + 7], values[start : start + 7])
        assert index.stats()["pending"] <= 10 + 7
    assert index.stats()["distinct"] > 0  # some went into the tables
    assert len(index) == len(ids)
    assert_exact(index, ids, values, make_queries(plan, [3, 4], values, 9), range(4))


def test_an_id_added_twice_is_returned_twice():
    index = MemIndex.build(Plan.even(4, 3), [1], np.array([100], dtype=np.uint64))
    index.add([1], [100])
    assert index.query(100, 0) == [(1, 0), (1, 0)]
    index.compact()
    assert index.query(100, 0) == [(1, 0), (1, 0)]


def test_add_refuses_mismatched_lengths():
    index = MemIndex(Plan.even(4, 3))
    with pytest.raises(ValueError, match="2 ids for 3 fingerprints"):
        index.add([1, 2], [1, 2, 3])


# --- removals -------------------------------------------------------------------------------


def test_removed_ids_are_never_returned_and_their_copies_still_are():
    plan = Plan.even(5, 3)
    same = 0x1234_5678_9ABC_DEF0
    values = np.array([same, same, same, same ^ 1, same ^ 0b111, 77], dtype=np.uint64)
    ids = np.array([1, 2, 3, 4, 5, 6])
    index = MemIndex.build(plan, ids, values)
    assert index.remove([2, 4]) == 2
    for k in range(4):
        found = index.query(same, k)
        assert 2 not in {i for i, _ in found} and 4 not in {i for i, _ in found}
    assert index.query(same, 3) == [(1, 0), (3, 0), (5, 3)]
    assert len(index) == 4
    hits = index.query_many(np.array([same, same ^ 1], dtype=np.uint64), 1)
    assert hits_list(hits) == [(0, 1, 0), (0, 3, 0), (1, 1, 1), (1, 3, 1)]


def test_removing_every_copy_of_a_fingerprint_removes_it():
    plan = Plan.even(4, 3)
    values = np.array([5, 5, 5, 9], dtype=np.uint64)
    index = MemIndex.build(plan, [1, 2, 3, 4], values)
    assert index.remove([1, 2, 3]) == 3  # over a quarter: compacts
    assert index.query(5, 3) == [(4, 2)]
    assert index.stats()["distinct"] == 1


def test_remove_reaches_pending_additions_and_counts_entries():
    plan = Plan.even(5, 3)
    stored = np.random.default_rng(16).integers(0, 2**64, size=100, dtype=np.uint64)
    index = MemIndex.build(plan, np.arange(100), stored)
    index.add([500, 501, 500], [stored[3], stored[3] ^ np.uint64(1), stored[4]])
    assert index.remove([500, 3, 12345]) == 3  # two pending entries of id 500, and id 3
    assert index.query(int(stored[3]), 3) == [(501, 1)]
    assert index.query(int(stored[4]), 3) == [(4, 0)]
    assert len(index) == 100 - 1 + 1
    assert index.remove([12345]) == 0
    assert index.remove([3]) == 0  # already gone


@pytest.mark.parametrize("plan", SOME_PLANS, ids=lambda p: p.version)
def test_remove_then_compact_and_add_keeps_answers_exact(plan):
    bases = [0xFEDCBA9876543210, 1 << 40]
    ids, values = make_data(plan, bases, 10)
    index = MemIndex.build(plan, ids, values)
    rng = np.random.default_rng(10)
    gone = rng.choice(ids, size=len(ids) // 10, replace=False)
    index.remove(gone)
    keep = ~np.isin(ids, gone)
    queries = make_queries(plan, bases, values, 10)
    assert_exact(index, ids[keep], values[keep], queries, range(plan.k_max + 1))
    more = rng.choice(ids[keep], size=len(ids) // 5, replace=False)  # past a quarter: compacts
    index.remove(more)
    keep &= ~np.isin(ids, more)
    assert index.stats()["entries"] == keep.sum()
    assert_exact(index, ids[keep], values[keep], queries, range(plan.k_max + 1))
    back = np.isin(ids, gone)
    index.add(ids[back], values[back])  # removed ids may come back
    keep |= back
    assert_exact(index, ids[keep], values[keep], queries, range(plan.k_max + 1))


# --- persistence ----------------------------------------------------------------------------


@pytest.mark.parametrize("plan", SOME_PLANS, ids=lambda p: p.version)
def test_save_and_load_round_trip_gives_identical_answers(plan, tmp_path):
    bases = [31337, 0xCAFEBABE_DEADBEEF]
    ids, values = make_data(plan, bases, 12)
    index = MemIndex.build(plan, ids[:-20], values[:-20])
    index.add(ids[-20:], values[-20:])
    index.remove(ids[:5])
    queries = make_queries(plan, bases, values, 12)
    before = [
        ([index.query(q, k) for q in queries.tolist()], hits_list(index.query_many(queries, k)))
        for k in range(plan.k_max + 1)
    ]
    index.save(tmp_path / "index.npz")
    stats = index.stats()  # saving compacts: pending additions and removals are merged
    assert stats["pending"] == 0
    loaded = MemIndex.load(tmp_path / "index.npz")
    assert loaded.plan == plan
    assert len(loaded) == len(ids) - 5
    after = [
        ([loaded.query(q, k) for q in queries.tolist()], hits_list(loaded.query_many(queries, k)))
        for k in range(plan.k_max + 1)
    ]
    assert after == before
    assert loaded.stats() == stats
    assert_exact(loaded, ids[5:], values[5:], queries, range(plan.k_max + 1))


def test_save_and_load_an_empty_index(tmp_path):
    MemIndex(Plan.even(5, 3)).save(tmp_path / "empty.npz")
    loaded = MemIndex.load(tmp_path / "empty.npz")
    assert loaded.plan == Plan.even(5, 3)
    assert len(loaded) == 0
    assert loaded.query(0, 3) == []


def test_saved_index_loads_from_the_same_path_whatever_its_suffix(tmp_path):
    index = MemIndex.build(Plan.even(4, 3), [1, 2], np.array([10, 11], dtype=np.uint64))
    index.save(tmp_path / "index.idx")
    assert [p.name for p in tmp_path.iterdir()] == ["index.idx"]
    assert MemIndex.load(tmp_path / "index.idx").query(10, 1) == [(1, 0), (2, 1)]


def test_npz_that_is_not_an_index_is_refused_with_a_clear_message(tmp_path):
    np.savez(tmp_path / "other.npz", values=np.arange(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="is not a dedup index file"):
        MemIndex.load(tmp_path / "other.npz")
    np.savez(tmp_path / "future.npz", format=np.array("dedup-memindex-99"))
    with pytest.raises(ValueError, match="is not a dedup index file"):
        MemIndex.load(tmp_path / "future.npz")


@pytest.mark.parametrize("kind", ["text", "npy"])
def test_other_files_are_refused_as_not_an_index(tmp_path, kind):
    path = tmp_path / ("notes.txt" if kind == "text" else "array.npy")
    if kind == "text":
        path.write_text("id,fingerprint\n1,123\n")
    else:
        np.save(path, np.arange(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="is not a dedup index file"):
        MemIndex.load(path)


# --- health ---------------------------------------------------------------------------------


def test_hot_bucket_is_reported_when_many_distinct_fingerprints_share_a_key():
    plan = Plan.even(4, 3)  # table t keys on block t: 16 bits
    rng = np.random.default_rng(13)
    background = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    top = np.uint64(0xBEEF)
    crowd = (top << np.uint64(48)) | rng.integers(0, 2**48, size=300, dtype=np.uint64)
    values = np.concatenate([background, crowd])
    assert len(np.unique(crowd)) == 300
    index = MemIndex.build(plan, np.arange(len(values)), values)
    expected = int(np.sum(values >> np.uint64(48) == top))
    assert index.hot_buckets() == [(0, 0xBEEF, expected)]


def test_exact_copies_do_not_make_a_hot_bucket():
    plan = Plan.even(4, 3)
    rng = np.random.default_rng(14)
    background = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    copies = np.full(2000, 0xBEEF_0000_1111_2222, dtype=np.uint64)
    values = np.concatenate([background, copies])
    index = MemIndex.build(plan, np.arange(len(values)), values)
    assert index.hot_buckets() == []
    assert len(index.query(0xBEEF_0000_1111_2222, 0)) == 2000


def test_hot_buckets_sorted_largest_first_and_respect_minimum():
    plan = Plan.even(4, 3)
    rng = np.random.default_rng(15)
    background = rng.integers(0, 2**64, size=2000, dtype=np.uint64)
    # 200 share block 1 (bits 32-47), 100 share block 3 (bits 0-15); the other bits are random
    big = rng.integers(0, 2**64, size=200, dtype=np.uint64)
    big = big & ~np.uint64(0xFFFF << 32) | np.uint64(0xAAAA << 32)
    small = rng.integers(0, 2**64, size=100, dtype=np.uint64)
    small = small & ~np.uint64(0xFFFF) | np.uint64(0x5555)
    values = np.concatenate([background, big, small])
    index = MemIndex.build(plan, np.arange(len(values)), values)
    hot = index.hot_buckets()
    assert [(t, key) for t, key, _ in hot] == [(1, 0xAAAA), (3, 0x5555)]
    assert hot[0][2] >= 200 and hot[1][2] >= 100
    assert index.hot_buckets(minimum=150) == hot[:1]
    assert MemIndex(plan).hot_buckets() == []


def test_stats_count_entries_distinct_pending_and_rows():
    plan = Plan.even(5, 3)
    values = np.array([1, 1, 1, 2, 3 << 40], dtype=np.uint64)
    index = MemIndex.build(plan, [1, 2, 3, 4, 5], values)
    stats = index.stats()
    assert stats["entries"] == 5
    assert stats["distinct"] == 3
    assert stats["pending"] == 0
    assert stats["rows"] == 3 * 10
    assert stats["plan"] == "p1-k3-13.13.13.13.12"
    assert stats["bytes"] > 3 * 10 * 8
    index.add([6, 7], [1, 99])
    stats = index.stats()
    assert (stats["entries"], stats["distinct"], stats["pending"]) == (7, 3, 2)
    index.remove([1])
    assert index.stats()["entries"] == 6
    index.compact()
    stats = index.stats()
    assert (stats["entries"], stats["distinct"], stats["pending"], stats["rows"]) == (6, 4, 0, 40)
