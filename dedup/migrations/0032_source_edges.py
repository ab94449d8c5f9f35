# Who copies whom (SourceEdge): counts of cross-source matches per (original source, copying
# source, copy's day or month), by kind, kept by statement triggers with transition tables on
# dedup_match in the transaction of every write, so that the sources pages read months and a
# few days of counts, not a million matches. A match counts as its two articles' sources are when it is written.

from django.db import migrations, models

# The matches of a transition table as edges: the original is the article dated first (the
# lower id on a tie); matches within one source or with a blank source are left out.
EDGES = """
    SELECT CASE WHEN f.flip THEN y.source ELSE x.source END AS original,
           CASE WHEN f.flip THEN x.source ELSE y.source END AS copier,
           m.kind,
           (CASE WHEN f.flip THEN x.dated_at ELSE y.dated_at END AT TIME ZONE 'UTC')::date AS day,
           abs(EXTRACT(EPOCH FROM y.dated_at - x.dated_at))::bigint AS lag
    FROM {rows} m
    JOIN dedup_article x ON x.id = m.a_id
    JOIN dedup_article y ON y.id = m.b_id
    CROSS JOIN LATERAL (SELECT (y.dated_at, y.id) < (x.dated_at, x.id) AS flip) f
    WHERE x.source <> '' AND y.source <> '' AND x.source <> y.source
"""

# Each copy counted on its day (span "d"), its month's first day ("m") and once for all time
# ("a", on ALL_TIME), so that a long period reads months and only its ragged ends read days;
# and under four groupings: the pair of sources, the original alone (copier ''), the copier
# alone (original '') and everything ('' and ''): the overview's rankings and totals read those
# few rows. Blank sources never make an edge, so '' cannot be a source here.
ADD = """
    INSERT INTO dedup_source_edge AS e
        (original, copier, span, day, copies, exact, near, partial, lag_seconds)
    SELECT coalesce(original, ''), coalesce(copier, ''), span, at,
           {sign} * count(*),
           {sign} * count(*) FILTER (WHERE kind = 'exact'),
           {sign} * count(*) FILTER (WHERE kind = 'near'),
           {sign} * count(*) FILTER (WHERE kind = 'partial'),
           {sign} * sum(lag)
    FROM (
        SELECT edges.*, s.span,
               CASE s.span WHEN 'd' THEN day WHEN 'm' THEN date_trunc('month', day)::date
                           ELSE DATE '2000-01-01' END AS at
        FROM ({edges}) edges CROSS JOIN (VALUES ('d'), ('m'), ('a')) s (span)
    ) spans
    GROUP BY GROUPING SETS ((original, copier, span, at), (original, span, at),
                            (copier, span, at), (span, at))
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (original, copier, span, day) DO UPDATE SET
        copies = e.copies + EXCLUDED.copies,
        exact = e.exact + EXCLUDED.exact,
        near = e.near + EXCLUDED.near,
        partial = e.partial + EXCLUDED.partial,
        lag_seconds = e.lag_seconds + EXCLUDED.lag_seconds;
"""

FORWARD = f"""
CREATE FUNCTION dedup_source_edges_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{ADD.format(sign=1, edges=EDGES.format(rows="added"))}
    RETURN NULL;
END
$$;
CREATE FUNCTION dedup_source_edges_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{ADD.format(sign=-1, edges=EDGES.format(rows="removed"))}
    DELETE FROM dedup_source_edge WHERE copies <= 0;
    RETURN NULL;
END
$$;
CREATE FUNCTION dedup_source_edges_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dedup_source_edge;
    RETURN NULL;
END
$$;
CREATE FUNCTION dedup_source_edges_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dedup_source_edge;
{ADD.format(sign=1, edges=EDGES.format(rows="dedup_match"))}
END
$$;
CREATE TRIGGER dedup_source_edges_insert AFTER INSERT ON dedup_match
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_source_edges_added();
CREATE TRIGGER dedup_source_edges_update_old AFTER UPDATE ON dedup_match
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_source_edges_removed();
CREATE TRIGGER dedup_source_edges_update_new AFTER UPDATE ON dedup_match
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_source_edges_added();
CREATE TRIGGER dedup_source_edges_delete AFTER DELETE ON dedup_match
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_source_edges_removed();
CREATE TRIGGER dedup_source_edges_truncate AFTER TRUNCATE ON dedup_match
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_source_edges_truncated();
SELECT dedup_source_edges_rebuild();
"""

BACKWARD = """
DROP TRIGGER dedup_source_edges_truncate ON dedup_match;
DROP TRIGGER dedup_source_edges_delete ON dedup_match;
DROP TRIGGER dedup_source_edges_update_new ON dedup_match;
DROP TRIGGER dedup_source_edges_update_old ON dedup_match;
DROP TRIGGER dedup_source_edges_insert ON dedup_match;
DROP FUNCTION dedup_source_edges_rebuild();
DROP FUNCTION dedup_source_edges_truncated();
DROP FUNCTION dedup_source_edges_removed();
DROP FUNCTION dedup_source_edges_added();
"""


class Migration(migrations.Migration):
    dependencies = [("dedup", "0031_settling")]

    operations = [
        migrations.CreateModel(
            name="SourceEdge",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "original",
                        "copier",
                        "span",
                        "day",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("original", models.CharField(max_length=200, verbose_name="original source")),
                ("copier", models.CharField(max_length=200, verbose_name="copying source")),
                ("span", models.CharField(choices=[("d", "day"), ("m", "month"), ("a", "all time")], max_length=1)),
                ("day", models.DateField()),
                ("copies", models.IntegerField(default=0)),
                ("exact", models.IntegerField(default=0)),
                ("near", models.IntegerField(default=0)),
                ("partial", models.IntegerField(default=0)),
                ("lag_seconds", models.BigIntegerField(default=0)),
            ],
            options={
                "db_table": "dedup_source_edge",
                "indexes": [
                    models.Index(fields=["span", "day"], name="source_edge_span_day"),
                    models.Index(fields=["copier", "span", "day"], name="source_edge_copier"),
                    models.Index(
                        fields=["day"],
                        condition=models.Q(copies__lte=0),
                        name="source_edge_spent",
                    ),
                ],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
        # A source's newest articles, for its copies newest first (replaces the source's index).
        migrations.AlterField(
            model_name="article",
            name="source",
            field=models.CharField(blank=True, max_length=200, verbose_name="source"),
        ),
        migrations.AddIndex(
            model_name="article",
            index=models.Index(fields=["source", "dated_at", "id"], name="article_source_dated"),
        ),
    ]
