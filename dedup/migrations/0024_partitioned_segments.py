"""The segment index as a lean table partitioned by day (issue 15).

`dedup_segment` replaces `dedup_segmentrow`: one bigint key combining the plan's table number
(top byte) and the table's key, the version as a 32-bit number named in `dedup_indexversion`,
the article's day as the partition key; native range partitions by day (dedup.index.
partitions makes them for the retention window and drops them as it moves on) and a default
partition for days outside it. One covering index serves look-ups (`version, key` with the
fingerprint and article: an index-only scan), one on the article for deletions. The rows of
`dedup_segmentrow` are copied over, then it is dropped.
"""

from django.db import migrations, models

import dedup.models.versions

CREATE = """
CREATE TABLE dedup_segment (
    key bigint NOT NULL,
    fingerprint bigint NOT NULL,
    article_id bigint NOT NULL,
    day date NOT NULL,
    version integer NOT NULL
) PARTITION BY RANGE (day);
CREATE TABLE dedup_segment_default PARTITION OF dedup_segment DEFAULT;
CREATE INDEX dedup_segment_lookup ON dedup_segment (version, key) INCLUDE (fingerprint, article_id);
CREATE INDEX dedup_segment_article ON dedup_segment (article_id);
"""


def copy_rows(apps, schema_editor):
    from dedup.models.versions import version_number

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT version FROM dedup_segmentrow")
        for (name,) in cursor.fetchall():
            number = version_number(name)
            cursor.execute(
                "INSERT INTO dedup_indexversion (number, name) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                [number, name],
            )
            cursor.execute(
                """
                INSERT INTO dedup_segment (key, fingerprint, article_id, day, version)
                SELECT (s.table_no::bigint << 56) # s.key, s.fingerprint, s.article_id,
                       coalesce((a.dated_at AT TIME ZONE 'UTC')::date, current_date), %s
                FROM dedup_segmentrow s LEFT JOIN dedup_article a ON a.id = s.article_id
                WHERE s.version = %s
                """,
                [number, name],
            )


SEGMENT_ROW = migrations.CreateModel(
    name="SegmentRow",
    fields=[
        (
            "pk",
            models.CompositePrimaryKey(
                "version",
                "key",
                "article",
                blank=True,
                editable=False,
                primary_key=True,
                serialize=False,
            ),
        ),
        ("version", dedup.models.versions.VersionField()),
        ("key", models.BigIntegerField()),
        ("fingerprint", models.BigIntegerField()),
        (
            "article",
            models.ForeignKey(
                db_constraint=False,
                on_delete=models.deletion.CASCADE,
                related_name="segment_rows",
                to="dedup.article",
            ),
        ),
        ("day", models.DateField()),
    ],
    options={"db_table": "dedup_segment"},
)


class Migration(migrations.Migration):
    dependencies = [("dedup", "0022_audit_log")]

    operations = [
        migrations.CreateModel(
            name="IndexVersion",
            fields=[
                ("number", models.IntegerField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=120, unique=True)),
            ],
        ),
        migrations.RunSQL(CREATE, "DROP TABLE dedup_segment"),
        migrations.RunPython(copy_rows, migrations.RunPython.noop),
        migrations.DeleteModel(name="SegmentRow"),
        migrations.SeparateDatabaseAndState(  # the table is CREATE's
            state_operations=[SEGMENT_ROW], database_operations=[]
        ),
    ]
