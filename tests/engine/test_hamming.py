"""Hamming distance between 64-bit fingerprints and their signed storage form."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.engine import distance, distances, pairwise, to_signed, to_unsigned

MAX = 2**64 - 1
fingerprints = st.integers(min_value=0, max_value=MAX)
RNG = random.Random(20240101)
RANDOM_PAIRS = [(RNG.getrandbits(64), RNG.getrandbits(64)) for _ in range(20)]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (0, 0, 0),
        (MAX, MAX, 0),
        (0, MAX, 64),
        (MAX, 0, 64),
        (0, 1, 1),
        (0, 1 << 63, 1),
        (0b1011, 0b0110, 3),
        (0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 64),
        (0x00000000FFFFFFFF, 0xFFFFFFFF00000000, 64),
        (0x0F0F0F0F0F0F0F0F, 0x0F0F0F0F0F0F0F0E, 1),
    ],
)
def test_distance_counts_differing_bits(a, b, expected):
    assert distance(a, b) == expected


@pytest.mark.parametrize(("a", "b"), RANDOM_PAIRS)
def test_distance_of_random_values_is_popcount_of_xor(a, b):
    assert distance(a, b) == bin(a ^ b).count("1")
    assert distance(b, a) == distance(a, b)


@given(fingerprints, fingerprints)
def test_distance_is_popcount_of_xor(a, b):
    assert distance(a, b) == bin(a ^ b).count("1")


@given(st.lists(fingerprints, max_size=50), fingerprints)
def test_distances_of_array_match_scalar_distance(values, query):
    array = np.array(values, dtype=np.uint64)
    result = distances(array, query)
    assert result.shape == (len(values),)
    assert result.tolist() == [distance(v, query) for v in values]


def test_distances_of_all_ones_query_reach_64():
    array = np.array([0, MAX, 1 << 63], dtype=np.uint64)
    assert distances(array, MAX).tolist() == [64, 0, 63]


@given(st.lists(fingerprints, max_size=12), st.lists(fingerprints, max_size=12))
@settings(max_examples=50)
def test_pairwise_matches_scalar_distance_cell_by_cell(a, b):
    matrix = pairwise(np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64))
    assert matrix.shape == (len(a), len(b))
    assert matrix.tolist() == [[distance(x, y) for y in b] for x in a]


def test_pairwise_of_three_by_two_has_known_values():
    a = np.array([0, MAX, 0b111], dtype=np.uint64)
    b = np.array([0, 0b101], dtype=np.uint64)
    assert pairwise(a, b).tolist() == [[0, 2], [64, 62], [3, 1]]


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [
        (0, 0),
        (1, 1),
        (2**63 - 1, 2**63 - 1),
        (2**63, -(2**63)),
        (2**64 - 1, -1),
        (2**64 - 2, -2),
    ],
)
def test_signed_form_fits_bigint_and_round_trips(unsigned, signed):
    assert to_signed(unsigned) == signed
    assert to_unsigned(signed) == unsigned


@given(fingerprints)
def test_signed_round_trip_restores_any_fingerprint(value):
    signed = to_signed(value)
    assert -(2**63) <= signed < 2**63
    assert to_unsigned(signed) == value


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_unsigned_round_trip_restores_any_bigint(value):
    unsigned = to_unsigned(value)
    assert 0 <= unsigned <= MAX
    assert to_signed(unsigned) == value


@pytest.mark.parametrize("value", [-1, 2**64, 2**70, -(2**63)])
def test_to_signed_rejects_values_outside_unsigned_64_bits(value):
    with pytest.raises(ValueError, match="not an unsigned 64-bit integer"):
        to_signed(value)


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, -(2**63) - 1, 2**70])
def test_to_unsigned_rejects_values_outside_signed_64_bits(value):
    with pytest.raises(ValueError, match="not a signed 64-bit integer"):
        to_unsigned(value)
