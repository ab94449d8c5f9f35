"""Starting rebuilds: when the settings change what is stored (services.settings_update), when
this release stores under a new index version (an upgrade: a new ALGORITHM, plan naming or
features format), and on demand (manage.py rebuild). services.index_rebuild does the work.

While this code's index version is not the active one, a rebuild to it must be running:
settings_update keeps it so, and index_upgrade makes it so again after an upgrade. A rebuild
is started with the settings row locked (select_for_update), so that of several workers
starting at the same moment one starts it and the others find it running.
"""

from __future__ import annotations

import logging

from django.db import transaction

from dedup import index
from dedup.models import Article, ArticleStatus, RebuildJob, Settings

logger = logging.getLogger(__name__)


def settings_locked() -> Settings:
    """Return the settings row, locked until the transaction ends (call it inside one)."""
    index.settings_current()  # creates the row and sets active_version on first use
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
    RebuildJob.objects.filter(state="running").exclude(version=version).update(
        state="failed", message=superseded(version)
    )
    if version == row.active_version and not again:
        return None, False
    job = RebuildJob.objects.filter(state="running", version=version).first()
    if job is not None:
        return job, False
    total = Article.objects.filter(status=ArticleStatus.DONE).count()
    job = RebuildJob.objects.create(version=version, total=total)
    if send:
        from dedup import tasks

        transaction.on_commit(lambda: tasks.index_rebuild.delay(job_id=job.pk))
    return job, True


def index_upgrade() -> RebuildJob | None:
    """Start a rebuild if this code stores under an index version that is not the active one
    and none to it is running (the code was upgraded); return it if started here.

    Workers call it as they start and beat every few minutes: any number may call it at once,
    one starts the rebuild. Until it ends, answers come from the active version."""
    row = index.settings_current()
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
