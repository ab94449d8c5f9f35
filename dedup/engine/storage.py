"""The segment index's one interface: what the in-memory index (MemIndex) and the service's
PostgreSQL index (dedup.index.segments.PgSegmentIndex) both do, and one contract test suite
(tests/dedup/test_segment_index.py) checks of both.

Fingerprints are unsigned 64-bit; ids are integers. Every key is `Plan.keys`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dedup.engine.plan import Plan, PlanError

HOT_FACTOR = 20.0  # a bucket this many times the size even spreading gives is hot...
HOT_MINIMUM = 64  # ... when it holds at least this many distinct fingerprints


@dataclass(frozen=True)
class Hits:
    """Matches of many queries: parallel arrays, one entry per (query, stored id) pair."""

    query: np.ndarray  # int64 index of the query
    id: np.ndarray  # int64 stored id
    distance: np.ndarray  # uint8


@runtime_checkable
class SegmentIndex(Protocol):
    """Fingerprints with ids, searchable within any distance k up to the plan's k_max."""

    plan: Plan

    def add(self, ids: Iterable[int] | np.ndarray, values: Iterable[int] | np.ndarray) -> None:
        """Store fingerprints with their ids (one id each)."""

    def remove(self, ids: Iterable[int] | np.ndarray) -> int:
        """Forget these ids; return how many stored entries went."""

    def query(self, value: int, k: int) -> list[tuple[int, int]]:
        """Return (id, distance) of every stored fingerprint within distance k, nearest first,
        then by id."""

    def query_many(self, values: Iterable[int] | np.ndarray, k: int) -> Hits:
        """Return every (query number, id, distance) within distance k, in no set order."""

    def hot_buckets(
        self, factor: float = HOT_FACTOR, minimum: int = HOT_MINIMUM
    ) -> list[tuple[int, int, int]]:
        """Return (table, key, distinct fingerprints) of the buckets holding more than
        `minimum` and more than `factor` times what even spreading gives, largest first."""


def check_k(plan: Plan, k: int) -> None:
    """Raise PlanError unless the plan answers distance k."""
    if not 0 <= k <= plan.k_max:
        raise PlanError(
            f"k={k} is outside 0..{plan.k_max}, what this index's plan answers "
            f"({plan.version}); build it with a plan for k_max >= {k}"
        )


EMPTY_HITS = Hits(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8))
