"""Normalisation: reposts in another dress (width, case, markup, script, punctuation, wrapping)
normalise to the text of their original."""

import html
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.engine import Config, normalise
from dedup.engine import text as text_module
from dedup.engine.text import fold_traditional, strip_html

DEFAULT = Config()


def separators_collapsed(text: str) -> str:
    """Return normalised text with every run of separators (commas, whitespace) as one comma."""
    return re.sub(r"[,\s]+", ",", text)


# --- each normalisation under the default configuration ----------------------------------------

WIDTH = [
    ("ＡＢＣ１２３", "abc123"),
    ("ＡＢＣ\u3000１２３", "abc 123"),  # ideographic space is a plain space
    ("２０２４年１２月３１日", "2024年12月31日"),
    ("ｉＰｈｏｎｅ　１５发布", "iphone 15发布"),
    ("ﬁnance", "finance"),  # compatibility ligature
    ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana
    ("①号楼", "1号楼"),
]

CASE = [
    ("Hello World", "hello world"),
    ("NBA球星", "nba球星"),
    ("ＷＴＯ规则", "wto规则"),
    ("Straße", "strasse"),
    ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
]

HTML = [
    ("<p>新华社</p><p>北京电</p>", "新华社\n\n北京电"),
    ("<div>新闻<b>正文</b></div>", "新闻正文"),
    ("<b>Hello</b> <i>World</i>", "hello world"),
    ("<script>var a = 1;</script><p>正文</p>", "正文"),
    ("<style>p { color: red }</style><p>正文</p>", "正文"),
    ("<!-- 广告位 --><p>正文</p>", "正文"),
    ("<p>&#x4e2d;&#22269;</p>", "中国"),
    ("<p>&nbsp;正文&nbsp;</p>", "正文"),
    ("AT&amp;T", "at,t"),
    ("hello<br>world", "hello\nworld"),
    ("<li>apple</li><li>banana</li>", "apple\n\nbanana"),
    ("<!DOCTYPE html><html><body><p>正文</p></body></html>", "正文"),
]

TRADITIONAL = [
    ("這個軟體的資訊", "这个软体的资讯"),
    ("髮", "发"),
    ("頭髮和發展", "头发和发展"),
    ("乾燥的後院裡", "干燥的后院里"),
    ("臺灣", "台湾"),
]

WHITESPACE = [
    ("中 国", "中国"),
    ("中\u3000国", "中国"),
    ("中\t国", "中国"),
    ("新华社北京\n一月一日电", "新华社北京一月一日电"),  # a wrapped line joins
    ("新华社北京 \r\n  一月一日电", "新华社北京一月一日电"),
    ("第一段\n\n第二段", "第一段\n\n第二段"),  # a blank line is a paragraph break: kept
    ("hello world", "hello world"),
    ("Deep Learning 与 人工智能", "deep learning 与人工智能"),
    ("iPhone 15 发布", "iphone 15 发布"),
    ("  \n中国\n  ", "中国"),
]


@pytest.mark.parametrize(("text", "expected"), WIDTH)
def test_full_width_folds_to_half_width(text, expected):
    assert normalise(text, DEFAULT) == expected


@pytest.mark.parametrize(("text", "expected"), CASE)
def test_case_folds_to_lower(text, expected):
    assert normalise(text, DEFAULT) == expected


@pytest.mark.parametrize(("text", "expected"), HTML)
def test_html_normalises_to_its_text(text, expected):
    assert normalise(text, DEFAULT) == expected


@pytest.mark.parametrize(("text", "expected"), TRADITIONAL)
def test_traditional_folds_to_simplified(text, expected):
    assert normalise(text, DEFAULT) == expected


@pytest.mark.parametrize(("text", "expected"), WHITESPACE)
def test_whitespace_between_chinese_goes_and_between_words_stays(text, expected):
    assert normalise(text, DEFAULT) == expected


@pytest.mark.parametrize(
    "variants",
    [
        [
            "他说：“你好！”然后走了……",
            '他说:"你好!"然后走了...',
            "他说：「你好！」然后走了…",
            "他说——你好；然后走了。",
            "他说, 你好, 然后走了",
        ],
        ["Hello, world!", "Hello，world！", "Hello... world?", "Hello - world…"],
        ["价格（含税）：５９９９元", "价格(含税):5999元", "价格【含税】5999元"],
    ],
)
def test_punctuation_variants_normalise_alike_up_to_separators(variants):
    normalised = {separators_collapsed(normalise(text, DEFAULT)) for text in variants}
    assert len(normalised) == 1, normalised


@pytest.mark.parametrize("text", ["然后走了…", "然后走了……", "然后走了...", "然后走了。"])
def test_trailing_ellipsis_or_full_stop_leaves_no_separator(text):
    assert normalise(text, DEFAULT) == "然后走了"


def test_plain_text_with_angle_brackets_is_not_markup():
    assert normalise("x<y and z>w", DEFAULT) == "x,y and z,w"


def test_plain_text_comparison_with_tag_like_letter_keeps_its_words():
    # "<b and c>" looks like a <b> tag with attributes, but it is plain text.
    assert normalise("a<b and c>d", DEFAULT) == "a,b and c,d"


def test_script_is_dropped_from_page_without_other_markup():
    assert normalise("<script>var a = 1;</script>正文", DEFAULT) == "正文"


@pytest.mark.parametrize(
    "text", ["café au lait", "Zhōngguó Běijīng", "Ça va très bien", "Ångström"]
)
def test_decomposed_accents_normalise_like_precomposed(text):
    decomposed = unicodedata.normalize("NFD", text)
    assert decomposed != unicodedata.normalize("NFC", text)
    assert normalise(decomposed, DEFAULT) == normalise(text, DEFAULT)


# --- each switch turns its normalisation off ----------------------------------------------------

SWITCHES = [
    # field, text, normalised with every switch on, normalised with this one off
    ("nfkc", "ＡＢＣ１２３", "abc123", "ａｂｃ１２３"),
    ("nfkc", "ｶﾀｶﾅ", "カタカナ", "ｶﾀｶﾅ"),
    ("casefold", "Hello ＷＯＲＬＤ", "hello world", "Hello WORLD"),
    ("fold_traditional", "這個軟體的資訊", "这个软体的资讯", "這個軟體的資訊"),
    ("strip_html", "<b>中国</b>", "中国", "b,中国,,b"),
    ("strip_html", "AT&amp;T", "at,t", "at,amp,t"),
    ("fold_punctuation", "你好，世界！", "你好,世界", "你好,世界!"),
    ("fold_punctuation", "中 国", "中国", "中 国"),
    (
        "fold_punctuation",
        "新华社北京\n一月一日电",
        "新华社北京一月一日电",
        "新华社北京\n一月一日电",
    ),
    ("fold_punctuation", "然后走了…", "然后走了", "然后走了..."),
]


@pytest.mark.parametrize(("field", "text", "on", "off"), SWITCHES)
def test_switch_off_leaves_its_normalisation_out(field, text, on, off):
    assert normalise(text, DEFAULT) == on
    assert normalise(text, DEFAULT.replace(**{field: False})) == off


def test_all_switches_off_leave_text_unchanged():
    bare = Config(
        strip_html=False, nfkc=False, casefold=False, fold_traditional=False, fold_punctuation=False
    )
    text = "<p>這個 ＡＢＣ，Hello！</p>\n"
    assert normalise(text, bare) == text


# --- the building blocks ------------------------------------------------------------------------

STRIP_HTML = [
    ("<p>第一段</p><p>第二段</p>", "\n第一段\n\n第二段\n"),
    ('<P CLASS="lead">正文</P>', "\n正文\n"),
    ('<div>新闻<span class="hl">正文</span></div>', "\n新闻正文\n"),
    (
        '<script type="text/javascript">document.write("<p>广告</p>");</script><p>正文</p>',
        " \n正文\n",
    ),
    ("<style>\np { color: red }\n</style><p>正文</p>", " \n正文\n"),
    ("<!-- <p>旧版</p> --><p>正文</p>", " \n正文\n"),
    ("&amp;&lt;&gt;&quot;", '&<>"'),
    ("&#x4e2d;&#22269;", "中国"),
    ("&lt;p&gt;正文&lt;/p&gt;", "<p>正文</p>"),  # escaped markup is text, not markup
    ("第一行<br/>第二行", "第一行\n第二行"),
]


@pytest.mark.parametrize(("text", "expected"), STRIP_HTML)
def test_strip_html_keeps_text_and_drops_markup(text, expected):
    assert strip_html(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "x<y and z>w",
        "1 < 2 > 0",
        "a<b and c>d",
        "AT&T 与 P&G",
        "新华社北京１月１日电",
    ],
)
def test_strip_html_leaves_plain_text_alone(text):
    assert strip_html(text) == text


@pytest.mark.parametrize(("text", "expected"), TRADITIONAL)
def test_fold_traditional_maps_each_character(text, expected):
    assert fold_traditional(text) == expected


@pytest.mark.parametrize("text", ["这个软件的信息", "头发和发展", "Hello, 世界 123"])
def test_fold_traditional_leaves_simplified_and_latin_alone(text):
    assert fold_traditional(text) == text


@pytest.mark.parametrize(
    ("traditional", "simplified"),
    [
        ("我們瞭解情況", "我们了解情况"),
        ("反覆討論", "反复讨论"),
        ("項鍊", "项链"),
    ],
)
def test_traditional_phrases_fold_like_opencc_t2s(traditional, simplified):
    # opencc.OpenCC("s2t") writes these for the simplified phrases: a Traditional repost has them.
    assert fold_traditional(traditional) == simplified


# --- properties ---------------------------------------------------------------------------------

MIXED = st.lists(
    st.sampled_from(
        [
            *"中国人民新闻發展 \n\t\u3000\r，。、…ab<>/&;",
            "<p>",
            "</p>",
            "&amp;",
            "<br>",
            "ＡＢ",
            "\n\n",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(MIXED)
def test_normalising_twice_changes_nothing_more(text):
    once = normalise(text, DEFAULT)
    assert normalise(once, DEFAULT) == once


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="中国人民日报新闻记者", min_size=1, max_size=20), st.data())
def test_whitespace_inside_chinese_never_survives(text, data):
    gaps = data.draw(
        st.lists(st.sampled_from([" ", "\n", "\u3000", "\t", "\r\n", " \n "]), min_size=len(text))
    )
    spaced = "".join(char + gap for char, gap in zip(text, gaps, strict=False))
    assert normalise(spaced, DEFAULT) == text


# --- the fast paths give what the plain steps give -----------------------------------------------

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Whitespace between Chinese characters, for any whitespace (as before folding, and in the spec).
ANY_CJK_GAP = re.compile(
    rf"(?:[^\S\n](?<=[{CJK}][^\S\n])[^\S\n]*\n?|\n(?<=[{CJK}]\n))[^\S\n]*(?=[{CJK}])"
)


def reference_normalise(text: str, config: Config) -> str:
    """Normalise step by step, character by character: slow, plain and without shortcuts."""
    table = text_module._fold_table(
        config.nfkc, config.casefold, config.fold_traditional, config.fold_punctuation
    )
    size = text_module._TABLE_SIZE

    def fold(text: str) -> str:
        traditional = sum(char in text_module._t2s_table() for char in text)
        if config.fold_traditional and traditional >= 2 and traditional * 100 >= len(text):
            text = fold_traditional(text)
        return "".join(
            chr(table[ord(char)] & text_module._CODE) if ord(char) < size else char for char in text
        )

    if config.strip_html:
        text = strip_html(text)
    text = fold(text)
    if config.nfkc:
        text = fold(unicodedata.normalize("NFKC", text))
    if config.casefold:
        text = text.casefold()
    if config.fold_punctuation:
        text = ANY_CJK_GAP.sub("", text).strip(" \n,")
    return text


TRICKY = st.lists(
    st.sampled_from(
        [
            *"中国人民發展這個軟體乾燥臺灣著 \n\t\u3000\r，。ab<>&;ABZ",
            *"ßẞİΣσςŉǰΐﬁﬀﬆ\u0345\u0301\u00a8\ufdfa\u2160①ＡＢｶﾀ\U0001d400\U00020000😀\U00030000",
            "<p>",
            "</p>",
            "&amp;",
            "\n\n",
            "Straße",
        ]
    ),
    max_size=40,
).map("".join)
CONFIGS = [
    DEFAULT,
    DEFAULT.replace(nfkc=False),
    DEFAULT.replace(casefold=False),
    DEFAULT.replace(fold_traditional=False),
]


@settings(max_examples=300, deadline=None)
@given(TRICKY, st.sampled_from(CONFIGS))
def test_normalise_equals_the_plain_steps(text, config):
    assert normalise(text, config) == reference_normalise(text, config)


@pytest.mark.parametrize(
    "text",
    [
        "這個軟體的資訊，頭髮和發展，乾燥的後院裡。" * 3,  # Traditional: phrase-level conversion
        "項鍊",  # two Traditional characters are enough in a short text: 项链, not 项炼
        "STRASSE Straße ﬁnance İstanbul ΣΊΣΥΦΟΣ",  # folds longer than one character
        "中国\U00030000人民 \U0001d400BC",  # beyond the table
        "新华社北京\n一月一日电\n\n第二段 第三段",
        "",
    ],
)
def test_normalise_equals_the_plain_steps_on_examples(text):
    for config in CONFIGS:
        assert normalise(text, config) == reference_normalise(text, config)


def test_fold_table_leaves_no_whitespace_but_space_and_line_break():
    # The gap patterns rely on it: folded text has no other whitespace.
    others = [code for code in range(0x110000) if chr(code).isspace() and code not in (10, 32)]
    for config in (DEFAULT, DEFAULT.replace(nfkc=False, casefold=False, fold_traditional=False)):
        table = text_module._fold_table(config.nfkc, config.casefold, config.fold_traditional, True)
        folded = table[: text_module._TABLE_SIZE] & text_module._CODE
        assert not np.isin(folded, others).any()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="中国人民新闻ab1, \n", max_size=40))
def test_gap_patterns_remove_what_the_any_whitespace_pattern_removes(text):
    expected = ANY_CJK_GAP.sub("", text)
    assert text_module._CJK_GAP.sub("", text) == expected
    if " " not in text:
        assert text_module._CJK_LINE_BREAK.sub("", text) == expected


def reference_strip_html(text: str) -> str:
    """strip_html without looking for "<" and "&" first."""
    if not text_module._LOOKS_LIKE_HTML.search(text):
        return html.unescape(text) if text_module._ENTITY.search(text) else text
    text = text_module._DROP_ELEMENTS.sub(" ", text)
    text = text_module._BLOCK_TAG.sub("\n", text)
    return html.unescape(text_module._INLINE_TAG.sub("", text))


@settings(max_examples=300, deadline=None)
@given(MIXED)
def test_strip_html_equals_its_patterns_alone(text):
    assert strip_html(text) == reference_strip_html(text)
