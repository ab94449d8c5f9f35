"""The audit log as admins read it: its entries and editors' decisions, newest first."""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from django.apps import apps
from django.contrib.admin.models import LogEntry
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup.models import AuditAction, AuditEntry, Decision

DECISION = "decision"  # a kind beside the audit actions: editors' decisions, from their table
PER_PAGE = 100
MAX_PAGE = 100


@dataclass(frozen=True)
class AuditFilter:
    username: str = ""
    kind: str = ""  # an AuditAction value, DECISION, or "" for all
    since: date | None = None
    until: date | None = None  # inclusive


@dataclass
class AuditRow:
    at: datetime
    username: str
    kind: str
    label: str
    target: str
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # name, before, after
    message: str = ""
    address: str = ""
    pair: tuple[int, int] | None = None  # a decision's pair, for a link to compare


def audit_kinds() -> list[tuple[str, str]]:
    """Return the kinds an admin can filter by, with their labels."""
    return [*AuditAction.choices, (DECISION, _("editor's decision"))]


def _bounds(query, column: str, since: date | None, until: date | None):
    zone = timezone.get_current_timezone()
    if since:
        start = datetime.combine(since, time.min, tzinfo=zone)
        query = query.filter(**{f"{column}__gte": start})
    if until:
        end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=zone)
        query = query.filter(**{f"{column}__lt": end})
    return query


def _shown(value) -> str:
    """Return a logged value as text to show ("-" for none)."""
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _type_name(label: str) -> str:
    """Return the verbose name of the model `label` names ("dedup.Settings": 设置), or the
    label's last part for a model gone since."""
    try:
        return str(apps.get_model(label)._meta.verbose_name)
    except (LookupError, ValueError):
        return label.split(".")[-1]


def _entry_row(entry: AuditEntry) -> AuditRow:
    changes = entry.changes if isinstance(entry.changes, dict) else {}
    rows = []
    for name, value in changes.items():
        before, after = value if isinstance(value, list) and len(value) == 2 else (None, value)
        rows.append((name, _shown(before), _shown(after)))
    message = entry.message
    if message.startswith("["):  # the admin's own change message: read as it reads it
        message = LogEntry(change_message=message).get_change_message()
    target = entry.object_repr or _type_name(entry.object_type)
    if entry.object_type and entry.object_repr:
        target = f"{_type_name(entry.object_type)} {entry.object_id}: {entry.object_repr}"
    return AuditRow(
        at=entry.at,
        username=entry.username,
        kind=entry.action,
        label=str(AuditAction(entry.action).label),
        target=target,
        changes=rows,
        message=message,
        address=entry.address,
    )


def _decision_row(decision: Decision) -> AuditRow:
    user = decision.decided_by
    pair = f"{decision.a_id} ~ {decision.b_id}" if decision.b_id else str(decision.a_id)
    return AuditRow(
        at=decision.decided_at,
        username=user.get_username() if user else "",
        kind=DECISION,
        label=_("decision: %(verdict)s") % {"verdict": decision.get_verdict_display()},
        target=pair,
        message=decision.note,
        pair=(decision.a_id, decision.b_id) if decision.b_id else None,
    )


def audit_rows(*, filters: AuditFilter, page: int = 1) -> tuple[list[AuditRow], bool]:
    """Return a page of the log (entries and decisions merged, newest first) and whether an
    older page exists."""
    page = min(max(page, 1), MAX_PAGE)
    wanted = page * PER_PAGE + 1
    sources = []
    if filters.kind != DECISION:
        entries = _bounds(AuditEntry.objects.all(), "at", filters.since, filters.until)
        if filters.kind:
            entries = entries.filter(action=filters.kind)
        if filters.username:
            entries = entries.filter(username__iexact=filters.username)
        sources.append(_entry_row(e) for e in entries.order_by("-at", "-id")[:wanted])
    if filters.kind in ("", DECISION):
        decisions = _bounds(Decision.objects.all(), "decided_at", filters.since, filters.until)
        if filters.username:
            decisions = decisions.filter(decided_by__username__iexact=filters.username)
        decisions = decisions.select_related("decided_by").order_by("-decided_at", "-id")
        sources.append(_decision_row(d) for d in decisions[:wanted])
    merged = list(heapq.merge(*sources, key=lambda row: row.at, reverse=True))
    start = (page - 1) * PER_PAGE
    return merged[start : start + PER_PAGE], len(merged) > start + PER_PAGE
