"""The OpenAPI document: served, valid, and true: every operation in it is called and its
real answers (successes and refusals) are checked against the schemas it names."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from dedup.models import ApiToken, Article, Decision, Match, Settings

pytestmark = pytest.mark.django_db

TEXT = (
    "国家统计局今天发布数据显示，今年前三季度国内生产总值同比增长百分之五点二，"
    "经济运行总体回升向好。专家表示，消费对经济增长的贡献率继续提高。"
)


@pytest.fixture
def client() -> Client:
    user = User.objects.create_user("editor", password="pw")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="dedup",
            codename__in=["view_article", "view_match", "view_uploadbatch", "add_uploadbatch"],
        )
    )
    return Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")


@pytest.fixture
def document() -> dict:
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


class Checker:
    """Checks answers against the document's response schemas, noting which it checked."""

    def __init__(self, document: dict):
        self.document = document
        resource = Resource(contents=document, specification=DRAFT202012)
        self.registry = Registry().with_resource("urn:api", resource)
        self.checked: set[tuple[str, str]] = set()

    def __call__(self, path: str, method: str, response) -> dict:
        operation = self.document["paths"][path][method]
        status = str(response.status_code)
        assert status in operation["responses"], f"{method} {path} answered {status}, undocumented"
        pointer = "/".join(
            part.replace("~", "~0").replace("/", "~1")
            for part in ["paths", path, method, "responses", status, "content", "application/json"]
        )
        schema = {"$ref": f"urn:api#/{pointer}/schema"}
        body = response.json()
        Draft202012Validator(schema, registry=self.registry).validate(body)
        self.checked.add((path, method))
        return body


def test_schema_is_valid_openapi_3(document):
    validate(document)
    assert document["openapi"].startswith("3.")
    assert document["components"]["securitySchemes"]["TokenAuth"]["name"] == "Authorization"


def test_docs_page_is_served_with_local_scripts():
    response = Client().get("/api/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/api/openapi.json" in page
    assert "cdn." not in page  # the scripts come from our static files (the ninja app)


def _article(title: str, **fields) -> Article:
    return Article.objects.create(
        title=title,
        body=TEXT + title,
        dated_at=timezone.now(),
        content_hash=Article.hash_body(TEXT + title),
        length=len(TEXT),
        **fields,
    )


def test_every_operation_answers_as_its_schema_says(
    client, document, django_capture_on_commit_callbacks
):
    check = Checker(document)
    version = Settings.load().active_version
    a = _article("一", external_id="cms-1", source="新华社", url="https://example.com/1")
    b = _article("二", external_id="cms-2", source="新华社")
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.9, version=version)
    Decision.objects.create(a=a, b=b, verdict="duplicate")
    Decision.objects.create(a=a, verdict="original")

    def post(url, data):
        return client.post(url, json.dumps(data), content_type="application/json")

    with django_capture_on_commit_callbacks():
        check("/api/articles", "post", post("/api/articles", [{"id": "cms-3", "body": TEXT}]))
        check("/api/articles", "post", post("/api/articles", {"id": "cms-3", "body": TEXT}))
    check("/api/articles", "post", post("/api/articles", [{"title": "no body"}]))  # 400
    check("/api/articles", "get", client.get("/api/articles", {"external_id": "cms-1"}))
    check("/api/articles", "get", client.get("/api/articles", {"url": "https://example.com/1"}))
    check("/api/articles", "get", client.get("/api/articles", {"limit": "0", "source": "x"}))
    check("/api/articles/{article_id}", "get", client.get(f"/api/articles/{a.pk}"))
    check("/api/articles/{article_id}", "get", client.get("/api/articles/999999"))  # 404
    check("/api/articles/{article_id}", "get", Client().get(f"/api/articles/{a.pk}"))  # 401
    matches = "/api/articles/{article_id}/matches"
    check(matches, "get", client.get(f"/api/articles/{a.pk}/matches"))
    check(matches, "get", client.get(f"/api/articles/{a.pk}/matches", {"k": "x"}))
    check("/api/check", "post", post("/api/check", {"text": TEXT, "k": 3}))
    check("/api/check", "post", post("/api/check", {"text": ""}))
    check("/api/matches", "get", client.get("/api/matches", {"kind": "near"}))
    check("/api/matches", "get", client.get("/api/matches", {"kind": "other"}))  # 400
    check("/api/decisions", "get", client.get("/api/decisions"))
    c = _article("三", external_id="rm-1", source="人民日报")
    Match.objects.create(a=a, b=c, kind="partial", similarity=0.5, version=version)
    check("/api/sources", "get", client.get("/api/sources", {"since": "2000-01-01"}))
    check("/api/sources", "get", client.get("/api/sources", {"since": "May"}))  # 400
    copies = "/api/sources/{name}/copies"
    check(copies, "get", client.get("/api/sources/新华社/copies"))
    check(copies, "get", client.get("/api/sources/人民日报/copies", {"taken": "true"}))
    check(copies, "get", client.get("/api/sources/nobody/copies"))  # 404
    upload = SimpleUploadedFile("a.jsonl", json.dumps({"body": TEXT}).encode())
    with django_capture_on_commit_callbacks():
        created = check("/api/uploads", "post", client.post("/api/uploads", {"file": upload}))
    check("/api/uploads/{upload_id}", "get", client.get(f"/api/uploads/{created['upload']}"))
    check("/api/uploads/{upload_id}", "get", client.get("/api/uploads/999999"))

    documented = {
        (path, method)
        for path, operations in document["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert check.checked == documented
