"""SimHash fingerprints: statuses, configuration versions and the properties reposts rely on."""

import dataclasses
import itertools
import statistics

import opencc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dedup.engine.tokens
from dedup.engine import (
    Config,
    ConfigError,
    Fingerprint,
    Fingerprinter,
    Status,
    distance,
)

SLOW = settings(deadline=None, max_examples=25)

ARTICLE = (
    "新华社北京1月1日电 国家主席江泽民发表1998年新年讲话《迈向充满希望的新世纪》。"
    "他说，1997年是中国发展历史上非常重要的很不平凡的一年。"
    "中国人民决心继承邓小平同志的遗志，继续把建设有中国特色社会主义事业推向前进。"
    "香港回归祖国，实现了中华民族百年的夙愿。国民经济继续保持快速增长，物价涨幅进一步降低。"
)
PARAGRAPH = (
    "今年以来，全省粮食生产再获丰收，农民收入稳步增长。各地加大农业投入，兴修水利设施。"
    "乡镇企业发展势头良好，成为农村经济的重要支柱。科技兴农取得明显成效，良种覆盖率大幅提高。"
    "农村改革不断深化，土地承包关系保持稳定。扶贫攻坚成效显著，贫困人口大幅减少。"
)


# --- degenerate input ---------------------------------------------------------------------------

DEGENERATE = [
    ("", Status.EMPTY),
    ("   \n\t\u3000\r\n", Status.EMPTY),
    ("，。！？……——“”《》", Status.EMPTY),
    ("!!! ... ??? ---", Status.EMPTY),
    ("<p></p><!-- 广告 --><br>", Status.EMPTY),
    ("&nbsp;&nbsp;&nbsp;", Status.EMPTY),
    ("１２３ 456 7.8%", Status.NO_WORDS),
    ("2024-01-01 12:30:45 +08:00", Status.NO_WORDS),
    ("我，你，他，的，了，是，在。", Status.NO_WORDS),
    ("a b c d e", Status.NO_WORDS),
    ("我们 因为 所以 但是 然而 可是", Status.NO_WORDS),
    ("the and of which would", Status.NO_WORDS),
    (bytes(range(256)).decode("latin-1"), Status.BINARY),
    ("\x00\x01\x02" * 50, Status.BINARY),
    ("\ufffd" * 20, Status.BINARY),
    ("中国人民\x00\x00\x00", Status.BINARY),
]


@pytest.mark.parametrize(("text", "status"), DEGENERATE)
def test_degenerate_text_gets_status_and_no_value(fp, text, status):
    result = fp.fingerprint(text)
    assert result.status is status
    assert result.value is None
    assert result.hex is None
    assert result.tokens == 0
    assert result.version == Config().version


def test_article_with_stray_control_code_still_gets_fingerprint(fp):
    assert fp.fingerprint(ARTICLE + "\x07").value == fp.fingerprint(ARTICLE).value


NOT_WORDS = st.text(
    st.one_of(
        st.characters(categories=("Nd", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Zs")),
        st.sampled_from("\n\t\r"),
    ),
    max_size=60,
)


@settings(deadline=None, max_examples=200)
@given(NOT_WORDS)
def test_digits_punctuation_and_whitespace_never_get_a_value(fp, text):
    result = fp.fingerprint(text)
    assert result.value is None
    assert result.status in (Status.EMPTY, Status.NO_WORDS)


def test_stop_word_file_header_words_are_not_stop_words(fp):
    # The data file's comment lines ("# Stop words ... snownlp ... tokens ...") are not words.
    result = fp.fingerprint("snownlp tokens characters dropped words")
    assert result.status is Status.OK


def test_text_with_more_distinct_words_than_recent_slots_gets_fingerprint(monkeypatch, fp):
    monkeypatch.setattr(dedup.engine.tokens, "RECENT_WORDS", 50)
    small = Fingerprinter()
    text = " ".join(f"word{chr(0x4E00 + i)}" for i in range(60))
    assert small.fingerprint(text).value == fp.fingerprint(text).value


# --- a normal article ---------------------------------------------------------------------------


def test_chinese_article_gets_ok_fingerprint(fp):
    result = fp.fingerprint(ARTICLE)
    assert result.status is Status.OK
    assert isinstance(result.value, int)
    assert 0 <= result.value < 2**64
    assert len(result.hex) == 16
    assert int(result.hex, 16) == result.value
    assert result.tokens > 10
    assert result.version == Config().version


def test_token_count_counts_usable_tokens_with_repeats(fp):
    once = fp.fingerprint("经济发展")
    assert once.tokens == 2
    assert fp.fingerprint("经济发展，经济发展，经济发展").tokens == 6


def test_hex_is_zero_padded_lowercase():
    assert Fingerprint(0xAB, Status.OK, 1, "v").hex == "00000000000000ab"


def test_reference_article_fingerprint_is_pinned_for_this_version(fp):
    # If this changes on purpose, bump ALGORITHM in dedup/engine/config.py and update both.
    result = fp.fingerprint(ARTICLE)
    assert (result.version, result.hex) == ("sh1-rjieba-n256-tfraw-hkctp-s0", "51f82460d3fa7136")


def test_fingerprint_many_yields_one_result_per_text_in_order(fp):
    texts = [ARTICLE, "", PARAGRAPH]
    assert list(fp.fingerprint_many(texts)) == [fp.fingerprint(t) for t in texts]


# --- configuration versions ---------------------------------------------------------------------

CHANGES = {
    "tokenizer": "jieba",
    "top_n": 32,
    "tf": "log",
    "strip_html": False,
    "nfkc": False,
    "casefold": False,
    "fold_traditional": False,
    "fold_punctuation": False,
    "seed": 1,
    "extra_stop_words": ("新华社",),
}


def test_default_version_string_is_pinned():
    assert Config().version == "sh1-rjieba-n256-tfraw-hkctp-s0"


def test_same_configuration_gives_same_version():
    assert Config(top_n=32, seed=7).version == Config(top_n=32, seed=7).version
    assert Config(**CHANGES).version == Config(**CHANGES).version


def test_every_config_field_is_covered_by_the_version_test():
    assert {f.name for f in dataclasses.fields(Config)} == set(CHANGES)


@pytest.mark.parametrize(("field", "value"), CHANGES.items())
def test_changing_any_field_changes_the_version(field, value):
    assert Config(**{field: value}).version != Config().version


def test_all_single_field_changes_give_distinct_versions():
    versions = [Config().version] + [Config(**{f: v}).version for f, v in CHANGES.items()]
    versions += [Config(extra_stop_words=("记者",)).version, Config(seed=2).version]
    assert len(set(versions)) == len(versions)


@pytest.mark.parametrize(
    "words",
    [
        ("记者", "新华社", "Reuters"),
        ("新华社", "记者", "reuters", "新华社"),
        ["REUTERS", " 新华社", "记者 ", "", "Reuters"],
    ],
)
def test_stop_word_order_case_and_duplicates_do_not_change_version(words):
    assert (
        Config(extra_stop_words=words).version
        == Config(extra_stop_words=("新华社", "记者", "reuters")).version
    )
    assert (
        Config(extra_stop_words=words).version
        != Config(extra_stop_words=("新华社", "记者")).version
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tokenizer": "foo"}, r"tokenizer must be one of rjieba, jieba, not 'foo'"),
        ({"top_n": 0}, r"top_n must be an integer from 1 to 10000, not 0"),
        ({"top_n": 10_001}, r"top_n must be an integer from 1 to 10000"),
        ({"top_n": 64.0}, r"top_n must be an integer"),
        ({"tf": "sqrt"}, r"tf must be one of raw, log, not 'sqrt'"),
        ({"seed": -1}, r"seed must be an integer from 0 to 2\*\*32 - 1, not -1"),
        ({"seed": 2**32}, r"seed must be an integer from 0 to 2\*\*32 - 1"),
    ],
)
def test_invalid_config_raises_config_error_saying_what_is_allowed(change, message):
    with pytest.raises(ConfigError, match=message):
        Config(**change)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


@pytest.mark.parametrize("change", [{"top_n": True}, {"seed": False}])
def test_boolean_is_not_accepted_as_a_number(change):
    # Config(top_n=True) == Config(top_n=1), yet its version reads "nTrue": a needless rebuild.
    with pytest.raises(ConfigError):
        Config(**change)


def test_replace_returns_changed_copy_and_keeps_original():
    base = Config(top_n=32)
    changed = base.replace(tf="log", extra_stop_words=["记者", "新华社", "记者"])
    assert (changed.top_n, changed.tf, changed.extra_stop_words) == (32, "log", ("新华社", "记者"))
    assert (base.tf, base.extra_stop_words) == ("raw", ())
    assert changed.version != base.version


def test_replace_validates_like_a_new_config():
    with pytest.raises(ConfigError, match="top_n"):
        Config().replace(top_n=0)


def test_extra_stop_words_are_left_out_of_the_fingerprint(fp):
    stopped = Fingerprinter(Config(extra_stop_words=("新华社", "Reuters")))
    plain = stopped.fingerprint(PARAGRAPH)
    assert stopped.fingerprint(PARAGRAPH + "新华社 REUTERS") == plain
    assert fp.fingerprint(PARAGRAPH + "新华社 REUTERS").tokens == plain.tokens + 2


def test_extra_stop_words_are_normalised_like_text():
    # An admin pasting a Traditional or full-width stop word means the word as the text has it.
    stopped = Fingerprinter(Config(extra_stop_words=("新華社", "ＲＥＵＴＥＲＳ")))
    assert stopped.fingerprint(PARAGRAPH + "新華社 Reuters") == stopped.fingerprint(PARAGRAPH)


def test_config_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().top_n = 8


# --- properties ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def other_fp(articles) -> Fingerprinter:
    """A second fingerprinter, its word cache filled in another order than `fp`'s."""
    other = Fingerprinter()
    for text in reversed(articles):
        other.fingerprint(text)
    return other


@SLOW
@given(index=st.integers(0, 39), start=st.integers(0, 400), length=st.integers(1, 2000))
def test_same_text_gets_same_fingerprint_from_two_fingerprinters(
    fp, other_fp, articles, index, start, length
):
    text = articles[index][start : start + length]
    first, second = fp.fingerprint(text), other_fp.fingerprint(text)
    assert first == second
    if first.value is not None:
        assert distance(first.value, second.value) == 0


@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_reordered_sentences_give_identical_fingerprint(fp, paragraphs, data):
    paragraph = data.draw(st.sampled_from(paragraphs))
    sentences = [s for s in paragraph.split("。") if s]
    shuffled = data.draw(st.permutations(sentences))
    assert fp.fingerprint("。".join(shuffled) + "。") == fp.fingerprint(paragraph)


def test_traditional_repost_fingerprints_like_original(fp, articles):
    s2t = opencc.OpenCC("s2t")
    far = {}
    for i, text in enumerate(articles):
        d = distance(fp.fingerprint(text).value, fp.fingerprint(s2t.convert(text)).value)
        if d > 3:
            far[i] = d
    assert not far, f"article index -> distance of its Traditional repost: {far}"


def _to_full_width(text: str) -> str:
    return "".join(
        "\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text
    )


def _to_half_width(text: str) -> str:
    return "".join(
        " " if c == "\u3000" else chr(ord(c) - 0xFEE0) if "！" <= c <= "～" else c for c in text
    )


MIXED = "2024年Apple发布iPhone 15，售价5999元。CEO Tim Cook表示，AI功能将在中国上线。"


def test_full_width_repost_fingerprints_like_original(fp, articles):
    for text in [MIXED, ARTICLE, *articles[:10]]:
        original = fp.fingerprint(text).value
        assert fp.fingerprint(_to_full_width(text)).value == original
        assert fp.fingerprint(_to_half_width(text)).value == original


def _is_han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_whitespace_between_chinese_characters_changes_nothing(fp, paragraphs, data):
    text = data.draw(st.sampled_from([ARTICLE, PARAGRAPH, *paragraphs]))
    gaps = [i for i in range(1, len(text)) if _is_han(text[i - 1]) and _is_han(text[i])]
    chosen = data.draw(st.lists(st.sampled_from(gaps), unique=True, max_size=40))
    spaces = data.draw(
        st.lists(
            st.sampled_from([" ", "\n", "\u3000", "\t", "\r\n", " \n  ", "  "]),
            min_size=len(chosen),
            max_size=len(chosen),
        )
    )
    spaced = text
    for i, space in sorted(zip(chosen, spaces, strict=True), reverse=True):
        spaced = spaced[:i] + space + spaced[i:]
    assert fp.fingerprint(spaced) == fp.fingerprint(text)


def test_html_wrapped_article_fingerprints_like_its_text(fp):
    page = "<html><body><div class='c'>" + "".join(
        f"<p>{s}。</p>\n" for s in ARTICLE.split("。") if s
    )
    page += "</div><script>var ad = '广告';</script></body></html>"
    assert fp.fingerprint(page).value == fp.fingerprint(ARTICLE).value


def test_unrelated_articles_are_far_apart(fp, articles):
    values = [fp.fingerprint(text).value for text in articles]
    assert len(set(values)) == len(values)
    pairs = {
        (i, j): distance(a, b) for (i, a), (j, b) in itertools.combinations(enumerate(values), 2)
    }
    close = {pair: d for pair, d in pairs.items() if d < 10}
    assert not close, f"unrelated article pairs within distance 10: {close}"
    mean = statistics.mean(pairs.values())
    assert 29 <= mean <= 35, mean


@pytest.fixture(scope="module")
def jieba_fp() -> Fingerprinter:
    return Fingerprinter(Config(tokenizer="jieba"))


def test_jieba_and_rjieba_backends_fingerprint_alike(fp, jieba_fp, articles):
    assert jieba_fp.version != fp.version
    texts = [ARTICLE, PARAGRAPH, MIXED, *articles[:8]]
    far = {}
    for i, text in enumerate(texts):
        d = distance(fp.fingerprint(text).value, jieba_fp.fingerprint(text).value)
        if d > 3:
            far[i] = d
    assert not far, far
