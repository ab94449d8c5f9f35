"""In a real browser: the compare page of two reposts of one story shows the story's
paragraphs as shared on both sides, and folds only the site's footer, which unrelated
articles hold, labelled with their count."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.texts import FOOTER, reposted, stranger


@pytest.fixture
def reposts(transactional_db):
    from dedup import selectors, services

    selectors.table_forget()
    rows = [{"title": f"转载{n}", "body": b + "\n\n" + FOOTER} for n, b in enumerate(reposted(12))]
    rows += [{"title": f"无关{n}", "body": stranger(100 + n) + "\n\n" + FOOTER} for n in range(8)]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    yield ids
    selectors.table_forget()


def test_two_reposts_share_the_storys_text_and_fold_the_footer(page, sign_in, reposts, shot):
    sign_in(page, "editor", "/")
    page.goto(f"/compare/{reposts[1]}/{reposts[2]}/")
    sides = page.locator(".sides").first.locator("article.side .text")
    for n in range(2):
        side = sides.nth(n)
        folded = side.locator("details.aside")
        expect(folded).to_have_count(1)
        expect(folded.locator("summary")).to_have_text("模板文字（8 篇无关文章共有）")
    # The story's paragraphs both hold are not marked as "only on one side".
    marked = " ".join(page.locator(".sides").first.locator("mark").all_inner_texts())
    story = [s for s in reposted(12)[0].split("。") if s]
    held = [s for s in story if s in reposted(12)[1] and s in reposted(12)[2]]
    assert held and not [s for s in held if s in marked]
    shot(page, "60-compare-reposts")
    assert not page.js_errors
