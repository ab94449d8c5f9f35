"""The templated corpus of bench/corpora.py: reports whose template is the same and whose facts
differ (weather, market closes, match results, public notices; Chinese and English).

Every report is a family of its own (kind "templated"): two reports of one template are not
copies however alike they read. A few reports are reposted with light edits (near copies) or
shown inside a page among real text (embedded); those reports are "original". Each template has
two wordings: the tune half uses one, the test half the other, and the places, teams and
indices are split by name too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.corpora_parts import (
    EN_EDITS,
    NEAR_MIN,
    Assembler,
    Dispenser,
    edit,
    embed_page,
    keeps,
    lenders,
    paragraph_run,
)
from bench.corpus import EDITS, Corpus, Doc, make_wrapper
from bench.textpool import SPLITS, chinese_pool, english_pool, pool_split, stable_hash


def _names(text: str) -> list[str]:
    return text.split()


_CITIES_ZH = _names(
    "北京 上海 广州 深圳 天津 重庆 成都 武汉 杭州 南京 西安 长沙 郑州 济南 青岛 沈阳 大连 哈尔滨 "
    "长春 昆明 贵阳 南宁 福州 厦门 合肥 南昌 太原 石家庄 兰州 西宁 银川 乌鲁木齐 拉萨 呼和浩特 "
    "海口 三亚 苏州 无锡 宁波 温州"
)
_CITIES_EN = _names(
    "London Paris Berlin Madrid Rome Vienna Prague Warsaw Dublin Lisbon Oslo Stockholm Helsinki "
    "Copenhagen Amsterdam Brussels Zurich Geneva Athens Budapest Boston Chicago Denver Seattle "
    "Austin Toronto Montreal Vancouver Sydney Melbourne Auckland Edinburgh Manchester Leeds "
    "Glasgow Cardiff Bristol Lyon Munich"
)
_SKY_ZH = _names("晴 多云 阴 小雨 中雨 阵雨 雷阵雨 小雪 雨夹雪 晴转多云 多云转阴")
_SKY_EN = ("sunny", "partly cloudy", "overcast", "light rain", "showers", "thunderstorms", "fog")
_WIND_ZH = _names("东风 南风 西风 北风 东北风 东南风 西北风 西南风")
_WIND_EN = _names("north north-east east south-east south south-west west north-west")
_INDEX_ZH = _names(
    "上证指数 深证成指 创业板指 沪深300 上证50 中证500 科创50 恒生指数 恒生科技指数 北证50"
)
_INDEX_EN = (
    "S&P 500",
    "Dow Jones Industrial Average",
    "Nasdaq Composite",
    "FTSE 100",
    "DAX",
    "CAC 40",
    "Nikkei 225",
    "Euro Stoxx 50",
    "Russell 2000",
    "ASX 200",
)
_SECTOR_ZH = _names(
    "半导体 白酒 银行 证券 保险 房地产 煤炭 有色金属 光伏 医药 汽车 军工 电力 传媒 游戏"
)
_SECTOR_EN = _names("technology energy financials utilities materials industrials telecoms")
_SECTOR_EN += ["health care", "real estate", "consumer staples"]
_CLUBS_ZH = _names(
    "海港 泰山 国安 申花 蓉城 三镇 亚泰 津门虎 梅州客家 河南 沧州雄狮 "
    "青岛海牛 南通支云 浙江 大连英博 深圳新鹏城"
)
_CLUBS_EN = _names("Rovers United City Athletic Wanderers Albion Town County Rangers Villa")
_SURNAMES = _names("王 李 张 刘 陈 杨 赵 黄 周 吴 徐 孙 胡 朱 高 林 何 郭 马 罗")
_GIVEN = _names("伟 芳 娜 敏 静 磊 强 军 洋 勇 艳 杰 涛 明 超 华 鹏 辉 鑫 宇")
_FIRST_EN = _names("James Oliver Harry Jack Noah Leo Lucas Mason Ethan Adam Liam Owen Ryan Sam Tom")
_LAST_EN = _names("Walker Wright Hughes Green Hall Wood Clarke Turner Hill Moore Cooper Ward Baker")
_ROADS = _names("人民 解放 中山 建设 和平 胜利 光明 文化 长江 黄河 友谊 新华 青年 朝阳 东风 复兴")
_STREETS_EN = _names(
    "High Station Church Park Mill Victoria Queen King Bridge Market Oak Elm Maple"
)
_MONTHS = _names("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec")

# Each template has two wordings: index 0 for the tune half, 1 for the test half.
_TEMPLATES = {
    ("weather", "zh"): (
        "{city}天气预报（{date}）\n{city}市气象台{time}发布：今天白天{sky1}，夜间{sky2}，"
        "最高气温{hi}℃，最低气温{lo}℃，{wind}{lvl}级。相对湿度{hum}%，"
        "空气质量指数{aqi}，{aq}。\n{outlook}\n温馨提示：早晚温差较大，"
        "请注意适时增减衣物；雨天路滑，出行请注意交通安全，驾车减速慢行。",
        "【{city}天气】{date}\n据{city}市气象台{time}消息，今日{sky1}，夜间转{sky2}，"
        "气温{lo}～{hi}℃，{wind}{lvl}级，湿度{hum}%，AQI {aqi}（{aq}）。\n{outlook}\n"
        "气象部门提醒：近期天气多变，请关注最新预报预警信息，合理安排生产生活和出行计划。",
    ),
    ("weather", "en"): (
        "{city} weather for {date}\nThe {city} forecast office said at {time}: {sky1} during the "
        "day, {sky2} overnight. High {hi}°C, low {lo}°C, winds from the {wind} at {spd} km/h. "
        "Humidity {hum}%, air quality index {aqi}.\n{outlook}\nAdvice: temperatures will vary "
        "widely between morning and evening, so dress in layers. Drivers should allow extra time "
        "on wet roads.",
        "Forecast: {city}, {date}\nIssued {time}. Expect {sky1} today and {sky2} tonight, with "
        "temperatures between {lo}°C and {hi}°C and {wind} winds of {spd} km/h. Relative humidity "
        "{hum}%; AQI {aqi}.\n{outlook}\nStay up to date with the latest warnings from the weather "
        "service and plan outdoor activities accordingly.",
    ),
    ("market", "zh"): (
        "{date}收盘：{index}报{close}点，{dir}{chg}点，{dir}幅{pct}%\n截至收盘，"
        "{index}报{close}点，成交额{turn}亿元。两市个股{up}家上涨，{down}家下跌。"
        "板块方面，{sectors}。北向资金全天净{flow}{north}亿元。\n"
        "分析人士认为，短期市场仍以结构性行情为主，投资者应关注政策面与基本面的变化，"
        "控制仓位，理性投资。",
        "【收评】{index}{dir}{pct}%，收报{close}点\n{date}，{index}收盘报{close}点，"
        "{dir}{chg}点。全天成交{turn}亿元，上涨{up}家，下跌{down}家。行业板块中，{sectors}。"
        "北向资金净{flow}{north}亿元。\n"
        "风险提示：以上内容仅供参考，不构成投资建议。股市有风险，投资需谨慎。",
    ),
    ("market", "en"): (
        "Markets close {date}: {index} {dir_en} {pct}% at {close}\nThe {index} closed at "
        "{close}, {dir_en} {chg} points or {pct}%, on volume of {turn} million shares. Advancers "
        "outnumbered decliners {up} to {down}. By sector, {sectors}.\nAnalysts said investors "
        "remain focused on interest rates and earnings. This report is for information only and "
        "is not investment advice.",
        "{index} ends {dir_en} {pct}% on {date}\nAt the close the {index} stood at {close}, a "
        "move of {chg} points. Volume was {turn} million shares; {up} issues rose and {down} "
        "fell. Among sectors, {sectors}.\nPast performance is not a reliable indicator of future "
        "results. Figures are provisional and may be revised.",
    ),
    ("sports", "zh"): (
        "{league}第{round}轮：{home} {hs}比{as_} {away}\n{date}，{league}第{round}轮在"
        "{city}进行，{home}主场{verb}{away}。{scorers}本场比赛共有{crowd}名观众到场观战。"
        "赛后，{home}积{pts}分暂列积分榜第{rank}位。\n（本报记者 {reporter}）",
        "【{league}】{home}{hs}:{as_}{away}\n{date}晚，{league}第{round}轮一场焦点战在"
        "{city}打响，最终{home}以{hs}比{as_}{verb}{away}。{scorers}现场观众{crowd}人。"
        "{home}目前积{pts}分，排名第{rank}。\n记者：{reporter}",
    ),
    ("sports", "en"): (
        "{league}, round {round}: {home} {hs}-{as_} {away}\n{home} {verb_en} {away} {hs}-{as_} "
        "in {city} on {date}. {scorers} The attendance was {crowd}. {home} move to {pts} points "
        "and sit {rank_en} in the table.\nReporting by {reporter}.",
        "{home} {hs} {away} {as_} ({league}, matchday {round})\nIn front of {crowd} fans in "
        "{city} on {date}, {home} {verb_en} {away} by {hs} goals to {as_}. {scorers} The result "
        "leaves {home} {rank_en} on {pts} points.\nMatch report: {reporter}.",
    ),
    ("notice", "zh"): (
        "关于{road}路段临时{what}的通告\n因{reason}，{issuer}定于{date}{start}时至{end}时"
        "对{road}（{from_}至{to}段）实施临时{what}。届时请广大市民提前做好准备，合理安排出行，"
        "由此带来的不便，敬请谅解。\n咨询电话：{phone}\n特此通告。\n{issuer}\n{date}",
        "{issuer}公告：{road}一带{date}临时{what}\n接上级通知，因{reason}，{date}{start}时"
        "至{end}时，{road}{from_}至{to}区间将临时{what}。请相关单位和居民提前储备，注意安全。"
        "给您带来不便，敬请谅解！\n服务热线：{phone}\n{issuer}",
    ),
    ("notice", "en"): (
        "Notice of temporary {what_en} on {road}\nDue to {reason_en}, {issuer} will carry out a "
        "temporary {what_en} on {road} between {from_} and {to} on {date} from {start}:00 to "
        "{end}:00. Residents are advised to make arrangements in advance. We apologise for any "
        "inconvenience.\nEnquiries: {phone}\n{issuer}",
        "{issuer}: planned {what_en}, {road}, {date}\nBecause of {reason_en}, there will be a "
        "{what_en} affecting {road} from {from_} to {to} on {date}, {start}:00-{end}:00. Please "
        "plan ahead. Thank you for your patience.\nHelpline: {phone}\n{issuer}",
    ),
}
# Short flash versions, under 140 characters: the hardest case for a fingerprint.
_FLASH = {
    ("weather", "zh"): (
        "{city}{date}：{sky1}，{lo}～{hi}℃，{wind}{lvl}级。",
        "{city}今日{sky1}，气温{lo}至{hi}度，{wind}{lvl}级，AQI {aqi}。",
    ),
    ("weather", "en"): (
        "{city}, {date}: {sky1}, {lo}-{hi}°C, {wind} wind {spd} km/h.",
        "{city} today: {sky1}, high {hi}°C, low {lo}°C, AQI {aqi}.",
    ),
    ("market", "zh"): (
        "【快讯】{index}{date}收报{close}点，{dir}{pct}%，成交{turn}亿元。",
        "{index}收盘{dir}{pct}%，报{close}点（{date}）。",
    ),
    ("market", "en"): (
        "{index} closes {dir_en} {pct}% at {close} ({date}).",
        "Close {date}: {index} {close}, {dir_en} {chg} pts ({pct}%).",
    ),
    ("sports", "zh"): (
        "{league}第{round}轮：{home}{hs}比{as_}{away}（{date}）",
        "终场：{home} {hs}:{as_} {away}，{league}第{round}轮。",
    ),
    ("sports", "en"): (
        "FT {league} R{round}: {home} {hs}-{as_} {away} ({date})",
        "Full time: {home} {hs}, {away} {as_} ({league}, {date}).",
    ),
    ("notice", "zh"): (
        "{date}{start}时至{end}时，{road}（{from_}至{to}段）临时{what}。",
        "通知：{road}{date}{start}-{end}时{what}，咨询{phone}。",
    ),
    ("notice", "en"): (
        "{road} ({from_} to {to}): {what_en} on {date}, {start}:00-{end}:00.",
        "Notice: {what_en} on {road}, {date} {start}:00-{end}:00. Info {phone}.",
    ),
}
_REASONS = (
    ("管网检修", "mains repairs"),
    ("道路施工", "road works"),
    ("线路改造", "cable upgrades"),
    ("设备维护", "equipment maintenance"),
    ("大型活动", "a public event"),
)
_WHAT = (
    (
        "停水",
        "water supply interruption",
        ("市供水有限公司", "自来水公司"),
        ("Water", "Water Services"),
    ),
    ("停电", "power outage", ("供电公司", "电力局"), ("Power Networks", "Electricity")),
    (
        "交通管制",
        "road closure",
        ("交通运输局", "公安局交通管理支队"),
        ("City Council", "Highways Agency"),
    ),
)


def _half(values: Sequence[str], split: str) -> list[str]:
    """Return every other one of `values` in an order of their hashes: the half `split` has."""
    ranked = sorted(dict.fromkeys(values), key=lambda v: stable_hash(f"name:{v}"))
    return ranked[SPLITS.index(split) :: 2]


def _date(rng: random.Random, zh: bool, month: tuple[int, int] | None = None) -> str:
    """Draw a date (in `month`, a year and month, when given)."""
    y, m = month or (rng.randint(2015, 2025), rng.randint(1, 12))
    d = rng.randint(1, 28)
    return f"{y}年{m}月{d}日" if zh else f"{d} {_MONTHS[m - 1]} {y}"


def _person(rng: random.Random, zh: bool) -> str:
    if zh:
        return (
            rng.choice(_SURNAMES)
            + rng.choice(_GIVEN)
            + (rng.choice(_GIVEN) if rng.random() < 0.6 else "")
        )
    return f"{rng.choice(_FIRST_EN)} {rng.choice(_LAST_EN)}"


def _facts(kind: str, zh: bool, rng: random.Random, names: dict[str, list[str]]) -> dict[str, str]:
    """Draw the facts of one report."""
    f: dict[str, str] = {
        "date": _date(rng, zh),
        "time": f"{rng.randint(5, 18)}:{rng.choice(('00', '30'))}",
    }
    if kind == "weather":
        lo = rng.randint(-15, 25)
        sky = _SKY_ZH if zh else _SKY_EN
        days = []
        for k in range(rng.randint(0, 6)):
            a = rng.randint(-15, 25)
            day = f"{k + 2}日后" if zh else f"Day {k + 2}"
            days.append(
                f"{day}：{rng.choice(sky)}，{a}～{a + rng.randint(3, 12)}℃"
                if zh
                else f"{day}: {rng.choice(sky)}, {a} to {a + rng.randint(3, 12)}°C"
            )
        outlook = (
            ("未来几天：" if zh else "Outlook: ") + ("；".join(days) if zh else "; ".join(days))
            if days
            else ""
        )
        f.update(
            city=rng.choice(names["city"]),
            sky1=rng.choice(sky),
            sky2=rng.choice(sky),
            lo=str(lo),
            hi=str(lo + rng.randint(3, 14)),
            wind=rng.choice(_WIND_ZH if zh else _WIND_EN),
            lvl=str(rng.randint(1, 6)),
            spd=str(rng.randint(5, 60)),
            hum=str(rng.randint(15, 98)),
            aqi=str(rng.randint(15, 320)),
            aq=rng.choice(("优", "良", "轻度污染", "中度污染")),
            outlook=outlook,
        )
    elif kind == "market":
        close = rng.uniform(800, 40000)
        pct = rng.uniform(0.01, 4.5)
        up = rng.random() < 0.5
        sectors = rng.sample(_SECTOR_ZH if zh else _SECTOR_EN, rng.randint(2, 5))
        if zh:
            parts = [
                f"{s}板块{'涨' if rng.random() < 0.5 else '跌'}{rng.uniform(0.1, 6):.2f}%"
                for s in sectors
            ]
            text = "，".join(parts)
        else:
            text = ", ".join(
                f"{s} {'rose' if rng.random() < 0.5 else 'fell'} {rng.uniform(0.1, 6):.2f}%"
                for s in sectors
            )
        f.update(
            index=rng.choice(names["index"]),
            close=f"{close:.2f}",
            pct=f"{pct:.2f}",
            chg=f"{close * pct / 100:.2f}",
            dir="涨" if up else "跌",
            dir_en="up" if up else "down",
            turn=str(rng.randint(300, 15000)),
            up=str(rng.randint(100, 4500)),
            down=str(rng.randint(100, 4500)),
            sectors=text,
            flow=rng.choice(("流入", "流出")),
            north=f"{rng.uniform(1, 150):.2f}",
        )
    elif kind == "sports":
        home, away = rng.sample(names["club"], 2)
        hs, as_ = rng.randint(0, 5), rng.randint(0, 5)
        goals = []
        for side, n in ((home, hs), (away, as_)):
            for _ in range(n):
                who = _person(rng, zh)
                minute = rng.randint(1, 90)
                goals.append(
                    f"第{minute}分钟，{side}球员{who}破门。"
                    if zh
                    else f"{who} scored for {side} in the {minute}th minute."
                )
        rng.shuffle(goals)
        f.update(
            league=rng.choice(
                ("中超联赛", "中甲联赛", "足协杯")
                if zh
                else ("Premier Division", "Championship", "League Cup")
            ),
            round=str(rng.randint(1, 30)),
            home=home,
            away=away,
            hs=str(hs),
            as_=str(as_),
            verb=("战胜" if hs > as_ else "负于" if hs < as_ else "战平"),
            verb_en=("beat" if hs > as_ else "lost to" if hs < as_ else "drew with"),
            scorers="".join(goals) if zh else " ".join(goals),
            crowd=str(rng.randint(3000, 60000)),
            pts=str(rng.randint(0, 80)),
            rank=str(rng.randint(1, 16)),
            rank_en=f"{rng.randint(1, 16)}th",
            city=rng.choice(names["city"]),
            reporter=_person(rng, zh),
        )
    else:
        what = rng.choice(_WHAT)
        reason = rng.choice(_REASONS)
        roads = rng.sample(_ROADS, 3) if zh else rng.sample(_STREETS_EN, 3)
        suffix = ("路", "街", "大道") if zh else (" Road", " Street", " Avenue")
        start = rng.randint(0, 20)
        f.update(
            road=roads[0] + rng.choice(suffix),
            from_=roads[1] + rng.choice(suffix),
            to=roads[2] + rng.choice(suffix),
            what=what[0],
            what_en=what[1],
            reason=reason[0],
            reason_en=reason[1],
            issuer=(rng.choice(names["city"]) + rng.choice(what[2]))
            if zh
            else f"{rng.choice(names['city'])} {rng.choice(what[3])}",
            start=str(start),
            end=str(start + rng.randint(2, 10)),
            phone=f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}",
        )
    return f


def templated(*, seed: int, split: str, size: int) -> Corpus:
    """Templated reports, each its own family; a few reposted (near) or put in a page."""
    rng = random.Random(f"templated/{seed}/{split}")
    variant = SPLITS.index(split)
    names = {
        "zh": {
            "city": _half(_CITIES_ZH, split),
            "index": _half(_INDEX_ZH, split),
            "club": [f"{c}队" for c in _half(_CLUBS_ZH, split)],
        },
        "en": {
            "city": _half(_CITIES_EN, split),
            "index": _half(_INDEX_EN, split),
            "club": _half([f"{c} {k}" for c in _CITIES_EN[:8] for k in _CLUBS_EN], split),
        },
    }
    zh_pool = Dispenser([p for p in pool_split(chinese_pool(), split) if len(p.text) >= 150], rng)
    en_pool = Dispenser(
        [p for p in pool_split(english_pool(), split) if p.origin == "insuranceqa-en"], rng
    )
    asm = Assembler("templated")
    lend_zh = [p for p in (zh_pool.take(300, 3000) for _ in range(40)) if p]
    lend_en = [p for p in (en_pool.take(300, 3000) for _ in range(40)) if p]
    asm.use(*lend_zh, *lend_en)
    donors = {"zh": lenders(lend_zh, False), "en": lenders(lend_en, True)}
    seen: set[str] = set()
    reports: list[tuple[str, str]] = []
    while len(reports) < size * 0.87:
        kind = rng.choice(("weather", "market", "sports", "notice"))
        lang = rng.choice(("zh", "en"))
        facts = _facts(kind, lang == "zh", rng, names[lang])
        template = (_FLASH if rng.random() < 0.25 else _TEMPLATES)[kind, lang][variant]
        text = template.format(**facts).replace("\n\n", "\n").strip()
        if text not in seen:
            seen.add(text)
            reports.append((lang, text))
    # A series: one issuer's notices for one street on other days, the rest the same (the
    # stretch, the reason, the hotline; the hours half of the time); each one a report of its
    # own, drawn apart from the reports above (those stay as they were).
    series = _series(reports, seed, split, names, variant, seen)
    copied = 0
    for i, (lang, text) in enumerate(reports):
        fid = f"tpl-{i:05d}"
        doc_rng = random.Random(f"templated/{seed}/{fid}")
        if doc_rng.random() >= 0.08:
            asm.negative(fid, "templated", text)
            continue
        orig = asm.original(fid, text)
        copied += 1
        _near(asm, orig, lang, doc_rng, donors[lang])
        # In a page only a report long enough to carry real facts, not just its template.
        if len(text) >= 300 and doc_rng.random() < 0.8:
            _embedded(asm, orig, lang, doc_rng, zh_pool if lang == "zh" else en_pool, donors[lang])
    for i, (_lang, text) in enumerate(series):
        asm.negative(f"tpl-s{i:05d}", "templated", text)
    return asm.finish(reports=len(reports), reports_with_copies=copied, series=len(series))


SERIES_SHARE = 0.05  # series, as a share of the reports


def _series(
    reports: list[tuple[str, str]],
    seed: int,
    split: str,
    names: dict,
    variant: int,
    seen: set[str],
) -> list[tuple[str, str]]:
    """Return the reports of series: 2 to 4 notices of one issuer for one street on other days
    (and, half of the time, at other hours), everything else the same: the template is filled
    in with the same facts but the date, the one that tells them apart."""
    rng = random.Random(f"templated/{seed}/{split}/series")
    out = []
    for _ in range(round(SERIES_SHARE * len(reports))):
        kind = "notice"
        lang = rng.choice(("zh", "en"))
        facts = _facts(kind, lang == "zh", rng, names[lang])
        template = _TEMPLATES[kind, lang][variant]
        month = rng.randint(2015, 2025), rng.randint(1, 12)
        for _ in range(rng.randint(2, 4)):  # the first and 1 to 3 more, in one month
            day = dict(facts, date=_date(rng, lang == "zh", month))
            if rng.random() < 0.5:
                start = rng.randint(0, 20)
                day.update(start=str(start), end=str(start + rng.randint(2, 10)))
            text = template.format(**day).replace("\n\n", "\n").strip()
            if text not in seen:
                seen.add(text)
                out.append((lang, text))
    return out


def _near(asm: Assembler, orig: Doc, lang: str, rng: random.Random, donors) -> None:
    """Repost `orig` with a light edit (one or two copies)."""
    if lang == "zh":
        kinds = ("substitute", "delete_sentence", "punctuation_width", "traditional", "reorder")
    else:
        kinds = ("substitute", "delete_sentence", "reflow", "reorder")
    for kind in rng.sample(kinds, rng.randint(1, 2)):
        if lang == "zh":
            try:
                text = EDITS[kind](orig.text, rng, donors)
            except (IndexError, ValueError):
                continue
        else:
            text = edit(kind, orig.text, rng, donors) if kind in EN_EDITS else None
        if text and text != orig.text and keeps(orig.text, text) >= NEAR_MIN:
            asm.copy(orig, kind, text)


def _embedded(
    asm: Assembler, orig: Doc, lang: str, rng: random.Random, pool: Dispenser, donors
) -> None:
    """Show `orig` in a news page between runs of real text twice its length or more."""
    runs = []
    for _ in range(rng.randint(2, 3)):
        other = pool.body(max(150, len(orig.text)), 3 * len(orig.text) + 300)
        if other:
            asm.use(other)
            runs.append(paragraph_run(other.text, max(100, len(orig.text)), rng))
    if not runs:
        return
    heads = ("今日要闻", "相关阅读") if lang == "zh" else ("Top stories", "Related reading")
    page = embed_page(make_wrapper(rng, donors), orig.text, runs, heads, rng)
    asm.copy(orig, "embedded", page, tuple(p for p in orig.text.split("\n") if p.strip()))
