"""Facts: the grams of an article that hold a number (a date, a score, a price, a phone
number; `Features.facts`). A copy keeps them; a template filled in with other facts (a weather
report, a match result, a notice) shares its words in every passage and few of its facts.
Verification (dedup.engine.verify) asks, of the smaller article's passages that are mostly in
the other, whether fewer than half change their facts, before it calls a pair near.
"""

from __future__ import annotations

import numpy as np

from dedup.engine.features import GRAM, Features

# A number is kept when one of the grams that hold it is in the other article (an edit next
# to it changes the grams on that side only); a passage keeps its facts when FACTS_KEPT of
# its numbers are kept, and a pair when fewer than FACTS_CHANGED of its passages mostly in
# the other change theirs (a changelog entry uploaded again changes its version line and
# keeps its other passages whole). Told only when those passages hold FACTS_LEAST numbers.
FACTS_KEPT = 0.67
FACTS_CHANGED = 0.5
FACTS_LEAST = 2


def facts_may_change(fa: Features, fb: Features) -> bool:
    """Tell whether the smaller article of a pair has numbers enough to tell by and some of
    them not in the other (a copy keeps them all: no passages to look at)."""
    small, other = (fa, fb) if len(fa.shingles) <= len(fb.shingles) else (fb, fa)
    if len(small.facts) < FACTS_LEAST * GRAM:
        return False
    return not _in(small.facts.reshape(-1, GRAM), other.fact_set).any(axis=1).all()


def facts_agree(fa: Features, fb: Features, passages: list[tuple[int, int]]) -> bool:
    """Tell whether most of the smaller article's passages that are mostly in the other
    (`passages`, pairs of passage numbers as from merge.partial_passages) keep most of their
    numbers in it, or hold none; True when they hold too few numbers to tell."""
    small_is_a = len(fa.shingles) <= len(fb.shingles)
    small, other = (fa, fb) if small_is_a else (fb, fa)
    if len(small.facts) < FACTS_LEAST * GRAM or not passages or not len(small.shingles):
        return True
    held = np.zeros(len(small.passage_keys), bool)
    held[[p if small_is_a else q for p, q in passages]] = True
    grams = small.facts.reshape(-1, GRAM)
    # A number's passage: that of the first of its grams that is a shingle (one across two
    # passages is none).
    at = np.minimum(np.searchsorted(small.shingles, grams), len(small.shingles) - 1)
    known = (small.shingles[at] == grams) & (grams != 0)
    placed = known.any(axis=1)
    of = small.passage_of[at[placed, known[placed].argmax(axis=1)]]
    inside = held[of]
    if np.count_nonzero(inside) < FACTS_LEAST:
        return True
    kept = _in(grams[placed][inside], other.fact_set).any(axis=1)
    of = of[inside]
    count = np.bincount(of, minlength=len(held))
    kept = np.bincount(of, weights=kept, minlength=len(held))
    with_facts = count > 0
    changed = np.count_nonzero(kept[with_facts] < FACTS_KEPT * count[with_facts])
    return changed < FACTS_CHANGED * np.count_nonzero(held)


def _in(values: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """Return the mask of `values` that are in the sorted array `sorted_values` (0 is in
    none: the facts' filler)."""
    if not len(sorted_values):
        return np.zeros(values.shape, bool)
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return (sorted_values[at] == values) & (values != 0)
