"""Finding candidates: the stored articles within distance k of a fingerprint (its bucket in
every table of the plan) or sharing one of its passage keys, boilerplate keys left out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from dedup.db import int_array, pg_cursor
from dedup.engine.plan import Plan
from dedup.engine.verify import MAX_PASSAGE_OWNERS, Features
from dedup.index.caches import features_lock, hot_keys
from dedup.index.segments import PgSegmentIndex
from dedup.models import Article


def candidates_find(
    *,
    features: Features,
    version: str,
    plan: Plan,
    k: int,
    since: datetime | None = None,
    exclude: int | None = None,
    counted: dict[int, int] | None = None,
) -> set[int]:
    """Return the articles within distance k of the fingerprint or sharing a passage key
    (`counted`: as candidates_find_many)."""
    return candidates_find_many(
        queries=[(exclude, features)],
        version=version,
        plan=plan,
        k=k,
        since=since,
        counted=counted,
    )[0]


def candidates_find_many(
    *,
    queries: Sequence[tuple[int | None, Features]],
    version: str,
    plan: Plan,
    k: int,
    since: datetime | None = None,
    counted: dict[int, int] | None = None,
) -> list[set[int]]:
    """Return, for each (article id or None, features), the other articles within distance k
    of its fingerprint or sharing one of its passage keys: a few statements for them all.
    `counted`, if given, gets how many articles hold each passage key held by fewer than
    MAX_PASSAGE_OWNERS + 1 (signed keys; verification's StoredOwners need not count them)."""
    found: list[set[int]] = [set() for _ in queries]
    with_value = [
        (i, f.fingerprint) for i, (_, f) in enumerate(queries) if f.fingerprint is not None
    ]
    if with_value:
        for i, article_id in _near_fingerprints(with_value, version, plan, k):
            found[i].add(article_id)
    keys = [f.passage_keys.view(np.int64).tolist() for _, f in queries]
    owners = _passage_owners(sorted({key for some in keys for key in some}), version)
    if counted is not None:  # an article holds its own keys: at least 1 (as StoredOwners)
        counted.update((key, max(len(ids), 1)) for key, ids in owners.items())
    for i, some in enumerate(keys):
        for key in some:
            found[i].update(owners.get(key, ()))
    for (exclude, _), some in zip(queries, found, strict=True):
        some.discard(exclude)
    if since is not None:
        every = set().union(*found)
        if every:
            old = set(
                Article.objects.filter(id__in=every, dated_at__lt=since).values_list(
                    "id", flat=True
                )
            )
            for some in found:
                some -= old
    return found


# Passage keys found to be boilerplate, per worker process (caches.hot_keys): (version, key)
# -> when. A key only gains owners, except when the retention window prunes them: an entry is
# trusted for HOT_KEY_SECONDS. Most passages of a site's pages are its boilerplate, looked up
# again and again.
HOT_KEYS_CACHED = 500_000
HOT_KEY_SECONDS = 600.0


def _passage_owners(keys: list[int], version: str) -> dict[int, list[int]]:
    """Return the articles holding each passage key; a key held by more than
    MAX_PASSAGE_OWNERS articles (a footer, a menu) is boilerplate and is left out."""
    now = time.monotonic()
    with features_lock:
        seen = [hot_keys.get((version, key)) for key in keys]
    keys = [k for k, at in zip(keys, seen, strict=True) if at is None or now - at > HOT_KEY_SECONDS]
    if not keys:
        return {}
    limit = MAX_PASSAGE_OWNERS + 1
    owners: dict[int, list[int]] = {key: [] for key in keys}  # none: a text being checked
    # Each key's first owners, in one statement: a boilerplate key stops at limit rows.
    with pg_cursor() as cursor:
        cursor.execute(
            """
            SELECT q.key, p.article_id
            FROM unnest(%s::bigint[]) AS q(key)
            CROSS JOIN LATERAL (
                SELECT DISTINCT article_id FROM dedup_passagekey
                WHERE version = %s AND key = q.key
                ORDER BY article_id
                LIMIT %s
            ) AS p
            """,
            [int_array(keys), version, limit],
            binary=True,
        )
        rows = cursor.fetchall()
    for key, article_id in rows:
        owners.setdefault(key, []).append(article_id)
    hot = [key for key, ids in owners.items() if len(ids) >= limit]
    if hot:
        with features_lock:
            if len(hot_keys) + len(hot) > HOT_KEYS_CACHED:
                hot_keys.clear()
            hot_keys.update(dict.fromkeys([(version, key) for key in hot], now))
    return {key: ids for key, ids in owners.items() if len(ids) < limit}


def _near_fingerprints(
    values: list[tuple[int, int]], version: str, plan: Plan, k: int
) -> list[tuple[int, int]]:
    """Return (query number, article) for every stored fingerprint within distance k of the
    queries' (number, fingerprint), through the segment index."""
    numbers = [number for number, _ in values]
    hits = PgSegmentIndex(plan, version).query_many([value for _, value in values], k)
    found = zip(hits.query.tolist(), hits.id.tolist(), strict=True)
    return sorted({(numbers[q], a) for q, a in found})
