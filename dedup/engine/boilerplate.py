"""Boilerplate learned from a collection: a passage whose key many articles hold (a footer,
a menu, a disclaimer, a template's fixed sentence) is boilerplate in an article whose own
text is held by far fewer. Verification (dedup.engine.verify) leaves out what two articles
both hold as boilerplate: it is neither evidence nor similarity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dedup.engine.features import Features

# A passage is boilerplate in an article when at least BOILERPLATE_OWNERS articles hold its
# key and at least BOILERPLATE_RATIO times as many as hold the article's own text: its
# passages at the BOILERPLATE_LEVEL quantile of owners, by shingles (boilerplate_passages).
BOILERPLATE_OWNERS = 5
BOILERPLATE_RATIO = 3
BOILERPLATE_LEVEL = 0.25

# How many articles hold each of some passage keys (uint64 -> int64 counts, at least 1 for a
# key the article itself holds); None where nothing is known, and nothing is boilerplate.
PassageOwners = Callable[[np.ndarray], np.ndarray]


def passage_owners_of(features: Sequence[Features]) -> PassageOwners:
    """Return a PassageOwners of a collection: each key's holders among these articles."""
    keys = [np.unique(f.passage_keys) for f in features]
    values, counts = np.unique(np.concatenate(keys or [np.empty(0, np.uint64)]), return_counts=True)

    def owners(wanted: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(values, wanted), max(len(values) - 1, 0))
        found = values[at] == wanted if len(values) else np.zeros(len(wanted), bool)
        return np.where(found, counts[at] if len(values) else 0, 1).astype(np.int64)

    return owners


def boilerplate_passages(features: Features, owners: np.ndarray) -> np.ndarray:
    """Return the mask of an article's passages that are boilerplate in it, from how many
    articles hold each of its passage keys (`owners`, in passage order).

    The article's own text is held by as many articles as hold its passages at the
    BOILERPLATE_LEVEL quantile (by shingles): one of fifty copies of a story, with a
    sentence of its own, still has the story for its text."""
    if not len(owners):
        return np.zeros(0, bool)
    return owners >= max(BOILERPLATE_OWNERS, BOILERPLATE_RATIO * own_holders(features, owners))


def own_holders(features: Features, owners: np.ndarray) -> int:
    """Return how many articles hold an article's own text: as many as hold its passages at
    the BOILERPLATE_LEVEL quantile, by shingles (`owners` in passage order, not empty)."""
    return _weighted_quantile(owners, features.passage_sizes, BOILERPLATE_LEVEL)


def held_mask(keys: np.ndarray, held: list[int]) -> np.ndarray:
    """Return the mask of `keys` that are among `held` (a few keys: one comparison each,
    where np.isin would sort)."""
    mask = keys == np.uint64(held[0])
    for key in held[1:]:
        mask |= keys == np.uint64(key)
    return mask


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> int:
    if q <= 0 or len(values) == 1:
        return int(values.min())
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(np.maximum(np.asarray(weights)[order], 1))
    at = int(np.searchsorted(cumulative, q * cumulative[-1]))
    return int(values[order][min(at, len(values) - 1)])


class Boilerplate:
    """Which passages are boilerplate in each article, from how many articles hold their keys
    (a PassageOwners); worked out once per article (kept while this object lives)."""

    def __init__(self, owners: PassageOwners) -> None:
        self.owners = owners
        self._memo: dict[int, tuple[Features, dict[int, np.ndarray]]] = {}
        self._unions: dict[tuple, tuple[Features, np.ndarray]] = {}

    def shingles(self, features: Features) -> dict[int, np.ndarray]:
        """Return, for each passage key that is boilerplate in an article, the shingles of
        the article first seen in its passages with that key (sorted)."""
        found = self._memo.get(id(features))
        if found is not None and found[0] is features:
            return found[1]
        by_key: dict[int, np.ndarray] = {}
        if len(features.passage_keys):
            mask = boilerplate_passages(features, self.owners(features.passage_keys))
            if mask.any():
                # The boilerplate shingles grouped by their passage's key, in shingle order.
                # A passage may hold no shingles of its own (all first seen in an earlier
                # passage that holds its line, joined to others): it adds none.
                inside = mask[features.passage_of]
                keys = features.passage_keys[features.passage_of[inside]]
                values = features.shingles[inside]
                order = np.argsort(keys, kind="stable")
                keys, values = keys[order], values[order]
                starts = np.flatnonzero(np.diff(keys, prepend=~keys[:1])).tolist()
                ends = [*starts[1:], len(keys)] if starts else []
                for start, end in zip(starts, ends, strict=True):
                    by_key[int(keys[start])] = values[start:end]
        self._memo[id(features)] = (features, by_key)
        return by_key

    def keys(self, features: Features) -> frozenset[int]:
        """Return the keys of an article's passages that are boilerplate in it."""
        return frozenset(self.shingles(features))

    def common(self, fa: Features, fb: Features) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Return the shingles of a's and of b's passages that are boilerplate in both, and
        the keys of those passages; or None when there are none."""
        mine = self.shingles(fa)
        if not mine or not held_mask(fb.passage_keys, list(mine)).any():
            # b holds none of a's boilerplate: no need to know b's (the service reads the
            # owners of b's passages from the database to know it).
            return None
        theirs = self.shingles(fb)
        keys = [key for key in mine if key in theirs]
        if not keys:
            return None
        return self._union(fa, mine, keys), self._union(fb, theirs, keys), keys

    def _union(self, features: Features, by_key: dict[int, np.ndarray], keys: list[int]):
        if len(keys) == 1:
            return by_key[keys[0]]
        # An article meets the same few sets of boilerplate (its site's) again and again.
        which = (id(features), tuple(sorted(keys)))
        union = self._unions.get(which)
        if union is None or union[0] is not features:
            # Each shingle has one (first) passage: the parts are disjoint, a sort merges them.
            union = (features, np.sort(np.concatenate([by_key[k] for k in keys])))
            self._unions[which] = union
        return union[1]
