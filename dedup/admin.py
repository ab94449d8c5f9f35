"""Django admin: the settings an admin tunes, and read-mostly views of what the service keeps.

Rows the service makes (fingerprints, matches, uploads, decisions, rebuilds) are read-only here:
they change through the services, never by hand. Segment rows and passage keys are not shown
(millions of rows, nothing to read in them); `manage.py index_health` sums them up.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from dedup import services
from dedup.engine.config import ConfigError
from dedup.engine.plan import PlanError
from dedup.models import (
    ApiToken,
    Article,
    Decision,
    Fingerprint,
    Match,
    RebuildJob,
    Settings,
    UploadBatch,
    Webhook,
    WebhookDelivery,
    to_unsigned,
)

admin.site.site_header = "dedup"
admin.site.site_title = "dedup"
admin.site.index_title = _("administration")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the service makes: viewable (and deletable by an admin), never added or edited."""

    show_full_result_count = False  # a second COUNT(*) over millions of rows buys nothing

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class SettingsForm(forms.ModelForm):
    class Meta:
        model = Settings
        fields = services.EDITABLE

    def clean(self) -> dict:
        """Refuse settings the engine cannot fingerprint or plan with, before saving them."""
        data = super().clean()
        names = services.EDITABLE
        probe = Settings(**{n: data.get(n, getattr(self.instance, n)) for n in names})
        try:
            probe.index_version  # noqa: B018 (builds the Config and the Plan)
        except (ConfigError, PlanError) as error:
            raise ValidationError(str(error)) from error
        if probe.threshold > probe.k_max:
            self.add_error("threshold", f"at most the largest distance indexed ({probe.k_max})")
        return data


@admin.register(Settings)
class SettingsAdmin(admin.ModelAdmin):
    """The singleton: one row, never deleted; saving goes through `services.settings_update`."""

    form = SettingsForm
    fieldsets = [
        (
            _("matching"),
            {
                "fields": [
                    "threshold",
                    "k_max",
                    "near",
                    "near_short",
                    "partial",
                    "partial_min_chars",
                ]
            },
        ),
        (_("fingerprints"), {"fields": ["top_n", "tokenizer", "stop_words"]}),
        (_("index"), {"fields": ["capacity", "retention_days"]}),
        (_("versions"), {"fields": ["index_version", "active_version", "updated_at"]}),
    ]
    readonly_fields = ["index_version", "active_version", "updated_at"]

    @admin.display(description=_("version of these settings"))
    def index_version(self, obj: Settings) -> str:
        return obj.index_version if obj.pk else "-"

    def has_add_permission(self, request) -> bool:
        return super().has_add_permission(request) and not Settings.objects.exists()

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        """Go straight to the one row."""
        if not self.has_view_or_change_permission(request):
            return super().changelist_view(request, extra_context)
        row = Settings.load()
        return HttpResponseRedirect(reverse("admin:dedup_settings_change", args=[row.pk]))

    def save_model(self, request, obj: Settings, form, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in form.changed_data}
        job = services.settings_update(**fields)
        obj.pk = Settings.load().pk
        obj.refresh_from_db()  # as the service saved it
        if job is not None:
            url = reverse("admin:dedup_rebuildjob_change", args=[job.pk])
            self.message_user(
                request,
                format_html(
                    "Fingerprints change with these settings: <a href='{}'>rebuild {}</a> has "
                    "started; matches come from version {} until it ends.",
                    url,
                    job.pk,
                    obj.active_version or "-",
                ),
                messages.WARNING,
            )


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin):
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

    @admin.action(
        description=_("Delete the selected uploads with their articles, index rows and matches"),
        permissions=["delete"],
    )
    def uploads_delete_with_articles(self, request, queryset):
        """Ask first (how many articles, matches and decisions go), then delete each upload
        through services.upload_delete."""
        uploads = list(queryset.order_by("id"))
        if request.POST.get("confirmed") != "yes":
            ids = [u.id for u in uploads]
            articles = Article.objects.filter(upload_id__in=ids)
            touching = Q(a__upload_id__in=ids) | Q(b__upload_id__in=ids)
            context = {
                **self.admin_site.each_context(request),
                "title": _("Delete uploads with their articles?"),
                "uploads": uploads,
                "articles": articles.count(),
                "matches": Match.objects.filter(touching).count(),
                "decisions": Decision.objects.filter(touching).count(),
                "action": "uploads_delete_with_articles",
                "opts": self.model._meta,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/dedup/uploads_delete.html", context)
        gone = sum(services.upload_delete(upload_id=u.id) for u in uploads)
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


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    """Editors decide in the dashboard; this is the record."""

    list_display = ["id", "a", "b", "verdict", "decided_by", "decided_at", "note"]
    list_filter = ["verdict", "decided_by"]
    list_select_related = ["a", "b", "decided_by"]
    fields = ["a", "b", "verdict", "decided_by", "decided_at", "note"]
    readonly_fields = fields
    date_hierarchy = "decided_at"


@admin.register(RebuildJob)
class RebuildJobAdmin(ReadOnlyAdmin):
    """Rebuilds start when fingerprint settings change, or with `manage.py rebuild`."""

    list_display = ["id", "version", "state", "progress", "started_at", "finished_at"]
    list_filter = ["state"]
    fields = ["version", "state", "progress", "started_at", "finished_at", "message"]
    readonly_fields = fields

    @admin.display(description=_("progress"))
    def progress(self, obj: RebuildJob) -> str:
        share = obj.done / obj.total if obj.total else (1.0 if obj.state == "done" else 0.0)
        return format_html(
            "<progress max='1' value='{}'></progress> {} / {} ({}%)",
            f"{share:.3f}",
            obj.done,
            obj.total,
            f"{100 * share:.0f}",
        )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Adding a token shows its secret once; only its hash is kept (also:
    `manage.py api_token USER`)."""

    list_display = ["name", "user", "created_at", "last_used_at"]
    list_select_related = ["user"]
    search_fields = ["name", "user__username"]
    autocomplete_fields = ["user"]
    readonly_fields = ["key_hash", "created_at", "last_used_at"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "name"]
        return ["user", "name", "key_hash", "created_at", "last_used_at"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a token is issued or deleted, never edited

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        token, key = ApiToken.issue(obj.user, obj.name)
        obj.pk, obj.key_hash, obj.created_at = token.pk, token.key_hash, token.created_at
        obj._state.adding = False
        self.message_user(
            request,
            format_html(
                "The secret of {} (shown once, copy it now): <code>{}</code>. "
                "Send it as <code>Authorization: Token {}</code>.",
                obj,
                key,
                key,
            ),
            messages.WARNING,
        )


class DeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    fields = ["id", "event", "state", "attempts", "response_status", "error", "created_at"]
    readonly_fields = fields
    ordering = ["-id"]
    extra = 0
    max_num = 0  # none added here
    can_delete = False
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).defer("payload")


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """Addresses told about new matches, decisions and finished uploads (docs/api.md says
    how a receiver checks the signature); their latest deliveries below."""

    list_display = ["url", "active", "on_match", "min_similarity", "on_decision", "on_upload"]
    list_filter = ["active"]
    fields = [
        "url",
        "secret",
        "active",
        "on_match",
        "min_similarity",
        "on_decision",
        "on_upload",
        "match_cursor",
        "decision_cursor",
        "created_at",
    ]
    readonly_fields = ["match_cursor", "decision_cursor", "created_at"]
    inlines = [DeliveryInline]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "url":
            kwargs["assume_scheme"] = "https"  # an address typed without one
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request, obj: Webhook, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
        else:
            services.webhook_start(webhook=obj)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """Each event sent to a webhook, with its receiver's last answer; select some to send
    them again."""

    list_display = [
        "id", "webhook", "event", "state", "attempts", "response_status", "created_at", "sent_at"
    ]  # fmt: skip
    list_filter = ["state", "event", "webhook"]
    list_select_related = ["webhook"]
    fields = [
        "webhook",
        "event",
        "state",
        "attempts",
        "response_status",
        "response_body",
        "error",
        "payload",
        "created_at",
        "sent_at",
    ]
    readonly_fields = fields
    actions = ["resend"]

    @admin.action(description=_("Send again"))
    def resend(self, request, queryset) -> None:
        count = services.deliveries_resend(delivery_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, _("%(count)d deliveries queued again.") % {"count": count})
