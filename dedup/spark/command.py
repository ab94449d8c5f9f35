"""`python -m dedup spark`: the `duplicates` command's verdicts, computed on Spark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from dedup.engine import Config

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2


def add_command(commands, shared: list[Callable[[argparse.ArgumentParser], None]]) -> None:
    """Add the `spark` sub-command, with the options that each of `shared` adds (the
    duplicates command's verification and configuration: the same verdicts). Not as argparse
    parents with conflicts resolved: that takes the option strings off the parent's own
    actions, and `duplicates --help` then showed --input, --jobs and --with-text as
    positional arguments."""
    spark = commands.add_parser(
        "spark",
        help="the duplicates command on Spark (local or a cluster): pairs and clusters to files",
        description=(
            "Find what `duplicates` finds, on Spark: read JSON Lines or Parquet (id, text), "
            "fingerprint and compute features per partition, shuffle on the index's (table, "
            "key) and on passage keys, verify, and write DIR/pairs.jsonl (the fields "
            "duplicates prints, the same pairs), DIR/clusters.jsonl (the pairs' stories, "
            "one cluster each, as `clusters` and the dashboard group them), DIR/review.jsonl "
            "(the input rows of the articles in some pair, for `manage.py import`), and "
            "Parquet beside them. With --archive, the input is a batch "
            "of new articles: only pairs with at least one of them are written. Runs the same "
            "under spark-submit (dedup/spark/job.py)."
        ),
    )
    spark.add_argument(
        "--input",
        "-i",
        required=True,
        metavar="PATH",
        help="JSON Lines or Parquet (id, text): a file or a directory, on any file system "
        "Spark reads",
    )
    spark.add_argument("--output", "-o", required=True, metavar="DIR", help="output directory")
    spark.add_argument(
        "--archive",
        metavar="PATH",
        help="articles already stored (JSON Lines or Parquet): read before the input",
    )
    spark.add_argument(
        "--master",
        help="Spark master (default: spark-submit's, else local[*]), e.g. local[2]",
    )
    spark.add_argument(
        "--partitions",
        type=int,
        metavar="N",
        help="partitions of the input and of every shuffle (default: one per local core, "
        "else the cluster's spark.sql.shuffle.partitions)",
    )
    for add in shared:
        add(spark)


def run(args: argparse.Namespace, config: Config) -> int:
    """Run the job; say what it did on standard error; return the exit code."""
    if args.partitions is not None and args.partitions < 1:
        print(f"error: --partitions must be at least 1, not {args.partitions}", file=sys.stderr)
        return EXIT_USAGE
    for option, path in (("--input", args.input), ("--archive", args.archive)):
        problem = _input_problem(path)
        if problem:
            print(f"error: {option} {path}: {problem}", file=sys.stderr)
            return EXIT_USAGE
    from dedup import cli_parser  # imported here: the parser module imports this one
    from dedup.spark import job

    with job.session(args.master, args.partitions) as spark:
        summary = job.run(
            spark,
            source=args.input,
            output=args.output,
            archive=args.archive,
            config=config,
            settings=cli_parser.detector_settings(args),
        )
    for bad in summary.bad_rows:
        print(bad, file=sys.stderr)
    print(summary.describe(), file=sys.stderr)
    return EXIT_SKIPPED if summary.skipped else EXIT_OK


def _input_problem(path: str | None) -> str | None:
    """Return what is wrong with a local input path before Spark starts (a missing file is
    otherwise a Java stack trace), or None; a path with a scheme is Spark's to read."""
    if path is None or "://" in path:
        return None
    if not Path(path).exists():
        return "no such file or directory"
    if Path(path).suffix.lower() in (".csv", ".tsv", ".txt", ".zip", ".html", ".htm"):
        return (
            "spark reads JSON Lines or Parquet with id and text; convert it first, or use "
            "`python -m dedup duplicates`, which reads it"
        )
    return None
