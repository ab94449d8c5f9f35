"""The segment index's day partitions (dedup_segment, partitioned by the article's day):
one partition a day over the retention window and a little ahead, a default partition for
the days outside it; the window moves on by dropping whole partitions, not by deleting rows
one by one (but for a window longer than DAY_PARTITIONS days, whose older days live in the
default partition, and for articles dated before the window). No window: no day partitions.

`partitions_maintain` is idempotent and safe beside workers that write and look up: a new
day's partition is made as a table of its own, filled with that day's rows from the default
partition (their writes wait the few milliseconds it takes) and attached, which leaves
readers and writers of other partitions alone; dropping a partition waits for running
look-ups (`lock_timeout`: if it cannot have its lock at once, the next run drops it).
"""

from __future__ import annotations

import datetime as dt
import logging
import re

from django.db import OperationalError, connection, transaction

logger = logging.getLogger(__name__)

PARENT = "dedup_segment"
DEFAULT = "dedup_segment_default"
AHEAD_DAYS = 2  # partitions made ahead of today, so that no day starts in the default one
# Days with a partition of their own at most: a longer window keeps its older days in the
# default partition (deleted row by row as they leave it), since every look-up reads every
# partition's index.
DAY_PARTITIONS = 32
_NAME = re.compile(r"^dedup_segment_p(\d{8})$")


def partition_name(day: dt.date) -> str:
    return f"{PARENT}_p{day:%Y%m%d}"


def partitions_list() -> list[dt.date]:
    """Return the days that have a partition of their own, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [PARENT],
        )
        names = [row[0] for row in cursor.fetchall()]
    days = [_NAME.match(name) for name in names]
    return sorted(dt.datetime.strptime(m[1], "%Y%m%d").date() for m in days if m)


def partitions_maintain(*, start: dt.date | None, today: dt.date) -> dict[str, int]:
    """Make the partitions of the days from `start` (the retention window's first day, at
    most DAY_PARTITIONS days in all) to AHEAD_DAYS after `today`; drop those before `start`
    and delete the default partition's rows before it. Return what was done.

    With no window (`start` None: every article is kept and compared) nothing is made or
    dropped: day partitions would only pile up, one a day, none ever dropped, and every
    look-up reads every partition's index; the rows stay in the default partition, and the
    days of a window set later are moved out of it into their partitions then."""
    if start is None:
        return {"made": 0, "dropped": 0, "merged": 0, "deleted": 0}
    have = set(partitions_list())
    first = max(start, today - dt.timedelta(days=DAY_PARTITIONS - AHEAD_DAYS - 1))
    first = min(first, today - dt.timedelta(days=1))
    wanted = [first + dt.timedelta(days=n) for n in range((today - first).days + AHEAD_DAYS + 1)]
    made = [day for day in wanted if day not in have and _partition_make(day)]
    dropped = sum(_partition_drop(day) for day in sorted(have) if day < start)
    # A long window's days past the DAY_PARTITIONS latest go back to the default partition.
    merged = sum(_partition_merge(day) for day in sorted(have) if start <= day < first)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {DEFAULT} WHERE day < %s", [start])
        deleted = cursor.rowcount
    if made or dropped or merged or deleted:
        logger.info(
            "segment partitions: %d made, %d dropped, %d merged into the default one, "
            "%d rows outside the window deleted",
            len(made),
            dropped,
            merged,
            deleted,
        )
    return {"made": len(made), "dropped": dropped, "merged": merged, "deleted": deleted}


def _partition_make(day: dt.date) -> bool:
    """Make a day's partition with its rows from the default partition; return whether it
    was made here (another process may have made it first)."""
    name, until = partition_name(day), day + dt.timedelta(days=1)
    with transaction.atomic(), connection.cursor() as cursor:
        # One maker at a time; writers of the default partition wait while its rows move.
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [PARENT])
        cursor.execute("SELECT to_regclass(%s)", [name])
        if cursor.fetchone()[0] is not None:
            return False
        cursor.execute(f"LOCK TABLE {DEFAULT} IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(f"CREATE TABLE {name} (LIKE {PARENT} INCLUDING DEFAULTS)")
        cursor.execute(
            f"WITH moved AS (DELETE FROM {DEFAULT} WHERE day >= %s AND day < %s RETURNING *) "
            f"INSERT INTO {name} SELECT * FROM moved",
            [day, until],
        )
        cursor.execute(
            f"ALTER TABLE {PARENT} ATTACH PARTITION {name} FOR VALUES FROM (%s) TO (%s)",
            [day, until],
        )
    return True


def _partition_merge(day: dt.date) -> int:
    """Move a day's rows into the default partition and drop its own, at once for readers
    (detached, moved and dropped in one transaction); return 1, or 0 if it was busy."""
    name = partition_name(day)

    def merge(cursor) -> bool:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [PARENT])
        cursor.execute("SELECT to_regclass(%s)", [name])
        if cursor.fetchone()[0] is None:
            return False
        cursor.execute(f"ALTER TABLE {PARENT} DETACH PARTITION {name}")
        cursor.execute(f"INSERT INTO {PARENT} SELECT * FROM {name}")  # the default's now
        cursor.execute(f"DROP TABLE {name}")
        return True

    return _unless_busy(day, "merged", merge)


def _partition_drop(day: dt.date) -> int:
    """Drop a day's partition (its rows all go at once); return 1, or 0 if it was busy."""

    def drop(cursor) -> bool:
        cursor.execute(f"DROP TABLE IF EXISTS {partition_name(day)}")
        return True

    return _unless_busy(day, "dropped", drop)


def _unless_busy(day: dt.date, done: str, work) -> int:
    """Run work(cursor) in a transaction that waits at most 2 s for its locks (look-ups hold
    the partitions'); return 1 if it did its work, 0 if not or if it was busy (the next run
    does it then)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
            if not work(cursor):
                return 0
    except OperationalError as error:  # lock_timeout
        if getattr(error.__cause__, "sqlstate", None) != "55P03":
            raise
        logger.warning("partition of %s busy, %s at the next run", day, done)
        return 0
    return 1
