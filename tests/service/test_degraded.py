"""Degraded answers, against a real gunicorn whose database or broker is down (a port nothing
listens on): the API answers 503 JSON with Retry-After, pages a readable 503 page, the probes
say what is down, and articles submitted while the broker is down are stored and answered 202.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connections

from dedup.models import ApiToken, Article
from tests import roles
from tests.workers import database_url

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Web:
    """gunicorn serving this checkout on a port of its own."""

    def __init__(self, tmp_path: Path, workers: int = 1, **env):
        self.port = free_port()
        self.log = tmp_path / f"gunicorn-{self.port}.log"
        environment = {**os.environ, "DB_CONN_MAX_AGE": "0", **env}
        command = [
            sys.executable, "-m", "gunicorn", "dedup.wsgi", "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(workers), "--timeout", "60",
        ]  # fmt: skip
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn did not start:\n{self.log.read_text()[-3000:]}")

    def request(self, method: str, path: str, body: bytes | None = None, **headers):
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=body, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def get(self, path: str, **headers):
        return self.request("GET", path, **headers)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture
def web_factory(tmp_path):
    started: list[Web] = []

    def start(workers: int = 1, **env) -> Web:
        started.append(Web(tmp_path, workers, **env))
        return started[-1]

    yield start
    for web in started:
        web.stop()


def test_with_the_database_down_the_api_answers_503_json_and_pages_a_readable_page(web_factory):
    dead = free_port()
    web = web_factory(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{dead}/nothing",
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
    )
    for method, path in [("GET", "/api/articles/1"), ("POST", "/api/articles")]:
        status, headers, body = web.request(
            method, path, b'{"text": "x"}', Authorization="Token abc"
        )
        print(f"\n{method} {path} with the database down: {status} {body[:120]!r}")
        assert status == 503 and headers["Retry-After"] == "30"
        assert headers["Content-Type"] == "application/json"
        assert "database is not answering" in json.loads(body)["error"]

    status, headers, body = web.get("/", Cookie="sessionid=abcdefghijklmnopqrstuvwxyz012345")
    assert status == 503 and headers["Retry-After"] == "30"
    assert b"try again in a minute" in body and b"Traceback" not in body

    status, headers, body = web.get("/readyz")
    checks = json.loads(body)["checks"]
    print(f"readyz: {status} {checks}")
    assert status == 503 and checks["database"] != "ok" and checks["broker"] != "ok"
    assert web.get("/healthz")[0] == 200


@pytest.mark.django_db(transaction=True)
def test_with_the_broker_down_submitted_articles_are_stored_and_answered_202(web_factory):
    user = roles.user_in("editor", "pipeline")
    key = ApiToken.issue(user, name="t")[1]
    web = web_factory(
        DATABASE_URL=database_url(connections["default"].settings_dict),
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
    )
    body = json.dumps([{"title": "一", "text": "今天北京天气很好"}]).encode()
    status, _headers, answer = web.request(
        "POST",
        "/api/articles",
        body,
        Authorization=f"Token {key}",
        **{"Content-Type": "application/json"},
    )
    print(f"\nPOST /api/articles with the broker down: {status} {answer[:120]!r}")
    assert status == 202
    assert Article.objects.filter(status="pending").count() == 1  # beat sends it once back
    status, _headers, answer = web.get("/readyz")
    checks = json.loads(answer)["checks"]
    assert status == 503 and checks["database"] == "ok" and checks["broker"] != "ok"


@pytest.mark.django_db(transaction=True)
def test_a_kept_connection_the_database_dropped_is_opened_again_not_a_503(web_factory):
    """As after a PostgreSQL restart: the web thread's kept connection is gone; the next
    request checks it before use (CONN_HEALTH_CHECKS) and opens a new one."""
    user = roles.user_in("editor", "pipeline")
    key = ApiToken.issue(user, name="t")[1]
    web = web_factory(
        DATABASE_URL=database_url(connections["default"].settings_dict),
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        DB_CONN_MAX_AGE="600",
        GUNICORN_THREADS="1",  # one thread: the second request meets the first's connection
    )
    assert web.get("/api/articles/1", Authorization=f"Token {key}")[0] == 404
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchone()[0] >= 1
    status, _headers, body = web.get("/api/articles/1", Authorization=f"Token {key}")
    assert status == 404, body
