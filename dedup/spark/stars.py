"""Clusters of one story each on Spark DataFrames: `dedup.engine.graph.story_clusters`'s rule
(docs/design.md, "Clusters") for the pairs the job found, so that the job, the command line
and the dashboard agree.

Centre clustering in rounds, as `graph.stars`: a vertex is decided once every earlier
neighbour is (a centre among them makes it a member, none makes it a centre); a member joins
its earliest centre neighbour. Positions are input order, so a pair's `a` is the earlier.
Rounds: the longest run of undecided earlier neighbours, plus one; a story is a star, so a few.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dedup.engine.graph import CARRIES

MAX_ROUNDS = 10_000
UNDECIDED, CENTRE, MEMBER = 0, 1, 2


class StarsError(RuntimeError):
    """Vertices were still undecided after MAX_ROUNDS rounds."""


def stars(found: DataFrame) -> DataFrame:
    """Return (v, label) for every vertex in a cluster of the pairs (a < b, kind,
    similarity): label is the cluster's original, its earliest member."""
    joins = (F.col("kind") != "partial") | (F.col("similarity") >= F.lit(CARRIES))
    edges = (
        found.filter(joins)
        .select(F.col("a").alias("u"), F.col("b").alias("v"))
        .distinct()
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    vertices = edges.select(F.col("u").alias("v")).union(edges.select("v")).distinct()
    state = vertices.withColumn("state", F.lit(UNDECIDED)).localCheckpoint()
    for _ in range(MAX_ROUNDS):
        earlier = (
            edges.join(state.withColumnRenamed("v", "u").withColumnRenamed("state", "su"), "u")
            .groupBy("v")
            .agg(
                F.max((F.col("su") == CENTRE).cast("int")).alias("claimed"),
                F.max((F.col("su") == UNDECIDED).cast("int")).alias("waiting"),
            )
        )
        moved = (
            state.join(earlier, "v", "left")
            .select(
                "v",
                F.when(F.col("state") != UNDECIDED, F.col("state"))
                .when(F.coalesce("claimed", F.lit(0)) == 1, F.lit(MEMBER))
                .when(F.coalesce("waiting", F.lit(0)) == 0, F.lit(CENTRE))
                .otherwise(F.lit(UNDECIDED))
                .alias("state"),
            )
            .localCheckpoint()
        )
        state = moved
        if not state.filter(F.col("state") == UNDECIDED).limit(1).count():
            break
    else:
        edges.unpersist()
        raise StarsError(f"vertices still undecided after {MAX_ROUNDS} rounds")
    centres = state.filter(F.col("state") == CENTRE).select(F.col("v").alias("u"))
    members = (
        edges.join(centres, "u")
        .join(state.filter(F.col("state") == MEMBER), "v")
        .groupBy("v")
        .agg(F.min("u").alias("label"))
    )
    with_members = members.select(F.col("label").alias("v")).distinct()
    labels = members.union(with_members.withColumn("label", F.col("v"))).localCheckpoint()
    edges.unpersist()
    return labels
