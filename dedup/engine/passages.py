"""Cutting an article's normalised text (in units, dedup.engine.units) into passages: the
sentences, lines and paragraphs whose keys and shingles verification compares
(dedup.engine.features)."""

from __future__ import annotations

import re

from dedup.engine import native

GRAM = native.GRAM
MIN_PASSAGE_GRAMS = 12  # shorter sentences join the next one
# A paragraph's short last lines, or a short paragraph, of at least this many units are a
# passage of their own (a signature, a hotline and a sender's name after a notice's fixed
# sentence), so that what stands before them keeps its key; shorter ones join it.
MIN_ALONE = 8


def passage_lines(units: str) -> str:
    """Return passage-marked normalised text (in units) as its passages, one per line, with
    no separators.

    Sentence ends (" \\n" in the marked text), line breaks ("\\n") and paragraph breaks
    (a blank line) nest: short sentences join the next one of their line and a line's short
    tail the one before; short lines join the next one of their paragraph (a heading its
    text, a footer's lines one another); a short paragraph (a signature, a dateline) joins
    the passage before it, or the next at the start; a paragraph's short last lines, or a
    short paragraph, of MIN_ALONE units or more stand alone, and so does a short list item
    (a line dedup.engine.marks marked as one: a changelog's entry, quoted among other
    entries, is cut as in its own text), and so does a heading of MIN_ALONE units or more
    before a list (a changelog entry's version line: its first item is then cut as where it
    is quoted). So a paragraph or a line that many articles hold (a footer, a template's
    fixed sentence) is a passage of its own wherever it stands, and its key is the same in
    all.
    """
    least = MIN_PASSAGE_GRAMS + GRAM - 1
    text = units.replace(" \n", "\t").replace(",", "").replace(" ", "")
    found: list[str] = []
    carry = ""
    for paragraph in _PARAGRAPH.split(text):
        passages = _paragraph_passages(paragraph, least)
        if not passages:
            continue
        if len(carry) >= MIN_ALONE and "\t\t\n" in paragraph + "\n":
            found.append(carry)  # a heading before a list
            carry = ""
        if len(passages) == 1 and len(passages[0]) < least:  # a short paragraph
            if not found:
                carry += passages[0]
            elif len(passages[0]) >= MIN_ALONE:
                found.append(passages[0])
            else:
                found[-1] += passages[0]
            continue
        passages[0] = carry + passages[0]
        carry = ""
        found += passages
    if carry:
        found.append(carry)
    return "\n".join(found)


_PARAGRAPH = re.compile(r"\n\n+")


def _paragraph_passages(paragraph: str, least: int) -> list[str]:
    found: list[str] = []
    carry = ""
    for line in paragraph.split("\n"):
        item = line.endswith("\t\t")  # a list item (dedup.engine.marks.ITEM_MARK)
        passages = _joined(line.split("\t"), least)
        if not passages:
            continue
        passages[0] = carry + passages[0]
        carry = ""
        # A short line joins the next, a list item of MIN_ALONE units or more does not.
        short = len(passages) == 1 and len(passages[0]) < least
        if short and not (item and len(passages[0]) >= MIN_ALONE):
            carry = passages[0]
            continue
        found += passages
    if carry:
        if found and len(carry) < MIN_ALONE:
            found[-1] += carry
        else:
            found.append(carry)
    return found


def _joined(pieces: list[str], least: int) -> list[str]:
    """Join pieces into runs of at least `least`: short ones join the next, a short tail
    the run before it."""
    found: list[str] = []
    run = ""
    for piece in pieces:
        run += piece
        if len(run) >= least:
            found.append(run)
            run = ""
    if run:
        if found:
            found[-1] += run
        else:
            found.append(run)
    return found
