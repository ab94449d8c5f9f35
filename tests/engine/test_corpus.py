"""Tests for the labelled near-duplicate corpus built from packaged People's Daily and QA text."""

import html
import random
import re
import unicodedata

import opencc
import pytest

from bench.corpus import (
    BANDS,
    EDIT_KINDS,
    PARTIAL_KINDS,
    band_of,
    build_corpus,
    delete_sentence,
    garbled,
    load_insuranceqa,
    load_peoples_daily,
    near_duplicates,
    news_articles,
    one_sentence,
)

SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]*[”’」』）]*")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.findall(text) if s.strip()]


def words_only(text: str) -> str:
    """Drop punctuation, symbols and spaces after folding full-width forms to ASCII."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c)[0] not in "PSZC")


@pytest.fixture(scope="module")
def corpus():
    return build_corpus(per_band=10, seed=7)


@pytest.fixture(scope="module")
def pairs(corpus):
    originals = {d.family: d for d in corpus if d.kind == "original"}
    return [
        (originals[d.family], d) for d in corpus if d.family in originals and d.kind != "original"
    ]


def test_build_corpus_is_deterministic_for_a_seed(corpus):
    again = build_corpus(per_band=10, seed=7)
    other = build_corpus(per_band=10, seed=8)
    assert list(again) == list(corpus)
    assert [d.text for d in other] != [d.text for d in corpus]


def test_every_edit_kind_is_present_in_the_long_bands(corpus):
    for band in ("500-2000", ">2000"):
        assert set(EDIT_KINDS) <= {d.kind for d in corpus if d.band == band}


def test_docs_are_labelled_consistently(corpus):
    assert len({d.id for d in corpus}) == len(corpus)
    originals = {d.family: d for d in corpus if d.kind == "original"}
    assert {d.band for d in originals.values()} == set(BANDS)
    for doc in corpus:
        assert doc.kind in {"original", "template_sibling", *EDIT_KINDS, *PARTIAL_KINDS}
        if doc.kind == "template_sibling":
            assert doc.family not in originals  # a hard negative is a family of its own
        else:
            assert doc.band == band_of(len(originals[doc.family].text))
            assert doc.text != originals[doc.family].text or doc.kind == "original"


def test_every_partial_kind_is_present_for_originals_of_140_characters_or_more(corpus):
    for band in BANDS[1:]:
        assert set(PARTIAL_KINDS) <= {d.kind for d in corpus if d.band == band}
    assert not {d.kind for d in corpus if d.band == "<140"} & set(PARTIAL_KINDS)
    originals = [d for d in corpus if d.kind == "original" and len(d.text) >= 140]
    partial = [d for d in corpus if d.kind in PARTIAL_KINDS]
    assert len(partial) == len(PARTIAL_KINDS) * len(originals)


def test_partial_copies_can_be_left_out(corpus):
    plain = build_corpus(per_band=10, seed=7, partial=False)
    assert not {d.kind for d in plain} & set(PARTIAL_KINDS)
    assert list(plain) == list(corpus[: len(plain)])  # the other docs do not change


def visible(text: str) -> str:
    """Return a page's text without markup."""
    return html.unescape(re.sub(r"<[^>]+>", "\n", text)) if text.startswith("<html>") else text


def no_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_embedded_page_is_at_least_twice_the_article(pairs):
    copies = [(o, c) for o, c in pairs if c.kind == "embedded"]
    assert {c.text.startswith("<html>") for _, c in copies} == {True, False}
    for orig, copy in copies:
        page = visible(copy.text)
        assert len(page) >= 2 * len(orig.text), copy.id
        start = page.index(copy.shared[0])
        assert start > 0 and page.index(copy.shared[-1]) + len(copy.shared[-1]) < len(page)


def test_partial_copies_record_the_text_they_share(pairs):
    copies = [(o, c) for o, c in pairs if c.kind in PARTIAL_KINDS]
    assert copies
    for orig, copy in copies:
        assert copy.shared, copy.id
        page = visible(copy.text)
        for text in copy.shared:
            assert text.strip() and text in page, copy.id
        if copy.kind == "excerpt":
            (quote,) = copy.shared
            assert no_space(quote) in no_space(orig.text)
            assert 0.4 * len(orig.text) <= len(quote) <= 0.6 * len(orig.text), copy.id
            assert len(copy.text) >= len(orig.text) + len(quote)  # the host is as long
        else:
            assert copy.shared == tuple(p for p in orig.text.split("\n") if p.strip())
    concatenated = [(o, c) for o, c in copies if c.kind == "concatenated"]
    assert {c.text.startswith(o.text) for o, c in concatenated} == {True, False}


def test_partial_copies_link_no_two_families(corpus):
    """Check that what a partial copy adds to its original is in no other family."""
    grams = [(d, five_grams(visible(d.text))) for d in corpus]
    for i, (doc, a) in enumerate(grams):
        for other, b in grams[i + 1 :]:
            if doc.family == other.family or not {doc.kind, other.kind} & set(PARTIAL_KINDS):
                continue
            assert len(a & b) < 0.3 * min(len(a), len(b)), (doc.id, other.id)


def test_partial_copies_add_no_sentence_of_another_familys_edits(corpus):
    """Check that no sentence a partial copy adds to its original is in another family's edits."""
    # Page copies aside: their related-links lists name other articles by title or first
    # sentence. Stock sentences ("Great question!") may be in two donors: the test above bounds
    # what two partial copies share.
    originals = {d.family: d for d in corpus if d.kind == "original"}
    stock = {s for d in originals.values() for s in sentences(d.text)}  # links families already
    families: dict[str, set[str]] = {}
    for doc in corpus:
        if doc.kind not in ("wrapper", "template_sibling", *PARTIAL_KINDS):
            for s in sentences(doc.text):
                families.setdefault(s, set()).add(doc.family)
    checked = 0
    for doc in corpus:
        if doc.kind in PARTIAL_KINDS:
            for s in set(sentences(visible(doc.text))) - stock:
                if len(s) >= 8:
                    assert families.get(s, {doc.family}) == {doc.family}, (doc.id, s)
                    checked += 1
    assert checked > 100


def test_traditional_copy_contains_traditional_characters(pairs):
    to_simplified = opencc.OpenCC("t2s")
    copies = [(o, c) for o, c in pairs if c.kind == "traditional"]
    assert copies
    for orig, copy in copies:
        assert set(copy.text) - set(orig.text)
        assert to_simplified.convert(copy.text) != copy.text


def test_punctuation_width_copy_changes_no_word(pairs):
    copies = [(o, c) for o, c in pairs if c.kind == "punctuation_width"]
    assert copies
    for orig, copy in copies:
        assert copy.text != orig.text
        assert words_only(copy.text) == words_only(orig.text)


def test_wrapper_copy_contains_every_sentence_of_the_body(pairs):
    copies = [(o, c) for o, c in pairs if c.kind == "wrapper"]
    assert {c.text.startswith("<html>") for _, c in copies} == {True, False}
    for orig, copy in copies:
        page = html.unescape(re.sub(r"<[^>]+>", "\n", copy.text))
        assert len(page) > len(orig.text)
        for sentence in sentences(orig.text):
            assert sentence in page


def test_template_sibling_shares_a_wrapper_but_not_the_body(corpus):
    wrappers = {d.family: d.text for d in corpus if d.kind == "wrapper"}
    siblings = [d for d in corpus if d.kind == "template_sibling"]
    assert siblings
    for sib in siblings:
        footer = sib.text.rstrip().rsplit("\n", 1)[-1]
        same_page = [fam for fam, text in wrappers.items() if text.endswith(footer)]
        assert same_page, sib.id
        assert all(sib.text != wrappers[fam] for fam in same_page)


def five_grams(text: str) -> set[str]:
    """Character 5-grams after NFKC and case folding, without spaces and punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(c for c in text if unicodedata.category(c)[0] not in "PSZC")
    return {text[i : i + 5] for i in range(max(1, len(text) - 4))}


def test_no_two_originals_are_near_duplicates():
    docs = build_corpus(per_band=40, seed=11)
    originals = [(d.id, five_grams(d.text)) for d in docs if d.kind == "original"]
    assert len(originals) > 100
    for i, (id_a, a) in enumerate(originals):
        for id_b, b in originals[i + 1 :]:
            shared = len(a & b)
            assert shared < 0.3 * len(a | b), (id_a, id_b)  # Jaccard
            assert shared < 0.5 * min(len(a), len(b)), (id_a, id_b)  # containment
    refused = docs.stats["near_duplicates"]
    assert set(refused) == set(BANDS)
    assert all(n >= 0 for counts in refused.values() for n in counts.values())


def test_near_duplicates_measure():
    answer = (
        "每个计划下的好处因公司和金属层面而异，30岁以下的个人也可能面临灾难性的计划。"
        "然而，每个计划都有一套10个基本的健康福利，他们必须满足。"
    )
    assert near_duplicates("是。" + answer, answer + "服务")
    assert near_duplicates(answer, answer.replace("，", ", ").replace("30", "３０"))
    assert near_duplicates(answer, answer[:40])  # one text inside the other
    weather = "今天北京天气晴朗。市民纷纷到公园散步！晚上气温将降到零下五度。"
    assert not near_duplicates(answer, weather)


def test_garbled_text_is_recognised():
    assert garbled("残疾保险与长期护理保险不同。" + "新新200新200 " * 12)
    assert not garbled("今天北京天气晴朗。市民纷纷到公园散步！晚上气温将降到零下五度。" * 3)
    assert not garbled(load_peoples_daily()[0])


def test_delete_sentence_drops_exactly_one_sentence():
    text = "今天北京天气晴朗。市民纷纷到公园散步！晚上气温将降到零下五度。"
    for seed in range(5):
        copy = delete_sentence(text, random.Random(seed))
        kept = sentences(copy)
        assert len(kept) == 2
        assert all(s in sentences(text) for s in kept)


def test_one_sentence_rewrites_a_single_sentence():
    text = "新华社北京１月５日电。国务院今天召开常务会议，研究春运工作。会议由总理主持。"
    copy = one_sentence(text, random.Random(3))
    before, after = sentences(text), sentences(copy)
    assert len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_news_articles_are_distinct_and_near_the_length():
    texts = news_articles(1000, 50, seed=1)
    assert len(set(texts)) == 50
    assert all(900 <= len(t) <= 1100 for t in texts)
    assert news_articles(1000, 50, seed=1) == texts


def test_news_articles_combine_paragraphs_beyond_the_source():
    texts = news_articles(3000, 1000, seed=2)  # the month holds only a few hundred of these
    assert len(set(texts)) == 1000
    assert all(2700 <= len(t) <= 3300 for t in texts)


def test_sources_rebuild_real_text():
    articles = load_peoples_daily()
    assert articles[0].startswith("迈向充满希望的新世纪——一九九八年新年讲话（附图片１张）\n")
    assert "１９９８年" in articles[0]  # full-width digits are kept as in the paper
    assert not any("/" in a.split("\n")[0][-3:] for a in articles[:100])  # tags are stripped
    answers = load_insuranceqa()
    assert len(answers) > 27000
    assert not any(a[0].isspace() for a in answers)
