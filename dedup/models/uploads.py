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
