"""The review pages and actions: access, bad input, decisions, conflicts, exports, escaping."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from dedup.models import Article, Decision, Match
from tests.webui.conftest import article, user_in

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


@pytest.fixture
def chain():
    """One story of three articles: a and its copies b (distance 2) and c (distance 3)."""
    a, b, c = article(1), article(2), article(3, body=f"正文 {XSS} 今天北京的天气很好")
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.81)
    Match.objects.create(a=a, b=c, kind="near", distance=3, similarity=0.62)
    return a, b, c


def test_anonymous_is_sent_to_sign_in_from_every_page(chain):
    a, b, _c = chain
    client = Client()
    for url in ["/", "/queue/results/", f"/clusters/{a.id}/", f"/compare/{a.id}/{b.id}/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    for url in ["/export/decisions.csv", "/export/clusters.csv"]:
        assert client.get(url).status_code == 302


def test_signed_in_user_without_a_role_gets_403(django_user_model, chain):
    client = Client()
    client.force_login(user_in(django_user_model, None, "nobody"))
    assert client.get("/").status_code == 403
    response = client.post("/decisions/", {"pick": f"duplicate:{chain[0].id}:{chain[1].id}:0"})
    assert response.status_code == 403
    response = client.post("/decisions/cluster/", {"cluster": chain[0].id, "verdict": "duplicate"})
    assert response.status_code == 403
    assert Client().post("/decisions/cluster/", {"cluster": chain[0].id}).status_code == 302
    assert not Decision.objects.exists()


def test_admin_reviews_too(django_user_model, chain):
    client = Client()
    client.force_login(user_in(django_user_model, "admin", "boss"))
    assert client.get("/").status_code == 200


def test_queue_lists_the_story_as_one_cluster_with_counts(editor_client, chain):
    response = editor_client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"/clusters/{chain[0].id}/?near=0&amp;partial=0" in html
    assert response.context["counts"]["clusters"] == 1
    assert response.context["counts"]["articles"] == 3
    assert response.context["counts"]["matches"] == 2
    assert html.count("<svg") == 2  # the near and partial copies' similarity histograms


def test_queue_shows_a_verified_copy_whatever_its_fingerprint_distance(editor_client, chain):
    a, _b, _c = chain
    Match.objects.create(a=a, b=article(4), kind="near", distance=12, similarity=0.83)
    Match.objects.create(a=a, b=article(5), kind="partial", distance=None, similarity=0.5)
    response = editor_client.get("/queue/results/?status=all")
    assert response.context["counts"]["matches"] == Match.objects.count() == 4
    assert response.context["counts"]["articles"] == 5


def test_higher_near_bar_leaves_the_weaker_copy_out(editor_client, chain):
    response = editor_client.get("/queue/results/?near=0.7&status=all")
    assert response.context["counts"]["clusters"] == 1
    assert response.context["counts"]["articles"] == 2
    assert b"<html" not in response.content  # a partial, for the slider


def test_queue_slider_values_out_of_range_are_clamped(editor_client, chain):
    response = editor_client.get("/?near=99&partial=-3")
    assert response.status_code == 200
    threshold = response.context["threshold"]
    assert (threshold.near, threshold.partial) == (1.0, 0.0)


def test_queue_addresses_of_the_distance_slider_still_work(editor_client, chain):
    # k no longer hides anything (a bad one included); s was one bar for both kinds.
    for query in ("k=0", "k=abc", "k=0&near=0"):
        response = editor_client.get(f"/?{query}")
        assert response.status_code == 200
        assert response.context["counts"]["articles"] == 3
    threshold = editor_client.get("/?k=2&s=0.7").context["threshold"]
    assert (threshold.near, threshold.partial) == (0.7, 0.7)
    threshold = editor_client.get("/?s=0.7&partial=0.2").context["threshold"]
    assert (threshold.near, threshold.partial) == (0.7, 0.2)


@pytest.mark.parametrize("query", ["near=abc", "partial=nan", "s=x", "from=31/05/2024"])
def test_queue_bad_values_get_400_with_a_message(editor_client, chain, query):
    response = editor_client.get(f"/?{query}")
    assert response.status_code == 400
    assert response.context["message"]


def test_queue_filters_and_search(editor_client, chain):
    def listed(query):
        return editor_client.get(f"/queue/results/?status=all&{query}").context["counts"]["listed"]

    assert listed("source=人民日报") == 1
    assert listed("source=新浪") == 0
    assert listed("band=short") == 1
    assert listed("band=long") == 0
    assert listed("q=标题 2") == 1
    assert listed("q=公园散步") == 1  # text search
    assert listed("q=不存在的词") == 0
    assert listed("from=2024-05-02") == 0
    assert listed("from=2024-05-01&to=2024-05-01") == 1


def test_queue_shows_an_untitled_article_by_its_text_and_offers_the_full_search(
    editor_client, chain
):
    a, _b, _c = chain
    Article.objects.filter(id=a.id).update(title="")
    html = editor_client.get("/?status=all").content.decode()
    assert "今天北京的天气很好" in html and f"文章 {a.id}" not in html
    html = editor_client.get("/?status=all&q=不存在的词").content.decode()
    assert 'href="/articles/?q=%E4%B8%8D%E5%AD%98%E5%9C%A8%E7%9A%84%E8%AF%8D"' in html


def test_queue_figures_follow_the_filters_and_the_search(editor_client, chain):
    far = article(20, body="完全不同的一篇文章，讲的是上海的交通。", source="新华社")
    near = article(21, body="完全不同的一篇文章，讲的是上海的交通状况。", source="新华社")
    Match.objects.create(a=far, b=near, kind="near", distance=1, similarity=0.9)
    Decision.objects.create(a=far, b=near, verdict="duplicate")
    counts = editor_client.get("/?status=all").context["counts"]
    assert (counts["clusters"], counts["articles"], counts["waiting"], counts["matches"]) == (
        2, 5, 1, 3
    )  # fmt: skip
    # One cluster from 新华社, reviewed: the headline counts what the list shows.
    counts = editor_client.get("/?source=新华社").context["counts"]
    assert (counts["clusters"], counts["articles"], counts["waiting"], counts["listed"]) == (
        0, 0, 0, 0
    )  # fmt: skip
    counts = editor_client.get("/?source=新华社&status=reviewed").context["counts"]
    assert (counts["clusters"], counts["articles"], counts["waiting"], counts["listed"]) == (
        1, 2, 0, 1
    )  # fmt: skip
    counts = editor_client.get("/?q=公园散步").context["counts"]
    assert (counts["clusters"], counts["articles"], counts["matches"]) == (1, 3, 2)


def test_queue_empty_state_says_what_to_do(editor_client):
    response = editor_client.get("/")
    assert response.status_code == 200
    assert "empty" in response.content.decode()


def test_cluster_page_shows_members_paths_and_distances(editor_client, chain):
    a, b, c = chain
    response = editor_client.get(f"/clusters/{c.id}/")
    assert response.status_code == 200
    assert response.context["members"] is not None
    rows = response.context["rows"]
    assert [r["member"].article_id for r in rows] == [a.id, b.id, c.id]
    assert [r["member"].via for r in rows] == [None, a.id, a.id]
    assert rows[1]["distance"] == 2 and rows[1]["similarity"] == "0.810"
    assert rows[2]["distance"] == 3 and rows[2]["similarity"] == "0.620"
    html = response.content.decode()
    assert 'name="pair"' in html and 'data-act="d"' in html
    assert XSS not in html


def test_cluster_page_reaches_a_far_fingerprint_copy_directly(editor_client, chain):
    a, _b, c = chain
    Match.objects.filter(a=a, b=c).update(distance=9, similarity=0.9)
    rows = editor_client.get(f"/clusters/{a.id}/").context["rows"]
    far = next(r for r in rows if r["member"].article_id == c.id)
    assert (far["member"].via, far["member"].hops, far["steps"]) == (a.id, 1, "")
    assert far["similarity"] == "0.900" and far["edge"]["distance"] == 9


def test_cluster_page_of_an_unclustered_article_explains(editor_client, chain):
    response = editor_client.get(f"/clusters/{chain[2].id}/?near=0.7")
    assert response.status_code == 200
    assert response.context["members"] is None


def test_bad_ids_are_404(editor_client, chain):
    assert editor_client.get("/clusters/999999/").status_code == 404
    assert editor_client.get(f"/compare/{chain[0].id}/999999/").status_code == 404
    assert editor_client.get(f"/compare/{chain[0].id}/{chain[0].id}/").status_code == 404


def test_compare_highlights_word_changes_and_escapes_text(editor_client, chain):
    a, _b, c = chain
    response = editor_client.get(f"/compare/{a.id}/{c.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<mark class="del">' in html and '<mark class="ins">' in html
    assert "alert(1)" not in html  # a body with markup is shown as its text: scripts go
    assert XSS not in html


def test_queue_escapes_titles(editor_client, chain):
    Article.objects.filter(id=chain[0].id).update(title=XSS)
    html = editor_client.get("/").content.decode()
    assert XSS not in html and "&lt;script&gt;" in html


def test_cluster_page_escapes_titles(editor_client, chain):
    Article.objects.filter(id=chain[1].id).update(title=XSS, source="<b>src</b>")
    html = editor_client.get(f"/clusters/{chain[0].id}/").content.decode()
    assert XSS not in html and "&lt;script&gt;" in html and "<b>src" not in html


def test_compare_never_links_a_javascript_url(editor_client, chain):
    Article.objects.filter(id=chain[0].id).update(url="javascript:alert(1)")
    html = editor_client.get(f"/compare/{chain[0].id}/{chain[1].id}/").content.decode()
    assert "javascript:alert" not in html


def test_compare_aligns_shared_passages_of_partial_copies(editor_client):
    first = article(1, body="第一段讲的是北京的天气。\n\n第二段讲公园里的人们在散步和跑步。")
    second = article(2, body="网站导航 首页 新闻\n\n第二段讲公园里的人们在散步和跑步。")
    Match.objects.create(
        a=first, b=second, kind="partial", distance=20, similarity=0.5, shared_passages=[[0, 0]]
    )
    response = editor_client.get(f"/compare/{second.id}/{first.id}/")
    assert len(response.context["shared"]) == 1
    html = response.content.decode()
    assert "公园" in html
    # A partial copy's similarity is named for what it is: a share of the smaller article.
    assert "较短文章被包含的比例</span> 0.500" in html  # the test client reads Chinese


def test_duplicate_decision_is_recorded_with_who_and_when(editor_client, editor, chain):
    a, b, _c = chain
    response = editor_client.post(
        "/decisions/", {"pick": f"duplicate:{b.id}:{a.id}:0", "next": f"/clusters/{a.id}/"}
    )
    assert response.status_code == 302 and response["Location"] == f"/clusters/{a.id}/"
    decision = Decision.objects.get()
    assert (decision.a_id, decision.b_id, decision.verdict) == (a.id, b.id, "duplicate")
    assert decision.decided_by == editor and decision.decided_at


def test_rejected_pair_stays_in_place_on_the_cluster_page_but_leaves_the_queue(
    editor_client, chain
):
    a, b, _c = chain
    Match.objects.create(a=a, b=article(4), kind="near", distance=1, similarity=0.95)
    before = editor_client.get(f"/clusters/{a.id}/").context["rows"]
    editor_client.post("/decisions/", {"pick": f"not_duplicate:{a.id}:{b.id}:0"})
    response = editor_client.get(f"/clusters/{a.id}/")
    rows = response.context["rows"]
    # The same rows in the same order: the next click lands on the row the editor meant.
    assert [r["member"].article_id for r in rows] == [r["member"].article_id for r in before]
    rejected = next(r for r in rows if r["member"].article_id == b.id)
    assert rejected["edge"]["decision"].verdict == "not_duplicate"
    assert 'class=" decided"' in response.content.decode()
    # The queue no longer joins them: b, a copy of nothing else, is in no cluster.
    assert editor_client.get("/").context["counts"]["articles"] == 3
    assert editor_client.get("/queue/results/?status=all").context["counts"]["clusters"] == 1


def test_undo_takes_a_decision_back_and_keeps_the_history(editor_client, chain):
    a, b, _c = chain
    editor_client.post("/decisions/", {"pick": f"not_duplicate:{a.id}:{b.id}:0"})
    first = Decision.objects.get()
    response = editor_client.post(
        "/decisions/", {"pick": f"undone:{a.id}:{b.id}:{first.id}"}, follow=True
    )
    assert [d.verdict for d in Decision.objects.order_by("id")] == ["not_duplicate", "undone"]
    assert "重新等待审核" in response.content.decode()
    row = next(
        r
        for r in editor_client.get(f"/clusters/{a.id}/").context["rows"]
        if r["member"].article_id == b.id
    )
    assert row["edge"]["decision"] is None and row["edge"]["undone"]
    assert editor_client.get("/").context["counts"]["articles"] == 3  # joined again
    # Nothing is left to undo; a stale undo is refused like any stale decision.
    undone = Decision.objects.order_by("-id").first()
    editor_client.post("/decisions/", {"pick": f"undone:{a.id}:{b.id}:{undone.id}"})
    editor_client.post("/decisions/", {"pick": f"undone:{a.id}:{b.id}:{first.id}"})
    assert Decision.objects.count() == 2


def test_the_last_pair_decided_says_none_is_left(editor_client, chain):
    a, b, c = chain
    for x, y in ((a, b), (a, c)):
        editor_client.post("/decisions/", {"pick": f"duplicate:{x.id}:{y.id}:0"})
    html = editor_client.get(f"/compare/{a.id}/{c.id}/").content.decode()
    assert 'id="next-pair-none"' in html and "这个簇里已没有未审核的对" in html


def test_deciding_side_by_side_goes_on_to_the_next_undecided_pair(editor_client, chain):
    a, b, c = chain
    page = editor_client.get(f"/compare/{a.id}/{b.id}/")
    assert page.context["next_url"] == f"/compare/{a.id}/{c.id}/?near=0&partial=0"
    html = page.content.decode()
    assert f'name="next" value="/compare/{a.id}/{c.id}/?near=0&amp;partial=0"' in html
    response = editor_client.post(
        "/decisions/",
        {
            "pick": f"duplicate:{a.id}:{b.id}:0",
            "next": page.context["next_url"],
            "here": f"/compare/{a.id}/{b.id}/",
        },
    )
    assert response["Location"] == page.context["next_url"]
    last = editor_client.get(f"/compare/{a.id}/{c.id}/")
    assert "next_url" not in last.context  # a ~ b is decided: none is left
    html = last.content.decode()
    # a ~ c waits: it is the last undecided pair, not "none left" beside "waiting".
    assert 'id="next-pair-none"' in html and "这是最后一对" in html
    # Undo stays on the pair it undid.
    seen = Decision.objects.get().id
    here = f"/compare/{a.id}/{b.id}/"
    response = editor_client.post(
        "/decisions/",
        {"pick": f"undone:{a.id}:{b.id}:{seen}", "next": "/elsewhere/", "here": here},
    )
    assert response["Location"] == here


def test_whole_cluster_decided_at_once_including_pairs_not_on_screen(
    editor_client, chain, monkeypatch
):
    a, b, c = chain
    monkeypatch.setattr("webui.cluster_page.MEMBERS_PER_PAGE", 2)  # c is on page 2
    page = editor_client.get(f"/clusters/{a.id}/")
    assert len(page.context["rows"]) == 2
    assert 'id="cluster-all-duplicate"' in page.content.decode()
    Decision.objects.create(a=a, b=b, verdict="not_duplicate")  # decided: left alone
    response = editor_client.post(
        "/decisions/cluster/",
        {"cluster": a.id, "verdict": "duplicate", "next": f"/clusters/{a.id}/"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"/clusters/{a.id}/"
    latest = {(d.a_id, d.b_id): d.verdict for d in Decision.objects.order_by("id")}
    assert latest == {(a.id, b.id): "not_duplicate", (a.id, c.id): "duplicate"}
    again = editor_client.post("/decisions/cluster/", {"cluster": a.id, "verdict": "duplicate"})
    assert again.status_code == 302 and Decision.objects.count() == 2  # nothing waits
    bad = editor_client.post("/decisions/cluster/", {"cluster": "x", "verdict": "duplicate"})
    assert bad.status_code == 302 and Decision.objects.count() == 2


def test_two_unmatched_articles_side_by_side_claim_no_cluster(editor_client, chain):
    a, _b, _c = chain
    lone = article(9)
    html = editor_client.get(f"/compare/{a.id}/{lone.id}/").content.decode()
    assert 'id="next-pair-none"' not in html


def test_stale_decision_is_refused_with_who_and_when(editor_client, django_user_model, chain):
    a, b, _c = chain
    other = user_in(django_user_model, "editor", "wang.fang")
    Decision.objects.create(a=a, b=b, verdict="not_duplicate", decided_by=other)
    response = editor_client.post(
        "/decisions/", {"pick": f"duplicate:{a.id}:{b.id}:0"}, follow=True
    )
    text = response.content.decode()
    assert "wang.fang" in text
    assert Decision.objects.count() == 1


def test_decision_on_the_latest_seen_supersedes(editor_client, chain):
    a, b, _c = chain
    first = Decision.objects.create(a=a, b=b, verdict="not_duplicate")
    editor_client.post("/decisions/", {"pick": f"duplicate:{a.id}:{b.id}:{first.id}"})
    assert Decision.objects.order_by("-id").first().verdict == "duplicate"


@pytest.mark.parametrize(
    "pick", ["", "maybe:1:2:0", "duplicate:x:y:0", "duplicate:1:1:0", "duplicate:{a}:{b}:77"]
)
def test_bad_decision_input_records_nothing(editor_client, chain, pick):
    pick = pick.format(a=chain[0].id, b=chain[1].id)
    response = editor_client.post("/decisions/", {"pick": pick}, follow=True)
    assert response.status_code == 200
    assert not Decision.objects.exists()


def test_post_only_urls_refuse_get(editor_client):
    for url in ["/decisions/", "/decisions/bulk/", "/decisions/original/"]:
        assert editor_client.get(url).status_code == 405


def test_missing_csrf_token_is_refused(editor, chain):
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    response = client.post("/decisions/", {"pick": f"duplicate:{chain[0].id}:{chain[1].id}:0"})
    assert response.status_code == 403
    response = client.post("/decisions/cluster/", {"cluster": chain[0].id, "verdict": "duplicate"})
    assert response.status_code == 403
    assert Client().post("/decisions/cluster/", {"cluster": chain[0].id}).status_code == 302
    assert not Decision.objects.exists()


def test_bulk_records_every_selected_pair_and_reports_conflicts(editor_client, chain):
    a, b, c = chain
    stale = Decision.objects.create(a=b, b=c, verdict="duplicate")
    response = editor_client.post(
        "/decisions/bulk/",
        {"verdict": "not_duplicate", "pair": [f"{a.id}:{b.id}:0", f"{b.id}:{c.id}:0"]},
        follow=True,
    )
    assert Decision.objects.exclude(id=stale.id).count() == 1
    assert f"{b.id} ~ {c.id}" in response.content.decode()  # which pair to look at again


def test_bulk_without_a_selection_says_so(editor_client, chain):
    response = editor_client.post("/decisions/bulk/", {"verdict": "duplicate"}, follow=True)
    assert not Decision.objects.exists()
    assert response.status_code == 200


def test_choosing_the_original_changes_the_cluster_original(editor_client, chain):
    a, b, c = chain
    editor_client.post("/decisions/original/", {"original": c.id, "seen_original": 0, "near": 0})
    response = editor_client.get(f"/clusters/{a.id}/")
    assert response.context["rows"][0]["member"].article_id == c.id
    # A second editor who saw no choice is refused.
    editor_client.post("/decisions/original/", {"original": b.id, "seen_original": 0, "near": 0})
    assert Decision.objects.filter(verdict="original").count() == 1


def test_original_outside_the_cluster_is_refused(editor_client, chain):
    lonely = article(9)
    editor_client.post("/decisions/original/", {"original": lonely.id, "seen_original": 0})
    editor_client.post("/decisions/original/", {"original": "abc"})
    assert not Decision.objects.exists()


def test_exports_stream_csv_with_a_header(editor_client, editor, chain):
    a, b, _c = chain
    Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=editor, note="同一篇")
    response = editor_client.get("/export/decisions.csv")
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0][:4] == ["decision", "article_a", "article_b", "verdict"]
    assert rows[1][1:5] == [str(a.id), str(b.id), "duplicate", "li.wei"]

    response = editor_client.get("/export/clusters.csv?near=0.5")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0][:3] == ["cluster", "article", "role"]
    assert [r[2] for r in rows[1:]] == ["original", "member", "member"]
    assert editor_client.get("/export/clusters.csv?near=zz").status_code == 400
    assert editor_client.get("/export/clusters.csv?k=zz").status_code == 200  # k: ignored


def test_cluster_export_follows_the_queues_filters(editor_client, chain):
    a, _b, _c = chain
    other = [article(n, source="新华社") for n in (4, 5)]
    Match.objects.create(a=other[0], b=other[1], kind="near", distance=1, similarity=0.9)

    def exported(query: str) -> list[str]:
        response = editor_client.get(f"/export/clusters.csv?{query}")
        _head, *rows = csv.reader(
            io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))
        )
        return sorted({r[0] for r in rows})  # the clusters, by their originals

    assert exported("") == sorted([str(a.id), str(other[0].id)])
    assert exported("source=新华社") == [str(other[0].id)]
    assert exported("source=新华社&status=reviewed") == []  # none reviewed yet
    assert exported("q=不在任何文章里") == []
    assert editor_client.get("/export/clusters.csv?from=yesterday").status_code == 400
    # The queue's link carries its filters.
    html = editor_client.get("/?source=新华社").content.decode()
    assert "/export/clusters.csv?near=0&amp;partial=0&amp;source=" in html


def test_exports_name_articles_as_editors_know_them(editor_client, editor, chain):
    a, b, _c = chain
    Article.objects.filter(id=a.id).update(external_id="xh-1", url="https://example.com/1")
    Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=editor)
    response = editor_client.get("/export/decisions.csv")
    head, row = list(
        csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    named = dict(zip(head, row, strict=True))
    assert (named["a_external_id"], named["a_title"], named["a_source"]) == (
        "xh-1", "标题 1", "人民日报"
    )  # fmt: skip
    assert (named["a_url"], named["b_external_id"], named["b_title"]) == (
        "https://example.com/1", "", "标题 2"
    )  # fmt: skip
    response = editor_client.get("/export/clusters.csv")
    head, *rows = list(
        csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert head[-3:] == ["external_id", "title", "url"]
    by_article = {r[1]: dict(zip(head, r, strict=True)) for r in rows}
    assert by_article[str(a.id)]["external_id"] == "xh-1"
    assert by_article[str(b.id)]["title"] == "标题 2"


def test_decision_on_two_articles_that_never_matched_is_refused(editor_client, chain):
    _a, b, c = chain  # b and c are in one cluster, copies of a, but never matched each other
    response = editor_client.post(
        "/decisions/", {"pick": f"duplicate:{b.id}:{c.id}:0"}, follow=True
    )
    assert "从未匹配" in response.content.decode() or "never matched" in response.content.decode()
    response = editor_client.post(
        "/decisions/bulk/",
        {"verdict": "not_duplicate", "pair": [f"{b.id}:{c.id}:0", f"{c.id}:{article(9).id}:0"]},
        follow=True,
    )
    assert not Decision.objects.exists()


def test_csv_exports_neutralise_formula_cells(editor_client, editor, chain):
    a, b, _c = chain
    notes = ['=HYPERLINK("http://evil")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\tx", "\rx"]
    for note in notes:
        Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=editor, note=note)
    Article.objects.filter(pk=a.pk).update(source="=1+1")
    response = editor_client.get("/export/decisions.csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert [r[6] for r in rows[1:]] == ["'" + note for note in notes]
    response = editor_client.get("/export/clusters.csv?near=0.5")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert "'=1+1" in [r[8] for r in rows[1:]]


@pytest.mark.parametrize(
    ("cell", "guarded"),
    [
        ('\ufeff=HYPERLINK("http://evil")', True),  # after a byte order mark
        ("\u200b+cmd|' /C calc'!A0", True),  # after a zero-width space
        ("  =1+1", True),
        ("\u3000@SUM(1)", True),  # an ideographic space
        ('＝HYPERLINK("http://evil")', True),  # full-width
        ("＋1+2", True),
        ("－2+3", True),
        ("＠SUM(1)", True),
        ("﹦1+1", True),  # small form
        ("新华社电 =1+1", False),
        ("100％", False),
        ("", False),
        (12, False),
    ],
)
def test_csv_cells_starting_with_a_disguised_formula_are_text(cell, guarded):
    from webui.review_views import csv_cell

    assert csv_cell(cell) == ("'" + cell if guarded else cell)


def test_csv_export_guards_a_full_width_formula(editor_client, editor, chain):
    a, b, _c = chain
    Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=editor, note="＝1+1")
    Article.objects.filter(pk=a.pk).update(title='\ufeff=HYPERLINK("http://evil")')
    response = editor_client.get("/export/decisions.csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[1][6] == "'＝1+1" and rows[1][8] == '\'\ufeff=HYPERLINK("http://evil")'


def test_compare_links_article_urls_only_when_they_are_web_addresses(editor_client, chain):
    a, b, _c = chain
    Article.objects.filter(pk=a.pk).update(url="javascript:alert(1)")
    Article.objects.filter(pk=b.pk).update(url="https://example.com/b")
    html = editor_client.get(f"/compare/{a.id}/{b.id}/").content.decode()
    assert 'href="https://example.com/b"' in html
    assert 'href="javascript:' not in html


@pytest.mark.django_db(transaction=True)
def test_two_editors_deciding_at_once_one_is_refused(django_user_model):
    import threading

    from django.db import connection

    from dedup import services

    a, b = article(1), article(2)
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.81)
    users = [user_in(django_user_model, "editor", f"e{i}") for i in range(2)]
    barrier = threading.Barrier(2)
    outcomes = []

    def decide(user, verdict):
        try:
            barrier.wait()
            services.decision_record(a_id=a.id, b_id=b.id, verdict=verdict, user=user, seen=0)
            outcomes.append("ok")
        except services.DecisionConflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=decide, args=(users[0], "duplicate")),
        threading.Thread(target=decide, args=(users[1], "not_duplicate")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict", "ok"]
    assert Decision.objects.count() == 1


def test_two_stories_sharing_a_sentence_are_two_clusters_linked_on_both_pages(editor_client):
    # Story A: a and its repost; story B (later): b and its repost. b quotes one sentence of
    # a: a partial match carrying under half of b.
    a, a2 = article(1), article(2)
    b, b2 = article(3), article(4)
    Match.objects.create(a=a, b=a2, kind="near", distance=1, similarity=0.9)
    Match.objects.create(a=b, b=b2, kind="near", distance=1, similarity=0.9)
    Match.objects.create(a=a, b=b, kind="partial", distance=20, similarity=0.42)
    counts = editor_client.get("/?status=all").context["counts"]
    assert (counts["clusters"], counts["articles"], counts["matches"]) == (2, 4, 2)
    page = editor_client.get(f"/clusters/{a.id}/")
    assert [r["member"].article_id for r in page.context["rows"]] == [a.id, a2.id]
    (link,) = page.context["links"]
    assert (link["here"], link["other"], link["quotes"]) == (a.id, b.id, False)
    assert link["target"] == f"/clusters/{b.id}/?near=0&partial=0"
    html = page.content.decode()
    assert "被引用于" in html and f'href="/clusters/{b.id}/?near=0&amp;partial=0"' in html
    page = editor_client.get(f"/clusters/{b2.id}/")
    (link,) = page.context["links"]
    assert (link["here"], link["other"], link["quotes"]) == (b.id, a.id, True)
    assert "引用了" in page.content.decode()
    # Next pair stays in the story: a ~ b is no pair of either cluster.
    assert "next_url" not in editor_client.get(f"/compare/{b.id}/{b2.id}/").context
    # The article page says which match is the story and which a link.
    rows = editor_client.get(f"/articles/{b.id}/").context["matches"]
    relations = {r["other"].id: (r["story"]["relation"], r["story"]["link"]) for r in rows}
    assert relations == {b2.id: ("同一报道", False), a.id: ("引用了", True)}


def test_a_copy_of_a_copy_is_linked_not_chained(editor_client):
    a, b, c = article(1), article(2), article(3)
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.81)
    Match.objects.create(a=b, b=c, kind="near", distance=3, similarity=0.62)
    page = editor_client.get(f"/clusters/{a.id}/")
    assert [r["member"].article_id for r in page.context["rows"]] == [a.id, b.id]
    assert [(x["here"], x["other"], x["quotes"]) for x in page.context["links"]] == [
        (b.id, c.id, False)
    ]
    assert page.context["links"][0]["target"] == f"/articles/{c.id}/"  # c is in no cluster
    alone = editor_client.get(f"/clusters/{c.id}/")
    assert alone.context["members"] is None
    assert f'<a href="/articles/{c.id}/">它的页面</a>列出了与它关联的报道' in alone.content.decode()
    rows = editor_client.get(f"/articles/{c.id}/").context["matches"]
    assert [(r["story"]["relation"], r["story"]["url"]) for r in rows] == [
        ("引用了", f"/clusters/{a.id}/?near=0&partial=0")
    ]
