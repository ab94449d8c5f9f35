"""bench/load.py's results: ingestion per round, each loaded round's share of the alone
rounds either side, each endpoint's latencies per round, the CPU each role used."""

from __future__ import annotations

import runpy
from pathlib import Path

from bench import provenance
from bench.cpumeter import cpu_table
from bench.load_clients import ENDPOINTS, percentile
from bench.pipeline import ROOT

RESULTS = Path(__file__).parent / "results" / "load.md"
PAGES = ("queue", "compare")
BARS = {"queue": 1.0, "compare": 1.0, "api/check": 0.3, "api/articles": 1.0}  # p99, seconds
SHARE_BAR = 0.8


def served() -> str:
    """Return how gunicorn.conf.py (as this environment sets it) runs the web tier."""
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    return f"gunicorn.conf.py: {conf['workers']} workers x {conf['threads']} threads"


def shares(rounds: list) -> dict[int, tuple[float, float]]:
    """Return {loaded round's number: (the mean rate of the alone rounds either side of it,
    its rate as a share of that)}."""
    found = {}
    for place, run in enumerate(rounds):
        if run.think is None:
            continue
        alone = [r.rate for r in (rounds[place - 1], rounds[place + 1]) if r.think is None]
        mean = sum(alone) / len(alone)
        found[run.number] = (mean, run.rate / mean if mean else 0.0)
    return found


def ingestion_lines(args, rounds: list) -> list[str]:
    found = shares(rounds)
    lines = [
        "| round | ingestion | articles in the window | window s | articles/s "
        "| alone either side, mean | share |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for run in rounds:
        mean, share = found.get(run.number, (None, None))
        lines.append(
            f"| {run.number} | {run.name} | {run.articles:,} of {args.upload:,} | "
            f"{run.seconds:,.1f} | {run.rate:,.1f} | "
            + (f"{mean:,.1f} | {share:.0%} |" if share is not None else " | |")
        )
    values = [share for _, share in found.values()]
    alone = [r.rate for r in rounds if r.think is None]
    loaded = [r.rate for r in rounds if r.think is not None]
    overall = (sum(loaded) / len(loaded)) / (sum(alone) / len(alone))
    lines += [
        "",
        f"**Ingestion under the load: {sum(values) / len(values):.0%} of its rate alone** (the "
        "mean of the loaded rounds' shares, "
        + ", ".join(f"{v:.0%}" for v in values)
        + f"; from {min(values):.0%} to {max(values):.0%}). The mean loaded rate over the mean "
        f"of every alone round: {overall:.0%}. Alone: "
        + ", ".join(f"{r:,.1f}" for r in alone)
        + " articles/s.",
        "",
    ]
    return lines


def latency_lines(args, rounds: list) -> list[str]:
    lines = [
        "| round | think s | endpoint | requests | per second | p50 ms | p99 ms | errors |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for run in rounds:
        if run.clients is None:
            continue
        for endpoint in ENDPOINTS:
            times = run.clients.latencies[endpoint]
            lines.append(
                f"| {run.number} | {run.think:g} | {endpoint} | {len(times):,} | "
                f"{len(times) / run.load_cpu['seconds']:,.1f} | "
                f"{percentile(times, 0.5) * 1000:,.0f} | "
                f"{percentile(times, 0.99) * 1000:,.0f} | {len(run.clients.errors[endpoint])} |"
            )
    return [*lines, ""]


def verdict(rounds: list) -> str:
    """Return whether issue 16's bar held in every loaded round and on the mean share."""
    loaded = [run for run in rounds if run.clients is not None]
    errors = sum(len(e) for run in loaded for e in run.clients.errors.values())
    slow = [
        f"round {run.number} {endpoint} p99 {percentile(times, 0.99) * 1000:,.0f} ms"
        for run in loaded
        for endpoint, times in run.clients.latencies.items()
        if percentile(times, 0.99) >= BARS[endpoint]
    ]
    values = [share for _, share in shares(rounds).values()]
    share = sum(values) / len(values)
    held = not errors and not slow and share >= SHARE_BAR
    return (
        f"Issue 16's bar (0 errors; p99 under 1 s for the pages, under 300 ms for `api/check`, "
        f"in every loaded round; ingestion at >= {SHARE_BAR:.0%} of its rate alone): "
        f"**{'met' if held else 'not met'}** ({errors} errors; "
        + (", ".join(slow) if slow else "every p99 under its bar")
        + f"; share {share:.0%}, rounds from {min(values):.0%} to {max(values):.0%})."
    )


def report(args, rounds: list) -> None:
    lines = [
        "# The web tier under load during an upload (bench/load.py)\n",
        f"{args.clients} clients against gunicorn ({served()}) and one Celery worker (2 "
        f"processes), after a corpus of {args.corpus:,} articles; the clients run on the same "
        "cores. Rounds alternate, each the upload of the same file of "
        f"{args.upload:,} articles: ingestion alone, then loaded and alone again, "
        f"{args.rounds} loaded round(s) per think time. A round's window runs from the upload "
        f"to its end or to {args.seconds:.0f} s, whichever comes first; the rest of the upload "
        "is processed after it, uncounted, then the upload is deleted and the database "
        "vacuumed: every round does the same work on the same index. In a loaded round the "
        "clients ask the "
        "queue, a compare page, `POST /api/check` and `GET /api/articles/<id>` in turn for "
        f"{args.seconds:.0f} s, waiting a random time (exponential, mean `think`) after each "
        "answer: 1 s is 20 editors working without pause; 0 is back to back, the web tier "
        "saturated. A loaded round's rate is a share of the mean of the alone rounds either "
        "side of it.\n",
        verdict(rounds) + "\n",
        *ingestion_lines(args, rounds),
        *latency_lines(args, rounds),
    ]
    windows = [(f"{run.number}: {run.name}", run.cpu, run.load_cpu or None) for run in rounds]
    lines += cpu_table(windows)
    for run in rounds:
        if run.clients is not None:
            errors = [e for endpoint in ENDPOINTS for e in run.clients.errors[endpoint][:3]]
            if errors:
                lines += ["", f"First errors (round {run.number}): " + "; ".join(errors)]
    text = "\n".join(lines) + "\n"
    provenance.write(RESULTS, text)
    print(text)
