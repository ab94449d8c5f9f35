"""The text's trigram index, a range of articles at a time (issue 15: the pipeline's speed).

`article_body_finished_trgm` (migration 0025) took each finished article's trigrams one
article at a time: 64% of the workers' time on the pipeline bench at 100,000 articles, growing
with the index. It is replaced by partial indexes over ranges of article ids, each built at
once (dedup.textindex): here one range for the articles stored so far, if any; the workers
build the next ones as articles arrive.
"""

import importlib

from django.db import migrations

ONCE = importlib.import_module("dedup.migrations.0025_text_index_once")


def ranges_build(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM dedup_article")
        [(newest,)] = cursor.fetchall()
        if newest is not None:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS article_text_0_{newest} ON dedup_article"
                f" USING gin (UPPER(body::text) gin_trgm_ops) WHERE id > 0 AND id <= {newest}"
            )


def ranges_drop(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            r" WHERE i.indrelid = 'dedup_article'::regclass AND c.relname LIKE 'article\_text\_%'"
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("dedup", "0025_text_index_once"),
    ]

    operations = [
        # The ranges first: search keeps an index while the other is dropped.
        migrations.RunPython(ranges_build, ranges_drop),
        migrations.RunSQL(
            sql="DROP INDEX CONCURRENTLY IF EXISTS article_body_finished_trgm",
            reverse_sql=ONCE.index_create_sql("article_body_finished_trgm"),
        ),
    ]
