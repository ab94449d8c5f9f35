# The version of the stored matches and decisions (MatchVersion), moved by statement triggers
# in the transaction of every write: INSERT moves `version`; UPDATE, DELETE and TRUNCATE move
# `reset` too, so that a cache knows whether reading the rows after its last ids is enough.
# Values come from a sequence: unique even after a test run empties the table.

from django.db import migrations, models

BUMP = """
CREATE SEQUENCE dedup_matchversion_seq;
CREATE FUNCTION dedup_matchversion_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO dedup_matchversion (id, version, reset)
    VALUES (1, nextval('dedup_matchversion_seq'), nextval('dedup_matchversion_seq'))
    ON CONFLICT (id) DO UPDATE SET
        version = nextval('dedup_matchversion_seq'),
        reset = CASE WHEN TG_OP = 'INSERT' THEN dedup_matchversion.reset
                     ELSE nextval('dedup_matchversion_seq') END;
    RETURN NULL;
END
$$;
CREATE TRIGGER dedup_match_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dedup_match
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_matchversion_bump();
CREATE TRIGGER dedup_decision_version
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dedup_decision
    FOR EACH STATEMENT EXECUTE FUNCTION dedup_matchversion_bump();
INSERT INTO dedup_matchversion (id, version, reset)
    VALUES (1, nextval('dedup_matchversion_seq'), nextval('dedup_matchversion_seq'));
"""

UNBUMP = """
DROP TRIGGER dedup_decision_version ON dedup_decision;
DROP TRIGGER dedup_match_version ON dedup_match;
DROP FUNCTION dedup_matchversion_bump();
DROP SEQUENCE dedup_matchversion_seq;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("dedup", "0019_state_choices"),
    ]

    operations = [
        migrations.CreateModel(
            name="MatchVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.BigIntegerField(default=0)),
                ("reset", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(BUMP, UNBUMP),
    ]
