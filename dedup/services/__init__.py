"""Writes: ingest articles and uploads, fingerprint and match them, settings and rebuilds.

Every service here may run twice for the same input (a task retried, a message delivered
again after its worker died): rows are claimed with a conditional UPDATE, index rows and
matches are written with `ignore_conflicts`, and upload rows are keyed by (upload, row).

The services live in modules by what they write: `ingest` (articles from a request),
`uploads` (files read into articles), `processing` (a chunk fingerprinted, indexed and
matched; stuck articles sent again; pruning), `checks` (a text checked, nothing stored),
`decisions` (editors' verdicts), `settings` (what an admin tunes), `tokens` (API tokens
issued and revoked), `audit` (the audit log's entries), `rebuilds` (the state machine a
settings change or an upgrade starts) and `cleanup` (the rows of versions no longer in use).
Callers import them from here; a test that
patches a module's knob (MAX_UPLOAD_ERRORS) patches it in the module that reads it.
"""

from dedup.errors import ArticleInvalid, DedupError, SettingsInvalid, UploadTooLarge
from dedup.services.audit import audit_record, audit_values
from dedup.services.checks import text_check
from dedup.services.cleanup import index_clean
from dedup.services.decisions import (
    DecisionConflict,
    DecisionInvalid,
    PairDecision,
    decision_record,
    decisions_batched,
    decisions_bulk,
    original_choose,
)
from dedup.services.ingest import Submitted as Submitted
from dedup.services.ingest import article_clean as article_clean
from dedup.services.ingest import articles_ingest, articles_submit
from dedup.services.processing import articles_process, articles_prune, articles_requeue_stuck
from dedup.services.rebuilds import (
    index_rebuild,
    index_rebuild_start,
    index_upgrade,
    rebuilds_tend,
)
from dedup.services.settings import EDITABLE as EDITABLE
from dedup.services.settings import settings_update
from dedup.services.settling import settle_if_due
from dedup.services.tokens import token_issue, tokens_revoke
from dedup.services.uploads import (
    upload_abandon,
    upload_create,
    upload_delete,
    upload_process,
    uploads_requeue_stuck,
)
from dedup.services.webhook_addresses import WebhookUrlRefused, webhook_url_check
from dedup.services.webhooks import deliveries_resend, webhook_start, webhooks_dispatch

__all__ = [
    "ArticleInvalid",
    "DecisionConflict",
    "DecisionInvalid",
    "DedupError",
    "PairDecision",
    "SettingsInvalid",
    "UploadTooLarge",
    "WebhookUrlRefused",
    "articles_ingest",
    "articles_process",
    "articles_prune",
    "articles_requeue_stuck",
    "articles_submit",
    "audit_record",
    "audit_values",
    "decision_record",
    "decisions_batched",
    "decisions_bulk",
    "deliveries_resend",
    "index_clean",
    "index_rebuild",
    "index_rebuild_start",
    "index_upgrade",
    "original_choose",
    "rebuilds_tend",
    "settings_update",
    "settle_if_due",
    "text_check",
    "token_issue",
    "tokens_revoke",
    "upload_abandon",
    "upload_create",
    "upload_delete",
    "upload_process",
    "uploads_requeue_stuck",
    "webhook_start",
    "webhook_url_check",
    "webhooks_dispatch",
]
