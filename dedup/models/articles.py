"""Articles as they arrived, and what the index keeps of them: fingerprints, segment rows and
passage keys under one index version."""

from __future__ import annotations

import hashlib

from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Left
from django.utils.translation import gettext_lazy as _

from dedup.engine.fingerprint import Status
from dedup.engine.hamming import to_unsigned
from dedup.models.versions import VersionField

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
    # Indexed with its date (Meta): a source's articles, newest first (the sources pages).
    source = models.CharField(_("source"), max_length=200, blank=True)
    url = models.CharField(_("URL"), max_length=2000, blank=True)
    external_id = models.CharField(_("id in its upload"), max_length=500, blank=True)
    published_at = models.DateTimeField(_("published"), null=True, blank=True)
    created_at = models.DateTimeField(_("received"), auto_now_add=True)
    # published_at, or created_at when unknown: what the retention window compares.
    dated_at = models.DateTimeField(db_index=True, verbose_name=_("dated at"))
    content_hash = models.CharField(max_length=64, db_index=True, verbose_name=_("content hash"))
    length = models.PositiveIntegerField(default=0, verbose_name=_("length"))
    status = models.CharField(
        max_length=12,
        choices=ArticleStatus.choices,
        default=ArticleStatus.PENDING,
        verbose_name=_("status"),
    )
    status_message = models.CharField(max_length=500, blank=True, verbose_name=_("status message"))
    exact_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="exact_copies",
        db_index=False,  # a partial index below: most articles are no copy
        verbose_name=_("exact copy of"),
    )
    upload = models.ForeignKey(
        "UploadBatch",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="articles",
        db_index=False,  # one_article_per_upload_row starts with it
        verbose_name=_("upload"),
    )
    row = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("row"))
    # Who sent it through the API (an upload's rows name their uploader by their upload): who,
    # beside an admin, may replace it.
    submitted_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # read only with the article, never to find articles
        verbose_name=_("submitted by"),
    )
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts"))
    claimed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("claimed at"))
    processed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("processed at"))

    class Meta:
        verbose_name, verbose_name_plural = _("article"), _("articles")
        # Every index is updated when an article's status changes (twice per article): only
        # those that queries need.
        indexes = [
            models.Index(fields=["status", "claimed_at"]),
            # The newest processed: whether the collection is quiet, and settled (settling).
            models.Index(fields=["processed_at"], name="article_processed_at"),
            # By source, and a source's newest articles (its copies, newest first): in place of
            # an index on the source alone, so no more to update per write.
            models.Index(fields=["source", "dated_at", "id"], name="article_source_dated"),
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
        return self.title or _("Article %(id)s") % {"id": self.pk}

    @staticmethod
    def hash_body(body: str) -> str:
        """Return the content hash of a text: exact copies share it."""
        return hashlib.sha256(" ".join(body.split()).encode("utf-8")).hexdigest()


class FingerprintStatus(models.TextChoices):
    """Why a text did or did not get a fingerprint (dedup.engine.fingerprint.Status)."""

    OK = Status.OK.value, _("fingerprinted")
    EMPTY = Status.EMPTY.value, _("empty")
    NO_WORDS = Status.NO_WORDS.value, _("no usable words")
    BINARY = Status.BINARY.value, _("not text")


class Fingerprint(models.Model):
    """An article's fingerprint and verification features under one configuration version."""

    article = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="fingerprints", verbose_name=_("article")
    )
    version = models.CharField(max_length=120, verbose_name=_("version"))
    # signed; None when the text has no usable words
    value = models.BigIntegerField(null=True, verbose_name=_("value"))
    status = models.CharField(
        max_length=12, choices=FingerprintStatus.choices, verbose_name=_("status")
    )
    tokens = models.PositiveIntegerField(default=0, verbose_name=_("tokens"))
    # dedup.engine.features.Features, packed
    features = models.BinaryField(verbose_name=_("features"))
    # What screens candidates before their features are loaded (dedup.engine.screen): the
    # number of shingles and the sketch, uint32 little-endian; null when not computed.
    shingles = models.PositiveIntegerField(default=0, verbose_name=_("shingles"))
    sketch = models.BinaryField(null=True, blank=True, verbose_name=_("sketch"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

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

    The table `dedup_segment` is partitioned by `day` (the article's date: native range
    partitions, one a day within the retention window and a default one for the rest), made
    by migration 0024 and kept by dedup.index.partitions: the window moves on by dropping a
    day's partition, never by deleting rows. Lean rows: `key` holds the plan's table number in
    its top byte and the table's key below (one bigint, looked up with `= ANY`), the version
    a 32-bit number (VersionField). No unique constraint: rows are written only with their
    article's new Fingerprint row, which is unique per version (index.index_store)."""

    pk = models.CompositePrimaryKey("version", "key", "article")  # for the ORM; no constraint
    version = VersionField()
    key = models.BigIntegerField()  # table number << 56, xor the table's key; signed
    fingerprint = models.BigIntegerField()  # signed
    # Derived rows, written by the million: no foreign-key check per row in the database
    # (Django still deletes them with their article).
    article = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="segment_rows", db_constraint=False
    )
    day = models.DateField()

    class Meta:
        # A partitioned table: migration 0024 makes it in SQL; managed, so that tests flush it.
        db_table = "dedup_segment"


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
