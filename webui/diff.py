"""Word-level differences between two texts, cut by the tokenizer that fingerprints them.

Tokens are compared by their folded form (the engine's character folds: width, case,
Traditional to Simplified, punctuation), so a repost in another dress shows no changes, and
shown as written. Whitespace is never a change, and passages set aside (boilerplate) are
shown folded, never compared. Long texts are compared whole, quickly: sentences
first, anchored on the sentences (then words) that occur once on each side, as diff's
patience strategy does, and word by word only within what differs.

The result is plain (op, text) segments for each column; templates render them with
autoescape on, so article text is never trusted as markup.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise

from dedup.engine.config import Config
from dedup.engine.text import fold_characters
from dedup.engine.tokens import cutter

FOLD_OVER = 60  # an unchanged run longer than this many tokens is folded...
FOLD_KEEP = 12  # ...keeping this many at each end in view
# Two stretches are compared by SequenceMatcher when the product of their lengths is at most
# this; longer ones are first cut at what occurs once in each (SequenceMatcher is quadratic
# on unlike text), at most DEEP times within one another, then taken as changed.
SMALL = 40_000
DEEP = 60
_SENTENCE_ENDS = frozenset("。！？；!?;｡")


@dataclass(frozen=True)
class Segment:
    """A stretch of one column: eq (unchanged), del, ins, fold (unchanged, hidden) or aside
    (set aside: boilerplate, hidden)."""

    op: str
    text: str
    words: int = 0  # tokens that are not blank, for fold labels
    owners: int = 0  # aside: the articles that hold it


# A stretch of a text set aside: (start, end, owners), offsets in the text.
Aside = tuple[int, int, int]


class _AsideToken(str):
    """A stretch set aside, standing in the token stream as one token that equals no other."""

    owners: int


@dataclass(frozen=True)
class Diff:
    left: list[Segment]
    right: list[Segment]
    changed: int  # words removed or added
    aside: int = 0  # stretches set aside, in both columns


@dataclass(frozen=True)
class _Side:
    tokens: list[str]  # as written
    keys: list[str]  # folded; " " for whitespace
    sentences: list[int]  # where each sentence starts, in tokens, and the end


def _fold(text: str, config: Config) -> str:
    """Return the text with the configuration's character folds, one character for one."""
    folded = fold_characters(text, config)
    if len(folded) == len(text):
        return folded
    # Traditional text converted phrase by phrase changed its length: character by character.
    table = {char: fold_characters(char, config) for char in set(text)}
    return "".join(map(table.__getitem__, text))


def _side(text: str, config: Config, aside: Sequence[Aside] = ()) -> _Side:
    """Cut a text into tokens (the folded text's cut, so that both scripts cut alike), each
    stretch set aside one token of its own, and into sentences."""
    folded = _fold(text, config)
    cut = cutter("rjieba")
    keys: list[str] = []
    tokens: list[str] = []
    at = 0
    for start, end, owners in [*sorted(aside), (len(text), len(text), 0)]:
        if start < at:
            continue  # overlaps the one before
        keys += cut(folded[at:start])
        for key in keys[len(tokens) :]:
            tokens.append(text[at : at + len(key)])
            at += len(key)
        if end > start:
            token = _AsideToken(text[start:end])
            token.owners = owners
            tokens.append(token)
            # Equal to no word of the other text; to the same stretch set aside there.
            keys.append("\0" + "".join(folded[start:end].split()))
            at = end
    sentences, ended = [0], False
    for n, (key, token) in enumerate(zip(keys, tokens, strict=True)):
        blank = key.isspace()
        if (ended and not blank) or (isinstance(token, _AsideToken) and n):
            sentences.append(n)
            ended = False
        if blank:
            keys[n] = " "
            ended = ended or "\n" in key or (n > 0 and tokens[n - 1][-1:] in (".", "．"))
        elif token[-1] in _SENTENCE_ENDS or isinstance(token, _AsideToken):
            ended = True
    sentences.append(len(keys))
    return _Side(tokens, keys, sentences)


def _sentence_keys(side: _Side) -> list[str]:
    bounds = side.sentences
    return ["".join(k for k in side.keys[i:j] if k != " ") for i, j in pairwise(bounds)]


def _unique_common(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Return (i, j) of the elements occurring once in a and once in b, as a longest chain
    increasing in both (patience sorting)."""
    count_a, count_b = Counter(a), Counter(b)
    where_b = {x: j for j, x in enumerate(b) if count_b[x] == 1}
    pairs = [(i, where_b[x]) for i, x in enumerate(a) if count_a[x] == 1 and x in where_b]
    # Longest increasing subsequence of the j's, with links back.
    tails: list[int] = []  # j of the last pair of the best chain of each length
    tail_at: list[int] = []  # index into pairs of that pair
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k:
            back[n] = tail_at[k - 1]
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
    chain, n = [], tail_at[-1] if tail_at else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]


def matching_blocks(a: list[str], b: list[str], small: int = SMALL) -> list[tuple[int, int, int]]:
    """Return (i, j, size) runs where a and b are equal, in order, not overlapping."""
    blocks: list[tuple[int, int, int]] = []
    _match(a, b, (0, len(a), 0, len(b)), blocks, small, 0)
    return blocks


def _match(a, b, bounds: tuple[int, int, int, int], out: list, small: int, depth: int) -> None:
    lo_a, hi_a, lo_b, hi_b = bounds
    # Equal ends first: the common case of two near copies costs one pass.
    head = 0
    while lo_a + head < hi_a and lo_b + head < hi_b and a[lo_a + head] == b[lo_b + head]:
        head += 1
    if head:
        out.append((lo_a, lo_b, head))
        lo_a, lo_b = lo_a + head, lo_b + head
    tail = 0
    while lo_a < hi_a - tail and lo_b < hi_b - tail and a[hi_a - 1 - tail] == b[hi_b - 1 - tail]:
        tail += 1
    end = (hi_a - tail, hi_b - tail, tail)
    hi_a, hi_b = hi_a - tail, hi_b - tail
    if lo_a < hi_a and lo_b < hi_b:
        if (hi_a - lo_a) * (hi_b - lo_b) <= small:
            found = SequenceMatcher(None, a[lo_a:hi_a], b[lo_b:hi_b], autojunk=False)
            out += [(lo_a + i, lo_b + j, n) for i, j, n in found.get_matching_blocks() if n]
        elif depth < DEEP:
            anchors = _unique_common(a[lo_a:hi_a], b[lo_b:hi_b])
            at_a, at_b = lo_a, lo_b
            for i, j in anchors:  # between anchors, recurse: what is unique there may differ
                _match(a, b, (at_a, lo_a + i, at_b, lo_b + j), out, small, depth + 1)
                out.append((lo_a + i, lo_b + j, 1))
                at_a, at_b = lo_a + i + 1, lo_b + j + 1
            if anchors:
                _match(a, b, (at_a, hi_a, at_b, hi_b), out, small, depth + 1)
            # No anchor: nothing is matched in this stretch, all of it changed.
    if tail:
        out.append(end)


class _Columns:
    """The two columns being built: runs of (op, tokens), adjacent runs of one op joined."""

    def __init__(self) -> None:
        self.left: list[list] = []
        self.right: list[list] = []
        self.changed = 0

    @staticmethod
    def _add(runs: list[list], op: str, tokens: list[str]) -> None:
        chunk: list[str] = []
        for token in [*tokens, None]:
            if token is not None and not isinstance(token, _AsideToken):
                chunk.append(token)
                continue
            if chunk:
                # Whitespace is no change: the changed words are marked, not the space around.
                first = next((n for n, t in enumerate(chunk) if not t.isspace()), len(chunk))
                last = len(chunk)
                while last > first and chunk[last - 1].isspace():
                    last -= 1
                for kind, part in (
                    ("eq", chunk[:first]),
                    (op, chunk[first:last]),
                    ("eq", chunk[last:]),
                ):
                    if not part:
                        continue
                    if runs and runs[-1][0] == kind:
                        runs[-1][1] += part
                    else:
                        runs.append([kind, part])
                chunk = []
            if token is not None:
                runs.append(["aside", [token]])

    def equal(self, left: list[str], right: list[str]) -> None:
        self._add(self.left, "eq", left)
        self._add(self.right, "eq", right)

    def change(self, left: list[str], right: list[str]) -> None:
        self._add(self.left, "del", left)
        self._add(self.right, "ins", right)
        self.changed += _changed(left) + _changed(right)

    def diff(self) -> Diff:
        aside = sum(1 for run in self.left + self.right if run[0] == "aside")
        # Unchanged stretches are folded to show the changes; with none, the texts are shown.
        fold = self.changed > 0
        return Diff(_segments(self.left, fold), _segments(self.right, fold), self.changed, aside)


def _words(tokens: list[str]) -> int:
    return sum(1 for t in tokens if not t.isspace())


def _changed(tokens: list[str]) -> int:
    return sum(1 for t in tokens if not t.isspace() and not isinstance(t, _AsideToken))


def _equal(tokens: list[str], *, first: bool, last: bool) -> list[Segment]:
    """Return an unchanged run, folded in the middle when long."""
    if len(tokens) <= FOLD_OVER:
        return [Segment("eq", "".join(tokens))]
    # Nothing to lead into at the very start, nor out of at the end; a column unchanged
    # from start to end keeps both ends in view.
    whole = first and last
    head = [] if first and not whole else tokens[:FOLD_KEEP]
    tail = [] if last and not whole else tokens[-FOLD_KEEP:]
    middle = tokens[len(head) : len(tokens) - len(tail)]
    out = [Segment("eq", "".join(head))] if head else []
    out.append(Segment("fold", "".join(middle), _words(middle)))
    if tail:
        out.append(Segment("eq", "".join(tail)))
    return out


def _segments(runs: list[list], fold: bool) -> list[Segment]:
    out: list[Segment] = []
    for n, (op, tokens) in enumerate(runs):
        if op == "eq" and not fold:
            out.append(Segment(op, "".join(tokens)))
        elif op == "eq":
            out += _equal(tokens, first=n == 0, last=n == len(runs) - 1)
        elif op == "aside":
            out.append(Segment(op, tokens[0], owners=tokens[0].owners))
        else:
            out.append(Segment(op, "".join(tokens)))
    return out


def _words_between(
    a: _Side, b: _Side, span_a: tuple[int, int], span_b: tuple[int, int], columns: _Columns
) -> None:
    """Compare two stretches of tokens word by word."""
    (i1, i2), (j1, j2) = span_a, span_b
    at_a, at_b = i1, j1
    for i, j, size in matching_blocks(a.keys[i1:i2], b.keys[j1:j2]):
        columns.change(a.tokens[at_a : i1 + i], b.tokens[at_b : j1 + j])
        columns.equal(a.tokens[i1 + i : i1 + i + size], b.tokens[j1 + j : j1 + j + size])
        at_a, at_b = i1 + i + size, j1 + j + size
    columns.change(a.tokens[at_a:i2], b.tokens[at_b:j2])


def text_diff(
    old: str,
    new: str,
    config: Config | None = None,
    aside: tuple[Sequence[Aside], Sequence[Aside]] = ((), ()),
) -> Diff:
    """Return the word-level differences of two texts, for two columns; tokens are
    compared as the configuration folds them (width, case, script, punctuation). The
    stretches `aside` (of the old text, of the new) are shown folded and never compared."""
    if old == new and not aside[0] and not aside[1]:
        # The common case of a shared passage or a copied title: one unchanged run each,
        # what comparing them finds, without cutting either text into words.
        same = [Segment("eq", old)] if old else []
        return Diff(same, list(same), 0)
    return _compared(old, new, (config or Config()).replace(strip_html=False), aside)


def _compared(
    old: str, new: str, config: Config, aside: tuple[Sequence[Aside], Sequence[Aside]]
) -> Diff:
    """Compare two texts sentence by sentence, then word by word where they differ."""
    a, b = _side(old, config, aside[0]), _side(new, config, aside[1])
    columns = _Columns()
    at_a = at_b = 0  # in sentences
    for i, j, size in [*matching_blocks(_sentence_keys(a), _sentence_keys(b)), (None, None, 0)]:
        end_a = len(a.sentences) - 1 if i is None else i
        end_b = len(b.sentences) - 1 if j is None else j
        if end_a > at_a or end_b > at_b:
            _words_between(
                a,
                b,
                (a.sentences[at_a], a.sentences[end_a]),
                (b.sentences[at_b], b.sentences[end_b]),
                columns,
            )
        if size:
            columns.equal(
                a.tokens[a.sentences[i] : a.sentences[i + size]],
                b.tokens[b.sentences[j] : b.sentences[j + size]],
            )
            at_a, at_b = i + size, j + size
    return columns.diff()
