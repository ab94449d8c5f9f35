"""manage.py prune: move the segment index's day partitions with the retention window and drop
the index rows of articles older than it."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dedup import services
from dedup.models import Settings


class Command(BaseCommand):
    help = (
        "Drop the segment index's day partitions outside the retention window (Settings: "
        "retention_days; 0 keeps everything), make the coming days' and delete the passage "
        "keys of older articles. Articles and matches stay. Beat runs this hourly."
    )

    def handle(self, *args, **options) -> None:
        days = Settings.load().retention_days
        done = services.articles_prune()
        if not days:
            self.stdout.write("Retention window: 0 days (every article is compared); 0 removed.")
            return
        self.stdout.write(
            f"Retention window: {days} days; dropped {done['partitions_dropped']} day "
            f"partition(s) of segment rows (and moved {done['partitions_merged']} older day(s) "
            f"back into the default one); removed {done['segment_rows_deleted']} segment "
            f"row(s) kept outside the day partitions and {done['passage_keys_deleted']} "
            "passage key(s) of older articles."
        )
