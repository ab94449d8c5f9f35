"""The batch runner on Spark: the engine per partition, candidates by shuffling on keys.

`python -m dedup spark --input PATH --output DIR` (or the same job under `spark-submit`,
dedup/spark/job.py) finds what `python -m dedup duplicates` finds, on a cluster: the archive
and backfills. Importing this package does not import pyspark; running the job does.
"""
