"""The settings an admin tunes (one row) and the rebuilds a change of them starts."""

from __future__ import annotations

import functools

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from dedup.engine import features as engine_features
from dedup.engine.config import TOKENIZERS, Config
from dedup.engine.plan import Plan, plan_for

# A similarity or containment threshold: a share, from 0 to 1.
SHARE = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class Settings(models.Model):
    """The singleton an admin tunes (row 1). Changing what fingerprints depend on starts a
    rebuild, and so does a release that stores under a new index version
    (dedup/services/rebuilds.py); until it ends, answers come from `active_version`."""

    threshold = models.PositiveSmallIntegerField(
        _("default threshold"),
        default=3,
        help_text=_(
            "a fingerprint distance, at most the largest indexed; the queue does not use it "
            "(it shows verified copies by similarity)"
        ),
    )
    k_max = models.PositiveSmallIntegerField(
        _("largest distance indexed"), default=4, help_text=_("candidates up to this distance")
    )
    capacity = models.PositiveBigIntegerField(
        _("planned articles"), default=1_000_000, help_text=_("the index plan is sized for it")
    )
    top_n = models.PositiveIntegerField(_("keywords per article"), default=256)
    tokenizer = models.CharField(
        _("tokenizer"), max_length=20, default="rjieba", choices=[(t, t) for t in TOKENIZERS]
    )
    retention_days = models.PositiveIntegerField(
        _("retention window (days)"), default=0, help_text=_("0 compares with every article")
    )
    stop_words = models.TextField(_("extra stop words"), blank=True, help_text=_("one per line"))
    near = models.FloatField(_("near: least similarity"), default=0.4, validators=SHARE)
    partial = models.FloatField(_("partial: least containment"), default=0.4, validators=SHARE)
    near_short = models.FloatField(
        _("near, short texts: least similarity"),
        default=0.3,
        validators=SHARE,
        help_text=_("when the shorter article has fewer than 140 characters"),
    )
    partial_min_chars = models.PositiveIntegerField(
        _("partial: least shared characters"),
        default=60,
        help_text=_(
            "characters of the smaller article's passages (boilerplate aside) mostly in the other"
        ),
    )
    active_version = models.CharField(
        max_length=120, blank=True, editable=False, verbose_name=_("active version")
    )
    # The fields active_version was made with (engine_config and plan), kept while a rebuild
    # moves to new ones, so that answers can still be computed the old way.
    active_config = models.JSONField(
        default=dict, blank=True, editable=False, verbose_name=_("active configuration")
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = verbose_name_plural = _("settings")

    def __str__(self) -> str:
        return _("settings (%(version)s)") % {"version": self.index_version}

    @classmethod
    def load(cls) -> Settings:
        """Return the settings row, created with the defaults on first use."""
        row, _ = cls.objects.get_or_create(pk=1)
        return row

    def engine_config(self) -> Config:
        """Return the fingerprint configuration these settings describe."""
        words = tuple(w.strip() for w in self.stop_words.splitlines() if w.strip())
        return Config(tokenizer=self.tokenizer, top_n=self.top_n, extra_stop_words=words)

    def plan(self) -> Plan:
        """Return the index plan for the planned capacity and k_max."""
        return _plan(self.capacity, self.k_max)

    CONFIG_FIELDS = ("tokenizer", "top_n", "stop_words", "capacity", "k_max")

    def config_fields(self) -> dict:
        """Return the fields that fingerprints and index rows depend on."""
        return {name: getattr(self, name) for name in self.CONFIG_FIELDS}

    def active(self) -> Settings:
        """Return unsaved settings describing active_version (self when nothing is rebuilding):
        its fingerprint and index fields, and the rest (thresholds, retention) as they are."""
        if not self.active_config or self.active_version == self.index_version:
            return self
        # Threshold, near, near_short, partial and the retention window apply at once, rebuild
        # or not.
        now = {f.attname: getattr(self, f.attname) for f in self._meta.concrete_fields}
        now.pop("id")
        return Settings(**{**now, **self.active_config})

    @property
    def index_version(self) -> str:
        """Return the version of what these settings and this code store: fingerprints, index
        rows and packed features (the rows of other versions are not read)."""
        # Every part names a change that makes stored rows unusable: the fingerprint (the
        # configuration and ALGORITHM), the tables, and the packed features' format.
        features = f"f{engine_features.FEATURES_FORMAT}"
        return f"{self.engine_config().version}/{self.plan().version}/{features}"


@functools.lru_cache(maxsize=64)
def _plan(capacity: int, k_max: int) -> Plan:
    return plan_for(capacity, k_max).plan  # planning costs milliseconds: once per process


class RebuildState(models.TextChoices):
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class RebuildJob(models.Model):
    """Re-fingerprinting and re-indexing every article under a new version."""

    version = models.CharField(max_length=120, verbose_name=_("version"))
    state = models.CharField(
        max_length=12,
        choices=RebuildState.choices,
        default=RebuildState.RUNNING,
        verbose_name=_("state"),
    )
    total = models.PositiveIntegerField(default=0, verbose_name=_("total"))
    done = models.PositiveIntegerField(default=0, verbose_name=_("done"))
    started_at = models.DateTimeField(auto_now_add=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    message = models.TextField(blank=True, verbose_name=_("message"))
    # The last article rebuilt, in id order: a rebuild delivered again goes on from there.
    # A rebuild first indexes every article, then matches each against the whole index
    # (`indexed` set between the two, `position` counted again from 0).
    position = models.BigIntegerField(default=0, verbose_name=_("position"))
    indexed = models.BooleanField(default=False, verbose_name=_("indexed"))
    # Moved at every chunk while a worker runs it: beat resumes a running job whose heartbeat
    # is stale (and whose lock is free).
    heartbeat_at = models.DateTimeField(null=True, blank=True, verbose_name=_("heartbeat at"))

    class Meta:
        verbose_name, verbose_name_plural = _("rebuild job"), _("rebuild jobs")

    def __str__(self) -> str:
        return _("rebuild %(version)s (%(state)s %(done)s/%(total)s)") % {
            "version": self.version,
            "state": self.get_state_display(),
            "done": self.done,
            "total": self.total,
        }

    @property
    def articles(self) -> int:
        """Return how many articles it rebuilds: `total` counts each once per pass (indexed,
        then matched; a settling only matches)."""
        return self.total // (2 if self.indexed else 1)


class RebuildMatch(models.Model):
    """A match a running rebuild found under its version, kept aside until it switches: the
    queue and the API serve the active version's matches meanwhile, and a cancelled rebuild
    leaves them whole (its rows are dropped, services.index_clean)."""

    job = models.ForeignKey(RebuildJob, on_delete=models.CASCADE, related_name="+")
    a = models.ForeignKey("dedup.Article", on_delete=models.CASCADE, related_name="+")
    b = models.ForeignKey("dedup.Article", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10)
    distance = models.PositiveSmallIntegerField(null=True, blank=True)
    similarity = models.FloatField()
    shared_passages = models.JSONField(default=list, blank=True)
    shared_chars = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "a", "b"], name="one_rebuild_match_per_pair")
        ]

    def __str__(self) -> str:
        return f"{self.a_id} ~ {self.b_id} (rebuild {self.job_id}, {self.kind})"
