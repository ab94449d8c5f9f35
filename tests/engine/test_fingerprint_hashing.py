"""SimHash's parts: the pinned word hash, the weighted sum, and the recent-word cache and ties
that must not change a fingerprint."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dedup.engine.tokens
from dedup.engine import Config, Fingerprint, Fingerprinter, Status, simhash, word_hash
from dedup.engine.verify import Detector
from tests.engine.test_fingerprint import ARTICLE, PARAGRAPH

# --- simhash and word_hash ----------------------------------------------------------------------


def test_word_hash_is_pinned_murmur3_x64_first_half():
    assert word_hash("中国") == 11922356701249451310
    assert word_hash("中国", seed=1) == 9032670628726049703


def test_simhash_of_one_word_is_its_hash():
    for word in ["中国", "人民日报", "simhash"]:
        assert simhash([(word, 1.0)]) == word_hash(word)
        assert simhash([(word, 2.5)], seed=9) == word_hash(word, seed=9)


def test_overwhelming_weight_dominates():
    words = [("中国", 100.0), ("经济", 1.0), ("发展", 1.0), ("人民", 1.0)]
    assert simhash(words) == word_hash("中国")
    assert simhash([*words[1:], ("中国", 2.0)]) != word_hash("中国")


def test_two_equal_weights_set_only_the_bits_both_words_share():
    # A tie (one vote for, one against) leaves the bit clear.
    assert simhash([("经济", 1.0), ("发展", 1.0)]) == word_hash("经济") & word_hash("发展")


def test_simhash_of_no_words_raises_value_error():
    with pytest.raises(ValueError, match="at least one word"):
        simhash([])


@pytest.mark.parametrize(
    ("tf", "scale"), [("raw", float), ("log", lambda n: 1 + math.log(n))], ids=["raw", "log"]
)
def test_fingerprint_is_simhash_of_tf_idf_weighted_tokens(tf, scale):
    fingerprinter = Fingerprinter(Config(tf=tf))
    tokens = fingerprinter.tokens(PARAGRAPH * 2 + ARTICLE)  # some words twice, some once
    counts = {t: tokens.count(t) for t in tokens}
    assert len(counts) < Config().top_n and max(counts.values()) > 1
    weighted = [(t, scale(n) * fingerprinter.weigher.idf(t)) for t, n in counts.items()]
    assert fingerprinter.fingerprint(PARAGRAPH * 2 + ARTICLE).value == simhash(weighted)


def test_fingerprint_keeps_only_top_n_weights():
    top5 = Fingerprinter(Config(top_n=5))
    tokens = top5.tokens(ARTICLE)
    counts = {t: tokens.count(t) for t in tokens}
    weighted = sorted(
        ((t, n * top5.weigher.idf(t)) for t, n in counts.items()),
        key=lambda tw: -tw[1],
    )
    assert weighted[4][1] > weighted[5][1]  # no tie at the cut
    assert top5.fingerprint(ARTICLE).value == simhash(weighted[:5])
    assert top5.fingerprint(ARTICLE).value != simhash(weighted[:6])


# --- the recent-word cache and ties -------------------------------------------------------------


def test_recent_word_cache_reset_is_transparent(monkeypatch, fp, articles):
    monkeypatch.setattr(dedup.engine.tokens, "RECENT_WORDS", 50)
    small = Fingerprinter()  # its arrays are sized now, with 50 slots
    sentences = [s for a in articles for s in a.split("。") if 12 <= len(s) <= 30][:120]
    assert len({t for s in sentences for t in fp.tokens(s)}) > 200  # many resets on the way
    expected = [fp.fingerprint(s) for s in sentences]
    assert [small.fingerprint(s) for s in sentences] == expected
    assert [small.fingerprint(s) for s in sentences[:20]] == expected[:20]


@pytest.mark.parametrize("text", [ARTICLE, "经济", "经济，经济，经济", "中国 的", "，。"])
def test_words_already_seen_fingerprint_as_on_first_sight(text):
    fresh = Fingerprinter()  # first sight: every word gets a slot; then they are looked up
    first = fresh.fingerprint(text)
    assert fresh.fingerprint(text) == first


def test_one_distinct_word_weighs_by_its_count(fp):
    idf = fp.weigher.idf("经济")
    assert fp.fingerprint("经济，经济，经济") == Fingerprint(
        simhash([("经济", 3 * idf)]), Status.OK, 3, fp.version
    )


TIED = [f"zq{a}{b}" for a in "abcdefghij" for b in "klmnopqrst"]  # 100 words unknown to IDF


@pytest.fixture(scope="module")
def top64() -> Fingerprinter:
    return Fingerprinter(Config(top_n=64))


@settings(deadline=None, max_examples=20)
@given(st.permutations(TIED))
def test_tied_weights_pick_same_top_n_whatever_the_word_order(top64, order):
    assert len(TIED) > top64.config.top_n
    assert top64.fingerprint(" ".join(order)) == top64.fingerprint(" ".join(TIED))


def test_tied_words_are_all_counted_but_only_top_n_kept(top64):
    assert top64.fingerprint(" ".join(TIED)).tokens == len(TIED)


@pytest.mark.parametrize("tokenizer", ["rjieba", "jieba"])
@pytest.mark.parametrize(
    "text",
    ["新华社北京1月1日电 国家主席发表新年讲话。\ud800" * 20, "臺灣經濟發展迅速，\udc80" * 20],
)
def test_lone_surrogates_become_spaces_not_a_crash(tokenizer, text):
    fingerprinter = Fingerprinter(Config(tokenizer=tokenizer))
    got = fingerprinter.fingerprint(text)
    clean = fingerprinter.fingerprint(text.replace("\ud800", " ").replace("\udc80", " "))
    assert got.status == "ok" and got.value == clean.value
    detector = Detector(Config(tokenizer=tokenizer))
    assert detector.fingerprint_and_features(text)[0] == got
