"""Celery tasks: thin wrappers that load ids and call one service each.

Tasks are acknowledged after they run (a task lost with its worker is delivered again) and
retried with backoff on transient database errors; the services are idempotent, so running a
task twice changes nothing twice.

A worker starting checks whether this release stores under a new index version, and starts
the rebuild it needs (services.index_upgrade; beat runs the same check every few minutes).
"""

import socket

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from dedup import services
from dedup.services import heartbeats, webhooks

RETRY = {
    "bind": True,
    "acks_late": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    # The database or broker away: tried again within seconds of its return (at most 30 s
    # apart, for about ten minutes); a claim that lapses meanwhile is resent by beat's sweep.
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "max_retries": 25,
}


def _again(task) -> bool:
    """Return whether this run repeats an earlier one (a retry, or a message redelivered)."""
    delivery = task.request.delivery_info or {}
    return bool(task.request.retries or delivery.get("redelivered"))


@shared_task(name="dedup.tasks.upload_process", **RETRY)
def upload_process(self, upload_id: int) -> None:
    """Read an uploaded file into articles; an error no retry mends fails the upload."""
    try:
        services.upload_process(upload_id=upload_id)
    except (OperationalError, InterfaceError):
        raise
    except Exception as error:
        services.upload_abandon(upload_id=upload_id, error=error)
        raise


@shared_task(name="dedup.tasks.articles_process", **RETRY)
def articles_process(self, article_ids: list[int], stale_after: int | None = None) -> None:
    """Fingerprint, index and match a chunk of articles."""
    # A repeat may take back the articles its own earlier run claimed and did not finish.
    stale_after = 0 if _again(self) else stale_after
    services.articles_process(article_ids=article_ids, stale_after=stale_after)


@shared_task(name="dedup.tasks.articles_requeue_stuck", **RETRY)
def articles_requeue_stuck(self, older_than_seconds: int | None = None) -> int:
    """Send again the articles waiting or processing for too long."""
    return services.articles_requeue_stuck(older_than_seconds=older_than_seconds)


@shared_task(name="dedup.tasks.uploads_requeue_stuck", **RETRY)
def uploads_requeue_stuck(self) -> int:
    """Send again the uploads received but not read (the broker was down when they came)."""
    return services.uploads_requeue_stuck()


@shared_task(name="dedup.tasks.articles_prune", **RETRY)
def articles_prune(self) -> dict[str, int]:
    """Move the segment index's day partitions with the retention window (the coming days'
    made, those before it dropped) and delete the passage keys outside it."""
    return services.articles_prune()


@shared_task(name="dedup.tasks.index_rebuild", **RETRY)
def index_rebuild(self, job_id: int) -> None:
    """Re-fingerprint and re-index every article under the new settings, then switch. Runs
    once at a time (a lock on the job, not the visibility timeout): a second delivery ends at
    once, and a delivery after its worker died goes on where it stopped. A delivery works for
    DEDUP_REBUILD_SLICE_SECONDS, then sends the rest behind the articles queued meanwhile."""
    services.index_rebuild(job_id=job_id, slice_seconds=settings.DEDUP_REBUILD_SLICE_SECONDS)


@shared_task(name="dedup.tasks.matches_settle", **RETRY)
def matches_settle(self) -> None:
    """Start a settling (every article matched again against the whole collection) if one
    is due: a burst of articles is over, or the last was long ago."""
    services.settle_if_due()


@shared_task(name="dedup.tasks.index_clean", **RETRY)
def index_clean(self) -> None:
    """Delete the rows of stopped rebuilds and of versions no longer in use, in batches."""
    services.index_clean()


@shared_task(name="dedup.tasks.index_upgrade", **RETRY)
def index_upgrade(self) -> None:
    """Start the rebuild to this release's index version, if it is needed and not running;
    send again a running rebuild whose worker stopped beating; clean what is left over."""
    services.index_upgrade()
    services.rebuilds_tend()
    services.index_clean()


@shared_task(name="dedup.tasks.webhooks_dispatch", **RETRY)
def webhooks_dispatch(self) -> int:
    """Turn new matches and decisions into webhook deliveries."""
    return webhooks.webhooks_dispatch()


@shared_task(name="dedup.tasks.webhook_deliver", **{**RETRY, "max_retries": 50})
def webhook_deliver(self, delivery_id: int) -> None:
    """POST one webhook delivery; try again with backoff while the receiver fails, up to
    DEDUP_WEBHOOK_ATTEMPTS tries in all, then record it failed."""
    tries = self.request.retries + 1
    last_try = tries >= settings.DEDUP_WEBHOOK_ATTEMPTS
    if not webhooks.webhook_deliver(delivery_id=delivery_id, last_try=last_try):
        raise self.retry(countdown=webhooks.backoff_seconds(tries))


@worker_ready.connect
def heartbeats_on_start(sender=None, **kwargs) -> None:
    """Have the worker's main process say it is alive every few seconds (/readyz, overview)."""
    heartbeats.heartbeats_start(getattr(sender, "hostname", None) or socket.gethostname())


@worker_ready.connect
def index_upgrade_on_start(sender=None, **kwargs) -> None:
    """Check, as the worker starts, whether an upgrade needs a rebuild (and start it)."""
    # Here in the main process, at once: a message would wait behind the queue's backlog.
    # Celery logs what this raises; beat's index_upgrade checks again later.
    try:
        services.index_upgrade()
        services.articles_prune()  # today's partitions of the segment index, if not made yet
    finally:
        connection.close()  # the pool's processes have their own; this one needs it no more
