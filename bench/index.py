"""The segment index and all-pairs, against a brute-force scan and PyPI simhash.

    ./dev bench index          (or: python -m bench.index [--sizes 1000000 10000000])
    python -m bench.index --store postgres --sizes 1000000

The index is measured through its interface (dedup.engine.storage.SegmentIndex): the
in-memory MemIndex by default, or with --store postgres the service's PgSegmentIndex in the
database DATABASE_URL names (its rows under a version "bench-<plan>", deleted afterwards).

Fingerprints: random 64-bit values plus a realistic share of copies (4% near copies 1-8 bits
away, 1% exact copies). For each size and plan: build time, index memory, single-query latency
(p50/p99 over queries of which half are near copies of stored fingerprints) at k=3 and k=8,
batch throughput, and, in the same run, a brute-force numpy scan and the PyPI `simhash`
package's SimhashIndex. Then all-pairs at k=3. One process: every figure is one core.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dedup.engine.memindex import MemIndex
from dedup.engine.pairs import pairs, plan_for_pairs
from dedup.engine.plan import Plan, plan_for
from dedup.engine.storage import SegmentIndex

RESULTS = Path(__file__).parent / "results" / "index.md"
SIMHASH_INDEX_MAX = 1_000_000  # pure Python: 10M would take about half an hour and ~40 GB


def corpus(n: int, seed: int = 7) -> np.ndarray:
    """Return n fingerprints: 95% random, 4% near copies (1-8 bits flipped), 1% exact copies."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, n, dtype=np.uint64)
    near = rng.choice(n, n * 4 // 100, replace=False)
    exact = rng.choice(n, n // 100, replace=False)
    source = rng.integers(0, n, len(near) + len(exact))
    values[exact] = values[source[len(near) :]]
    flips = np.zeros(len(near), dtype=np.uint64)
    bits = rng.integers(1, 9, len(near))
    for i in range(8):
        chosen = bits > i
        flips[chosen] |= np.uint64(1) << rng.integers(0, 64, chosen.sum()).astype(np.uint64)
    values[near] = values[source[: len(near)]] ^ flips
    return values


def queries(values: np.ndarray, count: int, seed: int = 8) -> np.ndarray:
    """Return queries: half near copies (0-3 bits off) of stored values, half random."""
    rng = np.random.default_rng(seed)
    half = count // 2
    near = values[rng.integers(0, len(values), half)]
    for _ in range(3):
        flip = rng.random(half) < 0.5
        near[flip] ^= np.uint64(1) << rng.integers(0, 64, flip.sum()).astype(np.uint64)
    return np.concatenate([near, rng.integers(0, 2**64, count - half, dtype=np.uint64)])


def latencies(search, qs: np.ndarray) -> tuple[float, float]:
    """Return p50 and p99 in microseconds of search(q) over the queries."""
    times = np.empty(len(qs))
    for i, q in enumerate(qs.tolist()):
        start = time.perf_counter_ns()
        search(q)
        times[i] = time.perf_counter_ns() - start
    return float(np.percentile(times, 50)) / 1e3, float(np.percentile(times, 99)) / 1e3


def brute_force(values: np.ndarray, k: int):
    """Return a query function scanning every fingerprint with numpy."""

    def search(q: int):
        return np.flatnonzero(np.bitwise_count(values ^ np.uint64(q)) <= k)

    return search


Say = Callable[[str], None]
LOAD_CHUNK = 100_000  # fingerprints per add() into PostgreSQL


@contextmanager
def memory_index(plan: Plan, ids: np.ndarray, values: np.ndarray) -> Iterator[SegmentIndex]:
    """Yield a MemIndex holding the fingerprints."""
    yield MemIndex.build(plan, ids, values)


@contextmanager
def postgres_index(plan: Plan, ids: np.ndarray, values: np.ndarray) -> Iterator[SegmentIndex]:
    """Yield the service's index holding the fingerprints under a version of its own, vacuumed
    so that look-ups read the index alone; delete its rows afterwards."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dedup.settings")
    import django

    django.setup()
    from django.db import connection

    from dedup.index.segments import PgSegmentIndex
    from dedup.models import SegmentRow

    version = f"bench-{plan.version}"
    SegmentRow.objects.filter(version=version).delete()
    index = PgSegmentIndex(plan, version)
    try:
        for start in range(0, len(ids), LOAD_CHUNK):
            index.add(ids[start : start + LOAD_CHUNK], values[start : start + LOAD_CHUNK])
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) dedup_segment")
        yield index
    finally:
        SegmentRow.objects.filter(version=version).delete()


STORES = {
    "memory": ("dedup MemIndex", memory_index),
    "postgres": ("dedup PgSegmentIndex", postgres_index),
}


def index_row(
    store: str, n: int, plan: Plan, values: np.ndarray, qs: np.ndarray, brute_p50: float
) -> str:
    """Return one table row: build, then single and batch queries through the interface."""
    name, open_index = STORES[store]
    gc.collect()
    start = time.perf_counter()
    with open_index(plan, np.arange(n), values) as index:
        build = time.perf_counter() - start
        l3 = latencies(lambda q: index.query(q, 3), qs)
        l8 = latencies(lambda q: index.query(q, 8), qs) if plan.k_max >= 8 else None
        many = np.tile(qs, max(1, 10_000 // len(qs)))[:10_000]
        start = time.perf_counter()
        index.query_many(many, 3)
        batch = len(many) / (time.perf_counter() - start)
        memory = f"{index.stats()['bytes'] / 2**20:,.0f}" if isinstance(index, MemIndex) else "-"
    k8_cell = f"{l8[0]:,.1f} / {l8[1]:,.1f}" if l8 else "-"
    return (
        f"| {n:,} | {name} | {plan.version} | {plan.table_count} | {build:.1f} "
        f"| {memory} | {l3[0]:,.1f} / {l3[1]:,.1f} "
        f"| {k8_cell} | {batch:,.0f} | {brute_p50 / l3[0]:,.0f}x |"
    )


def size_rows(n: int, args: argparse.Namespace, say: Say) -> tuple:
    """Print the rows of one size; return its all-pairs figures."""
    values = corpus(n)
    qs = queries(values, args.queries)
    brute_qs = qs[: max(50, args.queries // 20)]
    b3 = latencies(brute_force(values, 3), brute_qs)
    b8 = latencies(brute_force(values, 8), brute_qs)
    say(
        f"| {n:,} | brute-force numpy scan | - | - | - | {values.nbytes / 2**20:,.0f} "
        f"| {b3[0]:,.0f} / {b3[1]:,.0f} | {b8[0]:,.0f} / {b8[1]:,.0f} "
        f"| {1e6 / b3[0]:,.0f} | 1x |"
    )
    k8 = plan_for(n, 8, memory_bytes=int(args.memory_gib * 2**30)).plan
    for plan in (Plan.even(4, 3), Plan.even(5, 3), k8):
        say(index_row(args.store, n, plan, values, qs, b3[0]))
    if n <= SIMHASH_INDEX_MAX:
        say(_simhash_row(n, values, qs, b3[0]))
    else:
        say(
            f"| {n:,} | PyPI simhash SimhashIndex | 4 tables | 4 | not run | | | | | "
            f"pure Python: ~{n / 1e6 * 3:.0f} min to build, too much memory |"
        )
    gc.collect()
    start = time.perf_counter()
    plan = plan_for_pairs(len(np.unique(values)), 3)
    found = pairs(values, 3, plan=plan)
    return n, plan, time.perf_counter() - start, len(found)


def main() -> None:
    """Run every size; print the tables and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--memory-gib", type=float, default=6.0, help="budget for k_max=8 plans")
    parser.add_argument("--store", choices=sorted(STORES), default="memory")
    args = parser.parse_args()
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    say("Single-query latency in microseconds (p50 / p99) over queries of which half are near")
    say("copies of stored fingerprints; batch: queries per second with query_many (10,000 at")
    say("a time); one core.")
    say()
    say(
        "| n | method | plan | tables | build s | memory MiB | k=3 p50 / p99 | k=8 p50 / p99 "
        "| batch k=3 q/s | vs brute force (k=3 p50) |"
    )
    say("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    pair_rows = [size_rows(n, args, say) for n in args.sizes]
    say()
    say("All pairs within distance 3 (one core, exact copies included as distance-0 pairs):")
    say()
    say("| n | plan | tables | seconds | pairs found |")
    say("|---:|---|---:|---:|---:|")
    for n, plan, seconds, count in pair_rows:
        say(f"| {n:,} | {plan.version} | {plan.table_count} | {seconds:.1f} | {count:,} |")
    results = RESULTS if args.store == "memory" else RESULTS.with_name(f"index-{args.store}.md")
    results.parent.mkdir(exist_ok=True)
    results.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"\nsaved to {results}")


def _simhash_row(n: int, values: np.ndarray, qs: np.ndarray, brute_p50: float) -> str:
    from simhash import Simhash, SimhashIndex

    start = time.perf_counter()
    index = SimhashIndex([(str(i), Simhash(int(v))) for i, v in enumerate(values)], k=3)
    build = time.perf_counter() - start
    l3 = latencies(lambda q: index.get_near_dups(Simhash(q)), qs[:500])
    return (
        f"| {n:,} | PyPI simhash SimhashIndex | its own, 4 blocks | 4 | {build:.1f} | - "
        f"| {l3[0]:,.1f} / {l3[1]:,.1f} | - | - | {brute_p50 / l3[0]:,.1f}x |"
    )


if __name__ == "__main__":
    main()
