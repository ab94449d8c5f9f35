"""In a real browser: sign-in, the roles' limits, a bulk upload watched to the end, the overview."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from tests.texts import ARTICLE, EXACT, NEAR, OTHER, stranger


def jsonl_file(tmp_path, rows: list[dict], name: str = "articles.jsonl"):
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_anonymous_visitor_signs_in_in_chinese_or_english(page, users, shot):
    page.goto("/upload/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/upload/"))
    expect(page.locator("h1")).to_have_text("登录")
    shot(page, "01-sign-in")
    page.click("button[name=language][value=en]")
    expect(page.locator("h1")).to_have_text("Sign in")
    page.fill("#id_username", "editor")
    page.fill("#id_password", "wrong")
    page.click("form.stack button[type=submit]")
    expect(page.locator("[role=alert]")).to_contain_text("do not match")
    page.fill("#id_username", "editor")
    page.fill("#id_password", "browser-pw")
    page.click("form.stack button[type=submit]")
    expect(page).to_have_url(re.compile(r"/upload/$"))
    expect(page.locator("h1")).to_have_text("Upload articles")
    expect(page.locator(".nav")).to_contain_text("Queue")
    shot(page, "01b-upload-english")


def test_editor_cannot_reach_admin_pages(page, sign_in, shot):
    sign_in(page, "editor", "/upload/")
    expect(page.locator(".nav")).not_to_contain_text("概览")
    response = page.goto("/overview/")
    assert response.status == 403
    expect(page.locator("h1")).to_have_text("你的账号无权打开此页面")
    shot(page, "06-editor-403")
    response = page.goto("/admin/dedup/settings/")
    # Django admin sends a non-staff user to its own sign-in, which says they are not allowed.
    expect(page).to_have_url(re.compile(r"/admin/login/"))
    expect(page.locator("#id_password")).to_be_visible()
    assert page.locator("form#settings_form").count() == 0
    page.goto("/upload/")
    page.click(".usermenu summary")
    page.click(".usermenu button[type=submit]")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    response = page.goto("/upload/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/upload/"))


def test_upload_shows_progress_until_done_with_row_errors(
    page, sign_in, shot, tmp_path, worker, wait_until
):
    sign_in(page, "editor", "/upload/")
    expect(page.locator("#uploads-empty")).to_be_visible()
    shot(page, "02-upload-empty")
    rows = [
        {"title": "原文", "text": ARTICLE, "source": "新华社"},
        {"title": "近似转载", "text": NEAR, "source": "转载"},
        {"title": "完全相同", "text": EXACT, "source": "转载"},
        {"title": "无关", "text": OTHER},
        *({"title": f"陌生{i}", "text": stranger(i)} for i in range(4)),
        {"title": "no text here"},
        "{not json",
    ]
    page.set_input_files("#id_files", str(jsonl_file(tmp_path, rows)))
    # Choosing a file lists it; the button sends it, once, with the source for rows naming
    # none.
    expect(page.locator("#upload-chosen")).to_contain_text("articles.jsonl")
    page.fill("#id_source", "人民网")
    page.fill("#id_published", "2024-05-01")
    page.click("#upload-form button[type=submit]")
    row = page.locator("#uploads .upload").first
    expect(row.locator(".upload-name")).to_have_text("articles.jsonl")
    expect(row).to_have_class(re.compile(r"state-done"), timeout=30_000)
    expect(row.locator("[data-field=percent]")).to_have_text("100")
    expect(row.locator("[data-field=accepted]")).to_have_text("8")
    expect(row.locator("[data-field=rejected]")).to_have_text("2")
    expect(row.locator("[data-field=exact]")).to_have_text("1")
    errors = row.locator(".row-errors")
    expect(errors).to_have_attribute("open", "")
    expect(errors.locator("tbody tr")).to_have_count(2)
    expect(errors.locator("tbody tr").first.locator("td").first).to_have_text("9")
    shot(page, "03-upload-done")
    assert page.js_errors == []
    from django.utils import timezone

    from dedup.models import Article, UploadBatch

    assert UploadBatch.objects.count() == 1
    assert Article.objects.get(title="无关").source == "人民网"
    assert Article.objects.get(title="原文").source == "新华社"  # the row's own
    published = timezone.localtime(Article.objects.get(title="无关").published_at)
    assert published.strftime("%Y-%m-%d %H:%M") == "2024-05-01 00:00"  # the site's midnight
    row.locator(".upload-name").click()
    expect(page.locator("h1")).to_have_text("articles.jsonl")
    expect(page.locator(".upload-articles tbody tr")).to_have_count(8)
    expect(page.locator(".upload-articles")).to_contain_text("完全相同于")  # the exact copy
    shot(page, "03b-upload-page")


def test_u_opens_the_file_field_dropped_files_upload_bad_ones_are_refused(
    page, sign_in, tmp_path, shot
):
    sign_in(page, "editor", "/upload/")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    expect(page.locator("#id_files")).to_have_attribute("data-key", "u")  # upload.js ran
    # The shortcut clicks the file field (whether headless Chromium then shows a chooser
    # depends on window focus, so the files are set on the field directly).
    page.evaluate(
        "document.getElementById('id_files').addEventListener('click', () => window.__u = 1)"
    )
    page.keyboard.press("u")
    assert page.evaluate("window.__u") == 1
    page.set_input_files("#id_files", [str(empty), str(pdf)])
    page.click("#upload-form button[type=submit]")
    errors = page.locator("#upload-errors li")
    expect(errors).to_have_count(2)
    expect(errors.first).to_contain_text("empty.jsonl")
    expect(errors.last).to_contain_text("report.pdf")
    expect(page.locator("#uploads-empty")).to_be_visible()
    shot(page, "04-upload-refused")

    dropped = page.evaluate_handle(
        """() => {
            const data = new DataTransfer();
            data.items.add(new File(['{"text": "拖放上传的文章"}\\n'], "dropped.jsonl"));
            return data;
        }"""
    )
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": dropped})
    expect(page.locator("#upload-chosen")).to_contain_text("dropped.jsonl")
    page.click("#upload-form button[type=submit]")
    page.click("#upload-form button[type=submit]")  # nothing is left to send twice
    row = page.locator("#uploads .upload").first
    expect(row.locator(".upload-name")).to_have_text("dropped.jsonl")
    expect(errors).to_have_count(0)
    from dedup.models import UploadBatch

    assert list(UploadBatch.objects.values_list("name", flat=True)) == ["dropped.jsonl"]


def test_admin_sees_the_overview(page, sign_in, shot, tmp_path):
    from dedup import services
    from dedup.models import Match

    a, b, c = services.articles_ingest(rows=[{"text": ARTICLE}, {"text": NEAR}, {"text": OTHER}])
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.93, version="v")
    Match.objects.create(a=a, b=c, kind="near", distance=4, similarity=0.41, version="v")
    sign_in(page, "admin", "/overview/")
    expect(page.locator("h1")).to_have_text("概览")
    expect(page.locator("svg.chart rect")).to_have_count(2)
    expect(page.locator("#workers")).to_be_visible()
    shot(page, "05-overview")
    assert page.js_errors == []


def test_pages_run_their_scripts_under_the_content_security_policy(page, sign_in):
    from dedup import services
    from dedup.models import Match

    a, b = services.articles_ingest(
        rows=[{"text": ARTICLE, "url": "javascript:alert(1)"}, {"text": NEAR}]
    )
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.93, version="v")
    violations = []
    page.on("console", lambda m: "Content Security Policy" in m.text and violations.append(m.text))
    sign_in(page, "admin", "/")
    pages = ["/", f"/clusters/{a.id}/", f"/compare/{a.id}/{b.id}/", "/upload/", "/overview/",
             "/sources/"]  # fmt: skip
    for url in [*pages, "/admin/", "/admin/dedup/article/", f"/admin/dedup/article/{a.id}/change/"]:
        response = page.goto(url)
        assert response.status == 200, url
        assert "script-src 'self';" in response.headers["content-security-policy"], url
        if url in pages:  # the site's own script ran: it defines window.dedup
            assert page.evaluate("typeof window.dedup") == "object", url
        page.wait_for_load_state("networkidle")
    assert page.locator("a[href^='javascript:']").count() == 0
    assert violations == [] and page.js_errors == []
