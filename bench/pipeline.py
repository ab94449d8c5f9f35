"""The whole service end to end: one upload through Celery workers on PostgreSQL and Redis.

    ./dev bench pipeline     (or: python -m bench.pipeline [--articles 100000] [--workers 2])

A fresh database `dedup_bench` on 127.0.0.1:5432 (dropped and created, migrated) and Redis db 9
(flushed). The articles are a realistic stream: mostly distinct People's Daily texts of about
800 and 1,600 characters (`news_articles`), about 12% near and partial copies (the labelled
families of `build_corpus`, every length band) and 2% exact copies, each copy after its
original; one JSON Lines file. In the same run, on the same texts:

- engine alone: `Detector` features of every text and `Detector.duplicates` over all of them
  (in-memory candidates and verification), one process, so articles per second on one core;
- pipeline: N workers (one prefork worker of concurrency N, or N solo workers with
  `--pool solo`), the file handed to `services.upload_create` as the web process would, then
  polled until no article is pending or processing: articles per second from the upload to the
  last article processed, time to the last match, the rows stored, and checks that nothing was
  lost or done twice.

Where the time goes: the workers' task times (from their logs) and a cProfile of
`services.articles_process` run in this process on one fresh chunk against the full index.
The table goes to bench/results/pipeline.md.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections import Counter
from pathlib import Path

from bench import provenance

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "pipeline.md"
DB_NAME = "dedup_bench"
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
# Redis database 9 by default, flushed at the start: DEDUP_BENCH_REDIS_URL picks another.
REDIS_URL = os.environ.get("DEDUP_BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
# Logs and uploads; DEDUP_BENCH_DIR picks another (two benches at once must not share it).
WORK_DIR = Path(
    os.environ.get("DEDUP_BENCH_DIR") or Path(tempfile.gettempdir()) / "dedup-bench-pipeline"
)
COPY_SHARE = 0.12  # near and partial copies (build_corpus families) in the stream
EXACT_SHARE = 0.02  # exact copies (the same text, sometimes other whitespace)
COPIES_PER_ORIGINAL = 11  # about what build_corpus makes per original (edits and partials)
# Distinct filler: 70% of about 800 characters (the real articles cut from the month's
# paragraphs in order, then recombined ones), 30% of about 1,600 recombined only: the texts
# news_articles cuts in order at two lengths overlap and would be partial copies of each other.
# Shorter texts come from the labelled families (every length band).
FILLER = ((800, 0.7, True), (1600, 0.3, False))  # (characters, share, in-order texts too)
START_TIMEOUT = 60
PROGRESS_EVERY = 15.0
POLL_EVERY = 5.0  # a count over every article: cheap, but it runs on the same two cores
_TASK_DONE = re.compile(r"Task (dedup\.tasks\.\w+)\[[^\]]+\] succeeded in ([0-9.]+)s")
# services.articles_process logs where each chunk's time went: "claim 0.012 read 0.034 ...".
_CHUNK_PARTS = re.compile(
    r"articles_process: (\d+) articles, [0-9.]+ s: ((?:[a-z ]+ [0-9.]+ ?)+)(?:; ([a-z0-9 ]+))?"
)
_PART = re.compile(r"([a-z][a-z ]*?) ([0-9.]+)")


# --- environment ----------------------------------------------------------------------------


TEXT_ROWS = 20_000  # DEDUP_TEXT_INDEX_ROWS's default (dedup/settings.py)


def bench_env(upload_mb: int) -> dict[str, str]:
    """Return the environment of this process and the workers: database, broker, storage."""
    return {
        "DJANGO_SETTINGS_MODULE": "dedup.settings",
        "DATABASE_URL": f"{SERVER_URL}/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "DEDUP_REDIS_PREFIX": "",  # its own Redis database, flushed: no prefix
        "SECRET_KEY": "bench-only-secret",
        "DEBUG": "0",
        "DEDUP_VAR_DIR": str(WORK_DIR / "var"),
        "DEDUP_MAX_UPLOAD_MB": str(upload_mb),
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    }


def database_reset() -> None:
    """Drop and create the benchmark database (trust auth as postgres)."""
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def broker_flush() -> None:
    """Empty the bench's Redis database: no task of an earlier run is left to run."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    client.close()


class Workers:
    """Celery worker subprocesses on the benchmark database and broker; stopped together."""

    def __init__(self, env: dict, count: int, pool: str) -> None:
        self.env, self.count, self.pool = env, count, pool
        self.processes: list[tuple[subprocess.Popen, Path]] = []

    def start(self) -> Workers:
        """Start one prefork worker of concurrency N, or N solo workers; wait until ready."""
        shapes = [("prefork", self.count)] if self.pool == "prefork" else [("solo", 1)] * self.count
        for number, (pool, concurrency) in enumerate(shapes, start=1):
            log_path = WORK_DIR / f"worker{number}.log"
            log_path.unlink(missing_ok=True)
            command = [
                sys.executable, "-m", "celery", "-A", "dedup.celery", "worker",
                "--pool", pool, "--concurrency", str(concurrency), "-Q", "celery",
                "-n", f"bench{number}-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "INFO",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
            ]  # fmt: skip
            with log_path.open("ab") as log:
                process = subprocess.Popen(
                    command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped with its children
                )  # fmt: skip
            self.processes.append((process, log_path))
        deadline = time.monotonic() + START_TIMEOUT
        for process, log_path in self.processes:
            while " ready." not in log_path.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = log_path.read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"worker {log_path.name} did not start:\n{tail}")
                time.sleep(0.2)
        return self

    def logs(self) -> str:
        return "".join(path.read_text(errors="replace") for _, path in self.processes)

    def stop(self, timeout: float = 30) -> None:
        """Warm shutdown (finish the task at hand), then kill what is left of each group."""
        for process, _ in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, _ in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)


# --- the stream -----------------------------------------------------------------------------


def build_stream(count: int, seed: int) -> tuple[list[dict], Counter]:
    """Return `count` articles {"id", "title", "text"}, copies after their originals, and the
    count per kind (distinct, original, near/partial copy kinds, exact)."""
    from bench.corpus import _sequential_news, build_corpus, news_articles

    rng = random.Random(seed)
    per_band = max(3, round(count * COPY_SHARE / COPIES_PER_ORIGINAL / 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the >2000 band is short of originals: expected
        corpus = build_corpus(per_band=per_band, seed=seed)
    exact = round(count * EXACT_SHARE)
    fill = max(0, count - len(corpus) - exact)
    filler: list[str] = []
    for number, (length, share, in_order) in enumerate(FILLER):
        n = fill - len(filler) if number == len(FILLER) - 1 else round(fill * share)
        skip = 0 if in_order else len(_sequential_news(length))
        filler += news_articles(length, skip + n, seed=seed + number)[skip:]
    # Each item gets a place in time: originals anywhere, a copy after its original.
    items: list[tuple[float, str, str, str]] = []  # (when, id, kind, text)
    when: dict[str, float] = {}
    for doc in sorted(corpus, key=lambda d: d.kind != "original"):
        at = rng.random()
        if doc.family in when:  # a copy (a template sibling founds a family of its own)
            at = rng.uniform(when[doc.family], 1.0)
        else:
            when[doc.family] = at
        items.append((at, doc.id, doc.kind, doc.text))
    items += [(rng.random(), f"news-{i:06d}", "distinct", t) for i, t in enumerate(filler)]
    items = items[: count - exact]
    for number, (at, ident, _, text) in enumerate(rng.sample(items, min(exact, len(items)))):
        copy = text if number % 2 else "  " + text.replace("\n", "\n\n") + "\n"
        items.append((rng.uniform(at, 1.0), f"{ident}/exact{number}", "exact", copy))
    items.sort()
    kinds = Counter(kind for _, _, kind, _ in items)
    rows = [
        {"id": ident, "title": text.strip().split("\n", 1)[0][:40], "text": text}
        for _, ident, _, text in items
    ]
    return rows, kinds


def write_jsonl(rows: list[dict], path: Path) -> int:
    """Write the rows as JSON Lines (UTF-8, not escaped); return the file's size in bytes."""
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path.stat().st_size


# --- engine alone ---------------------------------------------------------------------------


def engine_alone(texts: list[str], detector) -> dict:
    """Time Detector features of every text and Detector.duplicates over them, one process."""
    start = time.perf_counter()
    features = []
    for done, text in enumerate(texts, start=1):
        features.append(detector.features(text))
        if done % 20_000 == 0:
            rate = done / (time.perf_counter() - start)
            print(f"  engine: features {done:,}/{len(texts):,} ({rate:,.0f}/s)", flush=True)
    featuring = time.perf_counter() - start
    start = time.perf_counter()
    found = detector.duplicates(features)
    judging = time.perf_counter() - start
    return {
        "features_s": featuring,
        "duplicates_s": judging,
        "seconds": featuring + judging,
        "rate": len(texts) / (featuring + judging),
        "pairs": Counter(d.kind for d in found),
    }


# --- the pipeline ---------------------------------------------------------------------------


def status_counts() -> Counter:
    from django.db.models import Count

    from dedup.models import Article

    rows = Article.objects.values_list("status").annotate(n=Count("id"))
    return Counter(dict(rows.values_list("status", "n")))


def run_pipeline(path: Path, lines: int, workers: Workers, timeout: float) -> dict:
    """Upload the file as the web process would and poll until every article is processed."""
    from django.core.files import File
    from django.db.models import Max
    from django.utils import timezone

    from dedup import services
    from dedup.models import Article, Match, UploadBatch

    started = timezone.now()
    clock = time.monotonic()
    with path.open("rb") as stream:
        batch = services.upload_create(file=File(stream, name=path.name), name=path.name)
    stored = time.monotonic() - clock
    print(f"  upload {batch.pk} stored in {stored:.1f} s; workers reading it", flush=True)
    last_print, last_done, finished, timed_out = clock, 0, False, False
    while True:
        time.sleep(POLL_EVERY)
        counts = status_counts()
        done = counts["done"] + counts["exact"] + counts["failed"]
        busy = counts["pending"] + counts["processing"]
        state = UploadBatch.objects.values_list("state", flat=True).get(pk=batch.pk)
        now = time.monotonic()
        finished = state in ("done", "failed") and busy == 0
        if finished or now - last_print >= PROGRESS_EVERY:
            rate = (done - last_done) / (now - last_print)
            print(
                f"  {now - clock:7.0f} s  upload {state:<10}  articles {sum(counts.values()):,}"
                f"/{lines:,}  processed {done:,} (done {counts['done']:,}, exact "
                f"{counts['exact']:,}, failed {counts['failed']:,})  backlog {busy:,}  "
                f"{rate:,.0f}/s",
                flush=True,
            )
            last_print, last_done = now, done
        if finished:
            break
        if now - clock > timeout:
            timed_out = True
            print(f"  timed out after {timeout:.0f} s: partial figures follow", flush=True)
            break
        if not any(p.poll() is None for p, _ in workers.processes):
            raise RuntimeError(f"the workers died:\n{workers.logs()[-3000:]}")
    watched = time.monotonic() - clock
    ends = Article.objects.aggregate(last=Max("processed_at"))
    last_match = Match.objects.aggregate(last=Max("found_at"))["last"]
    processed = done
    seconds = (ends["last"] - started).total_seconds() if ends["last"] else watched
    batch.refresh_from_db()
    return {
        "upload": batch,
        "started": started,
        "seconds": seconds,
        "watched": watched,
        "processed": processed,
        "rate": processed / seconds if seconds else 0.0,
        "last_match": (last_match - started).total_seconds() if last_match else None,
        "timed_out": timed_out,
    }


def pipeline_checks(batch, lines: int, kinds: Counter) -> tuple[dict, list[str]]:
    """Return the rows stored and the problems found: lost, doubled or unfinished articles."""
    from django.db.models import Count, F, Q

    from dedup.models import Article, Fingerprint, Match
    from dedup.selectors import index_health

    health = index_health()
    articles = Article.objects.filter(upload=batch)
    health["exact_copies"] = exact_copies(articles)
    health["filler_matches"] = filler_matches()
    counts = status_counts()
    problems = []
    if batch.total_rows != lines or batch.accepted != lines or batch.rejected:
        problems.append(
            f"upload read {batch.total_rows:,} rows, accepted {batch.accepted:,}, rejected "
            f"{batch.rejected:,} of {lines:,} lines: {batch.errors[:3]}"
        )
    stored = articles.count()
    if stored != lines:
        problems.append(f"{stored:,} articles stored for {lines:,} lines")
    rows = articles.values("row").annotate(n=Count("id")).filter(n__gt=1).count()
    if rows:
        problems.append(f"{rows:,} upload rows made more than one article")
    again = articles.exclude(attempts=1).values_list("attempts").annotate(n=Count("id"))
    if again:
        problems.append(f"articles claimed other than once (attempts: count): {dict(again)}")
    if counts["pending"] or counts["processing"]:
        problems.append(f"unfinished: {counts['pending']:,} pending, {counts['processing']:,} ...")
    if counts["failed"]:
        problems.append(f"{counts['failed']:,} articles failed")
    fingerprints = Fingerprint.objects.count()
    if not counts["done"] <= fingerprints <= counts["done"] + counts["failed"]:
        problems.append(f"{fingerprints:,} fingerprints for {counts['done']:,} done articles")
    doubled = Match.objects.values("a", "b").annotate(n=Count("id")).filter(n__gt=1).count()
    if doubled:
        problems.append(f"{doubled:,} article pairs matched more than once")
    # Every exact copy is matched to its original as exact; an exact match may also join two
    # identical texts that were processed at the same moment (both done), never two others.
    exact = Match.objects.filter(kind="exact")
    unlike = exact.exclude(a__content_hash=F("b__content_hash")).count()
    if unlike:
        problems.append(f"{unlike:,} exact matches between texts that differ")
    copies = Article.objects.filter(status="exact")
    unmatched = copies.exclude(
        Q(matches_as_b__kind="exact", matches_as_b__a=F("exact_of"))
        | Q(matches_as_a__kind="exact", matches_as_a__b=F("exact_of"))
    ).count()
    if unmatched:
        problems.append(f"{unmatched:,} exact copies without an exact match to their original")
    copies = health["exact_copies"]
    if copies["unmatched"]:
        problems.append(f"{copies['unmatched']:,} exact copies not matched to their original")
    if batch.state != "done":
        problems.append(f"upload state {batch.state!r}: {batch.message}")
    return health, problems


def exact_copies(articles) -> Counter:
    """Return how the exact copies made were matched to their originals: kind of the match
    ("exact", or "near" when both were in flight at once), or "unmatched"."""
    from django.db.models import Q

    from dedup.models import Match

    ident = dict(articles.values_list("external_id", "id"))
    pairs = {
        (ident[name.rsplit("/exact", 1)[0]], copy)
        for name, copy in ident.items()
        if "/exact" in name and name.rsplit("/exact", 1)[0] in ident
    }
    found: Counter = Counter()
    for start in range(0, len(pairs), 500):
        part = sorted(pairs)[start : start + 500]
        which = Q()
        for a, b in part:
            which |= Q(a_id=min(a, b), b_id=max(a, b))
        kinds = Counter(Match.objects.filter(which).values_list("kind", flat=True))
        found.update(kinds)
        found["unmatched"] += len(part) - sum(kinds.values())
    return found


def filler_matches() -> int:
    """Return the matches between two distinct filler texts (news-*, not their exact copies)."""
    from dedup.models import Match

    both = Match.objects.filter(
        a__external_id__startswith="news-", b__external_id__startswith="news-"
    )
    return (
        both.exclude(a__external_id__contains="/exact")
        .exclude(b__external_id__contains="/exact")
        .count()
    )


def table_sizes() -> dict[str, int]:
    """Return the bytes on disk (with indexes) of the service's main tables."""
    from django.db import connection

    sizes = {}
    with connection.cursor() as cursor:
        for table in ("article", "fingerprint", "segment", "passagekey", "match"):
            # A partitioned table's bytes are its partitions' (the segment index's days).
            cursor.execute(
                "SELECT coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size(%s)) "
                "FROM pg_partition_tree(%s)",
                [f"dedup_{table}"] * 2,
            )
            sizes[table] = int(cursor.fetchone()[0] or 0)
    return sizes


def chunk_parts(log: str) -> tuple[int, dict[str, float], Counter]:
    """Return the articles processed, the seconds per part of articles_process and its counts
    (candidates, verified), summed over the workers' log lines."""
    articles, parts, counts = 0, Counter(), Counter()
    for count, text, tail in _CHUNK_PARTS.findall(log):
        articles += int(count)
        for name, seconds in _PART.findall(text):
            parts[name.strip()] += float(seconds)
        for name, number in _PART.findall(tail):
            counts[name.strip()] += int(float(number))
    return articles, dict(parts), counts


def task_times(log: str) -> dict[str, list[float]]:
    """Return the seconds each succeeded task took, per task name, from worker logs."""
    found: dict[str, list[float]] = {}
    for name, seconds in _TASK_DONE.findall(log):
        found.setdefault(name.rsplit(".", 1)[1], []).append(float(seconds))
    return found


# --- where the time goes --------------------------------------------------------------------

PROFILED = (  # (label, file suffix, function name)
    ("fingerprint and features (tokenise)", "verify.py", "fingerprint_and_features"),
    ("store fingerprints, segment rows, passage keys", "dedup/index/store.py", "index_store"),
    ("look up: fingerprint buckets (SQL)", "dedup/index/candidates.py", "_near_fingerprints"),
    (
        "look up: candidates in all (buckets + passage keys)",
        "dedup/index/candidates.py",
        "candidates_find_many",
    ),
    ("verify: load candidates' features", "dedup/index/duplicates.py", "features_load"),
    ("verify: unpack features", "engine/features.py", "from_bytes"),
    ("verify: judge on shingles", "engine/verify.py", "judge_many"),
    ("claim the chunk", "dedup/services/processing.py", "_articles_claim"),
    ("exact copies (content hash)", "dedup/services/processing.py", "_exact_originals"),
    ("database round trips (all statements)", "psycopg/cursor.py", "execute"),
)


def profile_chunk(rows: list[dict], size: int, seed: int) -> dict:
    """Profile services.articles_process in this process on one fresh chunk of `size`
    articles (mostly distinct, some edited copies of stored ones) against the full index."""
    from bench.corpus import EDITS, news_articles
    from dedup import index, services

    rng = random.Random(seed)
    fresh = news_articles(700, 5000 + size, seed=seed + 99)[-size:]  # recombined: new texts
    copies = round(size * COPY_SHARE)
    for i in range(copies):
        kind = ("substitute", "delete_sentence", "one_sentence")[i % 3]
        fresh[i] = EDITS[kind](rng.choice(rows)["text"], random.Random(seed + i))
    rng.shuffle(fresh)
    created = services.articles_ingest(rows=[{"title": "profile", "text": t} for t in fresh])
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(services.articles_process, article_ids=[a.pk for a in created])
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler, stream=io.StringIO())
    measured, statements = [], 0
    for label, suffix, function in PROFILED:
        entries = [
            entry
            for (file, _, name), entry in stats.stats.items()
            if name == function and file.endswith(suffix)
        ]
        measured.append((label, sum(entry[3] for entry in entries)))
        if function == "execute":
            statements = sum(entry[1] for entry in entries)
    # How many stored articles each one had to verify (the look-ups again, unprofiled).
    settings = index.settings_current()
    detector, plan = index.detector_for(settings), settings.plan()
    candidates = sorted(
        len(
            index.candidates_find(
                features=detector.features(text), version=settings.index_version, plan=plan,
                k=settings.k_max, exclude=article.pk,
            )
        )
        for article, text in zip(created, fresh, strict=True)
    )  # fmt: skip
    return {
        "seconds": total,
        "measured": measured,
        "statements": statements,
        "candidates": candidates,
    }


# --- report ---------------------------------------------------------------------------------


def report(args, kinds, size_mb, engine, sample, pipe, health, sizes, tasks, profile, problems):
    """Return the Markdown of the results."""
    n = args.articles
    pool = (
        f"one prefork worker, concurrency {args.workers}"
        if args.pool == "prefork"
        else f"{args.workers} solo workers"
    )
    copies = sum(v for k, v in kinds.items() if k not in ("distinct", "original", "exact"))
    text_index = (
        "none (--no-text-index)" if args.no_text_index else f"a range per {TEXT_ROWS:,} articles"
    )
    lines = [
        f"{n:,} articles in one JSON Lines upload ({size_mb:.0f} MB): {kinds['distinct']:,} "
        f"distinct People's Daily texts (800 and 1,600 characters), {kinds['original']:,} "
        "originals with "
        f"{copies:,} near and partial copies ({copies / n:.1%}; build_corpus families) and "
        f"{kinds['exact']:,} exact copies. Mean length "
        f"{args.mean_length:,.0f} characters. DEDUP_CHUNK_SIZE {args.chunk_size}, "
        f"PostgreSQL and Redis on 127.0.0.1, pipeline: {pool}. The text's trigram index for "
        "search (dedup.textindex): " + text_index + "."
        f" Machine: {os.cpu_count()} cores "
        "shared by PostgreSQL, the workers and this process (other jobs may have run meanwhile).",
        "",
        "| articles | workers | engine alone, articles/s (one core) | pipeline, articles/s "
        "| pipeline / engine alone | time to last match | segment rows | passage keys "
        "| matches exact / near / partial |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {pipe['processed']:,} | {args.workers} | {engine['rate']:,.0f} "
        f"| {pipe['rate']:,.0f} | {pipe['rate'] / engine['rate']:.2f} "
        f"| {_seconds(pipe['last_match'])} | {health['segment_rows']:,} "
        f"| {health['passage_keys']:,} | {health['matches']['exact']:,} / "
        f"{health['matches']['near']:,} / {health['matches']['partial']:,} |",
        "",
    ]
    sampled = "" if sample == n else f" (on a sample of {sample:,} of the {n:,} texts)"
    lines += [
        f"- Engine alone{sampled}, run before and after the pipeline "
        f"({' and '.join(f'{r:,.0f}' for r in engine.get('rates', [engine['rate']]))} "
        f"articles/s; the faster counts): features {engine['features_s']:.1f} s, duplicates "
        f"{engine['duplicates_s']:.1f} s, {engine['seconds']:.1f} s in all, one process; it "
        f"found {engine['pairs']['near']:,} near and {engine['pairs']['partial']:,} partial "
        "pairs (an exact copy counts as near there, and is paired with its whole family).",
        f"- Pipeline: {pipe['seconds']:.1f} s from `upload_create` to the last article "
        f"processed ({pipe['watched']:.0f} s watched); {pipe['processed']:,} articles processed "
        f"of {n:,}" + (", **timed out: partial figures**" if pipe["timed_out"] else "") + ".",
        f"- Stored: {health['fingerprints']:,} fingerprints, {health['segment_rows']:,} segment "
        f"rows, {health['passage_keys']:,} passage keys; on disk with indexes: "
        + ", ".join(f"{t} {b / 2**20:,.0f} MiB" for t, b in sizes.items())
        + f"; the segment index {sizes['segment'] / max(1, health['segment_rows']):,.0f} bytes "
        "per row with its indexes.",
        "- Checks (articles == lines, one article per row, each claimed once, one fingerprint "
        "per processed article, no pair matched twice, every exact copy matched to its "
        "original, every exact match between identical texts): "
        + ("all passed." if not problems else "**" + "; ".join(problems) + "**"),
        f"- Exact copies made: {kinds['exact']:,}; matched to their original as "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(health["exact_copies"].items()))
        + " (near: the copy was processed while its original was still in flight, so the "
        "content-hash check, which only sees articles already done, missed it).",
        f"- Matches between two distinct filler texts: {health['filler_matches']:,} (the "
        "filler beyond the ~2,000 real articles recombines the same month's paragraphs: two "
        "texts holding one long paragraph are partial copies indeed).",
    ]
    if tasks:
        lines += ["", "Task times from the worker logs:", ""]
        lines += ["| task | runs | seconds in all | mean s | max s |", "|---|---:|---:|---:|---:|"]
        for name, times in sorted(tasks.items()):
            lines.append(
                f"| {name} | {len(times):,} | {sum(times):,.1f} | "
                f"{sum(times) / len(times):.2f} | {max(times):.2f} |"
            )
        busy = sum(sum(t) for t in tasks.values())
        lines += [
            "",
            f"Task time adds up to {busy:,.0f} s of {args.workers} × {pipe['seconds']:.0f} s "
            f"= {args.workers * pipe['seconds']:,.0f} s of worker time "
            f"({busy / max(1e-9, args.workers * pipe['seconds']):.0%} busy).",
        ]
    articles, parts, counts = pipe.get("chunk_parts", (0, {}, Counter()))
    if articles:
        total = sum(parts.values())
        lines += [
            "",
            f"Where `articles_process` spent its time, from the workers' own log lines "
            f"({articles:,} articles; wall time inside the task, so database time is in the part "
            "that waited for it):",
            "",
            "| part | seconds in all | ms per article | share |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | {seconds:,.1f} | {seconds * 1000 / articles:.2f} | {seconds / total:.0%} |"
            for name, seconds in parts.items()
        ]
        if counts.get("candidates"):
            lines += [
                "",
                f"Candidates per article: {counts['candidates'] / articles:.1f} (fingerprints "
                "within k_max or a shared passage key), of which "
                f"{counts['verified'] / articles:.1f} passed the screen on sketches and were "
                "verified on their full features.",
            ]
    if profile:
        total, measured, cands = profile["seconds"], profile["measured"], profile["candidates"]
        per = 1000 / args.chunk_size
        lines += [
            "",
            f"One chunk of {args.chunk_size} fresh articles ({COPY_SHARE:.0%} edited copies of "
            f"stored ones) through `services.articles_process` in this process, against the full "
            f"index, under cProfile: {total:.2f} s ({total * per:.1f} ms per article; cProfile "
            "adds overhead). Cumulative times overlap (the look-ups include their SQL):",
            "",
            "| part | seconds | ms per article | share |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {label} | {seconds:.2f} | {seconds * per:.2f} | {seconds / total:.0%} |"
            for label, seconds in measured
        ]
        lines += [
            "",
            f"{profile['statements']:,} SQL statements for the chunk "
            f"({profile['statements'] / args.chunk_size:.2f} per article). "
            f"Candidates verified per article: median {cands[len(cands) // 2]:,}, mean "
            f"{sum(cands) / len(cands):,.0f}, 90th percentile {cands[len(cands) * 9 // 10]:,}, "
            f"most {cands[-1]:,}.",
        ]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} s"


def main() -> None:
    """Set up, build the stream, time the engine alone and the pipeline, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--pool", choices=("prefork", "solo"), default="prefork")
    parser.add_argument("--chunk-size", type=int, default=400, help="DEDUP_CHUNK_SIZE")
    parser.add_argument("--engine-sample", type=int, default=0, help="texts (0: all)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait")
    parser.add_argument("--seed", type=int, default=1998)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument(
        "--no-text-index",
        action="store_true",
        help="build no text index for search (DEDUP_TEXT_INDEX_ROWS=0)",
    )
    args = parser.parse_args()

    WORK_DIR.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(WORK_DIR / "var", ignore_errors=True)
    print(f"Building {args.articles:,} articles...", flush=True)
    start = time.perf_counter()
    rows, kinds = build_stream(args.articles, args.seed)
    path = WORK_DIR / "articles.jsonl"
    size = write_jsonl(rows, path)
    args.mean_length = sum(len(r["text"]) for r in rows) / len(rows)
    print(
        f"  {len(rows):,} articles, {size / 1e6:.0f} MB, {dict(kinds)} "
        f"({time.perf_counter() - start:.0f} s)",
        flush=True,
    )

    env = {**os.environ, **bench_env(max(200, int(size / 2**20) + 10))}
    env["DEDUP_CHUNK_SIZE"] = str(args.chunk_size)
    os.environ.update(env)
    print(f"Fresh database {DB_NAME}, Redis {REDIS_URL}...", flush=True)
    database_reset()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
        check=True,
    )  # fmt: skip
    if args.no_text_index:
        env["DEDUP_TEXT_INDEX_ROWS"] = "0"
        os.environ.update(env)
    broker_flush()
    import django

    django.setup()
    from dedup import index

    settings = index.settings_current()
    detector = index.detector_for(settings)  # what the workers use: the same settings

    sample = args.engine_sample or len(rows)
    texts = [r["text"] for r in random.Random(args.seed).sample(rows, sample)]
    print(f"Engine alone on {sample:,} texts, one process...", flush=True)
    engine = engine_alone(texts, detector)
    print(
        f"  {engine['rate']:,.0f} articles/s (features {engine['features_s']:.1f} s, "
        f"duplicates {engine['duplicates_s']:.1f} s)",
        flush=True,
    )

    workers = Workers(env, args.workers, args.pool)
    profile = None
    try:
        print(f"Starting workers ({args.pool}, {args.workers})...", flush=True)
        workers.start()
        print("Pipeline: uploading...", flush=True)
        pipe = run_pipeline(path, len(rows), workers, args.timeout)
    finally:
        workers.stop()
        log = workers.logs()
    # Once more, now that the workers are gone: the faster of the two runs counts, so that a
    # busy moment during one of them cannot flatter the pipeline's ratio.
    print("Engine alone again, after the pipeline...", flush=True)
    again = engine_alone(texts, detector)
    print(f"  {again['rate']:,.0f} articles/s (before: {engine['rate']:,.0f})", flush=True)
    del texts
    rates = sorted((engine["rate"], again["rate"]))
    engine = max(engine, again, key=lambda run: run["rate"])
    engine["rates"] = rates
    health, problems = pipeline_checks(pipe["upload"], len(rows), kinds)
    sizes = table_sizes()
    tasks = task_times(log)
    pipe["chunk_parts"] = chunk_parts(log)
    if not args.no_profile:
        print("Profiling one chunk in this process...", flush=True)
        profile = profile_chunk(rows, args.chunk_size, args.seed)
    broker_flush()  # the profiled chunk's own task message: nobody is to run it
    errors = [line for line in log.splitlines() if "ERROR" in line or "Traceback" in line]
    if errors:
        problems.append(f"{len(errors)} error lines in the worker logs, first: {errors[0][:300]}")
    text = report(args, kinds, size / 1e6, engine, sample, pipe, health, sizes, tasks, profile,
                  problems)  # fmt: skip
    print("\n" + text)
    provenance.write(RESULTS, text + "\n")
    print(f"\nsaved to {RESULTS}; worker logs in {WORK_DIR}")


if __name__ == "__main__":
    main()
