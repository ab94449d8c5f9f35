"""What verification needs of an article, computed once: passages, shingles, passage keys.

- its *units*: in scripts written without spaces (Chinese, Japanese, Thai...) each character,
  in scripts written with spaces (Latin, Greek, Cyrillic...) each word or number. A unit
  carries about the same information in every script (a Chinese character and an English word
  both take about 10 bits to tell apart), so a shared gram of units means the same thing in
  any of them; character 4-grams of English text ("tion", "ther") are shared by chance by any
  two English texts;
- its *passages*: the normalised text cut at sentence ends (short sentences join the next);
- its *shingles*: the set of hashed 4-grams of units of each passage (separators dropped),
  about two Chinese words or four English words each; 32 bits each (two articles of 2,000
  shingles share one by chance about once in a thousand pairs), which halves what
  verification reads and what is stored;
- a *passage key* per passage: the least 64-bit hash among its grams (a one-hash MinHash),
  equal for two copies of a passage, and for two edited copies as often as their shingles
  overlap;
- its *facts*: for each number (a date, a score, a price, a phone number), the shingles of
  the grams that hold it, which a copy keeps and a template filled in again changes.

A word becomes one unit by being written as one code point of the private-use planes (15 and
16, which normalised text never holds: normalising turns them into separators), chosen by a
hash of the word; then the compiled module (dedup.engine._native) makes the gram table in one
pass when it is built, and numpy the same one otherwise (a test compares them on any text).
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dedup.engine import merge, native
from dedup.engine.facts import (
    PLACES,
    fact_ids,
    fact_keys,
    fact_places,
    fact_shingles,
    number_table,
)
from dedup.engine.passages import passage_lines
from dedup.engine.units import (  # noqa: F401 (callers')
    as_units,
    as_units_and_numbers,
    kept_characters,
    units_of,
)

# Code point -> kept (not a separator); every code point from len(KEPT_UNITS) - 1 up is kept.
KEPT_UNITS = np.ones(ord(",") + 2, dtype=bool)
KEPT_UNITS[[ord(","), ord(" "), ord("\n")]] = False
GRAM = native.GRAM
# Packed features (Features.to_bytes): magic, format, flags, fingerprint, length, shingle
# count, passage count, unit count, fact count; little-endian. Then the shingles (u4), the
# passage of each (u2, or u4 with the WIDE flag: more than 65,536 passages), the passage keys
# (u8), the facts (u4), the places of the numbers (u4, PLACES per GRAM facts).
_FEATURES_MAGIC = b"DDF\x00"
# 3: units and the unit count in the header; 4: mail headers left out; 5: the facts; 6: passages
# cut where wrapped lines and list items are marked (dedup.engine.marks); 7: a heading before a
# list is a passage of its own; 8: fact keys of windows of two numbers (dedup.engine.facts; not
# packed, but stored as passage-key rows, which a rebuild writes again); 9: each number's place
# (dedup.engine.facts.fact_places), after the facts; 10: each number's id (units.number_id),
# after the places
FEATURES_FORMAT = 10
_FEATURES_HEADER = struct.Struct("<4sBBQQIIII")
_HAS_FINGERPRINT, _WIDE = 1, 2
# The gram hash's multipliers (see _gram_hashes).
_PRIME = np.uint64(native.PRIME)
_PRIME_2 = np.uint64(native.PRIME_2)
_ACROSS = np.uint32(native.ACROSS)  # the passage of a gram across a passage boundary
_LITTLE = sys.byteorder == "little"


@dataclass(frozen=True)
class Features:
    """What matching and verification need of one article, computed once."""

    fingerprint: int | None  # the article's SimHash
    length: int  # characters of normalised text, separators excluded
    shingles: np.ndarray  # sorted distinct uint32 hashes of 4-grams of units
    passage_of: np.ndarray  # uint32, for each shingle the first passage it occurs in
    passage_keys: np.ndarray  # uint64, one per passage: its least 64-bit gram hash
    passage_sizes: np.ndarray  # distinct shingles first seen in each passage
    units: int = -1  # units (characters, or words of spaced scripts); -1: as many as length
    # uint32, GRAM per number in text order: the shingles of its grams (see fact_shingles)
    facts: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))
    # uint32, PLACES per number in text order: the shingles of its places (see fact_places)
    places: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))
    # uint32, one per number in text order: the number's own id (see fact_ids)
    number_ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))

    @property
    def unit_count(self) -> int:
        """Return the article's units (characters of unspaced scripts, words of others)."""
        return self.length if self.units < 0 else self.units

    @property
    def characters_per_unit(self) -> float:
        """Return the article's characters per unit: 1 in Chinese, about 5 in English."""
        return self.length / self.unit_count if self.unit_count else 1.0

    @cached_property
    def fact_set(self) -> np.ndarray:
        """Return the shingles of the grams that hold a number, sorted and distinct."""
        return np.unique(self.facts[self.facts != 0])

    @cached_property
    def number_table(self) -> tuple:
        """Return its numbers' passages, grams, order and places (facts.number_table)."""
        return number_table(self)

    @cached_property
    def place_set(self) -> np.ndarray:
        """Return the shingles of its numbers' places, sorted and distinct."""
        return np.unique(self.places[self.places != 0])

    @cached_property
    def id_set(self) -> np.ndarray:
        """Return the ids of its numbers, sorted and distinct."""
        return np.unique(self.number_ids)

    @cached_property
    def fact_keys(self) -> np.ndarray:
        """Return the fact keys of its passages that state numbers (dedup.engine.facts)."""
        return fact_keys(self)

    @cached_property
    def half_passages(self) -> np.ndarray:
        """Return, per passage, how many of its shingles make most of it (at least one)."""
        return ((np.maximum(self.passage_sizes, 1) + 1) // 2).astype(np.uint32)

    def to_bytes(self) -> bytes:
        """Pack into bytes for storage: a small versioned header, then the arrays."""
        wide = len(self.passage_keys) > 1 << 16
        flags = (_HAS_FINGERPRINT if self.fingerprint is not None else 0) | (_WIDE if wide else 0)
        header = _FEATURES_HEADER.pack(
            _FEATURES_MAGIC,
            FEATURES_FORMAT,
            flags,
            self.fingerprint or 0,
            self.length,
            len(self.shingles),
            len(self.passage_keys),
            self.unit_count,
            len(self.facts),
        )
        return b"".join(
            [
                header,
                np.ascontiguousarray(self.shingles, dtype="<u4").tobytes(),
                np.ascontiguousarray(self.passage_of, dtype="<u4" if wide else "<u2").tobytes(),
                np.ascontiguousarray(self.passage_keys, dtype="<u8").tobytes(),
                np.ascontiguousarray(self.facts, dtype="<u4").tobytes(),
                np.ascontiguousarray(self.places, dtype="<u4").tobytes(),
                np.ascontiguousarray(self.number_ids, dtype="<u4").tobytes(),
            ]
        )

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Features:
        """Unpack what `to_bytes` packed; raise ValueError if it is not such data."""
        data = bytes(data)
        size = _FEATURES_HEADER.size
        if len(data) < 5 or data[:4] != _FEATURES_MAGIC:
            raise ValueError("not packed features: recompute them with Detector.features")
        if data[4] != FEATURES_FORMAT:
            raise ValueError(
                f"packed features of format {data[4]}, this version reads {FEATURES_FORMAT}: "
                "recompute them with Detector.features"
            )
        if len(data) < size:
            raise ValueError("packed features are truncated: recompute them")
        header = _FEATURES_HEADER.unpack_from(data)
        _, _, flags, fingerprint, length, shingles, passages, units, facts = header
        of = "<u4" if flags & _WIDE else "<u2"
        places = facts // GRAM * PLACES
        ids = facts // GRAM
        numbers = (facts + places + ids) * 4
        if len(data) != size + shingles * (4 + int(of[-1])) + passages * 8 + numbers:
            raise ValueError("packed features are truncated or too long: recompute them")
        at = size

        def take(dtype: str, count: int, native: type) -> np.ndarray:
            nonlocal at
            array = np.frombuffer(data, dtype=dtype, count=count, offset=at)
            at += array.nbytes
            return array.astype(native)  # a writable, aligned copy in native order

        shingle_values = take("<u4", shingles, np.uint32)
        passage_of = take(of, shingles, np.uint32)
        return cls(
            fingerprint=fingerprint if flags & _HAS_FINGERPRINT else None,
            length=length,
            shingles=shingle_values,
            passage_of=passage_of,
            passage_keys=take("<u8", passages, np.uint64),
            passage_sizes=np.bincount(passage_of, minlength=passages),
            units=units,
            facts=take("<u4", facts, np.uint32),
            places=take("<u4", places, np.uint32),
            number_ids=take("<u4", ids, np.uint32),
        )


def features_of(fingerprint: int | None, normal: str) -> Features:
    """Return an article's features from its passage-marked normalised text (see
    Detector.fingerprint_and_features)."""
    length = kept_characters(normal)
    in_units, numbers, ids = as_units_and_numbers(normal)
    units = passage_lines(in_units)
    if merge.accelerated is not None:
        features = _features_native(fingerprint, units, length)
    else:
        features = _features_numpy(fingerprint, units, length)
    if merge.accelerated is not None:  # the three in one pass
        found = merge.accelerated.number_facts(units, ids) if ids else None
        if found is not None:
            facts, places, number_ids = (np.frombuffer(b, np.uint32) for b in found)
            object.__setattr__(features, "facts", facts)
            object.__setattr__(features, "places", places)
            object.__setattr__(features, "number_ids", number_ids)
        return features
    facts = fact_shingles(units, numbers)
    if len(facts):
        object.__setattr__(features, "facts", facts)
        object.__setattr__(features, "places", fact_places(units, numbers))
        object.__setattr__(features, "number_ids", fact_ids(units, numbers, ids))
    return features


def _features_numpy(fingerprint: int | None, normal: str, characters: int) -> Features:
    """Return an article's features from its normalised text in units, with numpy."""
    codes, lengths = codes_and_passages(normal)
    n = len(codes) - GRAM + 1
    if n <= 0:
        return _no_features(fingerprint, characters, len(codes))
    # Few numpy calls, each on the whole article: between two articles' word cuts the
    # CPU caches are cold, and there a call costs more than its elements.
    grams = _gram_hashes(codes, n)
    if not _LITTLE:
        grams = grams.astype("<u8")
    # Each passage's grams, then the (GRAM - 1) grams across its end into the next one.
    runs, starts, end = [], [], 0
    for length in lengths:
        starts += (end, end + length - GRAM + 1)
        runs += (length - GRAM + 1, GRAM - 1)
        end += length
    del starts[-1], runs[-1]  # the text's end is no boundary
    keys = np.minimum.reduceat(grams, starts)[::2]
    # One sort of (shingle: the high half of the hash, passage): each distinct shingle's
    # first entry then has the first passage it occurs in. Grams across a boundary get
    # passage _ACROSS, and go.
    count = len(lengths)
    owners = _OWNERS[: 2 * count - 1] if count <= _MAX_OWNED else _owners(count)
    words = grams.view("<u4")
    words[0::2] = np.repeat(owners, runs)
    grams.sort()
    values, passages = words[1::2], words[0::2]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    first &= passages != _ACROSS
    passage_of = passages[first]
    return Features(
        fingerprint=fingerprint,
        length=characters,
        shingles=values[first],
        passage_of=passage_of,
        passage_keys=keys,
        passage_sizes=np.bincount(passage_of, minlength=count),
        units=len(codes),
    )


def _features_native(fingerprint: int | None, normal: str, length: int) -> Features:
    """Return what _features_numpy returns, the gram table made by the compiled module."""
    least = _LINE_LEAST
    packed = np.empty(max(len(normal) - GRAM + 1, 1), np.uint64)
    keys = np.empty(len(normal) // least + 2, np.uint64)
    units, n, count = merge.accelerated.grams(normal, least, packed, keys)
    if n <= 0:
        return _no_features(fingerprint, length, units)
    packed = packed[:n]
    packed.sort()
    shingles, passage_of = np.empty(n, np.uint32), np.empty(n, np.uint32)
    kept = merge.accelerated.firsts(packed, shingles, passage_of)
    passage_of = passage_of[:kept]
    return Features(
        fingerprint=fingerprint,
        length=length,
        shingles=shingles[:kept],
        passage_of=passage_of,
        passage_keys=keys[:count],
        passage_sizes=np.bincount(passage_of, minlength=count),
        units=units,
    )


def _no_features(fingerprint: int | None, length: int, units: int) -> Features:
    """Return the features of a text of fewer than GRAM units (separators aside)."""
    none = np.empty(0, np.uint32)
    return Features(
        fingerprint, length, none, none, np.empty(0, np.uint64), np.empty(0, np.intp), units
    )


# passage_lines cut the passages: a line of GRAM units or more is one (only a whole text of
# fewer is shorter, and it has no grams).
_LINE_LEAST = GRAM


def codes_and_passages(normal: str) -> tuple[np.ndarray, list[int]]:
    """Return the code points without separators, and the length of each passage in them,
    from passage_lines' text."""
    kept = normal.replace(",", "").replace(" ", "")
    # Lines, then passages: each short line joins the next, and a short tail the one before.
    least = _LINE_LEAST
    lengths, running = [], 0
    for size in filter(None, map(len, kept.split("\n"))):  # empty lines go at C speed
        running += size
        if running >= least:
            lengths.append(running)
            running = 0
    if running:
        if lengths:
            lengths[-1] += running
        else:
            lengths.append(running)
    text = kept.replace("\n", "")
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4"), lengths


def _gram_hashes(codes: np.ndarray, n: int) -> np.ndarray:
    """Return the 64-bit hash of each of the first n character 4-grams of the code points."""
    # Two code points as one 64-bit value (an unaligned view, no copy): a 4-gram is the pair
    # at i and the pair at i + 2, hashed by multiplying: the high bits of the product mix
    # all four (the high 32 bits of distinct grams collide as often as random numbers do).
    pairs_ = np.ndarray((len(codes) - 1,), dtype="<u8", buffer=codes, strides=(4,))
    h = pairs_[2 : n + 2] * _PRIME_2
    h += pairs_[:n]
    h *= _PRIME
    return h


def _owners(count: int) -> np.ndarray:
    """Return 0, _ACROSS, 1, _ACROSS, .., count - 1: the passage of each run of grams."""
    owners = np.full(2 * count - 1, _ACROSS, dtype=np.uint32)
    owners[0::2] = np.arange(count, dtype=np.uint32)
    return owners


_MAX_OWNED = 1 << 12
_OWNERS = _owners(_MAX_OWNED)  # made once; articles of more passages make their own
