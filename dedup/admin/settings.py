"""The settings an admin tunes (saved through services.settings_update) and the rebuilds
they start."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from dedup import services
from dedup.admin.base import ReadOnlyAdmin
from dedup.engine.config import ConfigError
from dedup.engine.plan import PlanError
from dedup.models import (
    RebuildJob,
    RebuildState,
    Settings,
)
from dedup.services.rebuilds import superseded


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
            self.add_error(
                "threshold",
                _("at most the largest distance indexed (%(k_max)s)") % {"k_max": probe.k_max},
            )
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
                ],
                "description": _(
                    "Near and partial bars apply at the next request to the matches shown "
                    "(queue, API, exports); raising one and lowering it back gives back the "
                    "same matches. A bar lowered under the one matches were verified at finds "
                    "more only in articles processed from now on: run manage.py rebuild to "
                    "judge the older ones again. Changing the largest distance indexed starts "
                    "a rebuild."
                ),
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
        job = services.settings_update(user=request.user, **fields)
        obj.pk = Settings.load().pk
        obj.refresh_from_db()  # as the service saved it
        if job is not None:
            url = reverse("admin:dedup_rebuildjob_change", args=[job.pk])
            self.message_user(
                request,
                format_html(
                    _(
                        "Fingerprints change with these settings: <a href='{url}'>rebuild {id}</a>"
                        " has started; matches come from version {version} until it ends."
                    ),
                    url=url,
                    id=job.pk,
                    version=obj.active_version or "-",
                ),
                messages.WARNING,
            )


@admin.register(RebuildJob)
class RebuildJobAdmin(ReadOnlyAdmin):
    """Rebuilds start when fingerprint settings change, or with `manage.py rebuild`."""

    list_display = ["id", "version", "state", "progress", "started_at", "finished_at"]
    list_filter = ["state"]
    fields = ["version", "state", "progress", "started_at", "finished_at", "message_shown"]
    readonly_fields = fields

    @admin.display(description=_("message"))
    def message_shown(self, obj: RebuildJob) -> str:
        """The job's message (stored in English, as logs and the API read it) in the reader's
        language where it is one the rebuilds write."""
        version = obj.message.removeprefix(superseded(""))
        if version != obj.message:
            return _("superseded: the index version is now %(version)s") % {"version": version}
        return obj.message or "-"

    @admin.display(description=_("progress"))
    def progress(self, obj: RebuildJob) -> str:
        share = (
            obj.done / obj.total if obj.total else (1.0 if obj.state == RebuildState.DONE else 0.0)
        )
        return format_html(
            "<progress max='1' value='{}'></progress> {} / {} ({}%)",
            f"{share:.3f}",
            obj.done,
            obj.total,
            f"{100 * share:.0f}",
        )
