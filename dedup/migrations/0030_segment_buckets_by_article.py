"""The segment index's look-up index orders each bucket by article (issue 32): a look-up reads
a bucket's earliest BUCKET_ROWS rows (dedup.index.segments), however many a template's
thousand fillings put there, from each day partition's index in order (a Merge Append), not
the whole bucket. The fingerprint stays in the index (INCLUDE): the look-up is still an
index-only scan."""

from django.db import migrations

FORWARD = """
DROP INDEX IF EXISTS dedup_segment_lookup;
CREATE INDEX dedup_segment_lookup ON dedup_segment (version, key, article_id) INCLUDE (fingerprint);
"""
BACKWARD = """
DROP INDEX IF EXISTS dedup_segment_lookup;
CREATE INDEX dedup_segment_lookup ON dedup_segment (version, key) INCLUDE (fingerprint, article_id);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("dedup", "0029_article_submitted_by"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
