"""Tags of the review pages: a diff's segments (webui.diff.Segment) drawn in one pass.

A compare page draws hundreds of segments, each a few template nodes in a loop; at about ten
microseconds a node that was a quarter of the page's time. The markup is the one
_segments.html drew, the text escaped as autoescape does, the labels the same messages.
"""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, ngettext

from dedup.index.boilerplate import OWNERS_COUNTED

register = template.Library()


def boilerplate_label(owners: int, counted: int = OWNERS_COUNTED) -> str:
    """Return how a stretch of template text is labelled: the unrelated articles that hold it
    (webui.evidence: not copies of the two articles compared, nor of one another)."""
    if owners >= counted:
        return gettext("template text (held by %(owners)s or more unrelated articles)") % {
            "owners": owners
        }
    return ngettext(
        "template text (held by %(n)s unrelated article)",
        "template text (held by %(n)s unrelated articles)",
        owners,
    ) % {"n": owners}


def _segment(op: str, text: str, words: int, owners: int, counted: int) -> str:
    if op == "eq":
        return text
    if op == "fold":
        label = ngettext("… %(n)s word unchanged …", "… %(n)s words unchanged …", words) % {
            "n": words
        }
        return f'<details class="fold"><summary>{label}</summary>{text}</details>'
    if op == "aside":
        label = boilerplate_label(owners, counted)
        return f'<details class="fold aside"><summary>{label}</summary>{text}</details>'
    return f'<mark class="{escape(op)}">{text}</mark>'


@register.simple_tag(takes_context=True)
def segments(context, shown) -> SafeString:
    """Draw segments: unchanged text as it is, folded and set-aside text in a <details>
    with its label, changes marked with their op (del, ins)."""
    counted = context.get("owners_counted", OWNERS_COUNTED)
    # Each text is escaped; the labels are the project's own messages.
    drawn = (
        _segment(seg.op, conditional_escape(seg.text), seg.words, seg.owners, counted)
        for seg in shown
    )
    return mark_safe("".join(drawn))
