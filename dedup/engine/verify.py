"""The final judgement: candidates from the segment index, verified by exact similarity.

SimHash is the fast first pass. Every article also gets, once, what verification needs, so an
old article is never tokenised again:

- its *passages*: the normalised text cut at sentence ends (short sentences join the next);
- its *shingles*: the set of hashed character 4-grams of each passage (separators dropped),
  about two Chinese words each, so they work for short texts and any script alike;
- a *passage key* per passage: the least hash among its shingles (a one-hash MinHash), equal
  for two copies of a passage, and for two edited copies as often as their shingles overlap.

Candidate pairs come from the segment index twice: article fingerprints within `k_article`,
and equal passage keys (a repost inside a bigger page keeps its passages even when the page's
fingerprint drifts far). Each candidate is then verified on the shingle sets: *near* when
their Jaccard similarity reaches `near`, *partial* when a large share of the smaller one is
contained in the other (`partial`); the shared passages say where.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dedup.engine.config import Config
from dedup.engine.fingerprint import MAX_JUNK_SHARE, Fingerprint, Fingerprinter, Status
from dedup.engine.pairs import pairs
from dedup.engine.text import junk_share, normalise, strip_html

# Sentence ends get a blank line after them before normalising: normalised text keeps blank
# lines, so passages can be cut there.
_SENTENCE_ENDS = "。！？；!?;"
_BREAK = ord("\n")
_SEPARATORS = np.array([ord(","), ord(" "), ord("\n")], dtype=np.uint32)
GRAM = 4
MIN_PASSAGE_GRAMS = 12  # shorter sentences join the next one
# Passages shared by more articles than this are boilerplate (navigation, footers): not used
# to find candidates, so that one template cannot make every page a candidate of every other.
MAX_PASSAGE_OWNERS = 20
# Packed features (Features.to_bytes): magic, format, has fingerprint, fingerprint, length,
# shingle count, passage count; little-endian.
_FEATURES_MAGIC = b"DDF\x00"
_FEATURES_FORMAT = 1
_FEATURES_HEADER = struct.Struct("<4sB?QQII")
_MIX = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
    np.uint64(0xD6E8FEB86659FD93),
)


@dataclass(frozen=True)
class Features:
    """What matching and verification need of one article, computed once."""

    fingerprint: int | None  # the article's SimHash
    length: int  # characters of normalised text, separators excluded
    shingles: np.ndarray  # sorted distinct uint64 hashes of character 4-grams
    passage_of: np.ndarray  # for each shingle, the first passage it occurs in
    passage_keys: np.ndarray  # uint64, one per passage: its least shingle
    passage_sizes: np.ndarray  # distinct shingles first seen in each passage

    def to_bytes(self) -> bytes:
        """Pack into bytes for storage: a small versioned header, then the arrays."""
        fingerprint = 0 if self.fingerprint is None else self.fingerprint
        header = _FEATURES_HEADER.pack(
            _FEATURES_MAGIC,
            _FEATURES_FORMAT,
            self.fingerprint is not None,
            fingerprint,
            self.length,
            len(self.shingles),
            len(self.passage_keys),
        )
        return b"".join(
            [
                header,
                np.ascontiguousarray(self.shingles, dtype="<u8").tobytes(),
                np.ascontiguousarray(self.passage_of, dtype="<i4").tobytes(),
                np.ascontiguousarray(self.passage_keys, dtype="<u8").tobytes(),
                np.ascontiguousarray(self.passage_sizes, dtype="<i8").tobytes(),
            ]
        )

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Features:
        """Unpack what `to_bytes` packed; raise ValueError if it is not such data."""
        data = bytes(data)
        size = _FEATURES_HEADER.size
        if len(data) < size or data[:4] != _FEATURES_MAGIC:
            raise ValueError("not packed features: recompute them with Detector.features")
        _, version, has_fp, fingerprint, length, shingles, passages = _FEATURES_HEADER.unpack_from(
            data
        )
        if version != _FEATURES_FORMAT:
            raise ValueError(
                f"packed features of format {version}, this version reads {_FEATURES_FORMAT}: "
                "recompute them with Detector.features"
            )
        if len(data) != size + shingles * 12 + passages * 16:
            raise ValueError("packed features are truncated or too long: recompute them")
        at = size

        def take(dtype: str, count: int, width: int) -> np.ndarray:
            nonlocal at
            array = np.frombuffer(data, dtype=dtype, count=count, offset=at)
            at += count * width
            return array.astype(dtype.replace("<", "="), copy=True)

        return cls(
            fingerprint=fingerprint if has_fp else None,
            length=length,
            shingles=take("<u8", shingles, 8),
            passage_of=take("<i4", shingles, 4),
            passage_keys=take("<u8", passages, 8),
            passage_sizes=take("<i8", passages, 8),
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
        codes, passage, where = _codes_and_passages(normal, positions=True)
        if not len(codes):
            return []
        starts = np.flatnonzero(np.diff(passage, prepend=-1))
        ends = np.append(starts[1:], len(codes)) - 1
        return [
            normal[int(where[s]) : int(where[e]) + 1].replace("\n", " ")
            for s, e in zip(starts, ends, strict=True)
        ]

    def features(self, text: str) -> Features:
        """Compute what matching and verification need of one article."""
        return self.fingerprint_and_features(text)[1]

    def fingerprint_and_features(self, text: str) -> tuple[Fingerprint, Features]:
        """Compute an article's fingerprint (with status and tokens) and its features."""
        normal = self._normalised_passages(text)
        fp = self._fingerprint(text, normal)
        fingerprint = fp.value
        codes, passage = _codes_and_passages(normal)
        grams, owner = _grams(codes, passage)
        if not len(grams):
            empty = np.empty(0, np.uint64)
            return fp, Features(fingerprint, len(codes), empty, np.empty(0, np.int32), empty, empty)
        count = int(owner.max()) + 1
        keys = _passage_keys(grams, owner, count)
        order = np.argsort(grams)
        grams, owner = grams[order], owner[order]
        distinct = np.empty(len(grams), dtype=bool)
        distinct[0], distinct[1:] = True, grams[1:] != grams[:-1]
        shingles, passage_of = grams[distinct], owner[distinct].astype(np.int32)
        return fp, Features(
            fingerprint=fingerprint,
            length=len(codes),
            shingles=shingles,
            passage_of=passage_of,
            passage_keys=keys,
            passage_sizes=np.bincount(passage_of, minlength=count),
        )

    # --- matching ---------------------------------------------------------------------------

    def candidates(self, features: list[Features]) -> np.ndarray:
        """Return candidate pairs (a < b) from article and passage fingerprints: (m, 2)."""
        found = [np.empty((0, 2), np.int64)]
        with_fp = np.array([i for i, f in enumerate(features) if f.fingerprint is not None])
        if len(with_fp) > 1:
            values = np.array([features[i].fingerprint for i in with_fp], dtype=np.uint64)
            near = pairs(values, self.k_article)
            found.append(np.stack([with_fp[near.a], with_fp[near.b]], axis=1))
        owners = np.concatenate(
            [np.full(len(f.passage_keys), i) for i, f in enumerate(features)] or [[]]
        ).astype(np.int64)
        if len(owners) > 1:
            values = np.concatenate([f.passage_keys for f in features])
            # Boilerplate: a passage fingerprint in many articles finds nothing worth finding.
            _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
            keep = np.flatnonzero(counts[inverse] <= MAX_PASSAGE_OWNERS)
            near = pairs(values[keep], 0)
            a, b = owners[keep][near.a], owners[keep][near.b]
            other = a != b
            found.append(np.stack([np.minimum(a, b)[other], np.maximum(a, b)[other]], axis=1))
        both = np.concatenate(found)
        return np.unique(both, axis=0) if len(both) else both

    def judge(self, a: int, b: int, fa: Features, fb: Features) -> Duplicate | None:
        """Verify one candidate pair; return the verdict, or None if they are not duplicates."""
        found = self.judge_many(a, fa, [(b, fb)])
        return found[0] if found else None

    def judge_many(
        self, a: int, fa: Features, others: Sequence[tuple[int, Features]]
    ) -> list[Duplicate]:
        """Verify one article against its candidates at once; return the duplicates, in order."""
        found = []
        for b, fb in others:
            verdict = self._verdict(a, b, fa, fb, _intersection_size(fa.shingles, fb.shingles))
            if verdict is not None:
                found.append(verdict)
        return found

    def _verdict(self, a: int, b: int, fa: Features, fb: Features, shared: int) -> Duplicate | None:
        """Judge a pair from the number of shingles it shares."""
        if not shared:
            return None
        small, big = sorted((len(fa.shingles), len(fb.shingles)))
        jaccard = shared / (small + big - shared)
        containment = shared / small
        distance = None
        if fa.fingerprint is not None and fb.fingerprint is not None:
            distance = (fa.fingerprint ^ fb.fingerprint).bit_count()
        contained = containment >= self.partial and shared >= self.min_shared
        if contained and big >= 1.5 * small:  # one article inside a bigger page
            kind, similarity = "partial", containment
        elif jaccard >= self.near:
            kind, similarity = "near", jaccard
        elif contained:
            kind, similarity = "partial", containment
        else:
            return None
        # Shared passages say where a partial copy sits; a near copy shares (nearly) all of them,
        # which a side-by-side diff shows better, so they are left out there (and cost nothing).
        passages = (
            _shared(fa, fb, *_intersect(fa.shingles, fb.shingles)) if kind == "partial" else []
        )
        return Duplicate(a, b, kind, distance, round(similarity, 4), passages)

    def duplicates(self, features: list[Features]) -> list[Duplicate]:
        """Return every verified duplicate pair among the articles, each once, in order."""
        found = []
        pairs_ = self.candidates(features)  # sorted by a, then b
        if not len(pairs_):
            return found
        starts = np.flatnonzero(np.diff(pairs_[:, 0], prepend=-1))
        ends = np.append(starts[1:], len(pairs_))
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            a = int(pairs_[start, 0])
            others = [(b, features[b]) for b in pairs_[start:end, 1].tolist()]
            found += self.judge_many(a, features[a], others)
        return found


def _codes_and_passages(normal: str, positions: bool = False) -> tuple[np.ndarray, ...]:
    """Return the code points without separators, and the passage number of each (and, if
    asked, where each sits in the text)."""
    codes = np.frombuffer(normal.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    passage = np.cumsum(codes == _BREAK)
    keep = (codes != _SEPARATORS[0]) & (codes != _SEPARATORS[1]) & (codes != _SEPARATORS[2])
    where = np.flatnonzero(keep) if positions else None
    codes, passage = codes[keep], passage[keep]
    if not len(codes):
        return (codes, passage, where) if positions else (codes, passage)
    # Renumber passages 0.., joining each short one to the next.
    starts = np.concatenate([[0], np.flatnonzero(passage[1:] != passage[:-1]) + 1])
    sizes = np.diff(np.append(starts, len(codes)))
    number, label, running = 0, np.empty(len(starts), dtype=np.int64), 0
    for i, size in enumerate(sizes.tolist()):
        label[i] = number
        running += size
        if running >= MIN_PASSAGE_GRAMS + GRAM - 1:
            number, running = number + 1, 0
    if running and number:  # a short tail joins the passage before it
        label[label == number] = number - 1
    passage = np.repeat(label, sizes)
    return (codes, passage, where) if positions else (codes, passage)


def _passage_keys(grams: np.ndarray, owner: np.ndarray, count: int) -> np.ndarray:
    """Return each passage's key: the least hash among its shingles (a one-hash MinHash).

    `owner` runs 0..count-1 in order; a passage without a shingle of its own (none: every
    passage has at least MIN_PASSAGE_GRAMS characters) would get the next one's key."""
    starts = np.searchsorted(owner, np.arange(count))
    return np.minimum.reduceat(grams, starts)


def _grams(codes: np.ndarray, passage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the hash of every character 4-gram inside a passage, and its passage."""
    if len(codes) < GRAM:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    c = codes.astype(np.uint64)
    h = np.zeros(len(codes) - GRAM + 1, dtype=np.uint64)
    for i in range(GRAM):
        h ^= c[i : len(c) - GRAM + 1 + i] * _MIX[i]
        h = (h << np.uint64(13)) | (h >> np.uint64(51))
    h ^= h >> np.uint64(33)
    h *= _MIX[1]
    h ^= h >> np.uint64(29)
    inside = passage[: len(h)] == passage[GRAM - 1 :]
    return h[inside], passage[: len(h)][inside]


def _intersection_size(a: np.ndarray, b: np.ndarray) -> int:
    """Return how many values two sorted distinct arrays share."""
    # Sorting two sorted runs is one merge (numpy's stable sort finds the runs): faster here
    # than a binary search of one array in the other.
    both = np.concatenate((a, b))
    both.sort(kind="stable")
    return int(np.count_nonzero(both[1:] == both[:-1]))


def _intersect(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return where the values common to two sorted distinct arrays sit in a and in b."""
    if len(a) > len(b):
        in_b, in_a = _intersect(b, a)
        return in_a, in_b
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    hit = np.flatnonzero(b[at] == a)
    return hit, at[hit]


def _shared(
    fa: Features, fb: Features, in_a: np.ndarray, in_b: np.ndarray
) -> list[tuple[int, int]]:
    """Return (passage of a, passage of b) pairs where most of a passage is in the other."""
    pa = fa.passage_of[in_a].astype(np.int64)
    pb = fb.passage_of[in_b].astype(np.int64)
    # For each passage of the smaller side: is most of it in the other article, and where?
    small_is_a = len(fa.shingles) <= len(fb.shingles)
    mine, theirs = (pa, pb) if small_is_a else (pb, pa)
    sizes = fa.passage_sizes if small_is_a else fb.passage_sizes
    width = int(theirs.max()) + 1
    together = np.bincount(mine * width + theirs, minlength=len(sizes) * width)
    together = together.reshape(len(sizes), width)
    shared = np.flatnonzero(together.sum(axis=1) * 2 >= np.maximum(sizes, 1))
    best = together[shared].argmax(axis=1)
    found = zip(shared.tolist(), best.tolist(), strict=True)
    return sorted(found if small_is_a else ((b, a) for a, b in found))
