"""What the admins' overview shows: index health, workers, and match distances over time."""

from __future__ import annotations

import threading
from datetime import date, timedelta

from django.core.cache import cache
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from dedup import selectors
from dedup.index import settings_current
from dedup.models import Match

WORKERS_CACHE_KEY = "webui:workers"
WORKERS_CACHE_SECONDS = 10
PING_TIMEOUT = 0.5
HISTORY_DAYS = 30
# One colour per distance, light (close copies) to dark; cycled when k_max is larger.
DISTANCE_COLOURS = ("#1b7f5f", "#4aa37c", "#93c47d", "#f1c232", "#e69138", "#cc4125", "#85200c")
CHART = {"width": 1100, "height": 230, "left": 44, "right": 10, "top": 10, "bottom": 28}


def workers_status() -> dict:
    """Return the Celery workers answering a ping, cached; never wait more than about 0.5 s."""
    cached = cache.get(WORKERS_CACHE_KEY)
    if cached is not None:
        return cached
    found: dict = {}

    def ping() -> None:
        from dedup.celery import app

        try:
            found["replies"] = app.control.inspect(timeout=PING_TIMEOUT).ping() or {}
        except Exception as exc:  # a broker that is down must not break the page
            found["error"] = str(exc) or exc.__class__.__name__

    # A thread, so that a broker that does not answer (connection retries) cannot hold the page.
    thread = threading.Thread(target=ping, daemon=True)
    thread.start()
    thread.join(PING_TIMEOUT + 0.2)
    if "replies" in found:
        status = {"ok": bool(found["replies"]), "names": sorted(found["replies"]), "error": ""}
    else:
        status = {"ok": False, "names": [], "error": found.get("error", "no answer in time")}
    cache.set(WORKERS_CACHE_KEY, status, WORKERS_CACHE_SECONDS)
    return status


def distance_history(*, k_max: int, days: int = HISTORY_DAYS, today: date | None = None) -> dict:
    """Return matches found per day per distance (0..k_max) over the last days, as SVG bars."""
    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    start = timezone.make_aware(timezone.datetime.combine(first, timezone.datetime.min.time()))
    rows = (
        Match.objects.filter(found_at__gte=start, distance__isnull=False, distance__lte=k_max)
        .annotate(day=TruncDate("found_at", tzinfo=timezone.get_current_timezone()))
        .values_list("day", "distance")
        .annotate(n=Count("id"))
    )
    counts = {(day, distance): n for day, distance, n in rows}
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
    settings = settings_current()
    health = selectors.index_health()
    return {
        "health": health,
        "articles_total": sum(health["articles"].values()),
        "matches_total": sum(health["matches"].values()),
        "workers": workers_status(),
        "history": distance_history(k_max=settings.k_max),
        "settings": settings,
        "settings_url": reverse("admin:dedup_settings_changelist"),
    }
