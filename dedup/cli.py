"""The command line: `python -m dedup fingerprint|pairs|clusters|duplicates|plan`; its
arguments are in dedup.cli_parser."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import multiprocessing
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

import numpy as np

from dedup.cli_parser import build_parser, detector_settings
from dedup.engine import Config, ConfigError, Fingerprinter
from dedup.engine.pairs import Pairs, clusters, pairs, plan_for_pairs
from dedup.engine.plan import PlanError, plan_for
from dedup.engine.records import BadRow, InputError, Record, count_rows, read_records
from dedup.spark import command as spark_command

__all__ = ["EXIT_OK", "EXIT_SKIPPED", "EXIT_USAGE", "build_parser", "content_hash", "main"]

EXIT_OK = 0
EXIT_SKIPPED = 1  # the output is complete for every good row, but some rows were skipped
EXIT_USAGE = 2


def _config(args: argparse.Namespace) -> Config:
    extra: tuple[str, ...] = ()
    if args.stop_words:
        with open(args.stop_words, encoding="utf-8") as handle:
            extra = tuple(handle.read().split())
    return Config(
        tokenizer=args.tokenizer,
        top_n=args.top_n,
        tf=args.tf,
        seed=args.seed,
        extra_stop_words=extra,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = build_parser().parse_args(argv)
    run = {
        "fingerprint": _run_fingerprint,
        "pairs": _run_pairs,
        "clusters": _run_clusters,
        "duplicates": _run_duplicates,
        "plan": _run_plan,
        "spark": lambda args: spark_command.run(args, _config(args)),
    }[args.command]
    try:
        return run(args)
    except (InputError, ConfigError, PlanError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _progress(rows: Iterable, total: int | None, unit: str) -> Iterable:
    if not sys.stderr.isatty():
        return rows
    from tqdm import tqdm

    return tqdm(rows, total=total, unit=unit, file=sys.stderr, dynamic_ncols=True)


class _Reporter:
    """Write bad rows to standard error as they come, and count them."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.skipped = 0

    def good(self, rows: Iterable[Record | BadRow]) -> Iterator[Record]:
        for row in rows:
            if isinstance(row, BadRow):
                self.skipped += 1
                print(row, file=self.stream, flush=True)
            else:
                yield row

    def finish(self) -> int:
        """Say how many rows were skipped; return the exit code."""
        if self.skipped:
            print(f"{self.skipped} row(s) skipped, see above", file=self.stream)
            return EXIT_SKIPPED
        return EXIT_OK


_worker: Fingerprinter | None = None


def _worker_start(config: Config) -> None:
    global _worker
    _worker = Fingerprinter(config)


def _worker_fingerprint(text: str) -> tuple[str | None, str, int]:
    fp = _worker.fingerprint(text)
    return fp.hex, fp.status.value, fp.tokens


def _fingerprints(
    records: Iterable[Record], config: Config, jobs: int
) -> Iterator[tuple[Record, str | None, str, int]]:
    """Yield (record, hex, status, tokens) in input order; rows that carry one keep theirs."""
    if jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {jobs}")
    if jobs == 1:
        _worker_start(config)
        for record in records:
            if record.text is None:
                yield record, record.fingerprint, record.status or _status_of(record), 0
            else:
                yield record, *_worker_fingerprint(record.text)
        return
    records = list(records)
    with multiprocessing.get_context("fork").Pool(
        jobs, initializer=_worker_start, initargs=(config,)
    ) as pool:
        results = pool.imap(_worker_fingerprint, (r.text or "" for r in records), 64)
        for record, result in zip(records, results, strict=True):
            if record.text is None:
                yield record, record.fingerprint, record.status or _status_of(record), 0
            else:
                yield record, *result


def _status_of(record: Record) -> str:
    return "ok" if record.fingerprint else "no_fingerprint"


def _run_fingerprint(args: argparse.Namespace) -> int:
    config = _config(args)
    reporter = _Reporter(sys.stderr)
    rows = _progress(read_records(args.input), count_rows(args.input), "article")
    out = sys.stdout
    version = config.version
    for record, hexa, status, tokens in _fingerprints(reporter.good(rows), config, args.jobs):
        _write(out, record, hexa, status, tokens, version)
    out.flush()
    return reporter.finish()


def _load_fingerprints(args: argparse.Namespace, reporter: _Reporter) -> tuple[list, np.ndarray]:
    """Return the ids and fingerprints (uint64) of the input's fingerprinted articles."""
    config = _config(args)
    rows = _progress(read_records(args.input), count_rows(args.input), "article")
    ids, values = [], []
    for record, hexa, _, _ in _fingerprints(reporter.good(rows), config, args.jobs):
        if hexa is not None:
            ids.append(record.id)
            values.append(int(hexa, 16))
    return ids, np.array(values, dtype=np.uint64)


def _all_pairs(args: argparse.Namespace, values: np.ndarray) -> Pairs:
    if not 0 <= args.max_distance <= 32:
        raise ConfigError(f"--max-distance must be from 0 to 32, not {args.max_distance}")
    plan = plan_for_pairs(len(np.unique(values)), args.max_distance)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=plan.table_count, unit="table", file=sys.stderr, desc="pairs")
    found = pairs(values, args.max_distance, plan=plan, progress=bar and (lambda _: bar.update()))
    if bar:
        bar.close()
    return found


def content_hash(text: str) -> str:
    """Return the hash exact copies share: the service's (Article.hash_body), whitespace runs
    counted as one space."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def duplicates_of(texts: list[str], detector) -> list:
    """Return the Duplicates of a collection (indices into `texts`, in pair order), as the
    service finds them once settled: a text stored before is an exact copy of its first,
    not verified again; the others are verified together (Detector.duplicates)."""
    from dedup.engine.verify import Duplicate

    features, verified, found = [], [], []
    originals: dict[str, int] = {}
    for i, text in enumerate(texts):
        original = originals.setdefault(content_hash(text), i)
        if original != i:
            found.append(Duplicate(original, i, "exact", 0, 1.0))
            continue
        verified.append(i)
        features.append(detector.features(text))
    for d in detector.duplicates(features):
        found.append(dataclasses.replace(d, a=verified[d.a], b=verified[d.b]))
    return sorted(found, key=lambda d: (d.a, d.b))


def _run_duplicates(args: argparse.Namespace) -> int:
    from dedup.engine.verify import Detector

    detector = Detector(_config(args), **detector_settings(args))
    reporter = _Reporter(sys.stderr)
    rows = _progress(read_records(args.input), count_rows(args.input), "article")
    records = []
    for record in reporter.good(rows):
        if record.text is None:
            reporter.skipped += 1
            print(f"{record.id}: has no text (duplicates needs texts); skipped", file=sys.stderr)
            continue
        records.append(record)
    found = duplicates_of([record.text for record in records], detector)
    out = sys.stdout
    for d in found:
        a, b = records[d.a], records[d.b]
        line = {
            "a": a.id,
            "b": b.id,
            "kind": d.kind,
            "distance": d.distance,
            "similarity": d.similarity,
            "shared_chars": d.shared_chars,
            "shared_passages": [list(pair) for pair in d.shared_passages],
        }
        if args.with_text:
            passages_a, passages_b = detector.passages(a.text), detector.passages(b.text)
            shared = d.shared_passages
            line["shared_text"] = [[passages_a[i], passages_b[j]] for i, j in shared]
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    out.flush()
    return reporter.finish()


def _run_plan(args: argparse.Namespace) -> int:
    budget = None if args.memory_gib is None else int(args.memory_gib * 2**30)
    print(plan_for(args.n, args.k_max, budget).explain())
    return EXIT_OK


def _run_pairs(args: argparse.Namespace) -> int:
    reporter = _Reporter(sys.stderr)
    ids, values = _load_fingerprints(args, reporter)
    found = _all_pairs(args, values)
    out = sys.stdout
    for a, b, d in zip(found.a.tolist(), found.b.tolist(), found.distance.tolist(), strict=True):
        out.write(json.dumps({"a": ids[a], "b": ids[b], "distance": d}, ensure_ascii=False))
        out.write("\n")
    out.flush()
    return reporter.finish()


def _run_clusters(args: argparse.Namespace) -> int:
    reporter = _Reporter(sys.stderr)
    ids, values = _load_fingerprints(args, reporter)
    found = _all_pairs(args, values)
    out = sys.stdout
    for cluster in clusters(values, found):
        members = [
            {
                "id": ids[m],
                "distance": d,
                "linked_to": None if link < 0 else ids[link],
                "linked_distance": ld,
            }
            for m, d, link, ld in zip(
                cluster.members.tolist(),
                cluster.distance.tolist(),
                cluster.linked_to.tolist(),
                cluster.linked_distance.tolist(),
                strict=True,
            )
        ]
        line = {"original": ids[cluster.original], "size": len(members), "members": members}
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    out.flush()
    return reporter.finish()


def _write(
    out: TextIO, record: Record, hexa: str | None, status: str, tokens: int, version: str
) -> None:
    line = {
        "id": record.id,
        "fingerprint": hexa,
        "status": status,
        "tokens": tokens,
        "version": version,
    }
    out.write(json.dumps(line, ensure_ascii=False) + "\n")
