"""The screen on sketches: it drops clear non-duplicates and keeps what verification could pass."""

import numpy as np
import pytest

from dedup.engine import screen


def shingles(rng: np.random.Generator, count: int, dtype=np.uint32) -> np.ndarray:
    """Return `count` sorted distinct random hashes."""
    info = np.iinfo(dtype)
    values = np.unique(rng.integers(0, info.max, size=count * 2, dtype=dtype, endpoint=True))
    return np.sort(rng.permutation(values)[:count])


def pair(rng, size: int, other: int, shared: int, dtype=np.uint32):
    """Return two shingle sets of the given sizes sharing `shared` shingles."""
    pool = shingles(rng, size + other, dtype)
    common = pool[:shared]
    a = np.sort(np.concatenate([common, pool[shared:size]]))
    b = np.sort(np.concatenate([common, pool[size : size + other - shared]]))
    return a, b


def passes(a: np.ndarray, b: np.ndarray, least: float = 0.4) -> bool:
    return bool(screen.may_pass(screen.sketch(a), len(a), [screen.sketch(b)], [len(b)], least)[0])


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_sketch_is_the_low_quarter_of_the_hashes_as_sorted_uint32(dtype):
    values = shingles(np.random.default_rng(1), 4000, dtype)
    sketch = screen.sketch(values)
    assert sketch.dtype == np.uint32 and np.all(np.diff(sketch.astype(np.int64)) > 0)
    assert 800 < len(sketch) < 1200  # about a quarter
    # The same shingle is in the sketch of every set that has it.
    half = values[::2]
    assert set(screen.sketch(half).tolist()) <= set(sketch.tolist())


def test_identical_and_contained_articles_pass():
    rng = np.random.default_rng(2)
    a = shingles(rng, 900)
    assert passes(a, a)
    page = np.sort(np.concatenate([a, shingles(rng, 2000)]))
    page = np.unique(page)
    assert passes(a, page) and passes(page, a)


def test_articles_sharing_one_paragraph_are_dropped():
    rng = np.random.default_rng(3)
    dropped = sum(not passes(*pair(rng, 900, 900, 45)) for _ in range(200))  # 5% shared
    assert dropped == 200


def test_pairs_at_the_threshold_are_kept():
    """A pair exactly at the least containment worth verifying is almost never dropped."""
    rng = np.random.default_rng(4)
    kept = sum(passes(*pair(rng, 800, 1000, 320)) for _ in range(2000))  # containment 0.4
    assert kept >= 1999


def test_short_texts_are_always_verified():
    rng = np.random.default_rng(5)
    a, b = pair(rng, 60, 60, 1)
    assert passes(a, b)


def test_many_candidates_at_once_match_one_by_one():
    rng = np.random.default_rng(6)
    a = shingles(rng, 1000)
    others = [
        np.unique(
            np.concatenate([rng.choice(a, shared, replace=False), shingles(rng, 700 - shared)])
        )
        for shared in (0, 50, 200, 400, 700)
    ]
    others.append(np.empty(0, np.uint32))
    together = screen.may_pass(
        screen.sketch(a), len(a), [screen.sketch(o) for o in others], [len(o) for o in others], 0.4
    )
    assert together.tolist() == [passes(a, o) for o in others]
    assert together.tolist()[:2] == [False, False] and together.tolist()[3:5] == [True, True]
    assert screen.may_pass(screen.sketch(a), len(a), [], [], 0.4).size == 0


def test_each_candidate_can_have_its_own_least_containment():
    rng = np.random.default_rng(3)
    a = shingles(rng, 1000)
    # 150 of 700 shared: a containment of 0.21, kept at 0.2 (a short pair), dropped at 0.4.
    other = np.unique(np.concatenate([rng.choice(a, 150, replace=False), shingles(rng, 550)]))
    sketches, sizes = [screen.sketch(other)] * 2, [len(other)] * 2
    kept = screen.may_pass(screen.sketch(a), len(a), sketches, sizes, np.array([0.2, 0.4]))
    assert kept.tolist() == [True, False]
