"""A pair's verdict does not depend on which article is judged against the other (issue 32):
the service judges the later article against the earlier ones, `duplicates` the earlier
against the later, and a settling both. Two articles of as many shingles (a repost that
swapped one sentence for another of the same length) once took the first asked as the
smaller one, and its numbers (or none) decided the pair: near one way, nothing the other."""

from __future__ import annotations

from bench.corpora import build
from dedup.engine import Config
from dedup.engine.boilerplate import Boilerplate, passage_owners_of
from dedup.engine.verify import Detector


def verdicts(found) -> list[tuple]:
    return [(d.kind, d.distance, d.similarity, d.shared_chars) for d in found]


def test_every_candidate_pair_is_judged_alike_both_ways_round():
    detector = Detector(Config())
    texts = sorted({doc.text for doc in build("news", seed=11, split="test", size=400)})
    features = [detector.features(text) for text in texts]
    owners = passage_owners_of(features)
    boilerplate = Boilerplate(owners)
    pairs = detector.candidates(features, owners).tolist()
    ties = 0
    for a, b in pairs:
        fa, fb = features[a], features[b]
        ties += len(fa.shingles) == len(fb.shingles)
        one = detector.judge_many(a, fa, [(b, fb)], boilerplate)
        other = detector.judge_many(b, fb, [(a, fa)], boilerplate)
        assert verdicts(one) == verdicts(other), (texts[a], texts[b])
        passages = [sorted(d.shared_passages) for d in one]
        assert passages == [sorted((p, q) for q, p in d.shared_passages) for d in other]
    assert len(pairs) > 1000 and ties > 50  # equal sizes are common among reposts
