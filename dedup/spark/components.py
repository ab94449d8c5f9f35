"""Connected components of a graph on Spark DataFrames: min-label propagation (Hash-Min).

Every vertex starts labelled by itself; each round, a vertex takes the least label among its
own and its neighbours'; rounds stop when no label changes. Rounds: the largest component's
diameter, plus one. A duplicate cluster is a star or a short chain, so a few rounds do.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

MAX_ROUNDS = 10_000


class ComponentsError(RuntimeError):
    """Labels did not settle within MAX_ROUNDS rounds."""


def components(edges: DataFrame) -> DataFrame:
    """Return (v, label) for every vertex of the edges (a, b: longs): label is the least
    vertex of its component."""
    both = (
        edges.select(F.col("a").alias("src"), F.col("b").alias("dst"))
        .union(edges.select(F.col("b").alias("src"), F.col("a").alias("dst")))
        .distinct()
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    labels = both.select(F.col("src").alias("v")).distinct().withColumn("label", F.col("v"))
    labels = labels.localCheckpoint()
    for _ in range(MAX_ROUNDS):
        offered = (
            both.join(labels, both.src == labels.v)
            .groupBy(F.col("dst").alias("v"))
            .agg(F.min("label").alias("offer"))
        )
        moved = (
            labels.join(offered, "v", "left")
            .select("v", "label", F.least("label", F.coalesce("offer", "label")).alias("new"))
            .localCheckpoint()
        )
        changed = moved.filter(F.col("new") != F.col("label")).count()
        labels = moved.select("v", F.col("new").alias("label"))
        if not changed:
            both.unpersist()
            return labels
    both.unpersist()
    raise ComponentsError(f"labels still moved after {MAX_ROUNDS} rounds")
