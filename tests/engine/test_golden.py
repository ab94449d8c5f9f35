"""The engine gives the stored golden texts the outputs it gave them when they were stored
(tests/engine/golden.py): fingerprints, every field of the features, passages, tokens."""

import pytest

from dedup.engine.verify import Detector
from tests.engine.golden import load_outputs, load_texts, outputs


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def test_golden_texts_cover_every_source():
    sources = {name.split("/")[0] for name, _ in load_texts()}
    expected = {"texts", "news_articles", "news", "tech_en", "debian", "mail"}
    assert expected | {"reference_mixed", "templated", "edge"} <= sources
    assert len(load_texts()) >= 300


def test_every_golden_text_keeps_its_outputs(detector):
    stored = load_outputs()
    texts = load_texts()
    assert [name for name, _ in texts] == list(stored)
    changed = {}
    for name, text in texts:
        got = outputs(detector, text)
        differ = sorted(field for field, digest in stored[name].items() if got[field] != digest)
        if differ:
            changed[name] = differ
    assert not changed, f"{len(changed)} texts changed outputs: {dict(list(changed.items())[:10])}"


def test_the_second_time_a_text_is_seen_gives_the_same_outputs(detector):
    # The caches (word slots, word units) warm: the outputs stay the same.
    stored = load_outputs()
    for name, text in load_texts()[::7]:
        assert outputs(detector, text) == stored[name], name
