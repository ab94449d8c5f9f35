"""The in-memory segment index: every fingerprint within distance k of a query, exactly.

Layout. Exact copies collapse first: the index stores each distinct fingerprint once (a
*representative*, sorted) and keeps the ids that share it. Each table of the plan orders the
representatives by the table's key and holds only their numbers (4 bytes a row below 2^31
representatives), with a directory: for the top `d` bits of each key, where its run starts
(plan.directory_bits: about two to four representatives per slot). A query computes its key in
every table at once, reads the runs from the directory, and compares the fingerprints found
there (numpy, `bitwise_count`). Additions wait in a small unsorted buffer that is scanned
directly, and are merged into the tables when it grows.

Memory. Building peaks at what the index holds plus one 8-byte array: each table's keys are
packed with the representative's number into one uint64 (the key's top bits, then the number),
sorted in place and unpacked into the table; the other work goes in chunks of CHUNK rows.
plan.memory models this; tests/engine/test_memindex_memory.py checks a build's peak against it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dedup.engine.plan import Plan, directory_bits
from dedup.engine.storage import EMPTY_HITS, HOT_FACTOR, HOT_MINIMUM, Hits, check_k

# Additions wait unsorted until there are this many, or a twentieth of the index.
PENDING_LIMIT = 1 << 16
FORMAT = "dedup-memindex-1"
CHUNK = 1 << 16  # rows per step of the chunked work in a build


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
        self._rep_of = self._directory = None  # let the old tables go before the new ones come
        n = len(values)
        small = np.int32 if n < 2**31 else np.int64
        order = np.argsort(values)
        values, ids = values[order], ids[order]
        del order
        first = np.ones(n, dtype=bool)
        np.not_equal(values[1:], values[:-1], out=first[1:])
        if not first.all():
            # Copies: their ids in ascending order within each representative.
            copy = ~first
            copy[:-1] |= ~first[1:]
            at = np.flatnonzero(copy)
            ids[at] = ids[at][np.lexsort((ids[at], values[at]))]
            values = values[first]
        self._reps = values  # distinct fingerprints, sorted
        del values
        # Where each representative's ids start (and, last, where they end).
        self._offsets = np.empty(len(self._reps) + 1, dtype=small)
        done = 0
        for a in range(0, n, CHUNK):
            starts = np.flatnonzero(first[a : a + CHUNK]) + a
            self._offsets[done : done + len(starts)] = starts
            done += len(starts)
        self._offsets[-1] = n
        del first
        self._ids = ids  # ids grouped by representative
        self._alive = np.ones(n, dtype=bool)
        self._pending_values = np.empty(0, np.uint64)
        self._pending_ids = np.empty(0, np.int64)
        self._removed = 0
        self._build_tables()

    def _build_tables(self) -> None:
        reps = self._reps
        n, tables = len(reps), self.plan.table_count
        small = np.int32 if n < 2**31 else np.int64
        self._dir_bits = np.array(
            [directory_bits(n, bits) for bits in self.plan.key_bits], dtype=np.uint64
        )
        sizes = (1 << self._dir_bits.astype(np.int64)) + 1
        self._dir_base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._dir_base_u = self._dir_base.astype(np.uint64)
        self._dir_shift = self._key_bits - self._dir_bits
        self._table_base = np.arange(tables, dtype=np.int64) * n
        self._table_base_list = self._table_base.tolist()
        self._rep_of = np.empty(n * tables, dtype=small)
        self._directory = np.empty(int(sizes.sum()), dtype=small)
        number_bits = max(1, (n - 1).bit_length())
        number_mask = np.uint64((1 << number_bits) - 1)
        packed = np.empty(n, dtype=np.uint64)  # the one n-sized scratch array
        for t in range(tables):
            key_bits, dir_bits = int(self._key_bits[t]), int(self._dir_bits[t])
            # Sort on the key's top bits, as many as fit beside the number (at least the
            # directory's: rows within a slot need no order, the query compares them all).
            sort_bits = max(dir_bits, min(key_bits, 64 - number_bits))
            if sort_bits + number_bits > 64:
                raise ValueError(f"{n:,} distinct fingerprints are too many for one index")
            for a in range(0, n, CHUNK):
                key = self.plan.keys(reps[a : a + CHUNK], t)
                key >>= np.uint64(key_bits - sort_bits)
                key <<= np.uint64(number_bits)
                key |= np.arange(a, a + len(key), dtype=np.uint64)
                packed[a : a + len(key)] = key
            packed.sort()
            row = self._rep_of[t * n : (t + 1) * n]
            for a in range(0, n, CHUNK):
                row[a : a + CHUNK] = packed[a : a + CHUNK] & number_mask
            # The directory: where each slot's run starts, in the table's rows.
            directory = self._directory[self._dir_base[t] : self._dir_base[t] + sizes[t]]
            shift = np.uint64(sort_bits + number_bits - dir_bits)
            for a in range(0, int(sizes[t]) - 1, CHUNK):
                slots = np.arange(a, min(a + CHUNK, int(sizes[t]) - 1), dtype=np.uint64)
                directory[a : a + len(slots)] = np.searchsorted(packed, slots << shift)
            directory[-1] = n
        del packed

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
        values = np.repeat(self._reps, np.diff(self._offsets))[self._alive]
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
            slot = self._dir_base_u + (keys >> self._dir_shift)
            # Every table's run, its rows listed in Python (a few each, for numpy to read).
            position: list[int] = []
            for base, (lo, hi) in zip(
                self._table_base_list, self._directory[slot[:, None] + _RUN].tolist(), strict=True
            ):
                position += range(base + lo, base + hi)
            if position:
                rep = self._rep_of[position]
                d = np.bitwise_count(self._reps[rep] ^ q)
                near = np.flatnonzero(d <= k)
                if len(near):
                    best = dict(zip(rep[near].tolist(), d[near].tolist(), strict=True))
                    for r, dist in best.items():
                        start, end = self._offsets[r], self._offsets[r + 1]
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
            lengths = (hi - lo).astype(np.int64)
            total = int(lengths.sum())
            if total:
                # rows lo..hi-1 of every (table, query) run, flattened
                run = np.repeat(np.arange(len(lo)), lengths)
                position = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                position += (lo + np.repeat(self._table_base, len(values)))[run]
                query = run % len(values)
                rep = self._rep_of[position].astype(np.int64)
                d = np.bitwise_count(self._reps[rep] ^ values[query])
                near = d <= k
                key = query[near].astype(np.int64) * n + rep[near]
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
        start, end = self._offsets[reps].astype(np.int64), self._offsets[reps + 1]
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
            if not n:
                continue
            keys = np.sort(self.plan.keys(self._reps, t))
            edges = np.flatnonzero(np.diff(keys)) + 1
            starts = np.concatenate([[0], edges])
            sizes = np.diff(np.append(starts, n))
            limit = max(minimum, factor * n / 2**bits)
            for i in np.flatnonzero(sizes > limit):
                hot.append((t, int(keys[starts[i]]), int(sizes[i])))
        return sorted(hot, key=lambda h: -h[2])

    def stats(self) -> dict:
        """Return sizes: entries, distinct fingerprints, pending, table rows, bytes."""
        arrays = (self._rep_of, self._directory, self._reps, self._ids, self._offsets, self._alive)
        return {
            "entries": len(self),
            "distinct": len(self._reps),
            "pending": len(self._pending_ids),
            "rows": len(self._rep_of),
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
                values=np.repeat(self._reps, np.diff(self._offsets)),
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


_RUN = np.array([0, 1], dtype=np.uint64)  # a directory slot and the next: a run's bounds
_EMPTY_I64 = np.empty(0, np.int64)
_EMPTY_U8 = np.empty(0, np.uint8)
