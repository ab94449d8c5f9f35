"""Boilerplate learned from the stored articles: how many articles hold each passage key.

A passage many articles hold (a footer, a menu, a disclaimer, a template's fixed sentence) is
boilerplate in an article whose own text is held by few (dedup.engine.verify
boilerplate_passages); verification leaves out what two articles both hold as boilerplate.
Counts stop at OWNERS_COUNTED: a passage held by more is boilerplate in any article whose own
text fewer than a third as many hold, which is all but a story reposted by the dozen. A key
found at the cap is remembered per process for HOT_KEY_SECONDS (counts only grow, but for
the retention window's pruning), so a site's footer is counted once, not for every page.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from dedup.db import int_array, pg_cursor
from dedup.engine.graph import components
from dedup.engine.verify import boilerplate_passages as passages_boilerplate_in
from dedup.index.caches import capped_keys as _capped
from dedup.index.caches import features_lock
from dedup.index.candidates import HOT_KEY_SECONDS

OWNERS_COUNTED = 256
_CAPPED_KEPT = 200_000


class StoredOwners:
    """How many stored articles hold each passage key under a version (a PassageOwners for
    Detector.judge_many): counts read in one statement per `prefetch`, kept for its life."""

    def __init__(self, version: str, counts: dict[int, int] | None = None) -> None:
        self.version = version
        self.counts: dict[int, int] = dict(counts or {})  # signed key -> holders

    def prefetch(self, keys: Iterable[np.ndarray]) -> None:
        """Read the counts of these passage keys (uint64 arrays) that are not known yet."""
        known = self.counts
        wanted = {
            k
            for some in keys
            for k in np.asarray(some, np.uint64).view(np.int64).tolist()
            if k not in known
        }  # (not difference_update: that walks every count known, for each call)
        now = time.monotonic()
        with features_lock:
            remembered = {key: _capped.get((self.version, key)) for key in wanted}
        for key, at in remembered.items():
            if at is not None and now - at < HOT_KEY_SECONDS:
                self.counts[key] = OWNERS_COUNTED
                wanted.discard(key)
        if not wanted:
            return
        found = passage_owner_counts(sorted(wanted), self.version)
        for key in wanted:
            self.counts[key] = max(found.get(key, 0), 1)
        capped = [key for key in wanted if self.counts[key] >= OWNERS_COUNTED]
        if capped:
            with features_lock:
                if len(_capped) + len(capped) > _CAPPED_KEPT:
                    _capped.clear()
                _capped.update(dict.fromkeys([(self.version, key) for key in capped], now))

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, np.uint64)
        signed = keys.view(np.int64).tolist()
        get = self.counts.get
        found = [get(k) for k in signed]
        if None in found:  # most calls come after a prefetch of them all
            self.prefetch([keys])
            found = [get(k) for k in signed]
        return np.array(found, dtype=np.int64)


def passage_owner_counts(keys: list[int], version: str) -> dict[int, int]:
    """Return how many articles hold each passage key (signed), up to OWNERS_COUNTED."""
    if not keys:
        return {}
    with pg_cursor() as cursor:
        cursor.execute(
            """
            SELECT q.key, (
                SELECT count(*) FROM (
                    SELECT DISTINCT article_id FROM dedup_passagekey
                    WHERE version = %s AND key = q.key
                    ORDER BY article_id
                    LIMIT %s
                ) AS p
            )
            FROM unnest(%s::bigint[]) AS q(key)
            """,
            [version, OWNERS_COUNTED, int_array(keys)],
            binary=True,
        )
        return dict(cursor.fetchall())


def boilerplate_passages(article_ids: Iterable[int], version: str) -> dict[int, dict[int, int]]:
    """Return, for each article with stored features under a version, its boilerplate
    passages: passage number -> how many articles hold it (at most OWNERS_COUNTED)."""
    from dedup.index.duplicates import features_load  # duplicates imports this module

    features = features_load(article_ids=list(article_ids), version=version)
    owners = StoredOwners(version)
    owners.prefetch(f.passage_keys for f in features.values())
    found: dict[int, dict[int, int]] = {}
    for article_id, f in features.items():
        counts = owners(f.passage_keys)
        mask = passages_boilerplate_in(f, counts)
        found[article_id] = {int(p): int(counts[p]) for p in np.flatnonzero(mask)}
    return found


def unrelated_owners(keys: list[int], pair: Iterable[int], version: str) -> dict[int, int]:
    """Return, for each passage key (signed), how many unrelated articles hold it: its holders
    (the first OWNERS_COUNTED) taken as stories, holders matched to one another one story, less
    the stories of the articles in `pair`. A story reposted by the dozen holds its paragraphs
    once; a footer held by strangers counts each."""
    if not keys:
        return {}
    with pg_cursor() as cursor:
        cursor.execute(
            """
            SELECT q.key, ARRAY(
                SELECT DISTINCT article_id FROM dedup_passagekey
                WHERE version = %s AND key = q.key
                ORDER BY article_id
                LIMIT %s
            )
            FROM unnest(%s::bigint[]) AS q(key)
            """,
            [version, OWNERS_COUNTED, int_array(keys)],
        )
        holders = {key: list(ids) for key, ids in cursor.fetchall()}
        pair = list(pair)
        everyone = sorted({*pair, *(n for ids in holders.values() for n in ids)})
        cursor.execute(
            "SELECT a_id, b_id FROM dedup_match"
            " WHERE a_id = ANY(%s::bigint[]) AND b_id = ANY(%s::bigint[])",
            [int_array(everyone), int_array(everyone)],
        )
        edges = np.array(cursor.fetchall(), np.int64).reshape(-1, 2)
    # Holders matched to one another are one story: the components of their matches.
    nodes = np.array(everyone, np.int64)
    label = components(len(nodes), *np.searchsorted(nodes, edges).T).tolist()
    story = dict(zip(everyone, label, strict=True))
    ours = {story[n] for n in pair}
    return {key: len({story[n] for n in ids} - ours) for key, ids in holders.items()}
