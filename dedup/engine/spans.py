"""Where an article's passages sit in its own text, so that editors see them as written.

`Detector.passages` returns normalised text (case, width and script folded, punctuation turned
into commas), numbered as in `Duplicate.shared_passages`. The cutting stays the detector's:
this module only finds each passage again in the text as shown (HTML stripped). Every
character of the shown text is folded on its own, through the same `normalise`, and the kept
characters (all but the separators "," " " and line breaks) are matched one to one with the
kept characters of the passages, in order. Where a fold depends on context (a whole text
converted from Traditional phrase by phrase, combining marks joined to their letter) and
the counts differ, the two sequences are aligned by their longest common runs instead.
"""

from __future__ import annotations

import unicodedata
from difflib import SequenceMatcher
from functools import cache, lru_cache
from itertools import pairwise

import numpy as np

from dedup.engine.config import Config
from dedup.engine.text import normalise, strip_html
from dedup.engine.verify import Detector

_SEPARATORS = str.maketrans("", "", ", \n")
# Punctuation that opens (a quote, a bracket) belongs to the passage after it; any other
# punctuation right after a passage (a full stop, a closing quote) belongs to that passage.
_OPENING = ("Ps", "Pi")


def shown_text(config: Config, text: str) -> str:
    """Return the text an article shows and its passages are found in: HTML stripped when
    the configuration strips it."""
    return strip_html(text) if config.strip_html else text


@cache
def _marks() -> np.ndarray:
    """Return, per code point of planes 0-2, whether it is a combining mark."""
    marks = np.zeros(0x30000, dtype=bool)
    for code in range(0x30000):
        if unicodedata.category(chr(code))[0] == "M":
            marks[code] = True
    return marks


@lru_cache(maxsize=1 << 16)
def _kept_fold(unit: str, config: Config) -> str:
    """Return what a character (with its combining marks) normalises to, separators left out."""
    return normalise(unit, config).translate(_SEPARATORS)


def _units(text: str) -> np.ndarray:
    """Return where each unit of a text starts: a character and the combining marks after it."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    is_mark = _marks().take(codes, mode="clip") & (codes < 0x30000)
    if len(is_mark):
        is_mark[0] = False
    return np.flatnonzero(~is_mark)


def _kept_owners(text: str, starts: np.ndarray, config: Config) -> tuple[str, np.ndarray]:
    """Return the text's units folded one by one (separators out), and for each kept
    character of that the unit it came from."""
    if len(starts) == len(text):  # no combining marks: one character per unit
        table = {char: _kept_fold(char, config) for char in set(text)}
        folds = list(map(table.__getitem__, text))
    else:
        bounds = [*starts.tolist(), len(text)]
        folds = [_kept_fold(text[i:j], config) for i, j in pairwise(bounds)]
    lengths = np.fromiter(map(len, folds), dtype=np.int64, count=len(folds))
    return "".join(folds), np.repeat(np.arange(len(folds)), lengths)


def _aligned(folded: str, owner: np.ndarray, kept: str) -> np.ndarray:
    """Return, for each character of `kept`, the unit of the character of `folded` it is
    aligned with (the one before where none is)."""
    if len(folded) == len(kept):
        return owner  # the same count: one to one (a character may fold otherwise in context)
    unit = np.full(len(kept), -1, dtype=np.int64)
    head = 0
    limit = min(len(folded), len(kept))
    while head < limit and folded[head] == kept[head]:
        head += 1
    tail = 0
    while tail < limit - head and folded[-1 - tail] == kept[-1 - tail]:
        tail += 1
    unit[:head] = owner[:head]
    if tail:
        unit[len(kept) - tail :] = owner[len(folded) - tail :]
    middle = SequenceMatcher(None, folded[head : len(folded) - tail], kept[head : len(kept) - tail])
    for i, j, size in middle.get_matching_blocks():
        unit[head + j : head + j + size] = owner[head + i : head + i + size]
    # Characters aligned with none take the unit before them (monotone, as the blocks are).
    known = np.where(unit >= 0, np.arange(len(kept)), 0)
    np.maximum.accumulate(known, out=known)
    filled = unit[known]
    filled[filled < 0] = 0
    return filled


def passage_spans(detector: Detector, text: str, shown: str | None = None) -> list[tuple[int, int]]:
    """Return where each of a text's passages (`Detector.passages`, same numbers) sits in
    `shown` (by default `shown_text(detector.config, text)`; one that differs from it in
    whitespace only will do), as (start, end) offsets, in order, not overlapping.

    A span runs from the passage's first character to its last, with the punctuation that
    closes it (a full stop, a closing quote) and the punctuation that opens it (an opening
    quote or bracket); whitespace around it is left out.
    """
    passages = [p.translate(_SEPARATORS) for p in detector.passages(text)]
    if not passages:
        return []
    if shown is None:
        shown = shown_text(detector.config, text)
    config = detector.config.replace(strip_html=False)
    starts = _units(shown)
    folded, owner = _kept_owners(shown, starts, config)
    kept = "".join(passages)
    unit = _aligned(folded, owner, kept)
    if not len(unit):
        return [(0, 0)] * len(passages)
    unit_end = np.append(starts[1:], len(shown))
    spans = []
    at = 0
    for passage in passages:
        if not passage:  # none is empty today; kept for a cut that makes one
            spans.append((spans[-1][1], spans[-1][1]) if spans else (0, 0))
            continue
        first, last = int(unit[at]), int(unit[at + len(passage) - 1])
        spans.append((int(starts[first]), int(unit_end[last])))
        at += len(passage)
    return _with_punctuation(shown, spans, config)


def _with_punctuation(
    shown: str, spans: list[tuple[int, int]], config: Config
) -> list[tuple[int, int]]:
    """Widen each span over the punctuation that closes it and the one that opens it."""
    out: list[tuple[int, int]] = []
    for n, (start, end) in enumerate(spans):
        floor = out[-1][1] if out else 0
        ceiling = spans[n + 1][0] if n + 1 < len(spans) else len(shown)
        start = max(start, floor)
        end = max(end, start)
        while end < ceiling and _is_mark(shown[end], config, opening=False):
            end += 1
        while start > floor and _is_mark(shown[start - 1], config, opening=True):
            start -= 1
        out.append((start, end))
    return out


def _is_mark(char: str, config: Config, *, opening: bool) -> bool:
    """Tell whether a character is punctuation (not space) that folds to no kept character,
    and whether it opens what follows."""
    if char.isspace() or _kept_fold(char, config):
        return False
    return (unicodedata.category(char) in _OPENING) == opening
