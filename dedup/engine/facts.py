"""Facts: the grams of an article that hold a number (a date, a score, a price, a phone
number; `Features.facts`). A copy keeps them; a template filled in with other facts (a weather
report, a match result, a notice) shares its words in every passage and few of its facts.
Verification (dedup.engine.verify) asks, of the smaller article's passages that are mostly in
the other, whether most of those that hold facts keep them, before it calls a pair near.
"""

from __future__ import annotations

import numpy as np

from dedup.engine.features import Features

# A passage keeps its facts when FACTS_KEPT of its fact shingles are in the other article; a
# pair keeps them when FACTS_PASSAGES of its passages that hold facts do (a re-upload that
# changes a version line and a date keeps the facts of its other passages). Told only when
# those passages hold FACTS_LEAST fact shingles (two numbers, or one in two places).
FACTS_KEPT = 0.5
FACTS_PASSAGES = 0.5
FACTS_LEAST = 8


def has_facts(fa: Features, fb: Features) -> bool:
    """Tell whether the smaller article of a pair has facts enough to tell by."""
    return len((fa if len(fa.shingles) <= len(fb.shingles) else fb).facts) >= FACTS_LEAST


def facts_agree(fa: Features, fb: Features, passages: list[tuple[int, int]]) -> bool:
    """Tell whether most of the smaller article's passages that are mostly in the other
    (`passages`, pairs of passage numbers as from merge.partial_passages) and hold facts
    keep most of their facts in it; True when they hold too few facts to tell."""
    small_is_a = len(fa.shingles) <= len(fb.shingles)
    small, other = (fa, fb) if small_is_a else (fb, fa)
    if len(small.facts) < FACTS_LEAST or not passages:
        return True
    held = np.zeros(len(small.passage_keys), bool)
    held[[p if small_is_a else q for p, q in passages]] = True
    # A fact is a shingle (one across two passages aside): its passage is the shingle's.
    at = np.minimum(np.searchsorted(small.shingles, small.facts), len(small.shingles) - 1)
    known = small.shingles[at] == small.facts
    facts, of = small.facts[known], small.passage_of[at[known]]
    inside = held[of]
    if np.count_nonzero(inside) < FACTS_LEAST:
        return True
    facts, of = facts[inside], of[inside]
    count = np.bincount(of, minlength=len(held))
    kept = np.bincount(of, weights=_in(facts, other.shingles), minlength=len(held))
    with_facts = count > 0
    keep = np.count_nonzero(kept[with_facts] >= FACTS_KEPT * count[with_facts])
    return keep >= FACTS_PASSAGES * np.count_nonzero(with_facts)


def _in(values: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """Return the mask of `values` that are in the sorted array `sorted_values`."""
    if not len(sorted_values):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return sorted_values[at] == values
