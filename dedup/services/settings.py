"""Settings an admin tunes: a change that alters what is stored starts a rebuild."""

from __future__ import annotations

from django.db import transaction

from dedup.engine.config import ConfigError
from dedup.engine.plan import PlanError
from dedup.errors import SettingsInvalid
from dedup.models import AuditAction, RebuildJob
from dedup.services.audit import audit_record, audit_values
from dedup.services.rebuilds import rebuild_start, settings_locked

EDITABLE = ("threshold", "k_max", "capacity", "top_n", "tokenizer", "retention_days",
            "stop_words", "near", "partial", "near_short", "partial_min_chars")  # fmt: skip


def settings_update(*, user=None, **fields) -> RebuildJob | None:
    """Change the settings, in the audit log under `user`; when what is stored changes (the
    index version), start a rebuild unless one to the new version is running."""
    unknown = sorted(set(fields) - set(EDITABLE))
    if unknown:
        raise SettingsInvalid(f"unknown setting(s) {', '.join(unknown)}; use {', '.join(EDITABLE)}")
    with transaction.atomic():
        row = settings_locked()
        before = {name: audit_values(getattr(row, name)) for name in fields}
        for name, value in fields.items():
            setattr(row, name, value)
        try:
            row.full_clean(exclude=["active_version", "active_config"])
            row.index_version  # noqa: B018 (builds the Config and the Plan: bad ones raise)
        except (ConfigError, PlanError) as error:
            raise SettingsInvalid(str(error)) from error
        except Exception as error:  # ValidationError: name the fields
            raise SettingsInvalid(str(error)) from error
        if row.threshold > row.k_max:
            raise SettingsInvalid(f"threshold {row.threshold} is over k_max {row.k_max}")
        row.save()
        changed = {n: [before[n], audit_values(getattr(row, n))] for n in fields}
        changed = {n: pair for n, pair in changed.items() if pair[0] != pair[1]}
        if changed:
            audit_record(action=AuditAction.SETTINGS_CHANGE, user=user, obj=row, changes=changed)
        job, _ = rebuild_start(row)
        return job
