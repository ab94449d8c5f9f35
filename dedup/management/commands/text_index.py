"""manage.py text_index: show, drop or build the trigram index that serves search by words in
an article's text (migration 0025), for operators weighing search against ingest speed."""

from __future__ import annotations

import importlib

from django.core.management.base import BaseCommand
from django.db import connection

INDEXES = importlib.import_module("dedup.migrations.0025_text_index_once")
NAME = "article_body_finished_trgm"


class Command(BaseCommand):
    help = (
        "Show whether the text's trigram index exists and its size; --drop removes it, "
        "--create builds it again (concurrently: writes go on). Without it, search by words "
        "in the text still works but reads every article's text; with it, each finished "
        "article's trigrams are written once (two thirds of the workers' time on the "
        "pipeline bench at 100,000 articles: docs/benchmarks.md)."
    )

    def add_arguments(self, parser) -> None:
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--drop", action="store_true", help="drop the index")
        what.add_argument("--create", action="store_true", help="build the index")

    def handle(self, *args, drop: bool, create: bool, **options) -> None:
        with connection.cursor() as cursor:
            if drop:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
            elif create:
                self.stdout.write("Building the text index (concurrently)...")
                cursor.execute(INDEXES.index_create_sql(NAME))
            cursor.execute("SELECT pg_size_pretty(pg_relation_size(to_regclass(%s)))", [NAME])
            [(size,)] = cursor.fetchall()
        if size is None:
            self.stdout.write(
                "Text index: none. Search by words in the text reads every article's text."
            )
        else:
            self.stdout.write(f"Text index: {NAME}, {size}, finished articles' text.")
