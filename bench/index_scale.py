"""The in-memory index at 10^7, 3*10^7 and 10^8 fingerprints, k=3: memory, build, queries, pairs.

    python -m bench.index_scale [--runs uniform:100000000:pairs clustered:30000000 ...]
    flock /tmp/dedup-bigmem.lock python -m bench.index_scale    (10^8 needs about 12 GiB)

A run is KIND:N, with ":pairs" to time all pairs too; by default every kind at 10^7, 3*10^7
and 10^8, with all pairs.

Each run goes in a fresh child process (spawn). The child makes its fingerprints, gives what
that freed back to the system (malloc_trim), resets its peak resident size to the present one
(/proc/self/clear_refs), builds the index with the plan `plan_for(n, 3, memory_bytes=budget)`
chooses, and reads the peak (VmHWM) above the inputs: that is set against the plan's model
(Plan.cost(n).memory_bytes). Then single queries (p50 / p99 of 2,000, half near copies of
stored fingerprints, half random; wall clock and the thread's CPU time, since the machine is
shared), a batch of 10,000 through query_many (per query), and, the index freed, all pairs
within 3 (dedup.engine.pairs).

Distributions. uniform: random 64-bit values. clustered: the real fingerprints of the
benchmark corpora (bench.scale.real_fingerprints, 68,575 of them, cached in /tmp), each drawn
n / 68,575 times on average with 4 to 10 random bits flipped: a real fingerprint's copies keep
its key in a table unless a flip lands in the key, so its buckets are hot (tens of rows where
uniform keys give two or three), and the corpora's own near copies make hotter ones.
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import time
from pathlib import Path

import numpy as np

from bench import provenance

RESULTS = Path(__file__).parent / "results" / "index_scale.md"
REAL_CACHE = Path("/tmp/dedup-bench-real-fingerprints.npy")
QUERIES = 2000
BATCH = 10_000
STEP = 10_000_000  # fingerprints made at a time
SIZES = (10**7, 3 * 10**7, 10**8)
KINDS = ("uniform", "clustered")


def real_fingerprints() -> np.ndarray:
    """Return the benchmark corpora's real fingerprints (computed once, then from the cache)."""
    if REAL_CACHE.exists():
        return np.load(REAL_CACHE)
    from bench.scale import real_fingerprints as compute

    values = compute()
    np.save(REAL_CACHE, values)
    return values


def fingerprints(kind: str, n: int, real: np.ndarray | None, seed: int = 7) -> np.ndarray:
    """Return n fingerprints: uniform, or real ones resampled with 4-10 bits flipped."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 2**64, n, dtype=np.uint64)
    values = np.empty(n, dtype=np.uint64)
    for a in range(0, n, STEP):
        part = real[rng.integers(0, len(real), min(STEP, n - a))]
        flips = rng.integers(4, 11, len(part))
        for i in range(10):
            chosen = flips > i  # a flip may land twice on one bit: 2-10 bits differ
            bit = rng.integers(0, 64, int(chosen.sum())).astype(np.uint64)
            part[chosen] ^= np.uint64(1) << bit
        values[a : a + len(part)] = part
    return values


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def measure(kind: str, n: int, budget: int, real: np.ndarray | None, pairs_too: bool) -> dict:
    """Build, query and pair n fingerprints of one kind; return the figures (in a child)."""
    from bench.index import queries
    from dedup.engine.memindex import MemIndex
    from dedup.engine.pairs import pairs, plan_for_pairs
    from dedup.engine.plan import plan_for

    values = fingerprints(kind, n, real)
    ids = np.arange(n, dtype=np.int64)
    # Planned for n (an upper bound on the distinct ones: np.unique at 10^8 costs minutes).
    choice = plan_for(n, 3, memory_bytes=budget)
    out = {"kind": kind, "n": n, "plan": choice.plan}
    out["model"], out["held_model"] = choice.cost.memory_bytes, choice.cost.index_bytes
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # what the inputs' making freed leaves RSS
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts from here
    before, start = _status("VmRSS"), _clock()
    index = MemIndex.build(choice.plan, ids, values)
    out["build"] = _since(start)
    out["peak"], out["held"] = _status("VmHWM") - before, index.stats()["bytes"]
    distinct = out["distinct"] = index.stats()["distinct"]
    qs = queries(values, QUERIES)
    walls, cpus = np.empty(len(qs)), np.empty(len(qs))
    for i, q in enumerate(qs.tolist()):
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        index.query(q, 3)
        cpus[i], walls[i] = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    out["single"] = [float(np.percentile(t, p)) / 1e3 for t in (walls, cpus) for p in (50, 99)]
    many = np.tile(qs, BATCH // len(qs) + 1)[:BATCH]
    start = _clock()
    index.query_many(many, 3)
    out["batch"] = tuple(s / BATCH * 1e6 for s in _since(start))
    out["candidates"] = choice.cost.expected_candidates
    del index
    if pairs_too:
        start = _clock()
        found = pairs(values, 3, plan=plan_for_pairs(distinct, 3))
        out["pairs"], out["pair_count"] = _since(start), len(found)
    return out


def _child(args: tuple, results) -> None:
    results.put(measure(*args))


def run(args: tuple) -> dict:
    """Return measure(*args) from a fresh process."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_child, args=(args, results))
    child.start()
    out = results.get()
    child.join()
    return out


def row(r: dict) -> str:
    """Return one table row of a run's figures."""
    gib = 2**30
    s = r["single"]
    pairs_cell = (
        f"{r['pairs'][0]:,.0f} / {r['pairs'][1]:,.0f} | {r['pair_count']:,}"
        if "pairs" in r
        else "not run | -"
    )
    return (
        f"| {r['n']:,} | {r['kind']} | {r['plan'].version} ({r['plan'].table_count}) "
        f"| {r['model'] / gib:.2f} | {r['peak'] / gib:.2f} | {r['held'] / gib:.2f} "
        f"| {r['build'][0]:,.0f} / {r['build'][1]:,.0f} "
        f"| {s[0]:,.1f} / {s[1]:,.1f} | {s[2]:,.1f} / {s[3]:,.1f} "
        f"| {r['batch'][0]:,.2f} / {r['batch'][1]:,.2f} | {pairs_cell} |"
    )


def main() -> None:
    """Run every size and distribution; print the table and save it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = [f"{kind}:{n}:pairs" for n in SIZES for kind in KINDS]
    parser.add_argument("--runs", nargs="+", default=default, help="KIND:N[:pairs] ...")
    parser.add_argument("--budget-gib", type=float, default=16.0)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the results file")
    args = parser.parse_args()
    runs = [(r.split(":")[0], int(r.split(":")[1]), r.endswith(":pairs")) for r in args.runs]
    real = real_fingerprints() if any(kind == "clustered" for kind, _, _ in runs) else None
    budget = int(args.budget_gib * 2**30)
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    say(f"k=3, plan: plan_for(n, 3, memory_bytes={args.budget_gib:g} GiB). Memory in GiB")
    say("above the inputs: the model (Plan.cost), the measured peak (VmHWM) and what the index")
    say("holds once built. Times as wall / CPU (one process, one core; the machine is shared,")
    say("so wall includes waiting): build and all pairs in seconds, single queries p50 / p99 in")
    say(f"microseconds over {QUERIES:,}, batch: microseconds per query over {BATCH:,}.")
    say()
    say(
        "| n | fingerprints | plan (tables) | model GiB | peak GiB | held GiB | build s "
        "| single wall p50 / p99 | single CPU p50 / p99 | batch µs/query | all pairs s | pairs |"
    )
    say("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, n, pairs_too in runs:
        say(row(run((kind, n, budget, real, pairs_too))))
        provenance.write(args.results, "\n".join(out) + "\n")  # each row kept as it comes
    print(f"\nsaved to {args.results}")


if __name__ == "__main__":
    main()
