"""Units: what a shared gram counts in, the same in every script. In scripts written without
spaces (Chinese, Japanese, Thai...) each character is a unit; in scripts written with spaces
(Latin, Greek, Cyrillic...) each word or number is one, written as one code point of the
private-use planes 15 and 16 (which normalised text never holds), chosen by a hash of the
word, so that the gram table (dedup.engine.features) reads one code point per unit.
"""

from __future__ import annotations

import re

import mmh3

# Scripts written without spaces between words: one unit per character. Any other run of word
# characters (letters, digits, "_") is a word of a spaced script: one unit.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003ffff"
)
_WORD = re.compile(rf"([^\W{_UNSPACED}]+)")
_WORD_UNITS = 0x10FFFE - 0xF0000  # code points of planes 15 and 16, noncharacters aside
_word_unit_cache: dict[str, str] = {}
_WORD_UNITS_CACHED = 1 << 20


def _word_unit(word: str) -> str:
    """Return the one code point that stands for a word (the same in every process)."""
    unit = _word_unit_cache.get(word)
    if unit is None:
        unit = chr(0xF0000 + mmh3.hash(word, signed=False) % _WORD_UNITS)
        if len(_word_unit_cache) >= _WORD_UNITS_CACHED:
            _word_unit_cache.clear()
        _word_unit_cache[word] = unit
    return unit


def units_of(normal: str) -> list[str]:
    """Return normalised text cut into runs: at even places text of unspaced scripts and
    separators (one unit per character), at odd places words (one unit each)."""
    return _WORD.split(normal)


def as_units(normal: str) -> str:
    """Return normalised text with every word of a spaced script written as one code point."""
    parts = _WORD.split(normal)
    if len(parts) > 1:
        get = _word_unit_cache.get
        parts[1::2] = [get(w) or _word_unit(w) for w in parts[1::2]]
    return "".join(parts)


# A word of letters and digits holding this many digits is a number too: an identifier (a
# parcel's tracking number, an order, a flight, "RFC2616") states a fact as a number does,
# while "v2", "mp3" or "sha256" name a thing.
ID_DIGITS = 4


def _is_number(word: str) -> bool:
    return word.isdecimal() or sum(c.isdecimal() for c in word) >= ID_DIGITS


def as_units_and_numbers(normal: str) -> tuple[str, list[int], dict[int, int]]:
    """Return `as_units(normal)`, the code points in it of the numbers (words of decimal
    digits alone: "2024" in "2024年", not "v2" or "mp3"; and identifiers of ID_DIGITS digits
    or more: "1Z999AA10123456784"), and each such code point's number id (number_id of the
    first number written with it)."""
    parts = _WORD.split(normal)
    if len(parts) == 1:
        return normal, [], {}
    words = parts[1::2]
    get = _word_unit_cache.get
    parts[1::2] = [get(w) or _word_unit(w) for w in words]
    ids: dict[int, int] = {}
    for word, unit in zip(words, parts[1::2], strict=True):
        if _is_number(word) and ord(unit) not in ids:
            ids[ord(unit)] = number_id(word)
    return "".join(parts), list(ids), ids


def number_id(word: str) -> int:
    """Return a number's id: a 32-bit hash of the number itself (not 0). Its unit is one of
    about 131,000 code points, which two orders of a thousand-row template share as often as
    not; a fact is the number, so facts are told apart by this id too (dedup.engine.facts)."""
    return mmh3.hash(word, seed=0x6E756D, signed=False) | 1


def kept_characters(normal: str) -> int:
    """Return how many characters of normalised text are not separators."""
    return len(normal) - normal.count(",") - normal.count(" ") - normal.count("\n")
