"""Reads: what the pages, the API, webhooks and commands show.

By what they read: `articles` (articles by the ids callers know them by, an article's
matches), `changes` (matches and decisions after a cursor), `health` (an upload's progress,
the index's health), `overview` (what the overview and the admin count), `decisions` (the
decision that counts), `settings` (the settings in use), `matches` (the match table each
process caches at the version every writer moves), `clusterings` (clusters at any bars,
the review queue, drawn from that table), `audit` (the audit log with editors' decisions)
and `sources` (who copies whom).
Callers import them from here.
"""

from dedup.selectors.articles import (
    article_fingerprints,
    article_matches,
    article_ref,
    articles_find,
    fingerprint_hex,
    rejected_partners,
)
from dedup.selectors.audit import AuditFilter, audit_kinds, audit_rows
from dedup.selectors.changes import (
    ChangePage,
    decision_change_json,
    decision_changes,
    match_change_json,
    match_changes,
)
from dedup.selectors.clusterings import Bars, Clustering, MatchTable, QueueFilter
from dedup.selectors.decisions import original_latest, pair_latest
from dedup.selectors.health import index_health, upload_status
from dedup.selectors.matches import match_cache, match_table, table_forget, table_version
from dedup.selectors.overview import match_distances_by_day, uploads_contents
from dedup.selectors.settings import settings_current
from dedup.selectors.sources import (
    Period,
    source_copies,
    source_edge_rows,
    source_edges,
    source_known,
    sources_overview,
)

__all__ = [
    "AuditFilter",
    "Bars",
    "ChangePage",
    "Clustering",
    "MatchTable",
    "Period",
    "QueueFilter",
    "article_fingerprints",
    "article_matches",
    "article_ref",
    "articles_find",
    "audit_kinds",
    "audit_rows",
    "decision_change_json",
    "decision_changes",
    "fingerprint_hex",
    "index_health",
    "match_cache",
    "match_change_json",
    "match_changes",
    "match_distances_by_day",
    "match_table",
    "original_latest",
    "pair_latest",
    "rejected_partners",
    "settings_current",
    "source_copies",
    "source_edge_rows",
    "source_edges",
    "source_known",
    "sources_overview",
    "table_forget",
    "table_version",
    "upload_status",
    "uploads_contents",
]
