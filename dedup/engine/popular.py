"""Candidates through popular passages: a story reposted by the dozen.

A passage key held by at most MAX_PASSAGE_OWNERS articles makes every two of them a
candidate pair. One held by more is either boilerplate (a footer, a menu, a template's fixed
sentence) or the text of a popular story, and only an article holding it can tell which, by
how many hold the article's own text (dedup.engine.boilerplate.own_holders): in one of fifty
copies of a story, the story's passages are held by about as many as its own text. A *story
holder* of a key is an article of at least POPULAR_PASSAGES passages and POPULAR_LENGTH
characters whose own text is held by more than 1 / POPULAR_RATIO as many as the key (in a
short notice or a one-passage text the popular passage is all there is to tell its own text
by: a template's; in two answers of a Q&A site sharing a few sentences, the sentences are
held by both families, twice as many as either). Each story holder pairs with the
POPULAR_HOLDERS story holders of the key just before it (by position, or by id in the
service): each copy of a story meets the copies before it, so they join one cluster however
many there are, at a bounded cost. A key held by MAX_POPULAR_OWNERS or more finds nothing.
Measured on bench.trusted's templated corpus and bench.detection's (docs/design.md).

The same rule in the three places that find candidates: Detector.candidates, the service
(dedup.index.candidates) and the Spark job (dedup.spark.job).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dedup.engine.boilerplate import BOILERPLATE_LEVEL, PassageOwners, own_holders
from dedup.engine.features import Features

# Passages held by more articles than this are boilerplate or popular: an article holding one
# pairs only with the story holders just before it, and only where it is one.
MAX_PASSAGE_OWNERS = 20
POPULAR_HOLDERS = 20
# Held by this many or more (dedup.index.boilerplate counts no further): boilerplate anyway.
MAX_POPULAR_OWNERS = 256
POPULAR_PASSAGES = 4
POPULAR_RATIO = 1.5  # verification's boilerplate is 3 times: held by both of two families
POPULAR_LENGTH = 140  # verify.SHORT: a shorter text is near at a lower similarity


def popular_asks(features: Features, owners: np.ndarray) -> np.ndarray:
    """Return the mask of an article's passages whose key it is a story holder of, from how
    many articles hold each of its keys (`owners`, in passage order)."""
    popular = (owners > MAX_PASSAGE_OWNERS) & (owners < MAX_POPULAR_OWNERS)
    if len(owners) < POPULAR_PASSAGES or features.length < POPULAR_LENGTH:
        return np.zeros(len(owners), bool)
    if not popular.any():
        return popular
    own = own_holders(features, owners)
    return popular & (owners < POPULAR_RATIO * own)


def popular_asks_many(features: Sequence[Features], owners: np.ndarray) -> list[np.ndarray]:
    """Return `popular_asks` of each of many articles at once, from how many articles hold
    each of their keys (`owners`: all their passages', article after article). Only the
    articles' length, passage keys and passage sizes are read."""
    counts = np.array([len(f.passage_keys) for f in features], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    owners = np.asarray(owners, np.int64)
    eligible = (counts >= POPULAR_PASSAGES) & (
        np.array([f.length for f in features], np.int64) >= POPULAR_LENGTH
    )
    article = np.repeat(np.arange(len(features)), counts)
    popular = (owners > MAX_PASSAGE_OWNERS) & (owners < MAX_POPULAR_OWNERS) & eligible[article]
    if not popular.any():
        return [popular[starts[i] : starts[i + 1]] for i in range(len(features))]
    own = own_holders_many(features, owners)
    asks = popular & (owners < POPULAR_RATIO * own[article])
    return [asks[starts[i] : starts[i + 1]] for i in range(len(features))]


def own_holders_many(features: Sequence[Features], owners: np.ndarray) -> np.ndarray:
    """Return own_holders of each of many articles (its passages' owners at the
    BOILERPLATE_LEVEL quantile by shingles, as boilerplate._weighted_quantile computes it one
    by one; 0 for an article without passages), from `owners` as popular_asks_many's."""
    counts = np.array([len(f.passage_keys) for f in features], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    owners = np.asarray(owners, np.int64)
    article = np.repeat(np.arange(len(features)), counts)
    sizes = np.concatenate([np.asarray(f.passage_sizes, np.int64) for f in features] or [[]])
    order = np.lexsort((owners, article))  # stable: by article, then owners
    cumulative = np.cumsum(np.maximum(sizes[order], 1))
    before = np.concatenate([[0], cumulative])[starts[:-1]]  # each article's first, less one
    local = cumulative - np.repeat(before, counts)
    total = np.zeros(len(features), np.int64)
    has = counts > 0
    total[has] = local[starts[1:][has] - 1]
    # The first place where the cumulative weight reaches the quantile (searchsorted left).
    short = local < BOILERPLATE_LEVEL * total[article]
    own = np.zeros(len(features), np.int64)
    if has.any():
        at = np.add.reduceat(short, starts[:-1][has])
        own[has] = owners[order][starts[:-1][has] + np.minimum(at, counts[has] - 1)]
    return own


def popular_pairs(features: Sequence[Features], owners: PassageOwners) -> np.ndarray:
    """Return candidate pairs (a, b; a before b) through popular passage keys: each story
    holder of a key with the POPULAR_HOLDERS story holders of it before it."""
    keys, article = [], []
    for i, f in enumerate(features):
        if len(f.passage_keys) < POPULAR_PASSAGES:
            continue
        asks = popular_asks(f, owners(f.passage_keys))
        if asks.any():
            keys.append(f.passage_keys[asks])
            article.append(np.full(int(asks.sum()), i, np.int64))
    if not keys:
        return np.empty((0, 2), np.int64)
    keys, article = np.concatenate(keys), np.concatenate(article)
    # Each key's distinct story holders in position order.
    order = np.lexsort((article, keys))
    keys, article = keys[order], article[order]
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]) | (article[1:] != article[:-1])
    keys, article = keys[first], article[first]
    starts = np.flatnonzero(np.diff(keys, prepend=~keys[:1]))
    run = np.repeat(np.arange(len(starts)), np.diff(starts, append=len(keys)))
    offset = np.arange(len(keys)) - starts[run]
    found = []
    for back in range(1, POPULAR_HOLDERS + 1):
        later = np.flatnonzero(offset >= back)
        if not len(later):
            break
        found.append(np.stack([article[later - back], article[later]], axis=1))
    return np.concatenate(found) if found else np.empty((0, 2), np.int64)
