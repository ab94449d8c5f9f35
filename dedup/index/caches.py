"""Per-worker-process caches of the index, under one lock: stored features and sketches of
recently matched articles, boilerplate passage keys, and the versions whose unreadable
features have been logged. The dicts are changed in place, never replaced, so the modules
that import them share them; caches_clear empties them all (tests)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dedup.engine.verify import Features


@dataclass(frozen=True)
class Holder:
    """What telling whether a stored article is a story holder needs (dedup.engine.popular)."""

    length: int
    passage_keys: np.ndarray
    passage_sizes: np.ndarray


# Features of recently matched articles, per worker process: a family of copies is verified
# against the same originals again and again. Stored features never change under a version.
# Their sizes (FEATURES_CACHED, SKETCHES_CACHED) are set in dedup.index.duplicates.
features_cache: OrderedDict[tuple[str, int], Features] = OrderedDict()
features_lock = threading.Lock()  # guards every cache here

sketch_cache: OrderedDict[tuple[str, int], tuple[int, np.ndarray]] = OrderedDict()
# What popular-story look-ups read of a stored article (its length, passage keys and sizes:
# dedup.index.duplicates.holders_load), per worker process: the latest holders of a popular
# key are asked for again by every new article holding it. Kept apart from features_cache,
# which the candidates verified need.
holder_cache: OrderedDict[tuple[str, int], Holder] = OrderedDict()
# How many held each article's own text when last counted, and when (dedup.index.stories):
# (version, article) -> (holders, time.monotonic()); a lower bound of today's.
own_cache: dict[tuple[str, int], tuple[int, float]] = {}

# Passage keys held by more than MAX_PASSAGE_OWNERS articles, per worker process: (version,
# key) -> when (see dedup.index.candidates, which sets how many and for how long).
hot_keys: dict[tuple[str, int], float] = {}
# Passage keys whose owners reached boilerplate.OWNERS_COUNTED: (version, key) -> when.
capped_keys: dict[tuple[str, int], float] = {}
# Segment-index buckets holding segments.BUCKET_ROWS rows or more: (version number, key) ->
# when (see dedup.index.segments).
hot_buckets: dict[tuple[int, int], float] = {}

# Versions whose unreadable features this process has logged: one line per version, not one
# per candidate of every chunk.
unreadable_logged: set[str] = set()


def caches_clear() -> None:
    """Forget this process's cached features, sketches and boilerplate keys, and which
    versions' unreadable features it has logged (tests)."""
    with features_lock:
        features_cache.clear()
        sketch_cache.clear()
        holder_cache.clear()
        own_cache.clear()
        hot_keys.clear()
        capped_keys.clear()
        hot_buckets.clear()
        unreadable_logged.clear()


def cached_split(cache: OrderedDict, version: str, article_ids: Iterable[int]) -> tuple[dict, list]:
    """Return what a per-worker cache holds of some articles, and the ids it does not."""
    loaded, missing = {}, []
    with features_lock:
        for article_id in sorted(set(article_ids)):
            cached = cache.get((version, article_id))
            if cached is None:
                missing.append(article_id)
            else:
                cache.move_to_end((version, article_id))
                loaded[article_id] = cached
    return loaded, missing
