"""What the admin's views share: every edit in the audit log, and read-only views of
service-made rows."""

from __future__ import annotations

import json

from django.contrib import admin

from dedup import services
from dedup.models import AuditAction
from webui.signin import client_address

SECRET_FIELDS = ("password", "secret")  # what changed is said, never the values


def form_changes(form) -> dict:
    """Return {"field": [before, after]} for a form's changed fields (secrets hidden)."""
    changes = {}
    for name in form.changed_data:
        if any(word in name for word in SECRET_FIELDS):
            changes[name] = ["***", "***"]
            continue
        before = form.initial.get(name)
        after = form.cleaned_data.get(name)
        changes[name] = [services.audit_values(before), services.audit_values(after)]
    return changes


class AuditedAdmin(admin.ModelAdmin):
    """Each addition, change and deletion made here goes to the audit log (beside the admin's
    own history), with the values that changed."""

    def audit_action(self, changes: dict, add: bool) -> AuditAction:
        return AuditAction.ADMIN_ADD if add else AuditAction.ADMIN_CHANGE

    def construct_change_message(self, request, form, formsets, add=False):
        request.audit_changes = form_changes(form)  # read by log_addition and log_change
        return super().construct_change_message(request, form, formsets, add)

    def _audit(self, request, obj, add: bool, message) -> None:
        changes = getattr(request, "audit_changes", {})
        services.audit_record(
            action=self.audit_action(changes, add),
            user=request.user,
            obj=obj,
            changes=changes,
            message=message if isinstance(message, str) else json.dumps(message),
            address=client_address(request),
        )

    def log_addition(self, request, obj, message):
        self._audit(request, obj, True, message)
        return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        self._audit(request, obj, False, message)
        return super().log_change(request, obj, message)

    def log_deletions(self, request, queryset):
        for obj in queryset:
            services.audit_record(
                action=AuditAction.ADMIN_DELETE,
                user=request.user,
                obj=obj,
                address=client_address(request),
            )
        return super().log_deletions(request, queryset)


class ReadOnlyAdmin(AuditedAdmin):
    """Rows the service makes: viewable (and deletable by an admin), never added or edited."""

    show_full_result_count = False  # a second COUNT(*) over millions of rows buys nothing

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
