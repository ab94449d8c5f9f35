"""The review dashboard under load: every page's server time with 100,000 articles loaded.

    python -m bench.dashboard [--articles 100000] [--matches 150000] [--runs 10]

(DEDUP_BENCH_DB names another database, for a second checkout on the same server.)

A fresh database `dedup_dashboard_bench` on 127.0.0.1:5432 (dropped, created, migrated) is
filled directly with COPY: People's Daily texts of about 800 characters (`news_articles`),
clusters of copies whose sizes follow a long tail (most pairs, a few of hundreds), each copy
an edited version of an article before it in its cluster (so chains occur), about 150,000
matches (exact, near with distances 0..k_max, partial with shared passages and drifting
distances), fingerprints that differ by those distances, and some decisions.

Then Django's test Client, signed in as an editor, times each page in this process: server
time only (no network, no browser). The first request of each page after a cold start (the
match table read from the database) is reported apart; then the median and max of N runs.
A slider move is timed with the clusterings cache emptied before each run, so every
run computes the clusters afresh. The table goes to bench/results/dashboard.md.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import provenance

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "dashboard.md"
DB_NAME = os.environ.get("DEDUP_BENCH_DB", "dedup_dashboard_bench")  # one per checkout
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
VERSION = "bench-v1"
# The search's trigram indexes a bulk load drops and builds again (the text's: by range).
TRIGRAM_NAMES = ("article_title_trgm", "article_url_trgm")
SOURCES = ["人民日报", "新华社", "新浪转载", "网易转载", "搜狐转载", "论坛转帖", "公众号转发"]
EDITS = "的了是在我有和人这中大为上个国不到说们"


def environment() -> None:
    """Point Django at the benchmark database (settings are read on setup)."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dedup.settings",
            "DATABASE_URL": f"{SERVER_URL}/{DB_NAME}",
            "SECRET_KEY": "bench-only-secret",
            "DEBUG": "0",
            "DEDUP_HTTPS": "0",  # the test Client speaks plain HTTP: no redirect to https
            "ALLOWED_HOSTS": "testserver,localhost",
            "DEDUP_VAR_DIR": f"/tmp/{DB_NAME}",  # its facts.json: one per database
            "LOG_LEVEL": "WARNING",
        }
    )


def database_reset() -> None:
    """Drop and create the benchmark database (trust auth as postgres)."""
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')  # a name may hold "-"
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


# --- data -----------------------------------------------------------------------------------


def cluster_sizes(rng: np.random.Generator, members: int) -> list[int]:
    """Return cluster sizes (at least 2) following a long tail, summing to about `members`."""
    sizes, total = [], 0
    while total < members:
        size = int(min(rng.zipf(1.9) + 1, 400))
        sizes.append(size)
        total += size
    return sizes


def edited(text: str, rng: random.Random, edits: int) -> str:
    """Return a copy of a text with a few characters replaced, like a light repost edit."""
    chars = list(text)
    for _ in range(edits):
        chars[rng.randrange(len(chars))] = EDITS[rng.randrange(len(EDITS))]
    return "".join(chars)


LONG_CHARS = 100_000  # each article of the long pair the side-by-side view compares


def long_pair(seed: int) -> tuple[int, int]:
    """Store two articles of LONG_CHARS characters, the second a repost with a few hundred
    characters changed, and their near match; return their ids."""
    from django.utils import timezone

    from dedup.models import Article, Match, Settings

    rng = random.Random(seed)
    parts, size = [], 0
    for body in Article.objects.order_by("id").values_list("body", flat=True)[:2000]:
        parts.append(body)
        size += len(body) + 2
        if size >= LONG_CHARS:
            break
    text = "\n\n".join(parts)[:LONG_CHARS]
    copy = edited(text, rng, 300)
    made = [
        Article.objects.create(
            title=f"长文 {n}",
            body=body,
            source="新华社",
            dated_at=timezone.now(),
            content_hash=Article.hash_body(body),
            length=len(body),
            status="done",
        )
        for n, body in enumerate((text, copy))
    ]
    a, b = sorted(article.pk for article in made)
    Match.objects.create(
        a_id=a, b_id=b, kind="near", distance=2, similarity=0.97,
        version=Settings.load().active_version,
    )  # fmt: skip
    return a, b


def copy_rows(cursor, table: str, columns: list[str], rows) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def data_build(articles: int, matches: int, seed: int) -> dict:
    """Fill the database; return what the timings need (cluster ids, a pair, a word)."""
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.utils import timezone

    from bench.corpus import news_articles
    from dedup.models import Settings

    rng = np.random.default_rng(seed)
    prng = random.Random(seed)
    sizes = cluster_sizes(rng, int(articles * 0.6))
    members = sum(sizes)
    copies = members - len(sizes)
    texts = news_articles(800, articles - copies, seed=seed)

    # Article ids 1..articles in date order; clusters take runs of ids spread over the range.
    cluster_of = np.full(articles + 1, -1, np.int64)
    starts = np.sort(rng.choice(np.arange(1, articles + 1 - 400), len(sizes), replace=False))
    clusters_members: list[list[int]] = []
    taken = np.zeros(articles + 1, bool)
    free = iter(np.flatnonzero(~taken[1:]) + 1)
    for c, size in enumerate(sizes):
        ids = [int(i) for i in range(starts[c], starts[c] + size) if not taken[i]]
        while len(ids) < size:  # overlapping runs: fill from any free id
            i = int(next(free))
            if not taken[i] and i not in ids:
                ids.append(i)
        ids.sort()
        taken[ids] = True
        cluster_of[ids] = c
        clusters_members.append(ids)

    parent = {}  # copy id -> the article it was copied from (earlier in its cluster)
    for ids in clusters_members:
        for n, i in enumerate(ids[1:], start=1):
            parent[i] = ids[prng.randrange(max(1, n - 3), n) if n > 3 else prng.randrange(n)]

    bodies: dict[int, str] = {}
    distinct = iter(texts)
    for i in range(1, articles + 1):
        p = parent.get(i)
        bodies[i] = edited(bodies[p], prng, prng.randint(1, 12)) if p else next(distinct)

    now = timezone.now()
    start = now - timezone.timedelta(days=60)
    step = 60 * 60 * 24 * 60 / articles
    edges: dict[tuple[int, int], tuple] = {}

    def kind_row(rng_kind: float) -> tuple[str, int | None, float, str]:
        if rng_kind < 0.05:
            return "exact", 0, 1.0, "[]"
        if rng_kind < 0.8:
            d = int(rng.choice([0, 1, 2, 3, 4], p=[0.15, 0.25, 0.25, 0.2, 0.15]))
            return "near", d, round(float(1 - d * 0.1 - rng.random() * 0.3), 4), "[]"
        d = int(rng.integers(5, 30))
        shared = "[[0, 0], [1, 1], [2, 2]]"
        return "partial", d, round(float(0.4 + rng.random() * 0.6), 4), shared

    for child, p in parent.items():
        edges[(p, child)] = kind_row(rng.random())
    pool = [ids for ids in clusters_members if len(ids) > 2]
    weights = np.array([len(ids) for ids in pool], float)
    weights /= weights.sum()
    while len(edges) < matches and pool:
        ids = pool[int(rng.choice(len(pool), p=weights))]
        x, y = sorted(prng.sample(ids, 2))
        edges.setdefault((x, y), kind_row(rng.random()))

    # Fingerprints: a copy differs from its parent by the distance of their match.
    values = rng.integers(-(2**63), 2**63 - 1, articles + 1, dtype=np.int64)
    for child, p in sorted(parent.items()):
        d = edges[(p, child)][1] or 0
        flip = 0
        for bit in prng.sample(range(64), d):
            flip |= 1 << bit
        values[child] = np.int64(np.uint64(np.int64(values[p]).view(np.uint64)) ^ np.uint64(flip))

    from dedup.textindex import text_index_seal

    trigram = importlib.import_module("dedup.migrations.0025_text_index_once")
    with connection.cursor() as cursor:
        raw = cursor.cursor
        # A bulk load builds the search's trigram indexes once, after it (inserting into them
        # row by row would take ten times as long).
        for name in TRIGRAM_NAMES:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
        copy_rows(
            raw,
            "dedup_article",
            [
                "id", "title", "body", "source", "url", "external_id", "created_at", "dated_at",
                "content_hash", "length", "status", "status_message", "attempts",
            ],
            (
                (
                    i, bodies[i][:24], bodies[i], SOURCES[i % len(SOURCES)],
                    f"https://news.example.com/{i}.html", f"pd-{i:07d}", now,
                    start + timezone.timedelta(seconds=i * step), f"{i:064x}",
                    len(bodies[i]), "done", "", 1,
                )
                for i in range(1, articles + 1)
            ),
        )  # fmt: skip
        copy_rows(
            raw,
            "dedup_fingerprint",
            ["article_id", "version", "value", "status", "tokens", "features", "shingles",
             "created_at"],
            ((i, VERSION, int(values[i]), "ok", 300, b"", 0, now) for i in range(1, articles + 1)),
        )  # fmt: skip
        copy_rows(
            raw,
            "dedup_match",
            ["a_id", "b_id", "kind", "distance", "similarity", "shared_passages", "version",
             "found_at", "shared_chars"],
            ((a, b, k, d, s, sp, VERSION, now, 0) for (a, b), (k, d, s, sp) in edges.items()),
        )  # fmt: skip
        for name in TRIGRAM_NAMES:
            cursor.execute(trigram.index_create_sql(name, concurrently=False))
        text_index_seal(everything=True, concurrently=False)  # the text's, one range
        cursor.execute("SELECT setval('dedup_article_id_seq', %s); ANALYZE;", [articles])

    editor = User.objects.create_user("bench-editor", password="x")
    editor.groups.add(Group.objects.get(name="editor"))
    settings = Settings.load()
    settings.active_version = VERSION
    settings.save()

    # Some decisions, as after a few days of review (5% of the pairs).
    from dedup.models import Decision

    pairs = list(edges)
    picked = prng.sample(pairs, len(pairs) // 20)
    Decision.objects.bulk_create(
        [
            Decision(
                a_id=a,
                b_id=b,
                verdict="not_duplicate" if n % 5 == 0 else "duplicate",
                decided_by=editor,
            )
            for n, (a, b) in enumerate(picked)
        ],
        batch_size=5000,
    )
    big = max(clusters_members, key=len)
    small = next(ids for ids in clusters_members if len(ids) == 3)
    pair = next((a, b) for (a, b), row in edges.items() if row[0] == "near" and row[1] == 3)
    partial = next((a, b) for (a, b), row in edges.items() if row[0] == "partial")
    return {
        "articles": articles,
        "matches": len(edges),
        "clusters": len(sizes),
        "largest": len(big),
        "big": big[0],
        "small": small[0],
        "pair": pair,
        "partial": partial,
        "word": bodies[big[0]][100:104],
        # Six characters of an article no other copies: found in one text, or a few.
        "rare": bodies[int(np.flatnonzero(cluster_of[1:] < 0)[0]) + 1][200:206],
        "decisions": len(picked),
    }


# --- timing ---------------------------------------------------------------------------------


def timed(client, url: str, *, whole: bool = True) -> tuple[float, float | None]:
    """Return seconds to the response (first byte of a stream) and, streaming, to its end."""
    t = time.perf_counter()
    response = client.get(url)
    if response.status_code not in (200, 302):  # a search with one exact hit redirects
        raise RuntimeError(f"{url}: HTTP {response.status_code}")
    if not response.streaming:
        response.content  # noqa: B018 - rendered already; kept for symmetry
        return time.perf_counter() - t, None
    chunks = iter(response.streaming_content)
    next(chunks, None)
    first = time.perf_counter() - t
    if whole:
        for _ in chunks:
            pass
    return first, time.perf_counter() - t


BULK_QUERY = "/decisions/filtered/?source=新华社&kind=near&low=0.95"


def bulk_timed(client) -> str:
    """Decide the bulk selection once, after every page is timed (it writes decisions);
    return the sentence the results file says of it."""
    count = client.get(BULK_QUERY).context["count"]
    form = {"source": "新华社", "kind": "near", "low": "0.95", "expected": count}
    t = time.perf_counter()
    response = client.post("/decisions/filtered/", {**form, "verdict": "duplicate"})
    took = time.perf_counter() - t
    if response.status_code != 302:
        raise RuntimeError(f"bulk decision: HTTP {response.status_code}")
    left = client.get(BULK_QUERY).context["count"]
    print(f"bulk decision of {count} pairs: {took * 1000:.0f} ms, {left} left", flush=True)
    return (
        f"Deciding the bulk selection once (POST, {count:,} pairs read again, recorded 500 a "
        f"transaction, {left} left waiting after): {took * 1000:.0f} ms."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--matches", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument(
        "--reuse", action="store_true", help="time the database the last run built again"
    )
    args = parser.parse_args(argv)

    environment()
    facts_path = Path(os.environ["DEDUP_VAR_DIR"]) / "facts.json"
    if not args.reuse:
        database_reset()
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dedup import selectors

    setup_test_environment()  # the test Client's templates and context capture
    if args.reuse:
        facts, built = json.loads(facts_path.read_text()), 0.0
    else:
        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        facts = data_build(args.articles, args.matches, args.seed)
        built = time.perf_counter() - t
        facts_path.parent.mkdir(parents=True, exist_ok=True)
        facts_path.write_text(json.dumps(facts))
    print(
        f"built {facts['articles']:,} articles, {facts['matches']:,} matches, "
        f"{facts['clusters']:,} clusters (largest {facts['largest']}), "
        f"{facts['decisions']:,} decisions in {built:.1f} s",
        flush=True,
    )

    from django.contrib.auth.models import User

    from dedup.models import Decision

    editor = User.objects.get(username="bench-editor")
    client = Client()
    client.force_login(editor)
    a, b = facts["pair"]
    pa, pb = facts["partial"]
    la, lb = long_pair(args.seed)  # a new pair each run: its first view is a cold one
    pages = [
        ("queue, first page", "/", False),
        ("queue, page 40", "/?page=40", False),
        ("queue, filtered (source, band, all)", "/?source=新华社&band=long&status=all", False),
        ("queue, newest first, dates", "/?sort=newest&from=2000-01-01&to=2100-01-01", False),
        ("queue, searched (title and text)", f"/?q={facts['word']}", False),
        ("cluster page, largest cluster, page 1", f"/clusters/{facts['big']}/", False),
        (
            "cluster page, largest cluster, members page 3, pairs page 5",
            f"/clusters/{facts['big']}/?members_page=3&pairs_page=5",
            False,
        ),
        ("cluster page, small cluster", f"/clusters/{facts['small']}/", False),
        ("compare, near pair", f"/compare/{a}/{b}/", False),
        ("compare, partial pair", f"/compare/{pa}/{pb}/", False),
        (
            f"compare, two {LONG_CHARS:,}-character articles (first run: first view)",
            f"/compare/{la}/{lb}/",
            False,
        ),
        ("sliders re-draw near=0 partial=0", "/queue/results/?near=0&partial=0", True),
        ("sliders re-draw near=0.5 partial=0.5", "/queue/results/?near=0.5&partial=0.5", True),
        ("sliders re-draw near=0.8 partial=0", "/queue/results/?near=0.8&partial=0", True),
        ("sliders re-draw near=0.9 partial=0.9", "/queue/results/?near=0.9&partial=0.9", True),
        ("queue right after a new decision", "/", "decide"),
        ("article page, largest cluster's original", f"/articles/{facts['big']}/", False),
        ("article page, small cluster's original", f"/articles/{facts['small']}/", False),
        ("search, external id (opens the article)", f"/articles/?q=pd-{facts['big']:07d}", False),
        ("search, a common word", f"/articles/?q={facts['word']}", False),
        ("search, a rare phrase", f"/articles/?q={facts.get('rare', facts['word'])}", False),
        (
            "search, a word with source and dates",
            f"/articles/?q={facts['word']}&source=新华社&from=2000-01-01&to=2100-01-01",
            False,
        ),
        ("search, no words, page 40", "/articles/?page=40", False),
        ("bulk decision, counted: the whole queue", "/decisions/filtered/", False),
        ("bulk decision, counted: source, near >= 0.95", BULK_QUERY, False),
        ("export clusters.csv (first byte)", "/export/clusters.csv", False),
        ("export decisions.csv (first byte)", "/export/decisions.csv", False),
    ]
    rows = []
    selectors.table_forget()
    cold, _ = timed(client, "/")
    for name, url, redraw in pages:
        firsts, totals = [], []
        first_run = None
        for run in range(args.runs + 1):
            if redraw == "decide":  # an editor decided: the table takes it in, clusters anew
                Decision.objects.create(a_id=a, b_id=b, verdict="duplicate", decided_by=editor)
            elif redraw:
                selectors.match_table().clusterings_forget()
            first, total = timed(client, url)
            if run == 0:
                first_run = first
                continue
            firsts.append(first)
            if total is not None:
                totals.append(total)
        row = (name, first_run, statistics.median(firsts), max(firsts), totals)
        rows.append(row)
        extra = f", whole {statistics.median(totals) * 1000:.0f} ms" if totals else ""
        print(f"{name}: median {row[2] * 1000:.1f} ms, max {row[3] * 1000:.1f} ms{extra}")

    bulk = bulk_timed(client)
    table = io.StringIO()
    table.write(
        f"# Review dashboard: server time per page\n\n"
        f"{facts['articles']:,} articles, {facts['matches']:,} matches in "
        f"{facts['clusters']:,} clusters (largest {facts['largest']}), "
        f"{facts['decisions']:,} decisions; PostgreSQL on 127.0.0.1, Django test Client "
        f"signed in as an editor, {args.runs} runs after a first one. `python -m bench."
        f"dashboard` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores shared).\n\n"
        f"Cold start (first request, match table read from the database): "
        f"{cold * 1000:.0f} ms.\n\n"
        "| page | first run ms | median ms | max ms | whole stream ms (median) |\n"
        "|---|---:|---:|---:|---:|\n"
    )
    for name, first_run, median, most, totals in rows:
        whole = f"{statistics.median(totals) * 1000:.0f}" if totals else ""
        table.write(
            f"| {name} | {first_run * 1000:.1f} | {median * 1000:.1f} | {most * 1000:.1f} "
            f"| {whole} |\n"
        )
    table.write(
        "\nThreshold re-draws are timed with the clusterings cache emptied before every run "
        "(clusters computed afresh from the arrays); a slider moved back to a value seen "
        "before is served from that cache. The first run of the partial pair's comparison loads "
        "the passage detector (its tokenizer dictionary), once per process.\n\n"
        f"{bulk}\n"
    )
    provenance.write(RESULTS, table.getvalue())
    print(table.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
