"""Who copies whom: matches between articles of two sources, counted per (original source,
copying source, kind, day), kept by triggers on the match table (migration 0032)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from dedup.models.matches import MatchKind


class SourceEdge(models.Model):
    """How many articles of `copier` copied articles of `original` on one day, by kind.

    The original of a match is the article dated first (published, or received when unknown;
    the lower id on a tie), the copy the other; `day` is the copy's date (UTC) and `lag_seconds`
    the sum over these copies of the time from the original's date to the copy's. Matches
    within one source, or with an article without a source, are not counted. Rows are written
    only by the triggers of migration 0032 on dedup_match, in the transaction of every write
    of a match (insert, update, delete, truncate), so no write path can forget them;
    `dedup_source_edges_rebuild()` counts them again from the matches."""

    pk = models.CompositePrimaryKey("original", "copier", "kind", "day")
    original = models.CharField(_("original source"), max_length=200)
    copier = models.CharField(_("copying source"), max_length=200)
    kind = models.CharField(max_length=10, choices=MatchKind.choices)
    day = models.DateField()
    copies = models.IntegerField(default=0)
    lag_seconds = models.BigIntegerField(default=0)

    class Meta:
        db_table = "dedup_source_edge"  # its triggers: migration 0032
        # The overview over a period, and a source's copiers: by day, by copier.
        indexes = [
            models.Index(fields=["day"], name="source_edge_day"),
            models.Index(fields=["copier", "day"], name="source_edge_copier"),
        ]

    def __str__(self) -> str:
        return f"{self.copier} <- {self.original} ({self.kind}, {self.day}): {self.copies}"
