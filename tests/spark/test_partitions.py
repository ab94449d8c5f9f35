"""The Spark job's per-partition steps, without Spark: the engine's keys and verdicts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dedup.engine.verify import Boilerplate, Detector, passage_owners_of
from dedup.spark import batches
from dedup.spark.partitions import HEAD, featurize, verify
from tests.texts import ARTICLE, FILLER, NEAR, OTHER, PAGE


def test_verify_in_groups_gives_the_detectors_verdicts():
    texts = [ARTICLE, NEAR, PAGE, OTHER, FILLER, PAGE + OTHER]
    detector = Detector()
    rows = list(featurize(enumerate(texts), detector.config, {}))
    features = [detector.features(text) for text in texts]
    assert [r[4] for r in rows] == [f.to_bytes() for f in features]
    assert [r[3] for r in rows] == [f.fact_keys.view(np.int64).tolist() for f in features]
    owners = passage_owners_of(features)
    expected = detector.verify(features, detector.candidates(features), Boilerplate(owners))
    assert {d.kind for d in expected} == {"near", "partial"}
    held = [owners(f.passage_keys).tolist() for f in features]
    assert any(n > 1 for counts in held for n in counts)
    pairs = detector.candidates(features).tolist()
    heads = [(a, HEAD, rows[a][4], held[a]) for a in sorted({a for a, _ in pairs})]
    others = [(a, b, rows[b][4], held[b]) for a, b in pairs]
    found = list(verify(sorted(heads + others), detector.config, {}))
    assert found == [
        (
            d.a,
            d.b,
            d.kind,
            d.distance,
            d.similarity,
            d.shared_chars,
            [list(p) for p in d.shared_passages],
        )
        for d in expected
    ]


def test_verify_refuses_rows_of_an_article_without_its_own_first():
    detector = Detector()
    rows = list(featurize(enumerate([ARTICLE, NEAR]), detector.config, {}))
    with pytest.raises(ValueError, match="do not start with its own"):
        list(verify([(0, 1, rows[1][4], [1] * len(rows[1][2]))], detector.config, {}))


def test_arrow_batches_carry_the_rows_of_the_plain_steps():
    texts = [ARTICLE, NEAR, PAGE, "", OTHER]
    detector = Detector()
    expected = list(featurize(enumerate(texts), detector.config, {}))
    given = pa.RecordBatch.from_pydict({"pos": list(range(len(texts))), "text": texts})
    out = list(batches.featurize([given.slice(0, 2), given.slice(2)], detector.config, {}))
    assert all(batch.schema == batches.FEATURES for batch in out)
    found = [tuple(row.values()) for batch in out for row in batch.to_pylist()]
    assert found == expected
    assert found[3][1] is None  # an empty text has no fingerprint
