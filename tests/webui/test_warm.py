"""Warming a web process: the match table, tokenizer and detector are loaded before serving."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dedup import selectors, services
from tests.texts import ARTICLE, NEAR
from tests.workers import ROOT, database_url
from webui import review_context, warm


@pytest.mark.django_db
def test_warm_loads_the_match_table_and_the_detector():
    selectors.table_forget()
    review_context.passage_detector.cache_clear()
    services.articles_ingest(rows=[{"text": ARTICLE}, {"text": NEAR}])
    assert warm.warm() > 0
    assert selectors.match_cache().loaded  # the table is cached for the queue
    assert review_context.passage_detector.cache_info().currsize == 1


def test_warm_failing_is_logged_not_raised(monkeypatch, caplog):
    def broken():
        raise RuntimeError("no such table: dedup_match")

    monkeypatch.setattr(selectors, "match_table", broken)
    warm.warm()
    assert "warming up failed" in caplog.text and "no such table" in caplog.text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_gunicorn_warms_each_worker_before_it_serves(tmp_path: Path):
    from django.db import connections

    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connections["default"].settings_dict),
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "-m", "gunicorn", "dedup.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", "1", "--log-level", "info"]
    with log.open("w") as out:  # gunicorn's and Django's log lines go to standard error
        server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=out)  # + gunicorn.conf.py
    try:
        deadline = time.monotonic() + 60
        while "warmed up in" not in (log.read_text() if log.exists() else ""):
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no worker warmed up within 60 s"
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/") as response:
            assert response.status == 200
    finally:
        server.terminate()
        server.wait(10)
    text = log.read_text()
    assert "warming up failed" not in text, text
