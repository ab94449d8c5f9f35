"""Security in depth: sign-in limits, password rules, production settings, the content
security policy, request sizes, and the API's and probes' answers when a part is down."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.test import Client

from dedup.models import ApiToken, Article, UploadBatch
from tests import roles

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-enough-passphrase-7"


@pytest.fixture
def editor() -> User:
    user = User.objects.create_user("mei.lin", password=PASSWORD, is_staff=True)
    user.groups.add(roles.group("editor"))
    return user


def sign_in(address: str, username: str, password: str, url: str = "/accounts/login/"):
    client = Client(REMOTE_ADDR=address, headers={"accept-language": "en"})
    return client.post(url, {"username": username, "password": password})


def test_sign_in_is_refused_after_ten_failures_even_with_the_right_password(editor, settings):
    for _ in range(settings.DEDUP_SIGNIN_FAILURES):
        response = sign_in("10.0.0.1", "mei.lin", "wrong")
        assert response.status_code == 200
        assert "do not match" in response.content.decode()
    response = sign_in("10.0.0.1", "mei.lin", PASSWORD)
    assert response.status_code == 200  # the form again, not a redirect: not signed in
    html = response.content.decode()
    assert "Too many failed sign-ins for this user name or from this address" in html
    assert "try again in 15 minutes" in html


def test_the_limit_holds_per_user_name_from_any_address(editor):
    for i in range(10):
        sign_in(f"10.0.0.{1 + i % 3}", "mei.lin", "wrong")
    assert "Too many failed" in sign_in("10.0.0.3", "mei.lin", PASSWORD).content.decode()


def test_the_limit_holds_per_address_for_any_user_name(editor):
    for i in range(10):
        sign_in("10.0.0.2", ["nobody", "other"][i % 2], "wrong")
    assert "Too many failed" in sign_in("10.0.0.2", "mei.lin", PASSWORD).content.decode()
    response = sign_in("10.0.0.1", "mei.lin", PASSWORD)  # another address, the same user
    assert response.status_code == 302


def test_a_few_failures_then_the_right_password_signs_in(editor):
    for _ in range(3):
        sign_in("10.0.0.1", "mei.lin", "wrong")
    assert sign_in("10.0.0.1", "mei.lin", PASSWORD).status_code == 302


def test_the_admin_sign_in_is_limited_too(editor):
    for _ in range(10):
        sign_in("10.0.0.1", "mei.lin", "wrong", url="/admin/login/")
    response = sign_in("10.0.0.1", "mei.lin", PASSWORD, url="/admin/login/")
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()


@pytest.mark.parametrize("password", ["1", "password", "12345678901", "mei.lin2024"])
def test_weak_passwords_are_refused(password):
    with pytest.raises(ValidationError):
        validate_password(password, User(username="mei.lin"))


def test_a_long_passphrase_is_accepted():
    validate_password(PASSWORD, User(username="mei.lin"))


# --- Production settings ------------------------------------------------------------------------


def documented_environment() -> dict:
    """Return the environment .env.example documents, with a real secret and our database."""
    kept = ("PATH", "HOME", "DATABASE_URL", "REDIS_URL")  # nothing of the test run's own
    env = {k: os.environ[k] for k in kept if k in os.environ}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        if (found := re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)) is not None:
            env[found[1]] = found[2]
    env.pop("DEBUG", None)
    env["SECRET_KEY"] = "x8Jd2-kq9LmZ" * 5  # long and varied, as the comment asks
    env["ALLOWED_HOSTS"] = "dedup.example.com"
    env["DEDUP_VAR_DIR"] = os.environ["DEDUP_VAR_DIR"]
    return env


def test_check_deploy_with_the_documented_production_environment_is_clean():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=documented_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(result.stdout, result.stderr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stderr + result.stdout


def test_production_settings_are_hardened():
    code = (
        "from django.conf import settings as s;"
        "print(s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE,"
        " s.SESSION_COOKIE_HTTPONLY, s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER)"
    )
    env = {**documented_environment(), "DEDUP_BEHIND_PROXY": "1"}
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "dedup.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == [
        "31536000", "True", "True", "True", "True", "('HTTP_X_FORWARDED_PROTO',", "'https')"
    ]  # fmt: skip


# --- Content security policy: every page's scripts are files of our own -----------------------


def test_pages_carry_a_content_security_policy_without_inline_scripts(editor):
    client = Client()
    client.force_login(editor)
    for url in ["/accounts/login/", "/", "/upload/", "/admin/"]:
        response = client.get(url, follow=True)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, url
        html = response.content.decode()
        inline = [s for s in re.findall(r"<script\b[^>]*>", html) if "src=" not in s]
        assert all('type="application/json"' in s for s in inline), (url, inline)
        assert not re.search(r"\son[a-z]+=", html), url


def test_templates_hold_no_inline_script_or_event_handler():
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or "application/json" in tag, (path, tag)
        assert not re.search(r"\son[a-z]+=", text), path
        assert "javascript:" not in text, path


# --- Request bodies refused by size before they are read ---------------------------------------


def test_an_upload_body_over_the_limit_is_refused_before_it_is_read(editor, monkeypatch, settings):
    from django.http import multipartparser

    def never(*args, **kwargs):
        raise AssertionError("the body was read")

    monkeypatch.setattr(multipartparser.MultiPartParser, "parse", never)
    settings.DEDUP_MAX_UPLOAD_BYTES = 2**20
    client = Client(headers={"accept-language": "en"})
    client.force_login(editor)
    file = SimpleUploadedFile("a.jsonl", b'{"text": "x"}\n')
    response = client.post("/upload/", {"files": [file]}, CONTENT_LENGTH=str(2**30))
    assert response.status_code == 413
    assert "over the limit of 1.0 MB per file" in response.content.decode()
    response = client.post(
        "/upload/", {"files": [file]}, CONTENT_LENGTH=str(2**30), HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 413 and "1,024.0 MB" in response.json()["errors"][0]
    key = ApiToken.issue(editor, name="t")[1]
    response = Client().post(
        "/api/uploads",
        {"file": file},
        CONTENT_LENGTH=str(2**30),
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 413 and "split the file" in response.json()["error"]
    assert not UploadBatch.objects.exists()


def test_a_large_body_elsewhere_is_refused_before_it_is_read(editor):
    client = Client()
    client.force_login(editor)
    response = client.post("/decisions/", {"pick": "x"}, CONTENT_LENGTH=str(2**30))
    assert response.status_code == 413


# --- Degraded answers ----------------------------------------------------------------------------


def test_api_answers_503_json_with_retry_after_when_the_database_is_down(editor, monkeypatch):
    key = ApiToken.issue(editor, name="t")[1]
    from django.db.backends.utils import CursorWrapper

    def down(self, sql, params=None):
        raise OperationalError("connection to server at 127.0.0.1, port 5432 failed")

    monkeypatch.setattr(CursorWrapper, "execute", down)
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    for response in [
        client.get("/api/articles/1"),
        client.post("/api/articles", {"text": "今天"}, content_type="application/json"),
    ]:
        assert response.status_code == 503
        assert response["Retry-After"] == "30"
        assert "database is not answering" in response.json()["error"]


@pytest.mark.django_db(transaction=True)  # on_commit runs: the articles are sent once stored
def test_api_stores_articles_and_answers_202_when_the_broker_is_down(editor, monkeypatch):
    from kombu.exceptions import OperationalError as BrokerDown

    from dedup import tasks

    def down(*args, **kwargs):
        raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.articles_process, "delay", down)
    key = ApiToken.issue(editor, name="t")[1]
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post("/api/articles", {"text": "今天"}, content_type="application/json")
    # The articles are stored: a 5xx would make the client send them again (duplicates);
    # beat's articles_requeue_stuck sends them to the workers once the broker is back.
    assert response.status_code == 202
    assert Article.objects.count() == 1


def test_healthz_answers_without_a_session():
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"ok": True}


def test_readyz_names_what_is_down(monkeypatch, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = Client().get("/readyz")
    assert response.status_code == 503 and response["Retry-After"] == "30"
    checks = response.json()["checks"]
    assert checks["database"] == "ok"
    assert "refused" in checks["broker"].lower() or "connect" in checks["broker"].lower()


@pytest.mark.django_db(transaction=True)
def test_readyz_is_ready_with_database_broker_and_a_worker(worker, wait_until):
    from django.core.cache import cache

    cache.clear()  # no worker answer cached by an earlier test

    def ready():
        return Client().get("/readyz").status_code == 200

    wait_until(ready, timeout=30, message="readyz answered 200")
    body = Client().get("/readyz").json()
    assert body["checks"] == {"database": "ok", "broker": "ok", "worker": "ok"}
    assert body["workers"]


@pytest.mark.django_db(transaction=True)
def test_readyz_counts_a_worker_too_busy_to_answer_a_ping_by_its_heartbeat(
    worker, wait_until, monkeypatch
):
    """Under load a worker's reply to the ping came after the half second it waits, and the
    overview and /readyz said no worker was running: its heartbeat says it is."""
    import time

    from django.core.cache import cache

    from dedup.services import heartbeats
    from webui import overview

    cache.clear()
    wait_until(heartbeats.workers_seen, timeout=30, message="the worker's heartbeat")
    [name] = heartbeats.workers_seen()

    class Late:
        def ping(self):
            return None  # what inspect().ping() gives when no reply came in time

    monkeypatch.setattr("dedup.celery.app.control.inspect", lambda **kwargs: Late())
    cache.delete_many([overview.WORKERS_CACHE_KEY, overview.WORKERS_CACHE_KEY + ":last"])
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["worker"] == "ok"
    assert response.json()["workers"] == [name]
    # A heartbeat older than SEEN_SECONDS no longer counts (a worker that died).
    later = time.time() + heartbeats.SEEN_SECONDS + 1
    assert heartbeats.workers_seen(now=later) == []


@pytest.mark.django_db
def test_a_refused_page_is_logged_in_one_line_without_a_traceback(caplog):
    import logging

    nobody = Client()
    nobody.force_login(User.objects.create_user("no-role", password="pw"))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert nobody.get("/").status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert "Forbidden" in record.getMessage()
    assert record.exc_info is None  # it carried PermissionDenied's traceback
