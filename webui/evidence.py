"""What the compare page shows of two articles: their text (an HTML page as its text), the
differences, and the evidence: the passages they share, as their authors wrote them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from dedup.engine.spans import passage_spans
from dedup.engine.text import strip_html
from dedup.engine.verify import Detector
from dedup.models import Article, Match
from webui.diff import Diff, text_diff

SHARED_SHOWN = 200  # a partial copy lists at most this many shared passages
_BLANK_LINES = re.compile(r"\n[^\S\n]*(?:\n[^\S\n]*)+\n")


def as_text(text: str) -> str:
    """Return what an article shows of a body or title: an HTML page as its text, without
    the runs of blank lines its markup leaves."""
    return _BLANK_LINES.sub("\n\n", strip_html(text)).strip()


class _Shown:
    """One article as the page shows it, with its passages found in its text."""

    def __init__(self, detector: Detector, article: Article):
        self.detector = detector
        self.body = article.body
        self.text = as_text(article.body)

    @cached_property
    def searched(self) -> str:
        """Return the text the passages are found in: the text shown, when the detector
        strips markup too (it differs from the detector's in whitespace only)."""
        return self.text if self.detector.config.strip_html else self.body

    @cached_property
    def spans(self) -> list[tuple[int, int]]:
        return passage_spans(self.detector, self.body, self.searched)

    def passage(self, number: int) -> str | None:
        """Return a passage as written, or None past the last."""
        if number >= len(self.spans):
            return None
        start, end = self.spans[number]
        text = self.searched[start:end]
        return text if self.detector.config.strip_html else as_text(text)


@dataclass(frozen=True)
class SharedPassage:
    """One passage of the left article beside the one of the right article it shares."""

    left: int  # passage numbers, as Detector.passages numbers them
    right: int
    diff: Diff


def pair_evidence(detector: Detector, left: Article, right: Article, match: Match | None) -> dict:
    """Return the page's diff of the two texts and the passages they share."""
    a, b = _Shown(detector, left), _Shown(detector, right)
    config = detector.config
    return {
        "diff": text_diff(a.text, b.text, config),
        "title_diff": text_diff(as_text(left.title), as_text(right.title), config),
        "shared": _shared(a, b, left.id != match.a_id, match) if match else [],
    }


def _shared(a: _Shown, b: _Shown, flipped: bool, match: Match) -> list[SharedPassage]:
    """Return the passages a match says two articles share, the left article's first."""
    # The match's pairs are (passage of its a, passage of its b).
    pairs = [(j, i) if flipped else (i, j) for i, j in match.shared_passages[:SHARED_SHOWN]]
    out = []
    for i, j in pairs:
        first, second = a.passage(i), b.passage(j)
        if first is None or second is None:
            continue
        out.append(SharedPassage(i, j, text_diff(first, second, a.detector.config)))
    return out
