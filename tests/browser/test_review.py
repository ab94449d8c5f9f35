"""In a real browser, the editor's day: upload, watch it finish, open the queue and a cluster,
read the diff, move the threshold, confirm one pair and go on to the next, reject another,
undo, export; find an article by its external id from the top bar and open its match; and the
XSS case."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.texts import ARTICLE, FILLER, OTHER, stranger

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
ROWS = [
    {"title": "新年讲话（原文）", "text": ARTICLE, "source": "新华社", "id": "xh-2024-0001"},
    {
        "title": "新年讲话（改字转载）",
        "text": ARTICLE.replace("持续快速健康", "持续健康").replace("大幅度", "较大幅度"),
        "source": "网易转载",
    },
    {
        "title": "<script>window.__xss=1</script>新年讲话",
        "text": XSS + ARTICLE.replace("人民生活", "群众生活"),
        "source": "论坛转帖",
    },
    {"title": "全省粮食再获丰收", "text": OTHER, "source": "本报", "id": "bb-0042"},
    {
        "title": "全省粮食再获丰收（转载）",
        "text": OTHER.replace("明显成效", "显著成效"),
        "source": "新浪转载",
    },
    {
        "title": "粮食丰收（删节）",
        "text": OTHER.replace("农村改革不断深化，", ""),
        "source": "搜狐转载",
    },
    {"title": "城市交通评论", "text": FILLER[: len(FILLER) // 2], "source": "评论"},
    {
        "title": "城市交通评论（转帖）",
        "text": FILLER[: len(FILLER) // 2].replace("此外，", "另外，"),
    },
    *({"title": f"无关文章{i}", "text": stranger(i)} for i in range(3)),
]


@pytest.fixture
def corpus(page, sign_in, worker, wait_until, tmp_path, shot):
    """Upload the corpus through the upload page and wait until the workers matched it."""
    path = tmp_path / "news.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), "utf-8")
    sign_in(page, "editor", "/upload/")
    page.set_input_files("#id_files", str(path))
    page.click("#upload-form button[type=submit]")
    row = page.locator("#uploads .upload").first
    expect(row).to_have_class(re.compile(r"state-done"), timeout=30_000)
    expect(row.locator("[data-field=accepted]")).to_have_text(str(len(ROWS)))
    from dedup.models import Article

    return {a.title: a.pk for a in Article.objects.all()}


def test_editor_reviews_a_cluster_from_upload_to_export(page, corpus, shot, tmp_path):
    original = corpus["新年讲话（原文）"]
    copy = corpus["新年讲话（改字转载）"]
    page.goto("/")
    expect(page.locator("h1")).to_have_text("待审队列")
    rows = page.locator(".cluster-row")
    talk = rows.filter(has_text="新年讲话（原文）")
    expect(rows).to_have_count(3)
    expect(talk.locator(".size")).to_have_text("3")
    shot(page, "10-queue")

    # The near copies' slider re-draws the list from the stored matches: at 0.95 only the
    # closest copies stay (the talk's page wrapper, the commentary's repost); back at 0 every
    # verified copy is shown again.
    page.locator("#near").fill("0.95")
    expect(page.locator("#near-out")).to_have_text("0.95")
    expect(rows).to_have_count(2)
    expect(talk.locator(".size")).to_have_text("2")
    expect(rows.filter(has_text="全省粮食再获丰收")).to_have_count(0)
    shot(page, "11-queue-near-095")
    page.locator("#near").fill("0")
    expect(rows.filter(has_text="全省粮食再获丰收").locator(".size")).to_have_text("3")
    expect(talk.locator(".size")).to_have_text("3")
    expect(talk.locator("a").first).to_have_attribute("href", re.compile(r"near=0&partial=0"))

    talk.locator("a").first.click()
    expect(page).to_have_url(re.compile(rf"/clusters/{original}/"))
    members = page.locator("table.members tbody tr")
    expect(members).to_have_count(3)
    shot(page, "12-cluster")

    # Side by side: word-level insertions and deletions are highlighted.
    page.locator(f'a[data-act=c][href^="/compare/{original}/{copy}/"]').click()
    expect(page).to_have_url(re.compile(rf"/compare/{original}/{copy}/"))
    expect(page.locator(".sides mark.del").first).to_be_visible()
    expect(page.locator(".sides mark.ins").first).to_be_visible()
    assert page.locator(".sides mark.del").count() >= 2
    shot(page, "13-compare")

    # Confirm this pair with its shortcut: the page goes on to the next undecided pair of the
    # cluster (tests/webui: and says so when none is left).
    page.keyboard.press("d")
    expect(page.locator(".messages")).to_contain_text(f"{original} ~ {copy}")
    expect(page).not_to_have_url(re.compile(rf"/compare/{original}/{copy}/"))
    expect(page.locator(".decide .verdict.none")).to_be_visible()  # one still waiting
    expect(page.locator("#next-pair")).to_be_visible()  # and another after it
    shot(page, "13b-compare-next")

    # Reject a pair on the cluster page: the row stays where it was, marked; undo it, and
    # decide again on the same row.
    page.goto(f"/clusters/{original}/")
    order = members.locator(".meta").all_inner_texts()
    xss_row = page.locator("table.members tbody tr", has_text="论坛转帖")
    xss_row.locator("button[data-act=n]").click()
    expect(page.locator(".messages")).to_be_visible()
    expect(members).to_have_count(3)
    assert members.locator(".meta").all_inner_texts() == order
    expect(xss_row.locator(".verdict.not_duplicate")).to_be_visible()
    expect(xss_row).to_have_class(re.compile("decided"))
    xss_row.locator("button[data-act=z]").click()
    expect(page.locator(".messages")).to_contain_text("重新等待审核")
    expect(xss_row.locator(".verdict.none")).to_be_visible()
    xss_row.locator("button[data-act=n]").click()
    expect(xss_row.locator(".verdict.not_duplicate")).to_be_visible()
    assert members.locator(".meta").all_inner_texts() == order
    shot(page, "14-decided")

    from dedup.models import Decision

    verdicts = sorted(Decision.objects.values_list("verdict", flat=True))
    assert verdicts == ["duplicate", "not_duplicate", "not_duplicate", "undone"]
    # The article's page keeps the history of its decisions.
    page.goto(f"/articles/{original}/")
    expect(page.locator("#history tbody tr")).to_have_count(4)

    page.goto("/")
    with page.expect_download() as info:
        page.locator('a[href="/export/decisions.csv"]').click()
    saved = tmp_path / "decisions.csv"
    info.value.save_as(saved)
    table = list(csv.reader(saved.read_text(encoding="utf-8-sig").splitlines()))
    assert table[0][:4] == ["decision", "article_a", "article_b", "verdict"]
    verdicts = ["duplicate", "not_duplicate", "not_duplicate", "undone"]
    assert sorted(r[3] for r in table[1:]) == verdicts
    assert {r[4] for r in table[1:]} == {"editor"}
    assert page.js_errors == []


def test_script_in_an_article_shows_as_text_and_runs_nothing(page, corpus, shot):
    original = corpus["新年讲话（原文）"]
    hostile = corpus["<script>window.__xss=1</script>新年讲话"]
    page.goto(f"/clusters/{original}/")
    expect(page.locator("table.members")).to_contain_text("<script>window.__xss=1</script>新年讲话")
    page.goto(f"/compare/{original}/{hostile}/")
    # A body with markup is shown as its text: the script and the tag go, the words stay.
    expect(page.locator(".sides")).to_contain_text("群众生活")
    expect(page.locator(".sides")).not_to_contain_text("window.__xss")
    assert page.locator(".sides script, .sides img").count() == 0
    shot(page, "15-xss-as-text")
    page.goto("/")
    expect(page.locator(".cluster-row")).to_have_count(3)
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_editor_finds_an_article_by_its_external_id_and_opens_a_match(page, corpus, shot):
    original = corpus["新年讲话（原文）"]
    copy = corpus["新年讲话（改字转载）"]
    page.goto("/")
    # The top bar's search: "/" focuses it outside the queue; the only exact hit opens.
    page.fill("#top-q", "xh-2024-0001")
    page.press("#top-q", "Enter")
    expect(page).to_have_url(re.compile(rf"/articles/{original}/$"))
    expect(page.locator("h1")).to_have_text("新年讲话（原文）")
    expect(page.locator("[data-field=external_id]")).to_have_text("xh-2024-0001")
    expect(page.locator("#matches tbody tr")).to_have_count(2)
    expect(page.locator(".fulltext")).to_contain_text(ARTICLE[:20])
    shot(page, "20-article")
    Path("/tmp/wt12-shots").mkdir(exist_ok=True)
    page.screenshot(path="/tmp/wt12-shots/article.png", full_page=True)

    # A word finds every article holding it, matched or not; the filters narrow it.
    page.goto("/articles/")
    page.keyboard.press("/")
    page.keyboard.type("粮食")
    page.keyboard.press("Enter")
    hits = page.locator(".hits .hit")
    expect(hits).to_have_count(6)  # the harvest's three, and the talk's three mention it
    expect(hits.first.locator("mark").first).to_have_text("粮食")
    shot(page, "21-search")
    page.screenshot(path="/tmp/wt12-shots/search.png", full_page=True)
    page.select_option("select[name=source]", "本报")
    page.click(".search-form button[type=submit]")
    expect(hits).to_have_count(1)
    page.goto("/articles/?q=bb-0042")  # the only exact hit opens its article
    expect(page.locator("h1")).to_have_text("全省粮食再获丰收")
    page.goto("/articles/?q=文章")  # an article that matches nothing is found too
    expect(page.locator(".hits .hit", has_text="无关文章1")).to_have_count(1)

    # From the article, its match side by side.
    page.goto(f"/articles/{original}/")
    page.locator(f'#matches a[data-compare][href^="/compare/{original}/{copy}/"]').click()
    expect(page).to_have_url(re.compile(rf"/compare/{original}/{copy}/"))
    expect(page.locator(".sides mark.del").first).to_be_visible()
    assert page.js_errors == []
