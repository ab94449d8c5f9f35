"""Held-out corpora of issue 29, built from real text the machine ships and never tuned on.

    python -m bench.heldout_corpora --name manuals --out /tmp/manuals.jsonl [--size N --seed S]

- manuals (bench/heldout_manuals.py): Debian's manual pages of a few projects (coreutils,
  util-linux, systemd, dpkg, apt, man-db, procps), one language of each page, rendered with
  groff: footers, credits and standard sections many pages hold, often with the page's own
  name or date in the same paragraph. Pages that are copies in the wild are labelled so; a
  few pages are re-wrapped or edited (near) or quoted in a /usr/share/doc page (excerpt).
- stock: Q&A answers (insuranceqa's English answers, the ones bench.textpool's English pool
  never takes). Each answerer pastes one stock paragraph (another real answer's paragraph) into
  5-20 of their answers, the rest of each answer its own and longer than it; a few answers
  are copied whole with edits (near) or quoted inside another answer (embedded).
- stories: People's Daily articles of the test half (bench.corpus), a few reposted 10-60 times
  (the first exactly 50): edited, put in a page, excerpted or embedded among other news; plus
  unrelated articles that quote one sentence of a story (source "quotes"), some reposted
  themselves, and unrelated background news.

Labels as bench.corpora: docs of one family are copies of one another, any two families are
not. `Corpus.stats["template"]` lists the normalised text known to be template (the manuals'
sentences held by three pages or more, the answerers' stock paragraphs, the pages' chrome);
`stats["stories"]` the story families and their reposts. Deterministic per seed.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
from collections import Counter
from pathlib import Path

from bench import corpus as news
from bench.corpora import prune
from bench.corpora_parts import edit, reflow
from bench.corpus import Corpus, Doc, band_of
from bench.textpool import normalise, split_of, stable_hash

HELDOUT = ("manuals", "stock", "stories")
DEFAULT_SIZE = {"manuals": 900, "stock": 700, "stories": 600}
STOCK_USES = (5, 20)  # answers an answerer pastes the stock paragraph into
POPULAR = 50  # reposts of the first story: the "50 of 50"
REPOSTS = (10, 60)
NEAR_EN = ("reflow", "substitute", "delete_sentence", "insert_sentence", "combined")
NEAR_ZH = ("substitute", "delete_sentence", "punctuation_width", "traditional", "wrapper")
NEAR_ZH += ("one_sentence", "combined")


def build(name: str, *, seed: int = 1, size: int | None = None) -> Corpus:
    """Return held-out corpus `name` of about `size` docs, drawn by `seed`."""
    if name not in HELDOUT:
        raise ValueError(f"unknown corpus {name!r}: choose from {', '.join(HELDOUT)}")
    size = DEFAULT_SIZE[name] if size is None else size
    if size < 30:
        raise ValueError("size must be 30 docs or more")
    from bench.heldout_manuals import manual_template, manuals

    docs = {"manuals": manuals, "stock": stock, "stories": stories}[name](seed, size)
    stats = docs.stats
    out = prune(docs)
    out.stats = {**stats, **out.stats}
    if name == "manuals":  # of the pages kept
        out.stats["template"] = manual_template(d.text for d in out if d.kind == "original")
    return out


def _add(docs: Corpus, family: str, kind: str, text: str, source: str, shared=()) -> None:
    """Append a doc; its id is "<family>/orig", else "<family>/<kind>", "<family>/<kind>-2"..."""
    name = "orig" if kind == "original" else kind
    n, doc_id = 1, f"{family}/{name}"
    while doc_id in docs.ids:
        n += 1
        doc_id = f"{family}/{name}-{n}"
    docs.ids.add(doc_id)
    band = docs.bands.setdefault(family, band_of(len(text)))  # the original's, as every copy's
    docs.append(Doc(doc_id, text, family, kind, source, band, tuple(shared)))


def _corpus() -> Corpus:
    docs = Corpus()
    docs.ids, docs.bands = set(), {}
    return docs


@functools.cache
def _donors() -> news.Donors:
    """Donors of English edits' inserted sentences and words: answers no corpus here holds."""
    return news.Donors(tuple(t for i, t in _answers() if stable_hash(f"donor:{i}") % 10 == 0),
                       english=True)  # fmt: skip


# --- stock answers -----------------------------------------------------------------------------


@functools.cache
def _answers() -> tuple[tuple[int, str], ...]:
    """insuranceqa's English answers that bench.textpool's English pool does not take."""
    return tuple(
        (i, t)
        for i, t in enumerate(news.load_insuranceqa("en"))
        if 200 <= len(t) <= 2000 and stable_hash(f"pick:{i}") % 8 != 0
    )


def stock(seed: int, size: int) -> Corpus:
    """Answers with answerers' stock paragraphs, a few copied whole or quoted in another."""
    rng = random.Random(f"stock:{seed}")
    answers = [(i, t) for i, t in _answers() if stable_hash(f"donor:{i}") % 10 != 0]
    rng.shuffle(answers)
    docs, template, n = _corpus(), [], 0
    while len(docs) < size and n < len(answers) - 40:
        # One answerer: a stock paragraph (another answer's opening paragraph) and 5-20 answers.
        stock_text = answers[n][1].split("\n")[0]
        n += 1
        if len(stock_text) < 120:
            continue
        template.append(normalise(stock_text))
        who = f"answerer{len(template)}"
        # A paste into an answer, the rest of it its own: answers longer than the paragraph.
        uses = rng.randint(*STOCK_USES)
        theirs = [a for a in answers[n:] if len(a[1]) >= len(stock_text)][:uses]
        used = {i for i, _ in theirs}
        answers[n:] = [a for a in answers[n:] if a[0] not in used]
        for i, own in theirs:
            text = f"{stock_text}\n{own}" if rng.random() < 0.5 else f"{own}\n{stock_text}"
            family = f"qa:{i}"
            _add(docs, family, "original", text, who)
            roll = rng.random()
            if roll < 0.08:  # copied whole, edited: a near copy (the stock paragraph with it)
                kind = rng.choice(NEAR_EN)
                copy = reflow(text, rng) if kind == "reflow" else edit(kind, text, rng, _donors())
                if copy and copy != text:
                    _add(docs, family, kind, copy, "copier")
            elif roll < 0.14 and len(own) >= 300:  # quoted inside another's answer
                host = answers[n][1]
                n += 1
                quoted = f"{host}\nAs another answer here put it:\n{own}"
                _add(docs, family, "embedded", quoted, "quoter", [own])
    docs.stats = {"template": template, "answerers": len(template)}
    return docs


# --- popular stories --------------------------------------------------------------------------


def stories(seed: int, size: int) -> Corpus:
    """A few stories reposted 10-60 times (the first 50), quoting articles, background news."""
    rng = random.Random(f"stories:{seed}")
    pool = [
        t for t in news.load_peoples_daily()
        if 500 <= len(t) <= 2500 and split_of(f"news:{t}") == "test"
    ]  # fmt: skip
    rng.shuffle(pool)
    donors = news.Donors(tuple(pool[-400:]))
    pool = pool[:-400]
    counts = [POPULAR]
    while sum(counts) + len(counts) < size * 0.55:
        counts.append(rng.randint(*REPOSTS))
    if sum(counts) + len(counts) > size:  # a small corpus: the popular story and a smaller one
        counts = [min(POPULAR, size // 2), max(10, size // 5)]
    docs, template, reposts = _corpus(), [], {}
    quoted: list[tuple[str, str]] = []
    for k, count in enumerate(counts):
        text = pool.pop()
        family = f"story:{k}"
        _add(docs, family, "original", text, "newsroom")
        reposts[family] = count
        for _ in range(count):
            kind = rng.choices(("near", "excerpt", "embedded"), weights=(6, 2, 2))[0]
            shared: list[str] = []
            if kind == "near":
                kind = rng.choice(NEAR_ZH)
                copy = news.EDITS[kind](text, rng, donors)
            elif kind == "excerpt":
                copy = news._excerpt(text, rng)
                shared = [copy]
                copy = f"{rng.choice(news._LEAD_INS)}{copy}\n{pool.pop()[: rng.randint(200, 600)]}"
            else:
                before, after = pool.pop()[:400], pool.pop()[:400]
                copy = news.render_wrapper(
                    news.make_wrapper(rng, donors), f"{before}\n{text}\n{after}"
                )
                shared = [text]
            if kind == "wrapper" or kind == "embedded":
                template += [normalise(x) for x in re.split(r"<[^>]+>|\n", copy) if x.strip()
                             and normalise(x) not in normalise(text)]  # fmt: skip
            _add(docs, family, kind, copy, f"site{k}", shared)
        quoted += [(family, s) for s in sorted(news._long_sentences(text, 25))]
    # Unrelated articles quoting one sentence of a story; some reposted themselves.
    rng.shuffle(quoted)
    quotes = max(4, size // 12)
    for q, (_, sentence) in enumerate(quoted[:quotes]):
        body = pool.pop()
        cut = body.find("\n", len(body) // 3) + 1 or len(body)
        text = f"{body[:cut]}{rng.choice(news._LEAD_INS)}{sentence}\n{body[cut:]}"
        family = f"quote:{q}"
        _add(docs, family, "original", text, "quotes")
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                kind = rng.choice(NEAR_ZH)
                _add(docs, family, kind, news.EDITS[kind](text, rng, donors), "quotes-repost")
    while len(docs) < size and pool:
        text = pool.pop()
        _add(docs, f"news:{stable_hash(text) % 10**8}", "original", text, "background")
    docs.stats = {"template": sorted(set(template)), "stories": reposts}
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", choices=HELDOUT, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    docs = build(args.name, seed=args.seed, size=args.size)
    with args.out.open("w", encoding="utf-8") as out:
        for d in docs:
            row = {"id": d.id, "text": d.text, "family": d.family, "kind": d.kind}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(docs)} docs, {Counter(d.kind for d in docs).most_common(8)}")


if __name__ == "__main__":
    main()
