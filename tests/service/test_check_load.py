"""`api/check` cannot hold the site: its text is bounded by the article limit (a 5 MB text is
refused at once) and what it may take is bounded, so that three concurrent checks of the
largest text allowed, against gunicorn as the compose file runs it (3 workers), leave the
sign-in page fast for everyone."""

from __future__ import annotations

import json
import statistics
import threading
import time

import pytest
from django.db import connections

from dedup import services
from dedup.models import ApiToken
from tests import roles
from tests.service.test_degraded import web_factory  # noqa: F401 (a fixture)
from tests.texts import stranger
from tests.workers import database_url

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT_MB = 2  # the default DEDUP_MAX_ARTICLE_MB


def largest_text() -> str:
    """Return a text just under the article limit, of sentences like an article's."""
    text, i = "", 0
    parts = []
    size = 0
    while size < LIMIT_MB * 2**20 - 4096:
        part = stranger(i, 40)
        parts.append(part)
        size += len(part.encode())
        i += 1
    text = "".join(parts)
    while len(text.encode()) > LIMIT_MB * 2**20:
        text = text[:-100]
    return text


def test_three_concurrent_checks_of_the_largest_text_leave_sign_in_fast(web_factory):  # noqa: F811
    services.articles_ingest(rows=[{"body": stranger(i)} for i in range(20)])
    key = ApiToken.issue(roles.user_in("editor", "crawler"), name="t")[1]
    web = web_factory(
        workers=3,
        DATABASE_URL=database_url(connections["default"].settings_dict),
        DEDUP_MAX_ARTICLE_MB=str(LIMIT_MB),
    )
    headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
    huge = json.dumps({"text": "长" * (5 * 2**20 // 3 + 10)}, ensure_ascii=False).encode()
    started = time.monotonic()
    status, _h, answer = web.request("POST", "/api/check", huge, **headers)
    print(f"\n5 MB text: {status} in {time.monotonic() - started:.2f} s: {answer[:100]!r}")
    assert status in (400, 413) and time.monotonic() - started < 2
    body = json.dumps({"text": largest_text()}, ensure_ascii=False).encode()
    for _ in range(3):  # every worker warm, each check once
        assert web.request("GET", "/accounts/login/")[0] == 200
    answers: list[tuple[int, float]] = []

    def check() -> None:
        began = time.monotonic()
        code = web.request("POST", "/api/check", body, **headers)[0]
        answers.append((code, time.monotonic() - began))

    checks = [threading.Thread(target=check) for _ in range(3)]
    for thread in checks:
        thread.start()
    signin = []
    time.sleep(0.3)  # the checks are in the workers
    while any(t.is_alive() for t in checks):
        began = time.monotonic()
        assert web.request("GET", "/accounts/login/")[0] == 200
        signin.append(time.monotonic() - began)
        time.sleep(0.1)
    for thread in checks:
        thread.join()
    print(f"checks of {len(body) / 2**20:.1f} MB: {sorted(answers)}")
    print(
        f"sign-in page meanwhile: {len(signin)} requests, median "
        f"{statistics.median(signin) if signin else 0:.3f} s, max {max(signin, default=0):.3f} s"
    )
    assert all(code in (200, 503) for code, _ in answers), answers
    assert max(seconds for _, seconds in answers) < 10
    assert max(signin, default=0) < 1.0


def test_a_check_whose_queries_wait_too_long_is_answered_503(settings):
    from django.db import connections
    from django.test import Client

    settings.DEDUP_CHECK_SECONDS = 1
    key = ApiToken.issue(roles.user_in("editor", "crawler"), name="t")[1]
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    # Holds the segment index meanwhile: every check's look-up reads it (a check that finds
    # nothing reads no article).
    other = connections.create_connection("default")
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("LOCK TABLE dedup_segment IN ACCESS EXCLUSIVE MODE")
        began = time.monotonic()
        response = client.post("/api/check", {"text": stranger(1)}, content_type="application/json")
        waited = time.monotonic() - began
    finally:
        other.rollback()
        other.close()
    print(f"\ncheck with its table locked: {response.status_code} after {waited:.1f} s")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert "took over 1 s (DEDUP_CHECK_SECONDS)" in response.json()["error"]
    assert waited < 5


def test_only_long_texts_wait_for_a_check_slot(settings):
    """With every slot held (long checks running elsewhere), an article-sized check is still
    answered; a text over DEDUP_CHECK_LONG_CHARS is answered 503 with Retry-After."""
    from django.db import connections
    from django.test import Client

    from dedup.services.checks import CHECK_SLOTS

    settings.DEDUP_CHECK_CONCURRENCY = 2
    settings.DEDUP_CHECK_LONG_CHARS = 5_000
    services.articles_ingest(rows=[{"body": stranger(i)} for i in range(3)])
    key = ApiToken.issue(roles.user_in("editor", "crawler"), name="t")[1]
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # two long checks elsewhere hold both slots
            for slot in range(2):
                cursor.execute("SELECT pg_advisory_lock(%s)", [CHECK_SLOTS + slot])
        short = client.post("/api/check", {"text": stranger(1)}, content_type="application/json")
        long = "".join(stranger(i, 40) for i in range(60))
        assert len(long) > 5_000
        refused = client.post("/api/check", {"text": long}, content_type="application/json")
    finally:
        other.close()
    assert short.status_code == 200, short.content
    assert refused.status_code == 503 and refused["Retry-After"] == "1"
    assert "over 5,000 characters" in refused.json()["error"]
