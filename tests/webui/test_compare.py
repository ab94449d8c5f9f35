"""The compare page's evidence: text as written, HTML as text, a Traditional copy unchanged."""

from __future__ import annotations

import datetime as dt

import opencc
import pytest
from django.test import Client

from dedup.models import Article, Match
from tests import roles
from tests.texts import ARTICLE, PAGE

pytestmark = pytest.mark.django_db

WHEN = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)


@pytest.fixture
def editor_client(django_user_model):
    user = django_user_model.objects.create_user("li.wei", password="pw")
    user.groups.add(roles.group("editor"))
    client = Client()
    client.force_login(user)
    return client


def article(n: int, body: str, **fields) -> Article:
    fields = {"title": f"标题 {n}", "source": "人民日报", "length": len(body), **fields}
    return Article.objects.create(body=body, dated_at=WHEN + dt.timedelta(hours=n), **fields)


def joined(segments) -> str:
    return "".join(s.text for s in segments)


def test_html_page_is_shown_as_its_text_never_as_markup(editor_client):
    page = (
        "<html><head><title>新闻</title><script>alert('page')</script></head><body>"
        "<div class='nav'><a href='/'>首页</a></div>"
        "<p>今天北京的天气很好，我们去公园散步。<img src=x onerror=alert(1)></p>"
        "<p>第二段讲公园里的人们在散步和跑步。</p></body></html>"
    )
    first = article(1, page, title="<script>alert(2)</script>头条<img src=x onerror=alert(3)>")
    second = article(2, "今天北京的天气很好，我们去公园散步。第二段讲公园里的人们在跑步。")
    response = editor_client.get(f"/compare/{first.id}/{second.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "alert(" not in html and "onerror" not in html  # scripts and tags go
    assert "&lt;p&gt;" not in html and "&lt;div" not in html  # no tag shown as text either
    assert "今天北京的天气很好" in html and "头条" in html
    left = joined(response.context["diff"].left)
    assert "<" not in left and "首页" in left


def test_markup_in_plain_text_is_escaped(editor_client):
    # Not an HTML page (no closed tag), so shown as the text it is, and escaped.
    body = "读者来信：把 <img src=x onerror=alert(1)> 贴进文章会怎样？今天北京的天气很好。"
    first = article(1, body, title="<img src=x onerror=alert(2)>")
    second = article(2, "今天北京的天气很好，我们去公园散步。")
    html = editor_client.get(f"/compare/{first.id}/{second.id}/").content.decode()
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html.replace('<mark class="del">', "").replace(
        "</mark>", ""
    )


def test_traditional_copy_shows_no_changes(editor_client):
    original = article(1, ARTICLE, title="国家主席发表新年讲话")
    copy = article(2, opencc.OpenCC("s2t").convert(ARTICLE), title="國家主席發表新年講話")
    Match.objects.create(a=original, b=copy, kind="near", distance=0, similarity=1.0)
    response = editor_client.get(f"/compare/{original.id}/{copy.id}/")
    assert response.context["diff"].changed == 0
    diff = response.context["diff"]
    assert {s.op for s in diff.left + diff.right} <= {"eq", "fold"}
    assert response.content.decode().count('<mark class="ins">') == 1  # the legend's


def test_shared_passages_are_shown_as_written(editor_client):
    quoted = "“第二段讲公园里的人们在散步和跑步，ＡＢＣ公司的职员也在其中！”"
    first = article(1, "第一段讲的是北京的天气，阳光明媚，空气清新。\n\n" + quoted)
    second = article(
        2, "<p>网站导航：首页、新闻、体育、财经、娱乐、科技。</p><p>" + quoted + "</p>"
    )
    Match.objects.create(
        a=first, b=second, kind="partial", similarity=0.5, shared_passages=[[1, 1]]
    )
    response = editor_client.get(f"/compare/{second.id}/{first.id}/")
    [shared] = response.context["shared"]
    assert (shared.left, shared.right) == (1, 1)
    assert joined(shared.diff.left) == joined(shared.diff.right) == quoted
    assert quoted in response.content.decode()


def test_old_passage_numbers_past_the_end_are_left_out(editor_client):
    first, second = article(1, ARTICLE), article(2, PAGE)
    Match.objects.create(
        a=first, b=second, kind="partial", similarity=0.9, shared_passages=[[0, 2], [99, 99]]
    )
    response = editor_client.get(f"/compare/{first.id}/{second.id}/")
    assert len(response.context["shared"]) == 1
