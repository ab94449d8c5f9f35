"""The audit log's writes: one entry per change someone made (see models.AuditEntry)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models

from dedup.models import AuditAction, AuditEntry

REPR_MAX = 300


def audit_record(
    *,
    action: AuditAction,
    user=None,
    obj: models.Model | None = None,
    changes: dict | None = None,
    message: str = "",
    username: str = "",
    address: str = "",
) -> AuditEntry:
    """Add an entry: who (a user, or only a name as typed at sign-in), did what, to which
    object, changing what (JSON: {"field": [before, after]} or what went)."""
    if user is not None and not user.is_authenticated:
        user = None
    return AuditEntry.objects.create(
        action=action,
        user=user,
        username=(user.get_username() if user is not None else username)[:150],
        object_type=obj._meta.label if obj is not None else "",
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
        object_repr=str(obj)[:REPR_MAX] if obj is not None else "",
        changes=changes or {},
        message=message,
        address=address[:64],
    )


def audit_values(value):
    """Return a value as JSON can hold it (choices, dates and model rows as text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Iterable):  # many-to-many: groups, permissions
        return sorted(str(v) for v in value)
    return str(value)
