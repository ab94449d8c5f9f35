"""The reference_mixed corpus of bench/corpora.py: Chinese reference pages naming English
functions, options and code, with a site's header, footer and standard sections."""

from __future__ import annotations

import dataclasses
import random
import re

from bench.corpora_parts import (
    MIN_SHARED,
    NEAR_MIN,
    Assembler,
    Dispenser,
    Titles,
    embed_page,
    grouped_wrappers,
    keeps,
    lenders,
    line_run,
    paragraph_run,
    wrap,
)
from bench.corpus import EDITS, Corpus, Doc, Wrapper, make_wrapper
from bench.textpool import Signature, chinese_pool, option_names, pool_split, signatures, split_of

_SITES = (
    ("码农文档网", "京ICP备17023561号"),
    ("开发者手册", "沪ICP备19008834号"),
    ("Python 中文参考", "粤ICP备16051122号"),
    ("编程百科", "浙ICP备18040275号"),
)
# Standard sections every page of a site carries.
_NOTES = (
    "注意事项：本页示例基于 CPython 3.11 编写，其他版本的参数与返回值可能不同；"
    "在多线程环境中调用前请先阅读线程安全说明，涉及文件与网络的操作请做好异常处理。",
    "注意事项：文中的命令行选项以长格式书写，短格式请参阅各工具的帮助信息；"
    "示例代码未经充分测试，请勿直接用于生产环境，转载请注明出处并保留原文链接。",
)
_DISCLAIMER = "免责声明：本站内容由社区贡献，仅供学习参考，不代表本站观点。如有侵权请联系我们删除。"
_NEAR_ZH = ("substitute", "delete_sentence", "insert_sentence", "reorder", "punctuation_width")
_NEAR_ZH += ("traditional", "one_sentence", "combined", "wrapper")
_INLINE = ("（参见 `{}`）", "，可以使用 `{}`，", "（对应选项 `{}`）", "，详见 `{}`。")
_QUOTE_LEADS = ("文档中这样写道：", "官方说明如下：", "引用原文：", "")


def _header(site: tuple[str, str], module: str) -> str:
    return f"{site[0]} | 首页 > Python 标准库 > {module}\n登录 | 注册 | 搜索文档"


def _footer(site: tuple[str, str], index: int) -> str:
    note = _NOTES[index % len(_NOTES)]
    links = "关于我们 | 联系我们 | 意见反馈"
    return f"{note}\n{_DISCLAIMER}\n{links}\n版权所有 © 2015-2025 {site[0]} {site[1]}"


def _option(sig: Signature, options: list[str], rng: random.Random) -> str:
    if sig.params and rng.random() < 0.6:
        return "--" + rng.choice(sig.params).replace("_", "-")
    return rng.choice(options)


def _sentences(text: str) -> list[str]:
    return [s for s in re.findall(r"[^。！？\n]+[。！？]?", text) if len(s.strip()) >= 6]


def _mix(sentences: list[str], tokens: list[str], rng: random.Random) -> str:
    """Join Chinese sentences, naming an English token in some of them."""
    out = []
    for s in sentences:
        if tokens and rng.random() < 0.45:
            form = rng.choice(_INLINE).format(rng.choice(tokens))
            cut = s.find("，")
            s = (s[:cut] + form + s[cut + 1 :]) if cut > 0 else s.rstrip("。") + form
        out.append(s)
    return "".join(out)


def _page_body(
    sigs: list[Signature], text: str, options: list[str], target: int, rng: random.Random
) -> list[str]:
    """Return the body lines of a page about `sigs` explained with Chinese `text`."""
    sents = _sentences(text)
    main = sigs[0]
    tokens = [s.text for s in sigs] + [_option(main, options, rng) for _ in range(2)]
    lines = [f"{main.module}.{main.name}", main.text]
    take = iter(sents)
    size = 0

    def some(n: int) -> list[str]:
        return [s for _, s in zip(range(n), take, strict=False)]

    lines.append(_mix(some(rng.randint(1, 3)), tokens, rng))
    if target > 300:
        lines.append("参数：")
        for param in main.params[:4]:
            lines.append(f"  {param}：{_mix(some(1), [], rng)}")
        lines.append(f"  {_option(main, options, rng)}：{_mix(some(1), [], rng)}")
        lines.append("示例：")
        lines += [f"  >>> {s.text}" for s in sigs[:3]]
    while size < target:
        para = _mix(some(rng.randint(2, 4)), tokens, rng)
        if not para:
            break
        lines.append(para)
        size = sum(map(len, lines))
    return [
        line
        for line in lines
        if (line.strip() and not re.search(r"\S：$", line.strip()[-2:]))
        or line in ("参数：", "示例：")
    ]


def reference_mixed(*, seed: int, split: str, size: int) -> Corpus:
    """Chinese reference pages with English names: near copies, pages, excerpts, negatives."""
    rng = random.Random(f"reference_mixed/{seed}/{split}")
    pool = Dispenser([p for p in pool_split(chinese_pool(), split) if len(p.text) >= 150], rng)
    sigs = [s for s in signatures() if split_of(f"sig:{s.module}") == split]
    options = [o for o in option_names() if split_of(f"option:{o}") == split] or ["--help"]
    rng.shuffle(sigs)
    by_module: dict[str, list[Signature]] = {}
    for s in sigs:
        by_module.setdefault(s.module, []).append(s)
    asm = Assembler("reference_mixed")
    lend = [p for p in (pool.take(300, 3000) for _ in range(80)) if p]
    asm.use(*lend)
    donors = lenders(lend, english=False)
    n_orig = size // 5
    n_neg = size - 4 * n_orig

    def chinese(target: int) -> str | None:
        """Return real Chinese text of about `target` characters, from one piece or a few."""
        parts: list[str] = []
        while sum(map(len, parts)) < target and len(parts) < 8:
            piece = pool.body(max(150, target - sum(map(len, parts))), target + 400)
            if piece is None:
                break
            asm.use(piece)
            parts.append(piece.text)
        return "\n".join(parts) if parts else None

    def page(i: int, target: int) -> tuple[str, str] | None:
        """Return (page, body) of about `target` characters, or None when text runs out."""
        text = chinese(target)
        modules = [m for m in by_module if by_module[m]]
        if text is None or not modules:
            return None
        module = modules[rng.randrange(len(modules))]
        # Each function is the subject of one page only; its own lines are page text.
        count = min(len(by_module[module]), rng.randint(1, 3))
        chosen = [by_module[module].pop() for _ in range(count)]
        if target < 100:  # a quick-reference card: a signature and a sentence or two
            body = "\n".join([chosen[0].text, _mix(_sentences(text)[:2], [], rng)])
            return body, body
        body = "\n".join(_page_body(chosen, text, options, target, rng))
        site = _SITES[i % len(_SITES)]
        if target < 300:  # a snippet: the site's name and the text
            return f"{site[0]} | {module}\n{body}", body
        see = "、".join(rng.choice(by_module[module] or chosen).name for _ in range(2))
        text = "\n".join(
            [_header(site, module), body, f"参见：{see}", _footer(site, i // len(_SITES))]
        )
        return text, body

    targets = [rng.choice((60, 200, 600, 1300, 2000)) for _ in range(n_orig + n_neg)]
    origs: list[tuple[Doc, str]] = []
    for i in range(n_orig):
        made = page(i, targets[i])
        if made is None:
            break
        origs.append((asm.original(f"ref-{i:04d}", made[0]), made[1]))
    plans = {d.family: rng.sample(_NEAR_ZH, 2) for d, _ in origs}
    # Siblings first: every wrapper made is used, by three to five families.
    n_sib = n_neg // 4
    siblings = [m for m in (page(n_orig + k, targets[n_orig + k]) for k in range(n_sib)) if m]
    slots = sum("wrapper" in p for p in plans.values()) + len(siblings)
    titles = Titles(pool_split(chinese_pool(), split), rng)

    def make() -> Wrapper:
        w = make_wrapper(rng, donors)
        return dataclasses.replace(w, related=titles.take(len(w.related)))

    wrappers = grouped_wrappers(slots, rng, make)
    skipped = 0
    for orig, body in origs:
        doc_rng = random.Random(f"reference_mixed/{seed}/{orig.family}")
        for kind in plans[orig.family]:
            if kind == "wrapper":
                text = wrap(wrappers.pop(), orig.text)
            else:
                try:
                    text = EDITS[kind](orig.text, doc_rng, donors)
                except (IndexError, ValueError):
                    text = None
            if text is None or text == orig.text or keeps(orig.text, text) < NEAR_MIN:
                skipped += 1
                continue
            asm.copy(orig, kind, text)
        if len(orig.text) >= 140:
            _partial_zh(asm, orig, body, doc_rng, pool, donors)
    for k, made in enumerate(siblings):
        asm.negative(f"ref-s{k:04d}", "template_sibling", wrap(wrappers.pop(), made[0]))
    for k in range(n_sib, n_neg):
        made = page(n_orig + k, targets[n_orig + k])
        if made is None:
            break
        asm.negative(f"ref-n{k:04d}", "shared_boilerplate", made[0])
    return asm.finish(skipped_copies=skipped, signatures=len(sigs), options=len(options))


def _partial_zh(
    asm: Assembler, orig: Doc, body: str, rng: random.Random, pool: Dispenser, donors
) -> None:
    """Add one partial copy of page `orig`: in a forum page, after another text, or quoted."""
    size = len(orig.text)
    kinds = ["embedded", "concatenated"]
    units = [u for line in body.split("\n") for u in re.findall(r"[^。！？]+[。！？]?", line)]
    lo = max(MIN_SHARED, int(0.4 * size))
    run = line_run(units, lo, max(lo, int(0.75 * size)), rng) if len(body) >= lo else None
    if run:
        kinds.append("excerpt")
    kind = rng.choice(kinds)
    if kind == "excerpt":
        host = pool.body(size // 2, 2 * size + 200)
        if host:
            asm.use(host)
            quote = "".join(run)
            paras = host.text.split("\n")
            paras.insert(rng.randint(1, max(1, len(paras) - 1)), rng.choice(_QUOTE_LEADS) + quote)
            asm.copy(orig, "excerpt", "\n".join(paras), (quote,))
            return
        kind = "embedded"
    if kind == "concatenated":
        other = pool.body(int(size * 0.8), int(size * 1.25) + 100)
        if other:
            asm.use(other)
            parts = [orig.text, other.text] if rng.random() < 0.5 else [other.text, orig.text]
            asm.copy(orig, kind, "\n".join(parts), tuple(orig.text.split("\n")))
            return
    runs = []
    for _ in range(rng.randint(2, 3)):
        other = pool.body(max(100, size // 3), size + 300)
        if other:
            asm.use(other)
            runs.append(paragraph_run(other.text, max(100, size // 3), rng))
    if not runs:
        return
    heads = [
        rng.choice(("热门帖子", "精华推荐", "上一篇")),
        rng.choice(("网友回复", "相关讨论", "下一篇")),
    ]
    page = embed_page(make_wrapper(rng, donors), orig.text, runs, heads, rng)
    asm.copy(orig, "embedded", page, tuple(p for p in orig.text.split("\n") if p.strip()))
