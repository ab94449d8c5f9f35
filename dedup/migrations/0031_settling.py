from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dedup", "0030_segment_buckets_by_article")]

    operations = [
        migrations.AddField(
            model_name="rebuildjob",
            name="indexed",
            field=models.BooleanField(default=False),
        ),
        migrations.AddIndex(
            model_name="article",
            index=models.Index(fields=["processed_at"], name="article_processed_at"),
        ),
    ]
