"""bench/load.py's clients and the service they ask: an editor's credentials, gunicorn on a
free port, N threads asking the endpoints in turn and the latencies they saw."""

from __future__ import annotations

import http.client
import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict

from bench.pipeline import ROOT, WORK_DIR

ENDPOINTS = ("queue", "compare", "api/check", "api/articles")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def credentials() -> tuple[str, str]:
    """An editor's session cookie (for the pages) and API token."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore

    from dedup.models import ApiToken

    user = User.objects.create_user("load-editor", password="a long enough password")
    user.groups.add(Group.objects.get(name="editor"))
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key, ApiToken.issue(user, name="load")[1]


class Clients:
    """N threads asking the endpoints in turn; latencies per endpoint."""

    def __init__(self, port: int, cookie: str, token: str, pairs, texts, ids) -> None:
        self.port, self.cookie, self.token = port, cookie, token
        self.pairs, self.texts, self.ids = pairs, texts, ids
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.lock = threading.Lock()

    def request(self, rng: random.Random, endpoint: str) -> tuple[str, str, bytes | None, dict]:
        session = {"Cookie": f"sessionid={self.cookie}"}
        api = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        if endpoint == "queue":
            return "GET", "/", None, session
        if endpoint == "compare":
            a, b = rng.choice(self.pairs)
            return "GET", f"/compare/{a}/{b}/", None, session
        if endpoint == "api/check":
            body = json.dumps({"text": rng.choice(self.texts)}).encode()
            return "POST", "/api/check", body, api
        return "GET", f"/api/articles/{rng.choice(self.ids)}", None, api

    def run(self, number: int, until: float, think: float = 0.0) -> None:
        """Ask the endpoints in turn until `until`, waiting a random time of mean `think`
        seconds (exponential) after each answer: an editor reading, not a loop."""
        rng = random.Random(number)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        turn = number
        while time.monotonic() < until:
            endpoint = ENDPOINTS[turn % len(ENDPOINTS)]
            turn += 1
            method, path, body, headers = self.request(rng, endpoint)
            start = time.monotonic()
            connection, problem = self.ask(connection, method, path, body, headers)
            with self.lock:
                self.latencies[endpoint].append(time.monotonic() - start)
                if problem:
                    self.errors[endpoint].append(problem)
            if think:
                time.sleep(min(rng.expovariate(1 / think), max(0.0, until - time.monotonic())))
        connection.close()

    def warm(self) -> None:
        """Ask each endpoint a few times (each gunicorn worker's caches), then forget it."""
        for number in range(3 * len(ENDPOINTS)):
            self.run(number, time.monotonic() + 0.5)
        self.latencies.clear()
        self.errors.clear()

    def threads(self, count: int, until: float, think: float) -> list[threading.Thread]:
        """Return `count` started threads, each a client asking until `until`."""
        threads = [
            threading.Thread(target=self.run, args=(number, until, think))
            for number in range(count)
        ]
        for thread in threads:
            thread.start()
        return threads

    def ask(self, connection, method, path, body, headers) -> tuple[object, str]:
        """Send one request; return the connection to use next and the problem, if any. A
        kept-alive connection the server closed while the client was thinking (gunicorn's
        `keepalive`) is opened again and the request sent once more, as browsers do."""
        for again in (True, False):
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                return connection, "" if response.status < 400 else f"{response.status} {path}"
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                problem = f"{type(error).__name__}: {error}"
            except (OSError, http.client.HTTPException) as error:
                problem, again = f"{type(error).__name__}: {error}", False
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            if not again:
                break
        return connection, problem


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def named(env: dict, role: str) -> dict:
    """Return `env` whose database connections carry `role` as their application_name (the
    CPU meter counts each PostgreSQL backend with the role it serves)."""
    return {**env, "DATABASE_URL": f"{env['DATABASE_URL']}?application_name={role}"}


def gunicorn(env: dict, port: int) -> subprocess.Popen:
    log = (WORK_DIR / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "dedup.wsgi", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=named(env, "web"), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError((WORK_DIR / "gunicorn.log").read_text()[-3000:])
        time.sleep(0.5)
