"""What counts as evidence: units that mean the same in every script, passages cut so that a
footer stands alone, boilerplate learned from the collection, templates that are no copies."""

from __future__ import annotations

import pytest

from dedup.engine.verify import Detector, boilerplate_passages, passage_owners_of
from tests.texts import ARTICLE, FILLER, OTHER

RELEASE = (
    "This release fixes a crash in the configuration parser when a section name contains a "
    "trailing space. The command line tool now reports the file and the line of every error it "
    "finds, and exits with status two. Support for the old cache format has been removed; run "
    "the migrate command once to convert existing caches. Thanks to everyone who reported bugs "
    "and tested the release candidates."
)
LETTER = (
    "Dear friend, this letter has been sent around the world nine times and brings good fortune "
    "to everyone who passes it on within four days. A woman in the north received it and sent "
    "twenty copies; within a week she won a small prize. Another man ignored the letter and lost "
    "his umbrella the same afternoon. Please do not keep this letter, and do not send money."
)
NOTES = (
    "The parser accepts comments that start with a hash sign. Keys are case sensitive and "
    "values keep their surrounding quotes unless the raw option is given. A section may be "
    "repeated; later values replace earlier ones, and the writer keeps the order of the first "
    "appearance of every key when the file is saved again."
)
FOOTER = (
    "\n\n_______________________________________________\n"
    "tools-users mailing list\ntools-users@lists.example.org\n"
    "https://lists.example.org/listinfo/tools-users\n"
)


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def test_unrelated_english_texts_share_no_chance_grams(detector):
    # Character 4-grams made these a "partial copy" with dozens of shared passages.
    a, b = detector.features(RELEASE), detector.features(LETTER)
    assert detector.judge(0, 1, a, b) is None
    assert len(set(a.shingles.tolist()) & set(b.shingles.tolist())) <= 2


def test_an_english_word_is_one_unit_and_shared_text_is_counted_in_characters(detector):
    f = detector.features(RELEASE)
    words = len(RELEASE.split())
    assert f.unit_count == pytest.approx(words, rel=0.1)
    assert 4 < f.characters_per_unit < 7
    copy = detector.features(FILLER + "\n\n" + RELEASE)
    found = detector.judge(0, 1, f, copy)
    assert found is not None and found.kind == "partial"
    assert found.shared_chars == sum(c.isalnum() for c in RELEASE)  # all of it


def test_a_footer_is_a_passage_of_its_own_wherever_it_stands(detector):
    for body in (RELEASE, LETTER, NOTES + "\n\n-- \nAnn"):
        assert detector.passages(body + FOOTER)[-1].startswith("_____")


def test_messages_sharing_only_a_list_footer_are_no_copies_once_it_is_learned(detector):
    bodies = [RELEASE, LETTER, NOTES, ARTICLE, OTHER, FILLER]
    messages = [body + FOOTER for body in bodies]
    features = [detector.features(m) for m in messages]
    owners = passage_owners_of(features)
    assert boilerplate_passages(features[0], owners(features[0].passage_keys))[-1]
    assert detector.duplicates(features) == []


def test_a_story_copied_many_times_is_not_boilerplate_to_itself(detector):
    # Fifty reposts, each with a line of its own: the story's passages are held by all of them.
    copies = [f"{ARTICLE}\n\n转载自第{i}号网站" for i in range(50)]
    features = [detector.features(text) for text in copies]
    found = detector.duplicates(features)
    assert len(found) == 50 * 49 // 2
    assert {d.kind for d in found} == {"near"}


def test_reports_of_one_template_with_other_facts_are_no_copies(detector):
    template = (
        "{city}天气预报（{day}）\n{city}市气象台发布：今天{sky}，最高气温{high}℃，最低气温{low}℃。\n"
        "温馨提示：早晚温差较大，请注意适时增减衣物；雨天路滑，出行请注意交通安全，驾车减速慢行。"
    )
    facts = [
        ("北京", "3月1日", "晴", 12, 2),
        ("上海", "5月9日", "多云", 22, 15),
        ("广州", "7月3日", "雷阵雨", 33, 26),
        ("成都", "9月12日", "小雨", 24, 18),
        ("西安", "11月20日", "阴", 9, 1),
        ("沈阳", "1月8日", "小雪", -5, -16),
    ]
    texts = [template.format(city=c, day=d, sky=s, high=h, low=lo) for c, d, s, h, lo in facts]
    repost = texts[0].replace("温馨提示", "提示")  # a real copy of one report
    features = [detector.features(t) for t in [*texts, repost]]
    found = {(d.a, d.b) for d in detector.duplicates(features)}
    assert found == {(0, len(texts))}
