"""Parts the corpus builders of bench/corpora.py share: handing out text, English edits, pages."""

from __future__ import annotations

import functools
import random
import re
import textwrap
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.corpus import (
    Corpus,
    Doc,
    Donors,
    Wrapper,
    _excerpt,
    _render_page,
    band_of,
    delete_sentence,
    insert_sentence,
    one_sentence,
    render_wrapper,
    reorder,
)
from bench.textpool import Piece, grams, normalise

MIN_SHARED = 200  # characters an excerpt quotes at least
NEAR_MIN = 0.5  # share of the original's 8-grams a near copy keeps (bench.corpora.check's test)
EXCERPT_SHARE = 0.4  # ... and at least this share of the original


class Assembler:
    """Collect the docs of one corpus: families of an original and its copies, and hard
    negatives, each the only doc of its family."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.docs = Corpus()
        self.keys: set[str] = set()  # the sources used, by the name that decides the split
        self.origins: Counter[str] = Counter()  # pieces used, by source
        self._kinds: Counter[tuple[str, str]] = Counter()

    def use(self, *pieces: Piece) -> None:
        """Record that `pieces` went into the corpus."""
        for p in pieces:
            self.keys.add(p.key.split("|")[0])
            self.origins[p.origin] += 1

    def original(self, fid: str, text: str) -> Doc:
        doc = Doc(f"{fid}/orig", text, fid, "original", self.source, band_of(len(text)))
        self.docs.append(doc)
        return doc

    def copy(self, orig: Doc, kind: str, text: str, shared: Sequence[str] = ()) -> Doc:
        n = self._kinds[orig.family, kind] = self._kinds[orig.family, kind] + 1
        doc_id = f"{orig.family}/{kind}" + (f"-{n}" if n > 1 else "")
        doc = Doc(doc_id, text, orig.family, kind, self.source, orig.band, tuple(shared))
        self.docs.append(doc)
        return doc

    def negative(self, fid: str, kind: str, text: str) -> Doc:
        doc = Doc(f"{fid}/{kind}", text, fid, kind, self.source, band_of(len(text)))
        self.docs.append(doc)
        return doc

    def finish(self, **stats) -> Corpus:
        """Return the docs, with which sources they used and `stats`."""
        self.docs.stats = {
            "sources": dict(sorted(self.origins.items())),
            "keys": sorted(self.keys),
            **stats,
        }
        return self.docs


class Dispenser:
    """Hand out pieces of text in seeded random order, each once, by length."""

    def __init__(self, pieces: Sequence[Piece], rng: random.Random) -> None:
        self._rng = rng
        items = sorted(pieces, key=lambda p: (len(p.text), p.key))
        self._items = items
        self._lengths = [len(p.text) for p in items]

    def __len__(self) -> int:
        return len(self._items)

    def take(self, lo: int = 0, hi: int = 10**9) -> Piece | None:
        """Return a piece of `lo` to `hi` characters, or None when there is none left."""
        i, j = bisect_left(self._lengths, lo), bisect_right(self._lengths, hi)
        if i >= j:
            return None
        k = self._rng.randrange(i, j)
        self._lengths.pop(k)
        return self._items.pop(k)

    def put(self, piece: Piece) -> None:
        """Give back (the unused rest of) a piece."""
        k = bisect_left(self._lengths, len(piece.text))
        self._lengths.insert(k, len(piece.text))
        self._items.insert(k, piece)

    def body(self, lo: int, hi: int) -> Piece | None:
        """Return a piece of `lo` to `hi` characters; else the leading paragraphs of a longer
        one (its other paragraphs go back to the pool), else a shorter one (150 characters or
        more), else None."""
        found = self.take(lo, hi)
        if found is not None:
            return found
        longer = self.take(hi + 1)
        if longer is not None:
            paras = longer.text.split("\n")
            head: list[str] = []
            while paras and (not head or len("\n".join(head)) < lo):
                head.append(paras.pop(0))
            rest = "\n".join(paras)
            if len(rest) >= 150:
                self.put(Piece(longer.key + "~", rest, longer.origin))
            return Piece(longer.key, "\n".join(head), longer.origin)
        return self.take(150, lo)


class OnceDonors(Donors):
    """Donors that lend each sentence once: a long sentence lent to two families' copies
    would be text those families share."""

    def sentence_like(self, length: int, rng: random.Random, avoid: str) -> str:
        found = super().sentence_like(length, rng, avoid)
        lengths, sents = self.sentences
        i = sents.index(found)
        del lengths[i], sents[i]
        return found


class Titles:
    """Titles for related-link lists, each given out once, so that no run of them is text two
    wrappers share: the first sentence (or words) of every piece of a pool."""

    def __init__(self, pieces: Sequence[Piece], rng: random.Random) -> None:
        found = dict.fromkeys(_title(p.text) for p in pieces)
        self._left = [t for t in found if len(t) >= 6]
        rng.shuffle(self._left)

    def take(self, n: int) -> tuple[str, ...]:
        out, self._left = self._left[:n], self._left[n:]
        return tuple(out)


def _title(text: str) -> str:
    first = re.split(r"(?<=[。！？.!?])\s*", text.strip().split("\n")[0])[0].strip()
    if len(first) <= 40:
        return first
    cut = first[:40].rsplit(" ", 1)[0] if " " in first[:40] else first[:30]
    return cut.rstrip(" ，,") + "…"


def lenders(pieces: Sequence[Piece], english: bool) -> Donors:
    """Return donors of inserted sentences, words and related titles made of `pieces`."""
    return OnceDonors(tuple(p.text for p in pieces), english)


def keeps(original: str, copy: str, size: int = 8) -> float:
    """Return the share of `original`'s distinct normalised `size`-grams that `copy` holds."""
    h, owner, _ = grams([normalise(original), normalise(copy)], size)
    mine = np.unique(h[owner == 0])
    return float(np.isin(mine, h[owner == 1]).mean()) if len(mine) else 0.0


_SENTENCE_END = re.compile(r"[a-z0-9)\]'\"][.!?](?=\s|$)")
_PROSE_CHAR = re.compile(r"[A-Za-z ]")


def prose(text: str, sentences: int = 3) -> bool:
    """Tell whether `text` reads as English prose: `sentences` sentences, mostly letters."""
    return len(_SENTENCE_END.findall(text)) >= sentences and len(
        _PROSE_CHAR.findall(text)
    ) >= 0.8 * len(text)


# --- English edits ----------------------------------------------------------------------------

_WORD = re.compile(r"\b[A-Za-z]{3,}\b")


@functools.cache
def _vocabulary(donors: Donors) -> tuple[str, ...]:
    words = Counter(w.lower() for t in donors.texts[:400] for w in _WORD.findall(t))
    return tuple(sorted(w for w, n in words.items() if n >= 2))


def substitute_words(text: str, rng: random.Random, donors: Donors) -> str:
    """Replace about one word in forty with another word of the donors' vocabulary."""
    spots = list(_WORD.finditer(text))
    vocab = _vocabulary(donors)
    chosen = sorted(
        rng.sample(spots, min(len(spots), max(1, len(spots) // 40))), key=lambda m: -m.start()
    )
    out = text
    for m in chosen:
        new = rng.choice(vocab)
        if m.group()[0].isupper():
            new = new.capitalize()
        out = out[: m.start()] + new + out[m.end() :]
    return out


def reflow(text: str, rng: random.Random, donors: Donors | None = None) -> str:
    """Change line wrapping and whitespace only: a mail client or a paste into a web form."""
    width = rng.choice((60, 66, 72, 78, 0))
    gap = rng.choice(("\n", "\n\n"))
    paras = []
    for para in text.split("\n"):
        if width and len(para) > width and "  " not in para:
            para = "\n".join(textwrap.wrap(para, width))
        paras.append(para + rng.choice(("", "", " ")))
    out = gap.join(paras)
    if out == text:
        out = re.sub(r"\. ", ".  ", text, count=3) if ". " in text else text + "\n"
    return out


def combined_en(text: str, rng: random.Random, donors: Donors) -> str:
    """Apply two or three of delete, insert, substitute and reflow together."""
    order = ("delete_sentence", "insert_sentence", "substitute", "reflow")
    chosen = set(rng.sample(order, rng.randint(2, 3)))
    for kind in order:
        if kind in chosen:
            text = EN_EDITS[kind](text, rng, donors)
    return text


EN_EDITS: dict[str, Callable[[str, random.Random, Donors], str]] = {
    "substitute": substitute_words,
    "delete_sentence": delete_sentence,
    "insert_sentence": insert_sentence,
    "reorder": reorder,
    "one_sentence": one_sentence,
    "reflow": reflow,
    "combined": combined_en,
}


def edit(kind: str, text: str, rng: random.Random, donors: Donors) -> str | None:
    """Apply English edit `kind`, or return None where the text gives it nothing to work on
    (bench.corpus's sentence edits need two sentences or two clauses)."""
    try:
        return EN_EDITS[kind](text, rng, donors)
    except (IndexError, ValueError):
        return None


# --- excerpts and pages -----------------------------------------------------------------------


def excerpt(text: str, rng: random.Random) -> str | None:
    """Return a run of `text`'s sentences of 40-60% of it and MIN_SHARED characters or more."""
    if len(text) * 0.6 < MIN_SHARED:
        return None
    for _ in range(5):
        quote = _excerpt(text, rng)
        if len(quote) >= max(MIN_SHARED, EXCERPT_SHARE * len(text)):
            return quote
    return None


def line_run(lines: Sequence[str], lo: int, hi: int, rng: random.Random) -> list[str] | None:
    """Return a run of consecutive `lines` joined to `lo` to `hi` characters, or None."""
    runs = []
    for i in range(len(lines)):
        size = -1
        for j in range(i, len(lines)):
            size += len(lines[j]) + 1
            if size > hi:
                break
            if size >= lo:
                runs.append((i, j + 1))
    if not runs:
        return None
    i, j = rng.choice(runs)
    return list(lines[i:j])


@dataclass(frozen=True)
class Site:
    """A web site whose pages share navigation and a footer."""

    name: str
    crumbs: tuple[str, ...]
    nav: tuple[str, ...]
    footer: tuple[str, ...]
    related: tuple[str, ...]  # headings of the related-links box
    sections: tuple[tuple[str, str, str], ...]  # headings of: before, after, comments


def site_wrapper(site: Site, rng: random.Random, titles: Sequence[str], stamp: str) -> Wrapper:
    """Return a page wrapper of `site` with related links `titles` and a byline `stamp`."""
    header = (f"{site.name} | {rng.choice(site.crumbs)}", rng.choice(site.nav), stamp)
    return Wrapper(
        site.name,
        header,
        rng.choice(site.related),
        tuple(titles),
        site.footer,
        rng.random() < 0.5,
        rng.random() < 0.5,
    )


def grouped_wrappers(
    count: int, rng: random.Random, make: Callable[[], Wrapper], group: tuple[int, int] = (3, 5)
) -> list[Wrapper]:
    """Return `count` wrappers in groups of 3-5 identical ones, so that what one wrapper holds
    (navigation, related links) is boilerplate shared by three families or more."""
    out: list[Wrapper] = []
    while len(out) < count:
        n = rng.randint(*group)
        if count - len(out) - n < group[0]:
            n = count - len(out)
        out += [make()] * n
    rng.shuffle(out)
    return out


def wrap(w: Wrapper, body: str) -> str:
    """Put `body` in the page of `w`."""
    return render_wrapper(w, body)


def embed_page(
    w: Wrapper, text: str, others: Sequence[Sequence[str]], heads: Sequence[str], rng: random.Random
) -> str:
    """Render `text` in the page of `w` between runs of other texts' paragraphs."""
    before = rng.randint(1, len(others) - 1) if len(others) > 1 else 1
    sections = [(heads[0], [p for run in others[:before] for p in run])]
    sections.append(("", [p for p in text.split("\n") if p.strip()]))
    if others[before:]:
        sections.append((heads[1], [p for run in others[before:] for p in run]))
    return _render_page(w, sections)


def paragraph_run(text: str, target: int, rng: random.Random) -> list[str]:
    """Return consecutive paragraphs of `text` of about `target` characters (or all of it)."""
    paras = [p for p in text.split("\n") if p.strip()]
    starts = [i for i in range(len(paras)) if sum(map(len, paras[i:])) >= target] or [0]
    run: list[str] = []
    for para in paras[rng.choice(starts) :]:
        run.append(para)
        if sum(map(len, run)) >= target:
            break
    return run
