"""Workers say they are alive: each worker's main process records its name every
HEARTBEAT_SECONDS in the shared cache (Redis), and the overview and /readyz count a worker
seen within SEEN_SECONDS as running even when it is too busy to answer a ping in time (a
ping waits half a second; under load a worker's reply can take longer). Without Redis (the
file broker of `./dev serve`, whose pings answer later than that) the cache is in files under
var/, which the server and the worker share."""

from __future__ import annotations

import logging
import threading
import time

from django.core.cache import cache

HEARTBEAT_SECONDS = 10
SEEN_SECONDS = 3 * HEARTBEAT_SECONDS
CACHE_KEY = "workers:heartbeats"

logger = logging.getLogger("dedup.services")


def heartbeat_record(name: str, *, now: float | None = None) -> None:
    """Record that the worker `name` is alive now (and forget workers long gone)."""
    now = time.time() if now is None else now
    seen = cache.get(CACHE_KEY) or {}
    seen = {other: at for other, at in seen.items() if now - at < 10 * SEEN_SECONDS}
    seen[name] = now
    cache.set(CACHE_KEY, seen, 10 * SEEN_SECONDS)


def workers_seen(*, now: float | None = None) -> list[str]:
    """Return the names of the workers that recorded a heartbeat in the last SEEN_SECONDS."""
    now = time.time() if now is None else now
    seen = cache.get(CACHE_KEY) or {}
    return sorted(name for name, at in seen.items() if now - at < SEEN_SECONDS)


def heartbeats_start(name: str) -> threading.Thread:
    """Record the worker's heartbeat now and every HEARTBEAT_SECONDS, in a daemon thread."""

    def beat() -> None:
        while True:
            try:
                heartbeat_record(name)
            except Exception:  # Redis away for a moment: the next beat tries again
                logger.warning("worker heartbeat not recorded", exc_info=True)
            time.sleep(HEARTBEAT_SECONDS)

    thread = threading.Thread(target=beat, name="dedup-heartbeat", daemon=True)
    thread.start()
    return thread
