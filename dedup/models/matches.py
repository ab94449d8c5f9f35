"""Matches between articles, editors' decisions on them, and the version that every write of
either moves (what the web processes' cached match table compares)."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from dedup.models.articles import Article


class MatchKind(models.TextChoices):
    EXACT = "exact", _("exact copy")
    NEAR = "near", _("near copy")
    PARTIAL = "partial", _("partial copy")


class Match(models.Model):
    """Two articles found to be duplicates: a is the earlier (lower id), b the later."""

    a = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="matches_as_a", verbose_name=_("article A")
    )
    b = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="matches_as_b", verbose_name=_("article B")
    )
    kind = models.CharField(max_length=10, choices=MatchKind.choices, verbose_name=_("kind"))
    distance = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("distance"))
    similarity = models.FloatField(verbose_name=_("similarity"))
    shared_passages = models.JSONField(default=list, blank=True, verbose_name=_("shared passages"))
    # Characters of the smaller article's text (boilerplate aside) found in the other; of a
    # partial copy, those of its passages mostly in the other (Duplicate.shared_chars).
    shared_chars = models.PositiveIntegerField(default=0, verbose_name=_("shared characters"))
    version = models.CharField(max_length=120, verbose_name=_("version"))
    found_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("found at"))

    class Meta:
        verbose_name, verbose_name_plural = _("match"), _("matches")
        constraints = [
            models.UniqueConstraint(fields=["a", "b"], name="one_match_per_pair"),
            models.CheckConstraint(condition=Q(a__lt=F("b")), name="match_a_before_b"),
        ]
        indexes = [models.Index(fields=["distance"]), models.Index(fields=["kind"])]

    def __str__(self) -> str:
        return f"{self.a_id} ~ {self.b_id} ({self.get_kind_display()}, d={self.distance})"


class Verdict(models.TextChoices):
    DUPLICATE = "duplicate", _("duplicate")
    NOT_DUPLICATE = "not_duplicate", _("not a duplicate")
    ORIGINAL = "original", _("original")
    # An editor took back the pair's decision: it waits again (the history keeps both).
    UNDONE = "undone", _("decision undone")


class Decision(models.Model):
    """An editor's decision on a pair (duplicate or not) or on an article (the original)."""

    a = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="+", verbose_name=_("article A")
    )
    b = models.ForeignKey(
        Article,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("article B"),
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices, verbose_name=_("verdict"))
    decided_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("decided at")
    )
    note = models.CharField(max_length=500, blank=True, verbose_name=_("note"))

    class Meta:
        verbose_name, verbose_name_plural = _("decision"), _("decisions")

    def __str__(self) -> str:
        pair = f"{self.a_id} ~ {self.b_id}" if self.b_id else f"{self.a_id}"
        return f"{pair}: {self.get_verdict_display()}"


class MatchVersion(models.Model):
    """The version of the stored matches and decisions: one row, moved by triggers on their
    tables in the transaction of every write (migration 0019), so no write path can forget it.

    `version` takes a new value at every write; `reset` at every write that is not an
    addition (a match updated or deleted, a decision deleted): while `reset` stays, what
    changed can be read as the rows after the last ids seen."""

    version = models.BigIntegerField(default=0)
    reset = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"matches version {self.version} (reset {self.reset})"
