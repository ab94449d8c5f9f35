"""CPU per request of each endpoint bench/load.py asks, measured in one process.

    python -m bench.webcpu [--requests 200] [--profile api/check]

Against the database bench/load.py leaves (`dedup_bench_load`: run it first), each endpoint is
asked N times in turn through Django's WSGI handler (the middleware, sessions, tokens and
templates gunicorn runs), in this process: its CPU time (time.process_time, so that other
processes on the machine do not count), its wall time, and its SQL statements (and their
time as the database connection saw it) per request. PostgreSQL's own CPU is not in the CPU
column: the statements' wall time is its upper bound. `--profile ENDPOINT` prints cProfile's
top functions of that endpoint.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import sys
import time

from bench.load import DB_NAME, environment
from bench.load_clients import ENDPOINTS

EDITOR = "load-editor"


def callers() -> tuple[str, str]:
    """The editor's session key and API token bench/load.py made; made here if missing."""
    from django.contrib.auth.models import User

    from bench.load_clients import credentials

    User.objects.filter(username=EDITOR).delete()
    return credentials()


def wsgi_request(handler, method: str, path: str, body: bytes | None, headers: dict) -> int:
    """Send one request through the WSGI handler; return its status."""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body or b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if body is not None:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE",) else f"HTTP_{key}"] = value
    status = []
    response = handler(environ, lambda s, h, e=None: status.append(s))
    for _ in response:
        pass
    response.close()
    return int(status[0].split()[0])


def measure(handler, clients, endpoint: str, count: int, profiler=None) -> dict:
    """Ask `endpoint` `count` times; return CPU, wall, statements and their time per request."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    rng = random.Random(1)
    cpu = wall = 0.0
    statements = 0
    sql = 0.0
    statuses = set()
    for _ in range(count):
        method, path, body, headers = clients.request(rng, endpoint)
        connection.queries_log.clear()  # a full log (9,000 statements) would capture none
        with CaptureQueriesContext(connection) as queries:
            start_cpu, start = time.process_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
            statuses.add(wsgi_request(handler, method, path, body, headers))
            if profiler is not None:
                profiler.disable()
            cpu += time.process_time() - start_cpu
            wall += time.perf_counter() - start
        statements += len(queries)
        sql += sum(float(q["time"]) for q in queries.captured_queries)
    return {
        "cpu": cpu / count * 1000,
        "wall": wall / count * 1000,
        "statements": statements / count,
        "sql": sql / count * 1000,
        "statuses": sorted(statuses),
    }


def served(clients, count: int) -> None:
    """Ask gunicorn each endpoint `count` times, one request at a time; print the CPU per
    request of its processes and of their PostgreSQL backends."""
    import http.client
    import signal

    from bench.cpumeter import CpuMeter
    from bench.load import SERVER_URL
    from bench.load_clients import free_port, gunicorn

    clients.port = free_port()
    server = gunicorn(environment(), clients.port)
    print("| endpoint | requests | web CPU ms | web SQL CPU ms | wall ms | errors |")
    print("|---|---:|---:|---:|---:|---|")
    try:
        connection = http.client.HTTPConnection("127.0.0.1", clients.port, timeout=30)
        for endpoint in ENDPOINTS:
            rng = random.Random(1)
            for _ in range(3 * 4):  # every thread's connection and caches
                connection, _ = clients.ask(connection, *clients.request(rng, endpoint))
            meter = CpuMeter({server.pid: "web"}, DB_NAME, SERVER_URL).start()
            time.sleep(1)  # the meter's first reading
            errors = []
            began = time.perf_counter()
            for _ in range(count):
                connection, problem = clients.ask(connection, *clients.request(rng, endpoint))
                errors += [problem] if problem else []
            wall = (time.perf_counter() - began) / count * 1000
            used = meter.stop()
            print(
                f"| {endpoint} | {count} | {used.get('web', 0) / count * 1000:.1f} | "
                f"{used.get('web SQL', 0) / count * 1000:.1f} | {wall:.1f} | {errors[:2]} |",
                flush=True,
            )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per endpoint")
    parser.add_argument("--profile", choices=ENDPOINTS, action="append", default=[])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--server", action="store_true", help="ask gunicorn over HTTP")
    args = parser.parse_args()
    os.environ.update(environment())
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    from bench.load_clients import Clients
    from dedup.models import Article, Match
    from webui.warm import warm

    settings.DEBUG = False
    cookie, token = callers()
    pairs = list(Match.objects.values_list("a_id", "b_id")[:500])
    ids = list(Article.objects.values_list("id", flat=True)[:2000])
    texts = list(Article.objects.order_by("?").values_list("body", flat=True)[:200])
    clients = Clients(0, cookie, token, pairs, texts, ids)
    if args.server:
        served(clients, args.requests)
        return
    handler = WSGIHandler()
    warm()
    for endpoint in ENDPOINTS:  # the first request of each loads what it needs
        measure(handler, clients, endpoint, 3)
    print(f"{DB_NAME}: {Article.objects.count():,} articles, {Match.objects.count():,} matches")
    print("| endpoint | requests | CPU ms | wall ms | statements | SQL ms | statuses |")
    print("|---|---:|---:|---:|---:|---:|---|")
    results = {}
    for endpoint in ENDPOINTS:
        profiler = cProfile.Profile() if endpoint in args.profile else None
        result = results[endpoint] = measure(handler, clients, endpoint, args.requests, profiler)
        print(
            f"| {endpoint} | {args.requests} | {result['cpu']:.1f} | {result['wall']:.1f} | "
            f"{result['statements']:.1f} | {result['sql']:.1f} | {result['statuses']} |",
            flush=True,
        )
        if profiler is not None:
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(args.top)
            stream.write("\n")
            pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(args.top)
            print(stream.getvalue())
    mean = sum(r["cpu"] for r in results.values()) / len(results)
    print(f"\nMean CPU per request over the mix: {mean:.1f} ms")
    print(json.dumps({e: round(r["cpu"], 2) for e, r in results.items()}))


if __name__ == "__main__":
    main()
