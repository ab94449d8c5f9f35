"""Search every article, an upload's default source and publication time, undoing a
decision, and the models' names in the admin's languages.

Title, text and URL search are `UPPER(column) LIKE UPPER('%q%')` (Django's icontains on
PostgreSQL), served by trigram GIN indexes on those expressions; pg_trgm makes trigrams of
Chinese text too, so a three-character word is found without a scan. They are built
concurrently (writes go on).

The text's index has a write cost, measured here (2 shared cores) at 100,000 articles of
300 characters: 10,000 inserts took 10.7 s with it and 1.1 s without, and since every change
of an article's status (twice per article) is a non-HOT update (status is indexed), its
trigrams are inserted again each time: 10,000 status updates took 5.8-7.2 s with it, 1.4-1.5 s
without. Building it concurrently took 55 s for 110,000 such articles. Ample at a million
articles a day; towards a million an hour, move the searched text to a table written once
(see dedup/articles.py), or drop article_body_trgm: text search then scans, and still works.
"""

from django.db import migrations, models

TRIGRAM_INDEXES = {
    "article_title_trgm": "title",
    "article_url_trgm": "url",
    "article_body_trgm": "body",
}


def trigram_indexes_create(apps, schema_editor):
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, column in TRIGRAM_INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON dedup_article"
            f" USING gin (UPPER({column}::text) gin_trgm_ops)"
        )


def trigram_indexes_drop(apps, schema_editor):
    for name in TRIGRAM_INDEXES:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("dedup", "0015_verified_evidence"),
    ]

    operations = [
        migrations.AddField(
            model_name="uploadbatch",
            name="source",
            field=models.CharField(blank=True, max_length=200, verbose_name="source"),
        ),
        migrations.AddField(
            model_name="uploadbatch",
            name="published_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="published"),
        ),
        migrations.AlterField(
            model_name="decision",
            name="verdict",
            field=models.CharField(
                choices=[
                    ("duplicate", "duplicate"),
                    ("not_duplicate", "not a duplicate"),
                    ("original", "original"),
                    ("undone", "decision undone"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddIndex(
            model_name="article",
            index=models.Index(fields=["external_id"], name="article_external_id"),
        ),
        migrations.AlterModelOptions(
            name="apitoken",
            options={"verbose_name": "API token", "verbose_name_plural": "API tokens"},
        ),
        migrations.AlterModelOptions(
            name="article",
            options={"verbose_name": "article", "verbose_name_plural": "articles"},
        ),
        migrations.AlterModelOptions(
            name="decision",
            options={"verbose_name": "decision", "verbose_name_plural": "decisions"},
        ),
        migrations.AlterModelOptions(
            name="fingerprint",
            options={"verbose_name": "fingerprint", "verbose_name_plural": "fingerprints"},
        ),
        migrations.AlterModelOptions(
            name="match",
            options={"verbose_name": "match", "verbose_name_plural": "matches"},
        ),
        migrations.AlterModelOptions(
            name="rebuildjob",
            options={"verbose_name": "rebuild job", "verbose_name_plural": "rebuild jobs"},
        ),
        migrations.AlterModelOptions(
            name="uploadbatch",
            options={"verbose_name": "upload batch", "verbose_name_plural": "upload batches"},
        ),
        migrations.RunPython(trigram_indexes_create, trigram_indexes_drop),
    ]
