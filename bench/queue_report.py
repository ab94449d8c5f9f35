"""Scores and tables of bench/queue.py: the queue's and the engine's pairs against the labels,
and the header that says what made them.

A pair is right when its two docs are of one family (a corpus's family; docs of two corpora
never are). Recall counts the labelled (original, copy) pairs of bench.corpora.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

from bench.corpora import LEAK as SHARED  # normalised characters two families never share
from dedup.engine.graph import components

ROOT = Path(__file__).resolve().parents[1]
VERBATIM = 32  # normalised characters of the shortest stretch counted as held verbatim
PACKAGES = ("django", "celery", "kombu", "redis", "psycopg", "numpy", "jieba", "rjieba")

# --- scores ----------------------------------------------------------------------------------


@dataclass
class Labels:
    """Every doc of the run's corpora, by (corpus, doc id), with the labelled pairs."""

    corpus: list[str] = field(default_factory=list)
    family: list[tuple[str, str]] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    index: dict[tuple[str, str], int] = field(default_factory=dict)
    pairs: list[tuple[int, int, str]] = field(default_factory=list)  # (original, copy, kind)
    text: list[str] = field(default_factory=list)
    _shared: dict[tuple[int, int], bool] = field(default_factory=dict, repr=False)

    def shares(self, a: int, b: int) -> bool:
        """Return whether docs a and b hold the same text (shares_text), worked out once."""
        key = (min(a, b), max(a, b))
        if key not in self._shared:
            self._shared[key] = shares_text(self.text[a], self.text[b])
        return self._shared[key]

    @classmethod
    def of(cls, corpora: dict) -> Labels:
        from bench.corpora import NEGATIVE_KINDS

        labels = cls()
        for name, docs in corpora.items():
            originals = {}
            for d in docs:
                i = len(labels.kind)
                labels.index[name, d.id] = i
                labels.corpus.append(name)
                labels.family.append((name, d.family))
                labels.kind.append(d.kind)
                labels.text.append(d.text)
                if d.kind == "original":
                    originals[d.family] = i
            for d in docs:
                copy = d.kind != "original" and d.kind not in NEGATIVE_KINDS
                if copy and d.family in originals:
                    o = originals[d.family]
                    labels.pairs.append((o, labels.index[name, d.id], d.kind))
        return labels


def doc_pairs(labels: Labels, read: dict, which: str) -> list[tuple[int, int, str]]:
    """Return the pairs the queue or the engine gave, as (doc, doc, kind) indexes of labels."""
    doc_of = {a: labels.index[source, ext] for a, source, ext in read["articles"]}
    return [(doc_of[a], doc_of[b], kind) for a, b, kind in read[which]]


def score(labels: Labels, pairs: list, scope: set[str], same_text: bool = False) -> dict:
    """Return the figures of the pairs whose two docs are of corpora in scope; with
    `same_text`, a pair across two corpora whose docs hold the same text counts as right."""
    from bench.corpora import NEAR_KINDS, NEGATIVE_KINDS
    from bench.corpus import PARTIAL_KINDS

    inside = [p for p in pairs if {labels.corpus[p[0]], labels.corpus[p[1]]} <= scope]
    shown, right = Counter(), Counter()
    seen = set()
    for a, b, kind in inside:
        shown[kind] += 1
        right[kind] += labels.family[a] == labels.family[b] or (
            same_text and labels.corpus[a] != labels.corpus[b] and labels.shares(a, b)
        )
        seen |= {a, b}
    keys = {(min(a, b), max(a, b)) for a, b, _ in inside}
    ends = np.array([(a, b) for a, b, _ in inside], dtype=np.int64).reshape(-1, 2)
    # Connected components of the pairs: an upper bound of the queue's clusters, which are one
    # story each (docs/design.md, "Clusters"), so this overstates "R in one cluster".
    component = components(len(labels.kind), ends[:, 0], ends[:, 1])
    hits, totals, clustered = Counter(), Counter(), 0
    for o, c, kind in labels.pairs:
        if labels.corpus[o] in scope:
            totals[kind] += 1
            hits[kind] += (min(o, c), max(o, c)) in keys
            clustered += component[o] == component[c]
    docs = [i for i, name in enumerate(labels.corpus) if name in scope]
    negatives = [i for i in docs if labels.kind[i] in NEGATIVE_KINDS]

    def recall(kinds) -> tuple[int, int]:
        return sum(hits[k] for k in kinds), sum(totals[k] for k in kinds)

    return {
        "docs": len(docs),
        "pairs": len(inside),
        "false": len(inside) - sum(right.values()),
        "shown": shown,
        "right": right,
        "hits": hits,
        "totals": totals,
        "near": recall(NEAR_KINDS),
        "partial": recall(PARTIAL_KINDS),
        "embedded_excerpt": recall(("embedded", "excerpt")),
        "clustered": (clustered, sum(totals.values())),
        "negatives": (sum(i in seen for i in negatives), len(negatives)),
    }


def _p(right: int, n: int) -> str:
    return f"{right / n:.3f} ({n:,})" if n else "- (0)"


def _r(found: tuple[int, int]) -> str:
    return f"{found[0] / found[1]:.3f} ({found[1]:,})" if found[1] else "-"


TABLE = [
    "| corpus | pairs of | docs | pairs | pairs per doc | P exact | P near | P partial "
    "| R near | R partial | R embedded+excerpt | R in one cluster | false per 1,000 docs "
    "| hard negatives in a pair |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]


def rows(name: str, labels: Labels, read: dict, scope: set[str], same_text=False) -> list[str]:
    """Return the table rows of the queue and of the engine alone over one scope."""
    out = []
    for which, shown_by in (("queue", "queue"), ("engine", "engine alone")):
        f = score(labels, doc_pairs(labels, read, which), scope, same_text)
        docs = max(f["docs"], 1)
        precision = [_p(f["right"][k], f["shown"][k]) for k in ("exact", "near", "partial")]
        recalls = [_r(f[k]) for k in ("near", "partial", "embedded_excerpt", "clustered")]
        paired, negatives = f["negatives"]
        out.append(
            f"| {name} | {shown_by} | {f['docs']:,} | {f['pairs']:,} | {f['pairs'] / docs:.2f} | "
            + " | ".join(precision + recalls)
            + f" | {1000 * f['false'] / docs:.1f} | {paired:,} of {negatives:,} |"
        )
    return out


def shares_text(a: str, b: str) -> bool:
    """Return whether two texts hold SHARED normalised characters of one another verbatim, in
    stretches of VERBATIM or more (the measure of bench.corpora's label check)."""
    from bench.textpool import normalise

    na, nb = sorted((normalise(a), normalise(b)), key=len)  # the shorter one's characters
    theirs = {nb[i : i + VERBATIM] for i in range(len(nb) - VERBATIM + 1)}
    covered = bytearray(len(na))
    for i in range(len(na) - VERBATIM + 1):
        if na[i : i + VERBATIM] in theirs:
            covered[i : i + VERBATIM] = b"\x01" * VERBATIM
    return sum(covered) >= SHARED


def across(labels: Labels, read: dict) -> list[str]:
    """Return a table of the pairs between two corpora of one database, counted false, and
    how many of them hold the same text all the same."""
    out = [
        "| corpora | pairs of | pairs | exact | near | partial "
        f"| sharing {SHARED} characters verbatim |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for which, shown_by in (("queue", "queue"), ("engine", "engine alone")):
        by: dict[tuple, Counter] = {}
        for a, b, kind in doc_pairs(labels, read, which):
            x, y = sorted((labels.corpus[a], labels.corpus[b]))
            if x != y:
                counts = by.setdefault((x, y), Counter())
                counts[kind] += 1
                counts["shared"] += labels.shares(a, b)
        for (x, y), c in sorted(by.items(), key=lambda item: -item[1].total()):
            pairs = c["exact"] + c["near"] + c["partial"]
            out.append(
                f"| {x} and {y} | {shown_by} | {pairs:,} | {c['exact']:,} | {c['near']:,} "
                f"| {c['partial']:,} | {c['shared']:,} |"
            )
        if not by:
            out.append(f"| none | {shown_by} | 0 | 0 | 0 | 0 | 0 |")
    return out


def kind_recall(corpora: dict, labels: Labels, stages: dict) -> list[str]:
    """Return a table of recall per copy kind, queue / engine alone, per corpus."""
    names = [n for n in corpora if n in stages]
    kinds = sorted({k for _, _, k in labels.pairs})
    out = [
        "| kind | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    figures = {}
    for n in names:
        for which in ("queue", "engine"):
            figures[n, which] = score(labels, doc_pairs(labels, stages[n], which), {n})
    for kind in kinds:
        cells = []
        for n in names:
            q, e = figures[n, "queue"], figures[n, "engine"]
            total = q["totals"][kind]
            cells.append(
                f"{q['hits'][kind] / total:.2f} / {e['hits'][kind] / total:.2f} ({total})"
                if total
                else ""
            )
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    return out


def checks(stages: dict) -> list[str]:
    """Return a table of what each database went through: ingestion, statuses, agreement."""
    out = [
        "| database | articles | statuses | ingestion (upload created to done) | articles/s "
        "| `manage.py import` wall | engine alone (one process) | queue page | API agrees |",
        "|---|---:|---|---|---:|---:|---:|---|---:|",
    ]
    for name, read in stages.items():
        n = len(read["articles"])
        spans = [u["seconds"] or 0.0 for u in read["uploads"]]
        statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(read["statuses"].items()))
        per_upload = " + ".join(f"{s:.1f}" for s in spans)
        rate = n / sum(spans) if sum(spans) else 0.0
        wall = sum(read["imports"].values())
        engine = f"{read['engine_seconds']:.1f} s ({n / read['engine_seconds']:,.0f}/s)"
        agree = f"{read['api_checked'] - len(read['api_disagree'])} of {read['api_checked']}"
        out.append(
            f"| {name} | {n:,} | {statuses} | {per_upload} s | {rate:,.0f} | {wall:.1f} s "
            f"| {engine} | HTTP {read['page_status']} | {agree} |"
        )
    return out


def report(corpora: dict, stages: dict) -> list[str]:
    """Return the results as markdown: the tables and how to read them."""
    labels = Labels.of(corpora)
    out = [
        "Pairs of: **queue**, the matches the review queue shows at its defaults (no bar moved, "
        "status waiting: every match, none decided yet), read through "
        "`webui.queue_page.queue_context` and the clustering it shows; **engine alone**, "
        "`duplicates`' path on the same stored texts in the same order (exact copies by content "
        "hash, then `Detector.duplicates` of `detector_for(settings_current())`, boilerplate "
        "learned from the whole collection at once).",
        "",
        "P per kind the service gave the pair: share of pairs whose two docs are of one family "
        "(pairs shown). R: share of the labelled (original, copy) pairs shown as a pair, over the "
        "near kinds, the partial kinds (embedded, excerpt, concatenated) and embedded+excerpt (how "
        "many labelled pairs); R in one cluster: original and copy in one cluster of the queue "
        "(what a reviewer reaches). Hard negatives (template siblings, shared boilerplate, "
        "templated reports) in a pair: how many of them are in any pair shown.",
    ]
    per_corpus = [n for n in corpora if n in stages]
    if per_corpus:
        out += [
            "",
            "## One database per corpus",
            "",
            "Boilerplate learned from that corpus alone.",
            "",
        ]
        out += TABLE
        for n in per_corpus:
            out += rows(n, labels, stages[n], {n})
        out += ["", "Recall per copy kind, queue / engine alone (labelled pairs):", ""]
        out += kind_recall(corpora, labels, stages)
    if "all" in stages:
        out += [
            "",
            "## All corpora in one database",
            "",
            "The corpora imported one file after another into one database (a user's mixed "
            "collection): boilerplate is learned from all of them. A corpus's row counts the "
            "pairs whose two docs are of that corpus; **all** counts every pair, a pair across "
            "corpora as false; **all, same text right** counts a pair across corpora whose docs "
            "hold the same text (see below) as right. The corpora are imported in the order "
            "listed: the service judges boilerplate by the articles stored when it processes "
            "one and keeps the matches it made, so the first corpus's rows are those of its own "
            "database; the engine alone learns from the whole collection.",
            "",
        ]
        out += TABLE
        for n in corpora:
            out += rows(n, labels, stages["all"], {n})
        out += rows("**all**", labels, stages["all"], set(corpora))
        out += rows("**all**, same text right", labels, stages["all"], set(corpora), True)
        out += [
            "",
            "Pairs across corpora, counted false above. The corpora are built independently "
            "from one pool of texts (bench/textpool.py), so two of them can hold the same text: "
            f"the last column counts the pairs whose two docs share {SHARED} normalised "
            f"characters or more verbatim (in stretches of {VERBATIM} or more), the measure by "
            "which bench.corpora checks that two families of one corpus share no text.",
            "",
            *across(labels, stages["all"]),
        ]
    out += [
        "",
        "## Checks",
        "",
        "Ingestion: from the upload's creation to its last article processed by the worker "
        "(prefork, concurrency 2); the wall time of `manage.py import --wait` adds its start. "
        "API agrees: `GET /api/articles/<id>/matches` (Django's test client, a staff user) "
        "names the same partners and kinds as the queue's pairs for that many sampled articles "
        "(half in a pair shown, half any).",
        "",
    ]
    out += checks(stages)
    return out


# --- the header ------------------------------------------------------------------------------


def _run(*command: str) -> str:
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def header(args, command: str, sizes: dict, settings: dict, seconds: float) -> list[str]:
    """Return the lines saying which servers, corpora and settings made this (the commit,
    machine and versions are in the provenance header)."""
    import psycopg
    import redis

    with psycopg.connect(f"{args.postgres}/postgres") as conn:
        postgres = conn.execute("SHOW server_version").fetchone()[0]
    redis_server = redis.Redis.from_url(args.redis).info("server")["redis_version"]
    versions = []
    for package in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    return [
        f"- run time: {seconds / 60:.1f} min in all (`{command}`)",
        f"- servers: PostgreSQL {postgres}, Redis {redis_server}; they, the worker and this "
        f"process share {os.cpu_count()} CPUs; also {', '.join(versions)}",
        f"- corpora: bench.corpora.build(name, seed={args.seed}, split={args.split!r}, "
        f"size={args.size}{' (their own sizes)' if args.size is None else ''}): "
        + ", ".join(f"{n} {k:,} docs" for n, k in sizes.items()),
        "- service settings (the defaults of a fresh database): "
        + ", ".join(f"{k} {v}" for k, v in settings.items()),
    ]
