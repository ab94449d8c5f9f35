"""The settings the index works under now."""

from __future__ import annotations

from dedup.models import Settings


def settings_current() -> Settings:
    """Return the settings row, with active_version set on first use."""
    row = Settings.load()
    if not row.active_version:
        Settings.objects.filter(pk=row.pk, active_version="").update(
            active_version=row.index_version, active_config=row.config_fields()
        )
        row.refresh_from_db()
    return row
