"""The compiled loops that issue 30 added for speed give what the Python code they stand in
for gives: numbers' facts (dedup.engine._native.number_facts), words counted by slot
(count_slots), and the passage marks' faster patterns."""

import random
import re

import numpy as np
import pytest

from dedup.engine import marks, native, tokens
from dedup.engine.facts import fact_ids, fact_places, fact_shingles
from dedup.engine.passages import passage_lines
from dedup.engine.units import as_units_and_numbers
from dedup.engine.verify import Detector
from tests.engine.golden import load_texts

compiled = native.compiled()
needs_compiled = pytest.mark.skipif(compiled is None, reason="dedup.engine._native not built")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [text for _, text in load_texts()]


@needs_compiled
def test_number_facts_are_the_numpy_facts_places_and_ids(texts):
    detector = Detector()
    stated = 0
    for text in texts:
        units, numbers, ids = as_units_and_numbers(detector._normalised_passages(text))
        lines = passage_lines(units)
        found = compiled.number_facts(lines, ids)
        facts = fact_shingles(lines, numbers)
        if found is None:
            assert not len(facts)
            continue
        stated += 1
        got = [np.frombuffer(b, np.uint32) for b in found]
        np.testing.assert_array_equal(got[0], facts)
        np.testing.assert_array_equal(got[1], fact_places(lines, numbers))
        np.testing.assert_array_equal(got[2], fact_ids(lines, numbers, ids))
    assert stated > 100


@needs_compiled
def test_words_counted_by_slot_weigh_as_the_python_count(texts, monkeypatch):
    detector = Detector()
    cut = detector.fingerprinter._cut
    fast = tokens.Weigher(top_n=256, tf="raw")
    slow = tokens.Weigher(top_n=256, tf="raw")
    for _ in range(2):  # new words first, then every word slotted
        for text in texts:
            words = cut(detector._normalised_passages(text))
            got = fast.weigh(words)
            with monkeypatch.context() as patch:
                patch.setattr(tokens, "_accelerated", None)
                expected = slow.weigh(words)
            np.testing.assert_array_equal(fast.hashes(got[0]), slow.hashes(expected[0]))
            np.testing.assert_array_equal(got[1], expected[1])
            assert got[2] == expected[2]


def test_the_marks_faster_patterns_match_where_the_old_ones_did(texts):
    old_soft = re.compile(r"(?<=\S)\n(?=[^\S\n]*(?:>[^\S\n]*)*[a-z])")
    old_stop = re.compile(r"(?<=[^\W\d_]{2})\.(?=\s)")
    rng = random.Random(30)
    pieces = ["\n", " ", "a", "Z", "é", ".", "3", "中", "> ", "\t", "_", "b."]
    samples = texts + ["".join(rng.choices(pieces, k=rng.randrange(12))) for _ in range(5000)]
    for text in samples:
        assert marks._SOFT_BREAK.sub(" ", text) == old_soft.sub(" ", text)
        assert marks._FULL_STOP.sub(".|", text) == old_stop.sub(".|", text)
    bulletless = [t for t in samples if not any(b in t for b in marks._BULLETS)]
    assert all(marks._ITEM.search(t) is None for t in bulletless)


def test_a_build_without_the_new_loops_is_refused(monkeypatch):
    monkeypatch.setattr(native, "FUNCTIONS", (*native.FUNCTIONS, "not_built_yet"))
    with pytest.raises(native.NativeMismatch, match=r"not_built_yet.*rebuild"):
        native.compiled()
