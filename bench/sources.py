"""The sources pages and API at 10^6 articles: server time, cold and warm.

    python -m bench.sources [--articles 1000000] [--matches 800000] [--sources 300] [--runs 5]

(DEDUP_BENCH_DB names another database, for a second checkout on the same server.)

A fresh database `dedup_sources_bench` on 127.0.0.1:5432 (dropped, created, migrated) is filled
directly with COPY, not through the pipeline: articles dated over the last year in id order,
their sources drawn from a long tail (a few sources publish most), and matches between an
article and one up to a day before it (exact, near and partial), so that most matches cross
sources and some stay within one. The match COPY fires the triggers that keep SourceEdge
(migration 0032), as every write does: their time is part of the load and reported.

Then Django's test Client, signed in as an editor, times each page and API call in this
process: server time only. "Cold" is the first request of this process for that address
(a fresh connection: no plan cached, templates not yet compiled); PostgreSQL's shared buffers
are not emptied (the server is shared), so a first read from disk is not measured. "Warm" is
the median and max of N runs after it. The plain query that the counts replace (a GROUP BY
over the matches joined to their articles) is timed once beside them, and so is the cost of
the triggers to the pipeline's writes (100 matches a statement, with and without them).
The table goes to bench/results/sources.md.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

from bench import provenance

RESULTS = Path(__file__).parent / "results" / "sources.md"
DB_NAME = os.environ.get("DEDUP_BENCH_DB", "dedup_sources_bench")
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
VERSION = "bench-v1"
TRIGRAM_NAMES = ("article_title_trgm", "article_url_trgm")
YEAR = 365 * 86400
KINDS = np.array(["exact", "near", "partial"])

PLAIN_SQL = """
SELECT x.source, y.source, m.kind, count(*)
FROM dedup_match m JOIN dedup_article x ON x.id = m.a_id JOIN dedup_article y ON y.id = m.b_id
WHERE x.source <> y.source AND y.dated_at >= now() - interval '30 days'
GROUP BY 1, 2, 3
"""


def environment() -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dedup.settings",
            "DATABASE_URL": f"{SERVER_URL}/{DB_NAME}",
            "SECRET_KEY": "bench-only-secret",
            "DEBUG": "0",
            "DEDUP_HTTPS": "0",
            "ALLOWED_HOSTS": "testserver,localhost",
            "DEDUP_VAR_DIR": f"/tmp/{DB_NAME}",
            "LOG_LEVEL": "WARNING",
        }
    )


def database_reset() -> None:
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def source_names(count: int) -> list[str]:
    """Return source names, Chinese and English mixed, as newsrooms see them."""
    stems = ["日报", "晚报", "新闻网", "转载", "公众号", "论坛", "Times", "Post", "Wire"]
    return [f"{stems[i % len(stems)]}{i:03d}" for i in range(count)]


def data_build(articles: int, matches: int, sources: int, seed: int) -> dict:
    """Fill the database; return what the timings need."""
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.utils import timezone

    trigram = importlib.import_module("dedup.migrations.0025_text_index_once")

    rng = np.random.default_rng(seed)
    names = source_names(sources)
    weights = 1 / np.arange(1, sources + 1) ** 1.1
    source_of = rng.choice(sources, size=articles + 1, p=weights / weights.sum())
    now = timezone.now()
    start = now - timezone.timedelta(seconds=YEAR)
    step = YEAR / articles
    per_day = articles / 365
    # Copies: an article b and an earlier a up to a day before it; pairs deduplicated.
    b = rng.integers(2, articles + 1, size=int(matches * 1.1))
    a = b - rng.integers(1, int(per_day) + 2, size=b.size)
    keep = a >= 1
    pairs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:matches]]
    pairs = pairs[np.argsort(pairs[:, 1], kind="stable")]  # found in the copies' order
    kinds = KINDS[rng.choice(3, size=len(pairs), p=[0.1, 0.6, 0.3])]
    sims = rng.uniform(0.5, 1.0, size=len(pairs))

    t = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.cursor
        for name in TRIGRAM_NAMES:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
        with raw.copy(
            "COPY dedup_article (id, title, body, source, url, external_id, created_at, "
            "dated_at, content_hash, length, status, status_message, attempts) FROM STDIN"
        ) as copy:
            for i in range(1, articles + 1):
                when = start + timezone.timedelta(seconds=i * step)
                body = f"第{i}篇：今天的新闻内容在这里。"
                copy.write_row(
                    (i, f"标题 {i}", body, names[source_of[i]], f"https://n.example/{i}",
                     f"b-{i}", when, when, f"{i:064x}", len(body), "done", "", 1)
                )  # fmt: skip
        articles_s = time.perf_counter() - t
        t = time.perf_counter()
        with raw.copy(
            "COPY dedup_match (a_id, b_id, kind, distance, similarity, shared_passages, "
            "version, found_at, shared_chars) FROM STDIN"
        ) as copy:
            for (x, y), kind, sim in zip(
                pairs.tolist(), kinds.tolist(), sims.tolist(), strict=True
            ):
                copy.write_row((x, y, kind, 3, sim, "[]", VERSION, now, 0))
        matches_s = time.perf_counter() - t
        for name in TRIGRAM_NAMES:
            cursor.execute(trigram.index_create_sql(name, concurrently=False))
        cursor.execute("SELECT setval('dedup_article_id_seq', %s)", [articles])
        cursor.execute("SELECT setval('dedup_match_id_seq', %s)", [len(pairs)])
        cursor.execute("VACUUM ANALYZE")
        cursor.execute(
            "SELECT count(*), coalesce(sum(copies) FILTER (WHERE original = '' AND copier = '' "
            "AND span = 'a'), 0) FROM dedup_source_edge"
        )
        edge_rows, counted = cursor.fetchone()
    editor = User.objects.create_user("bench-editor", password="x")
    editor.groups.add(Group.objects.get(name="editor"))
    counts = np.bincount(source_of[1:], minlength=sources)
    return {
        "articles": articles,
        "matches": len(pairs),
        "edge_rows": edge_rows,
        "counted": counted,
        "articles_s": articles_s,
        "matches_s": matches_s,
        "top": names[int(np.argmax(counts))],
        "top_articles": int(counts.max()),
        "small": names[sources // 2],
        "small_articles": int(counts[sources // 2]),
    }


def timed(client, url: str) -> float:
    t = time.perf_counter()
    response = client.get(url)
    if response.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {response.status_code}")
    if response.streaming:
        for _ in response.streaming_content:
            pass
    else:
        response.content  # noqa: B018
    return time.perf_counter() - t


def plain_timed() -> float:
    from django.db import connection

    t = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(PLAIN_SQL)
        cursor.fetchall()
    return time.perf_counter() - t


def writes_timed(statements: int = 20, rows: int = 100) -> tuple[float, float]:
    """Median ms of one INSERT of `rows` matches (as the pipeline writes them), with the
    triggers and without; the rows are deleted again (triggers off) after each round."""
    from django.db import connection

    from dedup.models import Match

    top = Match.objects.order_by("-b_id").values_list("b_id", flat=True).first()
    result = []
    for enabled in (True, False):
        with connection.cursor() as cursor:
            verb = "ENABLE" if enabled else "DISABLE"
            for name in ("insert", "delete"):
                cursor.execute(f"ALTER TABLE dedup_match {verb} TRIGGER dedup_source_edges_{name}")
        times = []
        for s in range(statements):
            made = [
                Match(a_id=top - 500 - s * rows - i, b_id=top - i - s * rows, kind="near",
                      similarity=0.9, distance=2, version=VERSION)
                for i in range(rows)
            ]  # fmt: skip
            t = time.perf_counter()
            Match.objects.bulk_create(made, ignore_conflicts=True)
            times.append(time.perf_counter() - t)
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE dedup_match DISABLE TRIGGER dedup_source_edges_delete")
            cursor.execute("DELETE FROM dedup_match WHERE version = %s AND found_at > now() - "
                           "interval '1 hour' AND id > (SELECT max(id) - %s FROM dedup_match)",
                           [VERSION, statements * rows])  # fmt: skip
            if enabled:  # take back what the triggers counted of the rows just deleted
                cursor.execute("SELECT dedup_source_edges_rebuild()")
            cursor.execute("ALTER TABLE dedup_match ENABLE TRIGGER dedup_source_edges_delete")
            cursor.execute("ALTER TABLE dedup_match ENABLE TRIGGER dedup_source_edges_insert")
        result.append(statistics.median(times) * 1000)
    return result[0], result[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--matches", type=int, default=800_000)
    parser.add_argument("--sources", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)

    environment()
    database_reset()
    import django

    django.setup()
    from django.contrib.auth.models import Permission, User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dedup.models import ApiToken

    setup_test_environment()
    call_command("migrate", verbosity=0)
    t = time.perf_counter()
    facts = data_build(args.articles, args.matches, args.sources, args.seed)
    built = time.perf_counter() - t
    print(
        f"built {facts['articles']:,} articles, {facts['matches']:,} matches "
        f"({facts['counted']:,} across sources, {facts['edge_rows']:,} SourceEdge rows) in "
        f"{built:.0f} s; match COPY with its triggers {facts['matches_s']:.1f} s",
        flush=True,
    )
    editor = User.objects.get(username="bench-editor")
    client = Client()
    client.force_login(editor)
    editor.user_permissions.add(Permission.objects.get(codename="view_article"))
    api = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(editor)[1]}")
    top, small = quote(facts["top"]), quote(facts["small"])
    addresses = [
        ("overview, all time", client, "/sources/"),
        ("overview, last 30 days", client, "/sources/?days=30"),
        ("overview, last 7 days", client, "/sources/?days=7"),
        (f"source page, the biggest ({facts['top_articles']:,} articles)", client,
         f"/sources/{top}/"),
        ("source page, the biggest, last 30 days", client, f"/sources/{top}/?days=30"),
        ("source page, the biggest, page 20 of each list", client,
         f"/sources/{top}/?page=20&taken_page=20"),
        (f"source page, a middling one ({facts['small_articles']:,} articles)", client,
         f"/sources/{small}/"),
        ("edges CSV, all time (whole stream)", client, "/sources/edges.csv"),
        ("API /api/sources, all time", api, "/api/sources"),
        ("API /api/sources, last 30 days", api, "/api/sources?since=" + time.strftime(
            "%Y-%m-%d", time.gmtime(time.time() - 29 * 86400))),
        ("API /api/sources/<biggest>/copies", api, f"/api/sources/{top}/copies"),
        ("API /api/sources/<biggest>/copies?taken=true", api,
         f"/api/sources/{top}/copies?taken=true"),
    ]  # fmt: skip
    rows = []
    for name, who, url in addresses:
        cold = timed(who, url)
        warm = [timed(who, url) for _ in range(args.runs)]
        rows.append((name, cold, statistics.median(warm), max(warm)))
        print(f"{name}: cold {cold * 1000:.0f} ms, warm median {statistics.median(warm) * 1000:.0f}"
              f" ms, max {max(warm) * 1000:.0f} ms", flush=True)  # fmt: skip
    plain = [plain_timed() for _ in range(2)]
    with_triggers, without = writes_timed()
    print(f"plain GROUP BY over the matches, 30 days: {plain[0]:.2f} s, {plain[1]:.2f} s")
    print(
        f"100 matches a statement: {with_triggers:.1f} ms with the triggers, {without:.1f} without"
    )

    out = io.StringIO()
    out.write(
        "# Sources pages and API: server time at 10^6 articles\n\n"
        f"{facts['articles']:,} articles over a year from {args.sources} sources (a long tail), "
        f"{facts['matches']:,} matches ({facts['counted']:,} between two sources), kept as "
        f"{facts['edge_rows']:,} SourceEdge rows; loaded with COPY (articles "
        f"{facts['articles_s']:.0f} s; matches {facts['matches_s']:.0f} s, their triggers "
        f"included). Django test Client in this process, server time; cold = the first request "
        f"of the process for that address (PostgreSQL's shared buffers not emptied: the server "
        f"is shared), warm = {args.runs} runs after it.\n\n"
        "| address | cold ms | warm median ms | warm max ms |\n|---|---:|---:|---:|\n"
    )
    for name, cold, median, most in rows:
        out.write(f"| {name} | {cold * 1000:.0f} | {median * 1000:.0f} | {most * 1000:.0f} |\n")
    out.write(
        f"\nWhat the counts replace: the plain GROUP BY over the matches joined to both "
        f"articles, for the last 30 days only, takes {plain[0] * 1000:.0f} ms (first) and "
        f"{plain[1] * 1000:.0f} ms (again); all time is longer still.\n\n"
        f"What the triggers cost a writer: one INSERT of 100 matches (the pipeline's "
        f"bulk_create) takes {with_triggers:.1f} ms with them and {without:.1f} ms without "
        f"(median of 20).\n"
    )
    provenance.write(RESULTS, out.getvalue())
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
