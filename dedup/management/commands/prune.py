"""manage.py prune: drop the index rows of articles older than the retention window."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dedup import services
from dedup.models import Settings


class Command(BaseCommand):
    help = (
        "Delete the segment rows and passage keys of articles outside the retention window "
        "(Settings: retention_days; 0 keeps everything). Articles and matches stay. Beat runs "
        "this daily."
    )

    def handle(self, *args, **options) -> None:
        days = Settings.load().retention_days
        removed = services.articles_prune()
        if not days:
            self.stdout.write("Retention window: 0 days (every article is compared); 0 removed.")
            return
        self.stdout.write(
            f"Retention window: {days} days; removed {removed} index row(s) "
            "(segment rows and passage keys) of older articles."
        )
