"""Rebuilds, one state machine: a rebuild is started (rebuild_start) when the settings change
what is stored (services.settings_update), when this release stores under a new index version
(index_upgrade), to settle the verdicts (services.settling) and on demand (manage.py rebuild).
index_rebuild indexes every article under its version, then matches each against the whole
index (so a pair is judged as if the collection came at once), then switches to it. A job is
running, then done or failed (superseded, or stopped). While this code's index version is not
the active one, a rebuild to it must be running: settings_update keeps it so, index_upgrade
makes it so again after an upgrade. A rebuild is started with the settings row locked.

A rebuild runs once at a time: it holds a PostgreSQL session advisory lock on its job while it
runs, so a second delivery (the broker's visibility timeout ran out) finds it held and ends at
once; a dead worker's lock goes with its connection. It moves `position` (the last article
rebuilt) and `heartbeat_at` at every chunk: delivered again, it goes on from there, and beat
resumes a running job whose heartbeat is stale (rebuilds_tend). Its matches wait aside
(RebuildMatch) until it switches, so the queue keeps serving the active version's; new articles
are processed under the active version meanwhile and the rebuild's final sweep indexes them.
A stopped rebuild's rows, and the old version's after a switch, are deleted in batches by
index_clean (dedup/services/cleanup.py), sent once the change commits.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings as django_settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from dedup import index
from dedup.db import change_lock, pg_cursor
from dedup.models import (
    Article,
    ArticleStatus,
    Match,
    MatchKind,
    RebuildJob,
    RebuildMatch,
    RebuildState,
    Settings,
)
from dedup.selectors.settings import settings_current
from dedup.services.matching import matches_find

logger = logging.getLogger(__name__)


def settings_locked() -> Settings:
    """Return the settings row, locked until the transaction ends (call it inside one)."""
    settings_current()  # creates the row and sets active_version on first use
    return Settings.objects.select_for_update().get(pk=1)


def rebuild_start(
    row: Settings, *, again: bool = False, send: bool = True
) -> tuple[RebuildJob | None, bool]:
    """Return the running rebuild to the row's index version, or start one, and whether it
    started now; stop rebuilds to other versions. None when the version is the active one
    already, unless `again` (every article matched again under it).

    Call it with the row locked (settings_locked). A new rebuild is sent to the workers once
    the transaction commits, unless `send` is false (the caller runs it)."""
    version = row.index_version
    stopped = (
        RebuildJob.objects.filter(state=RebuildState.RUNNING)
        .exclude(version=version)
        .update(state=RebuildState.FAILED, message=superseded(version), finished_at=timezone.now())
    )
    if stopped:
        clean_after_commit()
    if version == row.active_version and not again:
        return None, False
    job = RebuildJob.objects.filter(state=RebuildState.RUNNING, version=version).first()
    if job is not None:
        return job, False
    total = Article.objects.filter(status=ArticleStatus.DONE).count()
    job = RebuildJob.objects.create(version=version, total=total, heartbeat_at=timezone.now())
    if send:
        from dedup import tasks  # tasks import the services

        transaction.on_commit(lambda: tasks.index_rebuild.delay(job_id=job.pk))
    return job, True


def index_upgrade() -> RebuildJob | None:
    """Start a rebuild if this code stores under an index version that is not the active one
    and none to it is running (the code was upgraded); return it if started here.

    Workers call it as they start and beat every few minutes: any number may call it at once,
    one starts the rebuild. Until it ends, answers come from the active version."""
    row = settings_current()
    if row.index_version == row.active_version:
        return None  # the usual case, told without taking the lock
    with transaction.atomic():
        job, started = rebuild_start(settings_locked())
    if not started:
        return None
    logger.info(
        "this release indexes under %s, the index is under %s: rebuild %s started",
        job.version,
        row.active_version,
        job.pk,
    )
    return job


def index_rebuild_start(*, send: bool = True) -> tuple[RebuildJob, bool]:
    """Return the running rebuild to this code's index version, or start one, and whether it
    started now: to the new version after an upgrade, else to the active one again."""
    with transaction.atomic():
        job, started = rebuild_start(settings_locked(), again=True, send=send)
    return job, started


def superseded(version: str) -> str:
    """Return why a rebuild to another version was stopped."""
    return f"superseded: the index version is now {version}"


def clean_after_commit(countdown: int = 0) -> None:
    """Send index_clean once the transaction commits (the rows of stopped rebuilds and of
    versions no longer served go). Not sent (the broker down): beat's index_upgrade cleans."""
    from dedup import tasks  # tasks import the services

    transaction.on_commit(
        lambda: tasks.index_clean.apply_async(countdown=countdown or None), robust=True
    )


def rebuilds_tend(*, now=None) -> list[int]:
    """Send again the running rebuilds whose heartbeat is stale (DEDUP_STUCK_AFTER_SECONDS):
    their worker died, or their message was lost. A delivery that finds the job's lock held
    ends at once, so sending one that still runs costs nothing. Return the jobs sent."""
    from dedup import tasks

    stale = (now or timezone.now()) - timedelta(seconds=django_settings.DEDUP_STUCK_AFTER_SECONDS)
    beating = Q(heartbeat_at__gte=stale)
    jobs = list(
        RebuildJob.objects.filter(state=RebuildState.RUNNING)
        .exclude(beating)
        .order_by("id")
        .values_list("id", flat=True)
    )
    for job_id in jobs:
        logger.info("rebuild %s: no heartbeat since before %s, sent again", job_id, stale)
        tasks.index_rebuild.delay(job_id=job_id)
    return jobs


# pg_try_advisory_lock's first key for a rebuild job ("dedu"); the second is the job's id.
_REBUILD_LOCK = 0x64656475


def _lock_try(job_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_REBUILD_LOCK, job_id])
        return cursor.fetchone()[0]


def _lock_release(job_id: int) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_REBUILD_LOCK, job_id])
    except DatabaseError:  # the connection is gone, and the lock with it; make sure of it
        connection.close()


def index_rebuild(*, job_id: int, slice_seconds: float | None = None) -> RebuildJob:
    """Fingerprint, index and match every article under the new version, then switch to it;
    return the job. Runs once at a time: a second delivery finds the job's lock held and
    returns at once.

    With `slice_seconds` (the task's), it stops after the chunk that ends the slice and sends
    itself again, its lock released: the chunks of new articles queued meanwhile go first,
    and no delivery outlasts the broker's visibility timeout."""
    if not _lock_try(job_id):
        logger.info("rebuild %s runs elsewhere: this delivery ends", job_id)
        return RebuildJob.objects.get(id=job_id)
    try:
        job = _rebuild_run(job_id, slice_seconds)
    finally:
        _lock_release(job_id)
    if job is None:  # the slice is over: the rest in a delivery of its own
        from dedup import tasks

        tasks.index_rebuild.delay(job_id=job_id)
        job = RebuildJob.objects.get(id=job_id)
    return job


def _rebuild_run(job_id: int, slice_seconds: float | None) -> RebuildJob | None:
    """Run the rebuild from its position; return the job, or None when the slice ran out."""
    job = RebuildJob.objects.get(id=job_id)
    settings = settings_current()
    if job.state != RebuildState.RUNNING:
        return job
    if settings.index_version != job.version:
        _rebuild_stop(job_id, superseded(settings.index_version))
        job.refresh_from_db()
        return job
    index.caches_clear()  # features cached under this version before a cleanup are gone
    logger.info("rebuild %s running from article %s (%s done)", job_id, job.position, job.done)
    work = _Work(job_id, settings, index.detector_for(settings), job.version, settings.plan())
    end = None if slice_seconds is None else time.monotonic() + slice_seconds
    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    done = Article.objects.filter(status=ArticleStatus.DONE)
    # Every article is indexed first, then matched against the whole index: each pair is judged
    # with what the whole collection holds, whatever the order articles came in (a rebuild to
    # the active version, a settling, has nothing to index).
    settling = job.version == settings.active_version  # its articles are all indexed
    indexed = job.indexed or settling
    RebuildJob.objects.filter(id=job_id).update(
        total=Greatest(done.count() * (1 if settling else 2), F("done"))
    )
    last = job.position
    while True:  # every article, in id order, from where an earlier delivery stopped
        chunk = list(done.filter(id__gt=last).order_by("id").values_list("id", "body")[:size])
        if not chunk:
            if indexed:
                break
            indexed, last = True, 0  # the second pass: matching
            RebuildJob.objects.filter(id=job_id).update(indexed=True, position=0)
            continue
        if not _rebuild_chunk(chunk, work, match=indexed):
            return _rebuild_ended(job_id, job.version)
        last = chunk[-1][0]
        RebuildJob.objects.filter(id=job_id).update(
            done=F("done") + len(chunk), total=Greatest(F("total"), F("done") + len(chunk)),
            position=last, heartbeat_at=timezone.now(),
        )  # fmt: skip
        if end is not None and time.monotonic() >= end:
            return None
    while True:  # articles processed meanwhile under the active version, then the switch
        missing = list(
            done.exclude(fingerprints__version=job.version)
            .order_by("id")
            .values_list("id", "body")[:size]
        )
        if missing:
            if not _rebuild_chunk(missing, work):
                return _rebuild_ended(job_id, job.version)
            RebuildJob.objects.filter(id=job_id).update(heartbeat_at=timezone.now())
        elif rebuild_switch(job_id=job_id, version=job.version):
            break
    return RebuildJob.objects.get(id=job_id)


def _rebuild_ended(job_id: int, version: str) -> RebuildJob:
    """Return a job found stopped between chunks, marked failed if the settings moved on."""
    now = settings_current().index_version
    if now != version:
        _rebuild_stop(job_id, superseded(now))
    return RebuildJob.objects.get(id=job_id)


def _rebuild_stop(job_id: int, message: str) -> None:
    """Mark a running job failed (its rows are cleaned up once this commits)."""
    with transaction.atomic():
        stopped = RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).update(
            state=RebuildState.FAILED, message=message, finished_at=timezone.now()
        )
        if stopped:
            clean_after_commit()


@transaction.atomic
def rebuild_switch(*, job_id: int, version: str) -> bool:
    """Make a finished rebuild's version the active one and its matches the served ones,
    unless the settings moved on meanwhile or the job was stopped; return whether the rebuild
    is over. False when articles processed meanwhile still lack the version: the caller
    indexes them and tries again (under the settings lock, no article finishes meanwhile)."""
    row = Settings.objects.select_for_update().get(pk=1)
    moved_on = row.index_version != version  # the settings moved on in the meantime
    if moved_on and RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).update(
        state=RebuildState.FAILED, message=superseded(row.index_version), finished_at=timezone.now()
    ):
        clean_after_commit()
    if not RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).exists():
        return True
    done = Article.objects.filter(status=ArticleStatus.DONE)
    if done.exclude(fingerprints__version=version).exists():
        return False
    Settings.objects.filter(pk=1).update(active_version=version, active_config=row.config_fields())
    change_lock()  # new pairs take ids in commit order (the API's cursors)
    _matches_apply(job_id, version)
    _matches_unfound_delete(job_id, version)
    Match.objects.filter(kind=MatchKind.EXACT).update(version=version)
    Match.objects.exclude(version=version).delete()  # pairs the new version does not find
    RebuildJob.objects.filter(id=job_id).update(
        state=RebuildState.DONE, finished_at=timezone.now(), heartbeat_at=timezone.now()
    )
    # The old version's rows (after a grace: checks under way read them), this job's aside.
    clean_after_commit(django_settings.DEDUP_SWITCH_GRACE_SECONDS)
    return True


def _matches_apply(job_id: int, version: str) -> None:
    """Write the rebuild's matches over the served ones, in one statement (new pairs in pair
    order)."""
    with pg_cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO dedup_match (a_id, b_id, kind, distance, similarity, shared_passages,
                                     shared_chars, version, found_at)
            SELECT a_id, b_id, kind, distance, similarity, shared_passages, shared_chars, %s,
                   now()
            FROM dedup_rebuildmatch WHERE job_id = %s ORDER BY a_id, b_id
            ON CONFLICT (a_id, b_id) DO UPDATE SET
                kind = EXCLUDED.kind, distance = EXCLUDED.distance,
                similarity = EXCLUDED.similarity, shared_passages = EXCLUDED.shared_passages,
                shared_chars = EXCLUDED.shared_chars, version = EXCLUDED.version
            """,
            [version, job_id],
        )


def _matches_unfound_delete(job_id: int, version: str) -> None:
    """Delete the pairs under the rebuild's version that it did not find: a rebuild to the
    active version (a settling) takes back what was found while the collection was arriving.
    Exact copies stay (told by their text, not matched), and so do pairs found after the job
    started (by articles processed meanwhile, which it may not have seen)."""
    with pg_cursor() as cursor:
        cursor.execute(
            """
            DELETE FROM dedup_match m
            USING dedup_rebuildjob j
            WHERE j.id = %s AND m.version = %s AND m.kind <> %s AND m.found_at < j.started_at
                AND NOT EXISTS (
                    SELECT 1 FROM dedup_rebuildmatch r
                    WHERE r.job_id = j.id AND r.a_id = m.a_id AND r.b_id = m.b_id
                )
            """,
            [job_id, version, MatchKind.EXACT],
        )


class _Work:
    """What a rebuild's chunks are made with."""

    def __init__(self, job_id, settings, detector, version, plan) -> None:
        self.job_id, self.settings, self.detector = job_id, settings, detector
        self.version, self.plan = version, plan

    def running(self) -> bool:
        """Return whether the job still runs to this version; call it first in a transaction
        that writes for it (the settings row share-locked: a change waits for the write)."""
        row = index.settings_shared()
        return (
            row is not None
            and row.index_version == self.version
            and (RebuildJob.objects.filter(id=self.job_id, state=RebuildState.RUNNING).exists())
        )


def _rebuild_chunk(chunk: list[tuple[int, str]], work: _Work, match: bool = True) -> bool:
    """Index a chunk under the rebuild's version and (`match`) set its matches aside; return
    False (writing nothing) when the job was stopped or superseded."""
    ids = [article_id for article_id, _ in chunk]
    stored = index.features_load(article_ids=ids, version=work.version)
    new = []
    for article_id, body in chunk:
        if article_id not in stored:
            fingerprint, features = work.detector.fingerprint_and_features(body)
            new.append(index.Indexed(article_id, fingerprint, features))
            stored[article_id] = features
    with transaction.atomic():
        if not work.running():
            return False
        index.index_store(items=new, version=work.version, plan=work.plan)
    if not match:
        return True
    items = [index.Indexed(article_id, None, stored[article_id]) for article_id in ids]
    rows = []
    found = matches_find(items, work.settings, work.detector, work.version, work.plan)
    for result in found:
        if isinstance(result, Exception):
            raise result
        rows += result
    # Two articles of one chunk find each other twice: one row per pair, the last found.
    staged = {
        (row.a_id, row.b_id): RebuildMatch(
            job_id=work.job_id, a_id=row.a_id, b_id=row.b_id, kind=row.kind,
            distance=row.distance, similarity=row.similarity,
            shared_passages=row.shared_passages, shared_chars=row.shared_chars,
        )
        for row in rows
    }  # fmt: skip
    with transaction.atomic():
        if not work.running():
            return False
        RebuildMatch.objects.bulk_create(
            [staged[pair] for pair in sorted(staged)],
            update_conflicts=True,
            unique_fields=["job", "a", "b"],
            update_fields=["kind", "distance", "similarity", "shared_passages", "shared_chars"],
        )
    return True
