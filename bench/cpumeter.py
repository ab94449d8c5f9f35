"""Where a benchmark's CPU goes: processes grouped by role, their PostgreSQL backends too.

A thread samples, every half second, the CPU time (user + system, from /proc) of each process
of the named process groups (gunicorn's, the workers') and of each PostgreSQL backend of the
database, by the connection's application_name (so a role's SQL is counted with it). A
process first seen at the start counts from that reading, one that appears later counts from
zero (it was born in the window); the last reading of each counts, so a backend that exits
between two readings loses at most half a second of its CPU. Linux only.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """Return a process's group and CPU seconds, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
    return int(fields[2]), (int(fields[11]) + int(fields[12])) / TICK


def _machine_busy() -> float:
    """Return the CPU seconds every process of the machine has used since it started."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICK


def _group_members(groups: dict[int, str]) -> dict[int, str]:
    """Return {pid: role} of every process whose group is one of `groups`."""
    members = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[0] in groups:
            members[int(entry.name)] = groups[stat[0]]
    return members


class CpuMeter:
    """Sample roles' CPU seconds while running; `used()` returns them per role."""

    def __init__(self, groups: dict[int, str], database: str, server_url: str) -> None:
        self.groups, self.database, self.server_url = groups, database, server_url
        self.first: dict[int, tuple[str, float]] = {}
        self.last: dict[int, float] = {}
        self.own_start = self.own = 0.0
        self.machine_start = self.machine = 0.0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _backends(self, connection) -> dict[int, str]:
        rows = connection.execute(
            "SELECT pid, application_name FROM pg_stat_activity WHERE datname = %s",
            [self.database],
        ).fetchall()
        return {pid: f"{name or 'other'} SQL" for pid, name in rows}

    def _sample(self, connection, starting: bool) -> None:
        roles = {**_group_members(self.groups), **self._backends(connection)}
        for pid, role in roles.items():
            if (stat := _stat(pid)) is None:
                continue
            if pid not in self.first:
                self.first[pid] = (role, stat[1] if starting else 0.0)
            self.last[pid] = stat[1]

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(f"{self.server_url}/{self.database}", autocommit=True) as connection:
            self._sample(connection, starting=True)
            self.own_start, self.machine_start = time.process_time(), _machine_busy()
            while not self.stop_event.wait(0.5):
                self._sample(connection, starting=False)
            self._sample(connection, starting=False)
            self.own = time.process_time() - self.own_start
            self.machine = _machine_busy() - self.machine_start

    def start(self) -> CpuMeter:
        self.thread.start()
        return self

    def stop(self) -> dict[str, float]:
        self.stop_event.set()
        self.thread.join()
        return self.used()

    def used(self) -> dict[str, float]:
        """Return CPU seconds per role over the window; "clients" is this process (its
        client threads, the upload's poller and this meter), "others" the rest of the
        machine (other processes; PostgreSQL's own, such as its WAL writer)."""
        totals: dict[str, float] = defaultdict(float)
        for pid, (role, first) in self.first.items():
            totals[role] += max(0.0, self.last[pid] - first)
        totals["clients"] = self.own
        totals["others"] = max(0.0, self.machine - sum(totals.values()))
        return dict(totals)


ROLES = ("web", "web SQL", "clients", "worker", "worker SQL", "others")


def cpu_table(windows: list[tuple[str, dict, dict | None]]) -> list[str]:
    """Return the lines of a table of CPU seconds per role: a row per (name, used, load),
    `used` with its "seconds"; `load`, if any, the CPU over a load with its "requests", of
    which the web tier's CPU per request follows."""
    lines = [
        "CPU seconds used in each round's window (bench/cpumeter.py: each role's processes and "
        "PostgreSQL backends; clients: the bench's process; others: the rest of the machine, "
        f"other work on it included); {os.cpu_count()} cores: a window of 10 s holds "
        f"{10 * os.cpu_count()} CPU seconds. Web per request: over the whole load.\n",
        "| round | seconds | " + " | ".join(ROLES) + " | web per request ms |",
        "|---|---:|" + "---:|" * (len(ROLES) + 1),
    ]
    for name, used, load in windows:
        per_request = ""
        if load and load.get("requests"):
            web = load.get("web", 0.0) + load.get("web SQL", 0.0)
            per_request = f"{web / load['requests'] * 1000:,.1f}"
        cells = " | ".join(f"{used.get(role, 0.0):,.1f}" for role in ROLES)
        lines.append(f"| {name} | {used['seconds']:,.1f} | {cells} | {per_request} |")
    return lines
