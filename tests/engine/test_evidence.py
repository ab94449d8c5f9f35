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


NOTICE = (
    "关于{road}路段临时交通管制的通告\n因设备维护，{city}交通运输局定于{date}{start}时至{end}时对{road}"
    "（{a}至{b}段）实施临时交通管制。届时请广大市民提前做好准备，合理安排出行，由此带来的不便，敬请谅解。\n"
    "咨询电话：{phone}\n特此通告。\n{city}交通运输局\n{date}"
)
RESULT = "{league}第{round}轮，{home}{h}比{a}{away}，{date}"
REPORT = (
    "{date}，中超联赛第{round}轮在{city}进行，梅州客家队主场战胜三镇队。\n第{m1}分钟，梅州客家队球员{p1}破门。"
    "第{m2}分钟，三镇队球员{p2}破门。\n本场比赛共有{fans}名观众到场观战。赛后，梅州客家队积{pts}分暂列积分榜第{rank}位。"
)
OUTAGE = (
    "Notice of temporary water supply interruption on Mill Road\n"
    "Due to mains repairs, {city} Water will carry out a temporary water supply interruption "
    "on Mill Road between Elm Street and Station Road on {day} from {start}:00 to {end}:00. "
    "Residents are advised to make arrangements in advance. We apologise for any inconvenience."
    "\nEnquiries: {phone}\n{city} Water"
)
FILLED = {
    "notice": (
        NOTICE.format(
            road="建设路", city="厦门", date="2024年2月11日", start=6, end=14, a="东风大道",
            b="胜利大道", phone="0652-3704006",
        ),
        NOTICE.format(
            road="朝阳大道", city="长春", date="2024年8月10日", start=1, end=10, a="长江大道",
            b="胜利大道", phone="0708-2712907",
        ),
    ),
    "result": (
        RESULT.format(
            league="中甲联赛", round=25, home="梅州客家队", h=0, a=1, away="青岛海牛队",
            date="2024年1月11日",
        ),
        RESULT.format(
            league="中甲联赛", round=11, home="梅州客家队", h=0, a=1, away="青岛海牛队",
            date="2025年12月19日",
        ),
    ),
    "report": (
        REPORT.format(
            date="2021年2月5日", round=16, city="广州", m1=69, p1="陈鹏", m2=70, p2="吴静磊",
            fans=43177, pts=4, rank=15,
        ),
        REPORT.format(
            date="2025年8月5日", round=15, city="西安", m1=31, p1="罗勇", m2=83, p2="王超",
            fans=13328, pts=73, rank=15,
        ),
    ),
    "outage": (
        OUTAGE.format(city="Paris", day="25 Jun 2023", start=3, end=6, phone="294-1615343"),
        OUTAGE.format(city="Paris", day="8 Nov 2021", start=13, end=17, phone="157-2568627"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", FILLED)
def test_a_template_filled_in_with_other_facts_is_not_near(detector, name):
    # Alone, with no collection to learn the template from: the words agree, the numbers not.
    first, second = FILLED[name]
    assert detector.judge(0, 1, detector.features(first), detector.features(second)) is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("特此通告。\n", "").replace("Residents are advised to make ", ""),
        lambda t: t.replace("，", ",").replace("。", "."),
        lambda t: t.replace("破门", "进球").replace("repairs", "works"),
    ],
    ids=["sentence_deleted", "punctuation", "words_substituted"],
)
@pytest.mark.parametrize("name", FILLED)
def test_a_filled_in_report_edited_keeping_its_facts_stays_near(detector, name, edit):
    first = FILLED[name][0]
    verdict = detector.judge(0, 1, detector.features(first), detector.features(edit(first)))
    assert verdict is not None and verdict.kind == "near"


def test_a_changelog_uploaded_again_with_a_new_version_and_date_stays_near(detector):
    # The version line and the date change; the entry's other passages stay whole.
    entry = (
        "libsigsegv ({version}) unstable; urgency=medium\n\n"
        "  * Import patch from John Paul Adrian Glaubitz to fix build on sparc64\n"
        "    (Closes: #805570)\n"
        "  * Import patch from Helmut Grohne to Fix cross compilation for arm64\n"
        "    (Closes: #775050)\n"
        "  * Build with the hardening flags, run the test suite on every architecture\n"
        "    and install the examples (Closes: #790112)\n"
        "  * Use canonical Vcs-* URLs, bump the standards version to the current one and\n"
        "    add the upstream signing key so that uscan can verify new tarballs\n\n"
        " -- Christoph Egger <christoph@debian.org>  {date}"
    )
    first = entry.format(version="2.10-5", date="Sun, 20 Mar 2016 11:22:55 +0100")
    again = entry.format(version="2.10-5build1", date="Mon, 01 Mar 2025 14:14:03 +0000")
    verdict = detector.judge(0, 1, detector.features(first), detector.features(again))
    assert verdict is not None and verdict.kind == "near"


@pytest.mark.parametrize("who", ["", "  [ Helmut Grohne ]\n"], ids=["items", "items_under_a_name"])
def test_a_changelog_entry_s_first_item_quoted_in_another_entry_keeps_its_passage_key(
    detector, who
):
    # The version line heads the list: the first item is a passage without it, as where
    # another entry carries the item over, so the two are candidates through its key.
    item = who + (
        "  * Backport upstream security fix for CVE-2022-46908: when relying on --safe\n"
        "    for execution of an untrusted CLI script, does not properly implement the\n"
        "    azProhibitedFunctions protection mechanism (closes: #1026293).\n"
    )
    entry = (
        "sqlite3 (3.40.0-2) unstable; urgency=high\n\n" + item + "  * Enable large file "
        "support on 32-bit architectures (closes: #1026171).\n\n -- Laszlo Boszormenyi "
        "(GCS) <gcs@debian.org>  Sun, 18 Dec 2022 10:03:56 +0100"
    )
    carrying = (
        "unbound (1.16.2-1) unstable; urgency=medium\n\n  * New upstream minor release with "
        "many bugfixes and two features for the resolver.\n  * Merge the changes from the "
        "3.40.0-2 upload into this one, which said:\n" + item.replace("  ", "    ") + "\n"
        " -- Michael Tokarev <mjt@tls.msk.ru>  Fri, 12 Aug 2022 12:57:33 +0300"
    )
    passages = detector.passages(entry)
    assert passages[0].startswith("sqlite3") and "backport" not in passages[0]
    assert passages[1].startswith("helmut grohne" if who else "backport")
    words = [p.split() for p in detector.passages(carrying)]
    assert passages[1].split() in words  # the same passage, indented otherwise
    first, other = detector.features(entry), detector.features(carrying)
    assert first.passage_keys[1] in other.passage_keys
