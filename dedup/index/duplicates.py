"""Verifying candidates on their stored features: features and sketches loaded through the
per-process caches (features_load, sketches_load), candidates screened on their sketches and
judged (duplicates_find, duplicates_find_many), and the Match rows of what they find."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from dedup.db import int_array, pg_cursor
from dedup.engine import screen
from dedup.engine.boilerplate import held_mask
from dedup.engine.verify import Boilerplate, Detector, Duplicate, Features
from dedup.index.boilerplate import StoredOwners
from dedup.index.caches import (
    Holder,
    cached_split,
    features_cache,
    features_lock,
    holder_cache,
    sketch_cache,
    unreadable_logged,
)
from dedup.models import Match

# The name these lines were logged under before index.py became a package.
logger = logging.getLogger("dedup.index")

# Features (caches.features_cache) and sketches of recently matched articles kept per worker.
FEATURES_CACHED = 20_000  # about 150 MB per worker
SKETCHES_CACHED = 50_000


def features_load(*, article_ids: Iterable[int], version: str) -> dict[int, Features]:
    """Return the stored features of articles under a version (those that have them)."""
    loaded, missing = cached_split(features_cache, version, article_ids)
    rows = _fingerprint_rows(missing, version, ("features",))
    unpacked = _features_unpack(rows, version)
    with features_lock:
        for article_id, features in unpacked.items():
            loaded[article_id] = features
            features_cache[version, article_id] = features
            if len(features_cache) > FEATURES_CACHED:
                features_cache.popitem(last=False)
    return loaded


HOLDERS_CACHED = 200_000  # about 60 MB per worker


def holders_load(*, article_ids: Iterable[int], version: str) -> dict[int, Holder]:
    """Return the length, passage keys and passage sizes of articles under a version (those
    that have stored features), from this process's caches where they are."""
    loaded, missing = cached_split(holder_cache, version, article_ids)
    with features_lock:
        for article_id in missing:
            features = features_cache.get((version, article_id))
            if features is not None:
                loaded[article_id] = _holder(features)
    missing = [a for a in missing if a not in loaded]
    for article_id, features in _features_unpack(
        _fingerprint_rows(missing, version, ("features",)), version
    ).items():
        loaded[article_id] = _holder(features)
    with features_lock:
        for article_id in missing:
            if article_id in loaded:
                holder_cache[version, article_id] = loaded[article_id]
        while len(holder_cache) > HOLDERS_CACHED:
            holder_cache.popitem(last=False)
    return loaded


def _holder(features: Features) -> Holder:
    return Holder(features.length, features.passage_keys, features.passage_sizes)


def _features_unpack(rows: Iterable[tuple[int, bytes]], version: str) -> dict[int, Features]:
    """Unpack stored features; leave out (and log once per version) those this code cannot
    read, so that their articles are not verified instead of failing whoever asked."""
    unpacked, unreadable = {}, {}
    for article_id, data in rows:
        try:
            unpacked[article_id] = Features.from_bytes(data)
        except ValueError as error:
            # Rows of an older release (another FEATURES_FORMAT), read while the rebuild to
            # this release's version runs.
            unreadable[article_id] = error
    if unreadable:
        with features_lock:
            first_time = version not in unreadable_logged
            unreadable_logged.add(version)
        if first_time:
            article_id, error = min(unreadable.items())
            logger.warning(
                "the stored features of %d article(s) under version %s cannot be read (the "
                "first, article %s: %s); such articles are not verified until a rebuild "
                "re-indexes them (logged once per version)",
                len(unreadable),
                version,
                article_id,
                error,
            )
    return unpacked


def duplicates_find(
    *,
    article_id: int | None,
    features: Features,
    candidates: Iterable[int],
    version: str,
    detector: Detector,
    counted: dict[int, int] | None = None,
) -> list[Duplicate]:
    """Verify candidates on their stored features; return the duplicates, a < b where known
    (`counted`: passage keys' holders known already, as duplicates_find_many).

    With an article id, each duplicate is oriented so that `a` is the lower id (its shared
    passages too); without one (a text being checked), `a` is the text, numbered 0.
    """
    candidates = list(candidates)
    stored = features_load(article_ids=candidates, version=version)
    owners = _owners_for([(features, candidates)], stored, version, counted)
    return _judge(article_id, features, candidates, stored, detector, owners)


def duplicates_find_many(
    *,
    queries: Sequence[tuple[int, Features]],
    candidates: Sequence[Iterable[int]],
    version: str,
    detector: Detector,
    counts: dict[str, int] | None = None,
    counted: dict[int, int] | None = None,
) -> list[list[Duplicate] | Exception]:
    """Verify each article's candidates; return each article's duplicates, or the error that
    stopped its verification. `counts`, if given, gets the candidates and how many of them
    were verified in full; `counted` holds passage keys' holders known already (from
    candidates_find_many), which are not counted again.

    The candidates are screened on their sketches first (dedup.engine.screen); the features of
    those that pass are loaded once for the whole chunk."""
    candidates = [sorted(set(some)) for some in candidates]
    sketches = sketches_load(article_ids=set().union(*candidates), version=version)
    passing = []
    for (_, features), some in zip(queries, candidates, strict=True):
        known = [b for b in some if b in sketches]
        sizes = [sketches[b][0] for b in known]
        keep = screen.may_pass(
            screen.sketch(features.shingles),
            len(features.shingles),
            [sketches[b][1] for b in known],
            sizes,
            detector.least_similarity(features.length, sizes),
        )
        passing.append(
            {b for b, ok in zip(known, keep.tolist(), strict=True) if ok}
            | {b for b in some if b not in sketches}
        )
    stored = features_load(article_ids=set().union(*passing), version=version)
    owners = _owners_for(
        [(features, some) for (_, features), some in zip(queries, passing, strict=True)],
        stored,
        version,
        counted,
    )
    if counts is not None:
        counts["candidates"] = counts.get("candidates", 0) + sum(map(len, candidates))
        counts["verified"] = counts.get("verified", 0) + sum(map(len, passing))
    results: list[list[Duplicate] | Exception] = []
    for (article_id, features), some in zip(queries, passing, strict=True):
        try:
            results.append(_judge(article_id, features, some, stored, detector, owners))
        except Exception as error:  # one article's bad features must not sink the chunk
            results.append(error)
    return results


def sketches_load(*, article_ids: Iterable[int], version: str) -> dict[int, tuple[int, np.ndarray]]:
    """Return (shingle count, sketch) of articles under a version that have a sketch."""
    loaded, missing = cached_split(sketch_cache, version, article_ids)
    rows = _fingerprint_rows(missing, version, ("shingles", "sketch"), sketched=True)
    with features_lock:
        for article_id, size, data in rows:
            loaded[article_id] = (size, np.frombuffer(bytes(data), dtype="<u4"))
            sketch_cache[version, article_id] = loaded[article_id]
            if len(sketch_cache) > SKETCHES_CACHED:
                sketch_cache.popitem(last=False)
    return loaded


def _owners_for(
    queries: Sequence[tuple[Features, Iterable[int]]],
    stored: dict[int, Features],
    version: str,
    counted: dict[int, int] | None = None,
) -> Boilerplate:
    """Return the boilerplate of these queries and their stored candidates, the owners of
    their passage keys read in two statements: the queries' keys, then the keys of the
    candidates that hold a passage the query holds as boilerplate (Boilerplate.common asks
    for no other candidate's)."""
    owners = StoredOwners(version, counted)
    owners.prefetch(features.passage_keys for features, _ in queries)
    boilerplate = Boilerplate(owners)
    wanted = []
    for features, some in queries:
        mine = list(boilerplate.keys(features))
        if not mine:
            continue
        for b in some:
            theirs = stored.get(b)
            if theirs is not None and held_mask(theirs.passage_keys, mine).any():
                wanted.append(theirs.passage_keys)
    owners.prefetch(wanted)
    return boilerplate


def _judge(article_id, features, candidates, stored, detector, owners) -> list[Duplicate]:
    others = sorted((b, stored[b]) for b in candidates if b in stored)
    if not others:
        return []
    me = article_id if article_id is not None else 0
    found = detector.judge_many(me, features, others, owners)
    if article_id is None:
        return found
    return [d if d.a < d.b else _flip(d) for d in found]


def _flip(d: Duplicate) -> Duplicate:
    return Duplicate(
        a=d.b,
        b=d.a,
        kind=d.kind,
        distance=d.distance,
        similarity=d.similarity,
        shared_passages=[(y, x) for x, y in d.shared_passages],
        shared_chars=d.shared_chars,
    )


def match_rows(duplicates: Iterable[Duplicate], *, version: str) -> list[Match]:
    """Return unsaved Match rows for verified duplicates (a < b)."""
    return [
        Match(
            a_id=d.a,
            b_id=d.b,
            kind=d.kind,
            distance=d.distance,
            similarity=float(d.similarity),
            shared_passages=[[int(x), int(y)] for x, y in d.shared_passages],
            shared_chars=d.shared_chars,
            version=version,
        )
        for d in duplicates
    ]


def _fingerprint_rows(
    ids: list[int], version: str, columns: tuple[str, ...], *, sketched: bool = False
) -> list[tuple]:
    """Return (article_id, *columns) of the fingerprint rows of these articles under a version
    (only those with a sketch, if `sketched`): one statement on PostgreSQL, in batches else."""
    if not ids:
        return []
    with pg_cursor() as cursor:
        cursor.execute(
            f"SELECT article_id, {', '.join(columns)} FROM dedup_fingerprint"  # our names
            " WHERE version = %s AND article_id = ANY(%s)"
            + (" AND sketch IS NOT NULL" if sketched else ""),
            [version, int_array(ids)],
            binary=True,
        )
        return cursor.fetchall()
