"""Index versions as numbers: a segment row (SegmentRow) keeps its version as a 32-bit number
(4 bytes where the name took 50 and more) and the IndexVersion table names each number.

The number is the first four bytes of the name's SHA-1, the same in every process without a
round trip; `version_register` writes the name beside it and refuses a second name with the
same number (two live versions in 2**32: not expected, but said if it happens).
"""

from __future__ import annotations

import hashlib

from django.db import connection, models

_names: dict[int, str] = {}


def version_number(name: str) -> int:
    """Return an index version's number (a signed 32-bit integer)."""
    return int.from_bytes(hashlib.sha1(name.encode()).digest()[:4], "big", signed=True)


def version_register(name: str) -> int:
    """Record a version's name under its number (in the caller's transaction); return it."""
    number = version_number(name)
    if _names.get(number) == name:
        return number
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO dedup_indexversion (number, name) VALUES (%s, %s) "
            "ON CONFLICT (number) DO NOTHING",
            [number, name],
        )
        cursor.execute("SELECT name FROM dedup_indexversion WHERE number = %s", [number])
        stored = cursor.fetchone()[0]
    if stored != name:
        raise RuntimeError(
            f"index versions {stored!r} and {name!r} have the same number {number}: "
            "rebuild after dropping the rows of the first (manage.py rebuild)"
        )
    _names[number] = name
    return number


def version_name(number: int) -> str:
    """Return the name of a version number (the number itself, as text, if unregistered)."""
    if number not in _names:
        with connection.cursor() as cursor:
            cursor.execute("SELECT number, name FROM dedup_indexversion")
            _names.update(cursor.fetchall())
    return _names.get(number, str(number))


class IndexVersion(models.Model):
    """An index version's name, under the number its segment rows carry."""

    number = models.IntegerField(primary_key=True)
    name = models.CharField(max_length=120, unique=True)

    def __str__(self) -> str:
        return self.name


class VersionField(models.IntegerField):
    """An index version: its name in Python and in queries, its number in the database."""

    def get_prep_value(self, value):
        if isinstance(value, str):
            return version_number(value)
        return super().get_prep_value(value)

    def from_db_value(self, value, expression, connection):
        return None if value is None else version_name(value)
