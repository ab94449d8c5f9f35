"""Where PostgreSQL keeps the wide columns.

- An article's text is kept out of line: a worker updates an article's status twice, and an
  update copies the row; with the text in the TOAST table only a pointer is copied.
- Packed features (about 4 KB) stay in the row: verification reads them for every candidate
  that passes the screen, and one page read is cheaper than a TOAST look-up.
"""

from django.db import migrations


def tune(apps, schema_editor):
    schema_editor.execute("ALTER TABLE dedup_article ALTER COLUMN body SET STORAGE EXTERNAL")
    schema_editor.execute("ALTER TABLE dedup_article SET (toast_tuple_target = 128)")
    schema_editor.execute("ALTER TABLE dedup_fingerprint SET (toast_tuple_target = 8160)")


def untune(apps, schema_editor):
    schema_editor.execute("ALTER TABLE dedup_article ALTER COLUMN body SET STORAGE EXTENDED")
    schema_editor.execute("ALTER TABLE dedup_article RESET (toast_tuple_target)")
    schema_editor.execute("ALTER TABLE dedup_fingerprint RESET (toast_tuple_target)")


class Migration(migrations.Migration):
    dependencies = [("dedup", "0011_index_rows_without_fk_checks")]

    operations = [migrations.RunPython(tune, untune)]
