"""A build's real peak memory against the plan's model and the budget it was planned under.

Each build runs in a child process (multiprocessing, spawn): the child makes its inputs,
resets its peak resident size to the present one (/proc/self/clear_refs), builds, and reports
VmHWM (the peak) and VmRSS (before) from /proc/self/status. The peak above the inputs must be
within the budget and within 15% of `Plan.cost(n).memory_bytes`.
"""

import ctypes
import multiprocessing
import sys
from pathlib import Path

import pytest

from dedup.engine.plan import Plan, plan_for

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/clear_refs").exists(),
    reason="reads the peak from Linux's /proc",
)

N = 2_000_000


def _status(field: str) -> int:
    """Return a /proc/self/status field in bytes (it is given in kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def _build(widths: tuple[int, ...], k_max: int, n: int, results) -> None:
    import numpy as np

    from dedup.engine.memindex import MemIndex

    plan = Plan(widths, k_max)
    values = np.random.default_rng(1).integers(0, 2**64, n, dtype=np.uint64)
    ids = np.arange(n, dtype=np.int64)
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed memory back to the system first
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status("VmRSS")
    index = MemIndex.build(plan, ids, values)
    peak = _status("VmHWM")
    query = int(values[12345]) ^ 0b101
    results.put((before, peak, index.query(query, 3)))


def build_peak(plan: Plan, n: int) -> tuple[int, list]:
    """Return the peak bytes above the inputs of building `plan` over n uniform fingerprints
    in a fresh process, and one query's answer."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_build, args=(plan.widths, plan.k_max, n, results))
    child.start()
    before, peak, hits = results.get(timeout=300)
    child.join(timeout=60)
    assert child.exitcode == 0
    return peak - before, hits


def check_peak(plan: Plan, budget: int) -> None:
    model = plan.cost(N).memory_bytes
    assert model <= budget
    used, hits = build_peak(plan, N)
    print(f"{plan.version}: peak {used / 2**20:,.1f} MiB, modelled {model / 2**20:,.1f}")
    assert hits == [(12345, 2)]
    assert used <= budget, f"{plan.version}: peak {used:,} over the budget {budget:,}"
    assert abs(used - model) <= 0.15 * model, (
        f"{plan.version}: peak {used / 2**20:,.0f} MiB, modelled {model / 2**20:,.0f} MiB"
    )


def test_the_planners_choice_under_a_budget_builds_within_it():
    budget = 110 * 2**20
    choice = plan_for(N, 3, memory_bytes=budget)
    assert choice.plan == Plan.even(4, 3)  # 10 tables would need about 160 MiB
    check_peak(choice.plan, budget)


def test_ten_tables_build_within_their_modelled_peak():
    plan = Plan.even(5, 3)
    check_peak(plan, plan.cost(N).memory_bytes)
