"""What the index works under now: the Detector the settings build, once per process
(detector_for), and the start of the retention window. The settings row itself is read by
dedup.selectors.settings_current (re-exported here for the index's modules)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from django.utils import timezone

from dedup.engine.verify import Detector
from dedup.models import Settings
from dedup.selectors.settings import settings_current

_detectors: dict[tuple, Detector] = {}
_detectors_lock = threading.Lock()

__all__ = ["detector_for", "retention_start", "settings_current"]


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
