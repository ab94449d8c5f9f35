"""PostgreSQL helpers for the few statements that move many rows at once.

Django's cursor binds parameters on the client: every value is rendered into the SQL text, and
bytea comes back as hex. For arrays of thousands of values and packed features that costs more
than the statement itself, so these statements use a psycopg cursor on the same connection
(same transaction) that binds on the server and can read binary results.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import psycopg
from django.db import connection


@contextmanager
def pg_cursor() -> Iterator[psycopg.Cursor]:
    """Return a server-binding cursor on Django's PostgreSQL connection. Errors are Django's,
    as with `connection.cursor()` (a task retries on OperationalError)."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


def int_array(values: Iterable[int | None]) -> str:
    """Return integers (or None) as the text of a PostgreSQL array; cast it in the query
    (`%s::bigint[]`). psycopg builds a binary array element by element in Python, about twenty
    times slower."""
    return "{" + ",".join(map(str, values)).replace("None", "NULL") + "}"


def columns(rows: list[tuple]) -> list:
    """Return the columns of some rows, to be sent as arrays: integers as `int_array` text,
    anything else as a list."""
    if not rows:
        return []
    return [
        int_array(column) if isinstance(column[0], int) else list(column)
        for column in zip(*rows, strict=True)
    ]


# pg_advisory_xact_lock's key for the change sequence ("dedupchg" in ASCII).
_CHANGE_LOCK = 0x6465647570636867


def change_lock() -> None:
    """Take the change sequence's lock until the transaction ends: call it first in every
    transaction that inserts matches or decisions.

    Their ids are the cursors of the API's listings and of webhooks. Ids come from a sequence
    in insert order, but transactions commit in any order: a reader could see id 11 committed
    while 10 is still in flight, move its cursor past 10 and never see it. Under this lock the
    writers insert and commit one at a time, so what a reader sees is always every id up to
    some point. Taken first, before any row lock, so that it never waits on a row held by a
    transaction that waits for it."""
    if not connection.in_atomic_block:
        raise RuntimeError("change_lock() holds until the transaction ends: call it in one")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHANGE_LOCK])
