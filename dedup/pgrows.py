"""What PgIndex sends PostgreSQL: fingerprints and article ids checked into flat numpy arrays
(refusing anything that is not one), and the segment rows of fingerprints in PostgreSQL's
binary COPY format, built with numpy in one go rather than row by row.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dedup.engine.plan import Plan

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags, header extension length
COPY_TRAILER = b"\xff\xff"
# One row of PostgreSQL's binary COPY format: field count, then (length, big-endian value) per
# column, in the load table's column order.
COPY_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("table_no_len", ">i4"),
        ("table_no", ">i2"),
        ("key_len", ">i4"),
        ("key", ">i8"),
        ("fingerprint_len", ">i4"),
        ("fingerprint", ">i8"),
        ("article_id_len", ">i4"),
        ("article_id", ">i8"),
    ]
)


def copy_rows(plan: Plan, ids: np.ndarray, values: np.ndarray) -> bytes:
    """Return the binary COPY rows of these fingerprints in every table, table by table."""
    tables, n = plan.table_count, len(values)
    rows = np.empty(tables * n, dtype=COPY_ROW)
    rows["fields"] = 4
    rows["table_no_len"] = 2
    rows["key_len"] = rows["fingerprint_len"] = rows["article_id_len"] = 8
    rows["table_no"] = np.repeat(np.arange(tables, dtype=np.int16), n)
    rows["key"] = plan.keys(values).view(np.int64).reshape(-1)
    rows["fingerprint"] = np.tile(values.view(np.int64), tables)
    rows["article_id"] = np.tile(ids, tables)
    return rows.tobytes()


def fingerprint_array(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """Return fingerprints as a flat uint64 array, refusing anything that is not one."""
    if isinstance(values, np.ndarray):
        if values.dtype != np.uint64:
            raise TypeError(
                f"fingerprints must be a uint64 array, not {values.dtype}: convert stored "
                "BIGINT values with hamming.to_unsigned (or .view(np.uint64) on an int64 array)"
            )
        return values.reshape(-1)
    values = list(values)
    if not all(isinstance(v, int | np.unsignedinteger) for v in values):
        raise TypeError("fingerprints must be integers from 0 to 2**64 - 1")
    try:
        return np.array(values, dtype=np.uint64).reshape(-1)
    except OverflowError as error:
        raise ValueError(
            "a fingerprint is outside 0..2**64 - 1: pass unsigned 64-bit fingerprints, "
            "converting stored BIGINT values with hamming.to_unsigned"
        ) from error


def article_id_array(ids: Iterable[int] | np.ndarray) -> np.ndarray:
    """Return article ids as a flat int64 array."""
    ids = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    if ids.size and ids.dtype.kind not in "iu":
        raise TypeError(f"article ids must be integers, not {ids.dtype}")
    if ids.dtype == np.uint64 and ids.size and ids.max() >= 2**63:
        raise ValueError("an article id does not fit a BIGINT column (at most 2**63 - 1)")
    return ids.astype(np.int64).reshape(-1)
