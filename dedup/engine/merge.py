"""Verification's merges: which shingles two articles share, and in which of their passages.

Shingles are sorted, distinct uint32 values, so what two articles share is found by merging
the two arrays. The compiled module `dedup.engine._native` (built by pip when a C compiler is
present) merges in one step per element, an article against all its candidates in one call,
and counts shared passages as it goes; without it, numpy sorts the two sorted runs together,
which is the same merge done with temporaries, a few times slower. Both give the same results
(tests compare them).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from dedup.engine import native

# None without a C compiler at install time, or with DEDUP_NO_NATIVE set: numpy does the work.
accelerated = native.load()  # the compiled module, or None: the numpy paths below

if TYPE_CHECKING:
    from dedup.engine.features import Features

# Shared passages are counted in a (passages of one) x (passages of the other) matrix up to
# this size, sparsely beyond (pages of thousands of passages each).
MAX_DENSE_PASSAGE_PAIRS = 1 << 20
_LITTLE = sys.byteorder == "little"
_SIDE = np.uint64(1 << 31)  # marks a passage number as the second article's (numpy merge)
_UNMARK = np.uint32((1 << 31) - 1)


def shared_counts(x: np.ndarray, ys: list[np.ndarray]) -> list[int]:
    """Return how many values a sorted array of distinct uint32 shares with each of others."""
    if accelerated is not None:
        return accelerated.shared_counts(x, ys)
    return [shared_count(x, y) for y in ys]


def shared_count(x: np.ndarray, y: np.ndarray) -> int:
    """Return how many values two sorted arrays of distinct uint32 share."""
    if accelerated is not None:
        return accelerated.shared_count(x, y)
    # Sorting two sorted runs is one merge (numpy's stable sort finds the runs).
    both = np.concatenate((x, y))
    both.sort(kind="stable")
    return int(np.count_nonzero(both[1:] == both[:-1]))


def first_is_smaller(fa: Features, fb: Features) -> bool:
    """Tell whether `fa` is the smaller article of a pair: fewer shingles, then fewer
    characters, then the first shingle that differs. The same article whichever way round the
    pair is asked: a pair's verdict does not depend on which of the two is judged against the
    other (the service judges the later against the earlier, `duplicates` the earlier)."""
    if len(fa.shingles) != len(fb.shingles):
        return len(fa.shingles) < len(fb.shingles)
    if fa.length != fb.length:
        return fa.length < fb.length
    differ = np.flatnonzero(fa.shingles != fb.shingles)
    return not len(differ) or bool(fa.shingles[differ[0]] < fb.shingles[differ[0]])


def partial_passages(fa: Features, fb: Features) -> list[tuple[int, int]]:
    """Return (passage of a, passage of b) pairs where most of a passage of the smaller
    article is in the other, with the passage of the other that holds most of it."""
    small_is_a = first_is_smaller(fa, fb)
    mine, theirs = (fa, fb) if small_is_a else (fb, fa)
    width, rows = len(theirs.passage_keys), len(mine.passage_keys)
    if accelerated is None or rows * width > MAX_DENSE_PASSAGE_PAIRS or not rows:
        return shared_passages(fa, fb, *shared_shingles(fa, fb))
    found = accelerated.partial_passages(
        mine.shingles, mine.passage_of, theirs.shingles, theirs.passage_of,
        mine.half_passages, width,
    )  # fmt: skip
    return found if small_is_a else sorted((q, p) for p, q in found)


def shared_shingles(fa: Features, fb: Features) -> tuple[np.ndarray, np.ndarray]:
    """Return, for each shingle two articles share (in shingle order), the passage it is in
    first in a and in b: two uint32 arrays of the same length."""
    # (shingle, passage) as one 64-bit value, b's passages marked, so that once sorted a's
    # entry of a shared shingle comes right before b's.
    both = np.concatenate((_keyed(fa), _keyed(fb) | _SIDE))
    both.sort(kind="stable")
    words = both.view("<u4") if _LITTLE else both.astype("<u8").view("<u4")
    values, passages = words[1::2], words[0::2]
    at = np.flatnonzero(values[1:] == values[:-1])  # a's entry of a shared shingle
    return passages[at], passages[at + 1] & _UNMARK


def _keyed(features: Features) -> np.ndarray:
    return (features.shingles.astype(np.uint64) << np.uint64(32)) | features.passage_of


def shared_passages(
    fa: Features, fb: Features, in_a: np.ndarray, in_b: np.ndarray
) -> list[tuple[int, int]]:
    """Return what `partial_passages` returns, from the passages of the shared shingles
    (`shared_shingles`), by numpy."""
    # For each passage of the smaller side ("mine"): is most of it in the other article, and
    # in which of the other's passages ("theirs")? Shared shingles counted per (mine, theirs),
    # as mine * width + theirs.
    small_is_a = first_is_smaller(fa, fb)
    mine, theirs = (fa, fb) if small_is_a else (fb, fa)
    in_mine, in_theirs = (in_a, in_b) if small_is_a else (in_b, in_a)
    width = len(theirs.passage_keys)
    rows = len(mine.passage_keys)
    pair = np.multiply(in_mine, width, dtype=np.int64)
    pair += in_theirs
    if rows * width <= MAX_DENSE_PASSAGE_PAIRS:
        together = np.bincount(pair, minlength=rows * width).reshape(rows, width)
        shared = np.flatnonzero(np.add.reduce(together, axis=1) >= mine.half_passages)
        best = together[shared].argmax(axis=1)  # most shared shingles, then the lowest number
    else:  # two pages of thousands of passages each: count the pairs that occur, sparsely
        pair, count = np.unique(pair, return_counts=True)
        row, column = pair // width, pair % width
        total = np.bincount(row, weights=count, minlength=rows)
        # Each passage's partner: most shared shingles, then the lowest number (as argmax).
        order = np.lexsort((column, -count, row))
        order = order[np.flatnonzero(np.diff(row[order], prepend=-1))]
        order = order[total[row[order]] >= mine.half_passages[row[order]]]
        shared, best = row[order], column[order]
    if small_is_a:
        return list(zip(shared.tolist(), best.tolist(), strict=True))
    return sorted(zip(best.tolist(), shared.tolist(), strict=True))


def passage_chars(fa: Features, fb: Features, passages: list[tuple[int, int]]) -> int:
    """Return the characters of the smaller article's passages that are mostly in the other
    (`passages` as from partial_passages): its characters per shingle times their shingles."""
    small_is_a = first_is_smaller(fa, fb)
    small = fa if small_is_a else fb
    held = {p if small_is_a else q for p, q in passages}
    if not held:
        return 0
    shingles = int(small.passage_sizes[list(held)].sum())
    return round(shingles * small.length / max(len(small.shingles), 1))


def passages_agree(fa, fb, passages, in_a, in_b, share: float) -> bool:
    """Tell whether a `share` of the smaller article's passages (boilerplate both hold, the
    masks `in_a` and `in_b`, aside) are mostly in the other, as in a copy edited here and
    there."""
    small_is_a = first_is_smaller(fa, fb)
    small, held = (fa, in_a) if small_is_a else (fb, in_b)
    own = small.passage_sizes > 0  # a passage repeated whole has no shingles of its own
    if held is not None:
        own &= ~held
    own = int(own.sum())
    shared = len({p if small_is_a else q for p, q in passages})
    return shared >= share * max(own, 1)
