"""The web tier under load while an upload is processed: N clients for a fixed time.

    ./dev bench load     (or: python -m bench.load [--clients 20] [--seconds 60] [--think 1 0])

A fresh database `dedup_bench_load` on 127.0.0.1:5432 and Redis db 9 under the key prefix
`bench-load:`; gunicorn as the image runs it (gunicorn.conf.py: workers and threads) on a
free port and one Celery worker (prefork, 2 processes). First a corpus is loaded and
processed (the queue then has pairs to show), then uploads of the same size are timed: one
alone (ingestion's rate without load), then one per run while N clients (its rate over the
load's time, or until it ends), then one alone again. The clients, each in its own thread,
ask in turn for the queue, the compare page of a matched pair, `POST /api/check` with an
article's text and `GET /api/articles/<id>`, waiting a random think time after each answer
(a run per `--think`: 1 s, editors at work, and 0, back to back: the web tier saturated). Each
endpoint's requests per second, p50 and p99 and errors go to bench/results/load.md, with
ingestion's rate under load as a share of its rate alone (the mean of the two), and the CPU
each role used (bench/cpumeter.py: gunicorn, the clients, the worker, their PostgreSQL
backends and the rest of the machine). Everything runs on this machine's cores, the clients
too: figures of a shared machine, to compare with runs of the same machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench import provenance
from bench.cpumeter import CpuMeter, cpu_table
from bench.pipeline import ROOT, SERVER_URL, WORK_DIR, Workers, build_stream, write_jsonl

RESULTS = Path(__file__).parent / "results" / "load.md"
DB_NAME = "dedup_bench_load"
REDIS_URL = "redis://127.0.0.1:6379/9"
PREFIX = "bench-load:"
ENDPOINTS = ("queue", "compare", "api/check", "api/articles")


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


def upload_and_wait(path: Path, until: float | None = None, timeout: float = 3600) -> float:
    """Upload a file as the web form does; return articles processed per second, until all
    are or, if sooner, until `until` (a time.monotonic() reading: the end of the load)."""
    from django.core.files import File

    from dedup import services
    from dedup.models import Article, UploadBatch

    start = time.monotonic()
    with path.open("rb") as stream:
        batch = services.upload_create(file=File(stream, name=path.name), name=path.name)
    processed = Article.objects.filter(upload=batch, status__in=("done", "exact"))
    while time.monotonic() - start < timeout:
        if UploadBatch.objects.get(pk=batch.pk).state in ("done", "failed"):
            break
        if until is not None and time.monotonic() >= until:
            return processed.count() / (time.monotonic() - start)
        time.sleep(0.5)
    return processed.count() / (time.monotonic() - start)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def credentials() -> tuple[str, str]:
    """An editor's session cookie (for the pages) and API token."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore

    from dedup.models import ApiToken

    user = User.objects.create_user("load-editor", password="a long enough password")
    user.groups.add(Group.objects.get(name="editor"))
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key, ApiToken.issue(user, name="load")[1]


class Clients:
    """N threads asking the endpoints in turn; latencies per endpoint."""

    def __init__(self, port: int, cookie: str, token: str, pairs, texts, ids) -> None:
        self.port, self.cookie, self.token = port, cookie, token
        self.pairs, self.texts, self.ids = pairs, texts, ids
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.lock = threading.Lock()

    def request(self, rng: random.Random, endpoint: str) -> tuple[str, str, bytes | None, dict]:
        session = {"Cookie": f"sessionid={self.cookie}"}
        api = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        if endpoint == "queue":
            return "GET", "/", None, session
        if endpoint == "compare":
            a, b = rng.choice(self.pairs)
            return "GET", f"/compare/{a}/{b}/", None, session
        if endpoint == "api/check":
            body = json.dumps({"text": rng.choice(self.texts)}).encode()
            return "POST", "/api/check", body, api
        return "GET", f"/api/articles/{rng.choice(self.ids)}", None, api

    def run(self, number: int, until: float, think: float = 0.0) -> None:
        """Ask the endpoints in turn until `until`, waiting a random time of mean `think`
        seconds (exponential) after each answer: an editor reading, not a loop."""
        rng = random.Random(number)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        turn = number
        while time.monotonic() < until:
            endpoint = ENDPOINTS[turn % len(ENDPOINTS)]
            turn += 1
            method, path, body, headers = self.request(rng, endpoint)
            start = time.monotonic()
            connection, problem = self.ask(connection, method, path, body, headers)
            with self.lock:
                self.latencies[endpoint].append(time.monotonic() - start)
                if problem:
                    self.errors[endpoint].append(problem)
            if think:
                time.sleep(min(rng.expovariate(1 / think), max(0.0, until - time.monotonic())))
        connection.close()

    def ask(self, connection, method, path, body, headers) -> tuple[object, str]:
        """Send one request; return the connection to use next and the problem, if any. A
        kept-alive connection the server closed while the client was thinking (gunicorn's
        `keepalive`) is opened again and the request sent once more, as browsers do."""
        for again in (True, False):
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                return connection, "" if response.status < 400 else f"{response.status} {path}"
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                problem = f"{type(error).__name__}: {error}"
            except (OSError, http.client.HTTPException) as error:
                problem, again = f"{type(error).__name__}: {error}", False
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            if not again:
                break
        return connection, problem


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def named(env: dict, role: str) -> dict:
    """Return `env` whose database connections carry `role` as their application_name (the
    CPU meter counts each PostgreSQL backend with the role it serves)."""
    return {**env, "DATABASE_URL": f"{env['DATABASE_URL']}?application_name={role}"}


def gunicorn(env: dict, port: int) -> subprocess.Popen:
    log = (WORK_DIR / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "dedup.wsgi", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=named(env, "web"), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError((WORK_DIR / "gunicorn.log").read_text()[-3000:])
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--think", type=float, nargs="+", default=[1.0, 0.0],
        help="each client's mean wait after an answer, seconds; a run per value "
        "(0: back to back, the web tier saturated)",
    )  # fmt: skip
    parser.add_argument("--corpus", type=int, default=3000, help="articles loaded first")
    parser.add_argument("--upload", type=int, default=1500, help="articles per timed upload")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    env = environment()
    os.environ.update(env)
    print(f"Fresh database {DB_NAME}...", flush=True)
    reset(env)
    import django

    django.setup()
    from dedup.models import Article, Match

    loaded = [f"loaded-{i}" for i in range(len(args.think))]
    names = ["corpus", "alone", *loaded, "alone-after"]
    rows, _ = build_stream(args.corpus + (len(names) - 1) * args.upload, args.seed)
    paths = {}
    for number, name in enumerate(names):
        start = 0 if number == 0 else args.corpus + (number - 1) * args.upload
        end = args.corpus + number * args.upload
        paths[name] = WORK_DIR / f"load-{name}.jsonl"
        write_jsonl(rows[start:end], paths[name])
    workers = Workers(named(env, "worker"), 2, "prefork")
    server = None
    runs = []
    try:
        workers.start()
        print(f"Loading the corpus ({args.corpus:,} articles)...", flush=True)
        upload_and_wait(paths["corpus"])
        groups = {process.pid: "worker" for process, _ in workers.processes}
        alone, cpu = [], {}
        alone_measured(paths["alone"], groups, alone, cpu)
        cookie, token = credentials()
        pairs = list(Match.objects.values_list("a_id", "b_id")[:500])
        ids = list(Article.objects.values_list("id", flat=True)[:2000])
        texts = [row["text"] for row in random.Random(args.seed).sample(rows, 200)]
        port = free_port()
        server = gunicorn(env, port)
        for number, think in enumerate(args.think):
            clients = Clients(port, cookie, token, pairs, texts, ids)
            for warm in range(3 * len(ENDPOINTS)):  # each gunicorn worker's caches
                clients.run(warm, time.monotonic() + 0.5)
            clients.latencies.clear()
            clients.errors.clear()
            print(
                f"{args.clients} clients (think {think:g} s) for {args.seconds:.0f} s "
                "during an upload...",
                flush=True,
            )
            groups[server.pid] = "web"
            rate, cpu[think] = under_load(args, clients, think, paths[f"loaded-{number}"], groups)
            runs.append((think, clients, rate))
        groups.pop(server.pid)  # gunicorn stopped: the service as it was before the load
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        server = None
        alone_measured(paths["alone-after"], groups, alone, cpu)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
        workers.stop()
    report(args, runs, alone, cpu)


def alone_measured(path: Path, groups: dict, alone: list, cpu: dict) -> None:
    """Time an upload with nothing else asked of the service: append its rate to `alone`
    and what each role's CPU did to `cpu`. One is timed before the load and one after it:
    the loaded uploads' index size lies between, and a share against their mean does not
    hang on one short window of a shared machine."""
    when = "before" if not alone else "after"
    print(f"Ingestion alone ({when} the load)...", flush=True)
    meter, start = CpuMeter(groups, DB_NAME, SERVER_URL).start(), time.monotonic()
    alone.append(upload_and_wait(path))
    cpu[f"alone {when}"] = {**meter.stop(), "seconds": time.monotonic() - start}
    print(f"  {alone[-1]:,.1f} articles/s", flush=True)


def under_load(args, clients: Clients, think: float, upload: Path, groups: dict) -> tuple:
    """Run the clients for the load's time while `upload` is processed; return its rate and
    the CPU seconds each role used while the upload was processed and over the load."""
    result: dict[str, float] = {}
    until = time.monotonic() + args.seconds
    meters = [CpuMeter(groups, DB_NAME, SERVER_URL).start() for _ in range(2)]

    def uploading_run() -> None:
        start = time.monotonic()
        result.update(rate=upload_and_wait(upload, until), seconds=time.monotonic() - start)
        result.update(upload=meters[0].stop())

    uploading = threading.Thread(target=uploading_run)
    threads = [
        threading.Thread(target=clients.run, args=(number, until, think))
        for number in range(args.clients)
    ]
    uploading.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    uploading.join()
    used = {"upload": result["upload"], "load": meters[1].stop()}
    used["upload"]["seconds"], used["load"]["seconds"] = result["seconds"], args.seconds
    used["load"]["requests"] = sum(len(times) for times in clients.latencies.values())
    return result.get("rate", 0.0), used


def served() -> str:
    """Return how gunicorn.conf.py (as this environment sets it) runs the web tier."""
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    return f"gunicorn.conf.py: {conf['workers']} workers x {conf['threads']} threads"


def report(args, runs: list, alones: list[float], cpu: dict) -> None:
    alone = sum(alones) / len(alones)
    lines = [
        "# The web tier under load during an upload (bench/load.py)\n",
        f"{args.clients} clients for {args.seconds:.0f} s each run against gunicorn "
        f"({served()}) and one Celery worker (2 processes), after a corpus of {args.corpus:,} "
        "articles, while an upload of "
        f"{args.upload:,} articles is processed; the clients run on the same cores. A client "
        "asks the queue, a compare page, `POST /api/check` and `GET /api/articles/<id>` in "
        "turn and waits a random time (exponential, mean `think`) after each answer: 1 s is "
        "20 editors working without pause; 0 is back to back, the web tier saturated (its "
        "latencies are then the queue's length, its requests per second the capacity).\n",
        f"Ingestion alone: {alones[0]:,.1f} articles/s before the load, {alones[-1]:,.1f} "
        f"after it; their mean, {alone:,.1f}, is what the rate under load is a share of.\n",
        "| think s | endpoint | requests | per second | p50 ms | p99 ms | errors |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    shares = []
    for think, clients, loaded in runs:
        for endpoint in ENDPOINTS:
            times = clients.latencies[endpoint]
            lines.append(
                f"| {think:g} | {endpoint} | {len(times):,} | {len(times) / args.seconds:,.1f} | "
                f"{percentile(times, 0.5) * 1000:,.0f} | "
                f"{percentile(times, 0.99) * 1000:,.0f} | {len(clients.errors[endpoint])} |"
            )
        share = loaded / alone if alone else 0.0
        shares.append(f"think {think:g} s: {loaded:,.1f} articles/s ({share:.0%} of alone)")
    lines += ["", "Ingestion under load: " + "; ".join(shares) + ".", ""]
    lines += cpu_table(cpu)
    for think, clients, _ in runs:
        errors = [e for endpoint in ENDPOINTS for e in clients.errors[endpoint][:3]]
        if errors:
            lines += ["", f"First errors (think {think:g} s): " + "; ".join(errors)]
    text = "\n".join(lines) + "\n"
    provenance.write(RESULTS, text)
    print(text)


if __name__ == "__main__":
    main()
