"""API tokens (the secret shown once), webhooks and their deliveries."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from dedup import services
from dedup.admin.base import AuditedAdmin, ReadOnlyAdmin
from dedup.models import (
    ApiToken,
    Webhook,
    WebhookDelivery,
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

    def delete_model(self, request, obj: ApiToken) -> None:
        services.tokens_revoke(token_ids=[obj.pk], user=request.user)

    def delete_queryset(self, request, queryset) -> None:
        services.tokens_revoke(
            token_ids=list(queryset.values_list("id", flat=True)), user=request.user
        )

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        token, key = services.token_issue(owner=obj.user, name=obj.name, user=request.user)
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


def _public_url(url: str) -> None:
    """Refuse an address a webhook may not point at: not http(s), or not public."""
    try:
        services.webhook_url_check(url)
    except services.WebhookUrlRefused as exc:
        raise ValidationError(str(exc)) from None


@admin.register(Webhook)
class WebhookAdmin(AuditedAdmin):
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
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "url":
            field.validators.append(_public_url)
        return field

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
