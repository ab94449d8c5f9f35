"""Settling: the verdicts the whole collection gives, whatever order its articles came in.

An article is matched as it arrives, against what is stored then: how many articles hold each
of its passages (boilerplate, popular stories), which copies of a story come before it, a
bucket's earliest rows. Processed before others that share its text (chunks taken in another
order, a chunk sent again after a fault, an upload in parts), it is judged on less than the
collection will hold, and the pairs found depend on the order. A settling is a rebuild to the
active version: every article matched again against the whole index, its pairs written over
the live ones and those it no longer finds taken back (services.rebuilds); the answer is then
what `python -m dedup duplicates` gives on the same texts.

Beat asks every DEDUP_SETTLE_CHECK_SECONDS: a settling starts when articles were processed
since the last rebuild started and either none has been processed for DEDUP_SETTLE_QUIET_SECONDS
with none waiting (an upload or a burst is over), or the last started more than
DEDUP_SETTLE_EVERY_SECONDS ago (articles arriving all along). docs/operator.md says how long
the live queue may differ.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from dedup.models import Article, ArticleStatus, RebuildJob, RebuildState
from dedup.services.rebuilds import rebuild_start, settings_locked

logger = logging.getLogger(__name__)

SETTLING = "settling: every article matched again against the whole collection"


def settle_if_due(*, now: datetime | None = None) -> RebuildJob | None:
    """Start a settling if one is due (see the module); return it if started here."""
    now = now or timezone.now()
    if RebuildJob.objects.filter(state=RebuildState.RUNNING).exists():
        return None  # a rebuild running ends settled itself
    newest = Article.objects.aggregate(at=Max("processed_at"))["at"]
    last = RebuildJob.objects.filter(state=RebuildState.DONE).aggregate(at=Max("started_at"))["at"]
    if newest is None or (last is not None and newest < last):
        return None  # nothing processed since the last rebuild started
    quiet = now - newest >= timedelta(seconds=django_settings.DEDUP_SETTLE_QUIET_SECONDS)
    if (
        quiet
        and Article.objects.filter(
            status__in=(ArticleStatus.PENDING, ArticleStatus.PROCESSING)
        ).exists()
    ):
        quiet = False
    since = last or Article.objects.aggregate(at=Min("processed_at"))["at"]
    overdue = now - since >= timedelta(seconds=django_settings.DEDUP_SETTLE_EVERY_SECONDS)
    if not (quiet or overdue):
        return None
    with transaction.atomic():
        job, started = rebuild_start(settings_locked(), again=True)
        if started:
            RebuildJob.objects.filter(id=job.pk).update(message=SETTLING)
    if started:
        logger.info("settling %s started: %s", job.pk, "quiet" if quiet else "overdue")
        return job
    return None
