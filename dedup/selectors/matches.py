"""The match table each process serves the dashboard from, kept at the version in the database.

Every write of matches or decisions moves `MatchVersion` in its own transaction (triggers,
migration 0020), so one cheap query tells any process whether its table is current. While only
rows were added (`reset` unchanged), the rows after the last ids seen are read and appended;
anything else (a rebuild updating matches in place, a deleted upload) reads everything again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.db import connection

from dedup.models import Settings
from dedup.selectors.clusterings import (
    DUPLICATE,
    REJECTED,
    UNDECIDED,
    MatchTable,
    pair_key,
)
from dedup.selectors.floors import SQL as FLOOR_SQL
from dedup.selectors.floors import Floor

VERDICT_CODES = {"duplicate": DUPLICATE, "not_duplicate": REJECTED}
# Fewer new articles than this are read by id; more by one range scan of their ids.
READ_BY_ID = 1000


@dataclass(frozen=True)
class TableVersion:
    version: int  # moves at every write of matches or decisions
    reset: int  # moves at every write that is not an addition


def floor_current() -> Floor:
    """Return the settings' bars now (one query): a change shows at the next request."""
    rows = rows_read(FLOOR_SQL)
    return Floor(*rows[0]) if rows else Floor.of(Settings())  # the row's defaults


def table_version() -> TableVersion:
    """Return the version of the stored matches and decisions (one query)."""
    rows = rows_read("SELECT version, reset FROM dedup_matchversion WHERE id = 1")
    return TableVersion(*rows[0]) if rows else TableVersion(0, 0)


class MatchCache:
    """A process's match table at the version it was read under; `rows_read` counts the
    matches read from the database (what an append saves)."""

    def __init__(self) -> None:
        self._cached: tuple[TableVersion, MatchTable] | None = None
        self._lock = threading.Lock()
        self.rows_read = 0

    def table(self) -> MatchTable:
        """Return the table, brought to the database's version first when it moved, and
        under the settings' bars now (a table with other bars is copied, its clusterings
        left behind: they showed what the old bars did)."""
        version, floor = table_version(), floor_current()
        cached = self._cached
        if cached is None or cached[0] != version:
            with self._lock:  # one thread reads, the others wait for its table
                cached = self._cached
                if cached is None or cached[0] != version:
                    if cached is not None and cached[0].reset == version.reset:
                        table, read = table_extend(cached[1])
                    else:
                        table, read = table_load()
                    self.rows_read += read
                    cached = self._cached = (version, table)
        table = cached[1]
        if table.floor != floor:
            with self._lock:
                current = self._cached  # another thread may have set the bars already
                if current is not None and current[0] == version:
                    table = current[1]
                if table.floor != floor:
                    table = _floor_set(table, floor)
                    self._cached = (version, table)
        return table

    def forget(self) -> None:
        """Drop the table: the next request reads everything."""
        self._cached = None

    @property
    def loaded(self) -> bool:
        return self._cached is not None


_cache = MatchCache()


def match_table() -> MatchTable:
    """Return this process's match table, current with the database."""
    return _cache.table()


def match_cache() -> MatchCache:
    """Return this process's cache (warming, tests and benchmarks look at it)."""
    return _cache


def table_forget() -> None:
    """Drop this process's table (tests and benchmarks)."""
    _cache.forget()


def _floor_set(table: MatchTable, floor: Floor) -> MatchTable:
    """Return the table under other settings' bars: the same arrays, no clusterings."""
    kept = dataclasses.replace(table, floor=floor, _clusterings=OrderedDict())
    if "rank" in vars(table):
        vars(kept)["rank"] = table.rank
    return kept


def rows_read(sql: str, params=()) -> list[tuple]:
    """Return the rows of one query."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _column(rows: list[tuple], i: int, dtype) -> np.ndarray:
    return np.fromiter((r[i] for r in rows), dtype, len(rows))


@dataclass
class NewMatches:
    """Matches read from the database, as arrays (article ids, not nodes)."""

    match_id: np.ndarray
    a_ids: np.ndarray
    b_ids: np.ndarray
    kind: np.ndarray
    distance: np.ndarray
    similarity: np.ndarray
    shared_chars: np.ndarray

    @classmethod
    def read(cls, *, after: int) -> NewMatches:
        """Read the matches with an id above `after`, in id order."""
        rows = rows_read(
            "SELECT id, a_id, b_id,"
            " CASE kind WHEN 'exact' THEN 0 WHEN 'partial' THEN 2 ELSE 1 END,"
            " COALESCE(distance, -1), similarity, shared_chars FROM dedup_match"
            " WHERE id > %s ORDER BY id",
            [after],
        )
        ids = (_column(rows, i, np.int64) for i in range(3))
        return cls(
            *ids,
            kind=_column(rows, 3, np.int8),
            distance=_column(rows, 4, np.int16),
            similarity=_column(rows, 5, np.float32),
            shared_chars=_column(rows, 6, np.int32),
        )


@dataclass
class Nodes:
    """What the review needs of some articles, in the order of their (sorted) ids."""

    article_id: np.ndarray
    dated: np.ndarray
    length: np.ndarray
    sources: list[str]  # each article's source
    titles: list[str]  # case-folded

    @classmethod
    def read(cls, article_id: np.ndarray) -> Nodes:
        """Read these articles (sorted ids); one deleted meanwhile reads as empty."""
        n = len(article_id)
        nodes = cls(article_id, np.zeros(n, np.int64), np.zeros(n, np.int32), [""] * n, [""] * n)
        if not n:
            return nodes
        epoch = "CAST(EXTRACT(EPOCH FROM dated_at) AS BIGINT)"
        sql = f"SELECT id, {epoch}, length, source, title FROM dedup_article"
        if n < READ_BY_ID:
            rows = rows_read(sql + " WHERE id = ANY(%s)", [article_id.tolist()])
        else:  # one range scan beats a list of 100,000 ids; articles without a match skipped
            ends = [int(article_id[0]), int(article_id[-1])]
            rows = rows_read(sql + " WHERE id BETWEEN %s AND %s", ends)
        ids = _column(rows, 0, np.int64)
        where = np.minimum(np.searchsorted(article_id, ids), n - 1)
        hit = article_id[where] == ids
        rows = [r for r, matched in zip(rows, hit.tolist(), strict=True) if matched]
        where = where[hit]
        nodes.dated[where] = _column(rows, 1, np.int64)
        nodes.length[where] = _column(rows, 2, np.int64)
        for i, r in zip(where.tolist(), rows, strict=True):
            nodes.sources[i] = r[3]
            nodes.titles[i] = r[4].casefold()
        return nodes


def _sources_coded(names: list[str], known: list[str]) -> tuple[list[str], dict[str, int]]:
    """Return the sorted union of the source names and each one's code in it."""
    every = sorted(set(known).union(names))
    return every, {name: i for i, name in enumerate(every)}


def table_load() -> tuple[MatchTable, int]:
    """Read every match, the latest decision per pair and the matched articles; return the
    table and the matches read."""
    empty = np.zeros(0, np.int64)
    new = NewMatches.read(after=0)
    article_id = np.unique(np.concatenate([new.a_ids, new.b_ids]))
    nodes = Nodes.read(article_id)
    sources, code = _sources_coded(nodes.sources, [])
    table = MatchTable(
        a=empty.astype(np.int32),
        b=empty.astype(np.int32),
        kind=np.zeros(0, np.int8),
        distance=np.zeros(0, np.int16),
        similarity=np.zeros(0, np.float32),
        decision=np.zeros(0, np.int8),
        decision_id=empty,
        match_id=empty,
        article_id=article_id,
        dated=nodes.dated,
        length=nodes.length,
        source=np.array([code[name] for name in nodes.sources], np.int32),
        sources=sources,
        titles=nodes.titles,
        chosen=np.zeros(len(article_id), np.int64),
        pair_keys=empty,
        pair_order=empty,
        shared_chars=np.zeros(0, np.int32),
    )
    table = _matches_append(table, new)
    return decisions_apply(table, new_nodes=empty, new_pairs=(empty, empty)), len(new.match_id)


def table_extend(table: MatchTable) -> tuple[MatchTable, int]:
    """Return a new table: this one with the matches and decisions added since it was read
    (the rows after its last ids), and the matches read."""
    after = int(table.match_id[-1]) if len(table.match_id) else 0
    new = NewMatches.read(after=after)
    ids = np.unique(np.concatenate([new.a_ids, new.b_ids]))
    fresh = np.setdiff1d(ids, table.article_id, assume_unique=True)
    if len(fresh):
        table = _nodes_merge(table, Nodes.read(fresh))
    else:
        kept = dataclasses.replace(
            table,
            decision=table.decision.copy(),
            decision_id=table.decision_id.copy(),
            chosen=table.chosen.copy(),
            _clusterings=OrderedDict(),
        )
        if "rank" in vars(table):  # the same articles and dates: their order in time stands
            vars(kept)["rank"] = table.rank
        table = kept
    table = _matches_append(table, new)
    return decisions_apply(table, new_nodes=fresh, new_pairs=(new.a_ids, new.b_ids)), len(
        new.match_id
    )


def _nodes_merge(table: MatchTable, nodes: Nodes) -> MatchTable:
    """Return a copy of the table with new articles among its nodes (node indexes move)."""
    article_id = np.concatenate([table.article_id, nodes.article_id])
    order = np.argsort(article_id, kind="stable")
    moved = np.empty(len(order), np.int64)
    moved[order] = np.arange(len(order))  # old node index -> new node index
    old = moved[: len(table.article_id)]

    def merged(old_values: np.ndarray, new_values: np.ndarray) -> np.ndarray:
        return np.concatenate([old_values, new_values])[order]

    titles = np.array(table.titles + nodes.titles, dtype=object)[order]
    sources, code = _sources_coded(nodes.sources, table.sources)
    recoded = np.array([code[name] for name in table.sources], np.int32)
    source = np.concatenate(
        [recoded[table.source], np.array([code[name] for name in nodes.sources], np.int32)]
    )[order]
    return dataclasses.replace(
        table,
        a=old[table.a].astype(np.int32),
        b=old[table.b].astype(np.int32),
        decision=table.decision.copy(),
        decision_id=table.decision_id.copy(),
        article_id=article_id[order],
        dated=merged(table.dated, nodes.dated),
        length=merged(table.length, nodes.length),
        source=source,
        sources=sources,
        titles=titles.tolist(),
        chosen=merged(table.chosen, np.zeros(len(nodes.article_id), np.int64)),
        _clusterings=OrderedDict(),
    )


def _matches_append(table: MatchTable, new: NewMatches) -> MatchTable:
    """Return the table with new matches after its own (their articles are nodes already)."""
    m, m0 = len(new.match_id), len(table.match_id)
    table.a = np.concatenate([table.a, np.searchsorted(table.article_id, new.a_ids)]).astype(
        np.int32
    )
    table.b = np.concatenate([table.b, np.searchsorted(table.article_id, new.b_ids)]).astype(
        np.int32
    )
    table.kind = np.concatenate([table.kind, new.kind])
    table.distance = np.concatenate([table.distance, new.distance])
    table.similarity = np.concatenate([table.similarity, new.similarity])
    known = table.shared_chars if table.shared_chars is not None else np.zeros(m0, np.int32)
    table.shared_chars = np.concatenate([known, new.shared_chars])
    table.decision = np.concatenate([table.decision, np.zeros(m, np.int8)])
    table.decision_id = np.concatenate([table.decision_id, np.zeros(m, np.int64)])
    table.match_id = np.concatenate([table.match_id, new.match_id])
    keys = pair_key(table.a, table.b)  # matches come with a < b
    table.pair_order = np.argsort(keys, kind="stable")
    table.pair_keys = keys[table.pair_order]
    return table


def decisions_apply(
    table: MatchTable, *, new_nodes: np.ndarray, new_pairs: tuple[np.ndarray, np.ndarray]
) -> MatchTable:
    """Apply, in place, the decisions made since the table last read them, and any earlier
    ones on its new articles and new pairs (a pair matched again after a rebuild keeps its
    decision): in id order, the latest counts."""
    rows = rows_read(
        "SELECT id, a_id, b_id, verdict FROM dedup_decision WHERE id > %s"
        " OR (b_id IS NULL AND a_id = ANY(%s))"
        " OR (a_id, b_id) IN (SELECT * FROM unnest(%s::bigint[], %s::bigint[])) ORDER BY id",
        [table.decisions_seen, new_nodes.tolist(), new_pairs[0].tolist(), new_pairs[1].tolist()],
    )
    for did, x, y, verdict in rows:
        if y is None:
            i = table.node(x)
            if verdict == "original" and i is not None:
                table.chosen[i] = did
            continue
        match = table.pair(x, y)
        if match is not None:
            table.decision[match] = VERDICT_CODES.get(verdict, UNDECIDED)
            table.decision_id[match] = did
    if rows:
        table.decisions_seen = max(table.decisions_seen, rows[-1][0])
    return table
