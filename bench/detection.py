"""Detection quality of the final judgement: dedup against the seed method and MinHash LSH.

    python -m bench.detection [--per-band N]    (--per-band 100: a quick run, for iterating)

The corpus of bench/corpus.py with its partial copies (an article inside a page twice its length
or more, two articles concatenated, an excerpt quoted inside another article). Three methods in
one run: the literal seed method (jieba extract_tags top 20, mmh3, SimHash, distance <= 3),
dedup's verified `duplicates`, and datasketch's MinHashLSH over character 5-grams. Precision
counts every pair a method reports in the whole corpus (right iff both documents are of one
family); recall counts the labelled (original, copy) pairs found. For dedup's partial matches,
the shared passages are checked against the text each copy is known to share with its original.
Every method is timed alone; dedup's end-to-end cost is set against fingerprinting alone, timed
in alternating slices beside it. Results go to bench/results/detection.md and detection.png.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from datasketch import MinHash, MinHashLSH

from bench import provenance
from bench.corpus import BANDS, EDIT_KINDS, PARTIAL_KINDS, Doc, build_corpus
from dedup.engine import Config, merge, normalise
from dedup.engine.pairs import pairs as index_pairs
from dedup.engine.verify import SHORT, Boilerplate, passage_owners_of

RESULTS = Path(__file__).parent / "results"
LONG = BANDS[1:]  # articles of 140 characters or more
ALL_KINDS = (*EDIT_KINDS, *PARTIAL_KINDS)
SEED_TOP_N = 20
SEED_K = 3
MAX_K = 12
SHINGLE = 5
NUM_PERM = 128
LSH_THRESHOLD = 0.5
SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PASSAGE_GRAM = 4
PASSAGE_OVERLAP = 0.5  # a shared passage is right if this share of it is labelled shared text
_SPACE = re.compile(r"\s+")
_SEPARATORS = re.compile(r"[\s,]+")


# --- labels and scores ----------------------------------------------------------------------


class Truth:
    """The corpus labels as arrays: family and band per document, the labelled pairs."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        self.docs = docs
        self.n = len(docs)
        families = {f: i for i, f in enumerate(dict.fromkeys(d.family for d in docs))}
        self.family = np.array([families[d.family] for d in docs], dtype=np.int64)
        self.band = np.array([BANDS.index(d.band) for d in docs], dtype=np.int64)
        index = {d.id: i for i, d in enumerate(docs)}
        labelled = []
        for i, doc in enumerate(docs):
            if doc.kind in ALL_KINDS:
                o = index[f"{doc.family}/orig"]
                labelled.append((min(o, i) * self.n + max(o, i), doc.band, doc.kind, o, i))
        self.key = np.array([x[0] for x in labelled], dtype=np.int64)
        self.pair_band = [x[1] for x in labelled]
        self.pair_kind = [x[2] for x in labelled]
        self.original = [x[3] for x in labelled]
        self.copy = [x[4] for x in labelled]
        self.totals: dict[tuple[str, str], int] = {}
        for band, kind in zip(self.pair_band, self.pair_kind, strict=True):
            self.totals[band, kind] = self.totals.get((band, kind), 0) + 1


@dataclass
class Scores:
    """What one method at one setting found: pairs by band, right or wrong, and recall hits."""

    name: str
    true: np.ndarray  # [band] same-family pairs found
    false: np.ndarray  # [band] cross-family pairs found
    hits: dict  # (band, kind) -> labelled pairs found
    totals: dict  # (band, kind) -> labelled pairs
    found: np.ndarray  # bool per labelled pair (Truth order)
    seconds: float = 0.0

    def precision(self, bands: Sequence[str] = LONG) -> float:
        """Return precision over pairs whose shorter document is in `bands` (1 if none)."""
        idx = [BANDS.index(b) for b in bands]
        true, false = self.true[idx].sum(), self.false[idx].sum()
        return float(true / (true + false)) if true + false else 1.0

    def recall(self, bands: Sequence[str] = LONG, kinds: Sequence[str] = ALL_KINDS) -> float:
        """Return recall over the labelled pairs of some bands and kinds (nan if none)."""
        hits = sum(self.hits.get((b, k), 0) for b in bands for k in kinds)
        total = sum(self.totals.get((b, k), 0) for b in bands for k in kinds)
        return hits / total if total else float("nan")

    def f1(self, bands: Sequence[str] = LONG, kinds: Sequence[str] = ALL_KINDS) -> float:
        """Return the harmonic mean of precision and recall."""
        p, r = self.precision(bands), self.recall(bands, kinds)
        return 2 * p * r / (p + r) if p + r else 0.0

    def false_per_1000(self, truth: Truth, bands: Sequence[str] = LONG) -> float:
        """Return false matches per 1,000 documents of `bands`."""
        idx = [BANDS.index(b) for b in bands]
        docs = np.isin(truth.band, idx).sum()
        return 1000 * float(self.false[idx].sum()) / max(1, int(docs))


def score(name: str, truth: Truth, a: np.ndarray, b: np.ndarray, seconds: float = 0.0) -> Scores:
    """Score the pairs (a[i], b[i]) a method reported against the corpus labels."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys = np.unique(lo[lo != hi] * truth.n + hi[lo != hi])
    lo, hi = keys // truth.n, keys % truth.n
    same = truth.family[lo] == truth.family[hi]
    pair_band = np.minimum(truth.band[lo], truth.band[hi])
    true = np.bincount(pair_band[same], minlength=len(BANDS))
    false = np.bincount(pair_band[~same], minlength=len(BANDS))
    found = np.isin(truth.key, keys)
    hits: dict[tuple[str, str], int] = {}
    for hit, band, kind in zip(found.tolist(), truth.pair_band, truth.pair_kind, strict=True):
        hits[band, kind] = hits.get((band, kind), 0) + hit
    return Scores(name, true, false, hits, truth.totals, found, seconds)


# --- the seed method ------------------------------------------------------------------------


def _seed_fingerprints(texts: list[str]) -> tuple[list[int | None], float]:
    """Fingerprint texts with the literal seed method (in a worker process); time it."""
    import jieba

    from bench.speed import literal_reference

    jieba.setLogLevel(60)
    jieba.initialize()
    plain = literal_reference(SEED_TOP_N)
    start = time.perf_counter()
    values = [plain(t) or None for t in texts]
    return values, time.perf_counter() - start


def _valid(values: list[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """Return the positions that have a fingerprint, and their fingerprints."""
    where = np.array([i for i, v in enumerate(values) if v is not None], dtype=np.int64)
    return where, np.array([values[i] for i in where], dtype=np.uint64)


def seed_pairs(values: list[int | None], k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the pairs within distance k from the segment index, and the search time."""
    where, fps = _valid(values)
    start = time.perf_counter()
    found = index_pairs(fps, k)
    return where[found.a], where[found.b], time.perf_counter() - start


def all_distances(values: list[int | None], k_max: int) -> tuple[np.ndarray, ...]:
    """Return every pair within `k_max` by brute force, with its distance (for the sweep)."""
    where, fps = _valid(values)
    out_a, out_b, out_d = [], [], []
    for start in range(0, len(fps), 512):
        rows = np.arange(start, min(start + 512, len(fps)))
        dist = np.bitwise_count(fps[rows, None] ^ fps[None, :])
        ok = (np.arange(len(fps))[None, :] > rows[:, None]) & (dist <= k_max)
        i, j = np.nonzero(ok)
        out_a.append(where[rows[i]])
        out_b.append(where[j])
        out_d.append(dist[i, j])
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d)


# --- MinHash LSH ----------------------------------------------------------------------------


def five_grams(text: str) -> set[bytes]:
    """Return a text's character 5-grams, lowercased, whitespace removed, as UTF-8."""
    s = _SPACE.sub("", text.lower())
    if len(s) <= SHINGLE:
        return {s.encode()}
    return {s[i : i + SHINGLE].encode() for i in range(len(s) - SHINGLE + 1)}


def minhashes(texts: list[str]) -> list[MinHash]:
    """Return one 128-permutation MinHash per text."""
    return MinHash.bulk((five_grams(t) for t in texts), num_perm=NUM_PERM)


def lsh_pairs(hashes: list[MinHash], threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Insert every MinHash into an LSH index, query each, and return the pairs it returns."""
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    with lsh.insertion_session() as session:
        for i, m in enumerate(hashes):
            session.insert(i, m)
    a, b = [], []
    for i, m in enumerate(hashes):
        for j in lsh.query(m):
            if j > i:
                a.append(i)
                b.append(j)
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)


def estimated_jaccard(matrix: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return MinHash.jaccard for many pairs at once, from the stacked hash values."""
    out = np.empty(len(a))
    for start in range(0, len(a), 65536):
        end = start + 65536
        out[start:end] = (matrix[a[start:end]] == matrix[b[start:end]]).mean(axis=1)
    return out


# --- dedup ----------------------------------------------------------------------------------


def detector(**thresholds: float):
    """Return a dedup Detector at the recommended settings, or with other thresholds."""
    from dedup.engine.verify import Detector

    return Detector(Config(), **thresholds)


def _fours(text: str) -> set[str]:
    s = _SEPARATORS.sub("", text)
    return {s[i : i + PASSAGE_GRAM] for i in range(len(s) - PASSAGE_GRAM + 1)} or {s}


@dataclass
class PassageCheck:
    """How right dedup's shared passages are on the labelled partial pairs it found."""

    pairs: int = 0  # labelled partial pairs found
    with_passages: int = 0  # of them, with at least one shared passage pair
    all_right: int = 0  # of them, every shared passage pair right on both sides
    passage_pairs: int = 0
    right_original: int = 0  # passage pairs whose original's passage is shared text
    right_both: int = 0  # ... and whose copy's passage is shared text too
    coverage: float = 0.0  # summed share of the shared text the copy's listed passages cover

    def add(self, other: PassageCheck) -> None:
        """Add another check's counts to this one."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def check_passages(det, truth: Truth, dups: list, config: Config) -> dict[str, PassageCheck]:
    """Check the shared passages of every labelled partial pair dedup found, per kind."""
    by_pair = {(d.a, d.b): d for d in dups}
    cache: dict[int, list[set[str]]] = {}

    def passages(i: int) -> list[set[str]]:
        if i not in cache:
            cache[i] = [_fours(p) for p in det.passages(truth.docs[i].text)]
        return cache[i]

    out = {kind: PassageCheck() for kind in PARTIAL_KINDS}
    for o, c, kind in zip(truth.original, truth.copy, truth.pair_kind, strict=True):
        dup = by_pair.get((min(o, c), max(o, c)))
        if kind not in PARTIAL_KINDS or dup is None:
            continue
        check = out[kind]
        check.pairs += 1
        labelled = set().union(*(_fours(normalise(t, config)) for t in truth.docs[c].shared))
        spots = [(i, j) if dup.a == o else (j, i) for i, j in dup.shared_passages]
        if not spots:
            continue
        check.with_passages += 1
        mine, theirs = passages(o), passages(c)
        right = 0
        for i, j in spots:
            ok_o = len(mine[i] & labelled) >= PASSAGE_OVERLAP * len(mine[i])
            ok_c = len(theirs[j] & labelled) >= PASSAGE_OVERLAP * len(theirs[j])
            check.right_original += ok_o
            right += ok_o and ok_c
        check.passage_pairs += len(spots)
        check.right_both += right
        check.all_right += right == len(spots)
        covered = set().union(*(theirs[j] for _, j in spots)) & labelled
        check.coverage += len(covered) / max(1, len(labelled))
    return out


# --- the run --------------------------------------------------------------------------------


@dataclass
class Method:
    """A method's scores at its default setting, its sweep, and its time per 1,000 articles."""

    name: str
    default: Scores
    sweep: list[tuple[str, Scores]]  # (setting label, scores), in sweep order
    marker: int  # position of the default in the sweep
    timing: dict[str, float]  # stage -> seconds over the corpus
    family: str = ""  # the method without its default setting, for the sweeps


def run_seed(truth: Truth, values: list[int | None], seconds: float) -> Method:
    """Score the seed method at k = 3 and sweep k from 0 to 12."""
    a, b, search = seed_pairs(values, SEED_K)
    default = score(f"seed method, k={SEED_K}", truth, a, b)
    sa, sb, sd = all_distances(values, MAX_K)
    sweep = [(f"k={k}", score(f"seed k={k}", truth, sa[sd <= k], sb[sd <= k])) for k in range(13)]
    timing = {"features": seconds, "search": search, "verification": 0.0}
    return Method(default.name, default, sweep, SEED_K, timing, "seed method")


@dataclass
class DedupRun:
    """dedup end to end over the corpus at the recommended settings, timed."""

    features: list
    candidates: np.ndarray
    duplicates: list
    timing: dict[str, float]  # stage -> seconds over the corpus
    fingerprinting: tuple[float, float]  # fingerprinting alone, beside features / verification


def run_dedup_timed(texts: list[str], slices: int = 60) -> DedupRun:
    """Run dedup end to end (features, search, verification) and time each stage; time
    fingerprinting alone too, over all texts twice, in slices alternating with the features
    and then with the verification, so that what else the machine does at the time weighs
    on both sides of the ratio alike. Which of the two sees a slice's texts first (and so
    meets their new words first: the word caches are shared) alternates too."""
    det = detector()
    fingerprinter = det.fingerprinter  # the same engine: one set of dictionaries and caches
    for text in texts[:200]:  # warm both up: dictionaries, caches
        det.features(text)
        fingerprinter.fingerprint(text)
    text_slices = np.array_split(np.arange(len(texts)), slices)

    def fingerprint_slice(k: int) -> float:
        start = time.perf_counter()
        for i in text_slices[k].tolist():
            fingerprinter.fingerprint(texts[i])
        return time.perf_counter() - start

    feats: list = []
    featuring = beside_features = 0.0
    for k, part in enumerate(text_slices):
        if k % 2 == 0:
            beside_features += fingerprint_slice(k)
        start = time.perf_counter()
        feats += [det.features(texts[i]) for i in part.tolist()]
        featuring += time.perf_counter() - start
        if k % 2 == 1:
            beside_features += fingerprint_slice(k)
    start = time.perf_counter()
    candidates = det.candidates(feats)
    # Boilerplate learned from the collection, as Detector.duplicates (and the service) do.
    owners = Boilerplate(passage_owners_of(feats))
    searching = time.perf_counter() - start
    dups: list = []
    verifying = beside_verification = 0.0
    for k, part in enumerate(np.array_split(candidates, slices)):
        beside_verification += fingerprint_slice(k)
        start = time.perf_counter()
        dups += det.verify(feats, part, owners)
        verifying += time.perf_counter() - start
    timing = {"features": featuring, "search": searching, "verification": verifying}
    return DedupRun(feats, candidates, dups, timing, (beside_features, beside_verification))


def run_numpy_only(texts: list[str], compiled: DedupRun) -> tuple[DedupRun, bool]:
    """Run dedup timed again without the compiled module (as where pip found no C compiler);
    return the run and whether its features and duplicates equal the compiled run's."""
    native = merge.accelerated
    merge.accelerated = None
    try:
        run = run_dedup_timed(texts)
    finally:
        merge.accelerated = native
    same = run.duplicates == compiled.duplicates and all(
        (a.shingles == b.shingles).all() and (a.passage_keys == b.passage_keys).all()
        for a, b in zip(run.features, compiled.features, strict=True)
    )
    return run, same


def run_dedup(truth: Truth, run: DedupRun) -> tuple[Method, object, list, dict]:
    """Score dedup's duplicates at the recommended settings and sweep the thresholds."""
    det, feats, dups = detector(), run.features, run.duplicates
    a = np.array([d.a for d in dups], dtype=np.int64)
    b = np.array([d.b for d in dups], dtype=np.int64)
    default = score("dedup duplicates", truth, a, b)
    kinds = {(d.a, d.b): d.kind for d in dups}
    # The thresholds move together: partial keeps the recommended gap to near, and the short
    # texts' near its ratio to near.
    gap, ratio = det.partial - det.near, det.near_short / det.near
    sweep, marker = [], 0
    for t in sorted({*SWEEP, det.near}):
        partial = round(min(1.0, max(0.0, t + gap)), 3)
        short = round(t * ratio, 3)
        if t == det.near:
            marker, scores = len(sweep), default
        else:
            found = detector(near=t, partial=partial, near_short=short).duplicates(feats)
            fa = np.array([d.a for d in found], dtype=np.int64)
            fb = np.array([d.b for d in found], dtype=np.int64)
            scores = score(f"dedup near={t}", truth, fa, fb)
        sweep.append((f"near={t}, partial={partial}, short={short}", scores))
    extra = {"candidates": len(run.candidates), "found": len(dups), "kinds": kinds}
    return Method(default.name, default, sweep, marker, run.timing, "dedup"), det, dups, extra


def run_minhash(truth: Truth, texts: list[str]) -> tuple[Method, Method]:
    """Score MinHash LSH, as returned and with estimated Jaccard >= threshold, and sweep both."""
    start = time.perf_counter()
    hashes = minhashes(texts)
    featuring = time.perf_counter() - start
    start = time.perf_counter()
    a, b = lsh_pairs(hashes, LSH_THRESHOLD)
    searching = time.perf_counter() - start
    start = time.perf_counter()
    pairs = zip(a.tolist(), b.tolist(), strict=True)
    keep = np.array([hashes[i].jaccard(hashes[j]) >= LSH_THRESHOLD for i, j in pairs], bool)
    verifying = time.perf_counter() - start
    raw = score(f"MinHash LSH (threshold {LSH_THRESHOLD})", truth, a, b)
    checked = score(f"MinHash LSH + Jaccard >= {LSH_THRESHOLD}", truth, a[keep], b[keep])
    matrix = np.stack([m.hashvalues for m in hashes])
    raw_sweep, checked_sweep = [], []
    for t in SWEEP:
        sa, sb = lsh_pairs(hashes, t)
        ok = estimated_jaccard(matrix, sa, sb) >= t
        raw_sweep.append((f"threshold={t}", score(f"LSH {t}", truth, sa, sb)))
        checked_sweep.append((f"threshold={t}", score(f"LSH {t} + J", truth, sa[ok], sb[ok])))
    marker = SWEEP.index(LSH_THRESHOLD)
    base = {"features": featuring, "search": searching}
    return (
        Method(raw.name, raw, raw_sweep, marker, {**base, "verification": 0.0}, "MinHash LSH"),
        Method(
            checked.name,
            checked,
            checked_sweep,
            marker,
            {**base, "verification": verifying},
            "MinHash LSH + Jaccard >= t",
        ),
    )


def main() -> None:
    """Run the three methods over the corpus; print and save the tables and the plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-band", type=int, default=300, help="originals per length band")
    parser.add_argument("--seed", type=int, default=1998)
    args = parser.parse_args()

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        docs = build_corpus(per_band=args.per_band, seed=args.seed)
    built = time.perf_counter() - start
    texts = [d.text for d in docs]
    truth = Truth(docs)

    # Every method is timed alone: the seed method (jieba in pure Python, and its memory) in a
    # worker process of its own, first.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        values, seed_seconds = pool.apply(_seed_fingerprints, (texts,))
    run = run_dedup_timed(texts)
    dedup, det, dups, extra = run_dedup(truth, run)
    extra["numpy"] = run_numpy_only(texts, run)
    lsh_raw, lsh_checked = run_minhash(truth, texts)
    seed = run_seed(truth, values, seed_seconds)
    fingerprinting = run.fingerprinting

    # "MinHash LSH" is the better variant by F1 over 140+ characters, all labelled kinds.
    best_lsh = max((lsh_raw, lsh_checked), key=lambda m: m.default.f1())
    methods = [seed, dedup, lsh_raw, lsh_checked]
    passages = check_passages(det, truth, dups, det.config)
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    _report(say, args, docs, truth, methods, best_lsh, dedup, extra, passages, fingerprinting)
    say()
    say(f"Corpus built in {built:.1f} s.")
    provenance.write(RESULTS / "detection.md", "\n".join(out) + "\n")
    _plot([seed, dedup, lsh_raw, lsh_checked], RESULTS / "detection.png")
    print(f"\nsaved to {RESULTS / 'detection.md'} and {RESULTS / 'detection.png'}")


# --- the report -----------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"  # nan: no labelled pairs


def _report(say, args, docs, truth, methods, best_lsh, dedup, extra, passages, fp_s) -> None:
    seed = methods[0]
    det = detector()
    n = len(docs)
    megabytes = sum(len(d.text.encode()) for d in docs) / 1e6
    say(
        f"Corpus: {n} documents ({megabytes:.1f} MB), seed {args.seed}, {args.per_band} "
        f"originals per band, {len(truth.key)} labelled (original, copy) pairs."
    )
    say()
    say(f"- edit kinds: {', '.join(EDIT_KINDS)};")
    say(f"- partial kinds (originals of 140 characters or more): {', '.join(PARTIAL_KINDS)}.")
    say()
    settings = ", ".join(
        f"{name}={getattr(det, name)}"
        for name in ("k_article", "near", "near_short", "partial", "min_chars")
        if hasattr(det, name)
    )
    say("Methods, in one run:")
    say()
    say(
        f"- **seed method, k={SEED_K}**: no normalisation, jieba extract_tags top {SEED_TOP_N}, "
        f"mmh3, SimHash; a pair is found when the Hamming distance is at most {SEED_K}."
    )
    say(
        f"- **dedup duplicates**: `Detector(Config())` ({settings}; near_short when the "
        f"shorter article has under {SHORT} characters): candidates from the segment index, "
        "verified on shingles."
    )
    say(
        f"- **MinHash LSH**: datasketch MinHashLSH(threshold={LSH_THRESHOLD}, "
        f"num_perm={NUM_PERM}) over character 5-grams (lowercased, whitespace removed), every "
        "document inserted and queried; also with a candidate kept only if MinHash.jaccard >= "
        f"{LSH_THRESHOLD}. The better of the two by F1 over 140+ characters: **{best_lsh.name}**."
    )
    say()
    say(
        "Precision (P) counts every pair a method reports among all pairs of the corpus (right "
        "iff both documents are of one family), by the band of the shorter document; recall "
        "counts the labelled (original, copy) pairs: R edits over the edit kinds, R partial over "
        "the partial kinds, R all over both. F1 uses R all."
    )
    say()
    say("## Precision, recall and F1 per length band")
    say()
    say("| method | band | P | R edits | R partial | R all | F1 | false per 1,000 docs |")
    say("|---|---|---:|---:|---:|---:|---:|---:|")
    for m in methods:
        s = m.default
        for band in (*BANDS, "140+"):
            bands = LONG if band == "140+" else (band,)
            cells = (
                s.precision(bands),
                s.recall(bands, EDIT_KINDS),
                s.recall(bands, PARTIAL_KINDS),
                s.recall(bands),
                s.f1(bands),
            )
            name = f"**{m.name}**" if band == "140+" else m.name
            say(
                f"| {name} | {band} | "
                + " | ".join(_fmt(x) for x in cells)
                + f" | {s.false_per_1000(truth, bands):.1f} |"
            )
    say()
    d, b = dedup.default, best_lsh.default
    say(
        f"Over 140+ characters: dedup P {d.precision():.3f}, R edits "
        f"{d.recall(LONG, EDIT_KINDS):.3f}, R all {d.recall():.3f}, F1 {d.f1():.3f}; "
        f"{best_lsh.name}: F1 {b.f1():.3f}; seed method: F1 {seed.default.f1():.3f}."
    )
    say()
    say("## Recall per edit kind")
    say()
    say("Articles of 140 characters or more (in brackets: under 140 characters):")
    say()
    say("| kind | " + " | ".join(m.name for m in methods) + " |")
    say("|---|" + "---:|" * len(methods))
    for kind in ALL_KINDS:
        cells = []
        for m in methods:
            cell = _fmt(m.default.recall(LONG, (kind,)))
            short = m.default.recall(("<140",), (kind,))
            cells.append(cell if short != short else f"{cell} ({short:.2f})")
        say(f"| {kind} | " + " | ".join(cells) + " |")
    say()
    say("Recall per partial kind and band:")
    say()
    say("| kind | band | " + " | ".join(m.name for m in methods) + " |")
    say("|---|---|" + "---:|" * len(methods))
    for kind in PARTIAL_KINDS:
        for band in LONG:
            cells = " | ".join(_fmt(m.default.recall((band,), (kind,))) for m in methods)
            say(f"| {kind} | {band} | {cells} |")
    say()
    _report_dedup(say, truth, dedup, extra, passages)
    _report_time(say, n, methods, fp_s, extra)
    _report_sweeps(say, methods)


def _report_dedup(say, truth, dedup, extra, passages) -> None:
    kinds = extra["kinds"]
    say("## dedup's verdicts on the labelled pairs")
    say()
    say("Kind dedup gave the labelled pairs it found (near expected for edits, partial for the")
    say("partial kinds), and how right the shared passages of the partial pairs are. A shared")
    say("passage pair (i, j) is right on one side when at least half of that passage's character")
    say("4-grams (normalised, separators dropped) occur in the text the copy is labelled to share")
    say("with its original; 'right' needs both the original's passage i and the copy's passage j.")
    say()
    say("| kind | found | called near | called partial |")
    say("|---|---:|---:|---:|")
    for group, names in (("edit kinds", EDIT_KINDS), *((k, (k,)) for k in PARTIAL_KINDS)):
        called = {"near": 0, "partial": 0}
        for o, c, kind, hit in zip(
            truth.original, truth.copy, truth.pair_kind, dedup.default.found, strict=True
        ):
            if hit and kind in names:
                called[kinds[min(o, c), max(o, c)]] += 1
        total = sum(called.values())
        say(f"| {group} | {total} | {called['near']} | {called['partial']} |")
    say()
    say(
        "| partial kind | pairs found | with shared passages | all passage pairs right "
        "| passage pairs | right (original side) | right (both sides) "
        "| shared text covered |"
    )
    say("|---|---:|---:|---:|---:|---:|---:|---:|")
    total = PassageCheck()
    for kind, check in passages.items():
        total.add(check)
        _passage_row(say, kind, check)
    _passage_row(say, "all", total)
    say()


def _passage_row(say, kind: str, c: PassageCheck) -> None:
    with_p = max(1, c.with_passages)
    pp = max(1, c.passage_pairs)
    say(
        f"| {kind} | {c.pairs} | {c.with_passages} | {c.all_right} ({c.all_right / with_p:.3f}) "
        f"| {c.passage_pairs} | {c.right_original / pp:.3f} | {c.right_both / pp:.3f} "
        f"| {c.coverage / with_p:.3f} |"
    )


def _report_time(
    say, n: int, methods: list[Method], fingerprinting: tuple[float, float], extra: dict
) -> None:
    say("## Time per 1,000 articles")
    say()
    say(f"Seconds per 1,000 documents of this corpus ({n} documents), one process, one method")
    say("at a time (the seed method in a worker process of its own, before the others).")
    say()
    say("| method | features | search | verification | total |")
    say("|---|---:|---:|---:|---:|")
    per = 1000 / n
    for m in methods:
        t = m.timing
        say(
            f"| {m.name} | {t['features'] * per:.3f} | {t['search'] * per:.3f} "
            f"| {t['verification'] * per:.3f} | {sum(t.values()) * per:.3f} |"
        )
    alone = sum(fingerprinting) / 2
    say(
        "| dedup fingerprinting alone (Fingerprinter.fingerprint) "
        f"| {alone * per:.3f} | | | {alone * per:.3f} |"
    )
    dedup = methods[1]
    ratio = sum(dedup.timing.values()) / max(alone, 1e-9)
    say()
    say(
        "Fingerprinting alone (the detector's own Fingerprinter: one engine, one set of "
        "dictionaries and caches, as in the service) is timed twice over all documents, in "
        "slices alternating with dedup's features and then with its verification (so that the "
        "rest of the machine's load weighs on both sides alike; which of the two meets a slice's "
        "new words first alternates too): "
        f"{fingerprinting[0] * per:.3f} and {fingerprinting[1] * per:.3f} s per 1,000, their "
        "mean above. dedup verified "
        f"{extra['candidates']:,} candidate pairs ({extra['candidates'] / n:.1f} per article) "
        f"and found {extra['found']:,} duplicates."
    )
    say()
    say(
        f"**dedup end to end (features, search and verification) costs {ratio:.2f}x "
        "fingerprinting alone.**"
    )
    say()
    numpy_run, same = extra["numpy"]
    t, beside = numpy_run.timing, sum(numpy_run.fingerprinting) / 2
    say(
        "Without its compiled module (dedup.engine._native, built when pip finds a C "
        "compiler), dedup does the same work with numpy: timed the same way in this run, "
        f"features {t['features'] * per:.3f}, search {t['search'] * per:.3f}, verification "
        f"{t['verification'] * per:.3f} s per 1,000, against {beside * per:.3f} for "
        f"fingerprinting alone: **{sum(t.values()) / max(beside, 1e-9):.2f}x**. Its features "
        f"and duplicates are {'the same' if same else 'NOT the same'} as the compiled run's."
    )
    say()


def _report_sweeps(say, methods: list[Method]) -> None:
    say("## Sweeps (articles of 140 characters or more, recall over all labelled kinds)")
    say()
    say("dedup: near threshold t, partial threshold moved with it (the recommended gap between")
    say("them kept) and the short texts' near threshold too (its ratio to near kept); MinHash:")
    say("the LSH threshold t (and the Jaccard filter at t); seed method: distance k.")
    say()
    say("| method | setting | P | R edits | R partial | R all | F1 |")
    say("|---|---|---:|---:|---:|---:|---:|")
    for m in methods:
        for i, (label, s) in enumerate(m.sweep):
            mark = " (default)" if i == m.marker else ""
            say(
                f"| {m.family} | {label}{mark} | {s.precision():.3f} "
                f"| {_fmt(s.recall(LONG, EDIT_KINDS))} | {_fmt(s.recall(LONG, PARTIAL_KINDS))} "
                f"| {s.recall():.3f} | {s.f1():.3f} |"
            )
    say()
    say("Best F1 any setting reaches, per band:")
    say()
    say("| method | " + " | ".join((*BANDS, "140+")) + " |")
    say("|---|" + "---:|" * (len(BANDS) + 1))
    for m in methods:
        cells = []
        for band in (*BANDS, "140+"):
            bands = LONG if band == "140+" else (band,)
            f1, label = max((s.f1(bands), label) for label, s in m.sweep)
            cells.append(f"{f1:.3f} ({label})")
        say(f"| {m.family} | " + " | ".join(cells) + " |")


def _plot(methods: list[Method], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(18, 11))
    styles = ("s--", "o-", "^:", "v-.")
    colours = ("grey", "tab:blue", "tab:orange", "tab:red")
    for ax, band in zip(axes.ravel(), (*BANDS, "140+"), strict=False):
        bands = LONG if band == "140+" else (band,)
        for m, style, colour in zip(methods, styles, colours, strict=True):
            r = [s.recall(bands) for _, s in m.sweep]
            p = [s.precision(bands) for _, s in m.sweep]
            ax.plot(r, p, style, color=colour, label=m.family, markersize=4)
            ax.plot(r[m.marker], p[m.marker], "*", color=colour, markersize=14)
        ax.set(
            title=f"{band} characters: precision vs recall (star: default)",
            xlabel="recall (all labelled kinds)",
            ylabel="precision (all pairs)",
            xlim=(0, 1.02),
            ylim=(0, 1.02),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    ax = axes.ravel()[-1]
    width = 0.8 / len(methods)
    x = np.arange(len(ALL_KINDS))
    for i, (m, colour) in enumerate(zip(methods, colours, strict=True)):
        r = [m.default.recall(LONG, (k,)) for k in ALL_KINDS]
        ax.bar(x + (i - (len(methods) - 1) / 2) * width, r, width, color=colour, label=m.name)
    ax.set_xticks(x, ALL_KINDS, rotation=45, ha="right", fontsize=8)
    ax.set(title="recall per kind at the defaults (140+ chars)", ylabel="recall", ylim=(0, 1.3))
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
