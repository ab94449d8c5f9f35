"""Users and groups as Django's admin shows them, with every change in the audit log (a change
of groups, superuser or staff status as a change of roles), and the audit log itself, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from dedup.admin.base import AuditedAdmin
from dedup.models import AuditAction, AuditEntry

ROLE_FIELDS = {"groups", "is_superuser", "is_staff", "is_active", "user_permissions"}
# What no one changes on their own account: a role is given by someone else.
OWN_ROLE_FIELDS = ("is_superuser", "groups", "user_permissions")


class AuditedUserAdmin(AuditedAdmin, UserAdmin):
    """No one raises their own role: only superusers make superusers, no one changes their own
    groups, permissions or superuser status, and only superusers change a superuser's account
    (its password would make anyone one)."""

    def audit_action(self, changes: dict, add: bool) -> AuditAction:
        if not add and ROLE_FIELDS & set(changes):
            return AuditAction.ROLES_CHANGE
        return super().audit_action(changes, add)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields.append("is_superuser")
        if obj is not None and obj.pk == request.user.pk:
            fields += OWN_ROLE_FIELDS
        return list(dict.fromkeys(fields))

    def has_change_permission(self, request, obj=None) -> bool:
        if _above(request.user, obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if _above(request.user, obj):
            return False
        return super().has_delete_permission(request, obj)


def _above(user, obj) -> bool:
    """Return whether an account is a superuser's and the user is none."""
    return obj is not None and obj.is_superuser and not user.is_superuser


class AuditedGroupAdmin(AuditedAdmin, GroupAdmin):
    """A group's permissions are its members' own: no one but a superuser changes a group
    they are in."""

    def has_change_permission(self, request, obj=None) -> bool:
        if (
            obj is not None
            and not request.user.is_superuser
            and request.user.groups.filter(pk=obj.pk).exists()
        ):
            return False
        return super().has_change_permission(request, obj)


for model, model_admin in ((User, AuditedUserAdmin), (Group, AuditedGroupAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit log: read, filtered by user, action and date; never added, edited or
    deleted here (the dashboard's audit page also lists editors' decisions)."""

    list_display = ["at", "username", "action", "object_type", "object_repr", "address"]
    list_filter = ["action", "at", "object_type"]
    search_fields = ["username", "object_repr", "object_id"]
    date_hierarchy = "at"
    fields = [
        "at", "username", "user", "action", "object_type", "object_id", "object_repr",
        "changes", "message", "address",
    ]  # fmt: skip
    readonly_fields = fields
    show_full_result_count = False
    actions = None  # no "delete selected"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
