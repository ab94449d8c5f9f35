"""Which holders of a popular passage key are story holders of it (dedup.engine.popular), in
the service: an article of at least POPULAR_PASSAGES passages and POPULAR_LENGTH characters
whose own text is held by more than 1 / POPULAR_RATIO as many articles as the key.

How many hold an article's own text (own_holders) takes counting the holders of each of its
passages. Counts only grow (but for the retention window's pruning), so a count worked out
earlier is a lower bound of today's: where it already shows the article a story holder, it is
one. Each worker keeps the last one per article for HOT_KEY_SECONDS (caches.own_cache) and
counts again only for the articles it does not confirm: the latest holders of a popular
story's key are asked about by every new copy of it.
"""

from __future__ import annotations

import time

import numpy as np

from dedup.engine.popular import (
    MAX_PASSAGE_OWNERS,
    MAX_POPULAR_OWNERS,
    POPULAR_LENGTH,
    POPULAR_PASSAGES,
    POPULAR_RATIO,
    own_holders_many,
)
from dedup.index.caches import features_lock, own_cache

OWN_CACHED = 200_000


def story_pairs(pairs: set[tuple[int, int]], counts, version: str) -> set[tuple[int, int]]:
    """Return those of (stored article, signed passage key it holds) where the article is a
    story holder of the key, from how many hold each key (`counts`, a StoredOwners that knows
    these keys')."""
    from dedup.index.candidates import HOT_KEY_SECONDS
    from dedup.index.duplicates import holders_load  # duplicates imports candidates

    holders = holders_load(article_ids={a for a, _ in pairs}, version=version)
    eligible = {
        a
        for a, h in holders.items()
        if len(h.passage_keys) >= POPULAR_PASSAGES and h.length >= POPULAR_LENGTH
    }
    now = time.monotonic()
    with features_lock:
        known = {a: own_cache.get((version, a)) for a in eligible}
    known = {a: own for a, (own, at) in _present(known) if now - at <= HOT_KEY_SECONDS}

    def holds(key: int, own: int) -> bool:
        held = counts.counts[key]
        return MAX_PASSAGE_OWNERS < held < MAX_POPULAR_OWNERS and held < POPULAR_RATIO * own

    found = {(a, key) for a, key in pairs if a in known and holds(key, known[a])}
    unsure = {(a, key) for a, key in pairs if a in eligible} - found
    if unsure:
        fresh = _own_counted({a for a, _ in unsure}, holders, counts)
        with features_lock:
            own_cache.update(((version, a), (own, now)) for a, own in fresh.items())
            while len(own_cache) > OWN_CACHED:
                own_cache.pop(next(iter(own_cache)))
        found.update((a, key) for a, key in unsure if holds(key, fresh[a]))
    return found


def _present(known: dict) -> list:
    return [(a, value) for a, value in known.items() if value is not None]


def _own_counted(article_ids: set[int], holders: dict, counts) -> dict[int, int]:
    """Return own_holders of these articles, their keys' holders counted now."""
    ordered = sorted(article_ids)
    some = [holders[a] for a in ordered]
    counts.prefetch(h.passage_keys for h in some)
    keys = np.concatenate([h.passage_keys for h in some]).view(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    known = counts.counts
    owners = np.array([known[k] for k in unique.tolist()], np.int64)[inverse]
    return dict(zip(ordered, own_holders_many(some, owners).tolist(), strict=True))
