"""The audit page: who changed what and when, for admins (read-only: no form here writes)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dedup import selectors
from webui.access import admin_required
from webui.forms import AuditFilterForm


@admin_required
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    """Show the audit log and editors' decisions, newest first, filtered by user, kind, days."""
    form = AuditFilterForm(request.GET, kinds=selectors.audit_kinds())
    if not form.is_valid():
        context = {"form": form, "rows": [], "page": 1, "older": False}
        return render(request, "webui/audit.html", context, status=400)
    data = form.cleaned_data
    filters = selectors.AuditFilter(
        username=data["user"].strip(),
        kind=data["kind"],
        since=data["since"],
        until=data["until"],
    )
    page = data["page"] or 1
    rows, older = selectors.audit_rows(filters=filters, page=page)
    query = request.GET.copy()
    query.pop("page", None)
    context = {"form": form, "rows": rows, "page": page, "older": older, "query": query.urlencode()}
    return render(request, "webui/audit.html", context)
