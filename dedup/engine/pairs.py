"""Batch work over a whole corpus: every pair within distance k, and clusters of copies.

All pairs come from the segment tables without an N^2 loop: in each table the fingerprints are
sorted by the table's key, and only fingerprints that share a key are compared. Exact copies
collapse to one representative first, so a thousand copies cost one comparison, not a million.
"""

from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dedup.engine.graph import story_clusters
from dedup.engine.plan import MAX_TABLES, Plan, PlanError

Progress = Callable[[int], None]  # called with how many tables are done, after each


@dataclass(frozen=True)
class Pairs:
    """Pairs of positions a < b within distance k, sorted by (a, b): parallel arrays."""

    a: np.ndarray  # int64
    b: np.ndarray  # int64
    distance: np.ndarray  # uint8

    def __len__(self) -> int:
        return len(self.a)


def plan_for_pairs(n: int, k: int) -> Plan:
    """Return the even plan with the least all-pairs work for n distinct fingerprints.

    Work is one pass per table over all n fingerprints, plus one comparison per candidate
    pair: about n^2 / 2^(key bits + 1) per table for spread-out fingerprints. More blocks mean
    longer keys (fewer candidates) but more tables to sort: the cheapest wins.
    """
    best: tuple[float, Plan] | None = None
    for blocks in range(k + 1, 65):
        if math.comb(blocks, blocks - k) > MAX_TABLES:
            break
        tables, key_bits = _even_key_bits(blocks, k)
        candidates = sum(count * n * n / 2 ** (bits + 1) for bits, count in key_bits)
        work = tables * n + candidates
        if best is None or work < best[0]:
            best = (work, blocks)
    if best is None:
        raise PlanError(f"k={k} needs more than {MAX_TABLES:,} tables: lower it")
    return Plan.even(best[1], k)


@functools.cache
def _even_key_bits(blocks: int, k: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Return an even plan's table count and (key bits, tables with that width) pairs."""
    plan = Plan.even(blocks, k)
    return plan.table_count, tuple(collections.Counter(plan.key_bits).items())


def pairs(
    values: np.ndarray, k: int, *, plan: Plan | None = None, progress: Progress | None = None
) -> Pairs:
    """Return every pair of positions whose fingerprints are within distance k, once each."""
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    reps, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    plan = plan or plan_for_pairs(len(reps), k)
    if k > plan.k_max:
        raise PlanError(f"k={k} is above the plan's k_max={plan.k_max} ({plan.version})")
    ra, rb, rd = _representative_pairs(reps, k, plan, progress)
    # Expand representatives to positions: every copy of one with every copy of the other,
    # plus the copies of one representative among themselves, at distance 0.
    members = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    a1, b1, which = _products(starts[ra], counts[ra], starts[rb], counts[rb])
    a2, b2 = pairs_within_runs(starts, counts)
    a = np.concatenate([members[a1], members[a2]])
    b = np.concatenate([members[b1], members[b2]])
    d = np.concatenate([rd[which], np.zeros(len(a2), np.uint8)])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((hi, lo))
    return Pairs(lo[order].astype(np.int64), hi[order].astype(np.int64), d[order])


def _representative_pairs(
    reps: np.ndarray, k: int, plan: Plan, progress: Progress | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(reps)
    found_a, found_b, found_d = [], [], []
    number_bits = max(1, (n - 1).bit_length())
    for t in range(plan.table_count):
        keys = plan.keys(reps, t)
        if plan.key_bits[t] + number_bits <= 64:
            # The stable argsort's order, from one in-place sort of (key, position) packed.
            keys <<= np.uint64(number_bits)
            keys |= np.arange(n, dtype=np.uint64)
            keys.sort()
            order = (keys & np.uint64((1 << number_bits) - 1)).astype(np.int64)
            keys >>= np.uint64(number_bits)
            sorted_keys = keys
        else:
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
        new_group = np.ones(n, dtype=bool)
        new_group[1:] = sorted_keys[1:] != sorted_keys[:-1]
        group = np.cumsum(new_group) - 1
        size = np.bincount(group)
        active = np.flatnonzero(size[group] > 1)
        step = 1
        # Compare each fingerprint with the one `step` places on in its group, for growing
        # steps: the positions that still have a partner shrink until none is left.
        while len(active):
            active = active[active + step < n]
            active = active[group[active + step] == group[active]]
            if not len(active):
                break
            a, b = order[active], order[active + step]
            d = np.bitwise_count(reps[a] ^ reps[b])
            near = d <= k
            found_a.append(a[near])
            found_b.append(b[near])
            found_d.append(d[near])
            step += 1
        if progress:
            progress(t + 1)
    if not found_a:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty(0, np.uint8)
    a = np.concatenate(found_a).astype(np.int64)
    b = np.concatenate(found_b).astype(np.int64)
    d = np.concatenate(found_d).astype(np.uint8)
    # A pair sharing keys in several tables is found once per table: keep one.
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(lo * n + hi, return_index=True)
    return lo[first], hi[first], d[first]


def _products(start_a, count_a, start_b, count_b) -> tuple[np.ndarray, ...]:
    """Return all (i, j) with i in run a and j in run b, for each pair of runs, and the pair."""
    sizes = count_a * count_b
    which = np.repeat(np.arange(len(sizes)), sizes)
    offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    i = start_a[which] + offset // count_b[which]
    j = start_b[which] + offset % count_b[which]
    return i, j, which


def pairs_within_runs(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return all (i, j), i < j, within each run (the runs of counts[r] positions from
    starts[r])."""
    runs = np.flatnonzero(counts > 1)
    if not len(runs):
        empty = np.empty(0, np.int64)
        return empty, empty
    # For each run and each first member x, pair x with every later member.
    size = counts[runs]
    firsts_per_run = size - 1
    run_of_first = np.repeat(runs, firsts_per_run)
    x = np.arange(int(firsts_per_run.sum())) - np.repeat(
        np.cumsum(firsts_per_run) - firsts_per_run, firsts_per_run
    )
    later = counts[run_of_first] - 1 - x
    i_run = np.repeat(run_of_first, later)
    i = np.repeat(x, later)
    j = (
        np.arange(int(later.sum()))
        - np.repeat(np.cumsum(later) - later, later)
        + np.repeat(x, later)
        + 1
    )
    return starts[i_run] + i, starts[i_run] + j


@dataclass(frozen=True)
class Cluster:
    """A group of near-duplicates: the original (earliest) and every member's distances."""

    original: int  # position
    members: np.ndarray  # positions, the original first, then in order
    distance: np.ndarray  # each member's distance to the original (at most k)
    linked_to: np.ndarray  # the member it is reached from: the original (-1 for the original)
    linked_distance: np.ndarray  # distance to that neighbour


def shared_key_pairs(keys: list[np.ndarray], most: int) -> tuple[np.ndarray, bool]:
    """Return the pairs (a < b) of articles sharing a key (`keys`: each article's) that 2 to
    `most` articles hold, and whether any key is held by more."""
    values = np.concatenate(keys or [[]]).astype(np.uint64)
    if len(values) < 2:
        return np.empty((0, 2), np.int64), False
    holder = np.repeat(np.arange(len(keys)), [len(some) for some in keys])
    # Articles holding one key: runs of it, once sorted. A key in many articles is
    # boilerplate (a menu, a footer) or a popular story's (dedup.engine.popular).
    order = np.argsort(values, kind="stable")
    values = values[order]
    starts = np.flatnonzero(np.diff(values, prepend=~values[:1]))
    counts = np.diff(starts, append=len(values))
    useful = (counts > 1) & (counts <= most)
    i, j = pairs_within_runs(starts[useful], counts[useful])
    a, b = holder[order[i]], holder[order[j]]
    other = a != b
    found = np.stack([np.minimum(a, b)[other], np.maximum(a, b)[other]], axis=1)
    return found, bool((counts > most).any())


def clusters(values: np.ndarray, found: Pairs, order: np.ndarray | None = None) -> list[Cluster]:
    """Group pairs into stories as the review dashboard does (`graph.story_clusters`): each
    around its earliest member, every member a direct copy of it (no chain through members).

    `order` ranks the positions in time (default: position itself). A position whose copies
    all joined earlier originals is in no cluster (its pairs link stories).
    """
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    n = len(values)
    rank = np.arange(n) if order is None else np.argsort(np.argsort(order, kind="stable"))
    near = np.zeros(len(found.a), dtype=bool)
    label = story_clusters(n, found.a, found.b, near, np.ones(len(found.a), np.float32), rank)
    # Earliest neighbour in its own cluster of every position (by rank), from both ends.
    inside = label[found.a] == label[found.b]
    ends = np.concatenate([found.a[inside], found.b[inside]])
    others = np.concatenate([found.b[inside], found.a[inside]])
    dists = np.concatenate([found.distance[inside], found.distance[inside]])
    pick = np.lexsort((rank[others], ends))
    ends, others, dists = ends[pick], others[pick], dists[pick]
    first = np.ones(len(ends), dtype=bool)
    first[1:] = ends[1:] != ends[:-1]
    neighbour = np.full(n, -1, dtype=np.int64)
    neighbour_distance = np.zeros(n, dtype=np.uint8)
    neighbour[ends[first]] = others[first]
    neighbour_distance[ends[first]] = dists[first]

    if not len(ends):
        return []
    grouped = np.unique(ends)  # positions in some cluster
    by_label = np.lexsort((rank[grouped], label[grouped]))
    grouped = grouped[by_label]
    cuts = np.flatnonzero(np.diff(label[grouped])) + 1
    result = []
    for members in np.split(grouped, cuts):
        original = members[0]
        linked = neighbour[members].copy()
        linked_distance = neighbour_distance[members].copy()
        linked[0], linked_distance[0] = -1, 0
        result.append(
            Cluster(
                original=int(original),
                members=members,
                distance=np.bitwise_count(values[members] ^ values[original]).astype(np.uint8),
                linked_to=linked,
                linked_distance=linked_distance,
            )
        )
    result.sort(key=lambda c: rank[c.original])
    return result
