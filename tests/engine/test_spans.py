"""Passages found again in the text as written: one span per passage, each normalising to it."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dedup.engine.spans import passage_spans, shown_text
from dedup.engine.text import fold_traditional, normalise
from dedup.engine.verify import Detector
from tests.texts import ARTICLE, FILLER, OTHER, PAGE

SEPARATORS = str.maketrans("", "", ", \n")


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def kept(text: str) -> str:
    return text.translate(SEPARATORS)


def check(detector: Detector, text: str, shown: str | None = None) -> list[str]:
    """Check the spans of a text against its passages; return the spans' text."""
    passages = detector.passages(text)
    spans = passage_spans(detector, text, shown)
    shown = shown_text(detector.config, text) if shown is None else shown
    assert len(spans) == len(passages)
    end = 0
    for start, stop in spans:
        assert end <= start <= stop <= len(shown)
        end = stop
    config = detector.config.replace(strip_html=False)
    for n, ((start, stop), passage) in enumerate(zip(spans, passages, strict=True)):
        written = normalise(shown[start:stop], config)
        # A text of Traditional characters is converted phrase by phrase as a whole, one
        # with a few of them character by character: a span alone may go the other way.
        assert fold_traditional(kept(written)) == fold_traditional(kept(passage)), (
            f"passage {n}: {shown[start:stop]!r} normalises to {written!r}, not {passage!r}"
        )
    return [shown[start:stop] for start, stop in spans]


SIMPLIFIED = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
TRADITIONAL = "國會經濟發展問題與時間體係學習東車馬鳥門長開關對著乾隆這個們說話"
WORDS = st.sampled_from(
    ["Hello", "world", "the", "report", "v2", "3.14", "ＡＢＣ", "ｉＰｈｏｎｅ", "１２３", "café"]
)
MARKS = st.sampled_from(
    ["。", "，", "！", "？", "；", ". ", ".", ", ", "!", "“", "”", "「", "」", "(", ")", "《", "…"]
)
SPACE = st.sampled_from([" ", "\n", "\n\n", "\u3000", "\t", "\r\n"])
MARKUP = st.sampled_from(
    [
        "<p>",
        "</p>",
        "<br>",
        "<b>",
        "</b>",
        "<div class='nav'>",
        "</div>",
        "<script>var x = '不算';</script>",
        "<!-- 注释 -->",
        "&amp;",
        "&lt;",
        "&nbsp;",
        "&#20013;",
    ]
)
PIECE = st.one_of(
    st.text(alphabet=SIMPLIFIED, min_size=1, max_size=30),
    st.text(alphabet=TRADITIONAL, min_size=1, max_size=30),
    WORDS,
    MARKS,
    SPACE,
    MARKUP,
    st.text(max_size=3),  # anything at all, now and then
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECE, max_size=40))
@example(
    ["<p>", "第一段讲的是北京的天气", "。", "</p>", "<p>", "第二段讲公园里的人们在散步", "</p>"]
)
@example(["e\u0301", "te\u0301", SIMPLIFIED, "。", SIMPLIFIED])
@example(["ｶﾞ", SIMPLIFIED, "\n", "\u1100\u1161", SIMPLIFIED])  # folds that join two characters
def test_every_passage_has_a_span_that_normalises_to_it(detector, pieces):
    text = "".join(pieces)
    check(detector, text)
    # In the text with its whitespace changed (as a page shows it), the same passages.
    shown = shown_text(detector.config, text)
    check(detector, text, " ".join(shown.split()))


def test_spans_show_passages_as_written(detector):
    text = (
        "<p>“今天北京的天气很好，我们去公园散步吧！”</p>"
        "<p>ＡＢＣ公司发布了新款ｉＰｈｏｎｅ手机，售价１２３元。</p>"
    )
    assert check(detector, text) == [
        "“今天北京的天气很好，我们去公园散步吧！”",
        "ＡＢＣ公司发布了新款ｉＰｈｏｎｅ手机，售价１２３元。",
    ]


@pytest.mark.parametrize("text", [ARTICLE, PAGE, OTHER + FILLER, "短文。", ""])
def test_real_texts_have_a_span_per_passage(detector, text):
    check(detector, text)


def test_traditional_copy_is_found_in_its_own_characters(detector):
    import opencc

    traditional = opencc.OpenCC("s2t").convert(ARTICLE)
    spans = check(detector, traditional)
    assert spans[0].startswith("新華社北京") and spans[-1].endswith("全面進步。")


def test_english_sentences(detector):
    text = (
        "The quick brown fox jumps over the lazy dog near the river bank. "
        "Version 3.14 of the tool was released today with many fixes!\n"
        "Thanks to everyone who helped."
    )
    for span in check(detector, text):
        assert span == span.strip() and span[0].isupper()
