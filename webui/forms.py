"""Forms of the dashboard's own pages: the bulk upload (files, a default source and date)."""

from __future__ import annotations

import datetime
from pathlib import PurePosixPath

from django import forms
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# What dedup.readers can read (a .zip may hold any of the others).
UPLOAD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt", ".html", ".htm", ".zip")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that takes several files and cleans each one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ",".join(UPLOAD_SUFFIXES)}))
        kwargs.setdefault("allow_empty_file", True)  # file_check says which file is empty
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data] if data else []
        if not files:
            raise forms.ValidationError(_("Choose at least one file to upload."), code="required")
        return [self.file_check(super(MultipleFileField, self).clean(f, initial)) for f in files]

    @staticmethod
    def file_check(file):
        """Refuse an empty, too large or unreadable file with a message naming it."""
        name = file.name
        suffix = PurePosixPath(name).suffix.lower()
        if not suffix:
            raise forms.ValidationError(
                _("%(name)s has no extension: name it .jsonl, .csv, .txt, .html or .zip."),
                code="type",
                params={"name": name},
            )
        if suffix not in UPLOAD_SUFFIXES:
            raise forms.ValidationError(
                _("%(name)s: cannot read %(suffix)s files. Upload %(allowed)s."),
                code="type",
                params={"name": name, "suffix": suffix, "allowed": ", ".join(UPLOAD_SUFFIXES)},
            )
        if file.size == 0:
            raise forms.ValidationError(
                _("%(name)s is empty: choose a file that holds articles."),
                code="empty",
                params={"name": name},
            )
        limit = settings.DEDUP_MAX_UPLOAD_BYTES
        if file.size > limit:
            raise forms.ValidationError(
                _("%(name)s is %(size).1f MB, over the limit of %(limit)d MB: split it into "
                  "smaller files."),
                code="too_large",
                params={"name": name, "size": file.size / 2**20, "limit": limit // 2**20},
            )  # fmt: skip
        return file


class UploadForm(forms.Form):
    files = MultipleFileField(label=_("Files"))
    source = forms.CharField(
        label=_("Source"),
        max_length=200,
        required=False,
        help_text=_("given to the articles whose rows name no source"),
    )
    published = forms.DateField(
        label=_("Published"),
        required=False,
        help_text=_("given to the articles whose rows name no publication date"),
    )

    def clean_published(self):
        """Return the day as the start of that day in the site's time zone, or None."""
        day = self.cleaned_data.get("published")
        if day is None:
            return None
        return timezone.make_aware(datetime.datetime.combine(day, datetime.time()))


class AuditFilterForm(forms.Form):
    """The audit page's filters: who, what kind of change, between which days."""

    user = forms.CharField(label=_("User"), required=False, max_length=150)
    kind = forms.ChoiceField(label=_("Action"), required=False)
    since = forms.DateField(label=_("From"), required=False)
    until = forms.DateField(label=_("To"), required=False)
    page = forms.IntegerField(required=False, min_value=1, max_value=100)

    def __init__(self, *args, kinds: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", _("anything")), *kinds]

    def clean(self) -> dict:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError(_("The first day is after the last: swap them."))
        return data
