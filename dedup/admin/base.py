"""What the admin's views of service-made rows share."""

from __future__ import annotations

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the service makes: viewable (and deletable by an admin), never added or edited."""

    show_full_result_count = False  # a second COUNT(*) over millions of rows buys nothing

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
