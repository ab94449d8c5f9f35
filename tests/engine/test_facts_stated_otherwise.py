"""Facts stated otherwise (dedup.engine.facts): notices of one template for the same street, on
other days and hours, are no copies of one another, though they keep most of their numbers
(the year, the month, the house numbers, the hotline); a copy edited keeps its date and hours."""

from __future__ import annotations

import itertools
import random

import pytest

from dedup.engine.verify import Detector, passage_owners_of

# Two streets, the same house numbers each time: what changes is the day and the hours.
STREETS = [("解放路", 12, 48), ("中山路", 3, 77)]
CAUSES = ["管网改造", "阀门更换", "管道抢修"]


def notice(rng: random.Random, day: int, start: int, end: int) -> str:
    street, first, last = rng.choice(STREETS)
    return (
        f"{street}停水通知\n\n因{rng.choice(CAUSES)}，定于2026年5月{day}日{start}:00至{end}:00对"
        f"{street}{first}号至{last}号停止供水，请广大用户提前储水，做好停水准备。\n\n"
        f"咨询电话：0571-96390\n\n{rng.choice(['城北', '城南'])}供水所"
    )


def notices(count: int, seed: int) -> list[str]:
    """Return `count` notices on days and with starting hours of their own (the hour ends
    alike or not)."""
    rng = random.Random(seed)
    days = rng.sample(range(1, 29), count)
    starts = [rng.choice([7, 8, 9]) for _ in range(count)]
    return [notice(rng, d, s, rng.choice([17, 18])) for d, s in zip(days, starts, strict=True)]


def reported(detector: Detector, texts: list[str]) -> list:
    features = [detector.features(t) for t in texts]
    owners = passage_owners_of(features)
    found = []
    for i in range(len(texts)):
        others = [(j, features[j]) for j in range(i + 1, len(texts))]
        found += detector.judge_many(i, features[i], others, owners)
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_notices_for_one_street_on_other_days_and_hours_are_not_reported(seed):
    detector = Detector()
    texts = notices(12, seed)
    # Those whose starting hour differs too: a day and an hour stated otherwise (one number
    # alone stated otherwise may be a copy's correction).
    found = [d for d in reported(detector, texts) if _hours(texts[d.a]) != _hours(texts[d.b])]
    assert found == []


def _hours(text: str) -> str:
    return text.split("日")[1].split("对")[0]


def test_a_notice_edited_keeping_its_day_and_hours_stays_near():
    detector = Detector()
    first = notices(1, 7)[0]
    edited = first.replace("请广大用户提前储水", "请各位居民提前储水").replace("0571-", "")
    verdict = detector.judge(0, 1, detector.features(first), detector.features(edited))
    assert verdict is not None and verdict.kind == "near"


@pytest.mark.parametrize(
    "order",
    list(itertools.permutations(range(3)))[1:],
    ids=lambda o: "".join(map(str, o)),
)
def test_a_flash_report_with_its_clauses_moved_stays_near(order):
    # A decimal (3.71%) is two numbers side by side: moved, it is one fact, not two changed.
    clauses = ["【快讯】恒生指数2015年1月5日收报24222.83点", "涨3.71%", "成交8821亿元"]
    first = "，".join(clauses) + "。"
    moved = "，".join(clauses[i] for i in order) + "。"
    detector = Detector()
    verdict = detector.judge(0, 1, detector.features(first), detector.features(moved))
    assert verdict is not None and verdict.kind == "near"


def power_notice(day: int, posted: int, hours: tuple[int, int] = (7, 15)) -> str:
    """A power cut notice of one template: the same street, lines and hours each time, on
    another day (posted two days before), with sentences of no number every notice repeats."""
    return (
        "停电公告\n\n因10千伏和平线线路检修需要，供电公司计划于2026年6月"
        f"{day}日{hours[0]}:00至{hours[1]}:00对和平路沿线进行停电作业。\n\n"
        "停电范围：和平路2号至260号、和平家园小区、和平路菜市场及周边商户。\n\n"
        "届时请相关用户提前做好停电准备，妥善安排生产生活。\n\n"
        "如遇天气等原因，检修工作将顺延进行，不再另行通知。\n\n"
        "停电期间请勿靠近、攀爬电力设施，注意用电安全。\n\n"
        f"供电服务热线：95598\n\n和平供电所\n\n2026年6月{posted}日"
    )


def test_notices_of_one_street_and_hours_on_other_days_are_no_copies_of_any_kind():
    # Only the day differs (and the day it was posted): another notice, not an edited copy,
    # and the sentences every notice repeats are its template, not a partial copy.
    detector = Detector()
    texts = [power_notice(day, day - 2) for day in (3, 10, 17, 24, 30)]
    assert reported(detector, texts) == []


def test_a_notice_copied_or_reposted_stays_a_copy_beside_its_siblings():
    detector = Detector()
    first = power_notice(17, 15)
    related = [
        "社区活动中心开放时间调整的说明",
        "关于开展夏季消防安全检查的通知",
        "和平家园小区垃圾分类投放点位公示",
        "老年人免费健康体检预约办法",
        "社区图书室新到图书目录",
        "和平路菜市场改造工程进展情况通报",
        "居民医保缴费时间及办理渠道提醒",
    ]
    page = "\n\n".join(
        ["首页 > 社区 > 通知公告", first, "相关阅读", *related, "版权所有 和平社区居委会"]
    )
    reposted = first.replace("2026年6月15日", "2026年6月16日") + "\n\n转自：和平社区居委会"
    texts = [first, power_notice(24, 22), page, reposted]
    found = {(d.a, d.b): d.kind for d in reported(detector, texts)}
    # The notice in a page is partial; reposted a day later it is near; its sibling of another
    # day is no copy of either, nor of the page that holds the first.
    assert found == {(0, 2): "partial", (0, 3): "near", (2, 3): "partial"}


def test_messages_of_one_template_for_other_identifiers_are_not_reported():
    # An identifier of letters and digits states a fact as a number does: another parcel,
    # order or flight, not the same message edited ("v2" or "mp3" name a thing).
    def message(code: str) -> str:
        return (
            f"Your order {code} has shipped and should arrive by Friday 6 pm. "
            "Reply STOP to opt out of delivery updates."
        )

    detector = Detector()
    texts = [message(code) for code in ("XK20491833Q", "XK20495521Q", "XK20770019Q")]
    texts.append(texts[0].replace("should arrive", "will arrive"))
    found = {(d.a, d.b): d.kind for d in reported(detector, texts)}
    assert found == {(0, 3): "near"}


def test_numbers_sharing_a_unit_are_told_apart_by_their_ids():
    """A word is one unit, a code point of about 131,000 chosen by its hash: orders 100130
    and 101123 of one template share one, and so every shingle; the number's own id tells
    them apart, a repost keeping the order stays near (issue 32: 1,062 such pairs among
    20,000 shipping notices)."""
    from dedup.engine.units import as_units

    detector = Detector()
    template = "Order {} has shipped from the warehouse today"
    units = {}
    for n in range(100_000, 120_000):
        unit = as_units(str(n))
        if unit in units:
            first, second = units[unit], n
            break
        units[unit] = n
    a, b = (detector.features(template.format(n)) for n in (first, second))
    assert a.shingles.tolist() == b.shingles.tolist()  # the engine's units cannot tell them
    assert detector.judge(0, 1, a, b) is None
    repost = detector.features(template.format(first) + " (via courier)")
    assert detector.judge(0, 1, a, repost).kind == "near"
