"""The final judgement: candidates from the segment index, verified by exact similarity.

SimHash is the fast first pass. Every article also gets, once, what verification needs
(dedup.engine.features: passages, shingles, passage keys), so an old article is never
tokenised again.

Candidate pairs come from the segment index twice: article fingerprints within `k_article`,
and equal passage keys (a repost inside a bigger page keeps its passages even when the page's
fingerprint drifts far). Every candidate is verified on the shingle sets, by merging the two
sorted arrays (dedup.engine.merge): *near* when their Jaccard similarity reaches `near`,
*partial* when a large share of the smaller one is contained in the other (`partial`); the
shared passages say where.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dedup.engine.config import Config
from dedup.engine.features import (  # noqa: F401 (FEATURES_FORMAT: dedup.engine.verify's too)
    _KEPT,
    FEATURES_FORMAT,
    GRAM,
    Features,
    _codes_and_passages,
    features_of,
)
from dedup.engine.fingerprint import MAX_JUNK_SHARE, Fingerprint, Fingerprinter, Status
from dedup.engine.merge import partial_passages, shared_counts
from dedup.engine.pairs import pairs, pairs_within_runs
from dedup.engine.text import junk_share, normalise, strip_html

# Sentence ends get a blank line after them before normalising: normalised text keeps blank
# lines, so passages can be cut there.
_SENTENCE_ENDS = "。！？；!?;"
# Passages shared by more articles than this are boilerplate (navigation, footers): not used
# to find candidates, so that one template cannot make every page a candidate of every other.
MAX_PASSAGE_OWNERS = 20
# A pair whose shorter article has fewer characters than this (normalised, separators left
# out) is near at a lower Jaccard (`near_short`): one changed sentence of a 100-character text
# changes a third of its shingles. Measured on the detection corpus (README).
SHORT = 140


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
        near_short: float = 0.2,  # near, when the shorter article is under SHORT characters
        min_shared: int = 60,  # shared shingles (about characters) a partial copy needs
    ) -> None:
        self.fingerprinter = Fingerprinter(config)
        self.config = self.fingerprinter.config
        self.k_article = k_article
        self.near = near
        self.partial = partial
        self.near_short = near_short
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
        return fp, features_of(fp.value, normal)

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
        partial, min_shared = self.partial, self.min_shared
        near_a = self.near_short if fa.length < SHORT else self.near
        for (b, fb), shared in zip(others, counts, strict=True):
            if not shared:
                continue
            near = self.near_short if fb.length < SHORT else near_a
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

    def least_similarity(self, length: int, sizes: np.ndarray) -> np.ndarray:
        """Return, for an article of `length` characters and candidates of `sizes` shingles,
        the least containment of the smaller in the other that any verdict needs (for a
        screen). A candidate of fewer than SHORT - GRAM + 1 shingles may be short: counted
        as short (a text's shingles are at most its characters less GRAM - 1)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        short = np.minimum(length, sizes + GRAM - 1) < SHORT
        return np.where(
            short, min(self.near_short, self.near, self.partial), min(self.near, self.partial)
        )

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
