"""Hamming distance between fingerprints, and their signed storage form."""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


def distance(a: int, b: int) -> int:
    """Return the number of bits in which two fingerprints differ."""
    return ((a ^ b) & _MASK).bit_count()


def distances(values: np.ndarray, query: int) -> np.ndarray:
    """Return the distance of every fingerprint in a uint64 array to one fingerprint."""
    return np.bitwise_count(np.asarray(values, dtype=np.uint64) ^ np.uint64(query)).astype(np.uint8)


def pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the matrix of distances between two uint64 arrays (len(a) x len(b))."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    return np.bitwise_count(a[:, None] ^ b[None, :]).astype(np.uint8)


def to_signed(value: int) -> int:
    """Return an unsigned 64-bit fingerprint as the signed integer a BIGINT column stores."""
    if not 0 <= value <= _MASK:
        raise ValueError(f"fingerprint {value} is not an unsigned 64-bit integer")
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    """Return a signed BIGINT column value as the unsigned 64-bit fingerprint."""
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{value} is not a signed 64-bit integer")
    return value & _MASK
