"""Finding candidates: the stored articles within distance k of a fingerprint (its bucket in
every table of the plan) or sharing one of its passage keys or fact keys (dedup.engine.facts),
boilerplate keys left out: a passage key held by more than MAX_PASSAGE_OWNERS articles finds,
where the article asking is a story holder of it (a story reposted by the dozen), the
POPULAR_HOLDERS story holders before it (dedup.engine.popular, as Detector.candidates); a
fact key so held finds nothing. Fact keys are stored as passage-key rows numbered after the
article's passages (dedup.index.store)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from dedup.db import int_array, pg_cursor
from dedup.engine.plan import Plan
from dedup.engine.verify import (
    MAX_PASSAGE_OWNERS,
    MAX_POPULAR_OWNERS,
    POPULAR_HOLDERS,
    POPULAR_LENGTH,
    POPULAR_PASSAGES,
    Features,
    popular_asks,
)
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
    # Fact keys find the articles that hold them too (Detector.candidates), never popular.
    facts = [f.fact_keys.view(np.int64).tolist() for _, f in queries]
    every = {key for some in (*keys, *facts) for key in some}
    owners, hot = _passage_owners(sorted(every), version)
    if counted is not None:  # an article holds its own keys: at least 1 (as StoredOwners)
        counted.update((key, max(len(ids), 1)) for key, ids in owners.items())
    for i, some in enumerate(keys):
        for key in (*some, *facts[i]):
            found[i].update(owners.get(key, ()))
    for i, article_id in _popular_holders(queries, keys, owners, hot, version, counted):
        found[i].add(article_id)
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


# Passage keys held by more than MAX_PASSAGE_OWNERS articles (boilerplate, or a popular
# story's), per worker process (caches.hot_keys): (version, key) -> when. A key only gains
# owners, except when the retention window prunes them: an entry is trusted for
# HOT_KEY_SECONDS. Most passages of a site's pages are its boilerplate, looked up again and
# again.
HOT_KEYS_CACHED = 500_000
HOT_KEY_SECONDS = 600.0


def _passage_owners(keys: list[int], version: str) -> tuple[dict[int, list[int]], set[int]]:
    """Return the articles holding each passage key, and the keys held by more than
    MAX_PASSAGE_OWNERS articles (boilerplate or popular), left out of the first."""
    now = time.monotonic()
    with features_lock:
        seen = [hot_keys.get((version, key)) for key in keys]
    fresh = [at is not None and now - at <= HOT_KEY_SECONDS for at in seen]
    known = {k for k, yes in zip(keys, fresh, strict=True) if yes}
    keys = [k for k in keys if k not in known]
    if not keys:
        return {}, known
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
    return {key: ids for key, ids in owners.items() if len(ids) < limit}, known.union(hot)


def _popular_holders(
    queries: Sequence[tuple[int | None, Features]],
    keys: list[list[int]],
    owners: dict[int, list[int]],
    hot: set[int],
    version: str,
    counted: dict[int, int] | None = None,
) -> list[tuple[int, int]]:
    """Return (query number, article) for the POPULAR_HOLDERS story holders before each
    query (by id; the latest, for a text not stored) of each key held by more than
    MAX_PASSAGE_OWNERS articles that the query is a story holder of (dedup.engine.popular);
    keys' holders counted as verification counts them (dedup.index.boilerplate), and left in
    `counted` for it: the story holders read are verified next, their keys counted once."""
    from dedup.index.boilerplate import StoredOwners  # boilerplate imports this module

    asking = [
        i
        for i, some in enumerate(keys)
        if len(some) >= POPULAR_PASSAGES
        and queries[i][1].length >= POPULAR_LENGTH
        and hot.intersection(some)
    ]
    if not asking:
        return []
    counts = StoredOwners(version)  # the others' counts are known: at most the limit
    for i in asking:
        for key in keys[i]:
            if key not in hot:
                counts.counts[key] = max(len(owners.get(key, ())), 1)
    counts.prefetch(queries[i][1].passage_keys for i in asking)  # one statement for them all
    wanted = []
    for i in asking:
        exclude, features = queries[i]
        asks = popular_asks(features, counts(features.passage_keys))
        before = _LAST_ID if exclude is None else exclude
        wanted += [(i, key, before) for key in {keys[i][p] for p in np.flatnonzero(asks)}]
    found = _story_holders_before(wanted, counts, version) if wanted else []
    if counted is not None:
        counted.update(counts.counts)
    return found


# Holders of a popular key are read latest first, this many at a time, until POPULAR_HOLDERS
# story holders are found or MAX_POPULAR_OWNERS read: a story's copies are nearly all story
# holders (95% of the holders read in a chunk of the pipeline bench), so one read usually
# does, and only the holders read are looked at (dedup.index.stories).
HOLDERS_READ = POPULAR_HOLDERS + POPULAR_HOLDERS // 4


def _story_holders_before(
    wanted: list[tuple[int, int, int]], counts, version: str
) -> list[tuple[int, int]]:
    """Return (query number, article) for the POPULAR_HOLDERS latest story holders of each
    (query number, key, before) before `before`, among its MAX_POPULAR_OWNERS latest holders."""
    from dedup.index.stories import story_pairs  # stories imports this module

    found, story, checked = [], set(), set()
    left = {(n, key): MAX_POPULAR_OWNERS for n, key, _ in wanted}  # holders still to read
    taken = dict.fromkeys(left, 0)
    asks = [(n, key, before, min(HOLDERS_READ, MAX_POPULAR_OWNERS)) for n, key, before in wanted]
    while asks:
        rows = _holders_before(asks, version)
        asked = {(a, key) for _, key, a in rows} - checked
        story |= story_pairs(asked, counts, version)
        checked |= asked
        read, oldest = {}, {}
        for n, key, article_id in sorted(rows, key=lambda row: (row[0], row[1], -row[2])):
            read[n, key] = read.get((n, key), 0) + 1
            oldest[n, key] = article_id
            if (article_id, key) in story and taken[n, key] < POPULAR_HOLDERS:
                taken[n, key] += 1
                found.append((n, article_id))
        for n, key, _, limit in asks:
            left[n, key] = left[n, key] - limit if read.get((n, key)) == limit else 0
        asks = [
            (n, key, oldest[n, key], min(HOLDERS_READ, left[n, key]))
            for n, key, _, _ in asks
            if taken[n, key] < POPULAR_HOLDERS and left[n, key] > 0
        ]
    return found


def _holders_before(asks: list[tuple[int, int, int, int]], version: str) -> list[tuple]:
    """Return (query number, key, article) for the `limit` latest holders of each (query
    number, key, before, limit) before `before`."""
    with pg_cursor() as cursor:
        cursor.execute(
            """
            SELECT q.n, q.key, p.article_id
            FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::int[])
                AS q(n, key, before, lim)
            CROSS JOIN LATERAL (
                SELECT DISTINCT article_id FROM dedup_passagekey
                WHERE version = %s AND key = q.key AND article_id < q.before
                ORDER BY article_id DESC
                LIMIT q.lim
            ) AS p
            """,
            [*(int_array([ask[i] for ask in asks]) for i in range(4)), version],
            binary=True,
        )
        return cursor.fetchall()


_LAST_ID = (1 << 63) - 1


def _near_fingerprints(
    values: list[tuple[int, int]], version: str, plan: Plan, k: int
) -> list[tuple[int, int]]:
    """Return (query number, article) for every stored fingerprint within distance k of the
    queries' (number, fingerprint), through the segment index."""
    numbers = [number for number, _ in values]
    hits = PgSegmentIndex(plan, version).query_many([value for _, value in values], k)
    found = zip(hits.query.tolist(), hits.id.tolist(), strict=True)
    return sorted({(numbers[q], a) for q, a in found})
