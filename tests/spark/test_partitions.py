"""The Spark job's per-partition steps, without Spark: the engine's keys and verdicts."""

from __future__ import annotations

import numpy as np

from dedup.engine.plan import Plan
from dedup.engine.verify import Boilerplate, Detector, passage_owners_of
from dedup.spark.partitions import featurize, signed, table_keys, verify
from tests.texts import ARTICLE, FILLER, NEAR, OTHER, PAGE


def test_table_keys_are_the_plans_keys_of_the_unsigned_fingerprints():
    plan = Plan.even(5, 4)
    values = np.random.default_rng(1).integers(0, 2**64, 300, dtype=np.uint64)
    values[:3] = [2**64 - 1, 2**63, 0]
    rows = list(table_keys([signed(int(v)) for v in values], plan, batch=64))
    expected = plan.keys(values)
    assert len(rows) == plan.table_count * len(values)
    for t in range(plan.table_count):
        found = [(key, fp) for table, key, fp in rows if table == t]
        assert [np.uint64(key & (2**64 - 1)) for key, _ in found] == expected[t].tolist()
        assert [fp & (2**64 - 1) for _, fp in found] == values.tolist()


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
    held = [
        list(zip(r[2], owners(f.passage_keys).tolist(), strict=True))
        for r, f in zip(rows, features, strict=True)
    ]
    pairs = [
        (a, b, rows[a][4], held[a], rows[b][4], held[b])
        for a, b in detector.candidates(features).tolist()
    ]
    found = list(verify(pairs, detector.config, {}))
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
