"""What the compare page shows of two articles: their text (an HTML page as its text), the
differences, and the evidence: the passages they share, as their authors wrote them, with
boilerplate (passages many articles hold: footers, menus, disclaimers) folded and labelled,
never counted as evidence nor highlighted as a difference.

Boilerplate is learned per article (dedup.index.boilerplate): in a page whose own text few
articles hold, a story held by a dozen copies is boilerplate too. The page asks more of it: a
passage is template text here only when enough articles unrelated to the two (and to one
another) hold it; then it is folded on both sides, labelled with that count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dedup.engine.boilerplate import BOILERPLATE_OWNERS
from dedup.engine.spans import passage_spans
from dedup.engine.text import strip_html
from dedup.engine.verify import Detector
from dedup.index import features_load
from dedup.index.boilerplate import OWNERS_COUNTED, StoredOwners, unrelated_owners
from dedup.models import Article, Match
from webui.diff import Aside, Diff, text_diff

SHARED_SHOWN = 200  # a partial copy lists at most this many shared passages
_BLANK_LINES = re.compile(r"\n[^\S\n]*(?:\n[^\S\n]*)+\n")


def as_text(text: str) -> str:
    """Return what an article shows of a body or title: an HTML page as its text, without
    the runs of blank lines its markup leaves."""
    return _BLANK_LINES.sub("\n\n", strip_html(text)).strip()


class _Shown:
    """One article as the page shows it, with its passages found in its text."""

    def __init__(self, detector: Detector, article: Article, boilerplate: dict[int, int]):
        self.detector = detector
        self.body = article.body
        self.text = as_text(article.body)
        self.boilerplate = boilerplate  # passage number -> articles that hold it

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

    def aside(self) -> list[Aside]:
        """Return the boilerplate's stretches of the text, neighbouring passages joined."""
        if not self.boilerplate or not self.detector.config.strip_html:
            return []  # passages are found in the page's text only when markup is stripped
        out: list[list[int]] = []
        for number in sorted(self.boilerplate):
            if number >= len(self.spans):
                break
            start, end = self.spans[number]
            owners = self.boilerplate[number]
            if out and out[-1][3] == number - 1:
                out[-1][1:] = [end, min(out[-1][2], owners), number]
            else:
                out.append([start, end, owners, number])
        return [(start, end, owners) for start, end, owners, _ in out]


@dataclass(frozen=True)
class SharedPassage:
    """One passage of the left article beside the one of the right article it shares."""

    left: int  # passage numbers, as Detector.passages numbers them
    right: int
    diff: Diff
    owners: int  # boilerplate in both articles: the fewer articles holding it; else 0


def boilerplate_of_pair(left: int, right: int, version: str) -> tuple[dict, dict]:
    """Return the passages two articles set aside as template text when compared (passage
    number -> unrelated articles that hold it), each article's.

    A passage is template text on this page when at least BOILERPLATE_OWNERS articles
    unrelated to these two (not copies of them, nor of one another) hold it: a story's own
    paragraphs, held by its reposts, are its text, however many. Template text is folded on
    both sides alike, wherever either holds it, so what both hold is never "only on one side".
    """
    features = features_load(article_ids=[left, right], version=version)
    keys = {
        n: np.asarray(f.passage_keys, np.uint64).view(np.int64).tolist()
        for n, f in features.items()
    }
    owners = StoredOwners(version)  # all holders first: few passages have enough to ask more
    owners.prefetch(f.passage_keys for f in features.values())
    held = sorted({k for some in keys.values() for k in some})
    common = [k for k in held if owners.counts.get(k, 0) >= BOILERPLATE_OWNERS]
    unrelated = unrelated_owners(common, (left, right), version)
    template = {k: n for k, n in unrelated.items() if n >= BOILERPLATE_OWNERS}

    def aside(article: int) -> dict[int, int]:
        return {p: template[k] for p, k in enumerate(keys.get(article, ())) if k in template}

    return aside(left), aside(right)


def pair_evidence(
    detector: Detector, left: Article, right: Article, match: Match | None, version: str
) -> dict:
    """Return the page's diff of the two texts, the shared passages that are evidence and
    those that are boilerplate in both, and the count of articles that makes boilerplate
    "or more"."""
    aside_left, aside_right = boilerplate_of_pair(left.id, right.id, version)
    a = _Shown(detector, left, aside_left)
    b = _Shown(detector, right, aside_right)
    config = detector.config
    shared = _shared(a, b, left.id != match.a_id, match) if match else []
    return {
        "diff": text_diff(a.text, b.text, config, (a.aside(), b.aside())),
        "title_diff": text_diff(as_text(left.title), as_text(right.title), config),
        "shared": [p for p in shared if not p.owners],
        "shared_boilerplate": [p for p in shared if p.owners],
        "owners_counted": OWNERS_COUNTED,
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
        owners = min(a.boilerplate.get(i, 0), b.boilerplate.get(j, 0))
        out.append(SharedPassage(i, j, text_diff(first, second, a.detector.config), owners))
    return out
