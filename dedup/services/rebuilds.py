"""Rebuilds, one state machine: a rebuild is started (rebuild_start) when the settings change
what is stored (services.settings_update), when this release stores under a new index version
(index_upgrade: a new ALGORITHM, plan naming or features format), and on demand (manage.py
rebuild); index_rebuild fingerprints, indexes and matches every article under the new version,
then switches to it. A job is running, then done or failed (superseded, or stopped).

While this code's index version is not the active one, a rebuild to it must be running:
settings_update keeps it so, and index_upgrade makes it so again after an upgrade. A rebuild
is started with the settings row locked (select_for_update), so that of several workers
starting at the same moment one starts it and the others find it running.
"""

from __future__ import annotations

import logging

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from dedup import index
from dedup.db import change_lock
from dedup.models import (
    Article,
    ArticleStatus,
    Fingerprint,
    Match,
    MatchKind,
    PassageKey,
    RebuildJob,
    RebuildState,
    SegmentRow,
    Settings,
)
from dedup.selectors.settings import settings_current
from dedup.services.processing import matches_find

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
    RebuildJob.objects.filter(state=RebuildState.RUNNING).exclude(version=version).update(
        state=RebuildState.FAILED, message=superseded(version)
    )
    if version == row.active_version and not again:
        return None, False
    job = RebuildJob.objects.filter(state=RebuildState.RUNNING, version=version).first()
    if job is not None:
        return job, False
    total = Article.objects.filter(status=ArticleStatus.DONE).count()
    job = RebuildJob.objects.create(version=version, total=total)
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


def index_rebuild(*, job_id: int) -> RebuildJob:
    """Fingerprint, index and match every article under the new version, then switch to it."""
    job = RebuildJob.objects.get(id=job_id)
    settings = settings_current()
    if job.state != RebuildState.RUNNING:
        return job
    if settings.index_version != job.version:
        RebuildJob.objects.filter(id=job_id).update(
            state=RebuildState.FAILED, message=superseded(settings.index_version)
        )
        job.refresh_from_db()
        return job
    detector = index.detector_for(settings)
    version, plan = job.version, settings.plan()
    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    RebuildJob.objects.filter(id=job_id).update(
        done=0, total=Article.objects.filter(status=ArticleStatus.DONE).count()
    )
    done = Article.objects.filter(status=ArticleStatus.DONE)
    last = 0
    while True:  # every article, in order: a resumed rebuild starts over, harmlessly
        if not RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).exists():
            job.refresh_from_db()
            return job
        chunk = list(done.filter(id__gt=last).order_by("id").values_list("id", "body")[:size])
        if not chunk:
            break
        _rebuild_chunk(chunk, settings, detector, version, plan)
        last = chunk[-1][0]
        RebuildJob.objects.filter(id=job_id).update(done=F("done") + len(chunk))
    while True:  # articles a worker finished under the old version meanwhile
        missing = list(
            done.exclude(fingerprints__version=version)
            .order_by("id")
            .values_list("id", "body")[:size]
        )
        if not missing:
            break
        _rebuild_chunk(missing, settings, detector, version, plan)
    rebuild_switch(job_id=job_id, version=version)
    job.refresh_from_db()
    return job


@transaction.atomic
def rebuild_switch(*, job_id: int, version: str) -> None:
    """Make a finished rebuild's version the active one and drop the rows of the others,
    unless the settings moved on meanwhile or the job was stopped."""
    row = Settings.objects.select_for_update().get(pk=1)
    if row.index_version != version:  # the settings moved on in the meantime
        RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).update(
            state=RebuildState.FAILED, message=superseded(row.index_version)
        )
    if not RebuildJob.objects.filter(id=job_id, state=RebuildState.RUNNING).exists():
        return
    Settings.objects.filter(pk=1).update(active_version=version, active_config=row.config_fields())
    Match.objects.filter(kind=MatchKind.EXACT).update(version=version)
    Match.objects.exclude(version=version).delete()  # pairs the new version does not find
    SegmentRow.objects.exclude(version=version).delete()
    PassageKey.objects.exclude(version=version).delete()
    Fingerprint.objects.exclude(version=version).delete()
    RebuildJob.objects.filter(id=job_id).update(state=RebuildState.DONE, finished_at=timezone.now())


def _rebuild_chunk(chunk, settings, detector, version, plan) -> None:
    ids = [article_id for article_id, _ in chunk]
    stored = index.features_load(article_ids=ids, version=version)
    new = []
    for article_id, body in chunk:
        if article_id not in stored:
            fingerprint, features = detector.fingerprint_and_features(body)
            new.append(index.Indexed(article_id, fingerprint, features))
            stored[article_id] = features
    with transaction.atomic():
        index.index_store(items=new, version=version, plan=plan)
    items = [index.Indexed(article_id, None, stored[article_id]) for article_id in ids]
    rows = []
    for result in matches_find(items, settings, detector, version, plan):
        if isinstance(result, Exception):
            raise result
        rows += result
    # A rebuild: the new verdict replaces the old one. Two articles of one chunk find each
    # other twice: one row per pair.
    rows = list({(row.a_id, row.b_id): row for row in rows}.values())
    with transaction.atomic():
        change_lock()  # new pairs take ids in commit order (the API's cursors)
        Match.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["a", "b"],
            update_fields=[
                "kind",
                "distance",
                "similarity",
                "shared_passages",
                "shared_chars",
                "version",
            ],
        )
