"""What editors see: the review queue at its defaults, measured through the service.

    python -m bench.queue [--size N] [--seed 5] [--split test] [--mode both] [--keep]

For each labelled corpus of bench/corpora.py (the held-out split), a fresh PostgreSQL database
is migrated, a real Celery worker is started on it and on a Redis database of its own, and the
corpus is imported with `manage.py import FILE --source NAME --wait` as JSON Lines (the doc id as
external id). Then, in a process set up on that database, the pairs the queue shows at its
defaults are read through the queue's own code (webui.queue_page.queue_context and the
MatchTable clustering it shows), a sample of articles is checked against
`GET /api/articles/<id>/matches`, and the engine alone runs on the same texts as `duplicates`
does (exact copies by content hash, then `Detector.duplicates` of the service's
`detector_for(settings_current())`). Both are scored against the labels: precision per kind of
pair shown, recall per kind of copy, false pairs per 1,000 docs.

Two modes: one database per corpus (boilerplate learned from that corpus alone), and all corpora
in one database, imported one file after another (a user's mixed collection). Results go to
bench/results/queue.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from bench import provenance
from bench.queue_report import header, report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "queue.md"
SIZE = None  # bench.corpora's own sizes, about 2,000-2,400 docs per corpus
SEED = 5  # the report seed of bench.trusted too (seeds 2 and 3 were looked at while tuning)
SPLIT = "test"
DATABASE = "dedup_bench_queue"
POSTGRES = "postgres://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/9"
TIMEOUT = 900  # seconds an import may take before the run stops with an error
API_SAMPLE = 200  # articles whose API matches are compared with the queue's pairs


class BenchError(RuntimeError):
    """A step of the benchmark failed; the message says which and where to look."""


# --- the service: database, worker, import ---------------------------------------------------


@contextlib.contextmanager
def database(server: str, name: str, keep: bool):
    """Create database `name` afresh on the server (dropped first); drop it after, unless keep."""
    import psycopg
    from psycopg import sql

    def run(statement) -> None:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(statement)

    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    run(drop)
    run(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"{server}/{name}"
    finally:
        if not keep:
            run(drop)


def service_env(database_url: str, redis_url: str, var: Path) -> dict:
    """Return the environment of manage.py, the worker and the reading process."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DEDUP_REDIS_PREFIX": "",  # its own Redis database, flushed: no prefix
        "DEDUP_VAR_DIR": str(var),  # uploads kept outside the checkout
        "SECRET_KEY": "bench-queue-not-secret",
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "dedup.settings",
        "PYTHONUNBUFFERED": "1",
    }


def manage(env: dict, *args: str, timeout: float) -> str:
    """Run manage.py with these arguments; return its output, raise BenchError on failure."""
    command = [sys.executable, "manage.py", *args]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode:
        raise BenchError(
            f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done.stdout


def redis_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()


@contextlib.contextmanager
def worker(env: dict, log: Path, timeout: float = 60):
    """Run a Celery worker (prefork, two processes) on env's database and broker."""
    from celery import Celery

    redis_flush(env["REDIS_URL"])
    tag = f"bench-queue-{uuid.uuid4().hex[:8]}"
    command = [
        sys.executable, "-m", "celery", "-A", "dedup", "worker", "--concurrency", "2",
        "--loglevel", "WARNING", "-n", f"{tag}@%h",
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with its pool
        )  # fmt: skip
    app = Celery(broker=env["REDIS_URL"])
    try:
        name = f"{tag}@{socket.gethostname()}"
        deadline = time.monotonic() + timeout
        while not app.control.ping(destination=[name], timeout=0.5):
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the worker did not start; its log:\n{log.read_text()[-3000:]}")
        yield process
    finally:
        app.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # warm shutdown: its tasks are all done
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # what is left of its pool
        process.wait()
        redis_flush(env["REDIS_URL"])


def import_corpus(env: dict, docs, name: str, folder: Path, timeout: float) -> float:
    """Import a corpus as JSON Lines with manage.py import --wait; return the seconds it took."""
    path = folder / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for d in docs:
            out.write(json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n")
    start = time.perf_counter()
    said = manage(
        env, "import", str(path), "--source", name, "--wait", "--timeout", str(timeout),
        timeout=timeout + 120,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    if "A worker is running" not in said:
        raise BenchError(f"manage.py import processed {name} itself, not the worker:\n{said}")
    return seconds


# --- the service read: queue, API, engine alone (in a process set up on the database) ---------


def _django(env: dict) -> None:
    os.environ.update(env)
    import django

    django.setup()


def service_read(api_sample: int, seed: int) -> dict:
    """Return the articles, the queue's pairs at its defaults, the API's agreement on a sample,
    the engine alone's pairs on the same texts, and the uploads' times."""
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.http import QueryDict
    from django.test import Client

    from dedup import selectors
    from dedup.cli import content_hash
    from dedup.index import detector_for, settings_current
    from dedup.models import Article, ArticleStatus, UploadBatch
    from dedup.selectors import clusterings
    from webui.queue_page import queue_context
    from webui.review_params import threshold_parse

    busy = Article.objects.filter(status__in=[ArticleStatus.PENDING, ArticleStatus.PROCESSING])
    if busy.exists():
        raise BenchError(f"{busy.count()} article(s) are still waiting for the worker")
    settings = settings_current()
    defaults = QueryDict("")
    context = queue_context(defaults, settings, None)  # what the queue page computes
    table = selectors.match_table()
    found = table.clustering(threshold_parse(defaults).bars)  # the clustering it showed
    shown = np.flatnonzero(found.shown)
    ids = table.article_id
    queue = [
        (int(ids[table.a[e]]), int(ids[table.b[e]]), clusterings.KIND_NAMES[int(table.kind[e])])
        for e in shown.tolist()
    ]
    # The queue counts the matches inside its clusters (one story each); the others are
    # shown as links between clusters (docs/design.md, "Clusters").
    inside = int(np.count_nonzero(found.inside))
    if context["counts"]["matches"] != inside:
        raise BenchError(
            f"the queue counts {context['counts']['matches']} matches, has {inside} in clusters"
        )

    # The API for a sample: half articles in a shown pair, half any article.
    articles = list(Article.objects.order_by("id").values_list("id", "source", "external_id"))
    paired = sorted({x for a, b, _ in queue for x in (a, b)})
    rng = np.random.default_rng(seed)
    everyone = [a for a, _, _ in articles]
    sample = set(rng.permutation(paired)[: api_sample // 2].tolist())
    sample |= set(rng.permutation(everyone)[: max(0, api_sample - len(sample))].tolist())
    user = get_user_model().objects.create_superuser("bench-queue", "", None)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    # DEBUG off is production: plain http is redirected to https (DEDUP_HTTPS), so ask as the
    # proxy in front of it would.
    page = client.get("/", secure=True).status_code
    by_article: dict[int, set] = {}
    for a, b, kind in queue:
        by_article.setdefault(a, set()).add((b, kind))
        by_article.setdefault(b, set()).add((a, kind))
    disagree = []
    for article in sorted(sample):
        answer = client.get(f"/api/articles/{article}/matches", secure=True)
        if answer.status_code != 200:
            raise BenchError(f"GET /api/articles/{article}/matches answered {answer.status_code}")
        listed = {(m["article"], m["kind"]) for m in answer.json().get("matches", [])}
        if listed != by_article.get(article, set()):
            disagree.append(article)

    # The engine alone on the stored texts, in id order, as `duplicates` does.
    detector = detector_for(settings)
    bodies = list(Article.objects.order_by("id").values_list("id", "body"))
    start = time.perf_counter()
    first: dict[str, int] = {}
    verified, features, engine = [], [], []
    for article, body in bodies:
        original = first.setdefault(content_hash(body), article)
        if original != article:
            engine.append((original, article, "exact"))
            continue
        verified.append(article)
        features.append(detector.features(body))
    featured = time.perf_counter() - start
    for d in detector.duplicates(features):
        engine.append((verified[d.a], verified[d.b], d.kind))
    engine_seconds = time.perf_counter() - start

    uploads = [
        {
            "source": Article.objects.filter(upload=u).values_list("source", flat=True).first(),
            "accepted": u.accepted,
            "state": u.state,
            "seconds": (u.finished_at - u.created_at).total_seconds() if u.finished_at else None,
        }
        for u in UploadBatch.objects.order_by("id")
    ]
    statuses = Counter(Article.objects.values_list("status", flat=True))
    return {
        "articles": articles,
        "queue": queue,
        "engine": engine,
        "engine_seconds": engine_seconds,
        "features_seconds": featured,
        "uploads": uploads,
        "statuses": dict(statuses),
        "clusters": context["counts"]["clusters"],
        "page_status": page,
        "api_checked": len(sample),
        "api_disagree": disagree,
        "settings": {
            "k_max": settings.k_max,
            "near": settings.near,
            "near_short": settings.near_short,
            "partial": settings.partial,
            "partial_min_chars": settings.partial_min_chars,
            "version": settings.active_version,
        },
    }


def stage(args, server: str, db_name: str, corpora: dict, folder: Path, extra=None) -> dict:
    """Import these corpora into one fresh database through a worker; read queue and engine,
    and with `extra` (a function and its arguments) what it reads too, merged in."""
    with database(server, db_name, args.keep) as url:
        env = service_env(url, args.redis, folder / "var")
        manage(env, "migrate", "--noinput", timeout=300)
        imports = {}
        with worker(env, folder / f"{db_name}.worker.log"):
            for name, docs in corpora.items():
                imports[name] = import_corpus(env, docs, name, folder, args.timeout)
        spawn = get_context("spawn")  # Django set up afresh on this database
        with ProcessPoolExecutor(1, mp_context=spawn, initializer=_django, initargs=(env,)) as pool:
            read = pool.submit(service_read, args.api_sample, args.seed).result()
            if extra:
                read.update(pool.submit(*extra).result())
    read["imports"] = imports
    return read


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    from bench.corpora import CORPORA

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size", type=int, default=SIZE, help="about this many docs per corpus (50 or more)"
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--split", default=SPLIT, choices=("tune", "test"))
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument(
        "--mode",
        default="both",
        choices=("per-corpus", "mixed", "both"),
        help="one database per corpus, all corpora in one database, or both",
    )
    parser.add_argument("--database", default=DATABASE, help="prefix of the databases made")
    parser.add_argument("--postgres", default=POSTGRES, help="server URL, no database name")
    parser.add_argument("--redis", default=REDIS, help="a Redis database of this run (emptied)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per import")
    parser.add_argument("--api-sample", type=int, default=API_SAMPLE)
    parser.add_argument("--keep", action="store_true", help="keep the databases made")
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> tuple[dict, dict]:
    """Build the corpora and put them through the service; return them and what each
    database (a corpus's name, or "all") showed."""
    from bench.corpora import build

    start = time.perf_counter()
    corpora = {n: build(n, seed=args.seed, split=args.split, size=args.size) for n in args.corpora}
    print(f"built {sum(map(len, corpora.values())):,} docs in {time.perf_counter() - start:.0f} s")
    stages: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        folder = Path(tmp)
        (folder / "var" / "static").mkdir(parents=True)  # whitenoise looks for it
        if args.mode in ("per-corpus", "both"):
            for name, docs in corpora.items():
                print(f"{name}: importing {len(docs):,} docs", flush=True)
                db_name = f"{args.database}_{name}"
                stages[name] = stage(args, args.postgres, db_name, {name: docs}, folder)
        if args.mode in ("mixed", "both"):
            print(f"all corpora in one database: importing {sum(map(len, corpora.values())):,}")
            stages["all"] = stage(args, args.postgres, f"{args.database}_all", corpora, folder)
    return corpora, stages


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    command = " ".join(["python -m bench.queue", *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    corpora, stages = run(args)
    seconds = time.perf_counter() - start
    settings = next(iter(stages.values()))["settings"]
    sizes = {n: len(d) for n, d in corpora.items()}
    lines = ["# The review queue at its defaults, through the service", ""]
    lines += header(args, command, sizes, settings, seconds)
    lines += ["", *report(corpora, stages)]
    text = "\n".join(lines) + "\n"
    print(text)
    provenance.write(args.out, text, command)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
