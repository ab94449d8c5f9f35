"""Real text shipped on any Debian machine with the project's packages, for bench/corpora.py.

English: the standard library's docstrings (read with `ast`, nothing imported), the Python
reference topics of `pydoc_data`, installed distributions' long descriptions, README and NEWS
files under /usr/share/doc, and an eighth of the insuranceqa English answers. Debian: the long
package descriptions of /var/lib/dpkg/status and the latest entries of every changelog.Debian.gz.
Chinese: People's Daily (January 1998) and the insuranceqa Chinese answers (bench.corpus).

Every piece of text carries the name of its source, and the crc32 of that name puts it in the
"tune" or the "test" half. Before that, a pool is cleaned of repeats: a paragraph that shares
a stretch of REPEAT normalised characters with an earlier paragraph anywhere in the pool (a
licence, an inherited docstring, the same README shipped twice) is dropped, so no text of one
half can reappear in the other, and no two pieces used in different families share more than
that.
"""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import html
import re
import sysconfig
import unicodedata
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from bench.corpus import load_insuranceqa, load_peoples_daily

SPLITS = ("tune", "test")
GRAM = 32  # characters of normalised text hashed as one gram
REPEAT = 60  # a stretch of normalised text this long, seen in two paragraphs, is a repeat
DOC_CHARS = 30_000  # of a README or NEWS file, the start is enough
MAX_PIECE = 3000  # long sources are cut into pieces of at most about this many characters
DOC_DIR = Path("/usr/share/doc")
DPKG_STATUS = Path("/var/lib/dpkg/status")
_STDLIB_SKIP = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "pydoc_data"}
_STDLIB_SKIP |= {"__phello__", "ensurepip", "encodings", "tkinter"}


@dataclass(frozen=True)
class Piece:
    """A text of one source, the unit a corpus builder hands out once."""

    key: str  # the source's name, e.g. "stdlib:json.dumps"; its crc32 decides the split
    text: str
    origin: str  # which source: "stdlib", "metadata", "changelog", ...


def stable_hash(text: str) -> int:
    """Return a 64-bit hash of `text` that is the same in every process and on every machine."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def split_of(key: str) -> str:
    """Return the half ("tune" or "test") that the source named `key` belongs to."""
    # Not crc32: it is linear, so it correlates with any other crc32-based pick of the sources.
    return SPLITS[stable_hash(f"split:{key}") % 2]


# --- normalised text and its grams ------------------------------------------------------------

_NON_WORD = re.compile(r"[\W_]+")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>\n]{0,300})?/?>")  # <p>, <a href=...>


@functools.cache
def _t2s():
    import opencc

    return opencc.OpenCC("t2s")


def normalise(text: str) -> str:
    """Return `text` as the checks compare it: markup gone, Simplified, NFKC, case folded, and
    nothing but letters, digits and ideographs (quote marks, wrapping and punctuation vanish)."""
    if "<" in text or "&" in text:  # the same for a page and for the text it holds
        text = _TAG.sub(" ", html.unescape(_TAG.sub(" ", text)))
    if re.search(r"[\u3400-\u9fff]", text):
        text = _t2s().convert(text)
    return _NON_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())


def grams(norms: list[str], size: int = GRAM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hash every `size`-gram of each normalised text at once.

    Returns the hashes, the index of the text each gram is in and its offset there; grams that
    would cross from one text into the next are left out.
    """
    lengths = np.array([len(s) for s in norms], dtype=np.int64)
    joined = "".join(norms)
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    m = len(codes) - size + 1
    if m <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0, dtype=np.uint64), empty, empty
    h = np.zeros(m, dtype=np.uint64)
    base = np.uint64(0x100000001B3)
    for j in range(size):  # a polynomial hash mod 2**64; numpy wraps around silently
        h *= base
        h += codes[j : j + m]
    owner = np.repeat(np.arange(len(norms), dtype=np.int64), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    valid = owner[:m] == owner[size - 1 :]
    pos = np.arange(m, dtype=np.int64)[valid]
    own = owner[:m][valid]
    return h[valid], own, pos - starts[own]


def owners_per_gram(
    h: np.ndarray, owner: np.ndarray, ascending: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Return, per gram occurrence, how many distinct owners hold that gram, and the sort order
    (by hash, then owner) that computed it. With `ascending` (owners never decrease along the
    grams) a stable sort by hash alone gives that order, in half the time."""
    order = np.argsort(h, kind="stable") if ascending else np.lexsort((owner, h))
    hs, os_ = h[order], owner[order]
    n = len(hs)
    if n == 0:
        return np.zeros(0, dtype=np.int64), order
    new_hash = np.r_[True, hs[1:] != hs[:-1]]
    new_pair = new_hash | np.r_[True, os_[1:] != os_[:-1]]
    group = np.cumsum(new_hash) - 1
    distinct = np.bincount(group, weights=new_pair).astype(np.int64)
    counts = np.empty(n, dtype=np.int64)
    counts[order] = distinct[group]
    return counts, order


def longest_runs(flag: np.ndarray, owner: np.ndarray, pos: np.ndarray, n: int) -> np.ndarray:
    """Return per owner the longest run of consecutive flagged grams (grams are in text order)."""
    best = np.zeros(n, dtype=np.int64)
    idx = np.flatnonzero(flag)
    if len(idx) == 0:
        return best
    o, p = owner[idx], pos[idx]
    brk = np.r_[True, (o[1:] != o[:-1]) | (p[1:] != p[:-1] + 1)]
    run_id = np.cumsum(brk) - 1
    run_len = np.bincount(run_id)
    run_owner = o[brk]
    np.maximum.at(best, run_owner, run_len)
    return best


def drop_repeats(texts: list[list[str]], common: int = 0) -> list[list[bool]]:
    """Tell which paragraphs of `texts` to keep so that no two kept paragraphs, nor runs of
    consecutive ones, share a stretch of REPEAT normalised characters: of paragraphs that share
    one, the first keeps it (a licence, a README shipped by two packages, a description that
    sibling packages repeat stay once).

    With `common`, a gram held by that many paragraphs or more is stock text (a changelog's
    "New upstream release") that does not count as a repeat.
    """
    if not texts:
        return []
    para_norms = [[normalise(p) for p in paras] for paras in texts]
    norms = ["".join(ps) for ps in para_norms]
    h, owner, pos = grams(norms)
    # Each gram belongs to the paragraph it starts in, numbered across all texts.
    ends = [np.cumsum([len(p) for p in ps], dtype=np.int64) for ps in para_norms]
    text_starts = np.concatenate(([0], np.cumsum([len(n) for n in norms])[:-1]))
    all_ends = np.concatenate([e + s for e, s in zip(ends, text_starts, strict=True)] or [[]])
    para = np.searchsorted(all_ends, text_starts[owner] + pos, side="right")
    counts, order = owners_per_gram(h, para, ascending=True)
    hs = h[order]
    start = np.r_[True, hs[1:] != hs[:-1]]
    lowest = np.empty(len(h), dtype=np.int64)  # the first paragraph that holds each gram
    lowest[order] = para[order][np.flatnonzero(start)[np.cumsum(start) - 1]]
    flag = (counts >= 2) & (para != lowest)
    if common:
        flag &= counts < common
    keep = [[True] * len(ps) for ps in para_norms]
    idx = np.flatnonzero(flag)
    if len(idx):
        o, p = owner[idx], pos[idx]
        brk = np.r_[True, (o[1:] != o[:-1]) | (p[1:] != p[:-1] + 1)]
        run_id = np.cumsum(brk) - 1
        lengths = np.bincount(run_id)
        heads = np.flatnonzero(brk)
        for r in np.flatnonzero(lengths >= REPEAT - GRAM + 1).tolist():
            t, a = int(o[heads[r]]), int(p[heads[r]])
            b = a + int(lengths[r]) + GRAM - 1  # the stretch is [a, b) of text t
            lo = int(np.searchsorted(ends[t], a, side="right"))
            hi = int(np.searchsorted(ends[t], b - 1, side="right"))
            for k in range(lo, min(hi + 1, len(keep[t]))):
                keep[t][k] = False
    return keep


# --- cleaning English text --------------------------------------------------------------------

_NOT_PROSE = re.compile(r"^\s*(?:>>>|\.\.\.|[-*+|#=>]|\d+[.)]\s|\s{2})")
_NOT_LETTER = re.compile(r"[\W\d_]+")
_MARKUP_LINE = re.compile(r"!\[|\[!\[|<img|<a |<p |</|<div|<br|^\.\. |^:\w+:|^```|^~~~")


def _paragraphs_en(text: str) -> list[str]:
    """Split English text at blank lines; prose paragraphs are unwrapped onto one line."""
    out = []
    for block in re.split(r"\n\s*\n", text.replace("\r", "")):
        lines = [line.rstrip() for line in block.split("\n") if line.strip()]
        lines = [line for line in lines if not _MARKUP_LINE.search(line)]
        if not lines:
            continue
        if any(_NOT_PROSE.match(line) for line in lines):
            para = "\n".join(lines)
        else:
            para = " ".join(line.strip() for line in lines)
        letters = len(_NOT_LETTER.sub("", para))
        if letters >= 20 and letters >= 0.5 * len(para.replace(" ", "")):
            out.append(para)
    return out


def _cut(key: str, paras: list[str], origin: str) -> list[tuple[str, list[str], str]]:
    """Cut a source's paragraphs into runs of at most about MAX_PIECE characters."""
    out, run, size = [], [], 0
    for para in paras:
        if len(para) > 2 * MAX_PIECE:
            continue
        if run and size + len(para) > MAX_PIECE:
            out.append(run)
            run, size = [], 0
        run.append(para)
        size += len(para) + 1
    if run:
        out.append(run)
    named = [(key if len(out) == 1 else f"{key}#{i}", r, origin) for i, r in enumerate(out)]
    # The pieces of one source all go to its half: the key for the split is the source's.
    return [(f"{key}|{name}", r, o) for name, r, o in named]


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(
        p for p in root.rglob("*.py") if not _STDLIB_SKIP.intersection(p.relative_to(root).parts)
    )


@functools.cache
def _stdlib_trees() -> tuple[tuple[str, ast.Module], ...]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in _stdlib_files():
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences in old modules
                out.append((module, ast.parse(path.read_bytes())))
        except (SyntaxError, ValueError, OSError):
            continue
    return tuple(out)


def _docstrings() -> list[tuple[str, str]]:
    out = []
    for module, tree in _stdlib_trees():
        stack: list[tuple[str, ast.AST]] = [(module, tree)]
        while stack:
            name, node = stack.pop()
            doc = ast.get_docstring(node, clean=True)  # type: ignore[arg-type]
            if doc and len(doc) >= 300:
                out.append((f"stdlib:{name}", doc))
            for child in getattr(node, "body", ()):
                if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    stack.append((f"{name}.{child.name}", child))
    return sorted(out)


@dataclass(frozen=True)
class Signature:
    """A public function of the standard library, as a reference page names it."""

    module: str
    name: str
    text: str  # e.g. "os.path.join(a, *p)"
    params: tuple[str, ...]


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Return the standard library's public module-level functions and methods, with arguments."""
    out = []
    for module, tree in _stdlib_trees():
        if any(part.startswith("_") for part in module.split(".")):
            continue
        for node in tree.body:
            members = [(node, "")]
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                members = [(m, node.name + ".") for m in node.body]
            for fn, owner in members:
                if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                    continue
                args = ast.unparse(fn.args)
                if owner:
                    args = re.sub(r"^(self|cls)(, )?", "", args)
                params = tuple(
                    a.arg
                    for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
                    if a.arg not in ("self", "cls")
                )
                text = f"{module}.{owner}{fn.name}({args})"
                if len(text) <= 90:
                    out.append(Signature(module, owner + fn.name, text, params))
    return tuple(dict.fromkeys(out))


@functools.cache
def option_names() -> tuple[str, ...]:
    """Return the command-line options the standard library's own tools declare (argparse)."""
    found = set()
    for path in _stdlib_files():
        source = path.read_text(encoding="utf-8", errors="replace")
        if "add_argument" in source or "add_option" in source:
            found.update(
                re.findall(r"add_(?:argument|option)\(\s*(?:'-\w',\s*)?'(--[\w-]+)'", source)
            )
    return tuple(sorted(found))


def _metadata_texts() -> list[tuple[str, str]]:
    out = {}
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        if name and name != "dedup" and len(body) >= 300:
            out[name] = body
    return [(f"metadata:{name}", body) for name, body in sorted(out.items())]


def _read_doc(path: Path) -> str:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except OSError:
        return ""
    return raw[:DOC_CHARS].decode("utf-8", errors="replace")


def _doc_texts() -> list[tuple[str, str]]:
    if not DOC_DIR.is_dir():
        return []
    seen, out = set(), []
    for path in sorted(DOC_DIR.glob("*/*")):
        name = path.name.removesuffix(".gz")
        if not re.fullmatch(r"(README|NEWS)(\.Debian|\.md|\.txt|\.rst)?", name):
            continue
        text = _read_doc(path)
        if len(text) >= 300 and text not in seen:
            seen.add(text)
            out.append((f"doc:{path.parent.name}/{name}", text))
    return out


def _answers_en() -> list[tuple[str, str]]:
    # An eighth of the answers (picked by a hash of their own) is plenty of prose.
    out = []
    for i, text in enumerate(load_insuranceqa("en")):
        if 150 <= len(text) <= 2500 and stable_hash(f"pick:{i}") % 8 == 0:
            out.append((f"insuranceqa-en:{i}", text))
    return out


def _pieces(sources: list[tuple[str, str, str]], common: int = 0) -> tuple[Piece, ...]:
    """Cut, clean and de-repeat (key, text, origin) sources into pieces."""
    runs = []
    for key, text, origin in sources:
        runs += _cut(key, _paragraphs_en(text), origin)
    keep = drop_repeats([paras for _, paras, _ in runs], common)
    out = []
    for (key, paras, origin), ok in zip(runs, keep, strict=True):
        text = "\n".join(p for p, k in zip(paras, ok, strict=True) if k)
        if len(text) >= 150:
            out.append(Piece(key, text, origin))
    return tuple(out)


@functools.cache
def english_pool() -> tuple[Piece, ...]:
    """Return the English pieces of every source found on this machine, free of repeats."""
    import pydoc_data.topics

    sources = [(k, t, "stdlib") for k, t in _docstrings()]
    topics = pydoc_data.topics.topics
    sources += [(f"pydoc-topic:{k}", topics[k], "pydoc-topics") for k in sorted(topics)]
    sources += [(k, t, "metadata") for k, t in _metadata_texts()]
    sources += [(k, t, "usr-share-doc") for k, t in _doc_texts()]
    sources += [(k, t, "insuranceqa-en") for k, t in _answers_en()]
    return _pieces(sources)


# --- Debian -----------------------------------------------------------------------------------


def _status_descriptions() -> list[tuple[str, str]]:
    try:
        status = DPKG_STATUS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for stanza in status.split("\n\n"):
        name = re.search(r"^Package: (\S+)", stanza, re.M)
        desc = re.search(r"^Description: (.*\n(?: .*(?:\n|$))*)", stanza, re.M)
        if name and desc:
            out.append((f"dpkg:{name.group(1)}", "Description: " + desc.group(1).rstrip()))
    return out


def description_body(text: str) -> str:
    """Return a Debian description's long text as plain paragraphs ('.' lines part them)."""
    lines = text.split("\n")[1:]
    paras, cur = [], []
    for line in lines:
        line = line[1:] if line.startswith(" ") else line
        if line.strip() == ".":
            paras.append(" ".join(cur))
            cur = []
        else:
            cur.append(line.strip())
    paras.append(" ".join(cur))
    return "\n".join(p for p in paras if p)


_ENTRY = re.compile(r"^(\S+) \(([^)]+)\) ([^;]+); [^\n]*\n.*?\n -- [^\n]*", re.M | re.S)
ENTRIES_PER_CHANGELOG = 12


def _changelog_entries() -> list[tuple[str, str]]:
    if not DOC_DIR.is_dir():
        return []
    seen, out = set(), []
    for path in sorted(DOC_DIR.glob("*/changelog.Debian*.gz")):
        text = _read_doc(path)
        for m in list(_ENTRY.finditer(text))[:ENTRIES_PER_CHANGELOG]:
            entry = m.group(0).rstrip()
            if entry not in seen:
                seen.add(entry)
                out.append((f"changelog:{m.group(1)}|{m.group(2)}", entry))
    return out


@functools.cache
def debian_pool() -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
    """Return long package descriptions and changelog entries, free of repeats.

    In changelogs a stretch shared by 30 entries or more is stock text ("New upstream
    release", a team's sign-off) and stays: it is what makes entries hard negatives.
    """
    descs = [(k, t) for k, t in _status_descriptions() if len(description_body(t)) >= 250]
    entries = [(k, t) for k, t in _changelog_entries() if 120 <= len(t) <= 4000]
    keep = drop_repeats([[description_body(t)] for _, t in descs])
    descriptions = tuple(
        Piece(k, t, "dpkg") for (k, t), ok in zip(descs, keep, strict=True) if ok[0]
    )
    keep = drop_repeats([[t] for _, t in entries], common=30)
    kept = tuple(
        Piece(k, t, "changelog") for (k, t), ok in zip(entries, keep, strict=True) if ok[0]
    )
    return descriptions, kept


# --- Chinese ----------------------------------------------------------------------------------


@functools.cache
def chinese_pool() -> tuple[Piece, ...]:
    """Return People's Daily articles and insuranceqa answers, free of repeats, by paragraph."""
    sources = [
        (f"peoples-daily:{i}", t, "peoples-daily") for i, t in enumerate(load_peoples_daily())
    ]
    answers = load_insuranceqa("zh")
    sources += [
        (f"insuranceqa:{i}", t, "insuranceqa")
        for i, t in enumerate(answers)
        if stable_hash(f"pick:{i}") % 4 == 0
    ]
    runs = [(key, [p for p in text.split("\n") if p.strip()], o) for key, text, o in sources]
    keep = drop_repeats([paras for _, paras, _ in runs])
    out = []
    for (key, paras, origin), ok in zip(runs, keep, strict=True):
        text = "\n".join(p for p, k in zip(paras, ok, strict=True) if k)
        if len(text) >= 60:
            out.append(Piece(key, text, origin))
    return tuple(out)


def pool_split(pool: tuple[Piece, ...], split: str) -> list[Piece]:
    """Return the pieces of `pool` in half `split`."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use 'tune' or 'test'")
    return [p for p in pool if split_of(p.key.split("|")[0]) == split]
