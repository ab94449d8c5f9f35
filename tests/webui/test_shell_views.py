"""The dashboard shell: sign-in, roles, the upload page and its status, the overview, languages."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from dedup import services
from dedup.models import Match, UploadBatch, UploadState
from tests import roles
from tests.texts import ARTICLE, NEAR
from webui import overview

pytestmark = pytest.mark.django_db

PAGES = ["/upload/", "/overview/", "/upload/1/status.json"]


def make_user(name: str, group: str | None) -> User:
    user = User.objects.create_user(name, password="pw-" + name)
    if group:
        user.groups.add(roles.group(group))
    return user


@pytest.fixture
def editor_client() -> Client:
    client = Client()
    client.force_login(make_user("ed", "editor"))
    return client


@pytest.fixture
def admin_client_() -> Client:
    client = Client()
    client.force_login(make_user("ad", "admin"))
    return client


@pytest.fixture(autouse=True)
def _workers_known():
    """No test pings Celery unless it means to: the overview reads a cached answer. The
    overview's own threads (a ping, a refresh of its figures) finish before the next test, so
    that none writes the cache under it."""
    _overview_threads_joined()
    cache.set(overview.WORKERS_CACHE_KEY, {"ok": True, "names": ["w1@test"], "error": ""}, 60)
    yield
    _overview_threads_joined()
    cache.clear()


def _overview_threads_joined() -> None:
    for thread in threading.enumerate():
        if thread.name.endswith(("(ping)", "(_figures_refresh)")):
            thread.join(10)


def jsonl(*texts: str) -> bytes:
    rows = [{"title": f"t{i}", "text": text} for i, text in enumerate(texts)]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_users_are_sent_to_sign_in(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_sign_in_page_is_styled_and_signs_in_to_the_queue(client):
    make_user("ed", "editor")
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"csrfmiddlewaretoken" in page.content
    assert b"webui/app.css" in page.content
    response = client.post("/accounts/login/", {"username": "ed", "password": "pw-ed"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_wrong_password_says_what_to_do(client):
    make_user("ed", "editor")
    response = client.post("/accounts/login/", {"username": "ed", "password": "nope"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()


def test_user_without_a_role_gets_403_saying_what_to_do(client):
    client.force_login(make_user("nobody", None))
    response = client.get("/upload/")
    assert response.status_code == 403
    assert "webui/app.css" in response.content.decode()


def test_editor_uploads_but_cannot_open_the_overview(editor_client):
    assert editor_client.get("/upload/").status_code == 200
    assert editor_client.get("/overview/").status_code == 403
    page = editor_client.get("/upload/").content.decode()
    assert 'href="/overview/"' not in page  # the nav shows only what the role may open


def test_admin_sees_the_overview_with_its_sections(admin_client_, monkeypatch):
    # The workers' answer as cached, whatever a ping thread left over from another test (a
    # slow fake broker's) writes to the cache meanwhile.
    known = {"ok": True, "names": ["w1@test"], "error": ""}
    monkeypatch.setattr(overview, "workers_ping", lambda: lambda: known)
    response = admin_client_.get("/overview/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/overview/"' in page
    assert "/admin/dedup/settings/" in page
    assert "w1@test" in page
    assert 'id="workers"' in page


def test_overview_draws_matches_per_day_and_distance(admin_client_):
    a, b, c = services.articles_ingest(
        rows=[{"text": ARTICLE}, {"text": NEAR}, {"text": ARTICLE + "。补充"}]
    )
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.9, version="v")
    old = Match.objects.create(a=a, b=c, kind="near", distance=0, similarity=0.99, version="v")
    Match.objects.filter(pk=old.pk).update(found_at=timezone.now() - timedelta(days=3))
    history = overview.distance_history(k_max=4)
    assert history["total"] == 2
    assert sorted(bar["distance"] for bar in history["bars"]) == [0, 2]
    page = admin_client_.get("/overview/").content.decode()
    assert page.count("<rect ") == 2


def test_overview_figures_are_served_from_the_cache_and_refreshed_in_the_background(
    admin_client_, monkeypatch
):
    first = overview.figures()
    assert overview.figures() is not None
    refreshed = threading.Event()
    monkeypatch.setattr(overview, "_figures_refresh", refreshed.set)
    cache.set(overview.FIGURES_CACHE_KEY, {**first, "at": first["at"] - 60}, 60)
    stale = overview.figures()
    assert stale["at"] == first["at"] - 60  # the page does not wait for fresh figures
    assert refreshed.wait(5)  # ...which are made in the background
    assert admin_client_.get("/overview/").status_code == 200


def test_worker_ping_never_holds_the_page(monkeypatch):
    cache.clear()

    class SlowInspect:
        def ping(self):
            time.sleep(3)

    from dedup.celery import app

    monkeypatch.setattr(app.control, "inspect", lambda timeout: SlowInspect())
    started = time.monotonic()
    status = overview.workers_status()
    assert time.monotonic() - started < 1.0
    assert status["ok"] is None  # no answer yet: the page says so and does not wait


def test_a_late_worker_answer_is_kept_for_the_next_request(monkeypatch):
    cache.clear()

    asked, answer = threading.Event(), threading.Event()

    class LateInspect:
        def ping(self):
            asked.set()
            answer.wait(5)  # the worker answers after the page has gone on
            return {"w1@host": {"ok": "pong"}}

    from dedup.celery import app

    monkeypatch.setattr(app.control, "inspect", lambda timeout: LateInspect())
    assert overview.workers_status()["ok"] is None
    assert asked.wait(5)
    answer.set()
    deadline = time.monotonic() + 5
    while overview.workers_status()["ok"] is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the answer is stored by the asking thread, a moment after
    assert overview.workers_status() == {"ok": True, "names": ["w1@host"], "error": ""}


def test_a_broker_that_is_down_shows_no_worker(monkeypatch):
    cache.clear()

    class Down:
        def ping(self):
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    from dedup.celery import app

    monkeypatch.setattr(app.control, "inspect", lambda timeout: Down())
    status = overview.workers_status()
    assert status["ok"] is False and "6379" in status["error"]


def test_upload_stores_each_file_for_the_workers(editor_client):
    files = [
        SimpleUploadedFile("a.jsonl", jsonl(ARTICLE, NEAR)),
        SimpleUploadedFile("b.txt", ARTICLE.encode()),
    ]
    response = editor_client.post("/upload/", {"files": files})
    assert response.status_code == 302
    names = sorted(UploadBatch.objects.values_list("name", flat=True))
    assert names == ["a.jsonl", "b.txt"]
    assert UploadBatch.objects.filter(uploaded_by__username="ed").count() == 2


def test_upload_source_and_date_go_to_the_rows_that_name_none(editor_client):
    rows = [
        {"title": "a", "text": ARTICLE},
        {"title": "b", "text": NEAR, "source": "新华社", "published_at": "2024-03-01T08:00+08:00"},
    ]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    file = SimpleUploadedFile("a.jsonl", data)
    response = editor_client.post(
        "/upload/",
        {"files": [file], "source": " 人民网 ", "published": "2024-05-01"},
        headers={"accept": "application/json"},
    )
    assert response.status_code == 202
    batch = UploadBatch.objects.get()
    assert batch.source == "人民网"
    services.upload_process(upload_id=batch.id)
    assert dict(batch.articles.values_list("title", "source")) == {"a": "人民网", "b": "新华社"}
    published = {
        title: timezone.localtime(when).strftime("%Y-%m-%d %H:%M")
        for title, when in batch.articles.values_list("title", "published_at")
    }
    assert published == {"a": "2024-05-01 00:00", "b": "2024-03-01 08:00"}  # the row's own
    a = batch.articles.get(title="a")
    assert a.dated_at == a.published_at  # what the retention window compares
    page = editor_client.get("/upload/").content.decode()
    assert f'href="/uploads/{batch.id}/"' in page  # the row opens the upload's page


def test_upload_by_script_answers_json_with_a_status_address(editor_client):
    file = SimpleUploadedFile("a.jsonl", jsonl(ARTICLE))
    response = editor_client.post(
        "/upload/", {"files": [file]}, headers={"accept": "application/json"}
    )
    assert response.status_code == 202
    (row,) = response.json()["uploads"]
    assert row["state"] == UploadState.RECEIVED and row["percent"] == 0
    status = editor_client.get(row["status_url"]).json()
    assert status["id"] == row["id"] and status["finished"] is False


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("empty.jsonl", b"", "是空文件"),
        ("report.pdf", b"%PDF-1.4", "无法读取 .pdf 文件"),
        ("noext", b"abc", "没有扩展名"),
    ],
)
def test_bad_upload_says_what_to_do_and_creates_nothing(editor_client, name, content, words):
    response = editor_client.post("/upload/", {"files": [SimpleUploadedFile(name, content)]})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert name in response.content.decode()
    assert not UploadBatch.objects.exists()


def test_refused_file_is_named_once_beside_the_form(editor_client):
    response = editor_client.post("/upload/", {"files": [SimpleUploadedFile("x.pdf", b"%PDF")]})
    assert response.content.decode().count("x.pdf：无法读取 .pdf 文件") == 1


def test_too_large_upload_names_the_limit(editor_client, settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 2 * 2**20
    big = SimpleUploadedFile("big.jsonl", b"x" * (3 * 2**20))
    response = editor_client.post(
        "/upload/", {"files": [big]}, headers={"accept": "application/json"}
    )
    assert response.status_code == 400
    (message,) = response.json()["errors"]
    assert message == "big.jsonl 大小为 3.0 MB，超过 2 MB 的上限：请拆分成较小的文件。"
    assert not UploadBatch.objects.exists()


def test_one_bad_file_among_good_ones_creates_nothing(editor_client):
    files = [SimpleUploadedFile("a.jsonl", jsonl(ARTICLE)), SimpleUploadedFile("b.exe", b"MZ")]
    response = editor_client.post("/upload/", {"files": files})
    assert response.status_code == 400
    assert not UploadBatch.objects.exists()


def test_upload_without_a_file_asks_for_one(editor_client):
    response = editor_client.post("/upload/", {})
    assert response.status_code == 400
    assert not UploadBatch.objects.exists()


def test_upload_without_csrf_token_is_refused():
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("ed", "editor"))
    file = SimpleUploadedFile("a.jsonl", jsonl(ARTICLE))
    assert client.post("/upload/", {"files": [file]}).status_code == 403
    assert not UploadBatch.objects.exists()


def test_every_form_on_the_page_carries_a_csrf_token(editor_client):
    page = editor_client.get("/upload/").content.decode()
    posts = page.count('method="post"')
    assert posts == page.count('name="csrfmiddlewaretoken"') == 3
    assert page.count("<form") == posts + 1  # and the top bar's search, a GET


def test_sign_out_is_a_post(editor_client):
    assert editor_client.get("/accounts/logout/").status_code == 405
    response = editor_client.post("/accounts/logout/", {"next": "/accounts/login/"})
    assert response.status_code == 302
    assert editor_client.get("/upload/").status_code == 302


def test_finished_upload_lists_its_row_errors_escaped(editor_client):
    UploadBatch.objects.create(
        name="<script>window.__xss=1</script>.jsonl",
        state=UploadState.DONE,
        total_rows=3,
        accepted=2,
        rejected=1,
        errors=[{"row": 2, "message": "line 2: no text <b>here</b>"}],
    )
    page = editor_client.get("/upload/").content.decode()
    assert "<script>window.__xss" not in page
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;.jsonl" in page
    assert "line 2: no text &lt;b&gt;here&lt;/b&gt;" in page


def test_status_of_an_unknown_upload_is_404(editor_client):
    assert editor_client.get("/upload/999999/status.json").status_code == 404


def test_pages_are_chinese_by_default_and_english_on_request(editor_client):
    page = editor_client.get("/upload/").content.decode()
    assert '<html lang="zh-hans">' in page
    assert "上传文章" in page
    response = editor_client.post("/i18n/setlang/", {"language": "en", "next": "/upload/"})
    assert response.status_code == 302 and response["Location"] == "/upload/"
    page = editor_client.get("/upload/").content.decode()
    assert '<html lang="en">' in page
    assert "Upload articles" in page
