"""Index plans: how the 64 bits split into blocks and which blocks key each table.

Two fingerprints within Hamming distance k differ in at most k of b blocks, so they agree on at
least b - k blocks (the pigeonhole principle). A plan for k_max indexes every combination of
b - k_max blocks as a lookup key: C(b, b - k_max) tables. Any k <= k_max is answered exactly by
the same tables: a pair within k is within k_max, so it shares a key in some table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np

BITS = 64
# Beyond this many tables a plan stores too many copies to be of use (C(16, 8) = 12,870).
MAX_TABLES = 5000


class PlanError(ValueError):
    """A plan is impossible or unusable; the message says why and what would work."""


@dataclass(frozen=True)
class PlanCost:
    """What a plan costs for n stored fingerprints, assuming they are spread evenly."""

    n: int
    tables: int
    rows: int  # index rows: one per fingerprint per table
    key_bits: tuple[int, ...]  # key width of each table
    expected_bucket: float  # fingerprints sharing a query's key, per table, on average
    expected_candidates: float  # fingerprints a query compares, over all tables
    memory_bytes: int  # in-memory index: the build's peak above its inputs (see `memory`)
    index_bytes: int = 0  # in-memory index: what stays resident once built

    def describe(self) -> str:
        """Return the cost in one line."""
        return (
            f"{self.tables} tables, {self.rows:,} rows, {min(self.key_bits)}-{max(self.key_bits)}"
            f"-bit keys, ~{self.expected_bucket:,.1f} per bucket, "
            f"~{self.expected_candidates:,.1f} candidates per query, "
            f"{self.memory_bytes / 2**20:,.0f} MiB to build in memory "
            f"({self.index_bytes / 2**20:,.0f} MiB held)"
        )


@dataclass(frozen=True)
class Plan:
    """Blocks (widths from the most significant bit down) and the largest distance answered."""

    widths: tuple[int, ...]
    k_max: int

    def __post_init__(self) -> None:
        widths = tuple(int(w) for w in self.widths)
        object.__setattr__(self, "widths", widths)
        if any(w < 1 for w in widths) or sum(widths) != BITS:
            raise PlanError(f"block widths must be positive and add up to 64, not {widths}")
        if not 0 <= self.k_max < len(widths):
            raise PlanError(
                f"k_max={self.k_max} needs more than {self.k_max} blocks; this plan has "
                f"{len(widths)}: use at least {self.k_max + 1}"
            )
        if self.table_count > MAX_TABLES:
            raise PlanError(
                f"{len(widths)} blocks for k_max={self.k_max} make {self.table_count:,} tables "
                f"(at most {MAX_TABLES:,}): use fewer blocks"
            )

    @classmethod
    def even(cls, blocks: int, k_max: int) -> Plan:
        """Return the plan with `blocks` blocks as even as possible (wider ones first)."""
        if not 1 <= blocks <= BITS:
            raise PlanError(f"blocks must be from 1 to 64, not {blocks}")
        base, extra = divmod(BITS, blocks)
        return cls(tuple(base + (i < extra) for i in range(blocks)), k_max)

    @property
    def blocks(self) -> int:
        """Return the number of blocks, b."""
        return len(self.widths)

    @property
    def table_count(self) -> int:
        """Return C(b, b - k_max)."""
        return math.comb(len(self.widths), len(self.widths) - self.k_max)

    @cached_property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """Return each table's key blocks, in a fixed order."""
        return tuple(combinations(range(self.blocks), self.blocks - self.k_max))

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """Return each block's lowest bit position (block 0 holds the highest bits)."""
        starts, top = [], BITS
        for width in self.widths:
            top -= width
            starts.append(top)
        return tuple(starts)

    @cached_property
    def key_bits(self) -> tuple[int, ...]:
        """Return each table's key width in bits."""
        return tuple(sum(self.widths[b] for b in table) for table in self.tables)

    @property
    def version(self) -> str:
        """Return a stable name: it changes whenever the tables would."""
        return f"p1-k{self.k_max}-" + ".".join(map(str, self.widths))

    @cached_property
    def key_shifts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return, per table and key block, the block's source shift, its mask and where it
        lands in the key (uint64 arrays of shape (tables, b - k_max)): the key function."""
        src, mask, dst = [], [], []
        for table in self.tables:
            remaining = sum(self.widths[b] for b in table)
            row_src, row_mask, row_dst = [], [], []
            for block in table:
                remaining -= self.widths[block]
                row_src.append(self.starts[block])
                row_mask.append((1 << self.widths[block]) - 1)
                row_dst.append(remaining)
            src.append(row_src)
            mask.append(row_mask)
            dst.append(row_dst)
        return tuple(np.array(a, dtype=np.uint64) for a in (src, mask, dst))

    def keys(self, values: np.ndarray, table: int | None = None) -> np.ndarray:
        """Return the key of every fingerprint in every table, uint64 (tables, n), or in one
        table, uint64 (n,): a table's key blocks, concatenated from the highest bits down."""
        values = np.asarray(values, dtype=np.uint64).reshape(-1)
        if len(values) == 1:  # one query: Python's integers beat numpy's per-call cost
            value, out = int(values[0]), []
            for blocks in (
                self._key_blocks if table is None else self._key_blocks[table : table + 1]
            ):
                key = 0
                for shift, bits, place in blocks:
                    key |= ((value >> shift) & bits) << place
                out.append(key)
            keys = np.array(out, dtype=np.uint64)[:, None]
            return keys if table is None else keys[0]
        if table is None:
            columns = self._key_columns
        else:
            src, mask, dst = (a[table : table + 1] for a in self.key_shifts)
            columns = [
                (src[:, j, None], mask[:, j, None], dst[:, j, None]) for j in range(len(src[0]))
            ]
        # One step per key block, over every table at once: (tables, n) for each.
        out = None
        for shift, bits, place in columns:
            block = values[None, :] >> shift
            block &= bits
            block <<= place
            if out is None:
                out = block
            else:
                out |= block
        return out if table is None else out[0]

    @cached_property
    def _key_blocks(self) -> list[list[tuple[int, int, int]]]:
        """Return, per table, each key block's (source shift, mask, place) as Python ints."""
        return [
            [(int(s), int(m), int(d)) for s, m, d in zip(*row, strict=True)]
            for row in zip(*self.key_shifts, strict=True)
        ]

    @cached_property
    def _key_columns(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Return, for each key block, its (source shift, mask, place) over the tables, as
        columns (tables, 1): the key function, ready to broadcast."""
        src, mask, dst = self.key_shifts
        return [(src[:, j, None], mask[:, j, None], dst[:, j, None]) for j in range(len(src[0]))]

    def key(self, value: int, table: int) -> int:
        """Return one fingerprint's key in one table, as a Python int."""
        return int(self.keys(np.array([value], dtype=np.uint64), table)[0])

    def cost(self, n: int) -> PlanCost:
        """Return what the plan costs for n evenly spread fingerprints."""
        buckets = [n / 2**bits for bits in self.key_bits]
        held, peak = memory(n, self.key_bits)
        return PlanCost(
            n=n,
            tables=self.table_count,
            rows=n * self.table_count,
            key_bits=self.key_bits,
            expected_bucket=sum(buckets) / len(buckets),
            expected_candidates=sum(buckets),
            memory_bytes=peak,
            index_bytes=held,
        )


@dataclass(frozen=True)
class Choice:
    """The planner's pick and the alternatives it weighed, to be explained to a person."""

    plan: Plan
    cost: PlanCost
    considered: tuple[tuple[Plan, PlanCost, str], ...]  # (plan, cost, verdict)

    def explain(self) -> str:
        """Return the reasoning as a small table."""
        lines = [
            f"n={self.cost.n:,}, k_max={self.plan.k_max}: chose {self.plan.blocks} blocks "
            f"({self.plan.version}): {self.cost.describe()}",
            "",
            "blocks | tables | rows | key bits | candidates/query | build peak MiB | verdict",
        ]
        for plan, cost, verdict in self.considered:
            lines.append(
                f"{plan.blocks:>6} | {cost.tables:>6,} | {cost.rows:>14,} | "
                f"{min(cost.key_bits)}-{max(cost.key_bits):<4} | "
                f"{cost.expected_candidates:>16,.1f} | {cost.memory_bytes / 2**20:>14,.0f} | "
                f"{verdict}"
            )
        return "\n".join(lines)


# A build's chunked temporaries (memindex.CHUNK rows at a time) and the allocator's slack.
BUILD_SLACK = 8 * 2**20


def directory_bits(n: int, key_bits: int) -> int:
    """Return the width of a table's directory for n stored fingerprints: the top bits of the
    key, about two to four fingerprints per slot, at most the key."""
    return min(key_bits, max(8, n.bit_length() - 2))


def memory(n: int, key_bits: tuple[int, ...]) -> tuple[int, int]:
    """Return the bytes an in-memory index of n distinct fingerprints holds once built, and the
    peak of building it above its inputs (dedup.engine.memindex, whose layout this mirrors).

    Held: each fingerprint (8 bytes) and its id (8), where its ids start (4), whether each is
    alive (1); per table a row number (4) and the directory (4 per slot). Rows and offsets are 8
    bytes from 2^31 fingerprints on. Building adds one 8-byte scratch array (a table's packed
    keys, sorted in place) to what is held, and a few MiB of chunked temporaries (BUILD_SLACK);
    sorting the input (24 bytes each) peaks lower.
    """
    small = 4 if n < 2**31 else 8
    directory = sum((1 << directory_bits(n, bits)) + 1 for bits in key_bits) * small
    held = n * (8 + 8 + small + 1) + n * len(key_bits) * small + directory
    return held, max(held + 8 * n, 24 * n) + BUILD_SLACK


# Cost model of one query, in comparable units: a table probe costs about as much as comparing
# this many candidates (numpy compares a few hundred fingerprints in the time of one lookup).
PROBE_COST = 200.0


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB" if nbytes >= 2**20 else f"{nbytes:,} bytes"


def plan_for(n: int, k_max: int, memory_bytes: int | None = None) -> Choice:
    """Pick the number of blocks for n fingerprints and k_max within a memory budget.

    Every b from k_max + 1 up is costed: a query pays a probe per table plus a comparison per
    candidate. The cheapest plan that fits the budget wins; more blocks mean more tables (space)
    and longer keys (fewer candidates, time): the classic space-for-time trade.
    """
    if n < 1:
        raise PlanError(f"n must be at least 1, not {n}")
    if not 0 <= k_max < BITS:
        raise PlanError(f"k_max must be from 0 to 63, not {k_max}")
    considered = []
    best: tuple[float, Plan, PlanCost] | None = None
    for blocks in range(k_max + 1, BITS + 1):
        if math.comb(blocks, blocks - k_max) > MAX_TABLES:
            break
        plan = Plan.even(blocks, k_max)
        cost = plan.cost(n)
        work = cost.tables * PROBE_COST + cost.expected_candidates
        if considered and cost.expected_candidates < 0.01 and work > considered[-1][3]:
            break  # buckets are empty already: more blocks only add tables
        if memory_bytes is not None and cost.memory_bytes > memory_bytes:
            verdict = f"over the budget of {memory_bytes / 2**20:,.0f} MiB"
        else:
            verdict = f"query work {work:,.0f}"
            if best is None or work < best[0]:
                best = (work, plan, cost)
        considered.append((plan, cost, verdict, work))
    if best is None:
        cheapest = min(considered, key=lambda c: c[1].memory_bytes)
        raise PlanError(
            f"no plan for n={n:,} and k_max={k_max} fits in {_size(memory_bytes)}; "
            f"the smallest needs {_size(cheapest[1].memory_bytes)} "
            f"({cheapest[0].blocks} blocks): raise the budget or lower k_max"
        )
    _, plan, cost = best
    considered = tuple((p, c, "chosen" if p == plan else v) for p, c, v, _ in considered)
    return Choice(plan, cost, considered)
