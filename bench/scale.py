"""The segment index at 10^8, 10^9 and 10^10 fingerprints, simulated with real ones; Spark's
throughput beside the in-memory all-pairs.

    ./dev bench scale          (or: python -m bench.scale [--no-pg] [--no-spark])

Real fingerprints: every source text of the benchmark corpora (People's Daily articles, the
insurance answers in Chinese and English: bench/corpus.py), plus the labelled corpus's copies.
A density of n fingerprints on a table of w-bit keys (n / 2^w per bucket) is reproduced with
m = n / 2^s of them (s the least shift with m <= the sample) on keys shortened by s bits: each
bucket then holds what it would at n, with the skew of real text (empty and near-empty
texts, exact copies, common bits). Per plan and n: candidates per lookup (every sample
fingerprint looks up its own keys; itself not counted) against the uniform expectation, the
99th percentile of the bucket a lookup reads, hot buckets (over HOT times the mean), rows and
bytes per fingerprint projected to the 7-day window and to the archive, and PostgreSQL's
lookup latency on a table of the m fingerprints' shortened rows (one `= ANY` statement per
lookup, the service's form). Then `python -m dedup duplicates` and the Spark job (local[2],
a cold and a warm run in one session) on the same input.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from bench import provenance
from dedup.engine import Fingerprinter
from dedup.engine.plan import Plan, plan_for

RESULTS = Path(__file__).parent / "results" / "scale.md"
SIZES = (10**8, 10**9, 10**10)
WINDOW = 170_000_000  # 1M an hour kept 7 days
ARCHIVE = 10**10
HOT = 10  # a bucket over HOT times the mean is hot
# Bytes per segment row: today's PostgreSQL row with its indexes (bench/results/pgindex.md),
# and the original design's row (4-byte key, 1-byte table, 8-byte fingerprint).
PG_ROW = 141
SEED_ROW = 13
SHUFFLE_ROW = 20  # the Spark job's shuffled row: table (4), key (8), fingerprint (8)
LOOKUPS = 500
CONNINFO = os.environ.get("DEDUP_BENCH_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")


def plans() -> list[tuple[str, Plan]]:
    """Return the plans simulated: the classic k=3 ones, the service's default, and what the
    planner picks at k_max=4 for the window and for the archive."""
    return [
        ("k=3, 4 blocks", Plan.even(4, 3)),
        ("k=3, 5 blocks", Plan.even(5, 3)),
        ("service default (k_max 4, capacity 10^6)", plan_for(10**6, 4).plan),
        ("planner, k_max 4, capacity 1.7*10^8", plan_for(WINDOW, 4).plan),
        ("planner, k_max 4, capacity 10^10", plan_for(ARCHIVE, 4).plan),
    ]


def real_fingerprints() -> np.ndarray:
    """Return the fingerprints (uint64) of every benchmark source text and labelled copy."""
    from bench.corpus import _sources, build_corpus

    texts = [text for source in _sources() for _, text in source.texts]
    texts += [doc.text for doc in build_corpus(per_band=300) if doc.kind != "original"]
    fingerprinter = Fingerprinter()
    values = [fingerprinter.fingerprint(text).value for text in texts]
    return np.array([v for v in values if v is not None], dtype=np.uint64)


def simulate(plan: Plan, n: int, values: np.ndarray, rng: np.random.Generator) -> dict | None:
    """Return the bucket figures of `plan` at n fingerprints, from a sample of real ones; None
    when the sample is too small for that density (a key would lose all its bits)."""
    shift = max(0, math.ceil(math.log2(n / len(values))))
    if shift > min(plan.key_bits):
        return None
    m = round(n / 2**shift)
    sample = rng.choice(values, m, replace=False) if m < len(values) else values
    keys = plan.keys(sample) >> np.uint64(shift)
    per_lookup = np.zeros(len(sample), dtype=np.int64)
    read, hot, hot_rows = [], 0, 0
    for t in range(plan.table_count):
        _, inverse, counts = np.unique(keys[t], return_inverse=True, return_counts=True)
        bucket = counts[inverse]
        per_lookup += bucket - 1
        read.append(bucket)
        mean = n / 2 ** plan.key_bits[t]
        hot += int((counts > HOT * max(mean, 1)).sum())
        hot_rows += int(counts[counts > HOT * max(mean, 1)].sum())
    read = np.concatenate(read)
    return {
        "sample": len(sample),
        "shift": shift,
        "keys": keys,
        "values": sample,
        "candidates": float(per_lookup.mean()),
        "expected": plan.cost(n).expected_candidates,
        "p99_bucket": float(np.percentile(read, 99)),
        "max_bucket": int(read.max()),
        "hot": hot,
        "hot_share": hot_rows / (len(sample) * plan.table_count),
    }


def pg_latency(plan: Plan, keys: np.ndarray, values: np.ndarray, rng) -> tuple[float, float]:
    """Return p50 and p99 ms of one `= ANY` lookup per query on a table of these rows (one
    bigint per row: table and shortened key), filtered by distance in SQL."""
    import psycopg

    tables = plan.table_count
    combined = (np.arange(tables, dtype=np.uint64)[:, None] << np.uint64(56)) | keys
    with psycopg.connect(CONNINFO, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_scale_rows")
        conn.execute(
            "CREATE UNLOGGED TABLE bench_scale_rows (k bigint NOT NULL, fp bigint NOT NULL)"
        )
        signed = values.view(np.int64)
        with conn.cursor().copy("COPY bench_scale_rows (k, fp) FROM STDIN") as copy:
            for t in range(tables):
                for k, fp in zip(combined[t].view(np.int64).tolist(), signed.tolist(), strict=True):
                    copy.write_row((k, fp))
        conn.execute("CREATE INDEX ON bench_scale_rows (k) INCLUDE (fp)")
        conn.execute("VACUUM ANALYZE bench_scale_rows")
        picks = rng.choice(len(values), min(LOOKUPS, len(values)), replace=False)
        times = []
        for i in picks.tolist():
            wanted = combined[:, i].view(np.int64).tolist()
            start = time.perf_counter()
            conn.execute(
                "SELECT fp FROM bench_scale_rows WHERE k = ANY(%s) "
                "AND bit_count((fp # %s)::bit(64)) <= %s",
                (wanted, int(signed[i]), plan.k_max),
            ).fetchall()
            times.append(time.perf_counter() - start)
        conn.execute("DROP TABLE bench_scale_rows")
    return float(np.percentile(times, 50)) * 1e3, float(np.percentile(times, 99)) * 1e3


def spark_rounds(per_band: int) -> list[str]:
    """Return table rows: duplicates and the Spark job (cold, warm) on one labelled corpus."""
    from bench.corpus import build_corpus
    from dedup.cli import main as cli
    from dedup.spark import job

    docs = build_corpus(per_band=per_band)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "corpus.jsonl"
        with source.open("w", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps({"id": doc.id, "text": doc.text}, ensure_ascii=False) + "\n")
        size = source.stat().st_size / 1e6
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()) as found:
            cli(["duplicates", "--input", str(source)])
        took = time.perf_counter() - start
        pairs = found.getvalue().count("\n")
        out.append(
            _rate("`python -m dedup duplicates` (one process)", len(docs), size, pairs, took)
        )
        started = time.perf_counter()
        with job.session("local[2]") as spark:
            startup = time.perf_counter() - started
            for label in ("cold", "warm"):
                summary = job.run(spark, source=str(source), output=f"{tmp}/{label}")
                name = f"Spark job, local[2], {label} (session start {startup:.0f} s not counted)"
                out.append(_rate(name, len(docs), size, summary.pairs, summary.seconds))
    return out


def _rate(name: str, docs: int, size: float, pairs: int, took: float) -> str:
    return f"| {name} | {docs:,} | {size:.1f} | {pairs:,} | {took:.1f} | {docs / took:,.0f} |"


def header(argv: list[str]) -> list[str]:
    """Return the lines naming the commit, the date, the machine and the versions."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    environment = [f"DEDUP_BENCH_PG='{CONNINFO}'"] if "DEDUP_BENCH_PG" in os.environ else []
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    libraries = ", ".join(
        f"{name} {version(name)}" for name in ("numpy", "rjieba", "pyspark", "psycopg")
    )
    return [
        f"Commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{cpu} ({os.cpu_count()} cores, shared with other work: see the load), "
        f"Python {platform.python_version()}, {libraries}, "
        f"{(java.stderr.splitlines() or ['no java'])[0]}; load average "
        f"{os.getloadavg()[0]:.1f} at the start.",
        "",
        f"Command: `{' '.join([*environment, 'python -m bench.scale', *argv])}`",
    ]


def main(argv: list[str] | None = None) -> None:
    """Run the simulation (and the Spark rounds); print the tables and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL's lookups")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark rounds")
    parser.add_argument("--per-band", type=int, default=50, help="size of the Spark corpus")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args(argv)
    lines = header(sys.argv[1:] if argv is None else argv)

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    start = time.perf_counter()
    values = real_fingerprints()
    rng = np.random.default_rng(args.seed)
    say()
    say(
        f"{len(values):,} real fingerprints ({time.perf_counter() - start:.0f} s to compute). "
        f"Candidates per lookup: fingerprints read over all tables (uniform: what evenly "
        f"spread fingerprints would give); p99 bucket: of the buckets lookups read; hot: "
        f"buckets over {HOT}x the mean, and the share of rows in them. Bytes per fingerprint: "
        f"at {PG_ROW} B per PostgreSQL row with its indexes (today's, bench/results/pgindex.md) "
        f"and at the original design's {SEED_ROW} B row."
    )
    say()
    say(
        "| plan | tables | key bits | n | sample (key shift) | candidates/lookup | uniform "
        "| p99 bucket | largest | hot buckets (rows) | PG lookup p50 / p99 ms |"
    )
    say("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, plan in plans():
        bits = f"{min(plan.key_bits)}-{max(plan.key_bits)}"
        for n in SIZES:
            found = simulate(plan, n, values, rng)
            if found is None:
                cost = plan.cost(n)
                say(
                    f"| {name} {plan.version} | {plan.table_count} | {bits} | {n:.0e} | too "
                    f"few real fingerprints for {cost.expected_bucket:,.0f} per bucket | | "
                    f"{cost.expected_candidates:,.0f} | | | | |"
                )
                continue
            pg = "not run"
            if not args.no_pg:
                p50, p99 = pg_latency(plan, found["keys"], found["values"], rng)
                pg = f"{p50:.2f} / {p99:.2f}"
            say(
                f"| {name} {plan.version} | {plan.table_count} | {bits} | {n:.0e} "
                f"| {found['sample']:,} ({found['shift']}) | {found['candidates']:,.1f} "
                f"| {found['expected']:,.1f} | {found['p99_bucket']:,.0f} "
                f"| {found['max_bucket']:,} | {found['hot']:,} ({found['hot_share']:.1%}) "
                f"| {pg} |"
            )
    say()
    say("Rows and bytes per fingerprint, projected (segment rows only; the article rows aside):")
    say()
    say(
        "| plan | rows/fp | B/fp at 141 | B/fp at 13 | window rows | window at 141 | "
        "window at 13 | archive rows | archive at 13 | archive shuffle (Spark) |"
    )
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, plan in plans():
        t = plan.table_count
        say(
            f"| {name} {plan.version} | {t} | {t * PG_ROW:,} | {t * SEED_ROW} "
            f"| {WINDOW * t:.2e} | {WINDOW * t * PG_ROW / 1e12:,.2f} TB "
            f"| {WINDOW * t * SEED_ROW / 1e12:,.2f} TB | {ARCHIVE * t:.1e} "
            f"| {ARCHIVE * t * SEED_ROW / 1e12:,.1f} TB "
            f"| {ARCHIVE * t * SHUFFLE_ROW / 1e12:,.1f} TB |"
        )
    if not args.no_spark:
        say()
        say("Throughput on one labelled corpus (bench/corpus.py), the same input and verdicts:")
        say()
        say("| runner | articles | MB | pairs | s | articles/s |")
        say("|---|---:|---:|---:|---:|---:|")
        for row in spark_rounds(args.per_band):
            say(row)
    provenance.write(RESULTS, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
