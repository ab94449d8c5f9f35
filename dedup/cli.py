"""The command line: `python -m dedup fingerprint|pairs|clusters --input PATH`."""

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

from dedup.engine import Config, ConfigError, Fingerprinter
from dedup.engine.config import TF_MODES, TOKENIZERS
from dedup.engine.pairs import Pairs, clusters, pairs, plan_for_pairs
from dedup.engine.plan import PlanError, plan_for
from dedup.engine.records import BadRow, InputError, Record, count_rows, read_records
from dedup.spark.command import add_command as add_spark_command

EXIT_OK = 0
EXIT_SKIPPED = 1  # the output is complete for every good row, but some rows were skipped
EXIT_USAGE = 2


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    default = Config()
    group = parser.add_argument_group("fingerprint configuration")
    group.add_argument("--tokenizer", choices=TOKENIZERS, default=default.tokenizer)
    group.add_argument(
        "--top-n",
        type=int,
        default=default.top_n,
        metavar="N",
        help=f"keywords per article (default {default.top_n})",
    )
    group.add_argument(
        "--tf",
        choices=TF_MODES,
        default=default.tf,
        help=f"term frequency scaling (default {default.tf})",
    )
    group.add_argument("--seed", type=int, default=default.seed, help="mmh3 hash seed")
    group.add_argument(
        "--stop-words",
        metavar="FILE",
        help="extra stop words, one per line (beside the bundled list)",
    )


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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of `python -m dedup`."""
    parser = argparse.ArgumentParser(
        prog="python -m dedup",
        description="Find near-duplicate articles with SimHash fingerprints.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fingerprint = commands.add_parser(
        "fingerprint",
        help="fingerprint articles; JSON Lines out, one line per article, in input order",
        description=(
            "Read articles and write one JSON line per article to standard output: "
            '{"id", "fingerprint" (16 hex digits, or null), "status", "tokens", "version"}. '
            'Input: JSON Lines ({"id": ..., "text": ...}), CSV with id,text columns, or a '
            "directory of .txt/.html files (the id is the path). Bad rows are reported on "
            "standard error and skipped; the exit code is 1 if any row was skipped."
        ),
    )
    _input_arguments(fingerprint)
    _config_arguments(fingerprint)
    fingerprint.set_defaults(run=_run_fingerprint)

    pairs = commands.add_parser(
        "pairs",
        help="every pair of articles within a distance, once each; JSON Lines out",
        description=(
            'Write {"a", "b", "distance"} for every pair of fingerprinted articles within '
            "--max-distance, exactly once (a before b in input order). Input as for "
            "fingerprint, or its output (rows with a fingerprint instead of a text). Articles "
            "without a fingerprint are left out."
        ),
    )
    clusters = commands.add_parser(
        "clusters",
        help="groups of near-duplicates, one JSON line per cluster",
        description=(
            "Group the pairs within --max-distance into clusters (connected components) and "
            "write one line per cluster: its original (the earliest article in input order) "
            "and every member with its distance to the original; a member farther than the "
            "threshold belongs through a chain, shown by linked_to."
        ),
    )
    duplicates = commands.add_parser(
        "duplicates",
        help="verified duplicates: near copies and partial copies, with the passages they share",
        description=(
            'Write {"a", "b", "kind", "distance", "similarity", "shared_chars", '
            '"shared_passages"} for every verified duplicate pair, once (a before b in input '
            "order), at the recommended settings: the pairs the service's review queue shows at "
            "its defaults. kind is exact (the same text; a later copy is not compared again, as "
            "in the service), near (the same article, edited; similarity is the Jaccard "
            "similarity of their shingles: 4-grams of units, a Chinese character or an English "
            "word each) or partial (most of the smaller article is in the other; similarity is "
            "that share). Boilerplate (passages many of the input's articles hold) counts for "
            "neither. shared_chars is the smaller article's text found in the other, in "
            "characters; shared_passages lists [passage of a, passage of b] of a partial copy: "
            "passages are the sentences, lines and paragraphs of the normalised text, short ones "
            "joined (--with-text adds them). Input as for fingerprint; it needs the texts."
        ),
    )
    _input_arguments(duplicates)
    duplicates.add_argument(
        "--with-text", action="store_true", help="add the text of each shared passage"
    )
    settings = duplicates.add_argument_group(
        "verification", "the service's settings of the same names; their defaults by default"
    )
    settings.add_argument("--near", type=_share, help="least Jaccard similarity of a near copy")
    settings.add_argument(
        "--near-short", type=_share, help="the same when the shorter text has under 140 characters"
    )
    settings.add_argument(
        "--partial", type=_share, help="least share of the smaller article in the other"
    )
    settings.add_argument(
        "--partial-min-chars",
        type=int,
        help="least characters of the smaller article's text a partial copy shares",
    )
    settings.add_argument(
        "--k-max", type=int, help="largest fingerprint distance of a candidate pair"
    )
    _config_arguments(duplicates)
    duplicates.set_defaults(run=_run_duplicates)
    add_spark_command(commands, duplicates, _config)

    plan = commands.add_parser(
        "plan",
        help="choose an index plan for n fingerprints and k_max, and explain the choice",
        description=(
            "Cost every block count for n stored fingerprints and the largest distance k_max "
            "the index must answer (tables, rows, candidates per query, memory) and say which "
            "plan wins within the memory budget, and why."
        ),
    )
    plan.add_argument("--n", type=int, required=True, help="fingerprints to store")
    plan.add_argument("--k-max", type=int, default=3, help="largest distance answered")
    plan.add_argument("--memory-gib", type=float, help="memory budget of the in-memory index")
    plan.set_defaults(run=_run_plan)
    for command, run in ((pairs, _run_pairs), (clusters, _run_clusters)):
        _input_arguments(command)
        command.add_argument(
            "--max-distance",
            "-k",
            type=int,
            default=3,
            metavar="K",
            help="largest Hamming distance of a pair (default 3)",
        )
        _config_arguments(command)
        command.set_defaults(run=run)
    return parser


def _share(text: str) -> float:
    """Read a share (0 to 1) from the command line."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, not {text!r}")
    return value


def _input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        "-i",
        required=True,
        metavar="PATH",
        help="a .jsonl or .csv file, a directory, or - for standard input",
    )
    parser.add_argument(
        "--jobs", "-j", type=int, default=1, metavar="N", help="worker processes (default 1)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
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


def _run_duplicates(args: argparse.Namespace) -> int:
    from dedup.engine.verify import Detector, Duplicate

    given = {
        "k_article": args.k_max,
        "near": args.near,
        "near_short": args.near_short,
        "partial": args.partial,
        "min_chars": args.partial_min_chars,
    }
    detector = Detector(_config(args), **{k: v for k, v in given.items() if v is not None})
    reporter = _Reporter(sys.stderr)
    rows = _progress(read_records(args.input), count_rows(args.input), "article")
    records, features, verified, found = [], [], [], []
    originals: dict[str, int] = {}
    for record in reporter.good(rows):
        if record.text is None:
            reporter.skipped += 1
            print(f"{record.id}: has no text (duplicates needs texts); skipped", file=sys.stderr)
            continue
        i = len(records)
        records.append(record)
        original = originals.setdefault(content_hash(record.text), i)
        if original != i:  # as the service: an exact copy of the first, not verified again
            found.append(Duplicate(original, i, "exact", 0, 1.0))
            continue
        verified.append(i)
        features.append(detector.features(record.text))
    for d in detector.duplicates(features):
        found.append(dataclasses.replace(d, a=verified[d.a], b=verified[d.b]))
    found.sort(key=lambda d: (d.a, d.b))
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
