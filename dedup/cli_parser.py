"""The arguments of `python -m dedup`: one function per command, one parser."""

from __future__ import annotations

import argparse

from dedup.engine import Config
from dedup.engine.config import TF_MODES, TOKENIZERS
from dedup.spark import command as spark_command

FINGERPRINT_DESCRIPTION = (
    "Read articles and write one JSON line per article to standard output: "
    '{"id", "fingerprint" (16 hex digits, or null), "status", "tokens", "version"}. '
    'Input: JSON Lines ({"id": ..., "text": ...}), CSV with id,text columns, or a '
    "directory of .txt/.html files (the id is the path). Bad rows are reported on "
    "standard error and skipped; the exit code is 1 if any row was skipped."
)
PAIRS_DESCRIPTION = (
    'Write {"a", "b", "distance"} for every pair of fingerprinted articles within '
    "--max-distance, exactly once (a before b in input order). Input as for "
    "fingerprint, or its output (rows with a fingerprint instead of a text). Articles "
    "without a fingerprint are left out."
)
CLUSTERS_DESCRIPTION = (
    "Group the pairs within --max-distance into clusters, one story each, as the review "
    "dashboard does: in input order, an article no earlier original claimed is an "
    "original and claims every unclaimed article within the threshold of it. Write one "
    "line per cluster: its original and every member with its distance to the original "
    "(linked_to names the original); nothing joins through a chain."
)
DUPLICATES_DESCRIPTION = (
    'Write {"a", "b", "kind", "distance", "similarity", "shared_chars", '
    '"shared_passages"} for every verified duplicate pair, once (a before b in input '
    "order), at the recommended settings: the pairs the service's review queue shows at "
    "its defaults. kind is exact (the same text; a later copy is not compared again, as "
    "in the service), near (the same article, edited; similarity is the Jaccard "
    "similarity of their shingles: 4-grams of units, a Chinese character or an English "
    "word each) or partial (a stretch of the smaller article is in the other, copied "
    "whole; similarity is its share). Boilerplate (passages many of the input's "
    "articles hold) counts for neither. shared_chars is the smaller article's text "
    "found in the other, in characters; shared_passages lists [passage of a, passage "
    "of b] of a partial copy: passages are the sentences, lines and paragraphs of the "
    "normalised text, short ones joined (--with-text adds them). Input as for fingerprint; "
    "it needs the texts."
)
PLAN_DESCRIPTION = (
    "Cost every block count for n stored fingerprints and the largest distance k_max "
    "the index must answer (tables, rows, candidates per query, memory) and say which "
    "plan wins within the memory budget, and why."
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of `python -m dedup`; `command` names the command chosen."""
    parser = argparse.ArgumentParser(
        prog="python -m dedup",
        description="Find near-duplicate articles with SimHash fingerprints.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fingerprint = commands.add_parser(
        "fingerprint",
        help="fingerprint articles; JSON Lines out, one line per article, in input order",
        description=FINGERPRINT_DESCRIPTION,
    )
    _input_arguments(fingerprint)
    _config_arguments(fingerprint)
    _add_pairs(commands)
    _add_clusters(commands)
    _add_duplicates(commands)
    spark_command.add_command(commands, shared=[_verification_arguments, _config_arguments])
    _add_plan(commands)
    return parser


def _add_pairs(commands) -> None:
    pairs = commands.add_parser(
        "pairs",
        help="every pair of articles within a distance, once each; JSON Lines out",
        description=PAIRS_DESCRIPTION,
    )
    _distance_arguments(pairs)


def _add_clusters(commands) -> None:
    clusters = commands.add_parser(
        "clusters",
        help="groups of near-duplicates, one JSON line per cluster",
        description=CLUSTERS_DESCRIPTION,
    )
    _distance_arguments(clusters)


def _distance_arguments(command: argparse.ArgumentParser) -> None:
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


def _add_duplicates(commands) -> None:
    duplicates = commands.add_parser(
        "duplicates",
        help="verified duplicates: near copies and partial copies, with the passages they share",
        description=DUPLICATES_DESCRIPTION,
    )
    _input_arguments(duplicates)
    duplicates.add_argument(
        "--with-text", action="store_true", help="add the text of each shared passage"
    )
    _verification_arguments(duplicates)
    _config_arguments(duplicates)
    return duplicates


def _verification_arguments(command: argparse.ArgumentParser) -> None:
    """The verification settings of duplicates and spark (the same verdicts)."""
    settings = command.add_argument_group(
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


def _add_plan(commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="choose an index plan for n fingerprints and k_max, and explain the choice",
        description=PLAN_DESCRIPTION,
    )
    plan.add_argument("--n", type=int, required=True, help="fingerprints to store")
    plan.add_argument("--k-max", type=int, default=3, help="largest distance answered")
    plan.add_argument("--memory-gib", type=float, help="memory budget of the in-memory index")


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


def detector_settings(args: argparse.Namespace) -> dict:
    """Return the Detector's keyword arguments that the verification flags set (duplicates and
    spark): those given only, so that the others keep the Detector's defaults."""
    given = {
        "k_article": args.k_max,
        "near": args.near,
        "near_short": args.near_short,
        "partial": args.partial,
        "min_chars": args.partial_min_chars,
    }
    return {k: v for k, v in given.items() if v is not None}
