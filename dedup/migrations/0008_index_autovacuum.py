"""Autovacuum the index tables after every few thousand new rows, and store packed features
uncompressed.

Look-ups are index-only scans where pages are marked all-visible, which only VACUUM does; by
default autovacuum waits for 20% of a table to be new. Workers also VACUUM after bulk writes
(index.index_vacuum_if_due); this covers rows written any other way. Packed features are hashes, which do not compress:
trying costs time on every insert.
"""

from django.db import migrations

TABLES = ("dedup_passagekey", "dedup_segmentrow")


def tune(apps, schema_editor):
    for table in TABLES:
        schema_editor.execute(
            f"ALTER TABLE {table} SET (autovacuum_vacuum_insert_threshold = 20000,"
            " autovacuum_vacuum_insert_scale_factor = 0.01)"
        )
    schema_editor.execute("ALTER TABLE dedup_fingerprint ALTER COLUMN features SET STORAGE EXTERNAL")


def untune(apps, schema_editor):
    for table in TABLES:
        schema_editor.execute(
            f"ALTER TABLE {table} RESET (autovacuum_vacuum_insert_threshold,"
            " autovacuum_vacuum_insert_scale_factor)"
        )
    schema_editor.execute("ALTER TABLE dedup_fingerprint ALTER COLUMN features SET STORAGE EXTENDED")


class Migration(migrations.Migration):
    dependencies = [("dedup", "0007_fingerprint_sketch")]

    operations = [migrations.RunPython(tune, untune)]
