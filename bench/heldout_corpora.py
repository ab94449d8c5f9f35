"""Held-out corpora of issue 29, built from real text the machine ships and never tuned on.

    python -m bench.heldout_corpora --name manuals --out /tmp/manuals.jsonl [--size N --seed S]

- manuals: Debian's manual pages of a few projects (coreutils, util-linux, systemd, dpkg, apt,
  man-db, procps) in every language they ship, rendered with `man -l`: footers, credits and
  standard sections many pages hold, often with the page's own name or date in the same
  paragraph. A few pages are copied: re-wrapped or edited (near) and quoted in a tutorial page
  made of /usr/share/doc text (excerpt).
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
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench import corpus as news
from bench.corpora import LEAK, prune
from bench.corpora_parts import NEAR_MIN, edit, excerpt, keeps, reflow
from bench.corpus import Corpus, Doc, band_of
from bench.textpool import GRAM, _doc_texts, grams, normalise, split_of, stable_hash

HELDOUT = ("manuals", "stock", "stories")
DEFAULT_SIZE = {"manuals": 900, "stock": 700, "stories": 600}
PROJECTS = ("coreutils", "util-linux", "systemd", "dpkg", "apt", "man-db", "procps")
DPKG_INFO = Path("/var/lib/dpkg/info")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dedup-bench" / "man"
TEMPLATE_PAGES = 3  # a manual sentence held by this many pages (of any project) is template
RELATED_HOLDERS = 12  # a stretch held by at most this many pages is theirs, not a footer
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


# --- manuals -----------------------------------------------------------------------------------


def man_pages(projects=PROJECTS) -> list[tuple[str, str]]:
    """Return (project, path) of every manual page the projects ship, in every language."""
    out = []
    for project in projects:
        lists = sorted(DPKG_INFO.glob(f"{project}.list")) + sorted(
            DPKG_INFO.glob(f"{project}:*.list")
        )
        for listing in lists[:1]:
            for line in listing.read_text().splitlines():
                path = Path(line)
                page = line.startswith("/usr/share/man/") and line.endswith(".gz")
                if page and path.is_file() and not path.is_symlink():
                    out.append((project, line))
    return out


def render(path: str) -> str:
    """Return a manual page as plain text: `man -l`, overstrikes gone, wrapped lines of a
    paragraph joined; cached on disk by path and modification time."""
    key = hashlib.sha1(f"{path}:{os.stat(path).st_mtime_ns}".encode()).hexdigest()
    cached = CACHE / f"{key}.txt"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    roff = gzip.decompress(Path(path).read_bytes())
    # groff as man(1) runs it (preconv, soelim), without hyphenation or justification; run
    # from the language's folder, where a page's ".so" names its include.
    command = ["groff", "-k", "-s", "-man", "-Tutf8", "-rLL=78n", "-rHY=0", "-dAD=l", "-P-cbou"]
    done = subprocess.run(command, input=roff, cwd=Path(path).parents[1], capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    raw = re.sub(r".\x08", "", done.stdout.decode("utf-8", errors="replace"))
    paras, current = [], []
    for line in raw.splitlines():
        if not line.strip() or not line.startswith(" "):  # a blank line or a section heading
            if current:
                paras.append(" ".join(current))
            current = []
            if line.strip():
                paras.append(" ".join(line.split()))
            continue
        current.append(" ".join(line.split()))
    if current:
        paras.append(" ".join(current))
    text = "\n".join(paras)
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(text, encoding="utf-8")
    return text


def _sentences(text: str) -> list[str]:
    return [s for p in text.split("\n") for s in re.split(r"(?<=[.!?;:])\s+", p) if s.strip()]


def manual_template(pages) -> list[str]:
    """Return the sentences (normalised, of 20 characters or more, the page's own name as
    "pagename") that TEMPLATE_PAGES pages or more hold: "Full documentation <.../ls>" is
    coreutils' standard sentence with ls's name in it."""
    held = Counter(s for text in pages for s in set(_named_sentences(text)))
    return sorted(s for s, n in held.items() if n >= TEMPLATE_PAGES and len(s) >= 20)


def _named_sentences(text: str) -> list[str]:
    """Return a page's sentences normalised, its own name (as its header gives it) replaced."""
    found = re.match(r"\s*([^\s(]+)\(", text)
    name = normalise(found.group(1)) if found else ""
    out = []
    for sentence in _sentences(text):
        norm = normalise(sentence)
        out.append(norm.replace(name, "pagename") if len(name) >= 2 else norm)
    return out


def manuals(seed: int, size: int) -> Corpus:
    """Manual pages of PROJECTS with near copies and excerpts quoted in tutorial pages."""
    rng = random.Random(f"manuals:{seed}")
    pages = man_pages()
    rng.shuffle(pages)
    # One language of each page: a translation keeps its original's commands, options and
    # untranslated paragraphs, text the two share that is neither a copy nor a template.
    named: dict[tuple[str, str], tuple[str, str]] = {}
    for project, path in pages:
        named.setdefault((project, "/".join(Path(path).parts[-2:])), (project, path))
    pages = list(named.values())
    # Most of the corpus is pages (the hard negatives); one in eight gets copies.
    wanted = min(len(pages), max(20, round(size * 0.8)))
    with ThreadPoolExecutor(2) as pool:
        texts = list(pool.map(render, [p for _, p in pages[:wanted]]))
    seen, rendered = set(), []
    for (project, path), text in zip(pages[:wanted], texts, strict=True):
        if len(text) >= 300 and normalise(text) not in seen:
            seen.add(normalise(text))
            rendered.append((project, path, text))
    # Pages that are copies of one another in the wild (ls and dir, a translation that keeps
    # the English text): a later page that keeps half of an earlier one is its "derived" copy,
    # one that shares less but still a long stretch is left out (no label fits it).
    # Judged on the pages' own text: two short pages that are mostly one footer are not copies.
    shared = set(manual_template(t for _, _, t in rendered))
    derived, dropped = _related(
        [t for _, _, t in rendered], [_own(t, shared) for *_, t in rendered]
    )
    originals = [r for i, r in enumerate(rendered) if i not in derived and i not in dropped]
    template = set(manual_template(t for _, _, t in originals))
    docs = _corpus()
    tutorials = [t for _, t in _doc_texts() if split_of(f"heldout:{t[:200]}") == "test"]
    rng.shuffle(tutorials)
    for i, (project, path, text) in enumerate(rendered):
        if i in dropped or i in derived:
            continue
        family = _man_family(project, path)
        _add(docs, family, "original", text, f"man-{project}")
        for j in sorted(k for k, first in derived.items() if first == i):
            other_project, other, copy = rendered[j]
            _add(docs, family, "derived", copy, f"man-{other_project}:{other}")
        if rng.random() >= 0.125 or len(docs) >= size:
            continue
        own = _own(text, template)
        kind = rng.choice(NEAR_EN)
        copy = reflow(text, rng) if kind == "reflow" else edit(kind, text, rng, _donors())
        if copy and copy != text:
            _add(docs, family, kind, copy, "mirror")
        quote = excerpt(own, rng) if len(own) >= 600 else None
        if quote and tutorials:
            filler = tutorials.pop()[:1500]
            cut = filler.rfind("\n", 0, len(filler) // 2) + 1
            page = f"{filler[:cut]}\nFrom the manual page:\n{quote}\n{filler[cut:]}"
            _add(docs, family, "excerpt", page, "tutorial", [quote])
    docs.stats = {"template": sorted(template), "pages": len(originals)}
    return docs


def _man_family(project: str, path: str) -> str:
    return f"man:{project}:{path.removeprefix('/usr/share/man/')}"


def _own(text: str, template: set[str]) -> str:
    """Return the paragraphs of a page that hold a sentence of 20 characters or more (the
    page's own name aside) that is not template."""
    found = re.match(r"\s*([^\s(]+)\(", text)
    name = normalise(found.group(1)) if found else ""
    out = []
    for para in text.split("\n"):
        norms = [normalise(x) for x in _sentences(para)]
        norms = [n.replace(name, "pagename") if len(name) >= 2 else n for n in norms]
        if any(len(n) >= 20 and n not in template for n in norms):
            out.append(para)
    return "\n".join(out)


def _related(texts: list[str], own: list[str]) -> tuple[dict[int, int], set[int]]:
    """Return the pages that are near copies of an earlier one (page -> that one), among pages
    sharing verbatim GRAM-grams held by at most RELATED_HOLDERS pages, and those that share a
    LEAK-character stretch with an earlier one all the same that no third page holds (held by
    more, it is a standard section: the template the corpus is about). Near: each keeps half of
    the other's own text (`own`: the template's sentences left out)."""
    norms = [normalise(t) for t in texts]
    h, owner, _ = grams(norms, GRAM)
    rows = np.unique(np.stack([h.view(np.int64), owner], axis=1), axis=0)
    starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
    sizes = np.diff(np.r_[starts, len(rows)])
    shared: Counter = Counter()  # grams two pages share, held by at most RELATED_HOLDERS
    theirs: Counter = Counter()  # ... held by these two pages alone (more: a template's)
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        if 2 <= size <= RELATED_HOLDERS:
            pages = rows[start : start + size, 1].tolist()
            for x in range(size):
                for y in range(x + 1, size):
                    shared[pages[x], pages[y]] += 1
                    theirs[pages[x], pages[y]] += size < TEMPLATE_PAGES
    derived: dict[int, int] = {}
    dropped: set[int] = set()
    stretch = LEAK - GRAM + 1  # grams of a LEAK-character stretch
    for (i, j), n in sorted(shared.items()):
        if n < stretch or j in derived or j in dropped or i in dropped:
            continue
        first = derived.get(i, i)
        if keeps(own[first], own[j]) >= NEAR_MIN and keeps(own[j], own[first]) >= NEAR_MIN:
            derived[j] = first
        elif theirs[i, j] >= stretch:
            dropped.add(j)
    return derived, dropped


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
