"""In a real browser: from the sources overview to a source, to one of its copies, to the
compare page; a queue open in one session shows an article uploaded in another without a
reload; a decision by one editor shows on another editor's open cluster page."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD
from tests.texts import ARTICLE

WHEN = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)
POLL_MS = 400


def stored(n: int, source: str, hours: int, title: str = ""):
    from dedup.models import Article

    body = f"今天北京的天气很好，我们去公园散步。第{n}篇文章的内容在这里。"
    return Article.objects.create(
        title=title or f"标题 {n}",
        body=body,
        source=source,
        length=len(body),
        dated_at=WHEN + dt.timedelta(hours=hours),
        content_hash=Article.hash_body(body),
        status="done",
    )


def matched(x, y, kind="near", similarity=0.95):
    from dedup.models import Match

    a, b = sorted((x.pk, y.pk))
    return Match.objects.create(a_id=a, b_id=b, kind=kind, similarity=similarity, distance=2)


def signed_in(browser, live_server, username: str):
    other = browser.new_context(base_url=live_server.url, locale="zh-CN")
    other.set_default_timeout(10_000)
    page = other.new_page()
    page.goto("/accounts/login/?next=/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form.stack button[type=submit]")
    page.wait_for_load_state()
    return other, page


def test_overview_to_a_source_to_a_copy_to_compare(page, sign_in, shot):
    original = stored(1, "新华社", 0, "<b>原文</b> 新年讲话")
    copy = stored(2, "人民日报", 3, "新年讲话（转载）")
    matched(original, copy)
    matched(stored(3, "新华社", 1), stored(4, "澎湃", 30), kind="partial", similarity=0.6)
    sign_in(page, "editor", "/sources/")
    expect(page.locator("#copy-graph line")).to_have_count(2)
    expect(page.locator("#copy-graph circle")).to_have_count(3)
    shot(page, "sources-overview")
    page.locator("#most-copied a", has_text="新华社").click()
    expect(page.locator("h1")).to_have_text("新华社")
    row = page.locator("#copied tbody tr", has_text="新年讲话（转载）")
    expect(row).to_contain_text("<b>原文</b> 新年讲话")  # shown as text, not markup
    expect(row).to_contain_text("3")  # hours of lag
    shot(page, "sources-source")
    row.locator("a.compare").click()
    expect(page).to_have_url(re.compile(rf"/compare/{original.pk}/{copy.pk}/$"))
    expect(page.locator("h1")).to_contain_text(str(copy.pk))
    assert page.js_errors == []


@pytest.fixture
def fast_polls(settings):
    settings.DEDUP_LIVE_POLL_MS = POLL_MS


def test_an_upload_elsewhere_shows_in_an_open_queue(
    browser, live_server, page, sign_in, worker, fast_polls, tmp_path, shot
):
    def upload(on, rows, name):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        on.goto("/upload/")
        on.set_input_files("#id_files", str(path))
        on.click("#upload-form button[type=submit]")
        done = on.locator("#uploads .upload").first
        expect(done).to_have_class(re.compile(r"state-done"), timeout=30_000)

    other_context, other = signed_in(browser, live_server, "admin")
    first = [
        {"title": "新年讲话（原文）", "text": ARTICLE, "source": "新华社"},
        {
            "title": "新年讲话（改字）",
            "text": ARTICLE.replace("大幅度", "较大幅度"),
            "source": "网易",
        },
    ]
    upload(other, first, "first.jsonl")
    sign_in(page, "editor", "/")
    expect(page.locator("#queue-results")).to_contain_text("新年讲话")
    expect(page.locator("#live-new")).to_be_hidden()
    page.evaluate("window.__kept = 1")  # gone if the page reloads
    late = {"title": "新年讲话（晚到转载）", "text": ARTICLE.replace("人民生活", "群众生活"),
            "source": "论坛"}  # fmt: skip
    upload(other, [late], "late.jsonl")
    badge = page.locator("#live-new")
    expect(badge).to_be_visible(timeout=15_000)
    from dedup.models import Match

    new = Match.objects.count() - 1  # the late article matches both earlier ones
    expect(badge).to_have_text(f"{new} 篇新副本：点击显示")
    shot(page, "live-queue-badge")
    badge.click()
    expect(badge).to_be_hidden()
    expect(page.locator("#queue-results")).to_contain_text("3")  # the cluster has 3 now
    assert page.evaluate("window.__kept") == 1
    assert page.js_errors == []
    other_context.close()


def test_a_decision_by_one_editor_shows_on_anothers_cluster_page(
    browser, live_server, page, sign_in, fast_polls, shot
):
    original = stored(1, "新华社", 0)
    copy = stored(2, "人民日报", 3)
    matched(original, copy)
    sign_in(page, "editor", f"/clusters/{original.pk}/")
    notice = page.locator("#live-decisions")
    expect(notice).to_be_hidden()
    other_context, other = signed_in(browser, live_server, "admin")
    other.goto(f"/compare/{original.pk}/{copy.pk}/")
    other.click("button[name=pick][value^=duplicate]")
    other.wait_for_load_state()
    expect(notice).to_be_visible(timeout=10_000)
    expect(notice).to_contain_text(f"#{original.pk} ~ #{copy.pk}")
    expect(notice).to_contain_text("admin")
    expect(page.locator(f"#a{copy.pk}")).to_have_class(re.compile("changed-elsewhere"))
    shot(page, "live-cluster-decision")
    assert page.js_errors == []
    other_context.close()
