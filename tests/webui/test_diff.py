"""Word-level differences: Chinese words, folded unchanged stretches, escaping left to templates."""

from __future__ import annotations

from django.template.loader import render_to_string

from webui import diff
from webui.diff import text_diff


def joined(segments) -> str:
    return "".join(s.text for s in segments)


def test_chinese_changes_are_whole_words():
    old, new = "今天北京的天气很好，我们去公园散步。", "今天上海的天气很好，我们去公园跑步。"
    found = text_diff(old, new)
    assert [s.text for s in found.left if s.op == "del"] == ["北京", "散步"]
    assert [s.text for s in found.right if s.op == "ins"] == ["上海", "跑步"]


def test_columns_join_back_into_the_texts():
    old = "第一句话。第二句话没有变化。第三句被删掉了。"
    new = "第一句话。第二句话没有变化。新加的一句。"
    found = text_diff(old, new)
    assert joined(found.left) == old and joined(found.right) == new


def test_identical_texts_have_no_changes():
    found = text_diff("一模一样的文字。", "一模一样的文字。")
    assert found.changed == 0
    assert {s.op for s in found.left} == {"eq"}


def test_long_unchanged_stretch_is_folded_with_ends_in_view():
    middle = "人民日报记者报道说经济发展稳定。" * 30
    found = text_diff("开头不同。" + middle + "结尾甲。", "开头有变。" + middle + "结尾乙。")
    folds = [s for s in found.left if s.op == "fold"]
    assert len(folds) == 1 and folds[0].words > diff.FOLD_OVER - 2 * diff.FOLD_KEEP
    assert joined(found.left) == "开头不同。" + middle + "结尾甲。"


def test_long_texts_are_compared_up_to_a_cap(monkeypatch):
    monkeypatch.setattr(diff, "MAX_TOKENS", 10)
    text = "一 二 三 四 五 六 七 八 九 十 十一 十二"
    found = text_diff(text, text)
    assert found.truncated
    assert found.left[-1].op == "rest"


def test_rendered_segments_escape_markup():
    found = text_diff("正文<script>alert(1)</script>", "正文<b>粗体</b>")
    html = render_to_string("webui/review/_segments.html", {"segments": found.left})
    assert "<script" not in html and "&lt;/" in html
    assert '<mark class="del">script</mark>' in html
