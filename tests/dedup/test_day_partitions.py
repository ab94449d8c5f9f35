"""The segment index partitioned by day (dedup.index.partitions): rows go to their article's
day, look-ups stay exact against brute force over every partition, and the retention window
moves on by dropping whole partitions, never by deleting rows one by one."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest
from django.db import connection

from dedup.engine.hamming import pairwise
from dedup.engine.plan import Plan
from dedup.index import partitions, segments
from dedup.index.partitions import partition_name, partitions_list, partitions_maintain
from dedup.index.segments import PgSegmentIndex
from dedup.models import Article

pytestmark = pytest.mark.django_db
PLAN = Plan.even(5, 3)
TODAY = dt.date(2026, 11, 24)
DAYS = [TODAY - dt.timedelta(days=n) for n in range(5, -1, -1)]  # six days to today


def articles_on(days: list[dt.date], per_day: int) -> dict[int, dt.date]:
    """Make articles dated on these days (noon UTC); return their ids and days."""
    rows = [
        Article(
            body=f"text {day} {n}",
            content_hash=f"{day}-{n}",
            dated_at=dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC),
        )
        for day in days
        for n in range(per_day)
    ]
    made = Article.objects.bulk_create(rows)
    return {a.pk: a.dated_at.date() for a in made}


def fingerprints(count: int, seed: int) -> np.ndarray:
    """Random fingerprints, a third of them near copies (1-3 bits) of the others."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64 - 1, count, dtype=np.uint64, endpoint=True)
    for i in range(0, count, 3):
        flips = rng.choice(64, size=int(rng.integers(1, 4)), replace=False)
        values[i] = values[(i + 1) % count] ^ np.uint64(sum(1 << int(b) for b in flips))
    return values


def rows_per_partition() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM dedup_segment GROUP BY 1")
        return dict(cursor.fetchall())


def brute_force(ids, values, queries, k) -> set[tuple[int, int, int]]:
    distances = pairwise(queries, values)
    q, i = np.nonzero(distances <= k)
    return {(int(a), int(ids[b]), int(distances[a, b])) for a, b in zip(q, i, strict=True)}


def found(index: PgSegmentIndex, queries, k) -> set[tuple[int, int, int]]:
    hits = index.query_many(queries, k)
    return set(zip(hits.query.tolist(), hits.id.tolist(), hits.distance.tolist(), strict=True))


def test_rows_go_to_their_day_and_lookups_are_exact_across_partitions():
    done = partitions_maintain(start=DAYS[0], today=TODAY)
    assert done["made"] == len(DAYS) + partitions.AHEAD_DAYS
    assert partitions_list()[0] == DAYS[0] and partitions_list()[-1] == TODAY + dt.timedelta(2)
    days = articles_on(DAYS, 60)
    ids = np.array(list(days), dtype=np.int64)
    values = fingerprints(len(ids), seed=3)
    index = PgSegmentIndex(PLAN, "v")
    index.add(ids, values)
    counts = rows_per_partition()
    assert "dedup_segment_default" not in counts  # every day has its partition
    for day in DAYS:
        assert counts[partition_name(day)] == 60 * PLAN.table_count
    queries = np.concatenate([values[::7], fingerprints(50, seed=9)])
    for k in range(PLAN.k_max + 1):
        assert found(index, queries, k) == brute_force(ids, values, queries, k), k


def test_retention_drops_whole_partitions_and_lookups_stay_exact():
    partitions_maintain(start=DAYS[0], today=TODAY)
    days = articles_on(DAYS, 40)
    ids = np.array(list(days), dtype=np.int64)
    values = fingerprints(len(ids), seed=5)
    index = PgSegmentIndex(PLAN, "v")
    index.add(ids, values)

    done = partitions_maintain(start=DAYS[2], today=TODAY)  # the window moved on two days
    assert done == {"made": 0, "dropped": 2, "merged": 0, "deleted": 0}  # no row deleted
    for day in DAYS[:2]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s)", [partition_name(day)])
            assert cursor.fetchone()[0] is None
    kept = np.array([days[i] >= DAYS[2] for i in ids.tolist()])
    for k in range(PLAN.k_max + 1):
        assert found(index, values, k) == brute_force(ids[kept], values[kept], values, k)


def test_a_day_without_its_partition_waits_in_the_default_one_and_moves_when_it_comes():
    partitions_maintain(start=DAYS[0], today=TODAY)
    later = TODAY + dt.timedelta(days=5)  # dated ahead of the partitions made
    days = articles_on([TODAY, later], 30)
    ids = np.array(list(days), dtype=np.int64)
    values = fingerprints(len(ids), seed=7)
    index = PgSegmentIndex(PLAN, "v")
    index.add(ids, values)
    assert rows_per_partition()["dedup_segment_default"] == 30 * PLAN.table_count
    before = found(index, values, PLAN.k_max)

    partitions_maintain(start=DAYS[0], today=later)  # days pass: its partition is made
    counts = rows_per_partition()
    assert "dedup_segment_default" not in counts
    assert counts[partition_name(later)] == 30 * PLAN.table_count
    assert found(index, values, PLAN.k_max) == before  # moved, nothing lost or doubled


def test_making_partitions_again_changes_nothing():
    first = partitions_maintain(start=DAYS[0], today=TODAY)
    assert first["made"] > 0
    assert partitions_maintain(start=DAYS[0], today=TODAY) == {
        "made": 0,
        "dropped": 0,
        "merged": 0,
        "deleted": 0,
    }


def test_a_long_window_keeps_its_older_days_in_the_default_partition():
    partitions_maintain(start=TODAY - dt.timedelta(days=400), today=TODAY)
    assert len(partitions_list()) == partitions.DAY_PARTITIONS


def indexed_on(days: list[dt.date], per_day: int, seed: int):
    """Store and index articles dated on these days; return their ids, values and index."""
    ids = np.array(list(articles_on(days, per_day)), dtype=np.int64)
    values = fingerprints(len(ids), seed=seed)
    index = PgSegmentIndex(PLAN, "v")
    index.add(ids, values)
    return ids, values, index


def test_without_a_window_days_passing_make_no_partitions():
    # Every article is kept: a partition a day, none ever dropped, would pile up, and every
    # look-up reads every partition's index.
    ids, values, index = indexed_on(DAYS, 20, seed=13)
    for n in range(40):
        partitions_maintain(start=None, today=TODAY + dt.timedelta(days=n))
    assert partitions_list() == []
    for k in range(PLAN.k_max + 1):
        assert found(index, values, k) == brute_force(ids, values, values, k), k


def test_a_long_window_keeps_at_most_its_latest_days_in_partitions_as_days_pass():
    ids, values, index = indexed_on(DAYS, 20, seed=17)
    for n in range(0, 45, 3):  # beat's prune, as the days pass, with a window of 400 days
        today = TODAY + dt.timedelta(days=n)
        partitions_maintain(start=today - dt.timedelta(days=400), today=today)
        have = partitions_list()
        assert len(have) <= partitions.DAY_PARTITIONS, (n, len(have))
        assert have[-1] == today + dt.timedelta(days=partitions.AHEAD_DAYS)
    assert rows_per_partition()["dedup_segment_default"] == len(ids) * PLAN.table_count
    for k in range(PLAN.k_max + 1):  # nothing lost or doubled on the way
        assert found(index, values, k) == brute_force(ids, values, values, k), k


def test_the_lookup_is_one_statement_a_distributed_planner_routes():
    """`key = ANY(array)` on one table: no join, no unnest, no sub-select."""
    sql = " ".join(segments.LOOKUP.split()).upper()
    assert "= ANY(" in sql
    assert "JOIN" not in sql and "UNNEST" not in sql
    assert len(re.findall(r"\bSELECT\b", sql)) == 1


def test_the_lookup_reads_only_the_covering_index_of_each_partition():
    partitions_maintain(start=DAYS[0], today=TODAY)
    days = articles_on(DAYS, 200)
    index = PgSegmentIndex(PLAN, "v")
    index.add(np.array(list(days)), fingerprints(len(days), seed=11))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dedup_segment")
        cursor.execute("SET LOCAL enable_seqscan = off")  # small tables: the planner's choice
    plan = index.explain(12345)
    assert "Seq Scan" not in plan, plan
    scans = re.findall(r"Index (?:Only )?Scan using (\S+)", plan)
    assert scans and all("version_key" in name for name in scans), plan


def test_prune_moves_the_window_by_dropping_the_days_it_left():
    """Through the service: an article ten days old is in its day's partition; with a window
    of five days, prune drops that partition and deletes no segment row one by one."""
    from django.utils import timezone

    from dedup import services
    from dedup.models import SegmentRow
    from tests.texts import ARTICLE, OTHER

    now = timezone.now()
    services.articles_prune(now=now)  # the days' partitions, as beat makes them
    old_day = (now - dt.timedelta(days=10)).astimezone(dt.UTC).date()
    partitions_maintain(start=old_day, today=now.astimezone(dt.UTC).date())
    old, new = services.articles_ingest(
        rows=[
            {"text": ARTICLE, "published_at": (now - dt.timedelta(days=10)).isoformat()},
            {"text": OTHER},
        ]
    )[:2]
    services.articles_process(article_ids=[old.pk, new.pk])
    assert rows_per_partition()[partition_name(old_day)] > 0
    services.settings_update(retention_days=5)
    done = services.articles_prune(now=now)
    assert done["partitions_dropped"] >= 1 and done["segment_rows_deleted"] == 0
    assert old_day not in partitions_list()
    assert not SegmentRow.objects.filter(article=old).exists()
    assert SegmentRow.objects.filter(article=new).exists()
