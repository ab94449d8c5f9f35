"""Issue 29's held-out corpora through the CLI and through the service's queue at its defaults.

    python -m bench.heldout [--seed 1] [--corpora manuals stock stories] [--cli-only]

For each corpus of bench/heldout_corpora.py (manuals, stock answers, popular stories): the CLI
(`python -m dedup duplicates FILE`, its clusters made by dedup.engine.graph.story_clusters as
the queue makes them) and the service (a fresh PostgreSQL database, a Celery worker, the corpus
imported with `manage.py import --wait`, then the queue's pairs and clusters at its defaults
read through its own code, as bench/queue.py does). Per corpus: near and partial precision and
recall, cluster purity (of the pairs of articles inside one cluster, the share that are copies
of one story; beside it, the share of clustered articles in their cluster's largest story),
reposts found (popular stories: the first story's 50 reposts paired with its original, and in
its cluster), and shared text mislabelled as template: on the compare page of copies the queue
shows (webui.evidence.boilerplate_of_pair), the folded passages that fewer than three unrelated
stories of the corpus hold (the stories known by construction). Results: bench/results/heldout.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from bench import provenance
from bench.heldout_corpora import HELDOUT, build
from bench.queue_report import Labels
from bench.textpool import normalise

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "heldout.md"
UNRELATED = 3  # stories (other than the pair's) holding a folded passage that make it template
SHINGLE = 16  # normalised characters of a shingle of a folded passage
HELD = 0.5  # share of a passage's shingles a story holds for it to hold the passage
FOLD_SAMPLE = 80  # copies (pairs of one story the queue shows) whose compare page is read


# --- the CLI -----------------------------------------------------------------------------------


def write_jsonl(docs, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for d in docs:
            out.write(json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n")


def cli_run(docs, folder: Path) -> tuple[list, float]:
    """Run `python -m dedup duplicates` on the docs; return (id, id, kind, similarity) and s."""
    path = folder / "cli.jsonl"
    write_jsonl(docs, path)
    start = time.perf_counter()
    command = [sys.executable, "-m", "dedup", "duplicates", "--input", str(path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"dedup duplicates failed ({done.returncode}): {done.stderr[-2000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    pairs = [(r["a"], r["b"], r["kind"], r["similarity"]) for r in rows]
    return pairs, time.perf_counter() - start


def cli_clusters(n: int, pairs: list[tuple[int, int, str, float]]) -> np.ndarray:
    """Return each doc's cluster (its centre) as the queue makes them, -1 when in none: docs
    ranked in file order (the earliest first, as the service's import order)."""
    from dedup.engine.graph import story_clusters

    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    partial = np.array([p[2] == "partial" for p in pairs], bool)
    similarity = np.array([p[3] for p in pairs], np.float32)
    centre = story_clusters(n, a, b, partial, similarity, np.arange(n))
    sizes = np.bincount(centre, minlength=n)
    return np.where(sizes[centre] > 1, centre, -1)


# --- scores ------------------------------------------------------------------------------------


def scores(labels: Labels, pairs: list[tuple[int, int, str]], cluster: np.ndarray) -> dict:
    """Near and partial precision and recall, cluster purity, the popular story's reposts."""
    from bench.corpora import NEAR_KINDS
    from bench.corpus import PARTIAL_KINDS

    family = labels.family
    shown, right = Counter(), Counter()
    for a, b, kind in pairs:
        kind = "near" if kind == "exact" else kind  # an exact copy is the nearest of copies
        shown[kind] += 1
        right[kind] += family[a] == family[b]
    found = {(min(a, b), max(a, b)) for a, b, _ in pairs}
    hits, totals = Counter(), Counter()
    for o, c, kind in labels.pairs:
        group = "near" if kind in NEAR_KINDS else "partial" if kind in PARTIAL_KINDS else kind
        totals[group] += 1
        hits[group] += (min(o, c), max(o, c)) in found
    inside = same = majority = clustered = 0
    for label in np.unique(cluster[cluster >= 0]).tolist():
        members = Counter(family[i] for i in np.flatnonzero(cluster == label).tolist())
        size = sum(members.values())
        inside += size * (size - 1) // 2
        same += sum(k * (k - 1) // 2 for k in members.values())
        majority += max(members.values())
        clustered += size
    out = {
        "P near": (right["near"], shown["near"]),
        "P partial": (right["partial"], shown["partial"]),
        "R near": (hits["near"], totals["near"]),
        "R partial": (hits["partial"], totals["partial"]),
        "purity": (same, inside),
        "majority": (majority, clustered),
        "clusters": len(np.unique(cluster[cluster >= 0])),
    }
    popular = ("stories", "story:0")
    if popular in family:
        original = family.index(popular)
        reposts = [c for o, c, _ in labels.pairs if o == original]
        paired = sum((min(original, c), max(original, c)) in found for c in reposts)
        together = sum(cluster[c] >= 0 and cluster[c] == cluster[original] for c in reposts)
        out["reposts"] = (paired, len(reposts))
        out["reposts in cluster"] = (together, len(reposts))
    return out


def fold_truth(docs, folds: list[tuple[str, str, list[str]]]) -> dict:
    """Return how many folded passages of copies' compare pages are template (held by
    UNRELATED stories or more besides the pair's) and how many are a story's own text."""
    family = {d.id: d.family for d in docs}
    passages = []
    wanted: dict[str, set[int]] = {}
    for x, _, texts in folds:
        for text in texts:
            norm = normalise(text)
            grams = {norm[i : i + SHINGLE] for i in range(max(1, len(norm) - SHINGLE + 1))}
            passages.append((family[x], grams))
            for g in grams:
                wanted.setdefault(g, set()).add(len(passages) - 1)
    holders: dict[int, Counter] = {}
    for d in docs:
        norm = normalise(d.text)
        seen: dict[int, int] = Counter()
        for g in {norm[i : i + SHINGLE] for i in range(len(norm) - SHINGLE + 1)} & wanted.keys():
            for p in wanted[g]:
                seen[p] += 1
        for p, k in seen.items():
            if k >= HELD * len(passages[p][1]) and d.family != passages[p][0]:
                holders.setdefault(p, Counter())[d.family] += 1
    template = sum(len(holders.get(p, ())) >= UNRELATED for p in range(len(passages)))
    pages = sum(bool(texts) for _, _, texts in folds)
    return {"folds": len(passages), "own": len(passages) - template, "pages": (pages, len(folds))}


# --- the service: an extra read beside bench.queue's ------------------------------------------


def service_clusters_and_folds(families: dict[str, str], sample: int, seed: int) -> dict:
    """Return the queue's clusters at its defaults (external id -> cluster) and the folded
    passages of the compare pages of a sample of copies it shows (pairs of one story)."""
    from django.http import QueryDict

    from dedup import selectors
    from dedup.index import detector_for, settings_current
    from dedup.models import Article
    from webui.evidence import boilerplate_of_pair
    from webui.review_params import threshold_parse

    settings = settings_current()
    table = selectors.match_table()
    found = table.clustering(threshold_parse(QueryDict("")).bars)
    external = dict(Article.objects.values_list("id", "external_id"))
    ids = table.article_id
    cluster = {external[int(ids[n])]: int(found.label[n]) for n in np.flatnonzero(found.label >= 0)}
    copies = sorted(
        (external[int(ids[table.a[e]])], external[int(ids[table.b[e]])], int(ids[table.a[e]]),
         int(ids[table.b[e]]))
        for e in np.flatnonzero(found.shown).tolist()
        if families[external[int(ids[table.a[e]])]] == families[external[int(ids[table.b[e]])]]
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    picked = [copies[i] for i in sorted(rng.permutation(len(copies))[:sample].tolist())]
    detector = detector_for(settings)
    bodies = dict(Article.objects.filter(id__in=[x for p in picked for x in p[2:]])
                  .values_list("id", "body"))  # fmt: skip
    folds = []
    for x, y, left, right in picked:
        aside_left, aside_right = boilerplate_of_pair(left, right, settings.active_version)
        texts = []
        for article, aside in ((left, aside_left), (right, aside_right)):
            passages = detector.passages(bodies[article])
            texts += [passages[p] for p in aside if p < len(passages)]
        folds.append((x, y, texts))
    return {"cluster": cluster, "folds": folds}


# --- the report --------------------------------------------------------------------------------


def _f(pair: tuple[int, int] | None) -> str:
    if not pair:
        return "-"
    k, n = pair
    return f"{k / n:.3f} ({k:,} of {n:,})" if n else "- (0)"


def _row(name: str, path: str, docs: int, s: dict, folds: dict | None) -> str:
    cells = [_f(s[k]) for k in ("P near", "R near", "P partial", "R partial", "purity")]
    cells += [_f(s["majority"]), f"{s['clusters']:,}"]
    reposts = s.get("reposts")
    cells.append(f"{reposts[0]} of {reposts[1]}" if reposts else "-")
    together = s.get("reposts in cluster")
    cells.append(f"{together[0]} of {together[1]}" if together else "-")
    if folds:
        pages, sampled = folds["pages"]
        cells.append(f"{folds['own']} of {folds['folds']} ({pages} of {sampled} pages fold)")
    else:
        cells.append("- (no compare page)")
    return f"| {name} | {path} | {docs:,} | " + " | ".join(cells) + " |"


TABLE = [
    "| corpus | path | docs | P near | R near | P partial | R partial | cluster purity (pairs) "
    "| in majority story (articles) | clusters | reposts paired with the original "
    "| reposts in its cluster | folded as template but a story's own (of folds) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]


def parse(argv: list[str] | None) -> argparse.Namespace:
    from bench import queue as service

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", type=int, default=None, help="docs per corpus (its default)")
    parser.add_argument("--corpora", nargs="+", default=list(HELDOUT), choices=HELDOUT)
    parser.add_argument("--cli-only", action="store_true", help="leave the service out")
    parser.add_argument("--fold-sample", type=int, default=FOLD_SAMPLE)
    parser.add_argument("--database", default="dedup_bench_heldout")
    parser.add_argument("--postgres", default=service.POSTGRES)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/10")
    parser.add_argument("--timeout", type=float, default=service.TIMEOUT)
    parser.add_argument("--api-sample", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the databases made")
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from bench import queue as service

    args = parse(argv)
    command = " ".join(["python -m bench.heldout", *(argv if argv is not None else sys.argv[1:])])
    started = time.perf_counter()
    corpora = {n: build(n, seed=args.seed, size=args.size) for n in args.corpora}
    built = time.perf_counter() - started
    lines = ["# Issue 29's held-out corpora through the CLI and the service's queue", ""]
    lines += [
        f"Corpora: bench.heldout_corpora.build(name, seed={args.seed}, size={args.size}): "
        + ", ".join(
            f"{n} {len(d):,} docs ({len({x.family for x in d}):,} stories)"
            for n, d in corpora.items()
        )
        + f"; built in {built:.0f} s.",
        "",
        *TABLE,
    ]
    timings = []
    with tempfile.TemporaryDirectory(prefix="bench-heldout-") as tmp:
        folder = Path(tmp)
        (folder / "var" / "static").mkdir(parents=True)
        for name, docs in corpora.items():
            labels = Labels.of({name: docs})
            index = {d.id: i for i, d in enumerate(docs)}
            found, seconds = cli_run(docs, folder)
            pairs = [(index[a], index[b], kind, sim) for a, b, kind, sim in found]
            cluster = cli_clusters(len(docs), pairs)
            s = scores(labels, [p[:3] for p in pairs], cluster)
            lines.append(_row(name, "CLI", len(docs), s, None))
            timings.append(f"{name}: CLI {seconds:.0f} s")
            print(lines[-1], flush=True)
            if args.cli_only:
                continue
            families = {d.id: d.family for d in docs}
            extra = (service_clusters_and_folds, families, args.fold_sample, args.seed)
            start = time.perf_counter()
            read = service.stage(args, args.postgres, f"{args.database}_{name}", {name: docs},
                                 folder, extra)  # fmt: skip
            by_article = {a: index[ext] for a, _, ext in read["articles"]}
            queue = [(by_article[a], by_article[b], kind) for a, b, kind in read["queue"]]
            cluster = np.full(len(docs), -1, np.int64)
            for ext, label in read["cluster"].items():
                cluster[index[ext]] = label
            s = scores(labels, queue, cluster)
            lines.append(_row(name, "service queue", len(docs), s, fold_truth(docs, read["folds"])))
            timings.append(f"{name}: service {time.perf_counter() - start:.0f} s")
            print(lines[-1], flush=True)
    lines += [
        "",
        *NOTES,
        "",
        f"Run time {time.perf_counter() - started:.0f} s ({'; '.join(timings)}).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    provenance.write(args.out, text, command)
    print(f"written to {args.out}")
    return 0


NOTES = [
    "P: share of the pairs shown (exact and near together; partial) whose two docs are copies "
    "of one story (one family). R: share of the labelled (original, copy) pairs shown as a "
    "pair, near kinds and partial kinds (embedded, excerpt). Cluster purity: of all pairs of "
    "articles inside one cluster, the share that are of one story; in majority story: the "
    "share of clustered articles in their cluster's largest story. The CLI's clusters are "
    "dedup.engine.graph.story_clusters over its pairs, ranked in file order (what the queue "
    "does with the service's matches); the service's are the queue's own at its defaults "
    "(MatchTable.clustering). Reposts: the popular story's 50 labelled reposts paired with its "
    "original, and in the original's cluster. Folded as template: the compare pages "
    "(webui.evidence.boilerplate_of_pair) of a sample of copies the queue shows; a folded "
    f"passage is a story's own text when fewer than {UNRELATED} stories besides the pair's hold "
    f"it ({int(HELD * 100)}% of its {SHINGLE}-character shingles); the CLI has no compare page.",
]


if __name__ == "__main__":
    sys.exit(main())
