"""What the service keeps: articles, fingerprints, segment index rows, matches, uploads,
decisions, and the settings an admin tunes.

Fingerprints are unsigned 64-bit integers in the engine and signed in the database
(`BigIntegerField`); `to_signed` and `to_unsigned` (from the engine, re-exported here) are the
one place that converts.
"""

from __future__ import annotations

import functools
import hashlib
import secrets

from django.conf import settings as django_settings
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Left
from django.utils.translation import gettext_lazy as _

from dedup.engine import features as engine_features
from dedup.engine.config import TOKENIZERS, Config
from dedup.engine.hamming import to_signed, to_unsigned
from dedup.engine.plan import Plan, plan_for

__all__ = ["to_signed", "to_unsigned"]  # plus the models


# A similarity or containment threshold: a share, from 0 to 1.
SHARE = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class Settings(models.Model):
    """The singleton an admin tunes (row 1). Changing what fingerprints depend on starts a
    rebuild, and so does a release that stores under a new index version (dedup/rebuilds.py);
    until it ends, answers come from `active_version`."""

    threshold = models.PositiveSmallIntegerField(
        _("default threshold"), default=3, help_text=_("distance shown to editors at first")
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
        default=0.2,
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
    active_version = models.CharField(max_length=120, blank=True, editable=False)
    # The fields active_version was made with (engine_config and plan), kept while a rebuild
    # moves to new ones, so that answers can still be computed the old way.
    active_config = models.JSONField(default=dict, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = _("settings")

    def __str__(self) -> str:
        return f"settings ({self.index_version})"

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


URL_KEY = 300  # characters of a URL in the look-up index (see Article.Meta)


class ArticleStatus(models.TextChoices):
    PENDING = "pending", _("waiting")
    PROCESSING = "processing", _("processing")
    DONE = "done", _("done")
    EXACT = "exact", _("exact copy")
    FAILED = "failed", _("failed")


class Article(models.Model):
    """One article as it arrived, and where processing has got to."""

    title = models.CharField(_("title"), max_length=500, blank=True)
    body = models.TextField(_("text"))
    source = models.CharField(_("source"), max_length=200, blank=True, db_index=True)
    url = models.CharField(_("URL"), max_length=2000, blank=True)
    external_id = models.CharField(_("id in its upload"), max_length=500, blank=True)
    published_at = models.DateTimeField(_("published"), null=True, blank=True)
    created_at = models.DateTimeField(_("received"), auto_now_add=True)
    # published_at, or created_at when unknown: what the retention window compares.
    dated_at = models.DateTimeField(db_index=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    length = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=12, choices=ArticleStatus.choices, default=ArticleStatus.PENDING
    )
    status_message = models.CharField(max_length=500, blank=True)
    exact_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="exact_copies",
        db_index=False,  # a partial index below: most articles are no copy
    )
    upload = models.ForeignKey(
        "UploadBatch",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="articles",
        db_index=False,  # one_article_per_upload_row starts with it
    )
    row = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = _("article"), _("articles")
        # Every index is updated when an article's status changes (twice per article): only
        # those that queries need.
        indexes = [
            models.Index(fields=["status", "claimed_at"]),
            models.Index(
                fields=["exact_of"], condition=Q(exact_of__isnull=False), name="article_exact_of"
            ),
            # Look-ups by the caller's id (the API's ?external_id=, idempotent re-sends).
            # Not unique: articles stored before re-sends were recognised may repeat an id.
            # The id alone: with the source, a long one could pass a B-tree entry's limit.
            models.Index(
                fields=["external_id"], condition=~Q(external_id=""), name="article_external_id"
            ),
            # By URL: its first URL_KEY characters (a whole URL may pass that limit).
            models.Index(Left("url", URL_KEY), condition=~Q(url=""), name="article_url"),
        ]
        constraints = [
            # An upload read twice (a retried task) cannot create a row's article twice.
            models.UniqueConstraint(fields=["upload", "row"], name="one_article_per_upload_row")
        ]

    def __str__(self) -> str:
        return self.title or f"article {self.pk}"

    @staticmethod
    def hash_body(body: str) -> str:
        """Return the content hash of a text: exact copies share it."""
        return hashlib.sha256(" ".join(body.split()).encode("utf-8")).hexdigest()


class Fingerprint(models.Model):
    """An article's fingerprint and verification features under one configuration version."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="fingerprints")
    version = models.CharField(max_length=120)
    value = models.BigIntegerField(null=True)  # signed; None when the text has no usable words
    status = models.CharField(max_length=12)  # dedup.engine.fingerprint.Status
    tokens = models.PositiveIntegerField(default=0)
    features = models.BinaryField()  # dedup.engine.features.Features, packed
    # What screens candidates before their features are loaded (dedup.engine.screen): the
    # number of shingles and the sketch, uint32 little-endian; null when not computed.
    shingles = models.PositiveIntegerField(default=0)
    sketch = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name, verbose_name_plural = _("fingerprint"), _("fingerprints")
        constraints = [
            models.UniqueConstraint(
                fields=["article", "version"], name="one_fingerprint_per_version"
            )
        ]

    def __str__(self) -> str:
        shown = "none" if self.value is None else f"{to_unsigned(self.value):016x}"
        return f"{shown} ({self.version})"


class SegmentRow(models.Model):
    """One row of the segment index: an article fingerprint under one table's key.

    No unique constraint: rows are written only with their article's new Fingerprint row,
    which is unique per version (index.index_store), and one constraint less makes inserts
    cheaper."""

    version = models.CharField(max_length=120)
    table_no = models.SmallIntegerField()
    key = models.BigIntegerField()
    fingerprint = models.BigIntegerField()  # signed
    # Derived rows, written by the million: no foreign-key check per row in the database
    # (Django still deletes them with their article).
    article = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="segment_rows", db_constraint=False
    )

    class Meta:
        # Covering (PostgreSQL): a lookup reads the index alone.
        indexes = [
            models.Index(
                fields=["version", "table_no", "key"],
                include=["fingerprint", "article"],
                name="segment_lookup",
            )
        ]


class PassageKey(models.Model):
    """A passage's key (its least shingle hash): equal keys make candidates. Written like
    SegmentRow, with no unique constraint."""

    version = models.CharField(max_length=120)
    key = models.BigIntegerField()  # signed
    passage_no = models.PositiveIntegerField()
    # Derived rows, written by the million: no foreign-key check per row in the database
    # (Django still deletes them with their article).
    article = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="passage_keys", db_constraint=False
    )

    class Meta:
        # The owners of a key come in article order (PostgreSQL): a look-up can stop after
        # the first few distinct ones (see index.candidates._passage_owners).
        indexes = [models.Index(fields=["version", "key", "article"], name="passage_owners")]


class MatchKind(models.TextChoices):
    EXACT = "exact", _("exact copy")
    NEAR = "near", _("near copy")
    PARTIAL = "partial", _("partial copy")


class Match(models.Model):
    """Two articles found to be duplicates: a is the earlier (lower id), b the later."""

    a = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="matches_as_a")
    b = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="matches_as_b")
    kind = models.CharField(max_length=10, choices=MatchKind.choices)
    distance = models.PositiveSmallIntegerField(null=True, blank=True)
    similarity = models.FloatField()
    shared_passages = models.JSONField(default=list, blank=True)
    # Characters of the smaller article's text (boilerplate aside) found in the other; of a
    # partial copy, those of its passages mostly in the other (Duplicate.shared_chars).
    shared_chars = models.PositiveIntegerField(default=0)
    version = models.CharField(max_length=120)
    found_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name, verbose_name_plural = _("match"), _("matches")
        constraints = [
            models.UniqueConstraint(fields=["a", "b"], name="one_match_per_pair"),
            models.CheckConstraint(condition=Q(a__lt=F("b")), name="match_a_before_b"),
        ]
        indexes = [models.Index(fields=["distance"]), models.Index(fields=["kind"])]

    def __str__(self) -> str:
        return f"{self.a_id} ~ {self.b_id} ({self.kind}, d={self.distance})"


class UploadState(models.TextChoices):
    RECEIVED = "received", _("received")
    PARSING = "parsing", _("reading")
    PROCESSING = "processing", _("processing")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class UploadBatch(models.Model):
    """One uploaded file (or import) and what became of its rows."""

    file = models.FileField(upload_to="uploads/%Y/%m/", blank=True)
    name = models.CharField(max_length=300)
    uploaded_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(
        max_length=12, choices=UploadState.choices, default=UploadState.RECEIVED
    )
    # Given to the rows that name no source (the upload form's field, import --source).
    source = models.CharField(_("source"), max_length=200, blank=True)
    # Given to the rows that name no publication time.
    published_at = models.DateTimeField(_("published"), null=True, blank=True)
    total_rows = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    # Articles finished (done, exact copy or failed), counted as each one finishes.
    processed = models.PositiveIntegerField(default=0, editable=False)
    errors = models.JSONField(default=list, blank=True)  # [{"row": n, "message": "..."}]
    message = models.TextField(blank=True)  # why the whole file failed, if it did

    class Meta:
        verbose_name, verbose_name_plural = _("upload batch"), _("upload batches")

    def __str__(self) -> str:
        return f"{self.name} ({self.state})"


class Verdict(models.TextChoices):
    DUPLICATE = "duplicate", _("duplicate")
    NOT_DUPLICATE = "not_duplicate", _("not a duplicate")
    ORIGINAL = "original", _("original")
    # An editor took back the pair's decision: it waits again (the history keeps both).
    UNDONE = "undone", _("decision undone")


class Decision(models.Model):
    """An editor's decision on a pair (duplicate or not) or on an article (the original)."""

    a = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="+")
    b = models.ForeignKey(
        Article, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    decided_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(auto_now_add=True, db_index=True)
    note = models.CharField(max_length=500, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = _("decision"), _("decisions")

    def __str__(self) -> str:
        pair = f"{self.a_id} ~ {self.b_id}" if self.b_id else f"{self.a_id}"
        return f"{pair}: {self.verdict}"


class RebuildJob(models.Model):
    """Re-fingerprinting and re-indexing every article under a new version."""

    version = models.CharField(max_length=120)
    state = models.CharField(max_length=12, default="running")  # running, done, failed
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        verbose_name, verbose_name_plural = _("rebuild job"), _("rebuild jobs")

    def __str__(self) -> str:
        return f"rebuild {self.version} ({self.state} {self.done}/{self.total})"


class ApiToken(models.Model):
    """A secret for the JSON API; only its hash is kept."""

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = _("API token"), _("API tokens")

    def __str__(self) -> str:
        return f"{self.name or 'token'} of {self.user}"

    @staticmethod
    def hash_key(key: str) -> str:
        """Return the stored form of a token."""
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token for a user; return it and the secret, shown once."""
        key = secrets.token_urlsafe(32)
        return cls.objects.create(user=user, name=name, key_hash=cls.hash_key(key)), key


class Webhook(models.Model):
    """An address told about new matches, decisions and finished uploads (dedup/webhooks.py)."""

    url = models.URLField(_("URL"), max_length=2000)
    secret = models.CharField(
        _("secret"),
        max_length=200,
        default=functools.partial(secrets.token_urlsafe, 32),
        help_text=_("signs each delivery: X-Dedup-Signature"),
    )
    on_match = models.BooleanField(_("new matches"), default=True)
    min_similarity = models.FloatField(
        _("matches at least this similar"), default=0.0, validators=SHARE
    )
    on_decision = models.BooleanField(_("editors' decisions"), default=True)
    on_upload = models.BooleanField(_("finished uploads"), default=True)
    active = models.BooleanField(_("active"), default=True)
    # The last match and decision turned into deliveries (their change sequence); null until
    # the first dispatch, which starts from the newest: a new webhook is not sent the past.
    match_cursor = models.BigIntegerField(null=True, blank=True, editable=False)
    decision_cursor = models.BigIntegerField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending", _("waiting")
    SENT = "sent", _("sent")
    FAILED = "failed", _("failed")


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to a webhook, and what its receiver answered last."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    payload = models.JSONField(encoder=DjangoJSONEncoder)
    state = models.CharField(
        max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.CharField(max_length=1000, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["webhook", "state"])]

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook} ({self.state})"
