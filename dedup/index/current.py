"""What the index works under now: the Detector the settings build, once per process
(detector_for), the start of the retention window, and the version new articles are processed
under (processing_settings; version_check holds it while a write under it commits). The
settings row itself is read by dedup.selectors.settings_current (re-exported here for the
index's modules)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from django.utils import timezone

from dedup.engine.verify import Detector
from dedup.models import Settings
from dedup.selectors.settings import settings_current

_detectors: dict[tuple, Detector] = {}
_detectors_lock = threading.Lock()

__all__ = [
    "VersionMoved",
    "detector_for",
    "processing_settings",
    "retention_start",
    "settings_current",
    "settings_shared",
    "version_check",
]


class VersionMoved(Exception):
    """The version a write was made for is no longer the one to write under (a rebuild
    switched, or the settings changed): the work is done again under the new one."""


def processing_settings(row: Settings) -> tuple[Settings, str]:
    """Return the settings new articles are processed under, and their index version: the
    active one, so that answers (api/check, the queue) find them at once while a rebuild runs
    (its final sweep indexes them under the new version), unless this code cannot compute the
    active version (an upgrade changed the fingerprint or the features format): then the new
    one, found once the rebuild ends."""
    active = row.active()
    if active.index_version == row.active_version:
        return active, row.active_version
    return row, row.index_version


def version_check(version: str) -> None:
    """Raise VersionMoved unless new articles are still processed under `version`. Call it
    first in the transaction that writes under it: the settings row stays share-locked until
    the transaction ends, so a rebuild switching over (or a settings change) waits for it, and
    a write that comes after finds the version moved."""
    row = settings_shared()
    if row is None or processing_settings(row)[1] != version:
        raise VersionMoved(version)


def settings_shared() -> Settings | None:
    """Return the settings row, share-locked until the transaction ends (call it in one):
    writers of index rows and matches check their version under it, and whoever changes the
    version (a settings change, a rebuild switching) waits for them with select_for_update."""
    rows = list(Settings.objects.raw("SELECT * FROM dedup_settings WHERE id = 1 FOR SHARE"))
    return rows[0] if rows else None


def detector_for(settings: Settings) -> Detector:
    """Return a Detector for these settings, built once per process (it loads dictionaries)."""
    key = (
        settings.engine_config().version,
        settings.k_max,
        settings.near,
        settings.partial,
        settings.near_short,
        settings.partial_min_chars,
    )
    with _detectors_lock:
        detector = _detectors.get(key)
        if detector is None:
            detector = Detector(
                settings.engine_config(),
                k_article=settings.k_max,
                near=settings.near,
                partial=settings.partial,
                near_short=settings.near_short,
                min_chars=settings.partial_min_chars,
            )
            _detectors[key] = detector
        return detector


def retention_start(settings: Settings, now: datetime | None = None) -> datetime | None:
    """Return the earliest dated_at inside the retention window, or None when it is off."""
    if not settings.retention_days:
        return None
    return (now or timezone.now()) - timedelta(days=settings.retention_days)
