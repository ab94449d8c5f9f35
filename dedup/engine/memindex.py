"""The in-memory segment index: every fingerprint within distance k of a query, exactly.

Layout. Exact copies collapse first: the index stores each distinct fingerprint once (a
*representative*) and keeps the ids that share it. Each table of the plan holds every
representative once, ordered by the table's key, as two flat arrays over all tables (values
and representative numbers) and a directory: for the top `d` bits of each key, where its run
starts. A query computes its key in every table at once, reads the runs from the directory,
and compares the fingerprints found there (numpy, `bitwise_count`). Additions wait in a small
unsorted buffer that is scanned directly, and are merged into the tables when it grows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dedup.engine.plan import Plan
from dedup.engine.storage import EMPTY_HITS, HOT_FACTOR, HOT_MINIMUM, Hits, check_k

# Additions wait unsorted until there are this many, or a twentieth of the index.
PENDING_LIMIT = 1 << 16
FORMAT = "dedup-memindex-1"


class MemIndex:
    """Fingerprints (uint64) with integer ids, searchable within any distance up to k_max: a
    storage.SegmentIndex in memory."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._key_bits = np.array(plan.key_bits, dtype=np.uint64)
        self._reset(np.empty(0, np.uint64), np.empty(0, np.int64))

    # --- building ---------------------------------------------------------------------------

    def _reset(self, values: np.ndarray, ids: np.ndarray) -> None:
        """Rebuild everything from (value, id) pairs."""
        order = np.lexsort((ids, values))
        values, ids = values[order], ids[order]
        first = np.ones(len(values), dtype=bool)
        first[1:] = values[1:] != values[:-1]
        self._reps = values[first]  # distinct fingerprints, sorted
        self._group_start = np.flatnonzero(first).astype(np.int64)
        self._group_end = np.append(self._group_start[1:], len(values)).astype(np.int64)
        self._ids = ids  # ids grouped by representative
        self._alive = np.ones(len(ids), dtype=bool)
        self._pending_values = np.empty(0, np.uint64)
        self._pending_ids = np.empty(0, np.int64)
        self._removed = 0
        self._build_tables()

    def _build_tables(self) -> None:
        reps = self._reps
        n, tables = len(reps), self.plan.table_count
        # Directory width: about one representative per directory slot, at most the key.
        want = max(8, int(np.ceil(np.log2(max(n, 2)))))
        self._dir_bits = np.minimum(self._key_bits, np.uint64(want))
        sizes = (1 << self._dir_bits.astype(np.int64)) + 1
        self._dir_base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._dir_shift = self._key_bits - self._dir_bits
        self._directory = np.empty(int(sizes.sum()), dtype=np.int64)
        self._values = np.empty(n * tables, dtype=np.uint64)
        self._rep_of = np.empty(n * tables, dtype=np.int32 if n < 2**31 else np.int64)
        for t in range(tables):
            keys = self.plan.keys(reps, t)
            order = np.argsort(keys, kind="stable")
            prefix = keys[order] >> (self._key_bits[t] - self._dir_bits[t])
            base = t * n
            self._values[base : base + n] = reps[order]
            self._rep_of[base : base + n] = order
            slots = np.arange(sizes[t], dtype=np.uint64)
            start = self._dir_base[t]
            self._directory[start : start + sizes[t]] = base + np.searchsorted(prefix, slots)

    def add(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Add fingerprints with their ids (an id already present is added again)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        values = np.asarray(values, dtype=np.uint64).reshape(-1)
        if len(ids) != len(values):
            raise ValueError(f"{len(ids)} ids for {len(values)} fingerprints")
        self._pending_ids = np.concatenate([self._pending_ids, ids])
        self._pending_values = np.concatenate([self._pending_values, values])
        if len(self._pending_ids) > max(PENDING_LIMIT, len(self._ids) // 20):
            self.compact()

    def remove(self, ids: np.ndarray) -> int:
        """Remove every entry of these ids; return how many entries went."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        hit = np.isin(self._ids, ids) & self._alive
        self._alive &= ~hit
        keep = ~np.isin(self._pending_ids, ids)
        gone = int(hit.sum()) + int((~keep).sum())
        self._pending_ids, self._pending_values = (
            self._pending_ids[keep],
            self._pending_values[keep],
        )
        self._removed += int(hit.sum())
        if self._removed > len(self._ids) // 4:
            self.compact()
        return gone

    def compact(self) -> None:
        """Merge pending additions into the tables and drop removed entries."""
        values = np.repeat(self._reps, self._group_end - self._group_start)[self._alive]
        self._reset(
            np.concatenate([values, self._pending_values]),
            np.concatenate([self._ids[self._alive], self._pending_ids]),
        )

    def __len__(self) -> int:
        return int(self._alive.sum()) + len(self._pending_ids)

    # --- searching --------------------------------------------------------------------------

    def query(self, value: int, k: int) -> list[tuple[int, int]]:
        """Return (id, distance) of every stored fingerprint within distance k, nearest first."""
        check_k(self.plan, k)
        q = np.uint64(value)
        found: list[tuple[int, int]] = []
        if len(self._reps):
            keys = self.plan.keys(np.array([q], dtype=np.uint64))[:, 0]
            slot = self._dir_base + (keys >> self._dir_shift).astype(np.int64)
            lo, hi = self._directory[slot], self._directory[slot + 1]
            lengths = hi - lo
            total = int(lengths.sum())
            if total:
                position = np.arange(total) + np.repeat(
                    lo - (np.cumsum(lengths) - lengths), lengths
                )
                d = np.bitwise_count(self._values[position] ^ q)
                near = np.flatnonzero(d <= k)
                if len(near):
                    best: dict[int, int] = {}
                    for rep, dist in zip(
                        self._rep_of[position[near]].tolist(), d[near].tolist(), strict=True
                    ):
                        best[rep] = dist
                    for rep, dist in best.items():
                        start, end = self._group_start[rep], self._group_end[rep]
                        alive = self._alive[start:end]
                        found += [(i, dist) for i in self._ids[start:end][alive].tolist()]
        if len(self._pending_ids):
            d = np.bitwise_count(self._pending_values ^ q)
            near = np.flatnonzero(d <= k)
            found += zip(self._pending_ids[near].tolist(), d[near].tolist(), strict=True)
        found.sort(key=lambda hit: (hit[1], hit[0]))
        return found

    def query_many(self, values: np.ndarray, k: int, chunk: int | None = None) -> Hits:
        """Return every (query, id, distance) within distance k, for many queries at once."""
        check_k(self.plan, k)
        values = np.asarray(values, dtype=np.uint64).reshape(-1)
        if chunk is None:  # about two million candidates in flight at a time
            per_query = self.plan.cost(max(len(self._reps), 1)).expected_candidates
            chunk = int(min(4096, max(1, 2_000_000 // max(per_query, 1.0))))
        parts = [self._search(values[i : i + chunk], k, i) for i in range(0, len(values), chunk)]
        if not parts:
            return EMPTY_HITS
        return Hits(*(np.concatenate(p) for p in zip(*parts, strict=True)))

    def _search(self, values: np.ndarray, k: int, offset: int) -> tuple[np.ndarray, ...]:
        n = len(self._reps)
        queries, reps, dist = _EMPTY_I64, _EMPTY_I64, _EMPTY_U8
        if n:
            # the key of every query in every table at once: (tables, queries)
            keys = self.plan.keys(values)
            prefix = keys >> self._dir_shift[:, None]
            slot = (self._dir_base[:, None] + prefix.astype(np.int64)).ravel()
            lo, hi = self._directory[slot], self._directory[slot + 1]
            lengths = hi - lo
            total = int(lengths.sum())
            if total:
                # positions lo..hi-1 of every (table, query) run, flattened
                run = np.repeat(np.arange(len(lo)), lengths)
                position = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                position += lo[run]
                query = run % len(values)
                d = np.bitwise_count(self._values[position] ^ values[query])
                near = d <= k
                key = query[near].astype(np.int64) * n + self._rep_of[position[near]]
                key, first = np.unique(key, return_index=True)
                queries, reps, dist = key // n, key % n, d[near][first]
        ids_q, ids, ids_d = self._expand(queries, reps, dist)
        if len(self._pending_ids):
            d = np.bitwise_count(self._pending_values[None, :] ^ values[:, None])
            q, j = np.nonzero(d <= k)
            ids_q = np.concatenate([ids_q, q])
            ids = np.concatenate([ids, self._pending_ids[j]])
            ids_d = np.concatenate([ids_d, d[q, j]])
        return ids_q + offset, ids, ids_d.astype(np.uint8)

    def _expand(self, queries, reps, dist) -> tuple[np.ndarray, ...]:
        """Turn (query, representative) matches into (query, id) matches, live entries only."""
        if not len(reps):
            return _EMPTY_I64, _EMPTY_I64, _EMPTY_U8
        start, end = self._group_start[reps], self._group_end[reps]
        sizes = end - start
        which = np.repeat(np.arange(len(reps)), sizes)
        entry = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        entry += start[which]
        live = self._alive[entry]
        return queries[which][live], self._ids[entry][live], dist[which][live]

    # --- health and persistence -------------------------------------------------------------

    def hot_buckets(
        self, factor: float = HOT_FACTOR, minimum: int = HOT_MINIMUM
    ) -> list[tuple[int, int, int]]:
        """Return (table, key, size) of buckets far above the size even spreading gives."""
        n = len(self._reps)
        hot = []
        for t, bits in enumerate(self.plan.key_bits):
            keys = self.plan.keys(self._values[t * n : (t + 1) * n], t)
            if not n:
                continue
            edges = np.flatnonzero(np.diff(keys)) + 1
            starts = np.concatenate([[0], edges])
            sizes = np.diff(np.append(starts, n))
            limit = max(minimum, factor * n / 2**bits)
            for i in np.flatnonzero(sizes > limit):
                hot.append((t, int(keys[starts[i]]), int(sizes[i])))
        return sorted(hot, key=lambda h: -h[2])

    def stats(self) -> dict:
        """Return sizes: entries, distinct fingerprints, pending, table rows, bytes."""
        arrays = (self._values, self._rep_of, self._directory, self._reps, self._ids)
        return {
            "entries": len(self),
            "distinct": len(self._reps),
            "pending": len(self._pending_ids),
            "rows": len(self._values),
            "bytes": int(sum(a.nbytes for a in arrays)),
            "plan": self.plan.version,
        }

    def save(self, path: str | Path) -> None:
        """Write the index's entries and plan to a .npz file (tables are rebuilt on load)."""
        self.compact()
        with open(path, "wb") as handle:  # a file object: numpy must not append ".npz"
            np.savez(
                handle,
                format=np.array(FORMAT),
                widths=np.array(self.plan.widths),
                k_max=np.array(self.plan.k_max),
                values=np.repeat(self._reps, self._group_end - self._group_start),
                ids=self._ids,
            )

    @classmethod
    def load(cls, path: str | Path) -> MemIndex:
        """Read an index written by `save`."""
        not_index = ValueError(f"{path} is not a dedup index file ({FORMAT}, written by save)")
        try:
            data = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            if isinstance(error, FileNotFoundError):
                raise
            raise not_index from error
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise not_index
        with data:
            if "format" not in data or str(data["format"]) != FORMAT:
                raise not_index
            index = cls(Plan(tuple(data["widths"].tolist()), int(data["k_max"])))
            index._reset(data["values"], data["ids"])
        return index

    @classmethod
    def build(cls, plan: Plan, ids: np.ndarray, values: np.ndarray) -> MemIndex:
        """Return an index holding these fingerprints, built in one go."""
        index = cls(plan)
        index._reset(
            np.asarray(values, dtype=np.uint64).reshape(-1),
            np.asarray(ids, dtype=np.int64).reshape(-1),
        )
        return index


_EMPTY_I64 = np.empty(0, np.int64)
_EMPTY_U8 = np.empty(0, np.uint8)
