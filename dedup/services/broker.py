"""What the broker holds: whether a task waits in the articles' queue."""

from __future__ import annotations

import logging

logger = logging.getLogger("dedup.services")


def broker_idle() -> bool:
    """Tell whether the broker holds no task waiting in the default queue (False when it
    cannot tell): then an article or upload still waiting has no task coming (it was lost
    with an emptied broker, or held by a worker that died), and beat's sweeps send it again
    without waiting for a backlog to clear."""
    from dedup.celery import app

    try:
        with app.connection_for_read() as broker:
            queue = app.conf.task_default_queue
            return broker.default_channel.queue_declare(queue=queue).message_count == 0
    except Exception:  # the broker away: the sweep sends nothing anyway
        logger.warning("the broker's queue could not be measured", exc_info=True)
        return False
