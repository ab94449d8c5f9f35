"""Matching a chunk of indexed articles: their candidates looked up and verified together
(matches_find), an error in a shared step confined to the article that raised it; and the
clock of a task's parts, for its log line."""

from __future__ import annotations

import logging
import time

from django.db import DatabaseError

from dedup import index
from dedup.models import Match

logger = logging.getLogger("dedup.services")


class Clock:
    """Seconds spent in the named parts of a task, for its log line (bench/pipeline.py reads
    them)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.parts: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.parts[name] = self.parts.get(name, 0.0) + now - self.last
        self.last = now

    def __str__(self) -> str:
        parts = " ".join(f"{name} {seconds:.3f}" for name, seconds in self.parts.items())
        counts = " ".join(f"{name} {count}" for name, count in self.counts.items())
        return f"{self.last - self.start:.3f} s: {parts}" + (f"; {counts}" if counts else "")


def matches_find(
    items, settings, detector, version, plan, clock: Clock | None = None
) -> list[list[Match] | Exception]:
    """Return the unsaved matches of each indexed article (or the error that stopped it).

    The chunk is looked up and verified together; an error in a step it shares (but the
    database's, which the task retries) sends it again article by article, so that the error
    fails the article that raised it, never its neighbours (a MemoryError too: a chunk of a
    flooded template is judged in smaller parts, where an article alone may still pass)."""
    try:
        return _matches_find(items, settings, detector, version, plan, clock)
    except (DatabaseError, index.VersionMoved):
        raise
    except Exception as error:
        if len(items) <= 1:
            return [error] * len(items)
        logger.warning(
            "matching a chunk of %d articles failed (%r): article by article", len(items), error
        )
    found: list[list[Match] | Exception] = []
    for item in items:
        try:
            found += _matches_find([item], settings, detector, version, plan)
        except (DatabaseError, index.VersionMoved):
            raise
        except Exception as error:
            found.append(error)
    return found


def _matches_find(
    items, settings, detector, version, plan, clock: Clock | None = None
) -> list[list[Match] | Exception]:
    queries = [(item.article_id, item.features) for item in items]
    if not queries:
        return []
    counted: dict[int, int] = {}  # passage keys' holders, read once for both steps
    candidates = index.candidates_find_many(
        queries=queries,
        version=version,
        plan=plan,
        k=settings.k_max,
        since=index.retention_start(settings),
        counted=counted,
    )
    if clock:
        clock.lap("look up")
    found = index.duplicates_find_many(
        queries=queries,
        candidates=candidates,
        version=version,
        detector=detector,
        counts=clock.counts if clock else None,
        counted=counted,
    )
    if clock:
        clock.lap("verify")
    return [
        result if isinstance(result, Exception) else index.match_rows(result, version=version)
        for result in found
    ]
