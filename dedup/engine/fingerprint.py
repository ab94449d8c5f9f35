"""SimHash fingerprints: text in, one 64-bit integer out (Charikar 2002)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import mmh3
import numpy as np

from dedup.engine.config import Config
from dedup.engine.text import junk_share, normalise
from dedup.engine.tokens import Weigher, cutter

BITS = 64
# Text with more junk than this (control codes, replacement marks) is binary, not an article.
MAX_JUNK_SHARE = 0.1


class Status(enum.StrEnum):
    """Why a text did or did not get a fingerprint."""

    OK = "ok"
    EMPTY = "empty"  # nothing but whitespace, markup or punctuation
    NO_WORDS = "no_words"  # text, but no usable word (numbers, one-character noise, stop words)
    BINARY = "binary"  # control codes or undecodable bytes, not text


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A text's fingerprint, or the reason it has none, and the configuration that made it."""

    value: int | None
    status: Status
    tokens: int
    version: str

    @property
    def hex(self) -> str | None:
        """Return the value as 16 lowercase hex digits, or None."""
        return None if self.value is None else f"{self.value:016x}"


def word_hash(word: str, seed: int = 0) -> int:
    """Return the 64-bit MurmurHash3 of a word (the first half of its x64 128-bit hash)."""
    return mmh3.hash64(word, seed, signed=False)[0]


def simhash_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Return the SimHash of weighted 64-bit hashes: per bit, the sign of the weighted vote."""
    if not len(hashes):
        raise ValueError("simhash needs at least one word; check the status first")
    hashes = np.ascontiguousarray(hashes, dtype="<u8")
    bits = np.unpackbits(hashes.view(np.uint8), bitorder="little").reshape(len(hashes), BITS)
    # A bit is set where the words with it outweigh the words without it.
    set_bits = 2.0 * (weights @ bits) > weights.sum()
    return int(np.packbits(set_bits, bitorder="little").view("<u8")[0])


def simhash(words: Iterable[tuple[str, float]], seed: int = 0) -> int:
    """Return the SimHash of (word, weight) pairs."""
    words = list(words)
    hashes = np.array([word_hash(w, seed) for w, _ in words], dtype="<u8")
    return simhash_hashes(hashes, np.array([wt for _, wt in words], dtype=np.float64))


class Fingerprinter:
    """Fingerprint texts with one configuration; build once, reuse for many texts."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or Config()
        self.version = self.config.version
        self._cut = cutter(self.config.tokenizer)
        self.weigher = Weigher(
            top_n=self.config.top_n,
            tf=self.config.tf,
            seed=self.config.seed,
            # A stop word must look like the tokens it is to catch: normalised alike.
            extra_stop_words=tuple(self.normalise(w) for w in self.config.extra_stop_words),
        )

    def normalise(self, text: str) -> str:
        """Return the text as the tokenizer sees it."""
        return normalise(text, self.config)

    def tokens(self, text: str) -> list[str]:
        """Return the usable tokens of a text, in order."""
        return self.weigher.usable(self._cut(self.normalise(text)))

    def fingerprint(self, text: str) -> Fingerprint:
        """Fingerprint one text."""
        if junk_share(text) > MAX_JUNK_SHARE:
            return Fingerprint(None, Status.BINARY, 0, self.version)
        normal = self.normalise(text)
        if not normal.strip():
            return Fingerprint(None, Status.EMPTY, 0, self.version)
        return self.fingerprint_tokens(self._cut(normal))

    def fingerprint_tokens(self, tokens: list[str]) -> Fingerprint:
        """Fingerprint a text already cut into tokens (usable or not)."""
        slots, weights, usable = self.weigher.weigh(tokens)
        if not usable:
            return Fingerprint(None, Status.NO_WORDS, 0, self.version)
        return Fingerprint(self.weigher.simhash(slots, weights), Status.OK, usable, self.version)

    def fingerprint_many(self, texts: Iterable[str]) -> Iterator[Fingerprint]:
        """Fingerprint texts one after another, lazily."""
        for text in texts:
            yield self.fingerprint(text)
