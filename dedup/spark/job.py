"""The Spark job: `duplicates` over a collection, or a batch of new articles against an archive.

1. Read JSON Lines or Parquet; a row's position is its place in the input (the archive first),
   which orders every pair (a before b) and picks each cluster's original, as the command line.
2. Exact copies (the same content hash) pair with the first; only the first is verified, as in
   the service and the command line.
3. Per partition, the engine fingerprints each article and computes its features (one Detector
   per Python worker).
4. Candidates, by shuffling: each distinct fingerprint as its (table, key) rows of the plan
   (Plan.keys), a self-join on them within k_article; each passage key held 2 to
   MAX_PASSAGE_OWNERS times, and each fact key (dedup.engine.facts) as often; and each story
   holder of a passage key held by more (one where it is not boilerplate) with the
   POPULAR_HOLDERS story holders before it (as Detector.candidates, dedup.engine.popular).
5. Boilerplate: how many articles hold each passage key, over the whole collection.
6. Verification per partition with the engine (Detector.judge_many) on packed features.
7. Pairs, their clusters of one story each (dedup.spark.stars, the rule of
   dedup.engine.graph.story_clusters) and the rows to review, written as JSON Lines and Parquet.

    spark-submit [options] dedup/spark/job.py --input PATH --output DIR [--archive PATH]
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dedup.engine import Config
from dedup.engine.pairs import plan_for_pairs
from dedup.engine.plan import Plan
from dedup.engine.verify import (
    MAX_PASSAGE_OWNERS,
    MAX_POPULAR_OWNERS,
    POPULAR_HOLDERS,
    Detector,
)
from dedup.spark import batches, partitions
from dedup.spark.output import output_write

# New articles' positions start here in archive mode: after every archive row.
NEW = 1 << 40
BAD_ROWS_SHOWN = 100
ARROW_ROWS = 1024  # rows per Arrow batch into Python: a row holds an article's features

_ROWS = T.StructType(
    [
        T.StructField("pos", T.LongType(), False),
        T.StructField("id", T.StringType(), False),  # as JSON: a string or an integer
        T.StructField("name", T.StringType(), False),  # the id as text, for Parquet
        T.StructField("text", T.StringType(), False),
        T.StructField("raw", T.StringType(), False),  # the input row as JSON
        T.StructField("hash", T.StringType(), False),
    ]
)
_FEATURES = T.StructType(
    [
        T.StructField("pos", T.LongType(), False),
        T.StructField("fp", T.LongType(), True),
        T.StructField("keys", T.ArrayType(T.LongType(), False), False),
        T.StructField("facts", T.ArrayType(T.LongType(), False), False),
        T.StructField("features", T.BinaryType(), False),
    ]
)
_POPULAR = T.StructType(
    [T.StructField("key", T.LongType(), False), T.StructField("pos", T.LongType(), False)]
)
_PAIRS = T.StructType(
    [
        T.StructField("a", T.LongType(), False),
        T.StructField("b", T.LongType(), False),
        T.StructField("kind", T.StringType(), False),
        T.StructField("distance", T.IntegerType(), True),
        T.StructField("similarity", T.DoubleType(), False),
        T.StructField("shared_chars", T.LongType(), False),
        T.StructField(
            "shared_passages", T.ArrayType(T.ArrayType(T.LongType(), False), False), False
        ),
    ]
)


@dataclass
class Summary:
    """What a run read and wrote."""

    articles: int = 0
    skipped: int = 0
    pairs: int = 0
    clusters: int = 0
    seconds: float = 0.0
    bad_rows: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """Return the summary in one line."""
        rate = self.articles / self.seconds if self.seconds else 0.0
        skipped = f"{self.skipped:,} row{'' if self.skipped == 1 else 's'} skipped"
        return (
            f"{self.articles:,} articles ({skipped}), {self.pairs:,} pairs, "
            f"{self.clusters:,} clusters in {self.seconds:.1f} s "
            f"({rate:,.{0 if rate >= 10 else 1}f} articles/s)"
        )


@contextlib.contextmanager
def session(master: str | None = None, partitions: int | None = None) -> Iterator[SparkSession]:
    """Yield the active SparkSession, or start one (and stop it after): on `master`, else
    spark-submit's, else local[*]. Python workers run this interpreter unless PYSPARK_PYTHON
    says otherwise."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("dedup")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit names the master
    if master or not submitted:
        master = master or "local[*]"
        builder = builder.master(master)
        builder = builder.config("spark.ui.enabled", "false")
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if master and master.startswith("local"):
        cores = os.cpu_count() or 1
        inside = master[6:-1] if master.startswith("local[") else "1"
        cores = cores if inside in ("*", "") else int(inside.split(",")[0])
        partitions = partitions or cores
    if partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
        builder = builder.config("spark.default.parallelism", str(partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        yield spark
    finally:
        spark.stop()


def run(
    spark: SparkSession,
    *,
    source: str,
    output: str,
    archive: str | None = None,
    config: Config | None = None,
    settings: dict | None = None,
) -> Summary:
    """Find every verified duplicate pair of the input (with `archive`: every pair with at
    least one input article, the archive read first); write them, their clusters and the
    rows to review under `output`; return what it did."""
    started = time.perf_counter()
    config = config or Config()
    settings = dict(settings or {})
    k = Detector(config, **settings).k_article
    summary = Summary()
    parsed, rows = _rows_read(spark, source, archive, summary)
    exact = _exact_pairs(rows)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_ROWS))
    texts = rows.filter(F.col("pos") == F.col("original")).select("pos", "text")
    features = texts.mapInArrow(
        lambda it: batches.featurize(it, config, settings), _FEATURES
    ).persist(StorageLevel.MEMORY_AND_DISK)

    occurrences = features.select("pos", F.posexplode("keys").alias("at", "key"))
    per_key = occurrences.groupBy("key").agg(
        F.count("*").alias("n"), F.countDistinct("pos").alias("owners")
    )
    packed = _packed(features, occurrences, per_key).persist(StorageLevel.MEMORY_AND_DISK)
    facts = features.select("pos", F.explode("facts").alias("key"))
    candidates = (
        _fingerprint_candidates(features, k, summary.articles)
        .union(_passage_candidates(occurrences, per_key))
        .union(_passage_candidates(facts, facts.groupBy("key").agg(F.count("*").alias("n"))))
        .union(_popular_candidates(occurrences, per_key, packed))
    )
    candidates = candidates.distinct()
    if archive:
        candidates = candidates.filter(F.col("b") >= NEW)
        exact = exact.filter(F.col("b") >= NEW)
    verified = _verify(candidates, packed, config, settings)
    found = exact.unionByName(verified).persist(StorageLevel.MEMORY_AND_DISK)
    summary.pairs = found.count()
    summary.clusters = output_write(found, rows, output)
    for frame in (found, packed, features, rows):
        frame.unpersist()
    parsed.unpersist()
    summary.seconds = time.perf_counter() - started
    return summary


def _rows_read(spark: SparkSession, source: str, archive: str | None, summary: Summary):
    """Return the parsed input (the archive first) and its good rows, each with the position
    of the first row of the same text (`original`); count the rows and the bad ones."""
    parsed = _read(spark, source, NEW if archive else 0)
    if archive:
        parsed = _read(spark, archive, 0).union(parsed)
    parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    bad = parsed.filter(lambda row: row[0] == "bad")
    summary.skipped = bad.count()
    if summary.skipped:
        shown = bad.sortBy(lambda row: row[1]).take(BAD_ROWS_SHOWN)
        summary.bad_rows = [row[2] for row in shown]
    # The rows are of _ROWS already (partitions._row): no check per row in Python.
    ok = parsed.filter(lambda row: row[0] == "ok").map(_ok)
    rows = spark.createDataFrame(ok, _ROWS, verifySchema=False)
    rows = rows.withColumn("original", F.min("pos").over(Window.partitionBy("hash")))
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    summary.articles = rows.count()
    return parsed, rows


def _exact_pairs(rows: DataFrame) -> DataFrame:
    """Each exact copy paired with the first row of its text."""
    return rows.filter(F.col("pos") != F.col("original")).select(
        F.col("original").alias("a"),
        F.col("pos").alias("b"),
        F.lit("exact").alias("kind"),
        F.lit(0).alias("distance"),
        F.lit(1.0).alias("similarity"),
        F.lit(0).cast("long").alias("shared_chars"),
        F.array().cast(_PAIRS["shared_passages"].dataType).alias("shared_passages"),
    )


def _read(spark: SparkSession, source: str, offset: int):
    """Return an RDD of parsed rows (see partitions.parse_lines) of a JSON Lines or Parquet
    input: a file or a directory of them, on any file system Spark reads."""
    if _is_parquet(source):
        frame = spark.read.parquet(source)
        objects = frame.rdd.map(lambda row: row.asDict(recursive=True)).zipWithIndex()
        return objects.mapPartitions(lambda it: partitions.parse_objects(it, source, offset))
    lines = spark.sparkContext.textFile(source).zipWithIndex()
    return lines.mapPartitions(lambda it: partitions.parse_lines(it, source, offset))


def _is_parquet(source: str) -> bool:
    path = Path(source)
    if source.endswith(".parquet"):
        return True
    return path.is_dir() and any(path.glob("*.parquet"))


def _ok(row: tuple) -> tuple:
    return row[1:]


def _fingerprint_candidates(features: DataFrame, k: int, articles: int) -> DataFrame:
    """Return (a, b) of every two articles whose fingerprints are within k: distinct
    fingerprints meet in the tables of the all-pairs plan for this many articles (any plan for
    k finds the same pairs), then each pair of them stands for every pair of their articles.
    The keys are computed in the JVM (table_keys), not in Python."""
    holders = features.filter(F.col("fp").isNotNull()).select("pos", "fp")
    values = holders.select("fp").distinct()
    plan = plan_for_pairs(max(articles, 1), k)
    keyed = values.select(F.posexplode(table_keys(plan, F.col("fp"))).alias("t", "key"), "fp")
    x, y = keyed.alias("x"), keyed.alias("y")
    near = (
        x.join(y, (F.col("x.t") == F.col("y.t")) & (F.col("x.key") == F.col("y.key")))
        .filter(F.col("x.fp") < F.col("y.fp"))
        .filter(F.bit_count(F.col("x.fp").bitwiseXOR(F.col("y.fp"))) <= k)
        .select(F.col("x.fp").alias("fa"), F.col("y.fp").alias("fb"))
        .distinct()
    )
    same = values.select(F.col("fp").alias("fa"), F.col("fp").alias("fb"))
    ha, hb = holders.alias("ha"), holders.alias("hb")
    return (
        near.union(same)
        .join(ha, F.col("fa") == F.col("ha.fp"))
        .join(hb, F.col("fb") == F.col("hb.fp"))
        .filter(F.col("ha.pos") != F.col("hb.pos"))
        .select(
            F.least("ha.pos", "hb.pos").alias("a"),
            F.greatest("ha.pos", "hb.pos").alias("b"),
        )
    )


def table_keys(plan: Plan, fp: Column) -> Column:
    """Return the array of a fingerprint's (a signed long's) keys in the plan's tables, as
    Plan.keys computes them (the same bits, as signed longs)."""
    src, mask, dst = (a.tolist() for a in plan.key_shifts)
    keys = []
    for t in range(plan.table_count):
        key = F.lit(0).cast("long")
        for shift, bits, place in zip(src[t], mask[t], dst[t], strict=True):
            block = F.shiftrightunsigned(fp, int(shift)).bitwiseAND(F.lit(int(bits)).cast("long"))
            key = key.bitwiseOR(F.shiftleft(block, int(place)))
        keys.append(key)
    return F.array(*keys)


def _passage_candidates(occurrences: DataFrame, per_key: DataFrame) -> DataFrame:
    """Return (a, b) of every two articles sharing a passage key that 2 to MAX_PASSAGE_OWNERS
    passages hold (counted as Detector.candidates counts them)."""
    useful = per_key.filter((F.col("n") > 1) & (F.col("n") <= MAX_PASSAGE_OWNERS)).select("key")
    held = occurrences.join(useful, "key").select("key", "pos")
    x, y = held.alias("x"), held.alias("y")
    return x.join(y, (F.col("x.key") == F.col("y.key")) & (F.col("x.pos") < F.col("y.pos"))).select(
        F.col("x.pos").alias("a"), F.col("y.pos").alias("b")
    )


def _packed(features: DataFrame, occurrences: DataFrame, per_key: DataFrame) -> DataFrame:
    """Return (pos, features, owners) of every article: its packed features, and how many
    articles of the collection hold each of its passage keys, in the order of its keys."""
    owned = (
        occurrences.join(per_key.select("key", "owners"), "key")
        .groupBy("pos")
        .agg(F.sort_array(F.collect_list(F.struct("at", "owners"))).alias("held"))
        .select("pos", F.col("held.owners").alias("owners"))
    )
    none = F.array().cast(T.ArrayType(T.LongType()))
    return (
        features.select("pos", "features")
        .join(owned, "pos", "left")
        .select("pos", "features", F.coalesce("owners", none).alias("owners"))
    )


def _popular_candidates(occurrences: DataFrame, per_key: DataFrame, packed: DataFrame) -> DataFrame:
    """Return (a, b) of every story holder b of a key held by more than MAX_PASSAGE_OWNERS
    articles (and fewer than MAX_POPULAR_OWNERS) and the POPULAR_HOLDERS story holders a of
    it before b (dedup.engine.popular, as Detector.candidates)."""
    popular = per_key.filter(
        (F.col("owners") > MAX_PASSAGE_OWNERS) & (F.col("owners") < MAX_POPULAR_OWNERS)
    ).select("key")
    holders = occurrences.join(popular, "key").select("pos").distinct()
    story = packed.join(holders, "pos", "left_semi").mapInArrow(batches.popular, _POPULAR)
    story = story.withColumn("at", F.row_number().over(Window.partitionBy("key").orderBy("pos")))
    x, y = story.alias("x"), story.alias("y")
    return x.join(
        y,
        (F.col("x.key") == F.col("y.key"))
        & (F.col("x.at") < F.col("y.at"))
        & (F.col("x.at") >= F.col("y.at") - POPULAR_HOLDERS),
    ).select(F.col("x.pos").alias("a"), F.col("y.pos").alias("b"))


def _verify(candidates: DataFrame, packed: DataFrame, config, settings) -> DataFrame:
    """Return the verified duplicates among the candidate pairs (a < b): each a's own row
    (b = HEAD) and then its candidates' rows, in one partition, sorted (partitions.verify)."""
    candidates = candidates.persist(StorageLevel.MEMORY_AND_DISK)
    heads = (
        candidates.select("a")
        .distinct()
        .join(packed.withColumnRenamed("pos", "a"), "a")
        .select("a", F.lit(partitions.HEAD).cast("long").alias("b"), "features", "owners")
    )
    others = candidates.join(packed.withColumnRenamed("pos", "b"), "b").select(
        "a", "b", "features", "owners"
    )
    rows = heads.unionByName(others).repartition("a").sortWithinPartitions("a", "b")
    return rows.mapInArrow(lambda it: batches.verify(it, config, settings), _PAIRS)


def main(argv: list[str] | None = None) -> int:
    """Run as spark-submit's application: the arguments of `python -m dedup spark`."""
    from dedup.cli import main as cli

    return cli(["spark", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
