"""The final judgement: candidates from the segment index, verified by exact similarity.

SimHash is the fast first pass. Every article also gets, once, what verification needs, so an
old article is never tokenised again:

- its *passages*: the normalised text cut at sentence ends (short sentences join the next);
- its *shingles*: the set of hashed character 4-grams of each passage (separators dropped),
  about two Chinese words each, so they work for short texts and any script alike; 32 bits
  each (two articles of 2,000 shingles share one by chance about once in a thousand pairs),
  which halves what verification reads and what is stored;
- a *passage key* per passage: the least 64-bit hash among its grams (a one-hash MinHash),
  equal for two copies of a passage, and for two edited copies as often as their shingles
  overlap.

Candidate pairs come from the segment index twice: article fingerprints within `k_article`,
and equal passage keys (a repost inside a bigger page keeps its passages even when the page's
fingerprint drifts far). Every candidate is verified on the shingle sets, by merging the two
sorted arrays (dedup.engine.merge): *near* when their Jaccard similarity reaches `near`,
*partial* when a large share of the smaller one is contained in the other (`partial`); the
shared passages say where.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dedup.engine import merge
from dedup.engine.config import Config
from dedup.engine.fingerprint import MAX_JUNK_SHARE, Fingerprint, Fingerprinter, Status
from dedup.engine.merge import partial_passages, shared_counts
from dedup.engine.pairs import pairs, pairs_within_runs
from dedup.engine.text import junk_share, normalise, strip_html

# Sentence ends get a blank line after them before normalising: normalised text keeps blank
# lines, so passages can be cut there.
_SENTENCE_ENDS = "。！？；!?;"
# Code point -> kept (not a separator); every code point from len(_KEPT) - 1 up is kept.
_KEPT = np.ones(ord(",") + 2, dtype=bool)
_KEPT[[ord(","), ord(" "), ord("\n")]] = False
GRAM = 4
MIN_PASSAGE_GRAMS = 12  # shorter sentences join the next one
# Passages shared by more articles than this are boilerplate (navigation, footers): not used
# to find candidates, so that one template cannot make every page a candidate of every other.
MAX_PASSAGE_OWNERS = 20
# Packed features (Features.to_bytes): magic, format, flags, fingerprint, length, shingle
# count, passage count; little-endian. Then the shingles (u4), the passage of each (u2, or u4
# with the WIDE flag: more than 65,536 passages), the passage keys (u8).
_FEATURES_MAGIC = b"DDF\x00"
FEATURES_FORMAT = 2
_FEATURES_HEADER = struct.Struct("<4sBBQQII")
_HAS_FINGERPRINT, _WIDE = 1, 2
# The gram hash's multipliers (see _gram_hashes).
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_PRIME_2 = np.uint64(0xC2B2AE3D27D4EB4F)
_ACROSS = np.uint32(0xFFFFFFFF)  # the passage of a gram across a passage boundary
_LITTLE = sys.byteorder == "little"


@dataclass(frozen=True)
class Features:
    """What matching and verification need of one article, computed once."""

    fingerprint: int | None  # the article's SimHash
    length: int  # characters of normalised text, separators excluded
    shingles: np.ndarray  # sorted distinct uint32 hashes of character 4-grams
    passage_of: np.ndarray  # uint32, for each shingle the first passage it occurs in
    passage_keys: np.ndarray  # uint64, one per passage: its least 64-bit gram hash
    passage_sizes: np.ndarray  # distinct shingles first seen in each passage

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
        )
        return b"".join(
            [
                header,
                np.ascontiguousarray(self.shingles, dtype="<u4").tobytes(),
                np.ascontiguousarray(self.passage_of, dtype="<u4" if wide else "<u2").tobytes(),
                np.ascontiguousarray(self.passage_keys, dtype="<u8").tobytes(),
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
        _, _, flags, fingerprint, length, shingles, passages = _FEATURES_HEADER.unpack_from(data)
        of = "<u4" if flags & _WIDE else "<u2"
        if len(data) != size + shingles * (4 + int(of[-1])) + passages * 8:
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
        )


@dataclass(frozen=True)
class Duplicate:
    """A verified pair: kind, distance, similarity and the passages they share."""

    a: int
    b: int
    kind: str  # "near" (the same article, edited) or "partial" (one contains most of the other)
    distance: int | None  # Hamming distance of the article fingerprints
    similarity: float  # Jaccard for near; containment of the smaller article for partial
    shared_passages: list[tuple[int, int]] = field(default_factory=list)  # partial only


class Detector:
    """Fingerprint, index, verify: the recommended settings are the defaults."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        k_article: int = 4,
        near: float = 0.4,
        partial: float = 0.4,
        min_shared: int = 60,  # shared shingles (about characters) a partial copy needs
    ) -> None:
        self.fingerprinter = Fingerprinter(config)
        self.config = self.fingerprinter.config
        self.k_article = k_article
        self.near = near
        self.partial = partial
        self.min_shared = min_shared
        self._config_no_html = self.config.replace(strip_html=False)

    # --- features ---------------------------------------------------------------------------

    def _normalised_passages(self, text: str) -> str:
        marked = strip_html(text) if self.config.strip_html else text
        for end in _SENTENCE_ENDS:
            if end in marked:
                marked = marked.replace(end, end + "\n\n")
        return normalise(marked, self._config_no_html)

    def _fingerprint(self, text: str, normal: str) -> Fingerprint:
        # The sentence marks are separators, like the punctuation they follow: the article's
        # fingerprint from this text equals Fingerprinter.fingerprint(text), one normalisation
        # cheaper (a test checks).
        fp = self.fingerprinter
        if junk_share(text) > MAX_JUNK_SHARE:
            return Fingerprint(None, Status.BINARY, 0, fp.version)
        if not normal.strip():
            return Fingerprint(None, Status.EMPTY, 0, fp.version)
        return fp.fingerprint_tokens(fp._cut(normal))

    def passages(self, text: str) -> list[str]:
        """Return a text's passages, normalised, numbered as in `Duplicate.shared_passages`."""
        normal = self._normalised_passages(text)
        _, lengths = _codes_and_passages(normal)
        codes = np.frombuffer(normal.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        where = np.flatnonzero(_KEPT.take(codes, mode="clip"))  # kept code points in the text
        ends = np.cumsum(lengths, dtype=np.int64)
        return [
            normal[int(where[end - length]) : int(where[end - 1]) + 1].replace("\n", " ")
            for end, length in zip(ends.tolist(), lengths, strict=True)
        ]

    def features(self, text: str) -> Features:
        """Compute what matching and verification need of one article."""
        return self.fingerprint_and_features(text)[1]

    def fingerprint_and_features(self, text: str) -> tuple[Fingerprint, Features]:
        """Compute an article's fingerprint (with status and tokens) and its features."""
        normal = self._normalised_passages(text)
        fp = self._fingerprint(text, normal)
        if merge._native is not None:
            return fp, _features_native(fp.value, normal)
        return fp, _features_numpy(fp.value, normal)

    # --- matching ---------------------------------------------------------------------------

    def candidates(self, features: list[Features]) -> np.ndarray:
        """Return candidate pairs (a < b) from article and passage fingerprints: (m, 2)."""
        found = [np.empty((0, 2), np.int64)]
        with_fp = np.array([i for i, f in enumerate(features) if f.fingerprint is not None])
        if len(with_fp) > 1:
            values = np.array([features[i].fingerprint for i in with_fp], dtype=np.uint64)
            near = pairs(values, self.k_article)
            found.append(np.stack([with_fp[near.a], with_fp[near.b]], axis=1))
        values = np.concatenate([f.passage_keys for f in features] or [[]]).astype(np.uint64)
        if len(values) > 1:
            owners = np.repeat(np.arange(len(features)), [len(f.passage_keys) for f in features])
            # Articles holding one passage key: runs of it, once sorted. A key in many
            # articles is boilerplate (a menu, a footer) and finds nothing worth finding.
            order = np.argsort(values, kind="stable")
            values = values[order]
            starts = np.flatnonzero(np.diff(values, prepend=~values[:1]))
            counts = np.diff(starts, append=len(values))
            useful = (counts > 1) & (counts <= MAX_PASSAGE_OWNERS)
            i, j = pairs_within_runs(starts[useful], counts[useful])
            a, b = owners[order[i]], owners[order[j]]
            other = a != b
            found.append(np.stack([np.minimum(a, b)[other], np.maximum(a, b)[other]], axis=1))
        both = np.concatenate(found)
        # Each pair once, sorted: as one integer each (a row-wise unique is many times slower).
        unique = np.unique(both[:, 0] * len(features) + both[:, 1])
        return np.stack([unique // len(features), unique % len(features)], axis=1)

    def judge(self, a: int, b: int, fa: Features, fb: Features) -> Duplicate | None:
        """Verify one candidate pair; return the verdict, or None if they are not duplicates."""
        found = self.judge_many(a, fa, [(b, fb)])
        return found[0] if found else None

    def judge_many(
        self, a: int, fa: Features, others: Sequence[tuple[int, Features]]
    ) -> list[Duplicate]:
        """Verify one article against its candidates at once; return the duplicates, in order."""
        if not others:
            return []
        # How many shingles each candidate shares with the article: one merge each, all in
        # one call; then the verdicts, from sizes and counts alone.
        x = fa.shingles
        counts = shared_counts(x, [fb.shingles for _, fb in others])
        found = []
        near, partial, min_shared = self.near, self.partial, self.min_shared
        for (b, fb), shared in zip(others, counts, strict=True):
            if not shared:
                continue
            size = len(fb.shingles)
            small, big = (len(x), size) if len(x) <= size else (size, len(x))
            jaccard = shared / (small + big - shared)
            containment = shared / small
            contained = containment >= partial and shared >= min_shared
            if contained and big >= 1.5 * small:  # one article inside a bigger page
                kind, similarity = "partial", containment
            elif jaccard >= near:
                kind, similarity = "near", jaccard
            elif contained:
                kind, similarity = "partial", containment
            else:
                continue
            distance = None
            if fa.fingerprint is not None and fb.fingerprint is not None:
                distance = (fa.fingerprint ^ fb.fingerprint).bit_count()
            # Shared passages say where a partial copy sits; a near copy shares (nearly) all
            # of them, which a side-by-side diff shows better, so they are left out there.
            passages = partial_passages(fa, fb) if kind == "partial" else []
            found.append(Duplicate(a, b, kind, distance, round(similarity, 4), passages))
        return found

    def duplicates(self, features: list[Features]) -> list[Duplicate]:
        """Return every verified duplicate pair among the articles, each once, in order."""
        return self.verify(features, self.candidates(features))

    def verify(self, features: list[Features], pairs_: np.ndarray) -> list[Duplicate]:
        """Verify candidate pairs (a < b, sorted by a, as from `candidates`); return the
        duplicates, in order."""
        found: list[Duplicate] = []
        if not len(pairs_):
            return found
        starts = np.flatnonzero(np.diff(pairs_[:, 0], prepend=-1))
        ends = np.append(starts[1:], len(pairs_))
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            a = int(pairs_[start, 0])
            others = [(b, features[b]) for b in pairs_[start:end, 1].tolist()]
            found += self.judge_many(a, features[a], others)
        return found


def _features_numpy(fingerprint: int | None, normal: str) -> Features:
    """Return an article's features from its normalised text, with numpy."""
    codes, lengths = _codes_and_passages(normal)
    n = len(codes) - GRAM + 1
    if n <= 0:
        return _no_features(fingerprint, len(codes))
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
        length=len(codes),
        shingles=values[first],
        passage_of=passage_of,
        passage_keys=keys,
        passage_sizes=np.bincount(passage_of, minlength=count),
    )


def _features_native(fingerprint: int | None, normal: str) -> Features:
    """Return what _features_numpy returns, the gram table made by the compiled module."""
    least = MIN_PASSAGE_GRAMS + GRAM - 1
    packed = np.empty(max(len(normal) - GRAM + 1, 1), np.uint64)
    keys = np.empty(len(normal) // least + 2, np.uint64)
    length, n, count = merge._native.grams(normal, least, packed, keys)
    if n <= 0:
        return _no_features(fingerprint, length)
    packed = packed[:n]
    packed.sort()
    shingles, passage_of = np.empty(n, np.uint32), np.empty(n, np.uint32)
    kept = merge._native.firsts(packed, shingles, passage_of)
    passage_of = passage_of[:kept]
    return Features(
        fingerprint=fingerprint,
        length=length,
        shingles=shingles[:kept],
        passage_of=passage_of,
        passage_keys=keys[:count],
        passage_sizes=np.bincount(passage_of, minlength=count),
    )


def _no_features(fingerprint: int | None, length: int) -> Features:
    """Return the features of a text of fewer than GRAM code points (separators aside)."""
    none = np.empty(0, np.uint32)
    return Features(fingerprint, length, none, none, np.empty(0, np.uint64), np.empty(0, np.intp))


def _codes_and_passages(normal: str) -> tuple[np.ndarray, list[int]]:
    """Return the code points without separators, and the length of each passage in them."""
    kept = normal.replace(",", "").replace(" ", "")
    # Lines, then passages: each short line joins the next, and a short tail the one before.
    least = MIN_PASSAGE_GRAMS + GRAM - 1
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
