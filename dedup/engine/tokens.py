"""Cut normalised text into tokens with jieba's dictionary and weigh them by TF-IDF."""

from __future__ import annotations

import re
from collections import _count_elements  # Counter's C loop, without Counter's overhead
from collections.abc import Callable
from functools import cache
from importlib import resources
from itertools import compress, repeat

import mmh3
import numpy as np

Cutter = Callable[[str], list[str]]

# 1 + ln(tf) for term frequencies up to 4095 (higher counts are capped: they never occur in
# articles, and the log barely moves there).
_LOG_TF = np.concatenate([[0.0], 1.0 + np.log(np.arange(1, 4096))])
# The +1/-1 votes of the 8 bits of every byte value, lowest bit first.
_SIGNS = (
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(
        np.int8
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

        return lambda text: rjieba.cut(text, hmm=True)
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
    text, and numpy does the rest. The slots are bounded, so memory stays flat on any stream.
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
        self._idf = np.zeros(size, dtype=np.float64)
        self._hash = np.zeros(size, dtype="<u8")
        # Multiplies a weight by 1 + (something far below any real difference between two
        # weights) taken from the hash, so that equal weights are told apart by their words.
        self._tiebreak = np.ones(size, dtype=np.float64)
        # Each word's vote per bit: +1 where its hash has the bit set, -1 where not.
        self._signs = np.zeros((size, 64), dtype=np.int8)

    def idf(self, word: str) -> float:
        """Return a word's IDF: 0 if unusable, the median if not in the dictionary."""
        value = self.known.get(word)
        if value is None:
            value = self.median_idf if is_usable(word, self.stop) else 0.0
        return value

    def usable(self, tokens: list[str]) -> list[str]:
        """Return the usable tokens, in order."""
        return [token for token in tokens if self.idf(token)]

    def _slots(self, words: list[str]) -> np.ndarray:
        slots = np.fromiter(map(self._slot.get, words, repeat(-1)), np.intp, len(words))
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            if len(self._slot) + len(missing) > len(self._idf):
                self._slot.clear()
                missing = np.arange(len(words))
                if len(words) > len(self._idf):  # one huge text: room for it, and no more
                    self._allocate(len(words))
            new_words = [words[i] for i in missing]
            start = len(self._slot)
            new = np.arange(start, start + len(new_words))
            self._slot.update(zip(new_words, range(start, start + len(new_words)), strict=True))
            slots[missing] = new
            self._idf[new] = [self.idf(word) for word in new_words]
            hashes = np.array(
                [mmh3.hash64(word, self.seed, signed=False)[0] for word in new_words], dtype="<u8"
            )
            self._hash[new] = hashes
            self._signs[new] = _SIGNS[hashes.view(np.uint8)].reshape(len(new_words), 64)
            self._tiebreak[new] = 1.0 + (hashes >> np.uint64(11)) * (2.0**-53 * 1e-9)
        return slots

    def weigh(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Return the slots and TF-IDF weights of the top-N usable tokens, and how many usable
        tokens the text has.

        Which tokens make the cut never depends on word order: equal weights are told apart
        by the tokens' hashes.
        """
        counts: dict[str, int] = {}
        _count_elements(counts, tokens)
        # One-character tokens (and separators) are never usable: skip them at C speed.
        longer = list(map((1).__lt__, map(len, counts)))
        words = list(compress(counts, longer))
        slots = self._slots(words)
        idf = self._idf[slots]
        tf = np.fromiter(compress(counts.values(), longer), np.intp, len(words))
        keep = np.flatnonzero(idf)  # usable words only
        slots, tf = slots[keep], tf[keep]
        weights = (_LOG_TF[np.minimum(tf, len(_LOG_TF) - 1)] if self.log_tf else tf) * idf[keep]
        if len(slots) > self.top_n:
            top = np.argpartition(weights * self._tiebreak[slots], -self.top_n)[-self.top_n :]
            slots, weights = slots[top], weights[top]
        usable = int(tf.sum())
        return slots, weights, usable

    def hashes(self, slots: np.ndarray) -> np.ndarray:
        """Return the 64-bit hashes of the words in some slots."""
        return self._hash[slots]

    def simhash(self, slots: np.ndarray, weights: np.ndarray) -> int:
        """Return the SimHash of the weighted words in some slots (see fingerprint.simhash)."""
        votes = weights @ self._signs[slots]
        return int(np.packbits(votes > 0, bitorder="little").view("<u8")[0])
