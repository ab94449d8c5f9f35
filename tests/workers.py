"""Fixtures for service and browser tests: a real Celery worker on the test database, waiting.

A pytest plugin (tests/conftest.py loads it), so that tests/service and tests/browser share it.

`worker` starts `celery -A dedup.celery worker` in a subprocess (prefork, two processes, the
default queue) pointed at pytest-django's test database and the test broker, which is emptied
first; it is stopped after the test. It needs `transactional_db` (the worker must see what the
test commits), which it requests itself. `worker_factory(pool=..., concurrency=...,
queues=...)` starts more or other workers (queues="celery,webhooks" to send webhooks too;
with `wait=False` it only launches one, so that several start at the same moment;
`wait_ready()` then waits for each); a `Worker` can `stop()`, `kill()` (SIGKILL, like a
machine dying), `children()` and `log()`. `wait_until(predicate, timeout=...)` polls
until the predicate is true and fails with the workers' logs otherwise::

    def test_upload_is_processed(worker, wait_until):
        batch = services.upload_create(file=..., name="a.jsonl")
        wait_until(lambda: UploadBatch.objects.get(pk=batch.pk).state == "done")

Environment for a worker: DEDUP_VISIBILITY_TIMEOUT and DEDUP_RESTORE_EVERY_SECONDS are short
(a task whose worker died is delivered again within seconds); pass `env={...}` for more.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30


def database_url(db: dict) -> str:
    """Return a DATABASE_URL for a Django DATABASES entry (the test database's)."""
    auth = quote(db.get("USER") or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    host = db.get("HOST") or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    if host.startswith("/"):  # a Unix socket's directory (the embedded PostgreSQL)
        return f"postgres://{auth}@/{db['NAME']}?host={quote(host)}"
    return f"postgres://{auth}@{host}{port}/{db['NAME']}"


def broker_flush() -> None:
    """Empty the test broker: no task of an earlier test is left to run (only this checkout's
    keys: another checkout's tests may share the Redis database)."""
    from django.conf import settings

    if getattr(settings, "REDIS_URL", ""):
        import redis

        if not settings.REDIS_PREFIX:
            raise RuntimeError("DEDUP_REDIS_PREFIX is empty: the tests would empty all of Redis")
        client = redis.Redis.from_url(settings.REDIS_URL)
        keys = list(client.scan_iter(match=f"{settings.REDIS_PREFIX}*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        client.close()
    else:
        shutil.rmtree(settings.BROKER_DIR, ignore_errors=True)
        settings.BROKER_DIR.mkdir(parents=True, exist_ok=True)


class Worker:
    """A Celery worker subprocess of this project."""

    def __init__(
        self,
        env: dict,
        log_path: Path,
        pool: str = "prefork",
        concurrency: int = 2,
        queues: str = "celery",
    ):
        self.env, self.log_path, self.pool, self.concurrency = env, log_path, pool, concurrency
        self.queues = queues
        self.process: subprocess.Popen | None = None

    def start(self) -> Worker:
        """Start the worker and wait until it is ready to take tasks."""
        return self.launch().wait_ready()

    def launch(self) -> Worker:
        """Start the worker's process without waiting for it (see wait_ready)."""
        name = f"test-{uuid.uuid4().hex[:8]}@%h"
        command = [
            sys.executable, "-m", "celery", "-A", "dedup.celery", "worker",
            "--pool", self.pool, "--concurrency", str(self.concurrency), "-Q", self.queues,
            "-n", name, "--loglevel", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped together, children too
        )  # fmt: skip
        log.close()
        return self

    def wait_ready(self) -> Worker:
        """Wait until the launched worker is ready to take tasks."""
        deadline = time.monotonic() + START_TIMEOUT
        while " ready." not in self.log():
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited at start:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the worker did not start in time:\n{self.log()[-3000:]}")
            time.sleep(0.1)
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def children(self) -> list[int]:
        """Return the pool's processes (prefork), from /proc."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == self.pid:
                found.append(int(stat.parent.name))
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL the worker's main process, as if its machine died."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 10) -> None:
        """Stop the worker, then anything left of its process group."""
        if self.process is None:
            return
        if self.alive():
            # Cold shutdown: quick, and what a test leaves unfinished is flushed with the broker.
            self.process.send_signal(signal.SIGQUIT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)  # orphaned pool processes of a killed worker
        if self.alive():
            self.process.wait(5)


@pytest.fixture
def worker_factory(transactional_db, settings, tmp_path):
    """Return a function starting workers on the test database; all are stopped after."""
    from django.db import connections

    started: list[Worker] = []
    broker_flush()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connections["default"].settings_dict),
        "DEDUP_VISIBILITY_TIMEOUT": "4",
        "DEDUP_RESTORE_EVERY_SECONDS": "1",
        "DEDUP_SWITCH_GRACE_SECONDS": "1",
        "DB_CONN_MAX_AGE": "0",
        "PYTHONUNBUFFERED": "1",
    }

    def start(
        pool: str = "prefork",
        concurrency: int = 2,
        env_extra: dict | None = None,
        wait: bool = True,
        queues: str = "celery",
    ):
        number = len(started) + 1
        one = Worker(
            {**env, **(env_extra or {})},
            tmp_path / f"worker{number}.log",
            pool,
            concurrency,
            queues,
        )
        started.append(one)
        return one.start() if wait else one.launch()

    start.workers = started
    yield start
    for one in started:
        one.stop()
    broker_flush()


@pytest.fixture
def worker(worker_factory) -> Worker:
    """A started worker (prefork, two processes) on the test database and broker."""
    return worker_factory()


@pytest.fixture
def wait_until(request) -> Callable:
    """Return wait_until(predicate, timeout=30, message=""): poll, fail with worker logs."""

    def wait(predicate: Callable[[], object], timeout: float = 30, message: str = ""):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                logs = ""
                if "worker_factory" in request.fixturenames:
                    for one in request.getfixturevalue("worker_factory").workers:
                        logs += f"\n--- {one.log_path.name}\n{one.log()[-4000:]}"
                pytest.fail(f"timed out after {timeout}s waiting: {message}{logs}")
            time.sleep(0.1)

    return wait


@pytest.fixture
def index_caches_cleared():
    """Start with no cached features or keys: a test database hands out ids again."""
    from dedup import index

    index.caches_clear()
    yield
    index.caches_clear()
