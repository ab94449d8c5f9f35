"""Word-level differences between two texts, cut by the tokenizer that fingerprints them.

The result is plain (op, text) segments for each column; templates render them with
autoescape on, so article text is never trusted as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from dedup.engine.tokens import cutter

# Beyond this many tokens a side is compared up to it and shown plain after: SequenceMatcher
# is quadratic on unlike texts, and a page must render in well under a second.
MAX_TOKENS = 6000
FOLD_OVER = 60  # an unchanged run longer than this many tokens is folded...
FOLD_KEEP = 12  # ...keeping this many at each end in view


@dataclass(frozen=True)
class Segment:
    """A stretch of one column: eq (unchanged), del, ins, fold (unchanged, hidden) or rest."""

    op: str
    text: str
    words: int = 0  # tokens that are not blank, for fold labels


@dataclass(frozen=True)
class Diff:
    left: list[Segment]
    right: list[Segment]
    changed: int  # tokens removed or added
    truncated: bool  # a side was longer than MAX_TOKENS


def text_tokens(text: str) -> list[str]:
    """Cut a text into tokens that join back into it (whitespace and punctuation included)."""
    return cutter("rjieba")(text)


def _words(tokens: list[str]) -> int:
    return sum(1 for t in tokens if t.strip())


def _equal(tokens: list[str], *, first: bool, last: bool) -> list[Segment]:
    """Return an unchanged run, folded in the middle when long."""
    if len(tokens) <= FOLD_OVER:
        return [Segment("eq", "".join(tokens))]
    head = [] if first else tokens[:FOLD_KEEP]  # nothing to lead into at the very start
    tail = [] if last else tokens[-FOLD_KEEP:]
    middle = tokens[len(head) : len(tokens) - len(tail)]
    out = [Segment("eq", "".join(head))] if head else []
    out.append(Segment("fold", "".join(middle), _words(middle)))
    if tail:
        out.append(Segment("eq", "".join(tail)))
    return out


def text_diff(old: str, new: str) -> Diff:
    """Return the word-level differences of two texts, for two columns."""
    a, b = text_tokens(old), text_tokens(new)
    rest_a, rest_b = a[MAX_TOKENS:], b[MAX_TOKENS:]
    a, b = a[:MAX_TOKENS], b[:MAX_TOKENS]
    left: list[Segment] = []
    right: list[Segment] = []
    changed = 0
    codes = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(codes):
        if op == "equal":
            first, last = n == 0, n == len(codes) - 1 and not (rest_a or rest_b)
            left += _equal(a[i1:i2], first=first, last=last)
            right += _equal(b[j1:j2], first=first, last=last)
            continue
        if i2 > i1:
            left.append(Segment("del", "".join(a[i1:i2])))
            changed += i2 - i1
        if j2 > j1:
            right.append(Segment("ins", "".join(b[j1:j2])))
            changed += j2 - j1
    if rest_a:
        left.append(Segment("rest", "".join(rest_a)))
    if rest_b:
        right.append(Segment("rest", "".join(rest_b)))
    return Diff(left, right, changed, bool(rest_a or rest_b))
