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
