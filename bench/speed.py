"""The engine's speed against a reference commit's, side by side in one run.

    ./dev bench speed    (or: python -m bench.speed [--reference COMMIT] [--docs N] [--rounds N]
                          [--contenders] [--memory N])

This tree's engine and a reference commit's (a git worktree of it under /tmp, its compiled
module built there) each run in a process of their own (bench/speed_worker.py) and take turns,
task by task and round by round, so that a noisy neighbour slows both alike. Each reports its
CPU seconds (process time, not wall time: the machine is shared), so rates are MB of UTF-8 per
CPU-second of one core: fingerprint and features of 1,000-character People's Daily articles,
the fingerprint alone, and verification (candidates, boilerplate, verdicts) of the news corpus
of bench.corpora, whose cost is also given against fingerprinting that corpus alone. The first
round is cold (every word met for the first time), the best of the rest warm. Both engines
must give the same outputs (a digest of them is compared).

--contenders also races the fingerprint against the literal method and PyPI simhash in this
process; --memory N fingerprints a stream of N distinct articles while the resident set size
is read.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jieba
import jieba.analyse
import mmh3
from simhash import Simhash

from bench import provenance
from bench.corpus import load_peoples_daily, news_articles
from dedup.engine import Config, Fingerprinter

RESULTS = Path(__file__).parent / "results" / "speed.md"
ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "speed_worker.py"
# The reference: main before issue 30's engine work.
REFERENCE = "69c4bf6"
TASKS = ("features", "fingerprint", "verify", "fingerprint_verify")


def literal_reference(top_n: int) -> Callable[[str], int]:
    """Return the method as literally described: jieba's extract_tags, mmh3, a vote per bit."""

    def fingerprint(text: str) -> int:
        votes = [0.0] * 64
        for word, weight in jieba.analyse.extract_tags(text, topK=top_n, withWeight=True):
            hashed = mmh3.hash64(word, signed=False)[0]
            for bit in range(64):
                votes[bit] += weight if hashed >> bit & 1 else -weight
        return sum(1 << bit for bit in range(64) if votes[bit] > 0)

    return fingerprint


def methods(top_n: int) -> dict[str, Callable[[str], object]]:
    """Return the contenders, each a text -> fingerprint function, ready to run."""
    fast = Fingerprinter(Config(tokenizer="rjieba"))
    reference_backend = Fingerprinter(Config(tokenizer="jieba"))
    jieba.setLogLevel(60)
    jieba.initialize()
    return {
        "dedup, rjieba backend": fast.fingerprint,
        "dedup, jieba backend": reference_backend.fingerprint,
        f"literal reference (extract_tags top {top_n} + mmh3)": literal_reference(top_n),
        "PyPI simhash 2.1.2, Simhash(text)": lambda text: Simhash(text).value,
    }


def race(
    contenders: dict[str, Callable], docs: list[str], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Return each contender's first (cold) and best (warm) time over `rounds` turns taken in
    rotation; the first round meets every word for the first time, the later ones hit caches."""
    for run in contenders.values():  # load dictionaries, outside every round
        run(docs[0])
    first: dict[str, float] = {}
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            for text in docs:
                run(text)
            seconds = time.perf_counter() - start
            first.setdefault(name, seconds)
            best[name] = min(best[name], seconds)
    return first, best


def rss_mib() -> float:
    """Return this process's resident set size in MiB."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4096 / 2**20


def stream_articles(count: int, length: int, seed: int) -> Iterator[str]:
    """Yield `count` distinct ~`length`-character articles made of shuffled real paragraphs."""
    paragraphs = [p for article in load_peoples_daily() for p in article.split("\n") if p]
    rng = random.Random(seed)
    for number in range(count):
        parts, size = [], 0
        while size < length:
            paragraph = rng.choice(paragraphs)
            parts.append(paragraph)
            size += len(paragraph)
        yield f"{number} " + "\n".join(parts)[:length]


def memory_profile(count: int, step: int) -> list[tuple[int, float]]:
    """Fingerprint a stream of distinct articles; return (articles done, RSS MiB) samples."""
    fingerprinter = Fingerprinter()
    samples = [(0, rss_mib())]
    for done, text in enumerate(stream_articles(count, 1000, seed=7), start=1):
        fingerprinter.fingerprint(text)
        if done % step == 0:
            samples.append((done, rss_mib()))
    return samples


def reference_tree(commit: str) -> Path:
    """Return a worktree of `commit` under /tmp with its compiled module built in place."""
    full = subprocess.run(
        ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    tree = Path(tempfile.gettempdir()) / f"dedup-speed-ref-{full[:12]}"
    if not (tree / "dedup").is_dir():
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--force", str(tree), full],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
    build = (
        "from setuptools import Distribution, Extension\n"
        "ext = Extension('dedup.engine._native', ['dedup/engine/_native.c'],"
        " extra_compile_args=['-O3'])\n"
        "dist = Distribution({'ext_modules': [ext]})\n"
        "cmd = dist.get_command_obj('build_ext'); cmd.inplace = True\n"
        "dist.run_command('build_ext')\n"
    )
    subprocess.run([sys.executable, "-c", build], cwd=tree, check=True, capture_output=True)
    return tree


class Worker:
    """One engine in a process of its own (bench/speed_worker.py), answering tasks."""

    def __init__(self, name: str, tree: Path, docs: Path, corpus: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(tree)}
        env.pop("DEDUP_NO_NATIVE", None)
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(docs), str(corpus)],
            cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.info = json.loads(self.process.stdout.readline())
        if not self.info["engine"].startswith(str(tree)):
            raise RuntimeError(f"{name}: imported {self.info['engine']}, not {tree}'s engine")

    def run(self, task: str) -> dict:
        """Run one task; return its CPU seconds and the digest of its outputs."""
        self.process.stdin.write(task + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def side_by_side(workers: list[Worker], rounds: int) -> dict[tuple[str, str], list[float]]:
    """Return each (engine, task)'s CPU seconds per round, the engines taking turns (which
    goes first alternates), after checking that they agree on every task's outputs."""
    seconds: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for task in TASKS:
            digests = {}
            for worker in workers if r % 2 == 0 else workers[::-1]:
                answer = worker.run(task)
                seconds.setdefault((worker.name, task), []).append(answer["cpu"])
                digests[worker.name] = answer["digest"]
            if len(set(digests.values())) > 1:
                raise RuntimeError(f"the engines' outputs differ on {task}: {digests}")
    return seconds


def table(seconds, names: list[str], megabytes: dict[str, float]) -> list[str]:
    """Return the rows: MB per CPU-second, cold and warm, per engine, and this tree's ratio."""
    labels = {
        "features": "fingerprint + features",
        "fingerprint": "fingerprint alone",
        "verify": "verification (candidates, boilerplate, verdicts)",
        "fingerprint_verify": "fingerprint alone, of the verification corpus",
    }
    lines = [
        "| task | " + " | ".join(f"{n} cold | {n} warm" for n in names) + " | warm ratio |",
        "|---|" + "---:|---:|" * len(names) + "---:|",
    ]
    for task in TASKS:
        mb = megabytes[task]
        cells, warm = [], []
        for name in names:
            times = seconds[(name, task)]
            best = min(times[1:] or times)
            warm.append(mb / best)
            cells += [f"{mb / times[0]:.2f}", f"{mb / best:.2f}"]
        lines.append(f"| {labels[task]} | " + " | ".join(cells) + f" | {warm[0] / warm[1]:.2f}x |")
    return lines


def verification_cost(seconds, names: list[str]) -> list[str]:
    """Return, per engine, verification's CPU seconds against fingerprinting the corpus alone."""
    lines = []
    for name in names:
        verify = min(seconds[(name, "verify")][1:] or seconds[(name, "verify")])
        alone = seconds[(name, "fingerprint_verify")]
        alone = min(alone[1:] or alone)
        lines.append(
            f"- {name}: verification {verify:.3f} CPU-s against {alone:.3f} for fingerprinting "
            f"alone: **{verify / alone:.2f}x**"
        )
    return lines


def contenders(docs: list[str], rounds: int) -> list[str]:
    """Return the old race: this tree's fingerprint against the literal method and simhash."""
    cold, best = race(methods(Config().top_n), docs, rounds)
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    reference = next(t for name, t in best.items() if name.startswith("literal"))
    lines = [
        "",
        "The fingerprint alone against other methods (wall time, this process, best round):",
        "",
        "| method | cold docs/s | warm docs/s | warm MB/s per core | vs literal reference |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, seconds in best.items():
        lines.append(
            f"| {name} | {len(docs) / cold[name]:,.0f} | {len(docs) / seconds:,.0f} "
            f"| {megabytes / seconds:.2f} | {reference / seconds:.1f}x |"
        )
    return lines


def memory(count: int) -> list[str]:
    """Return the resident set size while fingerprinting `count` distinct articles."""
    samples = memory_profile(count, max(count // 10, 1))
    first = samples[1][1] if len(samples) > 1 else samples[0][1]
    lines = [
        "",
        f"Memory while fingerprinting {count:,} distinct 1,000-character articles "
        "(rjieba backend):",
        "",
        "| articles | RSS MiB | change since the first sample |",
        "|---:|---:|---:|",
    ]
    return lines + [f"| {n:,} | {mib:.1f} | {mib - first:+.1f} |" for n, mib in samples]


def main() -> None:
    """Time this tree's engine against the reference's; print the tables and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=REFERENCE, help="commit to compare with")
    parser.add_argument("--docs", type=int, default=1000, help="articles per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, the first cold")
    parser.add_argument("--contenders", action="store_true", help="race other methods too")
    parser.add_argument("--memory", type=int, default=0, help="articles in a memory run")
    args = parser.parse_args()

    from bench.corpora import build

    docs = news_articles(1000, args.docs, seed=1998)
    corpus = [doc.text for doc in build("news", seed=1, split="test", size=1000)]
    mb_docs = sum(len(d.encode()) for d in docs) / 1e6
    mb_corpus = sum(len(d.encode()) for d in corpus) / 1e6
    megabytes = {"features": mb_docs, "fingerprint": mb_docs}
    megabytes |= {"verify": mb_corpus, "fingerprint_verify": mb_corpus}
    ref = reference_tree(args.reference)
    ref_commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ref, capture_output=True, text=True
    ).stdout.strip()
    names = ["this tree", f"reference {ref_commit}"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "docs.json", Path(tmp) / "corpus.json"]
        for path, texts in zip(paths, (docs, corpus), strict=True):
            path.write_text(json.dumps(texts), encoding="utf-8")
        workers = [Worker(names[0], ROOT, *paths), Worker(names[1], ref, *paths)]
        try:
            seconds = side_by_side(workers, args.rounds)
        finally:
            for worker in workers:
                worker.close()
    chars = sum(map(len, docs)) / len(docs)
    lines = [
        f"This tree's engine against {ref_commit}'s, side by side in one run, each in a process "
        f"of its own taking turns: MB of UTF-8 per CPU-second (process time) of one core, the "
        f"first round (cold) and the best of the other {args.rounds - 1} (warm). Fingerprint "
        f"and features: {len(docs)} People's Daily articles of {chars:.0f} characters "
        f"({mb_docs:.2f} MB); verification: bench.corpora's news corpus, test split, seed 1 "
        f"({len(corpus)} docs, {mb_corpus:.2f} MB). Both engines gave the same outputs "
        "(fingerprints, features, pairs) in every round.",
        "",
        *table(seconds, names, megabytes),
        "",
        "Verification against fingerprinting alone (the same corpus, warm):",
        "",
        *verification_cost(seconds, names),
    ]
    print("\n".join(lines), flush=True)
    extra = (contenders(docs, 3) if args.contenders else []) + (
        memory(args.memory) if args.memory else []
    )
    print("\n".join(extra))
    lines += extra
    provenance.write(RESULTS, "\n".join(lines) + "\n")
    print(f"\nsaved to {RESULTS}")


if __name__ == "__main__":
    main()
