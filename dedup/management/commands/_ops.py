"""What the operations commands share: is a worker there, progress bars, waiting on a row."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from django.conf import settings
from tqdm import tqdm

POLL_SECONDS = 0.5


def worker_running(timeout: float = 1.0) -> bool:
    """Return whether a Celery worker answers a ping on the configured broker."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    from dedup.celery import app

    try:
        return bool(app.control.ping(timeout=timeout))
    except Exception:  # a broker that cannot be reached has no worker either
        return False


def progress(total: int | None, desc: str, stream: TextIO | None = None, unit: str = "it") -> tqdm:
    """Return a progress bar on standard error, shown only when it is a terminal."""
    # Django's OutputWrapper ends every write with a newline: give tqdm the stream under it.
    stream = getattr(stream, "_out", stream) or sys.stderr
    return tqdm(
        total=total, desc=desc, unit=unit, file=stream, disable=not stream.isatty(), leave=False
    )


def wait_until(
    done: Callable[[], tuple[bool, int, int | None]], bar: tqdm, timeout: float | None = None
) -> bool:
    """Poll `done()` -> (finished, count, total) into the bar until finished; False on timeout."""
    start = time.monotonic()
    while True:
        finished, count, total = done()
        if total is not None and bar.total != total:
            bar.total = total
        bar.update(count - bar.n)
        if finished:
            return True
        if timeout is not None and time.monotonic() - start > timeout:
            return False
        time.sleep(POLL_SECONDS)
