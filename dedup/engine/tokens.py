"""Cut normalised text into tokens with jieba's dictionary and weigh them by TF-IDF."""

from __future__ import annotations

import re
from collections import _count_elements  # Counter's C loop, without Counter's overhead
from collections.abc import Callable
from functools import cache
from importlib import resources
from itertools import repeat
from operator import itemgetter

import mmh3
import numpy as np

from dedup.engine import native

# The compiled module (dedup.engine._native) counts a text's words by slot in one C loop; the
# same counts as the dict and numpy below, in the same order (tests/engine/test_golden.py).
_accelerated = native.load()

Cutter = Callable[[str], list[str]]

# 1 + ln(tf) for term frequencies up to 4095 (higher counts are capped: they never occur in
# articles, and the log barely moves there).
_LOG_TF = np.concatenate([[0.0], 1.0 + np.log(np.arange(1, 4096))])
# The +1/-1 votes of the 8 bits of every byte value, lowest bit first.
_SIGNS = (
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(
        np.float64
    )
    * 2
    - 1
)
# How many recently seen words keep their IDF in the small lookup table (see Weigher.idfs).
RECENT_WORDS = 1 << 18

# A usable token has at least two characters and at least one letter or Chinese character:
# numbers, punctuation and one-character noise carry too little of an article's identity.
_HAS_LETTER = re.compile(r"[^\W\d_]")


@cache
def cutter(name: str) -> Cutter:
    """Return the cut function of a tokenizer backend (`rjieba` or `jieba`), loading it once."""
    if name == "rjieba":
        import rjieba

        cut = rjieba.cut
        return lambda text: cut(text, True)  # hmm=True, passed by position: cheaper
    if name == "jieba":
        import jieba

        jieba.setLogLevel(60)  # jieba logs its dictionary loading at INFO on stderr
        jieba.initialize()
        return lambda text: jieba.lcut(text, HMM=True)
    raise ValueError(f"unknown tokenizer {name!r}: use rjieba or jieba")


@cache
def stop_words() -> frozenset[str]:
    """Return the bundled stop words (two or more characters; shorter tokens go anyway)."""
    text = resources.files("dedup.engine").joinpath("data/stopwords.txt").read_text("utf-8")
    lines = (line for line in text.splitlines() if not line.startswith("#"))
    return frozenset(word for line in lines for word in line.split())


@cache
def idf_table() -> tuple[dict[str, float], float]:
    """Return jieba's bundled IDF dictionary and its median, the IDF of unknown words."""
    text = resources.files("jieba.analyse").joinpath("idf.txt").read_text("utf-8")
    idf: dict[str, float] = {}
    for line in text.splitlines():
        word, _, value = line.partition(" ")
        if value:
            idf[word] = float(value)
    values = sorted(idf.values())
    return idf, values[len(values) // 2]


def is_usable(token: str, stop: frozenset[str]) -> bool:
    """Tell whether a token may weigh in a fingerprint."""
    return len(token) >= 2 and token not in stop and _HAS_LETTER.search(token) is not None


class Weigher:
    """Keep the usable tokens of a text, weigh them by TF-IDF and pick the top N.

    Usability and IDF of the dictionary's words are decided once, at construction. The
    350,000-word dictionary does not fit in the CPU cache, so the words seen recently get a
    slot in small arrays holding their IDF and their hash: one lookup per distinct token of a
    text, and numpy does the rest. Every unusable word (one-character tokens, separators, stop
    words, numbers) shares slot 0, whose IDF is 0. The slots are bounded, so memory stays flat
    on any stream.
    """

    def __init__(
        self, *, top_n: int, tf: str, seed: int = 0, extra_stop_words: tuple[str, ...] = ()
    ) -> None:
        self.top_n = top_n
        self.log_tf = tf == "log"
        self.seed = seed
        self.stop = stop_words() | frozenset(extra_stop_words)
        idf, self.median_idf = idf_table()
        # IDF for usable dictionary words, 0.0 for unusable ones; missing means "not in it".
        self.known = {w: (v if is_usable(w, self.stop) else 0.0) for w, v in idf.items()}
        # Stop words, and the separators that normalised text is full of, settle in one lookup.
        for word in (*self.stop, " ", ",", "\n"):
            self.known[word] = 0.0
        self._slot: dict[str, int] = {}
        self._allocate(RECENT_WORDS)

    def _allocate(self, size: int) -> None:
        # Room for `size` words in the slot dictionary; slot 0 is the unusable words' one.
        self._idf = np.zeros(size + 1, dtype=np.float64)
        self._hash = np.zeros(size + 1, dtype="<u8")
        # Multiplies a weight by 1 + (something far below any real difference between two
        # weights) taken from the hash, so that equal weights are told apart by their words.
        self._tiebreak = np.ones(size + 1, dtype=np.float64)
        self._used = 1

    def idf(self, word: str) -> float:
        """Return a word's IDF: 0 if unusable, the median if not in the dictionary."""
        value = self.known.get(word)
        if value is None:
            value = self.median_idf if is_usable(word, self.stop) else 0.0
        return value

    def usable(self, tokens: list[str]) -> list[str]:
        """Return the usable tokens, in order."""
        return [token for token in tokens if self.idf(token)]

    def _fill(self, words: list[str], slots: np.ndarray) -> np.ndarray:
        """Give the words without a slot (-1 in `slots`) one, and return all the words' slots."""
        missing = np.flatnonzero(slots < 0)
        if len(self._slot) + len(missing) > len(self._idf) - 1:
            self._slot.clear()
            self._used = 1
            missing = np.arange(len(words))
            if len(words) > len(self._idf) - 1:  # one huge text: room for it, and no more
                self._allocate(len(words))
        new_words = [words[i] for i in missing]
        idf = np.array([self.idf(word) for word in new_words], dtype=np.float64)
        usable = np.flatnonzero(idf)
        new = np.zeros(len(new_words), dtype=np.intp)
        new[usable] = np.arange(self._used, self._used + len(usable))
        self._used += len(usable)
        self._slot.update(zip(new_words, new.tolist(), strict=True))
        slots[missing] = new
        new = new[usable]
        self._idf[new] = idf[usable]
        hashes = np.array(
            [mmh3.hash64(new_words[i], self.seed, signed=False)[0] for i in usable], dtype="<u8"
        )
        self._hash[new] = hashes
        self._tiebreak[new] = 1.0 + (hashes >> np.uint64(11)) * (2.0**-53 * 1e-9)
        return slots

    def weigh(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Return the slots and TF-IDF weights of the top-N usable tokens, and how many usable
        tokens the text has.

        Which tokens make the cut never depends on word order: equal weights are told apart
        by the tokens' hashes.
        """
        if _accelerated is not None and type(tokens) is list:
            slots = np.empty(len(tokens), np.intp)
            tf = np.empty(len(tokens), np.intp)
            found = _accelerated.count_slots(
                tokens, self._slot, slots.view(np.uintp), tf.view(np.uintp)
            )
            if found is not None:  # else a word is new: slotted below
                distinct, usable = found
                return self._top(slots[:distinct], tf[:distinct], usable)
        counts: dict[str, int] = {}
        _count_elements(counts, tokens)
        try:
            # itemgetter looks the words up in one C loop: faster than map(dict.get, ...).
            found = (
                itemgetter(*counts)(self._slot)
                if len(counts) > 1
                else [*map(self._slot.__getitem__, counts)]
            )
            slots = np.fromiter(found, np.intp, len(counts))  # twice as fast as np.array
        except KeyError:
            slots = np.fromiter(map(self._slot.get, counts, repeat(-1)), np.intp, len(counts))
            slots = self._fill(list(counts), slots)
        keep = slots.nonzero()[0]  # usable words only (slot 0 is the others'), in order
        slots = slots[keep]
        tf = np.fromiter(counts.values(), np.intp, len(counts))[keep]
        return self._top(slots, tf, int(tf.sum()))

    def _top(
        self, slots: np.ndarray, tf: np.ndarray, usable: int
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Return the top-N of the usable words in `slots` (in order of first occurrence), by
        TF-IDF, with their weights, and `usable`."""
        idf = self._idf[slots]
        weights = (_LOG_TF[np.minimum(tf, len(_LOG_TF) - 1)] if self.log_tf else tf) * idf
        if len(slots) > self.top_n:
            top = np.argpartition(weights * self._tiebreak[slots], -self.top_n)[-self.top_n :]
            slots, weights = slots[top], weights[top]
        return slots, weights, usable

    def hashes(self, slots: np.ndarray) -> np.ndarray:
        """Return the 64-bit hashes of the words in some slots."""
        return self._hash[slots]

    def simhash(self, slots: np.ndarray, weights: np.ndarray) -> int:
        """Return the SimHash of the weighted words in some slots (see fingerprint.simhash)."""
        # Each word's vote per bit, +1 where its hash has the bit set and -1 where not, looked
        # up byte by byte: a table of 256 x 8 votes stays in the CPU cache.
        signs = np.take(_SIGNS, self._hash[slots].view(np.uint8), axis=0)
        votes = np.dot(weights, signs.reshape(len(slots), 64))
        return int(np.packbits(votes > 0, bitorder="little").view("<u8")[0])
