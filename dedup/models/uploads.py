"""Uploaded files and what became of their rows."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class UploadState(models.TextChoices):
    RECEIVED = "received", _("received")
    PARSING = "parsing", _("reading")
    PROCESSING = "processing", _("processing")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


class UploadBatch(models.Model):
    """One uploaded file (or import) and what became of its rows."""

    file = models.FileField(upload_to="uploads/%Y/%m/", blank=True, verbose_name=_("file"))
    name = models.CharField(max_length=300, verbose_name=_("name"))
    uploaded_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=_("uploaded by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    state = models.CharField(
        max_length=12,
        choices=UploadState.choices,
        default=UploadState.RECEIVED,
        verbose_name=_("state"),
    )
    # Given to the rows that name no source (the upload form's field, import --source).
    source = models.CharField(_("source"), max_length=200, blank=True)
    # Given to the rows that name no publication time.
    published_at = models.DateTimeField(_("published"), null=True, blank=True)
    total_rows = models.PositiveIntegerField(default=0, verbose_name=_("total rows"))
    accepted = models.PositiveIntegerField(default=0, verbose_name=_("accepted"))
    rejected = models.PositiveIntegerField(default=0, verbose_name=_("rejected"))
    # Articles finished (done, exact copy or failed), counted as each one finishes.
    processed = models.PositiveIntegerField(default=0, editable=False, verbose_name=_("processed"))
    # [{"row": n, "message": "..."}]
    errors = models.JSONField(default=list, blank=True, verbose_name=_("errors"))
    # Why the whole file failed, if it did.
    message = models.TextField(blank=True, verbose_name=_("message"))

    class Meta:
        verbose_name, verbose_name_plural = _("upload batch"), _("upload batches")

    def __str__(self) -> str:
        return f"{self.name} ({self.get_state_display()})"
