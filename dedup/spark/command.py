"""`python -m dedup spark`: the `duplicates` command's verdicts, computed on Spark."""

from __future__ import annotations

import argparse
import sys

from dedup.engine import Config

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2


def add_command(commands, parents: list[argparse.ArgumentParser]) -> None:
    """Add the `spark` sub-command, with every option of `parents` (the duplicates command's:
    the same verdicts)."""
    spark = commands.add_parser(
        "spark",
        parents=parents,
        conflict_handler="resolve",
        help="the duplicates command on Spark (local or a cluster): pairs and clusters to files",
        description=(
            "Find what `duplicates` finds, on Spark: read JSON Lines or Parquet (id, text), "
            "fingerprint and compute features per partition, shuffle on the index's (table, "
            "key) and on passage keys, verify, and write DIR/pairs.jsonl (the fields "
            "duplicates prints, the same pairs), DIR/clusters.jsonl (connected components of "
            "the pairs), DIR/review.jsonl (the input rows of the articles in some pair, for "
            "`manage.py import`), and Parquet beside them. With --archive, the input is a batch "
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
    spark.add_argument("--jobs", "-j", type=int, default=1, help=argparse.SUPPRESS)
    spark.add_argument("--with-text", action="store_true", help=argparse.SUPPRESS)


def run(args: argparse.Namespace, config: Config) -> int:
    """Run the job; say what it did on standard error; return the exit code."""
    if args.partitions is not None and args.partitions < 1:
        print(f"error: --partitions must be at least 1, not {args.partitions}", file=sys.stderr)
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
