"""Normalise article text so that reposts in another dress fingerprint like their original."""

from __future__ import annotations

import html
import re
import unicodedata
from functools import cache
from importlib import resources

import numpy as np

from dedup.engine.config import Config

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"

# Only well-known tag names count as markup, so that "a<b and c>d" in plain text survives.
_BLOCK_TAGS = (
    "address|article|aside|blockquote|br|dd|div|dl|dt|figcaption|figure|footer|form|h[1-6]"
    "|header|hr|li|main|nav|ol|p|pre|section|table|tbody|td|tfoot|th|thead|title|tr|ul"
)
_INLINE_TAGS = (
    "a|abbr|b|bdi|bdo|big|body|button|cite|code|del|dfn|em|font|head|html|i|img|input|ins|kbd"
    "|label|link|mark|meta|noscript|q|s|samp|small|span|strike|strong|sub|sup|time|tt|u|var|wbr"
)
_DROP_ELEMENTS = re.compile(
    r"<(script|style|template|svg)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<!doctype[^>]*>",
    re.IGNORECASE | re.DOTALL,
)
_BLOCK_TAG = re.compile(rf"</?(?:{_BLOCK_TAGS})\b[^<>]*>", re.IGNORECASE)
_INLINE_TAG = re.compile(rf"</?(?:{_INLINE_TAGS})\b[^<>]*>", re.IGNORECASE)
# Markup is stripped only from text that is clearly HTML: a real page closes its tags (and
# escapes a literal "<"), so plain text that merely contains "<" and ">" is left alone.
_LOOKS_LIKE_HTML = re.compile(
    rf"</(?:{_BLOCK_TAGS}|{_INLINE_TAGS})\s*>|<(?:{_BLOCK_TAGS}|script|style)\b[^<>]*>|<!--"
    r"|<!doctype",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+\d*);", re.IGNORECASE)

# Whitespace inside Chinese text is an artefact (line wrapping, scrapers), never a word break.
# A blank line (paragraph break) stays. Folded text has no whitespace but " " and "\n" (the
# fold table makes every other space " "). The pattern starts with the whitespace and looks
# behind only then, which lets the regex engine skip quickly to candidates; without spaces,
# only line breaks are candidates, and a pattern starting with "\n" skips faster still.
_CJK_GAP = re.compile(rf"(?: (?<=[{_CJK}] ) *\n?|\n(?<=[{_CJK}]\n)) *(?=[{_CJK}])")
_CJK_LINE_BREAK = re.compile(rf"\n(?<=[{_CJK}]\n)(?=[{_CJK}])")


def strip_html(text: str) -> str:
    """Return the text of an HTML page: markup, scripts and comments removed, entities decoded."""
    # Looking for "<" and "&" first is faster than the patterns' search, in text without them.
    if "<" not in text or not _LOOKS_LIKE_HTML.search(text):
        return html.unescape(text) if "&" in text and _ENTITY.search(text) else text
    text = _DROP_ELEMENTS.sub(" ", text)
    text = _BLOCK_TAG.sub("\n", text)
    text = _INLINE_TAG.sub("", text)
    return html.unescape(text)


@cache
def _t2s_table() -> dict[str, str]:
    lines = resources.files("dedup.engine").joinpath("data/t2s.tsv").read_text("utf-8")
    return dict(line.split("\t") for line in lines.splitlines() if line and line[0] != "#")


@cache
def _opencc_t2s():
    import opencc

    return opencc.OpenCC("t2s")


def fold_traditional(text: str) -> str:
    """Convert Traditional Chinese to Simplified, phrase by phrase, with OpenCC's t2s.

    Phrases matter: 瞭 is 了 in 瞭解 but stays in 瞭望, 乾 is 干 in 乾燥 but stays in 乾隆.
    (OpenCC's tw2s and tw2sp also undo Taiwan's variants and vocabulary, but they rewrite
    Simplified text too: 显著 becomes 显着, 核心 becomes 内核.)
    """
    return _opencc_t2s().convert(text)


# Taiwan writes 着 as 著, which t2s cannot undo without knowing the text is from Taiwan: fold
# it everywhere, in every text alike (著名 becomes 着名 in all of them).
_VARIANTS = {"著": "着"}


# Code points below this are folded by table lookup; planes 0-2 hold every CJK ideograph.
_TABLE_SIZE = 0x30000
_WORD = re.compile(r"\w")
# The table's entries carry flags above the code point (21 bits), about the character looked up,
# so that one lookup also tells which of the rarer steps a text needs.
_CODE = (1 << 24) - 1
_TRADITIONAL = 1 << 24  # a Traditional character (see _is_traditional)
_CASED = 1 << 25  # folded, it still changes under full case folding ("ß" is "ss")
_OUTSIDE = 1 << 26  # beyond the table: its last entry, where larger code points are clipped
_SURROGATE = 1 << 27  # a lone surrogate (JSON "\ud800", a broken scrape): no text, a space
_SURROGATES = re.compile("[\ud800-\udfff]")


@cache
def _fold_table(nfkc: bool, casefold: bool, traditional: bool, punctuation: bool) -> np.ndarray:
    """Return a code point -> code point table that applies the enabled one-character folds.

    Character by character: NFKC, case folding, Traditional to Simplified, then punctuation and
    symbols to "," and whitespace to " " (newlines kept, they may separate paragraphs).
    Characters whose fold is longer than one character stay as they are here and are handled
    by the full functions afterwards. Each entry also has its flags (`_TRADITIONAL`...).
    """
    t2s = {**_t2s_table(), **_VARIANTS} if traditional else {}
    table = np.arange(_TABLE_SIZE + 1, dtype=np.uint32)
    for code in range(_TABLE_SIZE):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        mapped = unicodedata.normalize("NFKC", char) if nfkc else char
        if casefold:
            mapped = mapped.casefold()
        if unicodedata.category(char)[0] == "M":
            continue  # an accent waits for NFKC to join it to its letter
        if punctuation and not _WORD.search(mapped):  # "…" is "..." in NFKC: still one mark
            mapped = "\n" if mapped == "\n" else " " if mapped.isspace() else ","
        if len(mapped) == 1:
            table[code] = ord(t2s.get(mapped, mapped))
    if casefold:
        for code in range(_TABLE_SIZE):
            folded = chr(table[code])
            if folded.casefold() != folded:
                table[code] |= _CASED
    if traditional:
        table[[ord(c) for c in _t2s_table() if ord(c) < _TABLE_SIZE]] |= _TRADITIONAL
    table[0xD800:0xE000] = ord(" ") | _SURROGATE
    table[_TABLE_SIZE] = _OUTSIDE
    return table


def _is_traditional(folded: np.ndarray) -> bool:
    """Tell whether a text is written in Traditional characters, not just has a few.

    乾 (乾隆), 藉 or 塚 turn up in Simplified text too; the table folds those one by one. A
    Traditional text has them by the dozen, and then phrase-level conversion pays off.
    """
    count = int(np.count_nonzero(folded & _TRADITIONAL))
    return count >= 2 and count * 100 >= folded.size


def _fold(text: str, config: Config) -> tuple[str, int]:
    """Return the text with the configuration's character folds applied, and the flags its
    characters have in the fold table (see `_fold_table`)."""
    table = _fold_table(
        config.nfkc, config.casefold, config.fold_traditional, config.fold_punctuation
    )
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    folded = table.take(codes, mode="clip")
    flags = int(np.bitwise_or.reduce(folded)) & ~_CODE
    if flags & _SURROGATE:
        # Before anything that must encode the text (OpenCC here, the tokenizer later).
        text = _SURROGATES.sub(" ", text)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        folded = table.take(codes, mode="clip")
        flags = int(np.bitwise_or.reduce(folded)) & ~_CODE
    if flags & _TRADITIONAL and _is_traditional(folded):
        # Traditional text (rare, and slower): phrase-level conversion first, then the table.
        text = fold_traditional(text)
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        folded = table.take(codes, mode="clip")
        flags = int(np.bitwise_or.reduce(folded)) & ~_CODE
    if flags:
        folded &= _CODE
        if flags & _OUTSIDE:
            folded = np.where(codes < _TABLE_SIZE, folded, codes)
    return folded.tobytes().decode("utf-32-le", "surrogatepass"), flags


def fold_characters(text: str, config: Config) -> str:
    """Apply the configuration's character folds (width, case, script, punctuation)."""
    return _fold(text, config)[0]


def normalise(text: str, config: Config) -> str:
    """Apply the normalisation steps the configuration switches on, in a fixed order.

    Character folds come first, as one table lookup (see `_fold_table`), then the sequences a
    table cannot fold; then whitespace between Chinese characters goes.
    """
    if config.strip_html:
        text = strip_html(text)
    text, flags = _fold(text, config)
    if config.nfkc and not unicodedata.is_normalized("NFKC", text):
        # Sequences (combining marks, compatibility ligatures) the table cannot fold alone.
        text, flags = _fold(unicodedata.normalize("NFKC", text), config)
    if config.casefold and flags & (_CASED | _OUTSIDE):
        text = text.casefold()  # the table folded every other character already
    if config.fold_punctuation:
        # Folded, the text has no whitespace but " " and "\n"; most articles have no " ".
        if " " in text:
            text = _CJK_GAP.sub("", text)
        elif "\n" in text:
            text = _CJK_LINE_BREAK.sub("", text)
        text = text.strip(" \n,")
    return text


_JUNK = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffd\ud800-\udfff\ue000-\uf8ff]")


def junk_share(text: str) -> float:
    """Return the share of characters that are control codes, surrogates or replacement marks."""
    if not text or _JUNK.search(text) is None:
        return 0.0
    return len(_JUNK.findall(text)) / len(text)


# Mail headers and quote attributions: what a mail client writes around a message, not the
# message. Left out of the evidence (verification's shingles and passages), so that a reply
# is not a copy of its parent for naming it, its sender, date and subject, while the
# fingerprint still reads the whole text.
_MAIL_FIELDS = frozenset(
    [
        "from",
        "to",
        "cc",
        "bcc",
        "subject",
        "date",
        "sent",
        "reply-to",
        "sender",
        "newsgroups",
        "message-id",
        "in-reply-to",
        "references",
        "organization",
    ]
)
_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9-]{0,40}):[ \t]")
_MESSAGE_START = re.compile(
    r"[ \t]*-{3,}[ \t]*(?:Original Message|Forwarded message)[ \t]*-{3,}[ \t]*", re.IGNORECASE
)
_ATTRIBUTION = re.compile(
    r"^[ \t]*(?:On\b(?:[^\n]|\n(?!\n)){4,300}?\bwrote:"
    r"|Le\b(?:[^\n]|\n(?!\n)){4,300}?\ba écrit ?:"
    r"|Am\b(?:[^\n]|\n(?!\n)){4,300}?\bschrieb\b[^\n]{0,100}:"
    r"|在(?:[^\n]|\n(?!\n)){2,300}?写道[:：])[ \t]*$",
    re.MULTILINE,
)


def without_mail_headers(text: str) -> str | None:
    """Return `text` with its mail headers blanked (a block of at least two header lines, two
    of them standard fields such as From, To, Subject or Date, at its start or after a
    "Forwarded message" line, ending at a blank line) and the lines that attribute a quote
    ("On <date>, <sender> wrote:"), line breaks kept; or None when it has none of them."""
    blanked = False
    if _FIELD.match(text.lstrip()) or ("essage" in text and "---" in text):
        text, blanked = _without_header_blocks(text)
    if "wrote:" in text or "écrit" in text or "schrieb" in text or "写道" in text:
        text, count = _ATTRIBUTION.subn(lambda m: "\n" * m.group().count("\n"), text)
        blanked = blanked or count > 0
    return text if blanked else None


def _without_header_blocks(text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    blanked = False
    at = 0
    while at < len(lines) and not lines[at].strip():
        at += 1
    starts = [at]
    starts += [i + 1 for i, line in enumerate(lines) if _MESSAGE_START.fullmatch(line)]
    for start in starts:
        end = _header_block_end(lines, start)
        if end > start:
            lines[start:end] = [""] * (end - start)
            blanked = True
        if start > 0 and _MESSAGE_START.fullmatch(lines[start - 1]):
            lines[start - 1] = ""
            blanked = True
    return ("\n".join(lines) if blanked else text), blanked


def _header_block_end(lines: list[str], start: int) -> int:
    """Return where a block of mail header lines from `start` ends (`start`: none there)."""
    fields = 0
    at = start
    while at < len(lines):
        line = lines[at]
        if not line.strip():
            break
        found = _FIELD.match(line)
        if found:
            fields += found.group(1).lower() in _MAIL_FIELDS
        elif at == start or line[:1] not in " \t":  # a header continues on indented lines
            return start
        at += 1
    return at if at - start >= 2 and fields >= 2 else start
