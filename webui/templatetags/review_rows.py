"""Tags of the review queue: its cluster rows and its histograms, each drawn in one pass.

The queue drew 25 rows of a few dozen template nodes each, and two charts of ten bars: at
about ten microseconds a node, two thirds of the page's time. The markup is the one the loop
of _queue_results.html and _histogram.html drew, byte for byte: values localized and escaped
as a template does (render_value_in_context), dates in the current time zone, the same
messages.
"""

from __future__ import annotations

import unicodedata

from django import template
from django.conf import settings
from django.template.base import render_value_in_context
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext, pgettext

register = template.Library()


class _Drawing:
    """What drawing rows needs once per page: the context's way with values, the messages."""

    def __init__(self, context) -> None:
        self.context = context
        self.grouped = settings.USE_THOUSAND_SEPARATOR
        # Truncator's own default suffix, looked up once, not twice per title.
        self.ellipsis = pgettext("String to return when truncating text", "%(truncated_text)s…")
        self.suffix = self.ellipsis % {"truncated_text": ""}
        self.characters = gettext("%(n)s characters")
        self.untitled = gettext("Article %(id)s")

    def value(self, value) -> str:
        """As `{{ value }}`: localized, escaped; a whole number without grouping as it is."""
        if type(value) is int and not self.grouped:
            return str(value)
        return render_value_in_context(value, self.context)

    def cut(self, value, length: int) -> str:
        """As `value|truncatechars:length`: cut (a text that fits is only normalized), then
        escaped."""
        text = str(value)
        if len(text) <= length:  # combining characters count for nothing: it fits
            return conditional_escape(unicodedata.normalize("NFC", text))
        cut = Truncator(text).chars(length, truncate=self.ellipsis)
        # A text cut just after an ellipsis of its own (the demo's titles: "…（摘录）") gets
        # one, not two ("肯…...": Django's Chinese suffix is "...").
        kept = cut[: len(cut) - len(self.suffix)]
        if kept.endswith(("…", ".")):
            cut = self.ellipsis % {"truncated_text": kept.rstrip("….")}
        return conditional_escape(cut)


def _day(value) -> str:
    """As `value|date:"Y-m-d"`: the day in the current time zone; nothing for no date."""
    if value in (None, ""):
        return ""
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _title(row: dict, draw: _Drawing) -> str:
    original = row["original"]
    if original is not None and original.title:
        return draw.value(original.title)
    if original is not None and original.head:
        return f'<span class="untitled">{draw.cut(original.head, 48)}</span>'
    return draw.untitled % {"id": draw.value(row["original_id"])}


def _meta(row: dict, draw: _Drawing, also: str) -> str:
    """The line under a row's title: source, day, length, then the other members shown."""
    original = row["original"]
    source = original.source if original is not None else ""
    length = draw.value(original.length) if original is not None else ""
    meta = (
        (f"{draw.value(source)} · " if source else "")
        + _day(original.dated_at if original is not None else None)
        + " · "
        + draw.characters % {"n": length}
        + "\n          "
    )
    if row["others"]:
        names = [
            draw.cut(other.title, 28)
            if other.title
            else f"#{draw.value(other.id)} {draw.cut(other.head, 16)}"
            for other in row["others"]
        ]
        meta += f" · {also}: " + ", ".join(names)
    return meta


def _state(row: dict, draw: _Drawing, reviewed: str) -> str:
    if row["waiting"]:
        waiting = ngettext("%(n)s pair waiting", "%(n)s pairs waiting", row["waiting"]) % {
            "n": draw.value(row["waiting"])
        }
        return f'<span class="badge waiting">{waiting}</span>\n        '
    return f'<span class="badge done">{reviewed}</span>'


@register.simple_tag(takes_context=True)
def cluster_rows(context, rows: list[dict], query: str) -> SafeString:
    """Draw the queue's rows (webui.queue_page.queue_rows), each a link to its cluster."""
    draw = _Drawing(context)
    size_title = conditional_escape(gettext("articles in the cluster"))
    also = conditional_escape(gettext("also"))
    reviewed = conditional_escape(gettext("reviewed"))
    query = draw.value(query)
    drawn = []
    for row in rows:
        link = conditional_escape(reverse("webui:cluster", args=[row["original_id"]]))
        drawn.append(
            '\n  <li class="cluster-row" data-row>\n'
            f'    <a class="cluster-link" href="{link}?{query}">\n'
            f'      <span class="size" title="{size_title}">{draw.value(row["size"])}</span>\n'
            '      <span class="main">\n'
            f'        <span class="title">{_title(row, draw)}</span>\n'
            '        <span class="meta muted">\n'
            f"          {_meta(row, draw, also)}\n"
            "        </span>\n"
            "      </span>\n"
            '      <span class="state">\n'
            f"        {_state(row, draw, reviewed)}\n"
            "      </span>\n"
            "    </a>\n"
            "  </li>\n  "
        )
    return mark_safe("".join(drawn))


@register.simple_tag(takes_context=True)
def histogram(context, chart: dict, title: str) -> SafeString:
    """Draw a histogram (webui.queue_page.histogram_bars) as an inline SVG."""

    def value(v) -> str:
        return render_value_in_context(v, context)

    height = chart["height"]
    label_y = value(height + 13)
    bars = "".join(
        f'<g class="{"in" if bar["shown"] else "out"}">'
        f"<title>{value(bar['label'])}: {value(bar['count'])}</title>"
        f'<rect x="{value(bar["x"])}" y="{value(bar["y"])}" width="{value(bar["w"])}" '
        f'height="{value(bar["h"])}" rx="2"></rect>'
        f'<text x="{value(bar["lx"])}" y="{label_y}" text-anchor="middle">'
        f"{value(bar['label'])}</text></g>"
        for bar in chart["bars"]
    )
    width, cut = value(chart["width"]), value(chart["cut_x"])
    return mark_safe(
        f'<svg class="histogram" viewBox="0 -2 {width} {value(height + 16)}" width="{width}" '
        f'height="{value(height + 18)}" role="img" aria-label="{value(title)}">\n'
        f"  {bars}\n"
        f'  <line class="cut" x1="{cut}" x2="{cut}" y1="0" y2="{value(height)}"></line>\n'
        "</svg>\n"
    )
