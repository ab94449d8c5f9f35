"""Where passages may be cut, marked in an article's text before it is normalised.

Normalising turns punctuation into separators, so what tells a sentence end, a wrapped line
and a list item apart is marked first (dedup.engine.passages.passage_lines reads the marks):

- a sentence end gets SENTENCE_MARK after it (" \\n": normalised text has no space before a
  line break otherwise);
- a line break inside a wrapped paragraph (the next line goes on with a lowercase word) is
  a space: a paragraph wrapped at other widths (a quoted reply rewraps what it quotes, a
  changelog indents its continuation lines) is then cut at its sentences alone, where its
  copies are cut too;
- a list item (a line that starts with a bullet: "*", "-", "+", "•") gets ITEM_MARK at its
  end, so that an item long enough stands as a passage of its own, as it does where it is
  quoted among other items.

The marks are separators: the article's fingerprint reads the same words (a test checks).
"""

from __future__ import annotations

import re

# Sentence ends are marked before normalising (SENTENCE_MARK), so passages can be cut there.
_SENTENCE_ENDS = "。！？；!?;"
# A full stop ends a sentence of a spaced script where a word (not a number, as in "3.14" or
# "v2.") ends before it and a space follows.
# (The pattern starts with the full stop and looks behind only then, which lets the regex
# engine skip quickly to candidates; so do _SOFT_BREAK's line break.)
_FULL_STOP = re.compile(r"\.(?<=[^\W\d_]{2}\.)(?=\s)")
_LINE_END = re.compile(r"[^\S\n]+\n")  # white space before a line break
SENTENCE_MARK = " \n"
# Two sentence marks: a line that ends in them is a list item (passage_lines).
ITEM_MARK = SENTENCE_MARK * 2
# A line break between text and a line that goes on in lowercase (after its indentation and
# any quote marks "> "): a wrapped line.
_SOFT_BREAK = re.compile(r"\n(?<=\S\n)(?=[^\S\n]*(?:>[^\S\n]*)*[a-z])")
# A list item: a bullet and a space at the start of a line (after indentation and quote marks).
_BULLETS = "*+•-"
_ITEM = re.compile(r"^[^\S\n]*(?:>[^\S\n]*)*[*+•-][^\S\n]+\S.*$", re.MULTILINE)


def mark_passages(text: str) -> str:
    """Return `text` (HTML already stripped) with its sentence ends and list items marked and
    its wrapped lines joined, for normalising."""
    if " \n" in text or "\t\n" in text or "\r\n" in text:
        text = _LINE_END.sub("\n", text)
    if "\n" in text:
        text = _SOFT_BREAK.sub(" ", text)
        if any(bullet in text for bullet in _BULLETS):  # most texts have no list
            text = _ITEM.sub(_marked_item, text)
    for end in _SENTENCE_ENDS:
        if end in text:
            text = text.replace(end, end + SENTENCE_MARK)
    if ". " in text or ".\n" in text or ".\t" in text:
        text = _FULL_STOP.sub("." + SENTENCE_MARK, text)
    return text


def _marked_item(match: re.Match) -> str:
    return match.group() + ITEM_MARK
