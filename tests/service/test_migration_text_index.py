"""Migration 0026 replaces the index over every finished article's text (0025) with one range
over the articles stored so far (dedup.textindex); backwards, the other way round."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from dedup.textindex import text_index_drop, text_ranges

BEFORE = [("dedup", "0025_text_index_once")]
AFTER = [("dedup", "0026_text_index_ranges")]


def index_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [name])
        return cursor.fetchone()[0] is not None


@pytest.mark.django_db(transaction=True)
def test_the_stored_articles_get_one_range_and_the_old_index_goes():
    text_index_drop()
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        Article = executor.loader.project_state(BEFORE).apps.get_model("dedup", "Article")
        ids = [
            Article.objects.create(
                body=f"第{n}篇", content_hash=str(n), status="done", dated_at=timezone.now()
            ).pk
            for n in range(5)
        ]
        assert index_exists("article_body_finished_trgm")
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        assert [(r.lo, r.hi) for r in text_ranges()] == [(0, max(ids))]
        assert not index_exists("article_body_finished_trgm")
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        assert text_ranges() == [] and index_exists("article_body_finished_trgm")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        text_index_drop()
