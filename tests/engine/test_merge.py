"""Verification's merges: the compiled module and numpy give the same answers.

The compiled module is loaded here whatever DEDUP_NO_NATIVE says, so the comparisons run in
both of CI's runs; the engine itself (merge.accelerated) is switched per block.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dedup.engine.features as engine_features
import dedup.engine.merge as merge
from dedup.engine import native
from dedup.engine.verify import Detector, Features
from tests.engine.by_sets import passages_by_sets
from tests.texts import ARTICLE, FILLER, OTHER

COMPILED = native.compiled()


@contextmanager
def engine_uses(module):
    """Run the block with the engine on this compiled module, or on numpy alone (None)."""
    before = merge.accelerated
    merge.accelerated = module
    try:
        yield
    finally:
        merge.accelerated = before


def numpy_only():
    """Run the block with the numpy merges, as on a machine without a C compiler."""
    return engine_uses(None)


def compiled_only():
    """Run the block with the compiled merges."""
    return engine_uses(COMPILED)


def test_the_compiled_merges_are_built():
    # ./dev installs with a C compiler present; without one dedup still works (numpy), slower.
    assert COMPILED is not None, "dedup.engine._native is not built: pip install -e . with gcc"


SORTED = st.lists(st.integers(0, 2**32 - 1), max_size=300, unique=True).map(
    lambda values: np.array(sorted(values), dtype=np.uint32)
)


@settings(max_examples=200, deadline=None)
@given(SORTED, SORTED)
def test_shared_count_is_the_size_of_the_intersection(x, y):
    expected = len(set(x.tolist()) & set(y.tolist()))
    with compiled_only():
        assert merge.shared_count(x, y) == expected
    with numpy_only():
        assert merge.shared_count(x, y) == expected


def features_of(values: np.ndarray, passages: int, draw) -> Features:
    passage_of = np.array([draw(st.integers(0, passages - 1)) for _ in values], dtype=np.uint32)
    return Features(
        fingerprint=None,
        length=len(values),
        shingles=values,
        passage_of=passage_of,
        passage_keys=np.arange(passages, dtype=np.uint64),
        passage_sizes=np.bincount(passage_of, minlength=passages),
    )


@st.composite
def feature_pairs(draw):
    """Two articles whose shingles overlap a lot, a little or not at all."""
    pool = draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=400, unique=True))
    x = np.array(sorted(set(draw(st.lists(st.sampled_from(pool), max_size=300)))), np.uint32)
    y = np.array(sorted(set(draw(st.lists(st.sampled_from(pool), max_size=300)))), np.uint32)
    fa = features_of(x, draw(st.integers(1, 12)), draw)
    fb = features_of(y, draw(st.integers(1, 40)), draw)
    return fa, fb


@settings(max_examples=150, deadline=None)
@given(feature_pairs())
def test_shared_shingles_and_passages_agree_compiled_numpy_and_by_sets(pair):
    fa, fb = pair
    of_a = dict(zip(fa.shingles.tolist(), fa.passage_of.tolist(), strict=True))
    of_b = dict(zip(fb.shingles.tolist(), fb.passage_of.tolist(), strict=True))
    shared = sorted(set(of_a) & set(of_b))
    in_a, in_b = merge.shared_shingles(fa, fb)
    assert in_a.tolist() == [of_a[s] for s in shared]
    assert in_b.tolist() == [of_b[s] for s in shared]
    with compiled_only():
        compiled = merge.partial_passages(fa, fb)
        counts = merge.shared_counts(fa.shingles, [fb.shingles, fa.shingles])
    assert compiled == merge.shared_passages(fa, fb, in_a, in_b)  # numpy, dense
    with numpy_only():
        assert merge.partial_passages(fa, fb) == compiled
        assert merge.shared_counts(fa.shingles, [fb.shingles, fa.shingles]) == counts
    assert compiled == passages_by_sets(fa, fb, of_a, of_b, shared)
    assert counts == [len(shared), len(fa.shingles)]


@pytest.fixture(scope="module")
def detector():
    return Detector()


def test_a_page_holding_an_article_is_judged_alike_compiled_and_by_numpy(detector):
    sentences = [s + "。" for s in ARTICLE.split("。") if s]
    pages = [
        FILLER + ARTICLE + OTHER,
        "".join(sentences[:3]) + OTHER,
        ARTICLE.replace("。", "！", 2),
        OTHER,
    ]
    with compiled_only():
        fa = detector.features(ARTICLE)
        others = [(i + 1, detector.features(page)) for i, page in enumerate(pages)]
        compiled = detector.judge_many(0, fa, others)
    with numpy_only():
        assert detector.judge_many(0, fa, others) == compiled
    assert [d.kind for d in compiled] == ["partial", "partial", "near"]
    mine, theirs = zip(*compiled[0].shared_passages, strict=True)
    assert list(mine) == list(range(len(detector.passages(ARTICLE))))  # the whole article
    assert list(theirs) == list(range(theirs[0], theirs[0] + len(mine)))  # in a row, in order


def test_the_compiled_merges_refuse_wrong_arguments():
    x = np.arange(5, dtype=np.uint32)
    with pytest.raises(TypeError, match="uint32"):
        COMPILED.shared_count(x.astype(np.uint64), x)
    with pytest.raises(TypeError, match="uint32"):
        COMPILED.shared_counts(x, [x, x.astype(np.float64)])
    with pytest.raises(TypeError, match="sequence"):
        COMPILED.shared_counts(x, 3)
    half = np.ones(5, np.uint32)
    with pytest.raises(ValueError, match="length"):
        COMPILED.partial_passages(x, x[:4], x, x, half, 5)
    with pytest.raises(ValueError, match="out of range"):
        COMPILED.partial_passages(x, x, x, x, half, 3)  # passage 4 of theirs, of 3
    with pytest.raises(ValueError, match="passage counts"):
        COMPILED.partial_passages(x, x, x, x, half, 0)


# --- the features' gram table -----------------------------------------------------------------

NORMAL = st.text(alphabet=st.sampled_from([*"中文字新闻稿件一二三四abcd,, \n\n\n。", "\ud800"]))


def _units(normal: str) -> tuple[str, int]:
    return engine_features.as_units(normal), engine_features.kept_characters(normal)


def assert_same_features(got: Features, expected: Features) -> None:
    assert (got.fingerprint, got.length, got.units) == (
        expected.fingerprint,
        expected.length,
        expected.units,
    )
    for name in ("shingles", "passage_of", "passage_keys", "passage_sizes"):
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name


@settings(max_examples=300, deadline=None)
@given(NORMAL, st.integers(0, 2**64 - 1) | st.none())
def test_the_compiled_gram_table_equals_numpy_on_any_text(normal, fingerprint):
    # Any string, not only normalised text: separators in runs, empty lines, a lone surrogate,
    # fewer code points than a gram.
    with compiled_only():
        compiled = engine_features._features_native(fingerprint, *_units(normal))
    assert_same_features(compiled, engine_features._features_numpy(fingerprint, *_units(normal)))


def test_the_compiled_features_of_articles_and_pages_equal_numpy(detector):
    texts = [ARTICLE, FILLER + ARTICLE + OTHER, OTHER * 40, "短", "", "一二三四", ARTICLE[:30]]
    for text in texts:
        with compiled_only():
            compiled = detector.features(text)
        with numpy_only():
            assert_same_features(compiled, detector.features(text))


def test_the_compiled_gram_table_refuses_wrong_arguments():
    packed, keys = np.empty(100, np.uint64), np.empty(10, np.uint64)
    with pytest.raises(TypeError, match="uint64"):
        COMPILED.grams("中文字新闻稿件", 15, packed.view(np.uint32), keys)
    with pytest.raises(ValueError, match="too few places"):
        COMPILED.grams("中文字新闻稿件" * 10, 15, packed[:5], keys)
    for least in (-1, 0, 1, engine_features.GRAM - 1):  # a passage shorter than a gram
        with pytest.raises(ValueError, match="least: needs at least 4"):
            COMPILED.grams("中文字新闻稿件" * 10, least, packed, keys)
    with pytest.raises(ValueError, match="too few places"):
        COMPILED.firsts(packed, np.empty(5, np.uint32), np.empty(100, np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_the_compiled_merges_refuse_values_of_another_type(dtype):
    x = np.arange(5, dtype=np.uint32)
    wrong = x.astype(dtype)
    half = np.ones(5, np.uint32)
    with pytest.raises(TypeError, match="needs uint32"):
        COMPILED.shared_count(wrong, x)
    with pytest.raises(TypeError, match="needs uint32"):
        COMPILED.shared_counts(x, [x, wrong])
    with pytest.raises(TypeError, match="needs uint32"):
        COMPILED.partial_passages(x, x, x, x, wrong, 5)
    with pytest.raises(TypeError, match="needs uint32"):
        COMPILED.firsts(np.zeros(5, np.uint64), wrong, x.copy())
    assert COMPILED.partial_passages(x, x, x, x, half, 5) == [(p, p) for p in range(5)]


@pytest.mark.parametrize("dtype", [np.float64, np.int64, ">u8"])
def test_the_compiled_gram_table_refuses_values_of_another_type(dtype):
    packed, keys = np.zeros(100, np.uint64), np.zeros(10, np.uint64)
    with pytest.raises(TypeError, match="needs uint64"):
        COMPILED.grams("中文字新闻稿件", 4, packed.astype(dtype), keys)
    with pytest.raises(TypeError, match="needs uint64"):
        COMPILED.grams("中文字新闻稿件", 4, packed, keys.astype(dtype))
    with pytest.raises(TypeError, match="needs uint64"):
        COMPILED.firsts(packed.astype(dtype), np.empty(100, np.uint32), np.empty(100, np.uint32))


def test_the_compiled_constants_are_the_python_ones():
    assert {name: getattr(COMPILED, name) for name in native.CONSTANTS} == native.CONSTANTS
    assert engine_features.GRAM == COMPILED.GRAM == 4
    assert int(engine_features._PRIME) == COMPILED.PRIME
    assert int(engine_features._PRIME_2) == COMPILED.PRIME_2
    assert int(engine_features._ACROSS) == COMPILED.ACROSS


def test_a_build_with_other_constants_is_refused(monkeypatch):
    monkeypatch.setitem(native.CONSTANTS, "GRAM", 5)
    with pytest.raises(native.NativeMismatch, match=r"GRAM.*rebuild"):
        native.compiled()


@pytest.mark.parametrize(("value", "uses_compiled"), [("1", False), ("", True), ("0", True)])
def test_dedup_no_native_makes_the_engine_use_numpy(value, uses_compiled):
    check = "import dedup.engine.merge as m; print(m.accelerated is not None)"
    env = {**os.environ, "DEDUP_NO_NATIVE": value}
    out = subprocess.run(
        [sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(uses_compiled)


@contextmanager
def line_least(least: int):
    """Run the block with passages cut at lines of at least `least` units."""
    before = engine_features._LINE_LEAST
    engine_features._LINE_LEAST = least
    try:
        yield
    finally:
        engine_features._LINE_LEAST = before


@settings(max_examples=300, deadline=None)
@given(NORMAL, st.integers(4, 40), st.integers(0, 2**64 - 1) | st.none())
def test_the_compiled_gram_table_equals_numpy_for_any_passage_length(normal, least, fingerprint):
    units = _units(normal)
    with line_least(least):
        with compiled_only():
            compiled = engine_features._features_native(fingerprint, *units)
        assert_same_features(compiled, engine_features._features_numpy(fingerprint, *units))
