"""The PostgreSQL segment index returns exactly what a brute-force scan returns, and stays tidy.

Runs against a real PostgreSQL (DEDUP_TEST_PG, by default the machine's own on 127.0.0.1:5432,
which `./dev test` starts). Every index here lives in tables named after this run, dropped at
the end.
"""

import os
import secrets

import numpy as np
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from dedup.engine.hamming import to_signed
from dedup.engine.plan import Plan, PlanError
from dedup.pgindex import PgIndex, PlanMismatch

CONNINFO = os.environ.get("DEDUP_TEST_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")
PLANS = [Plan.even(4, 3), Plan.even(5, 3), Plan.even(8, 6)]
MAX = 2**64 - 1


@pytest.fixture(scope="module")
def conninfo():
    """Return the test server's conninfo, failing (not skipping) when it is unreachable."""
    try:
        with psycopg.connect(CONNINFO, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as error:
        pytest.fail(
            f"PostgreSQL is not reachable at {CONNINFO!r}: {error}\n"
            "Start it (./dev test does: pg_ctlcluster <version> main start) or point "
            "DEDUP_TEST_PG at a server with a database you may create tables in.",
            pytrace=False,
        )
    return CONNINFO


@pytest.fixture(scope="module")
def prefix(conninfo):
    """Return a table prefix unique to this run; drop every table under it afterwards."""
    base = f"test_pgindex_{secrets.token_hex(4)}"
    yield base
    with psycopg.connect(conninfo, autocommit=True) as conn:
        names = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND starts_with(tablename, %s)",
            (base,),
        ).fetchall()
        for (name,) in names:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def fresh(conninfo, prefix):
    """Return a factory of empty indexes, each under its own prefix, closed after the test."""
    opened = []

    def make(plan=PLANS[0], name=None, connection=None):
        index = PgIndex(connection or conninfo, plan, f"{prefix}_{name or secrets.token_hex(3)}")
        index.drop()
        index.create()
        opened.append(index)
        return index

    yield make
    for index in opened:
        if not index.conn.closed:
            index.conn.rollback()
            index.drop()
        index.close()


def flip(value: int, bits) -> int:
    """Return value with these bit positions inverted."""
    for bit in bits:
        value ^= 1 << int(bit)
    return value


def spread_flips(plan: Plan, value: int, k: int, rng: np.random.Generator) -> int:
    """Return value with exactly k bits flipped, each in a different block of the plan."""
    blocks = rng.choice(plan.blocks, size=k, replace=False)
    bits = [plan.starts[b] + int(rng.integers(plan.widths[b])) for b in blocks]
    return flip(value, bits)


def corpus(plan: Plan, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (ids, fingerprints): random ones, near copies at every distance, exact copies."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, MAX, 1500, dtype=np.uint64, endpoint=True)
    extremes = np.array([0, 1, 2**63 - 1, 2**63, MAX], dtype=np.uint64)
    near = [
        spread_flips(plan, int(rng.choice(base)), k, rng)
        for k in range(1, plan.k_max + 2)
        for _ in range(40)
    ]
    copies = rng.choice(base, 60)  # the same fingerprint under another id
    values = np.concatenate([base, extremes, np.array(near, dtype=np.uint64), copies])
    ids = rng.permutation(10 * len(values))[: len(values)].astype(np.int64) + 1
    return ids, values


def brute_force(ids, values, query: int, k: int) -> list[tuple[int, int]]:
    """Return (id, distance) of every fingerprint within k of query, nearest first."""
    d = np.bitwise_count(values ^ np.uint64(query))
    near = np.flatnonzero(d <= k)
    return sorted(zip(ids[near].tolist(), d[near].tolist(), strict=True), key=lambda h: h[::-1])


def queries_for(plan: Plan, values: np.ndarray, seed: int) -> list[int]:
    """Return stored fingerprints, near copies of them at every distance, and random values."""
    rng = np.random.default_rng(seed)
    picked = rng.choice(values, 25).tolist()
    queries = [*picked[:5], 0, MAX, 2**63]
    queries += [spread_flips(plan, v, k, rng) for v in picked for k in (1, plan.k_max)]
    queries += rng.integers(0, MAX, 10, dtype=np.uint64, endpoint=True).tolist()
    return queries


@pytest.fixture(scope="module", params=PLANS, ids=lambda p: p.version)
def filled(request, conninfo, prefix):
    """Return (index, ids, values) holding a corpus; half bulk-loaded, half merged in."""
    plan = request.param
    index = PgIndex(conninfo, plan, f"{prefix}_{plan.blocks}b{plan.k_max}k")
    index.drop()
    index.create()
    index.bulk_load_minimum = 500
    ids, values = corpus(plan, seed=plan.blocks)
    half = len(ids) // 2
    index.add(ids[:half], values[:half])  # empty index: rows first, then the indexes
    for start in range(half, len(ids), 400):  # filled index: through the temporary table
        index.add(ids[start : start + 400], values[start : start + 400])
    yield index, ids, values
    index.drop()
    index.close()


# --- exactness --------------------------------------------------------------------------------


def test_query_returns_exactly_the_brute_force_matches_for_every_k(filled):
    index, ids, values = filled
    for k in range(index.plan.k_max + 1):
        for query in queries_for(index.plan, values, seed=k):
            assert index.query(query, k) == brute_force(ids, values, query, k), (query, k)


def test_query_many_equals_one_query_at_a_time(filled):
    index, _, values = filled
    queries = queries_for(index.plan, values, seed=99)
    k = index.plan.k_max
    hits = index.query_many(np.array(queries, dtype=np.uint64), k)
    got = list(zip(hits.query.tolist(), hits.id.tolist(), hits.distance.tolist(), strict=True))
    expected = [(i, a, d) for i, q in enumerate(queries) for a, d in index.query(q, k)]
    assert got == expected
    assert hits.distance.dtype == np.uint8


def test_query_many_splits_big_batches_into_statements(filled, monkeypatch):
    index, ids, values = filled
    monkeypatch.setattr("dedup.pgindex.QUERY_CHUNK", 7)
    queries = queries_for(index.plan, values, seed=5)
    hits = index.query_many(queries, 2)
    got = list(zip(hits.query.tolist(), hits.id.tolist(), hits.distance.tolist(), strict=True))
    expected = [(i, a, d) for i, q in enumerate(queries) for a, d in brute_force(ids, values, q, 2)]
    assert got == expected


def test_query_many_of_no_queries_is_empty(filled):
    hits = filled[0].query_many(np.empty(0, np.uint64), 1)
    assert len(hits.query) == len(hits.id) == len(hits.distance) == 0


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_query_of_any_perturbed_fingerprint_matches_brute_force(filled, data):
    index, ids, values = filled
    stored = int(values[data.draw(st.integers(0, len(values) - 1))])
    bits = data.draw(st.sets(st.integers(0, 63), max_size=index.plan.k_max + 1))
    k = data.draw(st.integers(0, index.plan.k_max))
    query = flip(stored, bits)
    assert index.query(query, k) == brute_force(ids, values, query, k)


def test_fingerprints_are_stored_with_the_bit_pattern_of_to_signed(filled):
    index = filled[0]
    extremes = [0, 1, 2**63 - 1, 2**63, MAX]
    rows = index.conn.execute(
        sql.SQL("SELECT DISTINCT fingerprint FROM {} WHERE fingerprint = ANY(%s)").format(
            index.segment
        ),
        ([to_signed(v) for v in extremes],),
    ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(to_signed(v) for v in extremes)
    assert np.array(extremes, dtype=np.uint64).view(np.int64).tolist() == [
        to_signed(v) for v in extremes
    ]


# --- writing ----------------------------------------------------------------------------------


def _rows(index: PgIndex) -> list[tuple]:
    return index.conn.execute(
        sql.SQL("SELECT * FROM {} ORDER BY article_id, table_no").format(index.segment)
    ).fetchall()


def test_bulk_load_and_merge_store_the_same_rows(fresh):
    ids, values = corpus(PLANS[1], seed=3)
    bulk = fresh(PLANS[1], "bulk")
    bulk.bulk_load_minimum = 1
    bulk.add(ids, values)
    merged = fresh(PLANS[1], "merged")
    merged.bulk_load_minimum = len(ids) + 1
    merged.add(ids, values)
    assert _rows(bulk) == _rows(merged)
    assert len(_rows(bulk)) == len(ids) * PLANS[1].table_count
    assert bulk.count() == merged.count() == len(ids)
    # the bulk path rebuilt both indexes under their usual names
    names = bulk.conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY 1", (bulk.prefix,)
    ).fetchall()
    assert names == [(f"{bulk.prefix}_lookup",), (f"{bulk.prefix}_pkey",)]


def test_readding_the_same_ids_changes_nothing(fresh):
    index = fresh()
    index.bulk_load_minimum = 100
    ids, values = corpus(index.plan, seed=1)
    index.add(ids, values)
    before = _rows(index)
    index.add(ids, values)  # a retried task, whole
    index.add(ids[:300], values[:300])  # and in part
    assert _rows(index) == before
    assert index.count() == len(ids)


def test_readding_an_id_with_another_fingerprint_keeps_the_stored_one(fresh):
    index = fresh()
    index.add([7], [0xFFFF_0000_FFFF_0000])
    index.add([7], [0x1234_5678_9ABC_DEF0])
    assert index.query(0xFFFF_0000_FFFF_0000, 0) == [(7, 0)]
    assert index.query(0x1234_5678_9ABC_DEF0, 3) == []


def test_remove_forgets_the_articles_and_counts_them(fresh):
    index = fresh(PLANS[1])
    ids, values = corpus(index.plan, seed=2)
    index.add(ids, values)
    gone = ids[:100]
    assert index.remove(np.concatenate([gone, [-5, 10**12]])) == 100
    assert index.count() == len(ids) - 100
    for value in values[:100].tolist():
        assert index.query(value, 3) == brute_force(ids[100:], values[100:], value, 3)
    assert index.remove(gone) == 0


def test_add_inside_the_callers_transaction_rolls_back_with_it(fresh, conninfo):
    conn = psycopg.connect(conninfo)  # not autocommit: the caller owns the transaction
    index = fresh(connection=conn)
    conn.commit()
    with conn.transaction():
        index.add([1, 2], [5, 6])
        assert index.count() == 2
        raise psycopg.Rollback()
    assert index.count() == 0
    index.add([1, 2], [5, 6])
    conn.commit()
    assert index.query(7, 1) == [(1, 1), (2, 1)]
    conn.close()


def test_add_refuses_input_that_is_not_uint64(fresh):
    index = fresh()
    with pytest.raises(TypeError, match="uint64 array, not int64"):
        index.add([1], np.array([5], dtype=np.int64))
    with pytest.raises(ValueError, match=r"outside 0\.\.2"):
        index.add([1], [-1])
    with pytest.raises(ValueError, match=r"outside 0\.\.2"):
        index.add([1], [2**64])
    with pytest.raises(TypeError, match="integers"):
        index.add([1], [1.5])
    with pytest.raises(ValueError, match="2 ids for 1 fingerprints"):
        index.add([1, 2], [5])
    with pytest.raises(ValueError, match="repeats"):
        index.add([1, 1], [5, 6])
    with pytest.raises(TypeError, match="unsigned 64-bit"):
        index.query(np.int64(-3), 1)
    with pytest.raises(ValueError, match="not an unsigned 64-bit"):
        index.query(-3, 1)
    assert index.count() == 0


# --- plans, names and limits ------------------------------------------------------------------


def test_opening_an_index_with_another_plan_raises_plan_mismatch(fresh, conninfo):
    index = fresh(Plan.even(4, 3))
    with pytest.raises(PlanMismatch, match=r"built with plan p1-k3-16\.16\.16\.16.*rebuild"):
        PgIndex(conninfo, Plan.even(5, 3), index.prefix)
    again = PgIndex(conninfo, Plan.even(4, 3), index.prefix)  # the same plan opens fine
    again.create()  # and creating again is harmless
    again.close()


@pytest.mark.parametrize("k", [-1, 4, 7])
def test_k_outside_the_plan_raises_plan_error(fresh, k):
    index = fresh(Plan.even(4, 3))
    with pytest.raises(PlanError, match="k_max >="):
        index.query(1, k)
    with pytest.raises(PlanError, match="k_max >="):
        index.query_many([1], k)


@pytest.mark.parametrize(
    "prefix",
    ["", "1segments", "dedup segment", "dedup.segment", "Dedup", "x; DROP TABLE t", "a" * 49, 7],
)
def test_unsafe_table_prefix_is_refused(prefix):
    with pytest.raises(ValueError, match="not a safe identifier"):
        PgIndex("host=unused", PLANS[0], prefix)


def test_drop_removes_the_tables(fresh):
    index = fresh()
    index.add([1], [1])
    index.drop()
    assert not index.exists()


# --- health -----------------------------------------------------------------------------------


def test_lookup_is_an_index_only_scan_of_the_composite_index(fresh):
    index = fresh(PLANS[1])
    rng = np.random.default_rng(4)
    values = rng.integers(0, MAX, 20_000, dtype=np.uint64, endpoint=True)
    index.add(np.arange(len(values)), values)
    index.vacuum()
    plan = index.explain(int(values[0]))
    assert f"Index Only Scan using {index.prefix}_lookup" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_hot_bucket_is_reported_when_many_fingerprints_share_a_key(fresh):
    index = fresh(Plan.even(4, 3))
    rng = np.random.default_rng(6)
    spread = rng.integers(0, MAX, 2000, dtype=np.uint64, endpoint=True)
    low_bits = rng.integers(0, 2**48, 200, dtype=np.uint64)
    crowded = np.uint64(0xBEEF << 48) | low_bits  # all share block 0: table 0's key
    values = np.concatenate([spread, crowded])
    index.add(np.arange(len(values)), values)
    assert index.hot_buckets() == [(0, 0xBEEF, 200)]
    assert index.hot_buckets(minimum=500) == []
