"""Editors' look-ups: the article page, the search over every article, an upload's page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from dedup.models import Article, ArticleStatus, Decision, Match, UploadBatch, Verdict
from tests.webui.conftest import article as stored_article

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


def article(n: int, body: str = "", **kw) -> Article:
    """Return article n, processed unless told otherwise."""
    return stored_article(n, body, **{"status": ArticleStatus.DONE, **kw})


@pytest.fixture
def upload(editor):
    return UploadBatch.objects.create(name="news.jsonl", uploaded_by=editor, state="done")


@pytest.fixture
def pair(upload):
    """Two matched articles of one upload and an unmatched one, with a rejected decision."""
    a = article(1, external_id="news-001", url="https://example.com/1", upload=upload, row=1)
    b = article(2, external_id="news-002", url="javascript:alert(1)", upload=upload, row=2)
    lone = article(3, body=f"独立的文章 {XSS} 没有任何副本。", title="", upload=upload, row=3)
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.81, shared_chars=30)
    return a, b, lone


def test_anonymous_is_sent_to_sign_in_and_no_role_gets_403(django_user_model, pair, upload):
    a = pair[0]
    nobody = Client()
    nobody.force_login(django_user_model.objects.create_user("nobody", password="pw"))
    for url in [f"/articles/{a.id}/", "/articles/?q=news-001", f"/uploads/{upload.id}/"]:
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
        assert nobody.get(url).status_code == 403, url


def test_article_page_shows_fields_match_decisions_and_links(editor_client, editor, pair):
    a, b, _lone = pair
    Decision.objects.create(a=a, b=b, verdict=Verdict.DUPLICATE, decided_by=editor)
    Decision.objects.create(a=a, b=b, verdict=Verdict.NOT_DUPLICATE, decided_by=editor)
    response = editor_client.get(f"/articles/{a.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "news-001" in html and "人民日报" in html
    assert 'href="https://example.com/1"' in html
    assert f'href="/uploads/{a.upload_id}/"' in html
    assert f'href="/compare/{a.id}/{b.id}/"' in html  # the side by side of the match
    assert f'href="/articles/{b.id}/"' in html
    [row] = response.context["matches"]
    assert row["decision"].verdict == Verdict.NOT_DUPLICATE  # the latest counts
    assert [d.verdict for d in response.context["history"]] == ["not_duplicate", "duplicate"]
    assert "li.wei" in html
    assert "今天北京的天气很好" in html  # the full text


def test_article_page_links_only_web_addresses_and_escapes_the_text(editor_client, pair):
    _a, b, lone = pair
    html = editor_client.get(f"/articles/{b.id}/").content.decode()
    assert 'href="javascript:' not in html
    assert "javascript:alert(1)" in html  # shown as text
    html = editor_client.get(f"/articles/{lone.id}/").content.decode()
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "没有发现这篇文章的副本。" in html  # in Chinese, the default


def test_unknown_article_is_404(editor_client):
    assert editor_client.get("/articles/999999/").status_code == 404


def test_search_by_external_id_opens_the_only_article(editor_client, pair):
    a = pair[0]
    response = editor_client.get("/articles/?q=news-001")
    assert response.status_code == 302 and response["Location"] == f"/articles/{a.id}/"
    response = editor_client.get(f"/articles/?q=%23{a.id}")  # "#12": its number
    assert response.status_code == 302 and response["Location"] == f"/articles/{a.id}/"


def test_exact_hit_comes_first_beside_text_hits(editor_client, pair):
    a, _b, _lone = pair
    c = article(4, body="这篇文章提到 news-001 这个编号。")
    response = editor_client.get("/articles/?q=news-001")
    assert response.status_code == 200
    assert [x.id for x in response.context["exact"]] == [a.id]
    assert [x.id for x in response.context["rows"]] == [c.id]
    html = response.content.decode()
    assert html.index(f'data-article="{a.id}"') < html.index(f'data-article="{c.id}"')
    assert "<mark>news-001</mark>" in html  # the hit in the snippet


def test_search_reads_titles_text_and_urls_of_every_article(editor_client, pair):
    a, b, lone = pair

    def found(query):
        response = editor_client.get(f"/articles/?{query}")
        assert response.status_code == 200, query
        return {x.id for x in response.context["exact"] + response.context["rows"]}

    assert found("q=没有任何副本") == {lone.id}  # an article with no match is found
    assert found("q=公园散步") == {a.id, b.id}
    assert found("q=标题 2") == {b.id}
    assert found("q=EXAMPLE.COM") == {a.id}  # any letter case
    assert found("q=不存在的词") == set()
    assert found("") == {a.id, b.id, lone.id}
    assert found(f"upload={a.upload_id}&status=done") == {a.id, b.id, lone.id}
    assert found("source=新华社") == set()
    assert found("from=2024-05-01&to=2024-05-01") == {a.id, b.id, lone.id}
    assert found("from=2024-05-02") == set()


def test_search_escapes_what_it_shows(editor_client, pair):
    html = editor_client.get("/articles/?q=script").content.decode()
    assert XSS not in html and "&lt;<mark>script</mark>&gt;" in html


def test_search_pages(editor_client):
    for n in range(30):
        article(10 + n)
    first = editor_client.get("/articles/?q=天气")
    assert len(first.context["rows"]) == 25 and first.context["has_next"]
    assert 'rel="next" href="?q=%E5%A4%A9%E6%B0%94&amp;page=2"' in first.content.decode()
    second = editor_client.get("/articles/?q=天气&page=2")
    assert len(second.context["rows"]) == 5 and not second.context["has_next"]
    assert not {x.id for x in first.context["rows"]} & {x.id for x in second.context["rows"]}


def test_search_bad_date_gets_400(editor_client):
    assert editor_client.get("/articles/?from=31/05/2024").status_code == 400


def test_top_bar_has_the_search_on_every_page(editor_client, pair):
    html = editor_client.get("/").content.decode()
    assert 'action="/articles/"' in html and 'name="q"' in html


def test_upload_page_lists_its_articles_and_what_was_found(editor_client, pair, upload):
    a, b, lone = pair
    response = editor_client.get(f"/uploads/{upload.id}/")
    assert response.status_code == 200
    rows = response.context["rows"]
    assert [r.id for r in rows] == [a.id, b.id, lone.id]  # in file order
    assert [c["other"] for c in rows[0].copies] == [b.id] and rows[0].match_count == 1
    assert rows[2].copies == []
    html = response.content.decode()
    assert f'href="/articles/{lone.id}/"' in html and f'href="/compare/{a.id}/{b.id}/"' in html
    assert XSS not in html
    matched = editor_client.get(f"/uploads/{upload.id}/?found=matched").context["rows"]
    assert [r.id for r in matched] == [a.id, b.id]
    new = editor_client.get(f"/uploads/{upload.id}/?found=new").context["rows"]
    assert [r.id for r in new] == [lone.id]
    assert editor_client.get("/uploads/999999/").status_code == 404


def test_upload_page_lists_a_rows_copies_as_the_article_page_does(editor_client, pair, upload):
    """Issue 31: the "found" column showed one best match by similarity, which mixes two
    measures (a partial copy's is the containment of the smaller article): a demo article
    containing the row outranked its real repost. Each copy is listed with its kind and
    similarity and a link to the compare page, near copies first."""
    a, b, _lone = pair
    container = stored_article(
        9, body="今天北京的天气很好，我们去公园散步。第1篇文章的内容在这里。" * 3
    )
    Match.objects.create(
        a=a, b=container, kind="partial", distance=None, similarity=0.97, shared_chars=30
    )
    html = editor_client.get(f"/uploads/{upload.id}/").content.decode()
    row = html.split(f'data-article="{a.id}"')[1].split("</tr>")[0]
    assert f'href="/compare/{a.id}/{b.id}/"' in row  # the near repost, before the container
    assert f'href="/compare/{a.id}/{container.id}/"' in row
    assert row.index(f"/compare/{a.id}/{b.id}/") < row.index(f"/compare/{a.id}/{container.id}/")
    assert "近似副本" in row and "部分副本" in row and "0.810" in row and "0.970" in row


def immediate() -> None:
    """Check the foreign keys of the rows made so far now: PostgreSQL builds no index in a
    transaction with checks pending (a worker builds one outside any)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_search_finds_the_text_in_every_range_gap_and_the_newest_in_every_status(
    editor_client,
):
    """The text's index is built a range of articles at a time (dedup.textindex): search
    finds a text in a range, in ids a failed build left out, and past the last range, in
    every status, as reading every text would."""
    from dedup.textindex import TextRange, create_sql, text_index_drop, text_index_seal, text_ranges

    text_index_drop()  # ranges another test left (dropped in this test's transaction only)
    statuses = list(ArticleStatus.values)
    made = []
    for batch in range(3):
        for n, status in enumerate(statuses):
            number = 50 + 10 * batch + n
            made.append(
                article(number, body=f"第{number}号文章谈到一种罕见的蓝色茶花。", status=status)
            )
        immediate()
        if batch == 0:  # a range over the first batch (manage.py text_index --create)
            built = text_index_seal(everything=True, concurrently=False)
            assert built == [TextRange(0, made[-1].id)]
        if batch == 1:  # a range with a gap before it
            gap_end = made[len(statuses) + 1].id
            with connection.cursor() as cursor:
                cursor.execute(create_sql(TextRange(gap_end, made[-1].id), concurrently=False))
    article(99, body="另一篇文章，没有那种花。")
    assert [(r.lo, r.hi) for r in text_ranges()] == [
        (0, made[len(statuses) - 1].id),
        (made[len(statuses) + 1].id, made[2 * len(statuses) - 1].id),
    ]
    rows = editor_client.get("/articles/?q=蓝色茶花").context["rows"]
    assert sorted(a.id for a in rows) == sorted(a.id for a in made)


def test_a_range_is_built_when_nearly_all_its_articles_are_finished():
    """No range while more than 1% of its articles wait (each would write its trigrams at
    every change of status); then one, bounded: newer articles are in no index."""
    from dedup.textindex import text_index_drop, text_index_seal, text_ranges

    text_index_drop()  # ranges another test left (dropped in this test's transaction only)
    first = [article(n, body=f"文章{n}", status=ArticleStatus.PENDING) for n in range(1, 5)]
    immediate()
    assert text_index_seal(4, concurrently=False) == []  # four waiting of four
    Article.objects.filter(id__in=[a.id for a in first]).update(status=ArticleStatus.DONE)
    assert text_index_seal(5, concurrently=False) == []  # not yet five
    [built] = text_index_seal(4, concurrently=False)
    assert (built.lo, built.hi) == (0, first[-1].id) and text_ranges() == [built]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_indexdef(%s::regclass), to_regclass('article_body_finished_trgm')",
            [built.name],
        )
        [(definition, old)] = cursor.fetchall()
    assert "gin_trgm_ops" in definition, definition
    assert "id > 0" in definition and f"id <= {first[-1].id}" in definition, definition
    assert old is None  # the index over every finished article (migration 0025) is gone
