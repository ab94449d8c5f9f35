"""The web tier under load while an upload is processed: N clients for a fixed time.

    ./dev bench load     (or: python -m bench.load [--clients 20] [--seconds 60] [--think 1]
                          [--rounds 2] [--upload 20000])

A fresh database (`dedup_bench_load`, or DEDUP_BENCH_DB) on 127.0.0.1:5432 and Redis
(DEDUP_BENCH_REDIS_URL, db 9 by default) under the key prefix `bench-load:`; gunicorn as the
image runs it (gunicorn.conf.py: workers and threads) on a free port and one Celery worker
(prefork, 2 processes). First a corpus is loaded and processed (the queue then has pairs to
show); then rounds alternate, each the upload of the same file: ingestion alone, loaded,
alone, loaded, alone (`--rounds` loaded rounds per `--think`). A round's rate is the articles
processed over its window: from the upload to its end or to the end of the load's time,
whichever comes first. The rest of the upload is processed after the window, uncounted; then
the upload is deleted (services.upload_delete) and the database vacuumed, so that every round
does the same work on the same index (the synthetic stream's filler recombines one month's
paragraphs: an index grown by an upload a round makes each look-up slower, and the rounds
would measure that). The upload is large enough that ingestion spans most of the window
alone and all of it under the load, so that one slow stretch of a shared machine weighs
little.
In a loaded round N clients, each in its own thread, ask in turn for the queue, the compare
page of a matched pair, `POST /api/check` with an article's text and `GET
/api/articles/<id>`, waiting a random think time after each answer (1 s: editors at work;
0: back to back, the web tier saturated). Each loaded round's rate is taken as a share of the
mean of the alone rounds either side of it; the figure is the mean of those shares, each
round's shown. Each endpoint's requests per second,
p50, p99 and errors per round, and the CPU each role used per round (bench/cpumeter.py:
gunicorn, the clients, the worker, their PostgreSQL backends and the rest of the machine)
go to bench/results/load.md. Everything runs on this machine's cores, the clients too:
figures of a shared machine, to compare with runs of the same machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.cpumeter import CpuMeter
from bench.load_clients import Clients, credentials, free_port, gunicorn, named
from bench.pipeline import REDIS_URL, ROOT, SERVER_URL, WORK_DIR, Workers, build_stream, write_jsonl

DB_NAME = os.environ.get("DEDUP_BENCH_DB", "dedup_bench_load")  # one per checkout
PREFIX = "bench-load:"
DRAIN_TIMEOUT = 1800  # seconds an upload may take to finish after its round


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dedup.settings",
        "DATABASE_URL": f"{SERVER_URL}/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "DEDUP_REDIS_PREFIX": PREFIX,
        "SECRET_KEY": "bench-only-secret",
        "DEBUG": "0",
        "DEDUP_HTTPS": "0",
        "DEDUP_API_RATE_LIMIT": "0",
        "DEDUP_VAR_DIR": str(WORK_DIR / "load-var"),
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


def reset(env: dict) -> None:
    """A fresh database, migrated; the prefix's Redis keys deleted."""
    import psycopg
    import redis

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=f"{PREFIX}*", count=1000):
        client.delete(key)
    client.close()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip


@dataclasses.dataclass
class Round:
    """One upload timed: alone (think None) or while the clients ask (think: their wait)."""

    number: int
    think: float | None
    articles: int = 0  # processed within the window
    seconds: float = 0.0  # the window: from the upload to its end or to the load's
    cpu: dict = dataclasses.field(default_factory=dict)  # CPU seconds per role, the window
    load_cpu: dict = dataclasses.field(default_factory=dict)  # over the load, "requests"
    clients: Clients | None = None

    @property
    def rate(self) -> float:
        return self.articles / self.seconds if self.seconds else 0.0

    @property
    def name(self) -> str:
        return "alone" if self.think is None else f"loaded, think {self.think:g} s"


def rounds_planned(thinks: list[float], rounds: int) -> list[Round]:
    """Alone first, then each loaded round followed by one alone."""
    planned = [None]
    for _ in range(rounds):
        for think in thinks:
            planned += [think, None]
    return [Round(number, think) for number, think in enumerate(planned, start=1)]


def upload_start(path: Path):
    """Upload a file as the web form does; return its UploadBatch."""
    from django.core.files import File

    from dedup import services

    with path.open("rb") as stream:
        return services.upload_create(file=File(stream, name=path.name), name=path.name)


def upload_watch(batch, start: float, until: float) -> tuple[int, float]:
    """Wait until the upload is processed or `until` (time.monotonic()); return the
    articles processed and the seconds since `start`."""
    from dedup.models import Article, UploadBatch

    while time.monotonic() < until:
        if UploadBatch.objects.get(pk=batch.pk).state in ("done", "failed"):
            break
        time.sleep(0.25)
    seconds = time.monotonic() - start
    processed = Article.objects.filter(upload=batch, status__in=("done", "exact")).count()
    return processed, seconds


def upload_finish(batch) -> None:
    """Wait until the upload is processed (its rest, after its round: not counted)."""
    start = time.monotonic()
    upload_watch(batch, start, start + DRAIN_TIMEOUT)


def upload_undone(batch) -> None:
    """Delete the upload with all that hangs on it, then vacuum: the index as before it."""
    import psycopg

    from dedup import services

    services.upload_delete(upload_id=batch.pk)
    with psycopg.connect(f"{SERVER_URL}/{DB_NAME}", autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def round_run(run: Round, path: Path, args, groups: dict, clients: Clients | None) -> None:
    """Time the upload of `path` over at most the load's time, the clients asking if any;
    fill in the round's figures, then wait until the upload is processed."""
    meters = [CpuMeter(groups, DB_NAME, SERVER_URL).start() for _ in range(2 if clients else 1)]
    start = time.monotonic()
    until = start + args.seconds
    batch = upload_start(path)
    asking = time.monotonic()
    threads = clients.threads(args.clients, until, run.think) if clients else []
    run.articles, run.seconds = upload_watch(batch, start, until)
    run.cpu = {**meters[0].stop(), "seconds": run.seconds}
    for thread in threads:
        thread.join()
    if clients is not None:
        run.clients = clients
        requests = sum(len(times) for times in clients.latencies.values())
        run.load_cpu = {**meters[1].stop(), "seconds": until - asking, "requests": requests}
    print(f"  round {run.number} ({run.name}): {run.rate:,.1f} articles/s", flush=True)
    upload_finish(batch)
    upload_undone(batch)


def files_written(args) -> tuple[list[dict], dict[str, Path]]:
    """Write the corpus and the rounds' upload; return the rows and the files."""
    rows, _ = build_stream(args.corpus + args.upload, args.seed)
    paths = {"corpus": WORK_DIR / "load-corpus.jsonl", "upload": WORK_DIR / "load-upload.jsonl"}
    write_jsonl(rows[: args.corpus], paths["corpus"])
    write_jsonl(rows[args.corpus :], paths["upload"])
    return rows, paths


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--think", type=float, nargs="+", default=[1.0],
        help="each client's mean wait after an answer, seconds; loaded rounds per value "
        "(0: back to back, the web tier saturated)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=2, help="loaded rounds per think")
    parser.add_argument("--corpus", type=int, default=3000, help="articles loaded first")
    parser.add_argument(
        "--upload", type=int, default=20000,
        help="articles of each round's upload: more than the load's time processes",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def main() -> None:
    args = arguments()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    env = environment()
    os.environ.update(env)
    print(f"Fresh database {DB_NAME}...", flush=True)
    reset(env)
    import django

    django.setup()
    from bench.load_report import report
    from dedup.models import Article, Match

    rows, paths = files_written(args)
    planned = rounds_planned(args.think, args.rounds)
    workers = Workers(named(env, "worker"), 2, "prefork")
    server = None
    try:
        workers.start()
        print(f"Loading the corpus ({args.corpus:,} articles)...", flush=True)
        upload_finish(upload_start(paths["corpus"]))
        cookie, token = credentials()
        pairs = list(Match.objects.values_list("a_id", "b_id")[:500])
        ids = list(Article.objects.values_list("id", flat=True)[:2000])
        texts = [row["text"] for row in random.Random(args.seed).sample(rows, 200)]
        port = free_port()
        server = gunicorn(env, port)  # idle in the alone rounds, as a service nobody asks
        groups = {process.pid: "worker" for process, _ in workers.processes}
        groups[server.pid] = "web"
        for run in planned:
            clients = None
            if run.think is not None:
                clients = Clients(port, cookie, token, pairs, texts, ids)
                clients.warm()
            print(f"Round {run.number}: {run.name}...", flush=True)
            round_run(run, paths["upload"], args, groups, clients)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
        workers.stop()
    report(args, planned)


if __name__ == "__main__":
    main()
