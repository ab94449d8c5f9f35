"""Where a page's live updates start: the cursors at drawing time and the poll interval."""

from __future__ import annotations

from django import template

from webui import live

register = template.Library()


@register.simple_tag
def live_match_cursor() -> int:
    return live.match_cursor()


@register.simple_tag
def live_decision_cursor() -> int:
    return live.decision_cursor()


@register.simple_tag
def live_poll_ms() -> int:
    return live.poll_ms()
