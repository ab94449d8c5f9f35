"""The detector: passages, shingles, candidates from two indexes, verified judgements."""

from __future__ import annotations

import opencc
import pytest

import dedup.engine.verify as verify
from dedup.engine import Fingerprinter
from dedup.engine.verify import Detector
from tests.texts import ARTICLE, FILLER, OTHER, stranger


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def judge(detector: Detector, a: str, b: str):
    fa, fb = detector.features(a), detector.features(b)
    return detector.judge(0, 1, fa, fb)


def test_article_fingerprint_in_features_is_the_fingerprinters(detector):
    for text in (ARTICLE, OTHER, FILLER, "<p>短文。</p>", ""):
        assert detector.features(text).fingerprint == Fingerprinter().fingerprint(text).value


def test_passages_are_sentences_with_short_ones_joined(detector):
    passages = detector.passages("短句。另一个短句。" + ARTICLE)
    assert len(passages) == 5  # the two short sentences join the first long one
    assert passages[0].startswith("短句")
    assert passages[1].startswith("他指出")


def test_text_without_words_has_empty_features_and_no_duplicates(detector):
    features = [detector.features(t) for t in ("", "!!!", "", "。。")]
    assert all(len(f.shingles) == 0 and f.fingerprint is None for f in features)
    assert detector.duplicates(features) == []


@pytest.mark.parametrize(
    "copy",
    [
        ARTICLE.replace("丰收", "丰产"),
        ARTICLE.replace("，", ",").replace("1998", "１９９８"),
        opencc.OpenCC("s2t").convert(ARTICLE),
        ARTICLE.split("。", 1)[1] + ARTICLE.split("。", 1)[0] + "。",  # a sentence moved
    ],
    ids=["substitute", "width", "traditional", "reorder"],
)
def test_edited_copy_is_near_with_high_similarity(detector, copy):
    verdict = judge(detector, ARTICLE, copy)
    assert verdict is not None and verdict.kind == "near"
    assert verdict.similarity >= 0.8


def test_unrelated_articles_are_not_duplicates(detector):
    assert judge(detector, ARTICLE, OTHER) is None
    assert judge(detector, ARTICLE, FILLER) is None


def test_article_embedded_in_a_bigger_page_is_partial_with_every_passage_shared(detector):
    page = "首页 > 新闻 > 国内\n" + FILLER + "\n" + ARTICLE + "\n相关评论：\n" + FILLER
    assert len(page) >= 2 * len(ARTICLE)
    verdict = judge(detector, ARTICLE, page)
    assert verdict is not None and verdict.kind == "partial" and verdict.similarity > 0.9
    shared_in_article = [a for a, _ in verdict.shared_passages]
    assert shared_in_article == list(range(len(detector.passages(ARTICLE))))
    page_passages = detector.passages(page)
    for a, b in verdict.shared_passages:
        assert detector.passages(ARTICLE)[a] in page_passages[b]


def test_excerpt_quoted_in_another_article_shares_exactly_the_quoted_passages(detector):
    sentences = [s + "。" for s in ARTICLE.split("。") if s]
    quoting = OTHER + "有文章写道：" + "".join(sentences[1:4]) + FILLER
    verdict = judge(detector, ARTICLE, quoting)
    assert verdict is not None and verdict.kind == "partial"
    assert [a for a, _ in verdict.shared_passages] == [1, 2, 3]


def test_partial_counts_the_characters_of_whole_passages_only(detector):
    sentences = [s + "。" for s in ARTICLE.split("。") if s]
    quoted = "".join(sentences[1:4])
    quoting = OTHER + "有文章写道：" + quoted + FILLER
    fa, fb = detector.features(ARTICLE), detector.features(quoting)
    verdict = detector.judge(0, 1, fa, fb)
    # The three quoted sentences, counted at the article's characters per shingle.
    per_shingle = fa.length / len(fa.shingles)
    held = sum(int(fa.passage_sizes[p]) for p, _ in verdict.shared_passages)
    assert verdict.shared_chars == round(held * per_shingle)
    assert abs(verdict.shared_chars - len(quoted)) < 0.25 * len(quoted)
    # Asking for more than those passages hold refuses the pair, however many shingles
    # the two share elsewhere.
    stricter = Detector(min_chars=verdict.shared_chars + 1)
    assert stricter.judge(0, 1, fa, fb) is None


def test_page_found_through_its_passages_when_the_article_fingerprint_drifts(detector):
    page = FILLER + ARTICLE + FILLER + OTHER
    features = [detector.features(ARTICLE), detector.features(page)]
    assert (features[0].fingerprint ^ features[1].fingerprint).bit_count() > detector.k_article
    found = detector.duplicates(features)
    assert [(d.a, d.b, d.kind) for d in found] == [(0, 1, "partial")]


def test_boilerplate_shared_by_many_pages_finds_no_candidates(monkeypatch, detector):
    monkeypatch.setattr(verify, "MAX_PASSAGE_OWNERS", 2)
    footer = "版权所有，未经许可不得转载本网站任何内容，违者必究，本站保留一切法律权利。"
    bodies = [ARTICLE, OTHER, FILLER.split("此外")[0]]
    features = [detector.features(body + footer) for body in bodies]
    assert detector.candidates(features).tolist() == []


def test_each_pair_is_reported_once_in_order(detector):
    texts = [ARTICLE, OTHER, ARTICLE.replace("丰收", "丰产"), ARTICLE]
    found = detector.duplicates([detector.features(t) for t in texts])
    assert [(d.a, d.b) for d in found] == [(0, 2), (0, 3), (2, 3)]
    assert all(d.kind == "near" for d in found)
    assert next(d for d in found if (d.a, d.b) == (0, 3)).distance == 0


@pytest.mark.parametrize("text", [ARTICLE, OTHER + FILLER, "<p>短文。</p>", "", "!!!", "12345"])
def test_packed_features_round_trip_exactly(detector, text):
    features = detector.features(text)
    back = verify.Features.from_bytes(features.to_bytes())
    assert back.fingerprint == features.fingerprint and back.length == features.length
    for name in ("shingles", "passage_of", "passage_keys", "passage_sizes"):
        assert (getattr(back, name) == getattr(features, name)).all(), name
    assert back.to_bytes() == features.to_bytes()
    other = detector.features(ARTICLE.replace("丰收", "丰产"))
    assert detector.judge(0, 1, back, other) == detector.judge(0, 1, features, other)


def test_fingerprint_and_features_agree_with_the_fingerprinter(detector):
    for text in (ARTICLE, "", "!!!", "\x00\x01\x02binary"):
        fp, features = detector.fingerprint_and_features(text)
        assert fp == Fingerprinter().fingerprint(text)
        assert features.fingerprint == fp.value


@pytest.mark.parametrize(
    "data", [b"", b"nonsense", ARTICLE.encode(), b"DDF\x00\x02" + bytes(40)], ids=str
)
def test_unpacking_other_bytes_fails_with_a_clear_error(data):
    with pytest.raises(ValueError, match="recompute"):
        verify.Features.from_bytes(data)


# Two short reports of one notice: one sentence kept, one reworded, one replaced.
SHORT_A = (
    "市政府今天发布通知，全市中小学将于下周一起恢复线下教学。"
    "各校需做好防疫准备工作。家长可通过学校官网查询具体安排。"
)
SHORT_B = (
    "市政府今天发布通知，全市中小学将于下周一起恢复线下教学。"
    "有关部门表示将加强校园周边交通管理，请市民注意出行。"
)


def test_short_texts_are_near_at_a_lower_similarity(detector, monkeypatch):
    found = judge(detector, SHORT_A, SHORT_B)
    assert found is not None and found.kind == "near"
    assert detector.near_short <= found.similarity < detector.near
    assert judge(Detector(near_short=detector.near), SHORT_A, SHORT_B) is None
    monkeypatch.setattr(verify, "SHORT", 40)  # the same texts counted long: the usual bar
    assert judge(detector, SHORT_A, SHORT_B) is None


def test_least_similarity_for_a_screen_counts_possibly_short_candidates_short(detector):
    # A long excerpt is partial at a lower share than `partial`.
    excerpt = verify.EXCERPT_SHARE * detector.partial
    lowest, usual = min(detector.near_short, excerpt), min(detector.near, excerpt)
    least = detector.least_similarity(2000, [50, 136, 137, 5000])
    assert least.tolist() == [lowest, lowest, usual, usual]  # 137 shingles: 140 characters
    assert detector.least_similarity(100, [5000]).tolist() == [lowest]  # the article is short


def excerpt_pair(seed: int, sentences: int) -> tuple[str, str]:
    """Return an article and a page quoting a third of it, between texts of its own."""
    article = stranger(seed, sentences)
    quote = "。".join(article.split("。")[sentences // 3 : 2 * sentences // 3]) + "。"
    return article, stranger(seed + 1, sentences) + "\n" + quote + "\n" + stranger(seed + 2, 6)


def test_a_long_excerpt_is_partial_at_a_lower_share(detector):
    article, page = excerpt_pair(20, 24)
    found = judge(detector, article, page)
    assert found is not None and found.kind == "partial"
    assert verify.EXCERPT_SHARE * detector.partial <= found.similarity < detector.partial
    assert found.shared_chars >= verify.EXCERPT_CHARS * detector.min_chars
    article, page = excerpt_pair(40, 6)  # as much of a short article: too few characters
    assert judge(detector, article, page) is None


# A changelog entry carrying a long item over from another package's entry: the two are
# about as big, and so alike (the item is half of each) that they would be near, but most of
# the smaller one's passages are its own.
CARRIED = (
    "Backport the upstream fix for the crash in the configuration parser when a section name "
    "contains a trailing space, which made the command line tool exit with status two on files "
    "written by older releases and left their caches half converted until the migrate command "
    "was run again by hand on every machine."
)
ENTRY = (
    "The package now builds with the current compiler and passes its own test suite again.\n"
    "The documentation moved to its own package so that servers can leave it out.\n"
    "The cron job no longer mails the administrator when there is nothing to report.\n"
)
CARRYING = (
    "A new upstream release brings faster start up and a smaller memory footprint overall.\n"
    "The watch file follows the new download page of the project and checks signatures.\n"
    "Translations of the debconf templates were updated for six languages this time.\n"
)


def test_a_pair_alike_enough_to_be_near_but_no_edit_is_partial_when_one_holds_a_stretch(
    detector,
):
    fa, fb = detector.features(ENTRY + CARRIED), detector.features(CARRYING + CARRIED)
    found = detector.judge(0, 1, fa, fb)
    assert found is not None and found.kind == "partial"
    a, b = set(fa.shingles.tolist()), set(fb.shingles.tolist())
    assert detector.near <= len(a & b) / len(a | b) < verify.NEAR_CLEAR
    assert found.similarity >= detector.partial
    assert found.shared_passages == [(len(fa.passage_keys) - 1, len(fb.passage_keys) - 1)]
    # Characters per shingle of the whole entry times the item's shingles: about its own.
    assert found.shared_chars == pytest.approx(sum(c.isalnum() for c in CARRIED), rel=0.05)
