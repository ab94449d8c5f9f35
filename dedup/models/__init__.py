"""What the service keeps: articles, fingerprints, segment index rows, matches, uploads,
decisions, the audit log, and the settings an admin tunes.

Fingerprints are unsigned 64-bit integers in the engine and signed in the database
(`BigIntegerField`); `to_signed` and `to_unsigned` (from the engine, re-exported here) are the
one place that converts.
"""

from dedup.engine.hamming import to_signed, to_unsigned
from dedup.models.api import ApiToken, DeliveryState, Webhook, WebhookDelivery
from dedup.models.articles import (
    URL_KEY,
    Article,
    ArticleStatus,
    Fingerprint,
    FingerprintStatus,
    PassageKey,
    SegmentRow,
)
from dedup.models.audit import AuditAction, AuditEntry
from dedup.models.matches import Decision, Match, MatchKind, MatchVersion, Verdict
from dedup.models.settings import SHARE, RebuildJob, RebuildMatch, RebuildState, Settings
from dedup.models.sources import SourceEdge
from dedup.models.uploads import UploadBatch, UploadState
from dedup.models.versions import IndexVersion

__all__ = [
    "SHARE",
    "URL_KEY",
    "ApiToken",
    "Article",
    "ArticleStatus",
    "AuditAction",
    "AuditEntry",
    "Decision",
    "DeliveryState",
    "Fingerprint",
    "FingerprintStatus",
    "IndexVersion",
    "Match",
    "MatchKind",
    "MatchVersion",
    "PassageKey",
    "RebuildJob",
    "RebuildMatch",
    "RebuildState",
    "SegmentRow",
    "Settings",
    "SourceEdge",
    "UploadBatch",
    "UploadState",
    "Verdict",
    "Webhook",
    "WebhookDelivery",
    "to_signed",
    "to_unsigned",
]
