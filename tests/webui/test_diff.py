"""Word-level differences: Chinese words, folded unchanged stretches, escaping left to templates;
a repost in another dress (script, width, case, punctuation) shows no changes; long texts are
compared whole, quickly."""

from __future__ import annotations

import random
import time

import opencc
from django.template.loader import render_to_string
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.corpus import load_peoples_daily
from webui import diff
from webui.diff import matching_blocks, text_diff


def joined(segments) -> str:
    return "".join(s.text for s in segments)


def long_article(length: int, seed: int = 1) -> str:
    """Return People's Daily articles (January 1998) joined, cut to a length."""
    articles = list(load_peoples_daily())
    random.Random(seed).shuffle(articles)
    out, size = [], 0
    for article in articles:
        out.append(article)
        size += len(article) + 2
        if size >= length:
            break
    return "\n\n".join(out)[:length]


ARTICLE_LONG = long_article(3_000)


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


def test_rendered_segments_escape_markup():
    found = text_diff("正文<script>alert(1)</script>", "正文<b>粗体</b>")
    html = render_to_string("webui/review/_segments.html", {"segments": found.left})
    assert "<script" not in html and "&lt;" in html and "&gt;" in html
    assert '<mark class="del">script</mark>' in html


def test_traditional_copy_shows_no_changes():
    simplified = ARTICLE_LONG
    traditional = opencc.OpenCC("s2t").convert(simplified)
    assert traditional != simplified
    found = text_diff(simplified, traditional)
    assert found.changed == 0
    assert joined(found.left) == simplified and joined(found.right) == traditional


def test_width_case_and_punctuation_dress_shows_no_changes():
    old = "ＡＢＣ公司发布了新款ｉＰｈｏｎｅ １５，售价５９９９元。"
    new = "ABC公司发布了新款iPhone 15, 售价5999元."
    found = text_diff(old, new)
    assert found.changed == 0
    assert joined(found.right) == new  # shown as written


def test_whitespace_is_no_change():
    found = text_diff("第一段讲天气。\n\n第二段讲公园。", "第一段讲天气。第二段  讲公园。")
    assert found.changed == 0
    assert {s.op for s in found.left + found.right} == {"eq"}


def test_a_change_at_the_end_of_a_long_article_is_found_quickly():
    # Two articles of 80,000 characters: the last sentence differs, one in the middle went.
    old = long_article(80_000)
    middle = old.index("。", 40_000) + 1
    cut = old.index("。", middle) + 1
    new = old[:middle] + old[cut:-20] + "这是新加上的最后一句话。"
    start = time.perf_counter()
    found = text_diff(old, new)
    seconds = time.perf_counter() - start
    assert "这是新加上的最后一句话" in [s.text for s in found.right if s.op == "ins"][-1]
    assert next(s.text for s in found.left if s.op == "del") == old[middle:cut].strip()
    assert joined(found.left) == old and joined(found.right) == new
    assert seconds < 2.0  # about 0.1 s here; before, the first 6,000 tokens only, in 3 s


def test_two_unrelated_long_articles_compare_quickly():
    old, new = long_article(80_000), long_article(80_000, seed=2)
    start = time.perf_counter()
    found = text_diff(old, new)
    assert time.perf_counter() - start < 3.0  # about 0.15 s here
    assert joined(found.left) == old and joined(found.right) == new


def test_stretches_set_aside_are_folded_and_never_compared():
    footer = "本网站所有内容版权所有，未经许可不得转载。"
    old = "今天北京的天气很好。" + footer
    new = "今天上海的天气很好。"
    at = old.index(footer)
    found = text_diff(old, new, aside=([(at, len(old), 12)], []))
    aside = [s for s in found.left if s.op == "aside"]
    assert [(s.text, s.owners) for s in aside] == [(footer, 12)]
    assert [s.text for s in found.left if s.op == "del"] == ["北京"]
    assert found.changed == 2 and found.aside == 1
    assert joined(found.left) == old


WORDS = st.lists(st.sampled_from(["甲", "乙", "丙", "丁", "。", "\n", " "]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(WORDS, WORDS, st.integers(0, 30))
def test_matching_blocks_are_equal_runs_in_order(a, b, small):
    last_a = last_b = 0
    for i, j, size in matching_blocks(a, b, small):  # small: stretches anchored too
        assert size > 0 and i >= last_a and j >= last_b
        assert a[i : i + size] == b[j : j + size]
        last_a, last_b = i + size, j + size


@settings(max_examples=100, deadline=None)
@given(WORDS, WORDS)
def test_columns_always_join_back(a, b):
    old, new = "".join(a), "".join(b)
    found = text_diff(old, new)
    assert joined(found.left) == old and joined(found.right) == new
    if old == new:
        assert found.changed == 0


def test_identical_texts_are_not_cut_into_words(monkeypatch):
    def refuse(*args):
        raise AssertionError("an identical text was cut into words")

    monkeypatch.setattr(diff, "_side", refuse)
    found = text_diff(ARTICLE_LONG, ARTICLE_LONG)
    assert found == diff.Diff(
        [diff.Segment("eq", ARTICLE_LONG)], [diff.Segment("eq", ARTICLE_LONG)], 0
    )
    assert text_diff("", "") == diff.Diff([], [], 0)


@settings(max_examples=100, deadline=None)
@given(WORDS)
def test_identical_texts_shortcut_is_what_comparing_them_finds(words):
    text = "".join(words)
    compared = diff._compared(text, text, diff.Config().replace(strip_html=False), ((), ()))
    assert text_diff(text, text) == compared


def test_identical_long_article_shortcut_is_what_comparing_it_finds():
    compared = diff._compared(
        ARTICLE_LONG, ARTICLE_LONG, diff.Config().replace(strip_html=False), ((), ())
    )
    assert text_diff(ARTICLE_LONG, ARTICLE_LONG) == compared
