"""What the Spark job writes: pairs, clusters and the rows to review, as JSON Lines (in order)
and Parquet, to a directory of the driver's or a file system of Spark's."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dedup.spark.stars import stars


def output_write(found: DataFrame, rows: DataFrame, output: str) -> int:
    """Write pairs, clusters and the rows to review; return how many clusters there are."""
    ids = rows.select("pos", "id", "name")
    ia, ib = ids.alias("ia"), ids.alias("ib")
    pairs = (
        found.join(ia, F.col("a") == F.col("ia.pos"))
        .join(ib, F.col("b") == F.col("ib.pos"))
        .select(
            "a",
            "b",
            F.col("ia.id").alias("a_id"),
            F.col("ib.id").alias("b_id"),
            F.col("ia.name").alias("a_name"),
            F.col("ib.name").alias("b_name"),
            "kind",
            "distance",
            "similarity",
            "shared_chars",
            "shared_passages",
        )
        .orderBy("a", "b")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    pairs.drop("a", "b", "a_id", "b_id").withColumnRenamed("a_name", "a").withColumnRenamed(
        "b_name", "b"
    ).write.mode("overwrite").parquet(_join(output, "pairs.parquet"))
    _lines(pairs.rdd.map(_pair_line), output, "pairs.jsonl")
    pairs.unpersist()

    label = stars(found)  # one story each, as the dashboard and `clusters` group them
    clusters = (
        label.join(ids, label.v == ids.pos)
        .groupBy("label")
        .agg(F.sort_array(F.collect_list(F.struct("pos", "id", "name"))).alias("members"))
        .select("label", F.col("members.id").alias("members"), F.col("members.name").alias("names"))
        .orderBy("label")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    clusters.select(
        F.col("names")[0].alias("original"),
        F.size("names").alias("size"),
        F.col("names").alias("members"),
    ).write.mode("overwrite").parquet(_join(output, "clusters.parquet"))
    count = _lines(clusters.rdd.map(_cluster_line), output, "clusters.jsonl")
    clusters.unpersist()

    # Every article in some pair, a link's too: the dashboard draws its own clusters.
    paired = found.select(F.col("a").alias("v")).union(found.select(F.col("b").alias("v")))
    review = rows.join(paired, rows.pos == paired.v, "left_semi").orderBy("pos").select("raw")
    _lines(review.rdd.map(lambda row: row.raw), output, "review.jsonl")
    return count


def _pair_line(row) -> str:
    line = {
        "a": json.loads(row.a_id),
        "b": json.loads(row.b_id),
        "kind": row.kind,
        "distance": row.distance,
        "similarity": row.similarity,
        "shared_chars": row.shared_chars,
        "shared_passages": row.shared_passages,
    }
    return json.dumps(line, ensure_ascii=False)


def _cluster_line(row) -> str:
    members = [json.loads(m) for m in row.members]
    return json.dumps(
        {"original": members[0], "size": len(members), "members": members}, ensure_ascii=False
    )


def _remote(output: str) -> bool:
    """Tell whether an output names a file system of Spark's (hdfs://, s3a://, file://...)
    rather than a directory of the driver's."""
    return "://" in output


def _join(output: str, name: str) -> str:
    return f"{output.rstrip('/')}/{name}" if _remote(output) else str(Path(output) / name)


def _lines(lines, output: str, name: str) -> int:
    """Write lines in order: one file in a directory of the driver's, or a directory of part
    files (read in name order) on Spark's file system. Return how many."""
    if _remote(output):
        lines = lines.persist(StorageLevel.MEMORY_AND_DISK)
        lines.saveAsTextFile(_join(output, name))
        count = lines.count()
        lines.unpersist()
        return count
    Path(output).mkdir(parents=True, exist_ok=True)
    count = 0
    with (Path(output) / name).open("w", encoding="utf-8") as out:
        for line in lines.toLocalIterator():
            out.write(line + "\n")
            count += 1
    return count
