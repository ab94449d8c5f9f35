"""What runs inside Spark's Python workers: the engine on one partition at a time.

Plain Python over iterators of tuples (no pyspark import), so that each step can be tested
alone. Fingerprints and keys travel as signed 64-bit integers (Spark's LongType); the engine
reads them back as unsigned.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator

import numpy as np

from dedup.cli import content_hash
from dedup.engine import Config
from dedup.engine.features import Features
from dedup.engine.records import BadRow, jsonl_object, record_of
from dedup.engine.verify import Boilerplate, Detector, popular_asks

_detectors: dict[tuple, Detector] = {}


def detector(config: Config, settings: dict) -> Detector:
    """Return the worker's Detector for these settings (built once per Python worker)."""
    which = (config, tuple(sorted(settings.items())))
    found = _detectors.get(which)
    if found is None:
        found = _detectors[which] = Detector(config, **settings)
    return found


def signed(value: int) -> int:
    """Return a 64-bit unsigned integer as Spark's signed LongType holds it."""
    return value - (1 << 64) if value >= 1 << 63 else value


# A parsed row: ("ok", position, id as JSON, id as text, text, input row as JSON, content
# hash) or ("bad", position, message).
def parse_lines(lines: Iterable[tuple[str, int]], name: str, offset: int) -> Iterator[tuple]:
    """Read (line, number from 0) of JSON Lines as the command line does."""
    for line, number in lines:
        where = f"{name}:{number + 1}"
        item = jsonl_object(
            line.encode("utf-8"), where, first=number == 0, example='{"id": ..., "text": ...}'
        )
        if item is None:
            continue
        yield _row(item if isinstance(item, BadRow) else record_of(item[1], where), offset + number)


def parse_objects(objects: Iterable[tuple[dict, int]], name: str, offset: int) -> Iterator[tuple]:
    """Read (row as a dict, number from 0) of a Parquet input."""
    for obj, number in objects:
        yield _row(record_of(obj, f"{name}: row {number + 1}"), offset + number, obj)


def _row(record, position: int, obj: dict | None = None) -> tuple:
    if isinstance(record, BadRow):
        return ("bad", position, str(record))
    if record.text is None:
        return ("bad", position, f"{record.id}: has no text (duplicates needs texts); skipped")
    ident = json.dumps(record.id, ensure_ascii=False)
    if obj is None:
        obj = {"id": record.id, "text": record.text}
    raw = json.dumps(obj, ensure_ascii=False, default=str)
    name = str(record.id)
    return ("ok", position, ident, name, record.text, raw, content_hash(record.text))


def featurize(rows: Iterable[tuple[int, str]], config: Config, settings: dict) -> Iterator:
    """Yield (position, fingerprint or None, passage keys, fact keys, packed features) per
    (position, text)."""
    found = detector(config, settings)
    for position, text in rows:
        features = found.features(text)
        fp = None if features.fingerprint is None else signed(features.fingerprint)
        keys = features.passage_keys.astype(np.uint64).view(np.int64).tolist()
        facts = features.fact_keys.astype(np.uint64).view(np.int64).tolist()
        yield position, fp, keys, facts, features.to_bytes()


# A verification row: (a, b, packed features, owners) where the owners are how many articles
# of the whole collection hold each of the article's passage keys, in the order of its keys.
# Rows come sorted by a then b, and each a's rows start with its own (b = HEAD): a's features
# travel once per a, not once per pair.
HEAD = -1


def verify(rows: Iterable[tuple], config: Config, settings: dict) -> Iterator[tuple]:
    """Verify candidate pairs, given as verification rows (above). Yield the duplicates as
    (a, b, kind, distance, similarity, shared_chars, shared_passages)."""
    found = detector(config, settings)
    for a, group in itertools.groupby(rows, key=lambda row: row[0]):
        head = next(group)
        if head[1] != HEAD:
            raise ValueError(f"the rows of article {a} do not start with its own")
        fa = Features.from_bytes(head[2])
        held = _held(fa, head[3])
        others = []
        for _, b, packed, owners in group:  # noqa: B031 (the group after its head)
            fb = Features.from_bytes(packed)
            held.update(_held(fb, owners))
            others.append((b, fb))
        for d in found.judge_many(a, fa, others, Boilerplate(_owners(held))):
            passages = [[int(p), int(q)] for p, q in d.shared_passages]
            yield d.a, d.b, d.kind, d.distance, float(d.similarity), d.shared_chars, passages


def popular_keys(rows: Iterable[tuple]) -> Iterator[tuple[int, int]]:
    """Yield (passage key, position) for each popular key an article is a story holder of
    (dedup.engine.popular), given (position, features, owners of its keys in their order) of
    the articles holding one."""
    for pos, packed, owners in rows:
        features = Features.from_bytes(packed)
        asks = popular_asks(features, np.asarray(owners or (), dtype=np.int64))
        keys = features.passage_keys[asks].view(np.int64)
        yield from ((key, pos) for key in set(keys.tolist()))


def _held(features: Features, owners) -> dict[int, int]:
    """Return {passage key (signed): articles holding it} of one article."""
    keys = features.passage_keys.astype(np.uint64).view(np.int64).tolist()
    return dict(zip(keys, owners or (), strict=True))


def _owners(held: dict[int, int]):
    def owners(keys: np.ndarray) -> np.ndarray:
        signed_keys = np.asarray(keys, dtype=np.uint64).view(np.int64).tolist()
        return np.array([held.get(key, 1) for key in signed_keys], dtype=np.int64)

    return owners
