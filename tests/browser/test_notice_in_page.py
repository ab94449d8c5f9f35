"""In a real browser: a notice copied into another site's page, found by its facts (fact keys,
dedup.engine.facts) though its passage key is its template's, is in the queue as a partial
copy in the notice's cluster, and its compare page shows the notice as the passage the two
share."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from dedup import services
from dedup.models import Match
from tests.engine.test_fact_keys import siblings_and_copy

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_notice_in_a_page_is_a_partial_copy_on_the_compare_page(page, sign_in, shot):
    texts, original = siblings_and_copy()
    rows = [{"title": f"notice {n}", "body": t} for n, t in enumerate(texts[:-1])]
    rows.append({"title": "a page quoting notice 0", "body": texts[-1]})
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    notice, copy = ids[original], ids[-1]

    assert Match.objects.filter(a_id=notice, b_id=copy, kind="partial").exists()
    sign_in(page, "editor", f"/clusters/{notice}/")
    expect(page.locator("table.members tbody")).to_contain_text("a page quoting notice 0")
    shot(page, "20-cluster-notice")

    page.goto(f"/compare/{notice}/{copy}/")
    expect(page).to_have_url(re.compile(rf"/compare/{notice}/{copy}/"))
    shared = page.locator("section.shared")
    expect(shared).to_contain_text("Enquiries")
    expect(shared).to_contain_text("Residents are advised to make arrangements in advance")
    shot(page, "21-compare-notice")
    assert not page.js_errors
