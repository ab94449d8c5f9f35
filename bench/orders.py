"""Verdicts of one collection processed in three orders, live and settled (issue 32).

    python -m bench.orders [--size 800] [--seed 7] [--corpora news templated debian]

For each held-out corpus of bench/corpora.py, a fresh PostgreSQL database per order: the
corpus is stored through the service (services.articles_ingest), then processed in chunks of
25 by the service's own task body (services.articles_process) in one of three orders: by id;
shuffled; shuffled with a fault midway (the database lost while a chunk is matched, after its
articles were indexed: the chunk is delivered again at the end, as the broker does). The pairs
the queue then holds ("live") are compared with `python -m dedup duplicates` on the same texts
(dedup.cli.duplicates_of, the service's detector), then again after settling (a rebuild to the
active version, what beat starts once a burst is over: dedup.services.settling).
Results go to bench/results/orders.md.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import provenance

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "orders.md"
ORDERS = ("by id", "shuffled", "shuffled, a fault midway")
CHUNK = 25
POSTGRES = "postgres://postgres@127.0.0.1:5432"


def process_in_order(ids: list[int], order: str, seed: int) -> None:
    """Process stored articles through services.articles_process in chunks of CHUNK, in one
    of ORDERS (tasks' delay must send nothing: the caller runs every chunk)."""
    from django.db import OperationalError

    from dedup import services
    from dedup.services import processing

    order_ids = list(ids)
    if order != "by id":
        random.Random(seed).shuffle(order_ids)
    chunks = [order_ids[i : i + CHUNK] for i in range(0, len(order_ids), CHUNK)]
    failed = None
    if order.endswith("midway"):
        failed = chunks.pop(len(chunks) // 2)
        matches_find = processing.matches_find

        def lost(*args, **kwargs):
            raise OperationalError("the database went away (bench.orders' fault)")

        processing.matches_find = lost
        try:
            services.articles_process(article_ids=failed)
        except OperationalError:
            pass  # the task is retried: its articles stay claimed, indexed, unmatched
        finally:
            processing.matches_find = matches_find
    for chunk in chunks:
        services.articles_process(article_ids=chunk)
    if failed:
        services.articles_process(article_ids=failed, stale_after=0)  # delivered again


def settle() -> None:
    """Settle the verdicts now, in this process (what beat's settling runs on a worker)."""
    from dedup import services

    job, _ = services.index_rebuild_start(send=False)
    services.index_rebuild(job_id=job.pk)


def pairs(ids: list[int]) -> set[tuple[int, int, str]]:
    """Return the stored matches as (position, position, kind) of the articles `ids`."""
    from dedup.models import Match

    at = {article_id: n for n, article_id in enumerate(ids)}
    rows = Match.objects.values_list("a_id", "b_id", "kind")
    return {(at[a], at[b], kind) for a, b, kind in rows}


def cli_pairs(texts: list[str]) -> set[tuple[int, int, str]]:
    """Return what `python -m dedup duplicates` finds in these texts with the service's
    detector at its settings."""
    from dedup import index
    from dedup.cli import duplicates_of

    detector = index.detector_for(index.settings_current())
    return {(d.a, d.b, d.kind) for d in duplicates_of(texts, detector)}


def one_run(corpus: str, order: str, size: int, seed: int) -> dict:
    """Run one corpus in one order in this process (its DATABASE_URL fresh, migrated)."""
    import django

    django.setup()
    from dedup import services, tasks

    for task in (tasks.articles_process, tasks.index_rebuild, tasks.upload_process):
        task.delay = lambda *args, **kwargs: None
    from bench.corpora import build

    docs = build(corpus, seed=seed, split="test", size=size)
    texts = [doc.text for doc in docs]
    rows = [{"body": text, "external_id": str(n), "source": corpus} for n, text in enumerate(texts)]
    ids = [article.pk for article in services.articles_ingest(rows=rows)]
    process_in_order(ids, order, seed)
    live = pairs(ids)
    settle()
    settled = pairs(ids)
    cli = cli_pairs(texts)
    return {
        "corpus": corpus, "order": order, "docs": len(texts), "cli": len(cli),
        "live": len(live), "live_off": len(live ^ cli),
        "settled": len(settled), "settled_off": len(settled ^ cli),
        "settled_pairs": sorted(settled),
    }  # fmt: skip


def _child(corpus: str, order: str, size: int, seed: int) -> dict:
    import psycopg

    name = f"dedup_bench_orders_{abs(hash((corpus, order))) % 10**8}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {
        "DATABASE_URL": f"{POSTGRES}/{name}", "SECRET_KEY": "bench-orders", "DEBUG": "0",
        "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "dedup.settings",
        "DEDUP_TEXT_INDEX_ROWS": "0",
    }  # fmt: skip
    import os

    env = {**os.environ, **env}
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )
        with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
            subprocess.run(
                [sys.executable, "-m", "bench.orders", "--one", corpus, order, str(size),
                 str(seed), out.name],
                cwd=ROOT, env=env, check=True,
            )  # fmt: skip
            return json.load(out)
    finally:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=800)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpora", nargs="+", default=["news", "templated", "debian"])
    parser.add_argument("--one", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        corpus, order, size, seed, out = args.one
        Path(out).write_text(json.dumps(one_run(corpus, order, int(size), int(seed))))
        return
    command = f"python -m bench.orders --size {args.size} --seed {args.seed}"
    lines = [
        "Pairs of one collection processed in three orders, against `duplicates` on the same",
        "texts (off: pairs in one and not the other, a changed kind counting twice):",
        "",
        "| corpus | docs | order | `duplicates` | live | live off | settled | settled off |"
        " settled = by id |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for corpus in args.corpora:
        runs = [_child(corpus, order, args.size, args.seed) for order in ORDERS]
        for run in runs:
            same = run["settled_pairs"] == runs[0]["settled_pairs"]
            lines.append(
                f"| {corpus} | {run['docs']} | {run['order']} | {run['cli']} | {run['live']} |"
                f" {run['live_off']} | {run['settled']} | {run['settled_off']} |"
                f" {'yes' if same else 'NO'} |"
            )
            print(lines[-1], flush=True)
    provenance.write(RESULTS, "\n".join(lines) + "\n", command)
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
