"""What a request costs the database: the statements the API's authentication, `api/check`
and the review pages send (bench/webcpu.py measures their CPU; bench/results/load.md the load)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dedup import services
from dedup.models import ApiToken, Article
from tests.texts import ARTICLE, EXACT, NEAR, OTHER, stranger

pytestmark = pytest.mark.django_db

TOKEN_WRITE = 'UPDATE "dedup_apitoken"'
TEXT = "国家统计局今天发布数据显示，今年前三季度国内生产总值同比增长百分之五点二。"


@pytest.fixture
def reader_key() -> str:
    """A token of a user who may read articles through a group, not on their own."""
    group = Group.objects.create(name="readers")
    group.permissions.set(
        Permission.objects.filter(content_type__app_label="dedup", codename="view_article")
    )
    user = User.objects.create_user("reader", password="a long enough password")
    user.groups.add(group)
    return ApiToken.issue(user, name="reader")[1]


@pytest.fixture
def article() -> Article:
    return Article.objects.create(
        title="一篇文章",
        body=TEXT,
        dated_at=timezone.now(),
        content_hash=Article.hash_body(TEXT),
        length=len(TEXT),
    )


def _statements(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [query["sql"] for query in queries.captured_queries]


def test_token_request_reads_token_and_permissions_in_one_statement(reader_key, article):
    client = Client(HTTP_AUTHORIZATION=f"Token {reader_key}")
    client.get(f"/api/articles/{article.pk}")  # the token's first use is recorded
    statements = _statements(client, f"/api/articles/{article.pk}")
    permission_reads = [sql for sql in statements if "auth_permission" in sql]
    assert len(permission_reads) == 1, permission_reads
    assert 'FROM "dedup_apitoken"' in permission_reads[0]
    # The token with its user's permissions, then the article, the settings, its fingerprints.
    assert len(statements) <= 4, statements


def test_token_of_a_user_with_own_permission_and_none(reader_key, article):
    own = User.objects.create_user("own", password="a long enough password")
    own.user_permissions.add(Permission.objects.get(codename="view_article"))
    bare = User.objects.create_user("bare", password="a long enough password")
    for user, status in ((own, 200), (bare, 403)):
        client = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
        assert client.get(f"/api/articles/{article.pk}").status_code == status


def test_token_use_is_written_once_a_minute(reader_key, article):
    client = Client(HTTP_AUTHORIZATION=f"Token {reader_key}")
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(reader_key))
    assert token.last_used_at is None
    updates = []
    for _ in range(3):
        statements = _statements(client, f"/api/articles/{article.pk}")
        updates.append(sum(sql.startswith(TOKEN_WRITE) for sql in statements))
    assert updates == [1, 0, 0]
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    statements = _statements(client, f"/api/articles/{article.pk}")
    assert sum(sql.startswith(TOKEN_WRITE) for sql in statements) == 1
    token.refresh_from_db()
    assert token.last_used_at >= first


def test_group_permission_is_honoured_and_a_missing_one_refused(reader_key, article):
    client = Client(HTTP_AUTHORIZATION=f"Token {reader_key}")
    assert client.get(f"/api/articles/{article.pk}").status_code == 200
    response = client.post("/api/articles", [{"text": TEXT}], content_type="application/json")
    assert response.status_code == 403
    assert "dedup.add_uploadbatch" in response.json()["error"]


def _article_reads(text: str) -> tuple[list[dict], list[str]]:
    with CaptureQueriesContext(connection) as queries:
        matches = services.text_check(text=text)["matches"]
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "dedup_article"' in q["sql"]]
    return matches, reads


def test_check_reads_its_duplicates_in_one_statement_and_none_without():
    ids = [a.pk for a in services.articles_ingest(rows=[{"title": "原文", "body": ARTICLE}])]
    ids += [a.pk for a in services.articles_ingest(rows=[{"title": "别的", "body": OTHER}])]
    services.articles_process(article_ids=ids)
    matches, reads = _article_reads(EXACT)
    assert [(m["article"], m["kind"], m["title"]) for m in matches] == [(ids[0], "exact", "原文")]
    assert len(reads) == 1, reads
    matches, reads = _article_reads(NEAR)
    assert [(m["article"], m["kind"]) for m in matches] == [(ids[0], "near")]
    assert len(reads) == 1, reads
    matches, reads = _article_reads(stranger(7))
    assert matches == [] and reads == []
