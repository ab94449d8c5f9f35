"""Filters of the sources pages."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

register = template.Library()


@register.filter
def lag(seconds: float) -> str:
    """A lag as people say it: minutes under two hours, hours under two days, then days."""
    if seconds < 2 * 3600:
        return _("%(n)s min") % {"n": round(seconds / 60)}
    if seconds < 2 * 86400:
        return _("%(n)s h") % {"n": round(seconds / 3600, 1)}
    return _("%(n)s d") % {"n": round(seconds / 86400, 1)}
