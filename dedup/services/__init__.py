"""Writes: ingest articles and uploads, fingerprint and match them, settings and rebuilds.

Every service here may run twice for the same input (a task retried, a message delivered
again after its worker died): rows are claimed with a conditional UPDATE, index rows and
matches are written with `ignore_conflicts`, and upload rows are keyed by (upload, row).

The services live in modules by what they write: `ingest` (articles from a request),
`uploads` (files read into articles), `processing` (a chunk fingerprinted, indexed and
matched; stuck articles sent again; pruning), `checks` (a text checked, nothing stored) and
`reindex` (settings and the rebuilds they start). Callers import them from here; a test that
patches a module's knob (MAX_UPLOAD_ERRORS) patches it in the module that reads it.
"""

from dedup.errors import ArticleInvalid, DedupError, SettingsInvalid, UploadTooLarge
from dedup.services.checks import text_check
from dedup.services.ingest import Submitted as Submitted
from dedup.services.ingest import article_clean as article_clean
from dedup.services.ingest import articles_ingest, articles_submit
from dedup.services.processing import articles_process, articles_prune, articles_requeue_stuck
from dedup.services.reindex import EDITABLE as EDITABLE
from dedup.services.reindex import index_rebuild, settings_update
from dedup.services.uploads import (
    upload_abandon,
    upload_create,
    upload_delete,
    upload_process,
    uploads_requeue_stuck,
)
from dedup.services.webhooks import deliveries_resend, webhook_start, webhooks_dispatch

__all__ = [
    "ArticleInvalid",
    "DedupError",
    "SettingsInvalid",
    "UploadTooLarge",
    "articles_ingest",
    "articles_process",
    "articles_prune",
    "articles_requeue_stuck",
    "articles_submit",
    "deliveries_resend",
    "index_rebuild",
    "settings_update",
    "text_check",
    "upload_abandon",
    "upload_create",
    "upload_delete",
    "upload_process",
    "uploads_requeue_stuck",
    "webhook_start",
    "webhooks_dispatch",
]
