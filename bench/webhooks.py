"""Does a slow webhook slow matching? The pipeline's rate with a webhook whose receiver takes
2 s to answer, beside the rate with none.

    ./dev bench webhooks     (or: python -m bench.webhooks [--articles 10000] [--rounds 2])

The stream of bench/pipeline.py (distinct news, near, partial and exact copies), uploaded to a
fresh database (`--database`, dropped and created) on Redis (`--redis`, flushed) and processed
by one prefork worker (concurrency 2) on the default queue, with a webhooks worker (threads,
8) beside it on the `webhooks` queue. Each round runs twice, without and with a webhook that
wants every match, decision and upload, pointed at a receiver in this process that answers
each delivery after `--delay` seconds; rounds alternate which goes first, so that a busy
moment of the machine does not always fall on the same side. The table goes to
bench/results/webhooks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench import pipeline, provenance

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "webhooks.md"
SERVER_URL = "postgres://postgres@127.0.0.1:5432"


class SlowReceiver:
    """An HTTP receiver on 127.0.0.1 answering 200 after `delay` seconds, counting."""

    def __init__(self, delay: float):
        self.received = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(delay)
                receiver.received += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def database_reset(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")


def broker_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()


def webhooks_worker(env: dict) -> tuple[subprocess.Popen, Path]:
    """Start a worker on the webhooks queue (threads, 8); wait until it is ready."""
    log_path = pipeline.WORK_DIR / "webhooks-worker.log"
    log_path.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "celery", "-A", "dedup.celery", "worker", "-Q", "webhooks",
        "--pool", "threads", "--concurrency", "8", "-n", f"hooks-{uuid.uuid4().hex[:6]}@%h",
        "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + pipeline.START_TIMEOUT
    while " ready." not in log_path.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"webhooks worker did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    return process, log_path


def one_run(args, env: dict, path: Path, lines: int, receiver: SlowReceiver | None) -> dict:
    """Process the stream on a fresh database, with or without a webhook; return figures."""
    from django.db import connections

    connections.close_all()
    database_reset(args.database)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
        check=True,
    )  # fmt: skip
    broker_flush(args.redis)
    from dedup import index, services
    from dedup.models import Match, Webhook, WebhookDelivery

    index.caches_clear()
    if receiver is not None:
        services.webhook_start(webhook=Webhook(url=receiver.url, secret="bench"))
    received_before = receiver.received if receiver else 0
    workers = pipeline.Workers(env, 2, "prefork")
    hooks = None
    try:
        workers.start()
        hooks = webhooks_worker(env)
        run = pipeline.run_pipeline(path, lines, workers, args.timeout)
    finally:
        workers.stop()
        if hooks is not None:
            hooks[0].terminate()
            hooks[0].wait(30)
    run["matches"] = Match.objects.count()
    run["deliveries"] = WebhookDelivery.objects.count()
    run["received"] = (receiver.received - received_before) if receiver else 0
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--delay", type=float, default=2.0, help="the receiver's seconds")
    parser.add_argument("--database", default="dedup_bench_webhooks")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--seed", type=int, default=1998)
    args = parser.parse_args()

    # Our own files (the workers' logs, the stream): not those of a pipeline bench running.
    pipeline.WORK_DIR = Path(tempfile.gettempdir()) / f"dedup-bench-webhooks-{args.database}"
    pipeline.WORK_DIR.mkdir(parents=True, exist_ok=True)
    rows, kinds = pipeline.build_stream(args.articles, args.seed)
    path = pipeline.WORK_DIR / "webhooks-articles.jsonl"
    size = pipeline.write_jsonl(rows, path)
    env = {**os.environ, **pipeline.bench_env(max(200, int(size / 2**20) + 10))}
    env.update({"DATABASE_URL": f"{SERVER_URL}/{args.database}", "REDIS_URL": args.redis})
    env["DEDUP_REDIS_PREFIX"] = ""  # its own Redis database, flushed: no prefix
    env["DEDUP_VAR_DIR"] = str(pipeline.WORK_DIR / "var")
    os.environ.update(env)
    import django

    django.setup()

    receiver = SlowReceiver(args.delay)
    runs: list[tuple[int, str, dict]] = []
    try:
        for number in range(args.rounds):
            order = ("none", "webhook") if number % 2 == 0 else ("webhook", "none")
            for side in order:
                print(f"Round {number + 1}, {side}:", flush=True)
                run = one_run(args, env, path, len(rows), receiver if side == "webhook" else None)
                print(
                    f"  {run['rate']:,.0f} articles/s, {run['matches']:,} matches, "
                    f"{run['deliveries']:,} deliveries made, {run['received']:,} answered",
                    flush=True,
                )
                runs.append((number + 1, side, run))
    finally:
        receiver.close()
    report(args, kinds, size, runs)


def report(args, kinds, size: int, runs: list[tuple[int, str, dict]]) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    import celery
    import django

    lines = [
        f"{args.articles:,} articles ({size / 1e6:.0f} MB, {dict(kinds)}) uploaded and processed"
        " by one prefork worker (concurrency 2), a webhooks worker (threads, 8) beside it;"
        f" with a webhook, every match, decision and upload goes to a receiver answering after"
        f" {args.delay:g} s. Commit {commit}; {platform.node()}, {os.cpu_count()} cores shared"
        f" by PostgreSQL, Redis, the workers, the receiver and other jobs; Python"
        f" {platform.python_version()}, Django {django.get_version()}, Celery"
        f" {celery.__version__}. Command: `python -m bench.webhooks --articles {args.articles}"
        f" --rounds {args.rounds} --delay {args.delay:g}`. The first round is cold (a fresh"
        " worker's caches, the first migrate).",
        "",
        "| round | webhook | articles/s | seconds | matches | deliveries made"
        " | answered by the end |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for number, side, run in runs:
        lines.append(
            f"| {number} | {side} | {run['rate']:,.0f} | {run['seconds']:.1f} |"
            f" {run['matches']:,} | {run['deliveries']:,} | {run['received']:,} |"
        )
    none = [run["rate"] for _, side, run in runs if side == "none"]
    hooked = [run["rate"] for _, side, run in runs if side == "webhook"]
    ratio = (sum(hooked) / len(hooked)) / (sum(none) / len(none))
    lines += [
        "",
        f"Mean rate with the webhook / without: {ratio:.3f} ({100 * (ratio - 1):+.1f}%)."
        " Deliveries are made as matches are written (a task per chunk reads the new ones"
        " after the webhook's cursor) and wait in their own queue; the receiver's 2 s each"
        " keep only the webhooks worker's threads busy.",
    ]
    provenance.write(RESULTS, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
