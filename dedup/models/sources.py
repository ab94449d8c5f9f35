"""Who copies whom: matches between articles of two sources, counted per (original source,
copying source, day) and per month, kept by triggers on the match table (migration 0032)."""

from __future__ import annotations

import datetime as dt

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Span(models.TextChoices):
    DAY = "d", _("day")
    MONTH = "m", _("month")
    ALL = "a", _("all time")


ALL_TIME = dt.date(2000, 1, 1)  # the day of the all-time rows
ANY = ""  # the source of a total's other side: every source (no edge has a blank source)


class SourceEdge(models.Model):
    """How many articles of `copier` copied articles of `original` on one day (span "d"), in
    one month (span "m", `day` its first day) or ever (span "a", `day` ALL_TIME), by kind;
    with `original` or `copier` blank (ANY), the totals of the other side (both blank: of all).

    The original of a match is the article dated first (published, or received when unknown;
    the lower id on a tie), the copy the other; the day is the copy's date (UTC) and
    `lag_seconds` the sum over these copies of the time from the original's date to the
    copy's. Matches within one source, or with an article without a source, are not counted.
    Rows are written only by the triggers of migration 0032 on dedup_match, in the transaction
    of every write of a match (insert, update, delete, truncate), so no write path can forget
    them; a match counts with its articles' sources and dates as they are when it is written
    (`SELECT dedup_source_edges_rebuild()` counts everything again from the matches)."""

    pk = models.CompositePrimaryKey("original", "copier", "span", "day")
    original = models.CharField(_("original source"), max_length=200)
    copier = models.CharField(_("copying source"), max_length=200)
    span = models.CharField(max_length=1, choices=Span.choices)
    day = models.DateField()
    copies = models.IntegerField(default=0)
    exact = models.IntegerField(default=0)
    near = models.IntegerField(default=0)
    partial = models.IntegerField(default=0)
    lag_seconds = models.BigIntegerField(default=0)

    class Meta:
        db_table = "dedup_source_edge"  # its triggers: migration 0032
        # A period's days or months; a source's copiers (as original: the primary key).
        indexes = [
            models.Index(fields=["span", "day"], name="source_edge_span_day"),
            models.Index(fields=["copier", "span", "day"], name="source_edge_copier"),
            # The rows a removal brought to zero, which the trigger deletes: without it, a
            # scan of the whole table per DELETE of matches.
            models.Index(fields=["day"], condition=Q(copies__lte=0), name="source_edge_spent"),
        ]

    def __str__(self) -> str:
        return f"{self.copier} <- {self.original} ({self.span} {self.day}): {self.copies}"
