"""The manuals corpus of bench/heldout_corpora.py: Debian's manual pages of a few projects.

Pages of PROJECTS (coreutils, util-linux, systemd, dpkg, apt, man-db, procps), one language of
each page name, rendered with groff. Template: the sentences TEMPLATE_PAGES pages or more hold,
the page's own name read as a placeholder. Pages that are copies in the wild (ls, dir and vdir)
are labelled "derived" copies; a few pages are re-wrapped or edited (near) or quoted in a
/usr/share/doc page (excerpt).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import re
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.corpora import LEAK
from bench.corpora_parts import NEAR_MIN, edit, excerpt, keeps, reflow
from bench.corpus import Corpus
from bench.heldout_corpora import NEAR_EN, _add, _corpus, _donors
from bench.textpool import GRAM, _doc_texts, grams, normalise, split_of

PROJECTS = ("coreutils", "util-linux", "systemd", "dpkg", "apt", "man-db", "procps")
DPKG_INFO = Path("/var/lib/dpkg/info")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dedup-bench" / "man"
TEMPLATE_PAGES = 3  # a manual sentence held by this many pages (of any project) is template
RELATED_HOLDERS = 12  # a stretch held by at most this many pages is theirs, not a footer

# --- pages -----------------------------------------------------------------------------------


def man_pages(projects=PROJECTS) -> list[tuple[str, str]]:
    """Return (project, path) of every manual page the projects ship, in every language."""
    out = []
    for project in projects:
        lists = sorted(DPKG_INFO.glob(f"{project}.list")) + sorted(
            DPKG_INFO.glob(f"{project}:*.list")
        )
        for listing in lists[:1]:
            for line in listing.read_text().splitlines():
                path = Path(line)
                page = line.startswith("/usr/share/man/") and line.endswith(".gz")
                if page and path.is_file() and not path.is_symlink():
                    out.append((project, line))
    return out


def render(path: str) -> str:
    """Return a manual page as plain text: `man -l`, overstrikes gone, wrapped lines of a
    paragraph joined; cached on disk by path and modification time."""
    key = hashlib.sha1(f"{path}:{os.stat(path).st_mtime_ns}".encode()).hexdigest()
    cached = CACHE / f"{key}.txt"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    roff = gzip.decompress(Path(path).read_bytes())
    # groff as man(1) runs it (preconv, soelim), without hyphenation or justification; run
    # from the language's folder, where a page's ".so" names its include.
    command = ["groff", "-k", "-s", "-man", "-Tutf8", "-rLL=78n", "-rHY=0", "-dAD=l", "-P-cbou"]
    done = subprocess.run(command, input=roff, cwd=Path(path).parents[1], capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    raw = re.sub(r".\x08", "", done.stdout.decode("utf-8", errors="replace"))
    paras, current = [], []
    for line in raw.splitlines():
        if not line.strip() or not line.startswith(" "):  # a blank line or a section heading
            if current:
                paras.append(" ".join(current))
            current = []
            if line.strip():
                paras.append(" ".join(line.split()))
            continue
        current.append(" ".join(line.split()))
    if current:
        paras.append(" ".join(current))
    text = "\n".join(paras)
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(text, encoding="utf-8")
    return text


def _sentences(text: str) -> list[str]:
    return [s for p in text.split("\n") for s in re.split(r"(?<=[.!?;:])\s+", p) if s.strip()]


def manual_template(pages) -> list[str]:
    """Return the sentences (normalised, of 20 characters or more, the page's own name as
    "pagename") that TEMPLATE_PAGES pages or more hold: "Full documentation <.../ls>" is
    coreutils' standard sentence with ls's name in it."""
    held = Counter(s for text in pages for s in set(_named_sentences(text)))
    return sorted(s for s, n in held.items() if n >= TEMPLATE_PAGES and len(s) >= 20)


def _named_sentences(text: str) -> list[str]:
    """Return a page's sentences normalised, its own name (as its header gives it) replaced."""
    found = re.match(r"\s*([^\s(]+)\(", text)
    name = normalise(found.group(1)) if found else ""
    out = []
    for sentence in _sentences(text):
        norm = normalise(sentence)
        out.append(norm.replace(name, "pagename") if len(name) >= 2 else norm)
    return out


def manuals(seed: int, size: int) -> Corpus:
    """Manual pages of PROJECTS with near copies and excerpts quoted in tutorial pages."""
    rng = random.Random(f"manuals:{seed}")
    pages = man_pages()
    rng.shuffle(pages)
    # One language of each page: a translation keeps its original's commands, options and
    # untranslated paragraphs, text the two share that is neither a copy nor a template.
    named: dict[tuple[str, str], tuple[str, str]] = {}
    for project, path in pages:
        named.setdefault((project, "/".join(Path(path).parts[-2:])), (project, path))
    pages = list(named.values())
    # Most of the corpus is pages (the hard negatives); one in eight gets copies.
    wanted = min(len(pages), max(20, round(size * 0.8)))
    with ThreadPoolExecutor(2) as pool:
        texts = list(pool.map(render, [p for _, p in pages[:wanted]]))
    seen, rendered = set(), []
    for (project, path), text in zip(pages[:wanted], texts, strict=True):
        if len(text) >= 300 and normalise(text) not in seen:
            seen.add(normalise(text))
            rendered.append((project, path, text))
    # Pages that are copies of one another in the wild (ls and dir, a translation that keeps
    # the English text): a later page that keeps half of an earlier one is its "derived" copy,
    # one that shares less but still a long stretch is left out (no label fits it).
    # Judged on the pages' own text: two short pages that are mostly one footer are not copies.
    shared = set(manual_template(t for _, _, t in rendered))
    derived, dropped = _related(
        [t for _, _, t in rendered], [_own(t, shared) for *_, t in rendered]
    )
    originals = [r for i, r in enumerate(rendered) if i not in derived and i not in dropped]
    template = set(manual_template(t for _, _, t in originals))
    docs = _corpus()
    tutorials = [t for _, t in _doc_texts() if split_of(f"heldout:{t[:200]}") == "test"]
    rng.shuffle(tutorials)
    for i, (project, path, text) in enumerate(rendered):
        if i in dropped or i in derived:
            continue
        family = _man_family(project, path)
        _add(docs, family, "original", text, f"man-{project}")
        for j in sorted(k for k, first in derived.items() if first == i):
            other_project, other, copy = rendered[j]
            _add(docs, family, "derived", copy, f"man-{other_project}:{other}")
        if rng.random() >= 0.125 or len(docs) >= size:
            continue
        own = _own(text, template)
        kind = rng.choice(NEAR_EN)
        copy = reflow(text, rng) if kind == "reflow" else edit(kind, text, rng, _donors())
        if copy and copy != text:
            _add(docs, family, kind, copy, "mirror")
        quote = excerpt(own, rng) if len(own) >= 600 else None
        if quote and tutorials:
            filler = tutorials.pop()[:1500]
            cut = filler.rfind("\n", 0, len(filler) // 2) + 1
            page = f"{filler[:cut]}\nFrom the manual page:\n{quote}\n{filler[cut:]}"
            _add(docs, family, "excerpt", page, "tutorial", [quote])
    docs.stats = {"template": sorted(template), "pages": len(originals)}
    return docs


def _man_family(project: str, path: str) -> str:
    return f"man:{project}:{path.removeprefix('/usr/share/man/')}"


def _own(text: str, template: set[str]) -> str:
    """Return the paragraphs of a page that hold a sentence of 20 characters or more (the
    page's own name aside) that is not template."""
    found = re.match(r"\s*([^\s(]+)\(", text)
    name = normalise(found.group(1)) if found else ""
    out = []
    for para in text.split("\n"):
        norms = [normalise(x) for x in _sentences(para)]
        norms = [n.replace(name, "pagename") if len(name) >= 2 else n for n in norms]
        if any(len(n) >= 20 and n not in template for n in norms):
            out.append(para)
    return "\n".join(out)


def _related(texts: list[str], own: list[str]) -> tuple[dict[int, int], set[int]]:
    """Return the pages that are near copies of an earlier one (page -> that one), among pages
    sharing verbatim GRAM-grams held by at most RELATED_HOLDERS pages, and those that share a
    LEAK-character stretch with an earlier one all the same that no third page holds (held by
    more, it is a standard section: the template the corpus is about). Near: each keeps half of
    the other's own text (`own`: the template's sentences left out)."""
    norms = [normalise(t) for t in texts]
    h, owner, _ = grams(norms, GRAM)
    rows = np.unique(np.stack([h.view(np.int64), owner], axis=1), axis=0)
    starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
    sizes = np.diff(np.r_[starts, len(rows)])
    shared: Counter = Counter()  # grams two pages share, held by at most RELATED_HOLDERS
    theirs: Counter = Counter()  # ... held by these two pages alone (more: a template's)
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        if 2 <= size <= RELATED_HOLDERS:
            pages = rows[start : start + size, 1].tolist()
            for x in range(size):
                for y in range(x + 1, size):
                    shared[pages[x], pages[y]] += 1
                    theirs[pages[x], pages[y]] += size < TEMPLATE_PAGES
    derived: dict[int, int] = {}
    dropped: set[int] = set()
    stretch = LEAK - GRAM + 1  # grams of a LEAK-character stretch
    for (i, j), n in sorted(shared.items()):
        if n < stretch or j in derived or j in dropped or i in dropped:
            continue
        first = derived.get(i, i)
        if keeps(own[first], own[j]) >= NEAR_MIN and keeps(own[j], own[first]) >= NEAR_MIN:
            derived[j] = first
        elif theirs[i, j] >= stretch:
            dropped.add(j)
    return derived, dropped
