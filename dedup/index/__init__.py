"""The segment and passage index in the database, through the ORM.

An article is indexed under one version (Settings.index_version) as its Fingerprint (with the
packed verification features), one SegmentRow per table of the plan (the fingerprint under
that table's key, `Plan.keys`, as in MemIndex, in a table partitioned by day) and one
PassageKey per passage. Every write ignores rows that exist already, so a retried task adds
nothing twice.

Candidates are read back in one query for the fingerprint's bucket in every table (one
`key = ANY(array)`, the Hamming distance checked on the rows it returns: segments.
PgSegmentIndex), and one for the passage keys, leaving out keys more than MAX_PASSAGE_OWNERS
articles hold; such a key not boilerplate in the article asking (a popular story) finds the
POPULAR_HOLDERS holders before it, in one more query (candidates._popular_holders). They
are verified on their stored features: an old article is never tokenised again.

The index lives in modules by responsibility: `current` (the settings in use, the Detector,
the retention window), `segments` (the segment rows as an engine SegmentIndex,
PgSegmentIndex), `partitions` (their day partitions, moved with the retention window),
`store` (writing and VACUUM), `candidates` (look-ups), `duplicates` (verifying on stored
features) and `caches` (per-process caches, emptied by caches_clear). Callers import from
here; a test that patches a knob (VACUUM_EVERY_ROWS, FEATURES_CACHED) patches it in the
module that reads it.
"""

from dedup.index.caches import caches_clear
from dedup.index.candidates import candidates_find, candidates_find_many
from dedup.index.current import (
    VersionMoved,
    detector_for,
    processing_settings,
    retention_start,
    settings_current,
    settings_shared,
    version_check,
)
from dedup.index.duplicates import (
    duplicates_find,
    duplicates_find_many,
    features_load,
    match_rows,
    sketches_load,
)
from dedup.index.partitions import partitions_maintain
from dedup.index.segments import PgSegmentIndex
from dedup.index.store import Indexed, index_store, index_vacuum_if_due

__all__ = [
    "Indexed",
    "PgSegmentIndex",
    "VersionMoved",
    "caches_clear",
    "candidates_find",
    "candidates_find_many",
    "detector_for",
    "duplicates_find",
    "duplicates_find_many",
    "features_load",
    "index_store",
    "index_vacuum_if_due",
    "match_rows",
    "partitions_maintain",
    "processing_settings",
    "retention_start",
    "settings_current",
    "settings_shared",
    "sketches_load",
    "version_check",
]
