"""One short template filled in by the hundred thousand, uploaded as a zip (issue 32).

    ./dev bench flood     (or: python -m bench.flood [--rows 100000 200000] [--workers 2])

Each run: a fresh `dedup_bench` database and Redis db 9 (as bench.pipeline), a zip of one
JSON Lines file whose rows are "Order N has shipped from the warehouse today" (N counting up),
uploaded as the web process would, two workers. It reports, per size: the seconds from the
upload to the last article processed, the workers' peak resident memory (the worker's process
tree, sampled every half second), the matches stored, and the most candidates a chunk of
DEDUP_CHUNK_SIZE articles verified (from the workers' logs). The table goes to
bench/results/flood.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

from bench import provenance
from bench.pipeline import (
    DB_NAME,
    REDIS_URL,
    ROOT,
    WORK_DIR,
    Workers,
    bench_env,
    broker_flush,
    database_reset,
    run_pipeline,
)

RESULTS = Path(__file__).parent / "results" / "flood.md"
TEMPLATE = "Order {} has shipped from the warehouse today"
_CANDIDATES = re.compile(r"; candidates (\d+)")


def tree_rss(pid: int) -> int:
    """Return the resident bytes of a process and its descendants (from /proc)."""
    total, todo = 0, [pid]
    while todo:
        one = todo.pop()
        try:
            status = Path(f"/proc/{one}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024
            children = Path(f"/proc/{one}/task/{one}/children").read_text().split()
        except (OSError, AttributeError):
            continue
        todo += [int(child) for child in children]
    return total


def write_zip(rows: int, path: Path) -> int:
    """Write the template's rows as one JSON Lines member of a zip; return its bytes."""
    lines = io.StringIO()
    for n in range(rows):
        lines.write(json.dumps({"id": f"o{n}", "text": TEMPLATE.format(100_000 + n)}) + "\n")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("orders.jsonl", lines.getvalue())
    return path.stat().st_size


def one_run(rows: int, workers: int, env: dict) -> dict:
    """Upload `rows` rows to a fresh database and two workers; return the figures."""
    from django.db import connections

    connections.close_all()  # the last run's: the reset drops its database
    database_reset()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
        check=True,
    )  # fmt: skip
    broker_flush()
    path = WORK_DIR / f"orders-{rows}.zip"
    size = write_zip(rows, path)
    started = Workers(env, workers, "prefork").start()
    peak, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            peak[0] = max(peak[0], sum(tree_rss(p.pid) for p, _ in started.processes))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        pipe = run_pipeline(path, rows, started, timeout=3600)
    finally:
        stop.set()
        sampler.join()
        logs = started.logs()
        started.stop()
    from dedup.models import Match

    candidates = [int(n) for n in _CANDIDATES.findall(logs)]
    return {
        "rows": rows,
        "zip_kb": size / 1024,
        "seconds": pipe["seconds"],
        "processed": pipe["processed"],
        "peak_mb": peak[0] / 2**20,
        "matches": Match.objects.count(),
        "most_candidates": max(candidates, default=0),
        "timed_out": pipe["timed_out"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000])
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    args = parser.parse_args()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(WORK_DIR / "var", ignore_errors=True)
    env = {**os.environ, **bench_env(200)}
    os.environ.update(env)
    import django

    django.setup()
    chunk = int(env.get("DEDUP_CHUNK_SIZE", 400))
    lines = [
        f"One template, `{TEMPLATE}`, {args.workers} workers (one prefork worker), chunks of "
        f"{chunk}, database {DB_NAME}, Redis {REDIS_URL}.",
        "",
        "| rows | zip | processed | seconds | rows/s | workers' peak RSS | matches "
        "| most candidates in a chunk |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rows in args.rows:
        print(f"{rows:,} rows...", flush=True)
        got = one_run(rows, args.workers, env)
        print(f"  {got}", flush=True)
        lines.append(
            f"| {rows:,} | {got['zip_kb']:,.0f} KB | {got['processed']:,} "
            f"| {got['seconds']:,.0f}{' (timed out)' if got['timed_out'] else ''} "
            f"| {got['processed'] / max(got['seconds'], 1e-9):,.0f} | {got['peak_mb']:,.0f} MB "
            f"| {got['matches']:,} | {got['most_candidates']:,} |"
        )
    text = "# A one-template upload\n\n" + "\n".join(lines) + "\n"
    print(text)
    provenance.write(RESULTS, text)


if __name__ == "__main__":
    main()
