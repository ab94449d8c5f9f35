"""manage.py text_index: show, drop or build the trigram index that serves search by words in
an article's text, a range of articles at a time (dedup.textindex)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from dedup.textindex import text_index_drop, text_index_seal, text_ranges


class Command(BaseCommand):
    help = (
        "Show the text's trigram index: its ranges of articles, their size, and how many "
        "articles are past the last one (their text is read by search). --drop removes every "
        "range (the workers build them again unless DEDUP_TEXT_INDEX_ROWS=0); --create builds "
        "one range up to the newest article now (concurrently: writes go on)."
    )

    def add_arguments(self, parser) -> None:
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--drop", action="store_true", help="drop every range's index")
        what.add_argument("--create", action="store_true", help="index every article now")

    def handle(self, *args, drop: bool, create: bool, **options) -> None:
        if drop:
            self.stdout.write(f"Dropped {text_index_drop()} range(s).")
        elif create:
            self.stdout.write("Building the text index up to the newest article (concurrently)...")
            text_index_seal(everything=True)
        ranges = text_ranges()
        last = max((r.hi for r in ranges), default=0)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_size_pretty(coalesce(sum(pg_relation_size(to_regclass(n))), 0)::bigint)"
                " FROM unnest(%s::text[]) n",
                [[r.name for r in ranges]],
            )
            [(size,)] = cursor.fetchall()
            cursor.execute("SELECT count(*) FROM dedup_article WHERE id > %s", [last])
            [(tail,)] = cursor.fetchall()
        every = settings.DEDUP_TEXT_INDEX_ROWS
        built = f"a range is built per {every:,} articles" if every > 0 else "none are built"
        if ranges:
            self.stdout.write(
                f"Text index: {len(ranges)} range(s) up to article {last}, {size}; "
                f"{tail:,} newer article(s) read by search; {built} (DEDUP_TEXT_INDEX_ROWS)."
            )
        else:
            self.stdout.write(
                f"Text index: none. Search reads the text of all {tail:,} article(s); {built} "
                "(DEDUP_TEXT_INDEX_ROWS)."
            )
