"""The segments tag draws a diff's segments as _segments.html's loop did, in one pass: text
escaped, folded and set-aside stretches labelled in the reader's language, changes marked."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.utils import translation

from webui.diff import Segment

SEGMENTS = [
    Segment("eq", "相同<b>"),
    Segment("del", "删去&"),
    Segment("ins", "加上\"'"),
    Segment("fold", "未变的文字", words=1),
    Segment("fold", "未变的文字", words=12),
    Segment("aside", "页脚", owners=1),
    Segment("aside", "页脚", owners=7),
    Segment("aside", "菜单", owners=300),
]
EXPECTED = {
    "en": (
        "相同&lt;b&gt;"
        '<mark class="del">删去&amp;</mark>'
        '<mark class="ins">加上&quot;&#x27;</mark>'
        '<details class="fold"><summary>… 1 word unchanged …</summary>未变的文字</details>'
        '<details class="fold"><summary>… 12 words unchanged …</summary>未变的文字</details>'
        '<details class="fold aside"><summary>template text (held by 1 unrelated article)</summary>'
        "页脚</details>"
        '<details class="fold aside"><summary>template text (held by 7 unrelated articles)'
        "</summary>页脚</details>"
        '<details class="fold aside"><summary>'
        "template text (held by 300 or more unrelated articles)</summary>菜单</details>"
    ),
    "zh-hans": (
        "相同&lt;b&gt;"
        '<mark class="del">删去&amp;</mark>'
        '<mark class="ins">加上&quot;&#x27;</mark>'
        '<details class="fold"><summary>…… 1 个词未变 ……</summary>未变的文字</details>'
        '<details class="fold"><summary>…… 12 个词未变 ……</summary>未变的文字</details>'
        '<details class="fold aside"><summary>模板文字（1 篇无关文章共有）</summary>页脚</details>'
        '<details class="fold aside"><summary>模板文字（7 篇无关文章共有）</summary>页脚</details>'
        '<details class="fold aside"><summary>模板文字（300 篇或更多无关文章共有）</summary>'
        "菜单</details>"
    ),
}


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_segments_are_drawn_escaped_and_labelled(language):
    template = Template("{% load segments %}{% segments shown %}")
    with translation.override(language):
        html = template.render(Context({"shown": SEGMENTS, "owners_counted": 256}))
    assert html == EXPECTED[language]


def test_boilerplate_cap_follows_the_page():
    """A stretch held by the page's cap or more is labelled "or more"."""
    template = Template("{% load segments %}{% segments shown %}")
    with translation.override("en"):
        html = template.render(Context({"shown": SEGMENTS[6:7], "owners_counted": 7}))
    assert "held by 7 or more unrelated articles" in html
