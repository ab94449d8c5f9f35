"""The Spark job in local mode finds exactly what `python -m dedup duplicates` finds."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import functions as F

from dedup.cli import main
from dedup.engine.graph import CARRIES
from dedup.engine.plan import Plan
from dedup.spark import job
from tests.engine.by_sets import stars_by_a_loop
from tests.spark.corpus import rows, write

ARCHIVED = 150  # rows of the corpus in the archive; the rest is the new batch


@pytest.fixture(scope="module")
def spark():
    with job.session("local[2]") as session:
        yield session


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return rows()


def _cli(argv: list[str]) -> tuple[int, list[dict]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def both(spark, corpus, tmp_path_factory) -> tuple[list[dict], Path, int]:
    """Return the command line's pairs, the Spark job's output directory and its exit code."""
    base = tmp_path_factory.mktemp("spark")
    source = write(base / "corpus.jsonl", corpus)
    code, expected = _cli(["duplicates", "--input", str(source)])
    assert code == 1  # the row without a text is skipped by both
    output = base / "out"
    with contextlib.redirect_stderr(io.StringIO()):
        spark_code = main(["spark", "--input", str(source), "--output", str(output)])
    return expected, output, spark_code


def _key(pair: dict) -> tuple:
    return pair["a"], pair["b"], pair["kind"]


def test_spark_pairs_equal_the_command_lines(both):
    expected, output, code = both
    found = _lines(output / "pairs.jsonl")
    assert code == 1
    assert {p["kind"] for p in expected} == {"exact", "near", "partial"}
    assert [_key(p) for p in found] == [_key(p) for p in expected]
    for mine, theirs in zip(found, expected, strict=True):
        assert mine["similarity"] == pytest.approx(theirs["similarity"], abs=1e-6)
    assert found == expected  # distance, shared characters and passages too


def test_spark_finds_every_repost_of_a_popular_story(both, corpus):
    expected, output, _ = both
    story = {row["id"] for row in corpus if str(row["id"]).startswith("story-")}
    for pairs in (expected, _lines(output / "pairs.jsonl")):
        assert len(story) == 36 and story <= {p[side] for p in pairs for side in ("a", "b")}


def test_spark_clusters_are_the_stories_of_the_pairs(both, corpus):
    expected, output, _ = both
    ids = [item["id"] for item in corpus]
    order = {x: i for i, x in enumerate(ids)}
    joins = [
        (order[p["a"]], order[p["b"]])
        for p in expected
        if p["kind"] != "partial" or p["similarity"] >= CARRIES
    ]
    centre = stars_by_a_loop(len(ids), joins, list(range(len(ids))))
    groups: dict = {}
    for x in range(len(ids)):
        groups.setdefault(centre[x], []).append(ids[x])
    stories = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: order[g[0]])
    clusters = _lines(output / "clusters.jsonl")
    assert [c["members"] for c in clusters] == stories
    assert all(
        c["original"] == c["members"][0] and c["size"] == len(c["members"]) for c in clusters
    )
    assert any(len(c["members"]) > 2 for c in clusters)


def test_spark_review_rows_are_the_paired_articles_in_input_order(both, corpus):
    expected, output, _ = both
    paired = {p["a"] for p in expected} | {p["b"] for p in expected}
    review = _lines(output / "review.jsonl")
    assert review == [item for item in corpus if item["id"] in paired]


def test_spark_writes_parquet_beside_the_json_lines(spark, both):
    expected, output, _ = both
    pairs = spark.read.parquet(str(output / "pairs.parquet")).orderBy("a", "b").collect()
    assert sorted((r.a, r.b, r.kind) for r in pairs) == sorted(
        (str(p["a"]), str(p["b"]), p["kind"]) for p in expected
    )
    clusters = spark.read.parquet(str(output / "clusters.parquet")).collect()
    members = [m for r in clusters for m in r.members]
    review = {str(row["id"]) for row in _lines(output / "review.jsonl")}
    assert sum(r.size for r in clusters) == len(set(members)) and set(members) <= review


def test_spark_archive_mode_finds_the_pairs_with_a_new_article(spark, corpus, tmp_path_factory):
    base = tmp_path_factory.mktemp("archive")
    archived = [item for item in corpus[:ARCHIVED] if "text" in item]
    new = corpus[ARCHIVED:]
    # The archive as Parquet, as a previous job or an export would leave it.
    frame = spark.createDataFrame(
        [(str(item["id"]), item["text"]) for item in archived], "id string, text string"
    )
    frame.coalesce(1).write.parquet(str(base / "archive.parquet"))
    whole = [{**item, "id": str(item["id"])} for item in archived] + new
    _, expected = _cli(["duplicates", "--input", str(write(base / "whole.jsonl", whole))])
    new_ids = {item["id"] for item in new}
    expected = [p for p in expected if p["a"] in new_ids or p["b"] in new_ids]
    assert len({p["kind"] for p in expected}) == 3
    output = base / "out"
    with contextlib.redirect_stderr(io.StringIO()):
        main(
            [
                "spark",
                "--input",
                str(write(base / "new.jsonl", new)),
                "--archive",
                str(base / "archive.parquet"),
                "--output",
                str(output),
            ]
        )
    assert _lines(output / "pairs.jsonl") == expected


def test_table_keys_in_the_jvm_are_the_plans_keys(spark):
    plan = Plan.even(5, 4)
    values = np.random.default_rng(1).integers(0, 2**64, 300, dtype=np.uint64)
    values[:3] = [2**64 - 1, 2**63, 0]
    frame = spark.createDataFrame([(v,) for v in values.view(np.int64).tolist()], "fp long")
    rows = frame.select("fp", job.table_keys(plan, F.col("fp")).alias("keys")).collect()
    found = np.array([row.keys for row in rows], dtype=np.int64).view(np.uint64)
    assert [row.fp for row in rows] == values.view(np.int64).tolist()
    assert found.T.tolist() == plan.keys(values).tolist()
