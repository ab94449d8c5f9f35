"""Candidates through popular passages: a story reposted by the dozen.

A passage key held by at most MAX_PASSAGE_OWNERS articles makes every two of them a
candidate pair. One held by more is either boilerplate (a footer, a menu, a template's fixed
sentence) or the text of a popular story, and only the article asking can tell which, by the
rule verification uses (dedup.engine.boilerplate): it is boilerplate in an article whose own
text is held by far fewer. Where it is not, the article asking pairs with the POPULAR_HOLDERS
holders just before it (by position, or by id in the service): each copy of a story meets the
copies before it, so the copies join one cluster however many there are, at a bounded cost.
A key held by MAX_POPULAR_OWNERS or more finds nothing.

The same rule in the three places that find candidates: Detector.candidates, the service
(dedup.index.candidates) and the Spark job (dedup.spark.job).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dedup.engine.boilerplate import PassageOwners, boilerplate_passages
from dedup.engine.features import Features

# Passages held by more articles than this are boilerplate or popular: each article holding
# one pairs only with the holders just before it, and only where it is not boilerplate in it.
MAX_PASSAGE_OWNERS = 20
POPULAR_HOLDERS = 20
# Held by this many or more (dedup.index.boilerplate counts no further): boilerplate anyway.
MAX_POPULAR_OWNERS = 256


def popular_asks(features: Features, owners: np.ndarray) -> np.ndarray:
    """Return the mask of an article's passages whose key is popular and not boilerplate in
    it, from how many articles hold each of its keys (`owners`, in passage order)."""
    popular = (owners > MAX_PASSAGE_OWNERS) & (owners < MAX_POPULAR_OWNERS)
    if not popular.any():
        return popular
    return popular & ~boilerplate_passages(features, owners)


def popular_pairs(features: Sequence[Features], owners: PassageOwners) -> np.ndarray:
    """Return candidate pairs (a < b, positions) through popular passage keys: each article
    with the POPULAR_HOLDERS holders before it of each popular key not boilerplate in it."""
    keys, article, asks = [], [], []
    for i, f in enumerate(features):
        if not len(f.passage_keys):
            continue
        counts = owners(f.passage_keys)
        popular = (counts > MAX_PASSAGE_OWNERS) & (counts < MAX_POPULAR_OWNERS)
        if not popular.any():
            continue
        keys.append(f.passage_keys[popular])
        asks.append(popular_asks(f, counts)[popular])
        article.append(np.full(int(popular.sum()), i, np.int64))
    if not keys:
        return np.empty((0, 2), np.int64)
    keys, article, asks = np.concatenate(keys), np.concatenate(article), np.concatenate(asks)
    # Each key's distinct holders in position order: a holder asks if any of its passages
    # with the key does (they have one count, so all or none).
    order = np.lexsort((article, keys))
    keys, article, asks = keys[order], article[order], asks[order]
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]) | (article[1:] != article[:-1])
    keys, article, asks = keys[first], article[first], asks[first]
    starts = np.flatnonzero(np.diff(keys, prepend=~keys[:1]))
    run = np.repeat(np.arange(len(starts)), np.diff(starts, append=len(keys)))
    offset = np.arange(len(keys)) - starts[run]
    found = []
    for back in range(1, POPULAR_HOLDERS + 1):
        later = np.flatnonzero(asks & (offset >= back))
        if not len(later):
            break
        found.append(np.stack([article[later - back], article[later]], axis=1))
    return np.concatenate(found) if found else np.empty((0, 2), np.int64)
