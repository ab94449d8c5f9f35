"""The JSON API: who may call it, what each endpoint answers, and how it refuses bad input."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from dedup.api import articles as api_articles
from dedup.models import (
    ApiToken,
    Article,
    Decision,
    Fingerprint,
    Match,
    Settings,
    UploadBatch,
    to_signed,
)

pytestmark = pytest.mark.django_db

EDITOR_PERMISSIONS = ["view_article", "view_match", "view_uploadbatch", "add_uploadbatch"]
TEXT = (
    "国家统计局今天发布数据显示，今年前三季度国内生产总值同比增长百分之五点二，"
    "经济运行总体回升向好。专家表示，消费对经济增长的贡献率继续提高，"
    "高技术制造业投资保持较快增长，就业形势总体稳定，居民收入稳步增加。"
)


def _user(username: str, permissions=(), **fields) -> User:
    user = User.objects.create_user(username, password="pw", **fields)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="dedup", codename__in=permissions)
    )
    return user


@pytest.fixture
def editor() -> User:
    return _user("editor", EDITOR_PERMISSIONS)


@pytest.fixture
def key(editor) -> str:
    return ApiToken.issue(editor, name="tests")[1]


@pytest.fixture
def client(key) -> Client:
    """A client that sends the editor's token (and, like real callers, no CSRF token)."""
    return Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {key}")


def _post(client: Client, url: str, data) -> object:
    body = data if isinstance(data, str | bytes) else json.dumps(data)
    return client.post(url, body, content_type="application/json")


def _article(title: str = "一篇文章", body: str = TEXT, **fields) -> Article:
    now = timezone.now()
    return Article.objects.create(
        title=title,
        body=body,
        dated_at=now,
        content_hash=Article.hash_body(body),
        length=len(body),
        **fields,
    )


# Authentication and permissions


def test_request_without_credentials_is_401():
    response = Client().get("/api/articles/1")
    assert response.status_code == 401
    assert "Token" in response.json()["error"]


@pytest.mark.parametrize("header", ["Token nonsense", "Bearer abc", "Token", "Basic dXNlcjpwdw=="])
def test_bad_or_malformed_token_is_401(header, key):
    response = Client(HTTP_AUTHORIZATION=header).get("/api/articles/1")
    assert response.status_code == 401
    assert response.json()["error"]


def test_token_of_inactive_user_is_401(editor, key):
    editor.is_active = False
    editor.save()
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/articles/1")
    assert response.status_code == 401


def test_token_request_records_last_use(client, key):
    article = _article()
    assert client.get(f"/api/articles/{article.pk}").status_code == 200
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
    assert token.last_used_at is not None


def test_token_post_needs_no_csrf_token(client):
    response = _post(client, "/api/check", {"text": TEXT})
    assert response.status_code == 200


def test_session_user_can_read(editor):
    article = _article()
    session = Client()
    session.force_login(editor)
    response = session.get(f"/api/articles/{article.pk}")
    assert response.status_code == 200
    assert response.json()["id"] == article.pk


def test_session_post_without_csrf_token_is_403(editor):
    session = Client(enforce_csrf_checks=True)
    session.force_login(editor)
    response = _post(session, "/api/check", {"text": TEXT})
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]


def test_session_post_with_csrf_token_is_served(editor):
    session = Client(enforce_csrf_checks=True)
    session.force_login(editor)
    secret = "a" * 32
    session.cookies["csrftoken"] = secret
    response = session.post(
        "/api/check",
        json.dumps({"text": TEXT}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=secret,
    )
    assert response.status_code == 200


def test_user_without_permissions_is_403():
    nobody = _user("nobody")
    token = ApiToken.issue(nobody)[1]
    response = Client(HTTP_AUTHORIZATION=f"Token {token}").get("/api/articles/1")
    assert response.status_code == 403
    assert "view_article" in response.json()["error"]


def test_reader_may_check_but_not_submit():
    reader = _user("reader", ["view_article", "view_match"])
    reader_client = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(reader)[1]}")
    assert _post(reader_client, "/api/check", {"text": TEXT}).status_code == 200
    response = _post(reader_client, "/api/articles", {"title": "t", "body": TEXT})
    assert response.status_code == 403
    assert "add_uploadbatch" in response.json()["error"]
    assert Article.objects.count() == 0


# Methods and addresses


@pytest.mark.parametrize(
    "method, url, allowed",
    [
        ("delete", "/api/articles", "GET, POST"),
        ("delete", "/api/articles/1", "GET"),
        ("post", "/api/articles/1/matches", "GET"),
        ("get", "/api/check", "POST"),
        ("put", "/api/uploads", "POST"),
        ("post", "/api/uploads/1", "GET"),
    ],
)
def test_other_methods_are_405(client, method, url, allowed):
    response = getattr(client, method)(url)
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert allowed in response.json()["error"]
    assert response["Content-Type"] == "application/json"


def test_unknown_address_is_404_json(client):
    response = client.get("/api/nothing/here")
    assert response.status_code == 404
    assert "/api/nothing/here" in response.json()["error"]


def test_api_root_is_404_json_naming_the_docs(client):
    response = client.get("/api/")
    assert response.status_code == 404
    assert "/api/docs" in response.json()["error"]


# POST /api/articles


def test_submit_one_article(client, django_capture_on_commit_callbacks):
    row = {
        "title": "前三季度经济数据",
        "body": TEXT,
        "source": "新华社",
        "url": "https://example.com/a",
        "published_at": "2024-10-18T10:00:00+08:00",
    }
    with django_capture_on_commit_callbacks() as callbacks:
        response = _post(client, "/api/articles", row)
    assert response.status_code == 202
    [answer] = response.json()["articles"]
    article = Article.objects.get(pk=answer["id"])
    assert answer["status"] == article.status == "pending"
    assert (article.title, article.source, article.url) == (row["title"], "新华社", row["url"])
    assert article.published_at.isoformat() == "2024-10-18T02:00:00+00:00"
    assert callbacks, "processing is queued when the request commits"


def test_submit_a_list_of_articles(client, django_capture_on_commit_callbacks):
    rows = [{"title": f"第{i}篇", "text": TEXT + str(i)} for i in range(3)]
    with django_capture_on_commit_callbacks():
        response = _post(client, "/api/articles", rows)
    assert response.status_code == 202
    ids = [a["id"] for a in response.json()["articles"]]
    assert len(ids) == 3
    titles = Article.objects.filter(pk__in=ids).order_by("pk").values_list("title", flat=True)
    assert list(titles) == ["第0篇", "第1篇", "第2篇"]


@pytest.mark.parametrize(
    "rows, message",
    [
        # A typo in "source" would store the row under no source: its id unknown when re-sent.
        ([{"body": TEXT, "id": "x4", "souce": "日报"}], 'articles[0]: unknown field "souce"; did '),
        (
            [{"body": TEXT}, {"body": TEXT + "二", "author": "李"}],
            'articles[1]: unknown field "author"; fields are body, text, title',
        ),
        ({"articles": [{"body": TEXT}]}, 'not {"articles": [...]}'),
    ],
)
def test_rows_with_unknown_fields_are_refused_and_nothing_is_stored(client, rows, message):
    response = _post(client, "/api/articles", rows)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert not Article.objects.exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ("", "no body"),
        ("{not json", "not valid JSON"),
        ("[]", "non-empty list"),
        ('"just a string"', "JSON object"),
        ("42", "JSON object"),
    ],
)
def test_submit_refuses_bodies_that_are_not_articles(client, body, message):
    response = _post(client, "/api/articles", body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Article.objects.count() == 0


def test_submit_refuses_list_items_that_are_not_objects(client):
    response = _post(client, "/api/articles", [{"body": TEXT}, "text", 3])
    assert response.status_code == 400
    [row_error] = response.json()["errors"]
    assert row_error["index"] == 1
    assert "object" in row_error["message"]
    assert Article.objects.count() == 0


@pytest.mark.parametrize(
    "bad_row, field",
    [
        ({"title": "没有正文"}, "body"),
        ({"title": "空正文", "body": "   "}, "body"),
        ({"title": "正文不是文字", "body": 123}, "body"),
        ({"title": "日期不对", "body": TEXT, "published_at": "去年"}, "published_at"),
    ],
)
def test_submit_with_one_bad_row_stores_nothing(client, bad_row, field):
    response = _post(client, "/api/articles", [{"title": "好的", "body": TEXT}, bad_row])
    assert response.status_code == 400
    answer = response.json()
    assert answer["error"]
    [row_error] = answer["errors"]
    assert row_error["field"] == field
    assert row_error["message"]
    assert Article.objects.count() == 0


def test_submit_refuses_too_many_articles(client, monkeypatch):
    monkeypatch.setattr(api_articles, "MAX_ARTICLES_PER_REQUEST", 2)
    response = _post(client, "/api/articles", [{"body": TEXT}] * 3)
    assert response.status_code == 400
    assert "at most 2" in response.json()["error"]
    assert Article.objects.count() == 0


def test_submit_refuses_oversized_request(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = _post(client, "/api/articles", {"body": TEXT * 20})
    assert response.status_code == 413
    assert "1000 bytes" in response.json()["error"]
    assert Article.objects.count() == 0


# POST /api/check


def test_check_answers_and_stores_nothing(client):
    _article()
    before = (Article.objects.count(), Fingerprint.objects.count(), Match.objects.count())
    response = _post(client, "/api/check", {"text": TEXT, "k": 3})
    assert response.status_code == 200
    answer = response.json()
    assert {"fingerprint", "status", "tokens", "matches"} <= answer.keys()
    assert answer["tokens"] > 0
    after = (Article.objects.count(), Fingerprint.objects.count(), Match.objects.count())
    assert after == before
    assert UploadBatch.objects.count() == 0


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": 5}, "text"),
        ({"text": TEXT, "k": -1}, "k must be a whole number from 0 to 4"),
        ({"text": TEXT, "k": 5}, "k must be a whole number from 0 to 4"),
        ({"text": TEXT, "k": 2.5}, "k must be"),
        ({"text": TEXT, "k": True}, "k must be"),
        (["text"], "JSON object"),
    ],
)
def test_check_refuses_bad_input(client, data, message):
    response = _post(client, "/api/check", data)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_check_k_limit_follows_settings(client):
    row = Settings.load()
    row.k_max = 4
    row.save()
    assert _post(client, "/api/check", {"text": TEXT, "k": 4}).status_code == 200
    response = _post(client, "/api/check", {"text": TEXT, "k": 5})
    assert "from 0 to 4" in response.json()["error"]


# GET /api/articles/<id>


def test_article_detail_shows_fingerprint_in_hex(client):
    article = _article(title="标题", source="来源", url="https://example.com/x")
    version = Settings.load().active_version
    Fingerprint.objects.create(
        article=article,
        version=version,
        value=to_signed(0xFEDCBA9876543210),
        status="ok",
        tokens=42,
        features=b"",
    )
    response = client.get(f"/api/articles/{article.pk}")
    assert response.status_code == 200
    answer = response.json()
    assert answer["fingerprint"] == "fedcba9876543210"
    assert answer["version"] == version
    assert (answer["id"], answer["title"], answer["source"]) == (article.pk, "标题", "来源")
    assert (answer["url"], answer["status"]) == ("https://example.com/x", "pending")
    assert answer["created_at"]


def test_article_detail_without_fingerprint_yet(client):
    article = _article()
    answer = client.get(f"/api/articles/{article.pk}").json()
    assert answer["fingerprint"] is None
    assert answer["version"] is None


def test_missing_article_is_404(client):
    response = client.get("/api/articles/999999")
    assert response.status_code == 404
    assert "999999" in response.json()["error"]


# GET /api/articles/<id>/matches


@pytest.fixture
def matched(client):
    """Three articles: the first near-copies the second (distance 2) and the third (distance 6)."""
    first, second, third = _article("一"), _article("二"), _article("三")
    version = Settings.load().active_version
    Match.objects.create(
        a=first, b=second, kind="near", distance=2, similarity=0.9, version=version
    )
    Match.objects.create(a=first, b=third, kind="near", distance=6, similarity=0.5, version=version)
    return first, second, third


def test_matches_name_the_other_article(client, matched):
    first, second, _ = matched
    response = client.get(f"/api/articles/{second.pk}/matches")
    assert response.status_code == 200
    [match] = response.json()["matches"]
    assert (match["article"], match["title"]) == (first.pk, "一")
    assert "一".encode() in response.content  # UTF-8, not \\u escapes
    assert (match["kind"], match["distance"], match["similarity"]) == ("near", 2, 0.9)
    assert match["shared_passages"] == []


def test_matches_are_every_verified_copy_whatever_the_distance(client, matched):
    first, second, third = matched
    url = f"/api/articles/{first.pk}/matches"
    everything = [m["article"] for m in client.get(url).json()["matches"]]
    assert everything == [second.pk, third.pk]  # distance 6 is beyond k_max: still a copy


def test_matches_filtered_by_the_queue_bars_and_k(client, matched):
    first, second, third = matched
    version = Settings.load().active_version
    page = _article("四")
    Match.objects.create(a=first, b=page, kind="partial", similarity=0.45, version=version)
    url = f"/api/articles/{first.pk}/matches"

    def found(**params):
        return [m["article"] for m in client.get(url, params).json()["matches"]]

    assert found() == [second.pk, third.pk, page.pk]
    assert found(near="0.8") == [second.pk, page.pk]
    assert found(partial="0.5") == [second.pk, third.pk]
    assert found(min_similarity="0.8") == [second.pk]  # older callers: one bar for both
    assert found(min_similarity="0.8", partial="0") == [second.pk, page.pk]
    assert found(k=3) == [second.pk]  # a diagnostic filter, asked for


def test_matches_leave_out_pairs_an_editor_rejected(client, matched):
    first, second, third = matched
    Decision.objects.create(a=first, b=third, verdict="duplicate")
    Decision.objects.create(a=first, b=third, verdict="not_duplicate")
    Decision.objects.create(a=second, b=first, verdict="not_duplicate")
    Decision.objects.create(a=first, b=second, verdict="duplicate")  # the latest counts
    matches = client.get(f"/api/articles/{first.pk}/matches").json()["matches"]
    assert [m["article"] for m in matches] == [second.pk]
    assert client.get(f"/api/articles/{third.pk}/matches").json()["matches"] == []


@pytest.mark.parametrize(
    "params, message",
    [
        ({"k": "abc"}, "k must be a whole number from 0 to 4"),
        ({"k": "-1"}, "k must be"),
        ({"k": "5"}, "k must be"),
        ({"k": "2.5"}, "k must be"),
        ({"min_similarity": "much"}, "min_similarity must be a number from 0 to 1"),
        ({"min_similarity": "1.5"}, "min_similarity"),
        ({"min_similarity": "nan"}, "min_similarity"),
        ({"near": "much"}, "near must be a number from 0 to 1"),
        ({"partial": "-0.1"}, "partial must be a number from 0 to 1"),
    ],
)
def test_matches_refuse_bad_parameters(client, matched, params, message):
    response = client.get(f"/api/articles/{matched[0].pk}/matches", params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_matches_of_missing_article_is_404(client):
    response = client.get("/api/articles/999999/matches")
    assert response.status_code == 404


# Uploads


def _file(content: bytes, name: str = "articles.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def test_upload_is_stored_and_reports_status(client, django_capture_on_commit_callbacks):
    lines = [json.dumps({"title": f"第{i}篇", "body": TEXT}, ensure_ascii=False) for i in range(2)]
    with django_capture_on_commit_callbacks():
        response = client.post("/api/uploads", {"file": _file("\n".join(lines).encode())})
    assert response.status_code == 202
    answer = response.json()
    upload = UploadBatch.objects.get(pk=answer["upload"])
    assert upload.name == "articles.jsonl"
    assert answer["status_url"].endswith(f"/api/uploads/{upload.pk}")
    status = client.get(answer["status_url"])
    assert status.status_code == 200
    assert status.json()


def test_upload_without_file_is_400(client):
    response = client.post("/api/uploads", {"other": "x"})
    assert response.status_code == 400
    assert "'file'" in response.json()["error"]


def test_upload_over_the_limit_is_413(client, settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 100
    response = client.post("/api/uploads", {"file": _file(b"x" * 200)})
    assert response.status_code == 413
    assert response.json()["error"]
    assert UploadBatch.objects.count() == 0


def test_upload_far_over_the_limit_is_refused_before_reading(client, settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 100
    response = client.post("/api/uploads", {"file": _file(b"x" * 200_000)})
    assert response.status_code == 413
    assert "split it" in response.json()["error"]
    assert UploadBatch.objects.count() == 0


def test_missing_upload_is_404(client):
    response = client.get("/api/uploads/999999")
    assert response.status_code == 404
    assert "999999" in response.json()["error"]


# manage.py api_token


def test_api_token_command_prints_a_working_token(editor):
    out = io.StringIO()
    call_command("api_token", "editor", "--name", "crawler", stdout=out, stderr=io.StringIO())
    key = out.getvalue().strip()
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
    assert (token.user, token.name) == (editor, "crawler")
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/articles/1")
    assert response.status_code == 404  # authenticated; the article just isn't there


def test_api_token_command_names_unknown_user():
    with pytest.raises(CommandError, match="no user 'ghost'"):
        call_command("api_token", "ghost")


# End to end, with a real worker


def test_near_copies_submitted_through_the_api_match(worker, wait_until):
    editor = _user("e2e-editor", EDITOR_PERMISSIONS)
    client = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(editor)[1]}")
    copy = TEXT.replace("今天", "今日").replace("专家表示", "专家认为")
    rows = [{"title": "原文", "body": TEXT}, {"title": "转载", "body": copy}]
    response = _post(client, "/api/articles", rows)
    assert response.status_code == 202
    first, second = (a["id"] for a in response.json()["articles"])

    def matches():
        return client.get(f"/api/articles/{second}/matches").json()["matches"]

    found = wait_until(matches, timeout=60, message="the copy's match")
    assert [(m["article"], m["title"]) for m in found] == [(first, "原文")]
    assert found[0]["kind"] in {"near", "partial"}
    answer = client.get(f"/api/articles/{second}").json()
    assert answer["status"] == "done"
    assert len(answer["fingerprint"]) == 16


def test_staff_status_alone_opens_no_endpoint_of_the_api():
    """Every operation of the schema refuses a staff user without permissions (403), with a
    token or signed in; a superuser is let through the same door."""
    staff = _user("staff-only", is_staff=True)
    boss = _user("boss", is_staff=True, is_superuser=True)
    document = Client().get("/api/openapi.json").json()
    operations = [
        (method, re.sub(r"\{[^}]+\}", "1", path))
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    assert len(operations) >= 8
    token = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(staff)[1]}")
    session = Client()
    session.force_login(staff)
    for method, path in operations:
        for caller in (token, session):
            response = getattr(caller, method)(path, content_type="application/json")
            assert response.status_code == 403, (method, path, response.status_code)
            assert "lacks the permission" in response.json()["error"]
    allowed = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(boss)[1]}").get("/api/matches")
    assert allowed.status_code == 200
