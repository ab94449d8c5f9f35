"""Verdicts per corpus and per kind on held-out data: calibrate on one split, report another.

For every corpus of bench.corpora (Chinese news and reposts, English technical prose, Debian
descriptions and changelogs, mailing-list threads with quotes and footers, Chinese reference
pages with English names and shared sections, templated reports) this builds the "tune" split
(seeds 1 and 4: two draws of edits of the same source texts) and the "test" split (seed 5:
other source texts, other edits). The thresholds (partial share, least shared characters, the
short texts' near bar) are chosen on tune, by the issue's bars met, then how far the others are
missed, then the worst F1; the figures are reported on test at the engine's shipped defaults
(Detector()), with the tune choice beside them. MinHash LSH runs like for like: datasketch
over the same normalised shingles dedup verifies on, threshold 0.5, candidates kept when
their estimated Jaccard reaches it.

    ./dev bench trusted            # or: python -m bench.trusted [--size N]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from bench import provenance
from bench.corpora import CORPORA, NEGATIVE_KINDS, build
from bench.corpus import BANDS, PARTIAL_KINDS
from dedup.engine import frames
from dedup.engine import verify as engine_verify
from dedup.engine.fingerprint import Fingerprinter
from dedup.engine.verify import Boilerplate, Detector, passage_owners_of

RESULTS = Path(__file__).parent / "results"
# Each from the strictest down: the ranking's sort is stable, so of settings that score the
# same on tune (and none of them the shipped defaults) the strictest is chosen (fewer false
# pairs on what was not seen).
GRID = {
    "partial": (0.5, 0.45, 0.4, 0.35, 0.3),
    "min_chars": (200, 150, 100, 60),
    "near_short": (0.3, 0.25, 0.2),
}
LSH_THRESHOLD = 0.5
NUM_PERM = 128


class Split:
    """One corpus split, its features and candidates (thresholds change only the verdicts)."""

    def __init__(self, name: str, split: str, seed: int, size: int | None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.docs = build(name, seed=seed, split=split, **({"size": size} if size else {}))
        self.name = name
        detector = Detector()
        start = time.perf_counter()
        self.features = [detector.features(d.text) for d in self.docs]
        self.features_seconds = time.perf_counter() - start
        start = time.perf_counter()
        self.candidates = detector.candidates(self.features)
        self.owners = passage_owners_of(self.features)
        self.candidates_seconds = time.perf_counter() - start
        self.family = np.array([hash(d.family) for d in self.docs])
        index = {d.id: i for i, d in enumerate(self.docs)}
        # Labelled (original, copy) pairs: every copy kind, by its original.
        self.labelled = [
            (min(index[f"{d.family}/orig"], i), max(index[f"{d.family}/orig"], i), d.kind, d.band)
            for i, d in enumerate(self.docs)
            if d.kind not in (*NEGATIVE_KINDS, "original") and f"{d.family}/orig" in index
        ]

    def verdicts(self, detector: Detector) -> tuple[list, float]:
        start = time.perf_counter()
        found = detector.verify(self.features, self.candidates, Boilerplate(self.owners))
        return found, time.perf_counter() - start


def group(kind: str) -> str:
    return "partial" if kind in PARTIAL_KINDS else "near"


def score(split: Split, pairs: list[tuple[int, int, str]]) -> dict:
    """Precision per reported kind, recall per copy group and kind and band, false per 1,000."""
    reported: Counter = Counter()
    right: Counter = Counter()
    found = set()
    for a, b, kind in pairs:
        reported[kind] += 1
        right[kind] += bool(split.family[a] == split.family[b])
        found.add((min(a, b), max(a, b)))
    totals: Counter = Counter()
    hits: Counter = Counter()
    for a, b, kind, band in split.labelled:
        hit = (a, b) in found
        for key in (group(kind), kind, (group(kind), band)):
            totals[key] += 1
            hits[key] += hit
    out = {"docs": len(split.docs), "reported": sum(reported.values())}
    for kind in ("near", "partial"):
        out[f"P {kind}"] = right[kind] / reported[kind] if reported[kind] else float("nan")
        out[f"false {kind}"] = reported[kind] - right[kind]
    for key in totals:
        out[("R", key)] = hits[key] / totals[key]
        out[("n", key)] = totals[key]
    wrong = sum(reported.values()) - sum(right.values())
    out["false per 1000"] = 1000 * wrong / max(1, len(split.docs))
    return out


def f1(p: float, r: float) -> float:
    if p != p:  # nothing reported
        p = 1.0
    if r != r:
        return float("nan")
    return 2 * p * r / (p + r) if p + r else 0.0


# The bars for every corpus: near precision and recall, partial precision, and the
# recall of the embedded and excerpt copies.
BARS = (("P near", 0.98), (("R", "near"), 0.95), ("P partial", 0.95), ("R copies", 0.9))


def bar_values(s: dict) -> list[tuple[float, float]]:
    """Return (value, bar) of each of BARS for one corpus's scores (NaN: nothing to score)."""
    found = []
    for key, bar in BARS:
        if key == "R copies":
            hits = sum(s.get(("R", k), 0) * s.get(("n", k), 0) for k in ("embedded", "excerpt"))
            total = sum(s.get(("n", k), 0) for k in ("embedded", "excerpt"))
            value = hits / total if total else float("nan")
        else:
            value = s.get(key, float("nan"))
        found.append((value, bar))
    return found


def bars_met(s: dict) -> int:
    """Return how many of BARS one corpus's scores meet (a bar with nothing to score is met)."""
    return sum(value != value or value >= bar for value, bar in bar_values(s))


def shortfall(s: dict) -> float:
    """Return how far one corpus's scores fall short of the BARS they miss, summed."""
    return sum(max(0.0, bar - value) for value, bar in bar_values(s) if value == value)


def objective(scores: list[dict]) -> tuple[int, float, float, float]:
    """The bars met over all corpora, then how far the others fall short of theirs (summed,
    less is better: a setting that misses a recall bar by far is worse than one that misses
    it by a hair, though both miss it), then the worst corpus's F1 (near and partial alike),
    then the mean; to three places (closer is noise: the grid's order, strictest first,
    decides)."""
    values = []
    for s in scores:
        for kind in ("near", "partial"):
            value = f1(s[f"P {kind}"], s.get(("R", kind), float("nan")))
            if value == value:
                values.append(value)
    short = -round(sum(map(shortfall, scores)), 3)
    return (
        sum(map(bars_met, scores)),
        short,
        round(min(values), 3),
        round(float(np.mean(values)), 3),
    )


def minhash_pairs(split: Split) -> list[tuple[int, int, str]]:
    """MinHash LSH over dedup's own shingles (the same normalised text), checked."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    hashes = []
    for i, f in enumerate(split.features):
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([int(s).to_bytes(4, "little") for s in f.shingles])
        hashes.append(m)
        lsh.insert(i, m)
    pairs = []
    for i, m in enumerate(hashes):
        for j in lsh.query(m):
            if j > i and m.jaccard(hashes[j]) >= LSH_THRESHOLD:
                pairs.append((i, j, "near"))
    return pairs


def fingerprint_seconds(split: Split) -> float:
    fingerprinter = Fingerprinter()
    start = time.perf_counter()
    for d in split.docs:
        fingerprinter.fingerprint(d.text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=None, help="documents per corpus split")
    parser.add_argument("--corpora", nargs="*", default=list(CORPORA))
    parser.add_argument(
        "--report-seed",
        type=int,
        default=5,
        help="seed of the test split reported (seeds 2 and 3 were looked at while choosing)",
    )
    parser.add_argument(
        "--tune-seeds",
        type=int,
        nargs="+",
        default=[1, 4],
        help="seeds of the tune split the thresholds are chosen on (one draw let one corpus's "
        "quirks choose)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "trusted.md",
        help="where the table goes (another draw beside the report: trusted-seed6.md)",
    )
    args = parser.parse_args()
    command = "python -m bench.trusted" + (f" --size {args.size}" if args.size else "")
    if args.report_seed != parser.get_default("report_seed"):
        command += f" --report-seed {args.report_seed}"
    if args.tune_seeds != parser.get_default("tune_seeds"):
        command += " --tune-seeds " + " ".join(map(str, args.tune_seeds))
    out: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.append(line)

    started = time.perf_counter()
    tune = [
        Split(name, "tune", seed, args.size) for seed in args.tune_seeds for name in args.corpora
    ]
    test = [Split(name, "test", args.report_seed, args.size) for name in args.corpora]

    # Calibration on tune: every setting of the grid, the worst corpus's F1 first.
    settings = [
        dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())
    ]
    ranked = []
    for setting in settings:
        detector = Detector(**setting)
        scores = []
        for split in tune:
            found, _ = split.verdicts(detector)
            scores.append(score(split, [(d.a, d.b, d.kind) for d in found]))
        ranked.append((objective(scores), setting))
    shipped = Detector()
    defaults = {name: getattr(shipped, name) for name in GRID}
    # Of settings that score the same, the shipped defaults (an equal score is no reason to
    # change what users have), else the strictest (the grid's order).
    ranked.sort(key=lambda x: (x[0], x[1] == defaults), reverse=True)
    chosen = ranked[0][1]

    say("# Verdicts on held-out corpora, per corpus and per kind")
    say()
    say(
        f"- boilerplate: a passage held by at least {engine_verify.BOILERPLATE_OWNERS} articles "
        f"and {engine_verify.BOILERPLATE_RATIO}x as many as hold the article's own text"
    )
    say(
        f"- a site's frame (dedup/engine/frames.py): the passages ending both articles, held by "
        f"at least {frames.FRAME_OWNERS} articles, no evidence of a partial copy"
    )
    say(
        f"- a long excerpt: {engine_verify.EXCERPT_CHARS}x min_chars copied whole is partial at "
        f"{engine_verify.EXCERPT_SHARE}x the partial share"
    )
    say()
    seeds = " and ".join(map(str, args.tune_seeds))
    say(f"## Calibration (tune split, seed{'s' if len(args.tune_seeds) > 1 else ''} {seeds})")
    say()
    say(
        f"Best settings by the issue's bars met over the {len(tune)} corpus draws (of "
        f"{len(BARS) * len(tune)}: near P >= 0.98 and R >= 0.95, partial P >= 0.95, embedded "
        "and excerpt R >= 0.9), then how far the bars missed are missed (summed), then the "
        "worst corpus's F1 (near and partial), then the mean:"
    )
    say()
    say("| partial | min_chars | near_short | bars met | short of bars | worst F1 | mean F1 |")
    say("|---:|---:|---:|---:|---:|---:|---:|")
    for (met, short, worst, mean), setting in ranked[:6]:
        say(
            f"| {setting['partial']} | {setting['min_chars']} | {setting['near_short']} "
            f"| {met} | {-short:.3f} | {worst:.3f} | {mean:.3f} |"
        )
    say()
    say(f"Chosen on tune: {chosen}; shipped defaults: {defaults}.")
    say()

    say(f"## Held-out figures (test split, seed {args.report_seed}) at the shipped defaults")
    say()
    say(
        "| corpus | docs | method | P near | R near | P partial | R partial | R embedded "
        "| R excerpt | false near | false partial | false per 1,000 docs |"
    )
    say("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    timing = []
    bands = []
    for split in test:
        found, verify_s = split.verdicts(shipped)
        mine = score(split, [(d.a, d.b, d.kind) for d in found])
        lsh = score(split, minhash_pairs(split))
        for method, s in (("dedup", mine), ("MinHash LSH 0.5", lsh)):
            say(
                f"| {split.name} | {s['docs']} | {method} | {_f(s['P near'])} "
                f"| {_f(s.get(('R', 'near')))} | {_f(s['P partial'])} "
                f"| {_f(s.get(('R', 'partial')))} | {_f(s.get(('R', 'embedded')))} "
                f"| {_f(s.get(('R', 'excerpt')))} | {s['false near']} | {s['false partial']} "
                f"| {s['false per 1000']:.1f} |"
            )
        bands.append((split.name, mine))
        fp = fingerprint_seconds(split)
        per = len(split.candidates) / max(len(split.docs), 1)
        timing.append(
            (split.name, fp, split.features_seconds, split.candidates_seconds, verify_s, per)
        )
    say()
    say("LSH pairs are all reported as near (MinHash has no partial verdict).")
    say()
    seed = args.report_seed
    say(f"### Recall per kind of copy and per length band (dedup, test split, seed {seed})")
    say()
    say("| corpus | kind | band | labelled | R |")
    say("|---|---|---|---:|---:|")
    for name, s in bands:
        kinds = sorted(k[1] for k in s if isinstance(k, tuple) and isinstance(k[1], str))
        for kind in dict.fromkeys(kinds):
            if kind in ("near", "partial"):
                continue
            say(f"| {name} | {kind} | all | {s[('n', kind)]} | {_f(s[('R', kind)])} |")
        for g in ("near", "partial"):
            for band in BANDS:
                if ("n", (g, band)) in s:
                    say(
                        f"| {name} | {g} | {band} | {s[('n', (g, band))]} "
                        f"| {_f(s[('R', (g, band))])} |"
                    )
    say()
    say("### Cost: verification against fingerprinting alone (test split, one core)")
    say()
    say(
        "| corpus | candidates per article | fingerprint alone s | fingerprint + features s "
        "| candidates s | verify s | ratio |"
    )
    say("|---|---:|---:|---:|---:|---:|---:|")
    for name, fp, feats, cands, ver, per in timing:
        say(
            f"| {name} | {per:.1f} | {fp:.2f} | {feats:.2f} | {cands:.2f} | {ver:.2f} "
            f"| {(feats + cands + ver) / fp:.2f}x |"
        )
    say()
    say(f"Run time {time.perf_counter() - started:.0f} s.")
    if args.out != parser.get_default("out"):
        command += f" --out {args.out}"
    provenance.write(args.out, "\n".join(out) + "\n", command)
    print(f"\nsaved to {args.out}")


def _f(x) -> str:
    return "-" if x is None or x != x else f"{x:.3f}"


if __name__ == "__main__":
    main()
