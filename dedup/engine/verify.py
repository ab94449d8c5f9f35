"""The final judgement: candidates from the segment index, verified by exact similarity.

SimHash is the fast first pass. Every article also gets, once, what verification needs
(dedup.engine.features: passages, shingles, passage keys), so an old article is never
tokenised again.

Candidate pairs come from the segment index twice: article fingerprints within `k_article`,
and equal passage keys (a repost inside a bigger page keeps its passages even when the page's
fingerprint drifts far). Every candidate is verified on the shingle sets, by merging the two
sorted arrays (dedup.engine.merge): *near* when their Jaccard similarity reaches `near`,
*partial* when a large share of the smaller one is contained in the other (`partial`) and the
shared text is long enough (`min_chars`, in characters of that text); the shared passages say
where. A near copy also keeps its facts (dedup.engine.facts: the numbers of most of its
passages), and a partial copy's passages keep theirs; a template filled in with other facts
does not.

*Boilerplate* is learned from the collection: a passage whose key many articles hold (a
footer, a menu, a disclaimer, a template's fixed sentence) counts neither as evidence nor
toward similarity when both articles hold it as boilerplate (see `PassageOwners`). Whether
a passage is boilerplate depends on the article: in an article whose own text is held by
one or two articles, a passage held by fifty is its wrapper; in one of fifty copies of a
popular story, the story's passages are held by fifty and are its text. Nor is a page
template of a few pages ending both evidence of a partial copy (dedup.engine.frames).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dedup.engine.boilerplate import (  # noqa: F401 (callers import them from here too)
    BOILERPLATE_LEVEL,
    BOILERPLATE_OWNERS,
    BOILERPLATE_RATIO,
    Boilerplate,
    PassageOwners,
    boilerplate_passages,
    held_mask,
    passage_owners_of,
)
from dedup.engine.config import Config
from dedup.engine.facts import SHORT, facts_may_change, pair_facts, with_facts_kept
from dedup.engine.features import (  # noqa: F401 (FEATURES_FORMAT: dedup.engine.verify's too)
    FEATURES_FORMAT,
    GRAM,
    KEPT_UNITS,
    Features,
    as_units,
    codes_and_passages,
    features_of,
    passage_lines,
    units_of,
)
from dedup.engine.fingerprint import MAX_JUNK_SHARE, Fingerprint, Fingerprinter, Status
from dedup.engine.frames import without_frame
from dedup.engine.marks import mark_passages
from dedup.engine.merge import (
    first_is_smaller,
    partial_passages,
    passage_chars,
    passages_agree,
    shared_count,
    shared_counts,
)
from dedup.engine.pairs import pairs, shared_key_pairs
from dedup.engine.popular import (  # noqa: F401 (callers import them from here too)
    MAX_PASSAGE_OWNERS,
    MAX_POPULAR_OWNERS,
    POPULAR_HOLDERS,
    POPULAR_LENGTH,
    POPULAR_PASSAGES,
    popular_asks,
    popular_pairs,
)
from dedup.engine.text import junk_share, normalise, strip_html, without_mail_headers

# A pair whose shorter article has fewer characters than this (normalised, separators left
# out) is near at a lower Jaccard (`near_short`): one changed sentence of a 100-character text
# changes a third of its shingles. Measured on the detection corpus (docs/benchmarks.md).
# (SHORT is defined with the facts, dedup.engine.facts, which tell a short text by one number.)
# A near verdict under NEAR_CLEAR similarity also needs NEAR_PASSAGES of the smaller article's
# passages (boilerplate aside) mostly in the other: an edited copy keeps most of its
# sentences, while two reports of one template share its words in every passage and few
# passages whole.
NEAR_CLEAR = 0.6
NEAR_PASSAGES = 0.5
# A stretch of EXCERPT_CHARS times `min_chars` copied whole (the smaller article's passages
# mostly in the other, boilerplate and a site's frame aside) is a partial copy at EXCERPT_SHARE
# times the `partial` share: a long quotation of a long article (bench.trusted's tune split,
# seed 1: excerpt recall tech_en 0.862 -> 0.927, mail 0.873 -> 0.908, debian 0.865 -> 0.899).
EXCERPT_SHARE = 0.75
EXCERPT_CHARS = 2


@dataclass(frozen=True)
class Duplicate:
    """A verified pair: kind, distance, similarity and the passages they share."""

    a: int
    b: int
    kind: str  # "near" (the same article, edited) or "partial" (one contains most of the other)
    distance: int | None  # Hamming distance of the article fingerprints
    similarity: float  # Jaccard for near; containment of the smaller article for partial
    shared_passages: list[tuple[int, int]] = field(default_factory=list)  # partial only
    # Characters of the smaller article's text in the other: for a partial copy, those of its
    # passages mostly in the other (boilerplate aside); for a near copy, of all it shares.
    shared_chars: int = 0


class Detector:
    """Fingerprint, index, verify: the recommended settings are the defaults."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        k_article: int = 4,
        near: float = 0.4,
        partial: float = 0.4,
        near_short: float = 0.3,  # near, when the shorter article is under SHORT characters
        min_chars: int = 60,  # characters of shared text (boilerplate aside) a partial needs
    ) -> None:
        self.fingerprinter = Fingerprinter(config)
        self.config = self.fingerprinter.config
        self.k_article = k_article
        self.near = near
        self.partial = partial
        self.near_short = near_short
        self.min_chars = min_chars
        self._config_no_html = self.config.replace(strip_html=False)

    # --- features ---------------------------------------------------------------------------

    def _normalised_passages(self, text: str) -> str:
        marked = strip_html(text) if self.config.strip_html else text
        return normalise(mark_passages(marked), self._config_no_html)

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
        normal = self._normalised_passages(without_mail_headers(text) or text)
        units = as_units(normal)
        _, lengths = codes_and_passages(passage_lines(units))
        # Where each unit of `units` starts and ends in `normal` (a word is one unit).
        starts, ends_at, at = [], [], 0
        for i, part in enumerate(units_of(normal)):
            if i % 2:
                starts.append(at)
                ends_at.append(at + len(part))
            else:
                starts += range(at, at + len(part))
                ends_at += range(at + 1, at + len(part) + 1)
            at += len(part)
        codes = np.frombuffer(units.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        where = np.flatnonzero(KEPT_UNITS.take(codes, mode="clip"))  # kept units in the text
        ends = np.cumsum(lengths, dtype=np.int64)
        return [
            normal[starts[where[end - length]] : ends_at[where[end - 1]]].replace("\n", " ")
            for end, length in zip(ends.tolist(), lengths, strict=True)
        ]

    def features(self, text: str) -> Features:
        """Compute what matching and verification need of one article."""
        return self.fingerprint_and_features(text)[1]

    def fingerprint_and_features(self, text: str) -> tuple[Fingerprint, Features]:
        """Compute an article's fingerprint (with status and tokens) and its features."""
        normal = self._normalised_passages(text)
        fp = self._fingerprint(text, normal)
        own = without_mail_headers(text)
        if own is not None:  # the fingerprint reads them, the evidence does not
            normal = self._normalised_passages(own)
        return fp, features_of(fp.value, normal)

    # --- matching ---------------------------------------------------------------------------

    def candidates(
        self, features: list[Features], owners: PassageOwners | None = None
    ) -> np.ndarray:
        """Return candidate pairs (a < b) from article and passage fingerprints: (m, 2).
        A passage key held by more than MAX_PASSAGE_OWNERS articles pairs each story holder
        (where it is not boilerplate) with the story holders before it (dedup.engine.popular);
        `owners` counts the holders (default: these articles)."""
        found = [np.empty((0, 2), np.int64)]
        with_fp = np.array([i for i, f in enumerate(features) if f.fingerprint is not None])
        if len(with_fp) > 1:
            values = np.array([features[i].fingerprint for i in with_fp], dtype=np.uint64)
            near = pairs(values, self.k_article)
            found.append(np.stack([with_fp[near.a], with_fp[near.b]], axis=1))
        held, popular = shared_key_pairs([f.passage_keys for f in features], MAX_PASSAGE_OWNERS)
        found.append(held)
        if popular:
            owners = owners if owners is not None else passage_owners_of(features)
            found.append(popular_pairs(features, owners))
        # Fact keys: a passage's numbers, which template siblings do not share.
        found.append(shared_key_pairs([f.fact_keys for f in features], MAX_PASSAGE_OWNERS)[0])
        both = np.concatenate(found)
        # Each pair once, sorted: as one integer each (a row-wise unique is many times slower).
        unique = np.unique(both[:, 0] * len(features) + both[:, 1])
        return np.stack([unique // len(features), unique % len(features)], axis=1)

    def judge(
        self,
        a: int,
        b: int,
        fa: Features,
        fb: Features,
        owners: Boilerplate | PassageOwners | None = None,
    ) -> Duplicate | None:
        """Verify one candidate pair; return the verdict, or None if they are not duplicates."""
        found = self.judge_many(a, fa, [(b, fb)], owners)
        return found[0] if found else None

    def judge_many(
        self,
        a: int,
        fa: Features,
        others: Sequence[tuple[int, Features]],
        owners: Boilerplate | PassageOwners | None = None,
    ) -> list[Duplicate]:
        """Verify one article against its candidates at once; return the duplicates, in order.
        With `owners` (how many articles hold each passage key), boilerplate that both
        articles hold counts neither as evidence nor toward similarity."""
        if owners is not None and not isinstance(owners, Boilerplate):
            owners = Boilerplate(owners)
        if not others:
            return []
        # How many shingles each candidate shares with the article: one merge each, all in
        # one call; then the verdicts, from sizes and counts alone.
        x = fa.shingles
        counts = shared_counts(x, [fb.shingles for _, fb in others])
        found = []
        near_a = self.near_short if fa.length < SHORT else self.near
        for (b, fb), shared in zip(others, counts, strict=True):
            if not shared:
                continue
            near = self.near_short if fb.length < SHORT else near_a
            size_a, size_b = len(x), len(fb.shingles)
            verdict = self._verdict(fa, fb, shared, size_a, size_b, near)
            if verdict is None:
                continue  # boilerplate left out, it would only share less
            common = owners.common(fa, fb) if owners is not None else None
            if common is not None:  # boilerplate both hold: as if neither had it
                held = shared_count(common[0], common[1])
                shared, size_a, size_b = shared - held, size_a - held, size_b - held
                verdict = self._verdict(fa, fb, shared, size_a, size_b, near)
                if verdict is None:
                    continue
            kind, similarity, chars = verdict
            distance = None
            if fa.fingerprint is not None and fb.fingerprint is not None:
                distance = (fa.fingerprint ^ fb.fingerprint).bit_count()
            # Shared passages say where a partial copy sits; a near copy shares (nearly) all
            # of them, which a side-by-side diff shows better, so they are left out there.
            passages = []
            looked = kind == "partial" or similarity < NEAR_CLEAR  # facts_may_change: once
            may_change = None if looked else facts_may_change(fa, fb)
            if looked or may_change:
                counts = (shared, min(size_a, size_b), chars)
                verdict = (kind, similarity, may_change)
                evidence = self._passage_evidence(fa, fb, verdict, common, owners, counts)
                if evidence is None:
                    continue
                kind, passages, chars, similarity = evidence
            found.append(
                Duplicate(a, b, kind, distance, round(similarity, 4), passages, shared_chars=chars)
            )
        return found

    def _passage_evidence(
        self,
        fa: Features,
        fb: Features,
        verdict: tuple[str, float, bool | None],
        common: tuple | None,
        owners: Boilerplate | None,
        counts: tuple[int, int, int],
    ) -> tuple[str, list[tuple[int, int]], int, float] | None:
        """Return a pair's kind, shared passages (a partial copy's, boilerplate both hold and
        a site's frame around both aside: dedup.engine.frames), characters and similarity, or
        None. `verdict`: the kind and similarity from the counts, and facts_may_change of the
        pair; `counts`: shingles shared, the smaller article's shingles, its characters in the
        other; by them, a near pair whose passages or facts disagree may be partial."""
        kind, similarity, may_change = verdict
        if may_change is None:
            may_change = facts_may_change(fa, fb)
        shared, small_size, shared_chars = counts
        passages = partial_passages(fa, fb)
        in_a = in_b = None
        if common is not None:  # boilerplate is no evidence
            in_a = held_mask(fa.passage_keys, common[2])
            in_b = held_mask(fb.passage_keys, common[2])
            passages = [(p, q) for p, q in passages if not (in_a[p] and in_b[q])]
        facts = pair_facts(fa, fb, passages, may_change)
        if facts.restated:
            return None  # one template filled in with other facts: what they share is it
        if kind == "near":
            # A template filled in with other facts shares its words in every passage, and
            # its facts in few: a copy keeps the facts of most of its passages.
            # Else it may still hold a stretch of the other, its facts kept (below).
            if facts.agree and (
                similarity >= NEAR_CLEAR
                or passages_agree(fa, fb, passages, in_a, in_b, NEAR_PASSAGES)
            ):
                return "near", [], shared_chars, similarity
            similarity = shared / small_size
            if not self._contained(similarity, shared_chars):
                return None  # nor does the smaller one hold a stretch of the other
        if owners is not None:  # a site's page template around both is no evidence either
            passages, similarity = without_frame(
                fa, fb, passages, similarity, small_size, owners.owners, in_a, in_b
            )
        # A partial copy is text copied whole: only the smaller article's passages mostly
        # in the other count, not words scattered over them, nor a template's sentence
        # filled in with other facts.
        passages = with_facts_kept(fa, fb, passages, facts)
        chars = passage_chars(fa, fb, passages)
        copied = self._contained(similarity, chars)
        return ("partial", passages, chars, similarity) if copied else None

    def _contained(self, containment: float, chars: int) -> bool:
        """Tell whether a share `containment` of the smaller article, `chars` characters, in
        the other is a partial copy: a share `partial` of `min_chars`, or a long stretch."""
        if containment >= self.partial and chars >= self.min_chars:
            return True
        excerpt = containment >= EXCERPT_SHARE * self.partial
        return excerpt and chars >= EXCERPT_CHARS * self.min_chars

    def _verdict(
        self, fa: Features, fb: Features, shared: int, size_a: int, size_b: int, near: float
    ) -> tuple[str, float, int] | None:
        """Return (kind, similarity, shared characters) of a pair from its shingle counts."""
        if shared <= 0:
            return None
        a_small = size_a < size_b or (size_a == size_b and first_is_smaller(fa, fb))
        small, big = (size_a, size_b) if a_small else (size_b, size_a)
        jaccard = shared / (small + big - shared)
        containment = shared / small
        smaller = fa if a_small else fb  # its characters in the other: per shingle, times shared
        chars = round(shared * smaller.length / max(len(smaller.shingles), 1))
        contained = self._contained(containment, chars)
        if contained and big >= 1.5 * small:  # one article inside a bigger page
            return "partial", containment, chars
        if jaccard >= near:
            return "near", jaccard, chars
        if contained:
            return "partial", containment, chars
        return None

    def least_similarity(self, length: int, sizes: np.ndarray) -> np.ndarray:
        """Return, for an article of `length` characters and candidates of `sizes` shingles,
        the least containment of the smaller in the other that any verdict needs (for a
        screen). A candidate of fewer than SHORT - GRAM + 1 shingles may be short: counted
        as short (a text's shingles are at most its characters less GRAM - 1)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        short = np.minimum(length, sizes + GRAM - 1) < SHORT
        return np.where(
            short,
            min(self.near_short, self.near, EXCERPT_SHARE * self.partial),
            min(self.near, EXCERPT_SHARE * self.partial),
        )

    def duplicates(self, features: list[Features]) -> list[Duplicate]:
        """Return every verified duplicate pair among the articles, each once, in order;
        boilerplate is learned from these articles' passages."""
        owners = passage_owners_of(features)
        return self.verify(features, self.candidates(features, owners), Boilerplate(owners))

    def verify(
        self,
        features: list[Features],
        pairs_: np.ndarray,
        owners: Boilerplate | PassageOwners | None = None,
    ) -> list[Duplicate]:
        """Verify candidate pairs (a < b, sorted by a, as from `candidates`); return the
        duplicates, in order."""
        found: list[Duplicate] = []
        if not len(pairs_):
            return found
        if owners is not None and not isinstance(owners, Boilerplate):
            owners = Boilerplate(owners)
        starts = np.flatnonzero(np.diff(pairs_[:, 0], prepend=-1))
        ends = np.append(starts[1:], len(pairs_))
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            a = int(pairs_[start, 0])
            others = [(b, features[b]) for b in pairs_[start:end, 1].tolist()]
            found += self.judge_many(a, features[a], others, owners)
        return found
