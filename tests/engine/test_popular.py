"""Copies of a popular story: passages held by more than MAX_PASSAGE_OWNERS articles still find
candidates where they are not boilerplate in the article asking (dedup.engine.popular)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import dedup.engine.popular as popular
import dedup.engine.verify as verify
from dedup.engine.graph import components
from dedup.engine.popular import popular_asks, popular_asks_many
from dedup.engine.verify import MAX_PASSAGE_OWNERS, POPULAR_HOLDERS, Detector
from tests.texts import FOOTER, reposted, stranger


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


@pytest.fixture(scope="module")
def family(detector):
    return [detector.features(t) for t in reposted(50)]


def test_story_copies_are_far_apart_by_fingerprint_and_their_passages_are_popular(detector, family):
    values = [f.fingerprint for f in family[:51]]
    far = [
        (x ^ y).bit_count() > detector.k_article for i, x in enumerate(values) for y in values[:i]
    ]
    assert np.mean(far) > 0.99
    _, counts = np.unique(np.concatenate([f.passage_keys for f in family]), return_counts=True)
    assert (counts > MAX_PASSAGE_OWNERS).sum() >= 8  # the story's passages


def test_every_copy_of_a_story_reposted_fifty_times_is_found(detector, family):
    strangers = [detector.features(stranger(300 + i, 8)) for i in range(10)]
    features = family + strangers
    found = detector.duplicates(features)
    assert all(d.b < len(family) for d in found)  # no stranger is anyone's copy
    kinds = {(d.a, d.b): d.kind for d in found}
    matched = {x for pair in kinds for x in pair}
    assert matched == set(range(len(family)))
    a, b = (np.array(side, np.int64) for side in zip(*kinds, strict=True))
    assert len(set(components(len(family), a, b).tolist())) == 1
    assert sum(kind == "partial" for kind in kinds.values()) >= 5
    # The cost stays bounded: each article asks the POPULAR_HOLDERS holders before it.
    assert len(detector.candidates(features)) <= len(family) * POPULAR_HOLDERS


def test_a_footer_under_many_articles_still_finds_no_candidates(detector, family):
    pages = [detector.features(stranger(400 + i, 8) + FOOTER) for i in range(60)]
    features = family + pages
    assert not [(a, b) for a, b in detector.candidates(features).tolist() if b >= len(family)]


def test_a_story_holder_is_as_long_as_a_text_verification_calls_short():
    assert popular.POPULAR_LENGTH == verify.SHORT


def test_asks_of_many_articles_at_once_are_each_article_s_asks():
    rng = np.random.default_rng(5)
    some, owners = [], []
    for _ in range(400):
        passages = int(rng.integers(0, 12))
        sizes = rng.integers(0, 30, passages)
        some.append(
            SimpleNamespace(
                length=int(rng.choice([100, 139, 140, 800])),
                passage_keys=rng.integers(0, 2**63, passages).astype(np.uint64),
                passage_sizes=sizes,
            )
        )
        # Ties, the limits (20, 21, 255, 256) and counts on both sides of 1.5 times.
        owners.append(rng.choice([1, 2, 14, 20, 21, 30, 31, 45, 100, 255, 256, 300], passages))
    many = popular_asks_many(some, np.concatenate(owners))
    one_by_one = [popular_asks(f, o) for f, o in zip(some, owners, strict=True)]
    assert [m.tolist() for m in many] == [o.tolist() for o in one_by_one]
    assert sum(int(m.sum()) for m in many) > 100  # some articles ask
