"""The Python workers' side of the job's `mapInArrow` steps: Arrow record batches in, Arrow
record batches out, each step the plain function of dedup.spark.partitions over the rows of
its batches. Between the JVM and Python only Arrow columns travel (no pickled row objects);
the engine's Detector is built once per Python worker (partitions.detector). No pyspark
import: each step can be tested without Spark.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import pyarrow as pa

from dedup.engine import Config
from dedup.spark import partitions

OUT_ROWS = 4096  # rows per batch a step yields

_LONGS = pa.list_(pa.int64())
FEATURES = pa.schema(
    [
        ("pos", pa.int64()),
        ("fp", pa.int64()),
        ("keys", _LONGS),
        ("facts", _LONGS),
        ("features", pa.binary()),
    ]
)
PAIRS = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("kind", pa.string()),
        ("distance", pa.int32()),
        ("similarity", pa.float64()),
        ("shared_chars", pa.int64()),
        ("shared_passages", pa.list_(_LONGS)),
    ]
)
POPULAR = pa.schema([("key", pa.int64()), ("pos", pa.int64())])


def _rows(batches: Iterable[pa.RecordBatch], names: tuple[str, ...]) -> Iterator[tuple]:
    """Yield the rows of the batches as tuples of the named columns."""
    for batch in batches:
        yield from zip(*(batch.column(name).to_pylist() for name in names), strict=True)


def _batches(rows: Iterable[tuple], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Yield the rows as record batches of OUT_ROWS rows at most."""
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, OUT_ROWS)):
        columns = list(zip(*chunk, strict=True))
        yield pa.RecordBatch.from_arrays(
            [pa.array(column, type=f.type) for column, f in zip(columns, schema, strict=True)],
            schema=schema,
        )


def featurize(batches: Iterable[pa.RecordBatch], config: Config, settings: dict):
    """(pos, text) -> (pos, fp, keys, facts, features): partitions.featurize."""
    rows = _rows(batches, ("pos", "text"))
    yield from _batches(partitions.featurize(rows, config, settings), FEATURES)


def verify(batches: Iterable[pa.RecordBatch], config: Config, settings: dict):
    """Verification rows (a, b, features, owners; partitions.verify) -> the duplicates."""
    rows = _rows(batches, ("a", "b", "features", "owners"))
    yield from _batches(partitions.verify(rows, config, settings), PAIRS)


def popular(batches: Iterable[pa.RecordBatch]):
    """(pos, features, owners) -> (key, pos): partitions.popular_keys."""
    rows = _rows(batches, ("pos", "features", "owners"))
    yield from _batches(partitions.popular_keys(rows), POPULAR)
