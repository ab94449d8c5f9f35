"""The compare page's evidence: text as written, HTML as text, boilerplate folded and labelled."""

from __future__ import annotations

import datetime as dt

import opencc
import pytest
from django.test import Client

from dedup import services
from dedup.index.boilerplate import OWNERS_COUNTED
from dedup.models import Article, Match
from tests import roles
from tests.texts import ARTICLE, OTHER, PAGE, stranger
from webui import evidence

pytestmark = pytest.mark.django_db

WHEN = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)
FOOTER = "本网站所有文章版权归原作者所有，未经书面许可不得转载、摘编或以其他方式使用。"


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


def test_shared_boilerplate_is_folded_labelled_and_not_evidence(editor_client, monkeypatch):
    first = article(1, ARTICLE + "\n\n" + FOOTER)
    second = article(2, OTHER + ARTICLE + "\n\n" + FOOTER)
    last_a = len(_detector().passages(first.body)) - 1
    last_b = len(_detector().passages(second.body)) - 1
    Match.objects.create(
        a=first,
        b=second,
        kind="partial",
        similarity=0.9,
        shared_passages=[[0, 4], [last_a, last_b]],
    )
    monkeypatch.setattr(
        evidence,
        "boilerplate_of_pair",
        lambda left, right, version: ({last_a: 7}, {last_b: OWNERS_COUNTED}),
    )
    response = editor_client.get(f"/compare/{first.id}/{second.id}/")
    context = response.context
    assert [(p.left, p.right) for p in context["shared"]] == [(0, 4)]
    assert [(p.left, p.right, p.owners) for p in context["shared_boilerplate"]] == [
        (last_a, last_b, 7)
    ]
    left, right = context["diff"].left, context["diff"].right
    assert [(s.text, s.owners) for s in left if s.op == "aside"] == [(FOOTER, 7)]
    assert [(s.text, s.owners) for s in right if s.op == "aside"] == [(FOOTER, OWNERS_COUNTED)]
    assert all(FOOTER not in s.text for s in left + right if s.op in ("del", "ins"))
    html = response.content.decode()
    assert "1 shared passage" in html or "1 个共同段落" in html
    assert "template text (held by 7 unrelated articles)" in html or "7 篇无关文章共有" in html
    cap = OWNERS_COUNTED  # at the count's cap: "or more"
    assert f"{cap} or more" in html or f"{cap} 篇或更多" in html


def test_boilerplate_learned_from_stored_articles_is_folded(editor_client):
    # Eight articles of their own text end with one footer: in each, the footer is boilerplate.
    ids = [
        a.pk
        for a in services.articles_ingest(
            rows=[{"title": f"t{n}", "body": stranger(n) + "\n\n" + FOOTER} for n in range(8)]
        )
    ]
    services.articles_process(article_ids=ids)
    response = editor_client.get(f"/compare/{ids[0]}/{ids[1]}/")
    left = response.context["diff"].left
    assert [s.text for s in left if s.op == "aside"] == [FOOTER]
    # Held by eight strangers: the six that are neither of the two compared.
    assert next(s.owners for s in left if s.op == "aside") == 6
    assert all(FOOTER not in s.text for s in left if s.op == "del")


def _detector():
    from dedup.models import Settings
    from webui.review_context import passage_detector as detector

    return detector(Settings.load().active().engine_config())


def test_the_shared_text_is_given_in_characters(editor_client):
    first, second = article(1, ARTICLE), article(2, PAGE)
    Match.objects.create(a=first, b=second, kind="partial", similarity=0.9, shared_chars=412)
    html = editor_client.get(f"/compare/{first.id}/{second.id}/").content.decode()
    assert "412 characters shared" in html or "共同 412 个字符" in html
    Match.objects.filter(a=first).update(shared_chars=0)  # matches stored before it was counted
    html = editor_client.get(f"/compare/{first.id}/{second.id}/").content.decode()
    assert "characters shared" not in html and "个字符" not in html


def test_the_two_articles_are_read_in_one_statement(editor_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    left, right = article(1, ARTICLE), article(2, ARTICLE + "又一句。")
    url = f"/compare/{left.pk}/{right.pk}/"
    assert editor_client.get(url).status_code == 200  # the match table loaded
    with CaptureQueriesContext(connection) as queries:
        response = editor_client.get(url)
    assert response.status_code == 200
    assert (response.context["left"], response.context["right"]) == (left, right)
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "dedup_article"' in q["sql"]]
    assert len(reads) == 1, reads
    assert editor_client.get(f"/compare/{left.pk}/{right.pk + 100}/").status_code == 404
    assert editor_client.get(f"/compare/{left.pk + 100}/{right.pk}/").status_code == 404


def test_a_match_whose_shared_passages_all_became_boilerplate_says_so(editor_client, monkeypatch):
    # Matched when the footer was still rare; today it is boilerplate in both: no "0 shared
    # passages" above an empty list, but what that means.
    first = article(1, ARTICLE + "\n\n" + FOOTER)
    second = article(2, OTHER + "\n\n" + FOOTER)
    last_a = len(_detector().passages(first.body)) - 1
    last_b = len(_detector().passages(second.body)) - 1
    Match.objects.create(
        a=first, b=second, kind="partial", similarity=0.5, shared_passages=[[last_a, last_b]]
    )
    monkeypatch.setattr(
        evidence,
        "boilerplate_of_pair",
        lambda left, right, version: ({last_a: 9}, {last_b: 9}),
    )
    response = editor_client.get(f"/compare/{first.id}/{second.id}/")
    assert response.context["shared"] == [] and len(response.context["shared_boilerplate"]) == 1
    html = response.content.decode()
    assert 'id="no-evidence"' in html and "0 个共同段落" not in html
    assert "目前没有可作为证据的共同段落" in html


def _story_with_reposts():
    """Ingest a story, its twelve reposts and five pages embedding a repost; return the ids."""
    from tests.texts import reposted

    texts = reposted(copies=12)
    rows = [{"title": f"r{n}", "body": body} for n, body in enumerate(texts)]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    return texts, ids


def _sentences(text: str) -> list[str]:
    return [s + "。" for s in text.split("。") if s]


def test_a_storys_own_paragraphs_held_by_both_are_shared_never_template(editor_client):
    texts, ids = _story_with_reposts()
    story = set(_sentences(texts[0]))
    # Two reposts, and a repost beside a page that embeds one.
    for left, right in [(ids[1], ids[2]), (ids[3], ids[-1]), (ids[-1], ids[3]), (ids[0], ids[-2])]:
        response = editor_client.get(f"/compare/{left}/{right}/")
        diff = response.context["diff"]
        body = {n: texts[ids.index(n)] for n in (left, right)}
        both = story & set(_sentences(body[left])) & set(_sentences(body[right]))
        assert both
        for column in (diff.left, diff.right):
            assert [s for s in column if s.op == "aside"] == []
            changed = "".join(s.text for s in column if s.op in ("del", "ins"))
            assert not [s for s in both if s in changed], (left, right)
        html = response.content.decode()
        assert "boilerplate" not in html.split('class="sides"')[1].split("</div>\n</div>")[0]
        assert "模板文字（" not in html


def test_a_footer_held_by_unrelated_articles_is_template_counting_only_those(editor_client):
    texts, story_ids = _story_with_reposts()
    # The story's copies all carry the site's footer, and so do eight strangers.
    from tests.texts import FOOTER as SITE_FOOTER

    Article.objects.filter(pk__in=story_ids).delete()
    rows = [{"title": f"r{n}", "body": body + "\n\n" + SITE_FOOTER} for n, body in enumerate(texts)]
    # (Seeds from 100: stranger(7) begins as the story does.)
    rows += [{"title": f"s{n}", "body": stranger(100 + n) + "\n\n" + SITE_FOOTER} for n in range(8)]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    response = editor_client.get(f"/compare/{ids[1]}/{ids[2]}/")
    diff = response.context["diff"]
    for column in (diff.left, diff.right):
        folded = [s for s in column if s.op == "aside"]
        assert [s.text for s in folded] == [SITE_FOOTER]
        # Held by 8 strangers (and the story's own 18 copies, which do not count).
        assert folded[0].owners == 8
    html = response.content.decode()
    label = ("template text (held by 8 unrelated articles)", "模板文字（8 篇无关文章共有）")
    assert label[0] in html or label[1] in html
    # Beside a stranger, the footer is folded on both sides and never a difference.
    response = editor_client.get(f"/compare/{ids[1]}/{ids[-1]}/")
    diff = response.context["diff"]
    for column in (diff.left, diff.right):
        assert [s.text for s in column if s.op == "aside"] == [SITE_FOOTER]
        assert all(SITE_FOOTER not in s.text for s in column if s.op in ("del", "ins"))
