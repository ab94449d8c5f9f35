"""Migration 0024 moves the segment index to the partitioned table: every stored row is
copied with its combined key, version number and day, and is found by look-ups after it."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dedup.engine.plan import Plan
from dedup.index.segments import PgSegmentIndex, combined_keys
from dedup.models.versions import version_number

BEFORE = [("dedup", "0020_match_version")]
AFTER = [("dedup", "0024_partitioned_segments")]


@pytest.mark.django_db(transaction=True)
def test_stored_rows_are_copied_and_found_after_the_migration():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        apps = executor.loader.project_state(BEFORE).apps
        Article, SegmentRow = (
            apps.get_model("dedup", "Article"),
            apps.get_model("dedup", "SegmentRow"),
        )
        plan = Plan.even(5, 3)
        values = np.random.default_rng(2).integers(0, 2**64 - 1, 30, dtype=np.uint64)
        day = dt.date(2026, 11, 20)
        ids = [
            Article.objects.create(
                body=f"text {n}",
                content_hash=str(n),
                dated_at=dt.datetime(2026, 11, 20, 23, tzinfo=dt.UTC),
            ).pk
            for n in range(len(values))
        ]
        keys = plan.keys(values).view(np.int64)
        SegmentRow.objects.bulk_create(
            SegmentRow(
                version="old-v",
                table_no=t,
                key=int(keys[t, i]),
                fingerprint=int(values.view(np.int64)[i]),
                article_id=a,
            )
            for t in range(plan.table_count)
            for i, a in enumerate(ids)
        )
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        with connection.cursor() as cursor:
            cursor.execute("SELECT key, article_id, day, version FROM dedup_segment")
            rows = cursor.fetchall()
        expected = combined_keys(plan, values).view(np.int64)
        assert sorted((k, a) for k, a, _, _ in rows) == sorted(
            (int(expected[t, i]), a) for t in range(plan.table_count) for i, a in enumerate(ids)
        )
        assert {(d, v) for _, _, d, v in rows} == {(day, version_number("old-v"))}
        hits = PgSegmentIndex(plan, "old-v").query_many(values, 0)
        assert sorted(zip(hits.query.tolist(), hits.id.tolist(), strict=True)) == list(
            enumerate(ids)
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
