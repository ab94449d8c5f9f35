"""The PostgreSQL segment index at scale: loading, single lookups, batches, size on disk.

    ./dev bench pgindex          (or: python -m bench.pgindex [--n 1000000] [--queries 2000])

For each plan, N random fingerprints plus 1% near copies (1 to 3 bits away) go into an empty
index in one add(), which COPYs the rows in and then builds the indexes; then 1% more near
copies are added to the filled index, the way articles arrive, through the idempotent merge.
Lookups run at k = 3 from one connection: half near copies of stored fingerprints, half random
values, after a warm-up. Server: DEDUP_BENCH_PG (default the local test database).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

from dedup.engine.hamming import to_signed
from dedup.engine.plan import Plan
from dedup.pgindex import PgIndex

RESULTS = Path(__file__).parent / "results" / "pgindex.md"
CONNINFO = os.environ.get("DEDUP_BENCH_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")
PLANS = (Plan.even(4, 3), Plan.even(5, 3))
K = 3
BATCH = 1000
MASK = 2**64 - 1
# Heap plus two B-trees, per row, measured at N = 1M with generous slack.
BYTES_PER_ROW = 200


class TimedIndex(PgIndex):
    """A PgIndex that records how long its COPYs take, to split a bulk load into phases."""

    copy_seconds = 0.0

    def _copy(self, *args, **kwargs) -> None:
        start = time.perf_counter()
        super()._copy(*args, **kwargs)
        self.copy_seconds += time.perf_counter() - start


@dataclass
class Result:
    plan: Plan
    fingerprints: int
    load_s: float
    copy_s: float
    incremental: int
    incremental_s: float
    vacuum_s: float
    p50_ms: float
    p99_ms: float
    cold_p50_ms: float
    cold_p99_ms: float
    lookups_per_s: float
    python_filter_p50_ms: float
    python_filter_per_s: float
    batch_per_s: float
    heap_mib: float
    lookup_mib: float
    pkey_mib: float
    total_mib: float


def near_copies(values: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Return `count` stored fingerprints with 1 to 3 random bits flipped each."""
    picked = rng.choice(values, count)
    for j in range(count):
        for bit in rng.choice(64, int(rng.integers(1, 4)), replace=False):
            picked[j] ^= np.uint64(1) << np.uint64(bit)
    return picked


def lookup_queries(values: np.ndarray, count: int, rng: np.random.Generator) -> list[int]:
    """Return queries: half near copies (0 to 3 bits off) of stored values, half random."""
    near = rng.choice(values, count // 2)
    for j in range(len(near)):
        for bit in rng.choice(64, int(rng.integers(0, K + 1)), replace=False):
            near[j] ^= np.uint64(1) << np.uint64(bit)
    random = rng.integers(0, 2**64, count - len(near), dtype=np.uint64, endpoint=False)
    mixed = np.concatenate([near, random])
    rng.shuffle(mixed)
    return mixed.tolist()


def python_filter_lookup(index: PgIndex):
    """Return a lookup that fetches all candidates and filters by distance in Python."""
    statement = sql.SQL(
        """
        SELECT DISTINCT s.article_id, s.fingerprint
        FROM {} AS s
        JOIN unnest(%(table_nos)s::int2[], %(keys)s::int8[]) AS q(table_no, key)
            USING (table_no, key)
        """
    ).format(index.segment)

    def query(value: int, k: int) -> list[tuple[int, int]]:
        signed = to_signed(value)
        rows = index.conn.execute(statement, index._params(value, k)).fetchall()
        hits = [(a, ((f ^ signed) & MASK).bit_count()) for a, f in rows]
        return sorted((h for h in hits if h[1] <= k), key=lambda h: (h[1], h[0]))

    return query


def latencies(lookup, queries: list[int]) -> tuple[float, float, float]:
    """Return p50 and p99 in ms and lookups per second over these queries, after a warm-up."""
    for value in queries[:200]:
        lookup(value, K)
    times = []
    for value in queries:
        start = time.perf_counter()
        lookup(value, K)
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), len(ms) / sum(times)


def settle(conn: psycopg.Connection) -> None:
    """Write out the load's dirty pages now, so that lookups do not pay for it."""
    # Right after a load, evicting the load's dirty buffers stalls lookups (p99 x5 at N = 1M):
    # that is the cost of the load, not of a lookup on a settled server.
    try:
        conn.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        print("(no CHECKPOINT privilege: lookups are timed while the load is written out)")


def check_disk(conn: psycopg.Connection, rows: int) -> None:
    """Refuse to start when the server's disk would not hold the tables comfortably."""
    need = rows * BYTES_PER_ROW
    try:
        where = conn.execute("SHOW data_directory").fetchone()[0]
        free = shutil.disk_usage(where).free
    except (psycopg.Error, OSError):
        print("(cannot see the server's data directory; not checking its free space)")
        return
    print(f"disk: {free / 2**30:,.1f} GiB free at {where}, ~{need / 2**30:,.1f} GiB needed")
    if free < 2 * need:
        raise SystemExit(
            f"only {free / 2**30:,.1f} GiB free at {where}; the run needs about "
            f"{need / 2**30:,.1f} GiB: free space or pass a smaller --n"
        )


def run_plan(plan: Plan, n: int, count: int, seed: int, prefix: str) -> Result:
    """Load, query and measure one plan; drop its tables at the end."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    values = np.concatenate([base, near_copies(base, n // 100, rng)])
    later = near_copies(base, max(n // 100, 1), rng)
    ids = np.arange(1, len(values) + len(later) + 1, dtype=np.int64)
    index = TimedIndex(CONNINFO, plan, f"{prefix}_{plan.blocks}b")
    try:
        index.drop()
        index.create()
        start = time.perf_counter()
        index.add(ids[: len(values)], values)
        load_s = time.perf_counter() - start
        copy_s, index.copy_seconds = index.copy_seconds, 0.0

        start = time.perf_counter()
        index.add(ids[len(values) :], later)
        incremental_s = time.perf_counter() - start
        start = time.perf_counter()
        index.vacuum()  # autovacuum would, later: the merged rows become index-only too
        vacuum_s = time.perf_counter() - start

        stored = np.concatenate([values, later])
        cold_p50, cold_p99, _ = latencies(index.query, lookup_queries(stored, count, rng))
        settle(index.conn)
        queries = lookup_queries(stored, count, rng)
        p50, p99, per_s = latencies(index.query, queries)
        py_p50, _, py_per_s = latencies(python_filter_lookup(index), queries)
        batch = np.array(lookup_queries(stored, 10 * BATCH, rng), dtype=np.uint64)
        index.query_many(batch[:BATCH], K)  # warm-up
        start = time.perf_counter()
        for first in range(0, len(batch), BATCH):
            index.query_many(batch[first : first + BATCH], K)
        batch_per_s = len(batch) / (time.perf_counter() - start)

        sizes = index.conn.execute(
            "SELECT pg_relation_size(%s), pg_relation_size(%s), pg_relation_size(%s), "
            "pg_total_relation_size(%s)",
            (index.prefix, f"{index.prefix}_lookup", f"{index.prefix}_pkey", index.prefix),
        ).fetchone()
        print(index.explain(queries[0], analyze=True))
        return Result(
            plan=plan,
            fingerprints=len(values),
            load_s=load_s,
            copy_s=copy_s,
            incremental=len(later),
            incremental_s=incremental_s,
            vacuum_s=vacuum_s,
            p50_ms=p50,
            p99_ms=p99,
            cold_p50_ms=cold_p50,
            cold_p99_ms=cold_p99,
            lookups_per_s=per_s,
            python_filter_p50_ms=py_p50,
            python_filter_per_s=py_per_s,
            batch_per_s=batch_per_s,
            heap_mib=sizes[0] / 2**20,
            lookup_mib=sizes[1] / 2**20,
            pkey_mib=sizes[2] / 2**20,
            total_mib=sizes[3] / 2**20,
        )
    finally:
        index.drop()
        index.close()


def report(results: list[Result], n: int, count: int, server: str) -> list[str]:
    """Return the markdown tables."""
    lines = [
        f"PostgreSQL segment index, N = {n:,} random fingerprints + 1% near copies, k = {K}. "
        f"{server}. Client and server on the same machine ({os.cpu_count()} cores).",
        "",
        "Loading. *Bulk*: one add() into an empty index COPYs the rows (binary) into the bare "
        "table, then builds the primary key and the lookup index. *Incremental*: add() of 1% "
        "more into the filled index (COPY into a temporary table, INSERT ... ON CONFLICT DO "
        "NOTHING), then VACUUM so those rows are index-only too.",
        "",
        "| plan | tables | rows | bulk load s | of which COPY s | index build s | bulk rows/s "
        "| bulk fingerprints/s | incremental rows/s | incremental fingerprints/s | vacuum s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        tables = r.plan.table_count
        lines.append(
            f"| {r.plan.version} | {tables} | {r.fingerprints * tables:,} | {r.load_s:.1f} "
            f"| {r.copy_s:.1f} | {r.load_s - r.copy_s:.1f} "
            f"| {r.fingerprints * tables / r.load_s:,.0f} | {r.fingerprints / r.load_s:,.0f} "
            f"| {r.incremental * tables / r.incremental_s:,.0f} "
            f"| {r.incremental / r.incremental_s:,.0f} | {r.vacuum_s:.1f} |"
        )
    lines += [
        "",
        f"Lookups at k = {K}, one connection, {count:,} queries (half near copies of stored "
        "fingerprints, half random). The Hamming filter runs in SQL (`bit_count`) in the index; "
        f"the Python-filter columns fetch every candidate instead. Batches: query_many of "
        f"{BATCH:,} queries, one statement each. The main columns are timed after a CHECKPOINT; "
        "*just loaded* times other queries before it, while the load's dirty pages are still "
        "being written out.",
        "",
        "| plan | p50 ms | p99 ms | lookups/s | Python filter: p50 ms | Python filter: lookups/s "
        "| query_many queries/s | just loaded: p50 ms | just loaded: p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.plan.version} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.lookups_per_s:,.0f} "
            f"| {r.python_filter_p50_ms:.2f} | {r.python_filter_per_s:,.0f} "
            f"| {r.batch_per_s:,.0f} | {r.cold_p50_ms:.2f} | {r.cold_p99_ms:.2f} |"
        )
    lines += [
        "",
        "Size on disk after the incremental add and VACUUM:",
        "",
        "| plan | table MiB | lookup index MiB | primary key MiB | total MiB | bytes per row |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows = (r.fingerprints + r.incremental) * r.plan.table_count
        lines.append(
            f"| {r.plan.version} | {r.heap_mib:,.0f} | {r.lookup_mib:,.0f} | {r.pkey_mib:,.0f} "
            f"| {r.total_mib:,.0f} | {r.total_mib * 2**20 / rows:,.0f} |"
        )
    return lines


def main() -> None:
    """Run every plan, print the tables and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="random fingerprints stored")
    parser.add_argument("--queries", type=int, default=2000, help="single lookups timed")
    parser.add_argument("--seed", type=int, default=2007)
    args = parser.parse_args()

    try:
        conn = psycopg.connect(CONNINFO, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        raise SystemExit(
            f"PostgreSQL is not reachable at {CONNINFO!r}: {error}\nstart it or set DEDUP_BENCH_PG"
        ) from error
    with conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        buffers = conn.execute("SHOW shared_buffers").fetchone()[0]
        check_disk(conn, int(args.n * 1.02) * max(p.table_count for p in PLANS))
    server = f"PostgreSQL {version}, shared_buffers {buffers}"
    prefix = f"bench_pgindex_{os.getpid()}"
    results = []
    for plan in PLANS:
        print(f"{plan.version}: {plan.cost(args.n).describe()}", flush=True)
        results.append(run_plan(plan, args.n, args.queries, args.seed, prefix))
        print(f"  p50 {results[-1].p50_ms:.2f} ms at k = {K}", flush=True)
    lines = report(results, args.n, args.queries, server)
    print("\n".join(lines))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\nsaved to {RESULTS}")


if __name__ == "__main__":
    main()
