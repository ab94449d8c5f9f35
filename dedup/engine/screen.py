"""Screen verification candidates on a sample of their shingles before loading them whole.

Verification compares the full shingle sets of two articles: exact, but each stored article's
set must be fetched (about 10 KB). Most candidates that share a passage with an article share
nothing else, so the service first compares *sketches*: the shingles whose hash falls in the
lowest 1/2**SKETCH_BITS of the hash range (a prefix of the sorted shingles, so a sketch costs
little to cut, and the same shingle is sampled in every article that has it), each kept as its
low 32 bits (two different shingles agree there once in four billion pairs).

A shared shingle is in both sketches with probability 1/2**SKETCH_BITS, so the shared count in
the sketches is binomial around shared / 2**SKETCH_BITS. A candidate is dropped only when that
count is more than `Z` standard deviations below what the least similarity worth verifying
would give: a pair at that similarity is dropped with probability under 1 in 30,000, a pair
above it less often still. Articles too short for a sketch to tell are always verified.
"""

from __future__ import annotations

import numpy as np

SKETCH_BITS = 2  # a sketch holds about 1/4 of the shingles
Z = 4.0


def sketch(shingles: np.ndarray) -> np.ndarray:
    """Return the sketch of sorted distinct shingles: sorted distinct uint32."""
    bits = shingles.dtype.itemsize * 8
    cut = np.searchsorted(shingles, shingles.dtype.type(1 << (bits - SKETCH_BITS)))
    return np.unique(shingles[:cut].astype(np.uint32))


def may_pass(
    mine: np.ndarray,
    size: int,
    theirs: list[np.ndarray],
    sizes: list[int],
    least: float | np.ndarray,
) -> np.ndarray:
    """Return, for each candidate (its sketch and shingle count), whether its containment in
    the smaller of the two articles may reach `least` (one value, or one per candidate): a
    bool array."""
    if not theirs:
        return np.zeros(0, dtype=bool)
    owner = np.repeat(np.arange(len(theirs)), [len(t) for t in theirs])
    shared = np.zeros(len(theirs), dtype=np.int64)
    if owner.size and mine.size:
        values = np.concatenate(theirs)
        at = np.minimum(np.searchsorted(mine, values), mine.size - 1)
        shared = np.bincount(owner[mine[at] == values], minlength=len(theirs))
    rate = 0.5**SKETCH_BITS
    # The sketch count a pair at exactly `least` containment expects, and its spread.
    expected = least * np.minimum(size, np.asarray(sizes, dtype=np.float64)) * rate
    lowest = expected - Z * np.sqrt(expected * (1 - rate))
    return shared >= lowest
