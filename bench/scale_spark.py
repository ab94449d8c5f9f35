"""The Spark job against `duplicates` per core, on the same articles (issue 30).

    ./dev bench scale_spark     (or: python -m bench.scale_spark [--articles 100000]
                                 [--archive-share 0.9] [--master local[2]])

The articles are bench.pipeline's stream (People's Daily texts of about 800 and 1,600
characters, about 12% near and partial copies, 2% exact copies), one JSON Lines file. Each
runner is a child process: `python -m dedup duplicates` (one process, one core) and
`python -m dedup spark --master local[2]` (a JVM, its Python workers), and the CPU seconds
are those of the child and everything under it (user + system; getrusage of the children
once it has exited, and the process group sampled from /proc every half second, whichever
is larger: a process that is not waited for is not in the first). Per runner: wall seconds,
CPU seconds, CPU milliseconds per article, articles per CPU-second, and the per-core ratio
(the job's CPU per article over the command line's). Both must write the same pairs (the run
stops otherwise).

Archive mode: the first `--archive-share` of the articles as a Parquet archive, the rest as
the new batch (`--archive`), against `duplicates` over all of them (the pairs with a new
article kept). The table goes to bench/results/scale_spark.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import provenance
from bench.cpumeter import _stat

RESULTS = Path(__file__).parent / "results" / "scale_spark.md"
DRIVER_MEMORY = "2g"  # with the workers, under 3 GB at 10^5 articles (no bigmem lock)


class TreeCpu:
    """CPU seconds of a child process and its descendants (one process group)."""

    def __init__(self, argv: list[str], env: dict, stdout) -> None:
        self.before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.start = time.perf_counter()
        self.process = subprocess.Popen(
            argv, env=env, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True
        )
        self.last: dict[int, float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        group = self.process.pid
        while not self.done.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[0] == group:
                    self.last[int(entry.name)] = stat[1]
            self.done.wait(0.5)

    def wait(self) -> tuple[int, float, float, str]:
        """Return the exit code, wall seconds, CPU seconds and standard error."""
        _, err = self.process.communicate()
        wall = time.perf_counter() - self.start
        self.done.set()
        self.thread.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        waited = (after.ru_utime - self.before.ru_utime) + (after.ru_stime - self.before.ru_stime)
        sampled = sum(self.last.values())
        return self.process.returncode, wall, max(waited, sampled), err.decode()


def run(argv: list[str], out: Path | None = None, memory: str = DRIVER_MEMORY) -> dict:
    # The driver's JVM holds the local executors: Spark's default 1 GiB is short at 10^5.
    submit = f"--driver-memory {memory} pyspark-shell"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYSPARK_SUBMIT_ARGS": submit}
    with open(out or os.devnull, "wb") as stdout:
        meter = TreeCpu([sys.executable, "-m", "dedup", *argv], env, stdout)
        code, wall, cpu, err = meter.wait()
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {code}:\n{err[:20000]}")
    return {"wall": wall, "cpu": cpu, "stderr": err.strip().splitlines()[-1:]}


def pairs_of(path: Path) -> list:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": [str(r["id"]) for r in rows], "text": [r["text"] for r in rows]})
    pq.write_table(table, path)


def main(argv: list[str] | None = None) -> None:
    from bench.pipeline import build_stream, write_jsonl

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--archive-share", type=float, default=0.9)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-archive", action="store_true", help="skip the archive mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--driver-memory", default=DRIVER_MEMORY, help="the Spark JVM's heap")
    args = parser.parse_args(argv)
    lines = [
        f"Load average {os.getloadavg()[0]:.1f} at the start (2 cores shared with other work).",
        "",
    ]

    command = " ".join(["python -m bench.scale_spark", *(sys.argv[1:] if argv is None else argv)])

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)
        if line.startswith("| "):  # each row as it comes: a long run leaves what it measured
            provenance.write(RESULTS, "\n".join(lines) + "\n", command)

    rows, kinds = build_stream(args.articles, args.seed)
    count = len(rows)
    cut = None if args.no_archive else round(count * args.archive_share)
    with tempfile.TemporaryDirectory(prefix="scale-spark-") as tmp:
        base = Path(tmp)
        source = base / "articles.jsonl"
        size = write_jsonl(rows, source) / 1e6
        if cut is not None:
            write_parquet(rows[:cut], base / "archive.parquet")
            write_jsonl([{**r, "id": str(r["id"])} for r in rows[cut:]], base / "batch.jsonl")
            new = {str(r["id"]) for r in rows[cut:]}
        del rows  # the runners' memory, not this process's
        say(f"{count:,} articles, {size:,.1f} MB ({dict(kinds)})")
        say()
        say(
            "| mode | runner | articles | pairs | wall s | CPU s | CPU ms/article "
            "| articles per CPU-s | per-core ratio |"
        )
        say("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        cli = run(["duplicates", "--input", str(source)], base / "cli.jsonl")
        everything = pairs_of(base / "cli.jsonl")
        say(_row("all articles", "duplicates, one process", count, len(everything), cli))
        for mode in ("whole",) if cut is None else ("whole", "archive"):
            spark_argv = ["spark", "--master", args.master, "--output", str(base / mode)]
            expected = everything
            if mode == "whole":
                spark_argv += ["--input", str(source)]
                label = "all articles"
            else:
                batch, archive = base / "batch.jsonl", base / "archive.parquet"
                spark_argv += ["--input", str(batch), "--archive", str(archive)]
                expected = [
                    {**p, "a": str(p["a"]), "b": str(p["b"])}
                    for p in everything
                    if str(p["a"]) in new or str(p["b"]) in new
                ]
                label = f"{len(new):,} new against {cut:,} stored"
            job = run(spark_argv, memory=args.driver_memory)
            found = pairs_of(base / mode / "pairs.jsonl")
            say(_row(label, f"spark {args.master}", count, len(found), job, cli))
            if found != expected:
                say(f"**The pairs differ** ({len(found):,} against {len(expected):,}).")
            print(f"  job: {job['stderr']}", flush=True)
    provenance.write(RESULTS, "\n".join(lines) + "\n", command)


def _row(label: str, name: str, articles: int, pairs: int, result: dict, cli=None) -> str:
    """Return a table row; `cli`, the command line's result, for the per-core ratio."""
    ms = result["cpu"] / articles * 1e3
    ratio = "1" if cli is None else f"{result['cpu'] / cli['cpu']:.2f}"
    return (
        f"| {label} | {name} | {articles:,} | {pairs:,} | {result['wall']:,.0f} "
        f"| {result['cpu']:,.0f} | {ms:.2f} | {1e3 / ms:,.0f} | {ratio} |"
    )


if __name__ == "__main__":
    main()
