"""Deleting what no version in use needs (index_clean): the rows of rebuilds stopped or
superseded, of the version a finished rebuild replaced, and rebuilds' matches set aside, in
batches of a transaction each.

A version is kept while it is the active one (answers come from it) or the one the settings
and this code store under (a rebuild to it runs, or will). Each batch checks that under the
settings row's share lock (index.settings_shared), as every writer of index rows does: nobody
writes under an abandoned version, and a settings change back to it waits for the batch. A
batch deletes articles' fingerprints together with their segment rows and passage keys, so a
stored fingerprint always has its index rows (a rebuild to that version again keeps what is
left). Idempotent: any number may run at once, and beat runs it again now and then.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from django.db import transaction

from dedup import index
from dedup.db import pg_cursor
from dedup.models import Match, PassageKey, RebuildJob, RebuildState, SegmentRow
from dedup.selectors.settings import settings_current

logger = logging.getLogger("dedup.services")

BATCH = 2000

# The distinct versions of an index table, one index probe each (a loose index scan).
_VERSIONS = """
WITH RECURSIVE v(version) AS (
    (SELECT version FROM {table} ORDER BY version LIMIT 1)
    UNION ALL
    SELECT (SELECT t.version FROM {table} t WHERE t.version > v.version
            ORDER BY t.version LIMIT 1)
    FROM v WHERE v.version IS NOT NULL
)
SELECT version FROM v WHERE version IS NOT NULL
"""


def index_clean(*, batch: int = BATCH) -> dict[str, int]:
    """Delete the rows of versions neither active nor being built, and the matches set aside
    by rebuilds no longer running; return how many rows of each kind."""
    start = time.perf_counter()
    deleted: Counter[str] = Counter()
    for version in versions_abandoned():
        _version_clean(version, batch, deleted)
    _aside_clean(batch, deleted)
    deleted = +deleted  # the kinds with rows deleted
    if deleted:
        logger.info(
            "index_clean: %s in %.1f s",
            ", ".join(f"{count} {name}" for name, count in sorted(deleted.items())),
            time.perf_counter() - start,
        )
    return dict(deleted)


def versions_abandoned() -> list[str]:
    """Return the versions with rows that no one serves or builds: those rebuilds were made
    to, and those of the passage keys (an older release's)."""
    row = settings_current()
    versions = set(RebuildJob.objects.values_list("version", flat=True).distinct())
    with pg_cursor() as cursor:
        cursor.execute(_VERSIONS.format(table="dedup_passagekey"))
        versions |= {version for (version,) in cursor.fetchall()}
    return sorted(versions - {row.active_version, row.index_version})


def _abandoned(version: str) -> bool:
    """Return whether a version is still abandoned, the settings share-locked until the
    transaction ends (call it first in one)."""
    row = index.settings_shared()
    return row is not None and version not in {row.active_version, row.index_version}


def _version_clean(version: str, batch: int, deleted: Counter) -> None:
    last = 0
    while True:  # fingerprints, each with its article's index rows
        with transaction.atomic(), pg_cursor() as cursor:
            if not _abandoned(version):
                return
            cursor.execute(
                """
                DELETE FROM dedup_fingerprint WHERE id IN (
                    SELECT id FROM dedup_fingerprint WHERE version = %s AND article_id > %s
                    ORDER BY article_id LIMIT %s)
                RETURNING article_id
                """,
                [version, last, batch],
            )
            ids = [article_id for (article_id,) in cursor.fetchall()]
            deleted["fingerprints"] += len(ids)
            if ids:
                _index_rows_delete(
                    SegmentRow.objects.filter(version=version, article_id__in=ids), deleted
                )
                _index_rows_delete(
                    PassageKey.objects.filter(version=version, article_id__in=ids), deleted
                )
        if not ids:
            break
        last = max(ids)
    with transaction.atomic():  # rows with no fingerprint (older releases'), matches served
        if _abandoned(version):  # under it (an upgrade's rebuild processes new articles so)
            _index_rows_delete(SegmentRow.objects.filter(version=version), deleted)
            _index_rows_delete(PassageKey.objects.filter(version=version), deleted)
            deleted["matches"] += Match.objects.filter(version=version).delete()[0]


def _index_rows_delete(rows, deleted: Counter) -> None:
    """Delete index rows (one statement: nothing depends on them)."""
    name = {SegmentRow: "segment_rows", PassageKey: "passage_keys"}[rows.model]
    deleted[name] += rows.delete()[0]


def _aside_clean(batch: int, deleted: Counter) -> None:
    """Delete the matches set aside by rebuilds that ended (applied, or abandoned)."""
    while True:
        with pg_cursor() as cursor:
            cursor.execute(
                """
                DELETE FROM dedup_rebuildmatch WHERE id IN (
                    SELECT r.id FROM dedup_rebuildmatch r
                    JOIN dedup_rebuildjob j ON j.id = r.job_id
                    WHERE j.state <> %s LIMIT %s)
                """,
                [RebuildState.RUNNING, batch],
            )
            deleted["matches_aside"] += cursor.rowcount
            if cursor.rowcount < batch:
                return
