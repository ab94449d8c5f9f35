"""The tech_en and debian corpora of bench/corpora.py (mail is in bench/corpora_mail.py)."""

from __future__ import annotations

import random
import re
from collections import Counter

from bench.corpora_parts import (
    EN_EDITS,
    MIN_SHARED,
    NEAR_MIN,
    Assembler,
    Dispenser,
    Site,
    Titles,
    edit,
    embed_page,
    excerpt,
    grouped_wrappers,
    keeps,
    lenders,
    line_run,
    paragraph_run,
    prose,
    site_wrapper,
    wrap,
)
from bench.corpus import Corpus, Doc
from bench.textpool import Piece, debian_pool, description_body, english_pool, pool_split

# --- tech_en ----------------------------------------------------------------------------------

_TECH_SITES = tuple(
    Site(
        name,
        ("Home > Python > Articles", "Home > Tools > Notes", "Home > Linux > How-to"),
        ("Sign in | Subscribe | RSS", "Log in  Sign up  Newsletter", "Search | Archive | About"),
        (
            "About | Contact | Privacy | Terms | Advertise",
            f"Copyright © 2024 {name}. Content is licensed CC BY-SA 4.0 unless noted otherwise.",
        ),
        ("Related posts", "Popular this week", "More from the blog"),
        (
            ("Previously on the blog", "Editor's picks", "Earlier today"),
            ("Read next", "Further reading", "From the archive"),
            ("Comments", "Discussion"),
        ),
    )
    for name in (
        "DevNotes",
        "The Stack Digest",
        "Byte Journal",
        "Code & Coffee",
        "Open Source Weekly",
    )
)
# Sections that many documents end with: real licence notices and README stock paragraphs.
STANDARD_SECTIONS = (
    "This program is free software: you can redistribute it and/or modify it under the terms "
    "of the GNU General Public License as published by the Free Software Foundation, either "
    "version 3 of the License, or (at your option) any later version.",
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
    'software and associated documentation files (the "Software"), to deal in the Software '
    "without restriction, including without limitation the rights to use, copy, modify, merge, "
    "publish, distribute, sublicense, and/or sell copies of the Software.",
    'Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file '
    "except in compliance with the License. You may obtain a copy of the License at "
    "http://www.apache.org/licenses/LICENSE-2.0",
    "Reporting bugs: please use the issue tracker. Include the version you are using, your "
    "operating system, a minimal example that reproduces the problem and the full traceback.",
    "Contributing: pull requests are welcome. For major changes, please open an issue first to "
    "discuss what you would like to change, and make sure to update the tests as appropriate.",
)
_TECH_NEAR = ("substitute", "delete_sentence", "insert_sentence", "reorder", "one_sentence")
_TECH_NEAR += ("reflow", "combined", "wrapper")
_LEADS = (
    "As the documentation puts it: ",
    "The reference says: ",
    "From the docs: ",
    "Quoting the manual: ",
)
_AUTHORS = ("alice", "bob", "chen", "dmitri", "emma", "farid", "grace", "hiro", "ines", "jonas")


def _stamp(rng: random.Random) -> str:
    date = f"{rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f"Posted {date} by {rng.choice(_AUTHORS)} | {rng.randint(0, 250)} comments"


_BOUNDS = {"140-500": (150, 499), "500-2000": (500, 2000), ">2000": (2001, 10**6)}


def _band_quota(count: int) -> list[tuple[int, int]]:
    """Return (lo, hi) length bounds, one per original, spread evenly over the bands above 140
    characters (the sources have no shorter technical prose)."""
    bands = list(_BOUNDS.values())
    return [bands[i % len(bands)] for i in range(count)]


def tech_en(*, seed: int, split: str, size: int) -> Corpus:
    """English technical prose with near copies, blog pages, excerpts and hard negatives."""
    rng = random.Random(f"tech_en/{seed}/{split}")
    pool = pool_split(english_pool(), split)
    tech = Dispenser([p for p in pool if p.origin != "insuranceqa-en"], rng)
    chat = Dispenser([p for p in pool if p.origin == "insuranceqa-en"], rng)  # blog comments
    asm = Assembler("tech_en")
    lend = [tech.take(300, 3000) for _ in range(60)]
    lend = [p for p in lend if p]
    asm.use(*lend)
    donors = lenders(lend, english=True)
    n_orig = size // 5
    n_sib, n_std = n_orig // 3, size - 4 * n_orig - n_orig // 3
    origs: list[Doc] = []
    bodies: dict[str, str] = {}  # the original without its standard section, to quote from
    for lo, hi in _band_quota(n_orig):
        piece = _prose_piece(tech, lo, hi)
        if piece is None:
            break
        asm.use(piece)
        text = piece.text
        if rng.random() < 0.15:  # some real documents end in a standard section too
            text += "\n" + rng.choice(STANDARD_SECTIONS)
        origs.append(asm.original(f"tech-{len(origs):04d}", text))
        bodies[origs[-1].family] = piece.text
    plans = {d.family: rng.sample(_TECH_NEAR, 2) for d in origs}
    # Siblings first: every wrapper made is used, by three to five families.
    siblings = [p for p in (tech.take(150, 3000) for _ in range(n_sib)) if p]
    slots = sum("wrapper" in p for p in plans.values()) + len(siblings)

    titles = Titles([p for p in pool if p.origin != "insuranceqa-en"], rng)

    def make():
        return site_wrapper(
            rng.choice(_TECH_SITES), rng, titles.take(rng.randint(5, 8)), _stamp(rng)
        )

    wrappers = grouped_wrappers(slots, rng, make)
    skipped = 0
    for orig in origs:
        doc_rng = random.Random(f"tech_en/{seed}/{orig.family}")
        for kind in plans[orig.family]:
            if kind == "wrapper":
                text = wrap(wrappers.pop(), orig.text)
            else:
                text = edit(kind, orig.text, doc_rng, donors)
            if text is None or text == orig.text or keeps(orig.text, text) < NEAR_MIN:
                skipped += 1  # nothing to edit, or the edit left too little of the original
                continue
            asm.copy(orig, kind, text)
        kinds = ["embedded", "concatenated"] + (["excerpt"] if len(orig.text) >= 500 else [])
        _partial(asm, orig, bodies[orig.family], doc_rng.choice(kinds), doc_rng, tech, chat)
    for i, piece in enumerate(siblings):
        asm.use(piece)
        asm.negative(f"tech-s{i:04d}", "template_sibling", wrap(wrappers.pop(), piece.text))
    for i in range(n_std):
        piece = tech.take(150, 3000)
        if piece is None:
            break
        asm.use(piece)
        std = STANDARD_SECTIONS[i % len(STANDARD_SECTIONS)]
        asm.negative(f"tech-b{i:04d}", "shared_boilerplate", piece.text + "\n" + std)
    return asm.finish(skipped_copies=skipped, pieces_left=len(tech))


def _prose_piece(pool: Dispenser, lo: int, hi: int) -> Piece | None:
    """Take a piece of `lo` to `hi` characters that reads as prose (others go back)."""
    refused = []
    found = None
    for _ in range(40):
        piece = pool.take(lo, hi) or pool.take(150, 3000)
        if piece is None or prose(piece.text):
            found = piece
            break
        refused.append(piece)
    for piece in refused:
        pool.put(piece)
    return found


def _partial(
    asm: Assembler,
    orig: Doc,
    body: str,
    kind: str,
    rng: random.Random,
    tech: Dispenser,
    chat: Dispenser,
) -> None:
    """Add one partial copy of `orig`: in a blog page, after another text, or quoted from
    `body` (the original without a standard section)."""
    size = len(orig.text)
    if kind == "excerpt":
        quote = excerpt(body, rng)
        if quote and len(quote) < 0.4 * size:
            quote = None
        host = tech.body(max(300, size // 2), 2 * size + 300)
        if quote and host:
            asm.use(host)
            paras = host.text.split("\n")
            said = rng.choice(_LEADS) + f'"{quote}"' if rng.random() < 0.5 else "> " + quote
            paras.insert(rng.randint(1, max(1, len(paras) - 1)), said)
            asm.copy(orig, "excerpt", "\n".join(paras), (quote,))
            return
        kind = "embedded"
    if kind == "concatenated":
        other = tech.body(int(size * 0.8), int(size * 1.25) + 200)
        if other:
            asm.use(other)
            parts = [orig.text, other.text] if rng.random() < 0.5 else [other.text, orig.text]
            asm.copy(orig, kind, "\n".join(parts), tuple(orig.text.split("\n")))
            return
    runs = []
    intro = tech.body(max(150, size // 2), size + 400)
    if intro:
        asm.use(intro)
        runs.append(paragraph_run(intro.text, max(150, size // 2), rng))
    for _ in range(rng.randint(1, 3)):
        comment = chat.body(150, 900)
        if comment:
            asm.use(comment)
            runs.append([f"user{rng.randint(10, 9999)}: " + comment.text.replace("\n", " ")])
    if not runs:
        return
    site = rng.choice(_TECH_SITES)
    w = site_wrapper(site, rng, (), _stamp(rng))
    heads = [rng.choice(h) for h in site.sections]
    page = embed_page(w, orig.text, runs, heads[:1] + heads[2:], rng)
    asm.copy(orig, "embedded", page, tuple(p for p in orig.text.split("\n") if p.strip()))


# --- debian -----------------------------------------------------------------------------------

_DERIVED = (
    ("-doc", "documentation", "This package contains the documentation."),
    (
        "-dev",
        "development files",
        "This package contains the development files (headers and static library).",
    ),
    ("-utils", "command-line utilities", "This package contains the command-line utilities."),
    ("-common", "common files", "This package contains the architecture-independent files."),
    ("-dbg", "debugging symbols", "This package contains the debugging symbols."),
)
_STOCK_BULLETS = (
    "  * Rebuild against the current toolchain.",
    "  * No-change rebuild for the transition.",
    "  * Upload to unstable.",
    "  * Team upload.",
)
_UPLOADERS = (
    "Debian Python Team <team+python@tracker.debian.org>",
    "Debian X Strike Force <debian-x@lists.debian.org>",
    "Ubuntu Developers <ubuntu-devel-discuss@lists.ubuntu.com>",
    "Backports Team <backports@example.org>",
)
_ENTRY_HEAD = re.compile(r"^(\S+) \(([^)]+)\) ([^;]+); (.*)$")


def _derived(text: str, variant: tuple[str, str, str], rng: random.Random, donors) -> str:
    """Reuse a package description for a derived binary package (-doc, -dev, ...): its own
    synopsis and closing paragraph, maybe a few words changed."""
    _, what, closing = variant
    lines = text.split("\n")
    synopsis = lines[0].removeprefix("Description: ")
    paras = "\n".join(lines[1:]).split("\n .\n")
    if len(paras) > 1 and paras[-1].strip().startswith("This package"):
        paras = paras[:-1]  # the closing paragraph says which binary package this is
    body = "\n .\n".join(paras)
    if rng.random() < 0.5:
        body = EN_EDITS["substitute"](body, rng, donors)
    return "\n".join([f"Description: {synopsis} - {what}", body, " .", " " + closing])


def _rebuild(entry: str, rng: random.Random) -> str:
    """Re-upload a changelog entry: a new version, distribution, stock line and sign-off."""
    lines = entry.split("\n")
    m = _ENTRY_HEAD.match(lines[0])
    if m:
        suffix = rng.choice(("+b1", "ubuntu1", "~bpo12+1", "+deb12u1", "build1"))
        dist = rng.choice(("bookworm-backports", "jammy", "noble", "bookworm", "experimental"))
        lines[0] = f"{m.group(1)} ({m.group(2)}{suffix}) {dist}; {m.group(4)}"
    bullets = [i for i, line in enumerate(lines) if line.startswith("  * ")]
    at = bullets[0] if bullets else 2
    lines.insert(at, rng.choice(_STOCK_BULLETS))
    date = f"{rng.choice(('Mon', 'Tue', 'Wed', 'Thu', 'Fri'))}, {rng.randint(1, 28):02d} Mar 2025"
    lines[-1] = f" -- {rng.choice(_UPLOADERS)}  {date} {rng.randint(8, 20):02d}:14:03 +0000"
    return "\n".join(lines)


def _quoting_entry(host: str, quote_lines: list[str], version: str, rng: random.Random) -> str:
    """Return the changelog entry `host` carrying lines quoted from an earlier entry."""
    lines = host.split("\n")
    bullets = [i for i, line in enumerate(lines) if line.startswith("  * ")]
    at = (bullets[-1] + 1) if bullets else 2
    while at < len(lines) and lines[at].startswith("    "):
        at += 1
    lead = rng.choice(
        (f"  * Changes carried over from {version}:", f"  * Merge from {version}, which said:")
    )
    block = [lead, *("    " + line.strip() for line in quote_lines)]
    return "\n".join(lines[:at] + block + lines[at:])


def debian(*, seed: int, split: str, size: int) -> Corpus:
    """Package descriptions and changelog entries: derived packages, re-uploads, quoted entries."""
    rng = random.Random(f"debian/{seed}/{split}")
    descriptions, entries = (pool_split(p, split) for p in debian_pool())
    if not descriptions and not entries:
        raise RuntimeError(
            "no Debian package text here: the debian corpus reads /var/lib/dpkg/status and "
            "/usr/share/doc/*/changelog.Debian.gz; build it on a Debian machine"
        )
    asm = Assembler("debian")
    descs = Dispenser(descriptions, rng)
    ents = Dispenser(entries, rng)
    lend = [p for p in (descs.take() for _ in range(12)) if p]
    asm.use(*lend)
    donors = lenders([type(p)(p.key, description_body(p.text), p.origin) for p in lend], True)
    n_desc = min(len(descs) * 2 // 3, size // 8)
    for i in range(n_desc):
        piece = descs.take()
        asm.use(piece)
        orig = asm.original(f"deb-d{i:04d}", piece.text)
        doc_rng = random.Random(f"debian/{seed}/{orig.family}")
        for variant in doc_rng.sample(_DERIVED, 2):
            text = _derived(orig.text, variant, doc_rng, donors)
            if keeps(orig.text, text) >= NEAR_MIN:
                asm.copy(orig, "derived", text)
    for i in range(min(len(descs), n_desc // 2)):
        piece = descs.take()
        asm.use(piece)
        asm.negative(f"deb-dn{i:04d}", "shared_boilerplate", piece.text)
    # Lines that three entries or more have ("* New upstream release.") are stock text.
    counts = Counter(x.strip() for p in entries for x in set(p.text.split("\n")[1:-1]))
    stock = {x for x, n in counts.items() if n >= 3}
    budget = size - len(asm.docs)
    n_entry = budget // 5
    taken = 0
    for _ in range(n_entry * 3):
        if taken == n_entry:
            break
        piece = ents.take(350)
        if piece is None:
            break
        lines = piece.text.split("\n")
        body = [line for line in lines[1:-1] if line.strip()]
        doc_rng = random.Random(f"debian/{seed}/{piece.key}")
        run = line_run(
            body, max(MIN_SHARED, int(0.4 * len(piece.text))), int(0.7 * len(piece.text)), doc_rng
        )
        if run is not None and sum(len(x) for x in run if x.strip() not in stock) < 160:
            run = None  # mostly stock lines: a quote of those shares no real text
        host = ents.take(150, 1500)
        if run is None or host is None:
            if host:
                ents.put(host)
            ents.put(piece)
            continue
        asm.use(piece, host)
        orig = asm.original(f"deb-e{taken:04d}", piece.text)
        taken += 1
        asm.copy(orig, "rebuild", _rebuild(orig.text, doc_rng))
        version = _ENTRY_HEAD.match(lines[0])
        quoted = _quoting_entry(
            host.text, run, version.group(2) if version else "the last upload", doc_rng
        )
        asm.copy(orig, "excerpt", quoted, ("\n".join(run),))
        shorter = _drop_bullet(orig.text, doc_rng)
        if doc_rng.random() < 0.5 and keeps(orig.text, shorter) >= NEAR_MIN:
            asm.copy(orig, "delete_sentence", shorter)
    i = 0
    while len(asm.docs) < size:
        piece = ents.take()
        if piece is None:
            break
        asm.use(piece)
        asm.negative(f"deb-en{i:04d}", "shared_boilerplate", piece.text)
        i += 1
    return asm.finish(entries_left=len(ents))


def _drop_bullet(entry: str, rng: random.Random) -> str:
    """Delete one bullet (with its continuation lines) from a changelog entry."""
    lines = entry.split("\n")
    bullets = [i for i, line in enumerate(lines) if re.match(r"^\s+[*-] ", line)]
    if len(bullets) < 2:
        return entry.replace("  * ", "  - ", 1) if "  * " in entry else entry + "\n"
    i = rng.choice(bullets)
    j = i + 1
    while j < len(lines) and lines[j].startswith("    ") and not re.match(r"^\s+[*-] ", lines[j]):
        j += 1
    return "\n".join(lines[:i] + lines[j:])
