"""Refusals the pages show speak the interface's language: a body over the size limit is
answered in Chinese on the Chinese interface (the form's page and its script), while the JSON
API keeps English."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dedup.models import ApiToken
from tests import roles

pytestmark = pytest.mark.django_db


@pytest.fixture
def chinese_editor() -> Client:
    client = Client(headers={"accept-language": "zh-hans"})
    client.force_login(roles.user_in("editor", "li.wei"))
    return client


def test_an_upload_over_the_limit_is_refused_in_chinese(chinese_editor, settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 2**20
    file = SimpleUploadedFile("a.jsonl", b'{"text": "x"}\n')
    page = chinese_editor.post("/upload/", {"files": [file]}, CONTENT_LENGTH=str(2**30))
    assert page.status_code == 413
    html = page.content.decode()
    assert "超过" in html and "1.0 MB" in html and "over the limit" not in html
    assert '<html lang="zh-hans">' in html
    script = chinese_editor.post(
        "/upload/", {"files": [file]}, CONTENT_LENGTH=str(2**30), HTTP_ACCEPT="application/json"
    )
    assert script.status_code == 413 and "超过" in script.json()["errors"][0]


def test_a_large_body_elsewhere_is_refused_in_chinese(chinese_editor):
    page = chinese_editor.post("/decisions/", {"pick": "x"}, CONTENT_LENGTH=str(2**30))
    assert page.status_code == 413 and "超过" in page.content.decode()


def test_the_language_chosen_on_the_site_wins_over_the_browser(settings):
    client = Client(headers={"accept-language": "en"})
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    client.force_login(roles.user_in("editor", "li.wei"))
    page = client.post("/decisions/", {"pick": "x"}, CONTENT_LENGTH=str(2**30))
    assert "超过" in page.content.decode()


def test_the_api_keeps_english(settings):
    user = roles.user_in("editor", "li.wei")
    key = ApiToken.issue(user, name="t")[1]
    client = Client(headers={"accept-language": "zh-hans"}, HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post("/api/articles", {"text": "x"}, CONTENT_LENGTH=str(2**30))
    assert response.status_code == 413 and "over the limit" in response.json()["error"]
