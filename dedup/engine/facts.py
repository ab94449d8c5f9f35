"""Facts: the grams of an article that hold a number (a date, a score, a price, a phone
number; `Features.facts`). A copy keeps them; a template filled in with other facts (a weather
report, a match result, a notice) shares its words in every passage and few of its facts.
Verification (dedup.engine.verify) asks, of the smaller article's passages that are mostly in
the other, whether fewer than half change their facts, before it calls a pair near, and
leaves a passage that changes its facts out of a partial copy's evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dedup.engine import native
from dedup.engine.merge import first_is_smaller

if TYPE_CHECKING:
    from dedup.engine.features import Features

GRAM = native.GRAM
PRIME = np.uint64(native.PRIME)  # the gram hash's multipliers (as features._gram_hashes)
PRIME_2 = np.uint64(native.PRIME_2)

# A number is kept when one of the grams that hold it is in the other article (an edit next
# to it changes the grams on that side only); a passage keeps its facts when FACTS_KEPT of
# its numbers are kept, and a pair when fewer than FACTS_CHANGED of its passages mostly in
# the other change theirs (a changelog entry uploaded again changes its version line and
# keeps its other passages whole). Told only when those passages hold FACTS_LEAST numbers.
FACTS_KEPT = 0.67
FACTS_CHANGED = 0.5
FACTS_LEAST = 2
# A short text (fewer than SHORT characters: a one-line notice, a microblog post) is told by
# one number: it states few facts, each of them its content ("Order 1041 has shipped"), and
# a repost keeps them; the same line with another number is the same template filled in
# again (issue 32: 6,000 shipping notices of one template were near copies of each other).
SHORT = 140
# A passage changes its facts too where FACTS_REPLACED of its numbers are stated otherwise in
# the other's passage: a copy edited keeps its date and hours, if not each of its numbers.
FACTS_REPLACED = 2
# Two articles are one template filled in with other facts, no copy of any kind, where the
# smaller one's passages that state a number otherwise in the other (in the same words: another
# day of one notice, another score of one report) weigh FACTS_RESTATED of those stating
# numbers (facts_restated): what else they share is the template. A repost that dates its
# signature otherwise, or a changelog entry uploaded again (its version and date lines
# restated, its items with their bug numbers whole), restates a small part of its facts.
FACTS_RESTATED = 0.5
# Where those passages hold too few, a near copy keeps NUMBERS_KEPT of the smaller article's
# numbers, told when it states NUMBERS_LEAST or more (numbers_kept).
NUMBERS_KEPT = 0.5
NUMBERS_LEAST = 4
# A passage gets a fact key (fact_keys) when it holds this many numbers (a window of two): one
# alone (a chapter's, a year) is shared by chance by texts that are no copies of each other.
FACT_KEY_LEAST = 2


def facts_least(features: Features) -> int:
    """Return how many numbers an article's passages need for their facts to be told:
    FACTS_LEAST, one in a short text."""
    return 1 if features.length < SHORT else FACTS_LEAST


def facts_may_change(fa: Features, fb: Features) -> bool:
    """Tell whether the smaller article of a pair has numbers enough to tell by and some of
    them not in the other (a copy keeps them all: no passages to look at)."""
    small, other = (fa, fb) if first_is_smaller(fa, fb) else (fb, fa)
    if len(small.facts) < facts_least(small) * GRAM:
        return False
    return not _kept(small.facts.reshape(-1, GRAM), small.number_ids, other).all()


def numbers_kept(fa: Features, fb: Features) -> bool:
    """Tell whether the other article keeps at least NUMBERS_KEPT of the smaller one's numbers
    (True when it states fewer than NUMBERS_LEAST): asked when the passages mostly in the
    other hold too few numbers to tell (facts_agree). A template's siblings change most of
    theirs, though the passages holding them are not mostly in the other (a market close's
    figures, around a commentary sentence every close repeats); a changelog entry uploaded
    again changes its version and date, and keeps the bug numbers of its items, which
    facts_agree tells by."""
    small, other = (fa, fb) if first_is_smaller(fa, fb) else (fb, fa)
    if len(small.facts) < NUMBERS_LEAST * GRAM:
        return True
    kept = _kept(small.facts.reshape(-1, GRAM), small.number_ids, other)
    return np.count_nonzero(kept) >= NUMBERS_KEPT * len(kept)


def facts_agree(fa: Features, fb: Features, passages: list[tuple[int, int]]) -> bool:
    """Tell whether most of the smaller article's passages that are mostly in the other
    (`passages`, pairs of passage numbers as from merge.partial_passages) keep most of their
    numbers in it, or hold none; when they hold too few numbers to tell, whether the other
    keeps half of the smaller one's numbers (numbers_kept)."""
    return pair_facts(fa, fb, passages).agree


def facts_restated(fa: Features, fb: Features, passages: list[tuple[int, int]]) -> bool:
    """Tell whether the smaller article's passages that are mostly in the other (`passages`)
    and state one of their numbers otherwise there, in its place, weigh FACTS_RESTATED of
    those stating numbers: one template filled in with other facts (a water notice for the
    same street on another day), whose shared words are no copied text. A number moved
    elsewhere with its clause, or left out, is not restated."""
    return pair_facts(fa, fb, passages).restated


@dataclass(frozen=True)
class PairFacts:
    """What a pair's numbers tell, looked at once (pair_facts)."""

    restated: bool  # facts_restated
    agree: bool  # facts_agree
    # The smaller article's passages that change their facts where the other states numbers
    # in their stead (with_facts_kept leaves them out); None where none do.
    dropped: np.ndarray | None = None


def pair_facts(
    fa: Features,
    fb: Features,
    passages: list[tuple[int, int]],
    may_change: bool | None = None,
) -> PairFacts:
    """Return what a pair's numbers tell of its passages that are mostly in the other
    (`may_change`: facts_may_change of the pair, when known)."""
    if may_change is None:
        may_change = facts_may_change(fa, fb)
    if not may_change:  # the other keeps every number
        return PairFacts(False, True)
    found = changed_facts(fa, fb, passages)
    if found is None:
        return PairFacts(False, numbers_kept(fa, fb))
    # Those that state numbers, by their shingles: a notice's sentence of date, hours and
    # streets outweighs its hotline and its signature's date, which its siblings of one month
    # keep, and a template's sentence of no number tells nothing of its facts.
    changed, numbered, restated, replaced = found
    sizes = np.maximum((fa if first_is_smaller(fa, fb) else fb).passage_sizes, 1)
    stating = sizes[numbered].sum()
    restated_often = restated >= FACTS_REPLACED
    dropped = replaced | restated_often
    return PairFacts(
        restated=bool(sizes[restated > 0].sum() >= FACTS_RESTATED * stating > 0),
        agree=bool(sizes[changed | restated_often].sum() < FACTS_CHANGED * stating),
        dropped=dropped if dropped.any() else None,
    )


def with_facts_kept(
    fa: Features,
    fb: Features,
    passages: list[tuple[int, int]],
    facts: PairFacts | None = None,
) -> list[tuple[int, int]]:
    """Return `passages` (as for facts_agree) but those of the smaller article that change
    their facts in the other: a template's sentence filled in with another date, hour and
    phone number is no copied text, however many of its words it shares. A number left out
    is no changed fact where the other's passage states none in its stead (a quotation cut
    short of a passage's last number). `facts`: pair_facts of the pair, when known (of
    these passages or more)."""
    if facts is None:
        facts = pair_facts(fa, fb, passages)
    if facts.dropped is None:
        return passages
    small = 0 if first_is_smaller(fa, fb) else 1
    return [pair for pair in passages if not facts.dropped[pair[small]]]


def changed_facts(
    fa: Features, fb: Features, passages: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Return, for each passage of the smaller article: whether it is one of `passages` and
    keeps fewer than FACTS_KEPT of its numbers in the other; whether it is one of `passages`
    that states numbers; how many of its numbers are stated otherwise in the other's passage
    (another day and hour of one notice for the same street: its year, month and house
    numbers kept); and whether it changed its facts and the other's passage states numbers
    the smaller article does not in their stead. None when `passages` hold fewer than
    FACTS_LEAST numbers (too few to tell)."""
    small_is_a = first_is_smaller(fa, fb)
    small, other = (fa, fb) if small_is_a else (fb, fa)
    least = facts_least(small)
    if len(small.facts) < least * GRAM or not passages or not len(small.shingles):
        return None
    mine = [p if small_is_a else q for p, q in passages]
    held = np.zeros(len(small.passage_keys), bool)
    held[mine] = True
    of, kept, own = _numbers(small, other)
    inside = held[of]
    if np.count_nonzero(inside) < least:
        return None
    of, kept, own = of[inside], kept[inside], own[inside]
    count = np.bincount(of, minlength=len(held))
    changed = np.zeros(len(held), bool)
    if kept.all():
        return changed, count > 0, np.zeros(len(held), np.int64), changed
    lost = np.bincount(of, weights=own, minlength=len(held))
    kept = np.bincount(of, weights=kept, minlength=len(held))
    changed = (count > 0) & (kept < FACTS_KEPT * count)
    if not changed.any() and not lost.any():
        return changed, count > 0, np.zeros(len(held), np.int64), changed
    # The numbers the other's passage states that the smaller article does not, per passage,
    # and of those the ones in the places of the smaller one's.
    theirs = [q if small_is_a else p for p, q in passages]
    their_of, their_kept, their_own = _numbers(other, small)
    size = len(other.passage_keys)
    stated = np.zeros((2, len(held)), np.int64)
    stated[0, mine] = np.bincount(their_of[~their_kept], minlength=size)[theirs]
    stated[1, mine] = np.bincount(their_of[their_own], minlength=size)[theirs]
    restated = np.minimum(lost, stated[1]).astype(np.int64)
    return changed, count > 0, restated, changed & (stated[0] > 0)


def _numbers(features: Features, other: Features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return, for each number of an article (those with a gram among its shingles), its
    passage (that of the first such gram: one across two passages is none), whether `other`
    keeps it (one of its grams among the other's facts), and whether it is stated otherwise
    there: not kept, but its place is (fact_places: the words around it, not a clause moved
    elsewhere), and not right after a number so stated (the fraction of a decimal, the
    minutes of an hour: one fact)."""
    of, grams, follows, places, ids = features.number_table
    kept = _kept(grams, ids, other)
    own = ~kept
    if not own.any():
        return of, kept, own
    own[1:] &= ~(follows[1:] & ~kept[:-1])
    if places is not None:  # in a place of it in the other
        at = np.flatnonzero(own)
        own[at] = _in(places[at], other.place_set).any(axis=1)
    return of, kept, own


def number_table(
    features: Features,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Return, for each number of an article with a gram among its shingles: its passage, its
    grams (GRAM each), whether it comes right after the one before (the gram that starts at
    it holds that one second), its places (PLACES each; None for features of a format
    without them) and its id (none for features without them). Features.number_table keeps
    it: what _numbers asks of every pair."""
    shingles = features.shingles
    if len(features.facts) < GRAM or not len(shingles):
        empty = np.empty((0, GRAM), np.uint32)
        return np.empty(0, np.int64), empty, np.empty(0, bool), None, np.empty(0, np.uint32)
    grams = features.facts.reshape(-1, GRAM)
    at = np.minimum(np.searchsorted(shingles, grams), len(shingles) - 1)
    known = (shingles[at] == grams) & (grams != 0)
    placed = known.any(axis=1)
    of = features.passage_of[at[placed, known[placed].argmax(axis=1)]].astype(np.int64)
    grams = grams[placed]
    follows = np.zeros(len(grams), bool)
    follows[1:] = (grams[1:, GRAM - 2] == grams[:-1, GRAM - 1]) & (grams[1:, GRAM - 2] != 0)
    places = None
    if len(features.places) == PLACES * len(placed):
        places = features.places.reshape(-1, PLACES)[placed]
    ids = features.number_ids
    ids = ids[placed] if len(ids) == len(placed) else np.empty(0, np.uint32)
    return of, grams, follows, places, ids


def fact_keys(features: Features) -> np.ndarray:
    """Return the *fact key* of each passage stating FACT_KEY_LEAST numbers or more: the
    least hash of its windows of two numbers in a row, each hashed from the gram that starts
    at its first number and the one that ends at its second; distinct and sorted. A copy of the
    passage holds the same windows, and its key, even where it is cut otherwise (a report's
    heading joined to the text before it in a page) or a word next to one number is edited,
    as often as the least window is among those it keeps; a template filled in with other
    facts holds none of them, where the passage's key (its least gram hash) may fall in the
    template's words, which its siblings share: so a notice copied into a page is a
    candidate by its facts, the one key its hundred siblings do not hold too
    (dedup.engine.verify's Detector.candidates, the service and the Spark job alike)."""
    shingles = features.shingles
    if len(features.facts) < FACT_KEY_LEAST * GRAM or not len(shingles):
        return np.empty(0, np.uint64)
    grams = features.facts.reshape(-1, GRAM)
    at = np.minimum(np.searchsorted(shingles, grams), len(shingles) - 1)
    known = (shingles[at] == grams) & (grams != 0)
    placed = known.any(axis=1)
    if np.count_nonzero(placed) < FACT_KEY_LEAST:
        return np.empty(0, np.uint64)
    # A number's passage: that of the first of its grams that is a shingle (as facts_agree).
    of = features.passage_of[at[placed, known[placed].argmax(axis=1)]]
    # A window of two numbers in a row in one passage: the gram that starts at the first
    # and the one that ends at the second, which lie between them (but where they are
    # closer than a gram), so a copy has them however it is cut into passages.
    # Both shingles (in the passage, not past the text's end): a copy cut otherwise has
    # them, or not, alike.
    held, known = grams[placed].astype(np.uint64), known[placed]
    same = (of[1:] == of[:-1]) & known[:-1, GRAM - 1] & known[1:, 0]
    if not same.any():
        return np.empty(0, np.uint64)
    windows = (held[:-1, GRAM - 1][same] * PRIME) ^ (held[1:, 0][same] * PRIME_2)
    windows *= PRIME
    windows ^= windows >> np.uint64(31)
    passage = of[:-1][same].astype(np.int64)
    order = np.lexsort((windows, passage))
    passage, windows = passage[order], windows[order]
    first = np.flatnonzero(np.diff(passage, prepend=-1))
    return np.unique(windows[first])


def _kept(grams: np.ndarray, ids: np.ndarray, other: Features) -> np.ndarray:
    """Return which numbers (rows of their GRAM grams, and their ids) the other article
    keeps: one of its grams among the other's facts, and the number itself among the
    other's, where both know their numbers' ids (two numbers may share a unit)."""
    kept = _in(grams, other.fact_set).any(axis=1)
    if len(ids) == len(grams) and len(other.number_ids):
        kept &= _in(ids, other.id_set)
    return kept


def _in(values: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """Return the mask of `values` that are in the sorted array `sorted_values` (0 is in
    none: the facts' filler)."""
    if not len(sorted_values):
        return np.zeros(values.shape, bool)
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return (sorted_values[at] == values) & (values != 0)


def fact_shingles(units: str, numbers: list[int]) -> np.ndarray:
    """Return, for each number (one of the code points `numbers`) of passage_lines' text, in
    order, the shingles (as in Features.shingles) of the GRAM grams that hold it (0 where the
    text ends first): uint32, GRAM per number. A gram across two passages counts too."""
    codes = _codes(units, numbers)
    if codes is None:
        return np.empty(0, np.uint32)
    n = len(codes) - GRAM + 1
    at = np.flatnonzero(np.isin(codes, np.array(numbers, np.uint32)))
    # The grams that hold the number at p start at p - GRAM + 1 .. p; hashed as in
    # features._gram_hashes, only those.
    starts = (at[:, None] + np.arange(1 - GRAM, 1)).ravel()
    outside = (starts < 0) | (starts >= n)
    starts[outside] = 0
    shingles = _gram_shingles(codes, starts)
    shingles[outside] = 0
    return shingles


def fact_ids(units: str, numbers: list[int], ids: dict[int, int]) -> np.ndarray:
    """Return, for each number of passage_lines' text (in order, as fact_shingles), its id
    (`ids`: code point -> units.number_id): uint32, one per number."""
    codes = _codes(units, numbers)
    if codes is None:
        return np.empty(0, np.uint32)
    at = codes[np.isin(codes, np.array(numbers, np.uint32))]
    return np.array([ids[int(code)] for code in at.tolist()], np.uint32)


def _codes(units: str, numbers: list[int]) -> np.ndarray | None:
    """Return the code points of passage_lines' text (line ends left out), or None when it
    states no number or is shorter than a gram."""
    if not numbers:
        return None
    codes = np.frombuffer(units.replace("\n", "").encode("utf-32-le", "surrogatepass"), "<u4")
    return codes if len(codes) >= GRAM else None


def _gram_shingles(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Return the shingles of the grams of `codes` starting at `starts`, hashed as in
    features._gram_hashes (uint32)."""
    pairs_ = np.ndarray((len(codes) - 1,), dtype="<u8", buffer=codes, strides=(4,))
    grams = pairs_[starts + 2] * PRIME_2
    grams += pairs_[starts]
    grams *= PRIME
    return (grams >> np.uint64(32)).astype(np.uint32)


# What a number stands for in the grams of fact_places: any number, so that its place is the same
# whoever fills it in (a code point no text holds).
ANY_NUMBER = 0x10FFFF
PLACES = 2  # the places of a number: the words before it, and those around it


def fact_places(units: str, numbers: list[int]) -> np.ndarray:
    """Return, for each number of passage_lines' text (in order, as fact_shingles), the shingles
    of its *place*: the gram ending at it (or the text's first) and the gram from the unit
    before it (or the text's last), every number in them standing for any (ANY_NUMBER);
    uint32, PLACES per number. A number stated otherwise in the same words has a place in the
    other article ("5月9日" and "5月13日"), at a text's start or end too (the words before it,
    or after it, are the same); one moved elsewhere with its clause has not."""
    codes = _codes(units, numbers)
    if codes is None:
        return np.empty(0, np.uint32)
    n = len(codes) - GRAM + 1
    where = np.isin(codes, np.array(numbers, np.uint32))
    at = np.flatnonzero(where)
    codes = codes.copy()
    codes[where] = ANY_NUMBER
    starts = np.empty((len(at), PLACES), np.int64)
    starts[:, 0] = np.clip(at - GRAM + 1, 0, n - 1)  # at the text's start, the first gram
    starts[:, 1] = np.clip(at - 1, 0, n - 1)  # at the text's end, the last gram
    return _gram_shingles(codes, starts.reshape(-1))
