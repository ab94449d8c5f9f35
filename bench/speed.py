"""Fingerprinting speed and memory, side by side in one run.

    ./dev bench speed            (or: python -m bench.speed [--docs N] [--memory N])

Every method fingerprints the same 1,000-character People's Daily articles, in rounds that
take turns so that a noisy neighbour slows them all alike; the best round counts. One process,
so documents per second are per core. Then memory: the fast backend fingerprints a stream of
100,000 distinct articles while the resident set size is read every 10,000.
"""

from __future__ import annotations

import argparse
import random
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


def main() -> None:
    """Run the race and the memory profile; print both tables and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000, help="articles per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=100_000, help="articles in the memory run")
    args = parser.parse_args()

    docs = news_articles(1000, args.docs, seed=1998)
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    chars = sum(map(len, docs)) / len(docs)
    top_n = Config().top_n
    cold, best = race(methods(top_n), docs, args.rounds)
    reference = next(t for name, t in best.items() if name.startswith("literal"))
    lines = [
        f"Fingerprinting {len(docs)} People's Daily articles of {chars:.0f} characters "
        f"({megabytes:.2f} MB UTF-8), one core, {args.rounds} rounds: the first (cold: every "
        "word met for the first time) and the best of all (warm):",
        "",
        "| method | cold docs/s | warm docs/s | warm MB/s per core | vs literal reference |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, seconds in best.items():
        lines.append(
            f"| {name} | {len(docs) / cold[name]:,.0f} | {len(docs) / seconds:,.0f} "
            f"| {megabytes / seconds:.2f} | {reference / seconds:.1f}x |"
        )
    print("\n".join(lines), flush=True)

    samples = memory_profile(args.memory, max(args.memory // 10, 1))
    first = samples[1][1] if len(samples) > 1 else samples[0][1]
    memory = [
        "",
        f"Memory while fingerprinting {args.memory:,} distinct 1,000-character articles "
        "(rjieba backend):",
        "",
        "| articles | RSS MiB | change since the first sample |",
        "|---:|---:|---:|",
    ]
    memory += [f"| {n:,} | {mib:.1f} | {mib - first:+.1f} |" for n, mib in samples]
    print("\n".join(memory))
    provenance.write(RESULTS, "\n".join(lines + memory) + "\n")
    print(f"\nsaved to {RESULTS}")


if __name__ == "__main__":
    main()
