"""The text's trigram index holds finished articles only (issue 15: the pipeline's speed).

`article_body_trgm` (migration 0016) indexed every row, and status is an indexed column, so
each change of status (claimed, then finished) was a non-HOT update that wrote the text's
trigrams again: three GIN insertions per article, each about a thousand trigrams for a
Chinese article of a thousand characters. Measured on the pipeline bench's database (20,000
articles, 2 shared cores): 400 articles claimed in 5.0 s with the index, 0.10 s without; the
claim and the finish together took most of a chunk's time, and once a claim waited 560 s on
the index's pending list.

Now the index (article_body_finished_trgm) is partial, on the finished statuses: an article's trigrams are written once,
when it is finished (done, exact or failed), not when it is stored nor when it is claimed.
Search (dedup.articles) asks for the text among finished articles through this index and
among waiting and processing ones through the status index: the same hits.
"""

from django.db import migrations

FINISHED = ("done", "exact", "failed")

# The search's trigram indexes as they are from here on (title and URL as 0016 made them),
# and each one's rows: bench/dashboard.py builds them after a bulk load.
TRIGRAM_INDEXES = {
    "article_title_trgm": ("title", ""),
    "article_url_trgm": ("url", ""),
    "article_body_finished_trgm": (
        "body",
        " WHERE status IN ({})".format(", ".join(f"'{s}'" for s in FINISHED)),
    ),
}


def index_create_sql(name: str, *, concurrently: bool = True) -> str:
    column, where = TRIGRAM_INDEXES[name]
    how = "CONCURRENTLY IF NOT EXISTS" if concurrently else "IF NOT EXISTS"
    return (
        f"CREATE INDEX {how} {name} ON dedup_article"
        f" USING gin (UPPER({column}::text) gin_trgm_ops){where}"
    )


OLD = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS article_body_trgm ON dedup_article"
    " USING gin (UPPER(body::text) gin_trgm_ops)"
)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("dedup", "0024_partitioned_segments"),
    ]

    operations = [
        # The new one first: search keeps an index while the other is built.
        migrations.RunSQL(
            sql=[index_create_sql("article_body_finished_trgm"), "DROP INDEX CONCURRENTLY IF EXISTS article_body_trgm"],
            reverse_sql=[OLD, "DROP INDEX CONCURRENTLY IF EXISTS article_body_finished_trgm"],
        ),
    ]
