"""What the admins' overview shows: index health, workers, and match distances over time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import date, timedelta

from django.core.cache import cache
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from dedup import selectors
from dedup.services import heartbeats

WORKERS_CACHE_KEY = "webui:workers"
WORKERS_CACHE_SECONDS = 10
PING_TIMEOUT = 0.5
# The counts scan whole tables (hot buckets group a million index rows at 100,000 articles:
# about a second): served from a cache, re-computed in the background once this old.
FIGURES_CACHE_KEY = "webui:figures"
FIGURES_FRESH_SECONDS = 30
HISTORY_DAYS = 30
# One colour per distance, light (close copies) to dark; cycled when k_max is larger.
DISTANCE_COLOURS = ("#1b7f5f", "#4aa37c", "#93c47d", "#f1c232", "#e69138", "#cc4125", "#85200c")
CHART = {"width": 1100, "height": 230, "left": 44, "right": 10, "top": 10, "bottom": 28}


def workers_ping() -> Callable[[], dict]:
    """Start pinging the Celery workers; return a function that waits for the answer.

    The answer is cached for 10 s, and the wait never exceeds about 0.5 s: the ping runs in a
    thread, so a broker that does not answer (connection retries) cannot hold the page, and
    the page's own queries run meanwhile. A slow broker (the file broker of `./dev serve`
    answers in about a second) still has its answer cached for the next request; until then
    the last answer, or "checking", is shown."""
    cached = cache.get(WORKERS_CACHE_KEY)
    if cached is not None:
        return lambda: _or_seen(cached)
    found: dict = {}
    started = time.monotonic()

    def ping() -> None:
        from dedup.celery import app

        try:
            replies = app.control.inspect(timeout=PING_TIMEOUT).ping() or {}
            status = {"ok": bool(replies), "names": sorted(replies), "error": ""}
        except Exception as exc:  # a broker that is down must not break the page
            status = {"ok": False, "names": [], "error": str(exc) or exc.__class__.__name__}
        found["status"] = status
        cache.set(WORKERS_CACHE_KEY, status, WORKERS_CACHE_SECONDS)
        cache.set(WORKERS_CACHE_KEY + ":last", status, 600)

    thread = threading.Thread(target=ping, daemon=True)
    thread.start()

    def wait() -> dict:
        thread.join(max(0.0, PING_TIMEOUT + 0.1 - (time.monotonic() - started)))
        return _or_seen(found.get("status") or cache.get(WORKERS_CACHE_KEY + ":last"))

    return wait


def _or_seen(status: dict | None) -> dict:
    """Return the ping's answer, or the workers seen by their heartbeats when no worker
    answered in time (a worker busy under load answers late, and the file broker of
    `./dev serve` always later than the ping waits), cached answer or fresh."""
    if status is None or not status["ok"]:
        seen = _workers_seen()
        if seen:
            return {"ok": True, "names": seen, "error": ""}
    return status or {"ok": None, "names": [], "error": ""}  # None: no answer yet


def _workers_seen() -> list[str]:
    try:
        return heartbeats.workers_seen()
    except Exception:  # the cache (Redis) is down: the ping's answer says so
        return []


def workers_status() -> dict:
    """Return the Celery workers answering a ping (cached 10 s, at most about 0.5 s)."""
    return workers_ping()()


def figures() -> dict:
    """Return the index's health and the distance history, at most 30 s old once computed.

    Only the first request computes them while it waits; later ones get the cached figures
    and, when those are older than 30 s, have a thread compute fresh ones for the next."""
    entry = cache.get(FIGURES_CACHE_KEY)
    if entry is None:
        entry = _figures_compute()
    elif time.time() - entry["at"] > FIGURES_FRESH_SECONDS and cache.add(
        FIGURES_CACHE_KEY + ":busy", 1, 60
    ):
        threading.Thread(target=_figures_refresh, daemon=True).start()
    return entry


def _figures_compute() -> dict:
    settings = selectors.settings_current()
    entry = {
        "health": selectors.index_health(),
        "history": distance_history(k_max=settings.k_max),
        "at": time.time(),
        "computed_at": timezone.now(),
    }
    cache.set(FIGURES_CACHE_KEY, entry, 24 * 3600)
    return entry


def _figures_refresh() -> None:
    try:
        _figures_compute()
    finally:
        cache.delete(FIGURES_CACHE_KEY + ":busy")
        connection.close()  # this thread's own database connection


def distance_history(*, k_max: int, days: int = HISTORY_DAYS, today: date | None = None) -> dict:
    """Return matches found per day per distance (0..k_max) over the last days, as SVG bars."""
    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    start = timezone.make_aware(timezone.datetime.combine(first, timezone.datetime.min.time()))
    counts = selectors.match_distances_by_day(since=start, k_max=k_max)
    dates = [first + timedelta(days=i) for i in range(days)]
    totals = [sum(counts.get((d, k), 0) for k in range(k_max + 1)) for d in dates]
    top = max(totals, default=0) or 1
    c = CHART
    plot_w = c["width"] - c["left"] - c["right"]
    plot_h = c["height"] - c["top"] - c["bottom"]
    step = plot_w / days
    bars = []
    for i, day in enumerate(dates):
        y = c["top"] + plot_h
        for k in range(k_max + 1):
            n = counts.get((day, k), 0)
            if not n:
                continue
            h = plot_h * n / top
            y -= h
            bars.append({
                "x": round(c["left"] + i * step + 1, 1), "y": round(y, 1),
                "w": round(max(step - 2, 1), 1), "h": round(h, 1),
                "colour": DISTANCE_COLOURS[k % len(DISTANCE_COLOURS)],
                "day": day, "distance": k, "n": n,
            })  # fmt: skip
    labels = [
        {"x": round(c["left"] + i * step + step / 2, 1), "day": day}
        for i, day in enumerate(dates)
        if i % 5 == 0 or i == days - 1
    ]
    return {
        "bars": bars,
        "labels": labels,
        "legend": [
            {"distance": k, "colour": DISTANCE_COLOURS[k % len(DISTANCE_COLOURS)]}
            for k in range(k_max + 1)
        ],
        "top": top,
        "total": sum(totals),
        "chart": {**c, "axis_y": c["top"] + plot_h, "label_y": c["height"] - 8,
                  "right_x": c["width"] - c["right"], "top_y": c["top"] + 4},
    }  # fmt: skip


def overview_context() -> dict:
    """Return everything the overview page shows."""
    workers = workers_ping()  # answers while the figures are read
    entry = figures()
    health = entry["health"]
    return {
        "health": health,
        "articles_total": sum(health["articles"].values()),
        "matches_total": sum(health["matches"].values()),
        "history": entry["history"],
        "computed_at": entry["computed_at"],
        "fresh_seconds": FIGURES_FRESH_SECONDS,
        "workers": workers(),
        "settings_url": reverse("admin:dedup_settings_changelist"),
    }
