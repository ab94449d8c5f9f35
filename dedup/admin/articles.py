"""Articles (title, source and URL can be corrected), and read-only views of their
fingerprints, matches, decisions and uploads."""

from __future__ import annotations

from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from dedup import selectors, services
from dedup.admin.base import AuditedAdmin, ReadOnlyAdmin
from dedup.models import (
    Article,
    Decision,
    Fingerprint,
    Match,
    UploadBatch,
    to_unsigned,
)


@admin.register(Article)
class ArticleAdmin(AuditedAdmin):
    """Articles arrive through uploads and the API; here their title, source and URL can be
    corrected. The text is never edited (its fingerprint would no longer match it)."""

    list_display = ["id", "title", "source", "status", "created_at"]
    list_filter = ["status", "source"]
    search_fields = ["title", "body"]
    show_full_result_count = False
    processing = [
        "status",
        "status_message",
        "exact_of",
        "upload",
        "row",
        "length",
        "content_hash",
        "attempts",
        "created_at",
        "dated_at",
        "claimed_at",
        "processed_at",
    ]
    fieldsets = [
        (None, {"fields": ["title", "source", "url", "external_id", "published_at", "text"]}),
        (_("processing"), {"fields": processing}),
    ]
    readonly_fields = ["external_id", "published_at", "text", *processing]

    @admin.display(description=_("text"))
    def text(self, obj: Article) -> str:
        # format_html escapes the body: uploaded HTML is shown as text, never rendered.
        return format_html(
            "<pre style='white-space: pre-wrap; max-height: 40em; overflow: auto'>{}</pre>",
            obj.body,
        )

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Fingerprint)
class FingerprintAdmin(ReadOnlyAdmin):
    list_display = ["article", "hex", "status", "tokens", "version", "created_at"]
    list_filter = ["status", "version"]
    fields = ["article", "hex", "status", "tokens", "version", "created_at"]
    readonly_fields = fields
    list_select_related = ["article"]

    @admin.display(description=_("fingerprint"))
    def hex(self, obj: Fingerprint) -> str:
        return "-" if obj.value is None else f"{to_unsigned(obj.value):016x}"


@admin.register(Match)
class MatchAdmin(ReadOnlyAdmin):
    list_display = ["id", "a", "b", "kind", "distance", "similarity", "found_at"]
    list_filter = ["kind", "distance", "version"]
    list_select_related = ["a", "b"]
    fields = ["a", "b", "kind", "distance", "similarity", "shared_passages", "version", "found_at"]
    readonly_fields = fields


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    """Editors decide in the dashboard; this is the record."""

    list_display = ["id", "a", "b", "verdict", "decided_by", "decided_at", "note"]
    list_filter = ["verdict", "decided_by"]
    list_select_related = ["a", "b", "decided_by"]
    fields = ["a", "b", "verdict", "decided_by", "decided_at", "note"]
    readonly_fields = fields
    date_hierarchy = "decided_at"


@admin.register(UploadBatch)
class UploadBatchAdmin(ReadOnlyAdmin):
    """Uploads come through the dashboard, the API and `manage.py import`."""

    list_display = [
        "id",
        "name",
        "state",
        "total_rows",
        "accepted",
        "rejected",
        "uploaded_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["state"]
    search_fields = ["name"]
    fields = [
        "name",
        "file",
        "uploaded_by",
        "source",
        "published_at",
        "state",
        "total_rows",
        "accepted",
        "rejected",
        "message",
        "error_report",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields
    actions = ["uploads_delete_with_articles"]

    def get_actions(self, request):
        """Not Django's own "delete selected", which deletes the upload alone and leaves its
        articles claiming an upload that is gone: uploads go with what they brought."""
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_model(self, request, obj: UploadBatch) -> None:
        """The upload's own delete page: with its articles, index rows and matches too."""
        services.upload_delete(upload_id=obj.id, user=request.user)

    @admin.action(
        description=_("Delete the selected uploads with their articles, index rows and matches"),
        permissions=["delete"],
    )
    def uploads_delete_with_articles(self, request, queryset):
        """Ask first (how many articles, matches and decisions go), then delete each upload
        through services.upload_delete."""
        uploads = list(queryset.order_by("id"))
        if request.POST.get("confirmed") != "yes":
            contents = selectors.uploads_contents(upload_ids=[u.id for u in uploads])
            context = {
                **self.admin_site.each_context(request),
                "title": _("Delete uploads with their articles?"),
                "uploads": uploads,
                **contents,
                "action": "uploads_delete_with_articles",
                "opts": self.model._meta,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/dedup/uploads_delete.html", context)
        gone = sum(services.upload_delete(upload_id=u.id, user=request.user) for u in uploads)
        self.message_user(
            request,
            _("Deleted %(uploads)d upload(s) and %(articles)d article(s).")
            % {"uploads": len(uploads), "articles": gone},
            messages.SUCCESS,
        )
        return None

    @admin.display(description=_("rejected rows"))
    def error_report(self, obj: UploadBatch) -> str:
        if not obj.errors:
            return "-"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>row {}: {}</li>",
                ((e.get("row", "?"), e.get("message", "")) for e in obj.errors),
            ),
        )
