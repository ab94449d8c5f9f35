"""In a real browser: two stories that share one sentence are two clusters, each listing the
other as a link ("quotes" / "quoted by") that leads to it; the article page says the same."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.webui.conftest import article


@pytest.fixture
def stories(transactional_db):
    from dedup import selectors
    from dedup.models import Match

    selectors.table_forget()
    law, law_copy = article(1, title="地震法修订"), article(2, title="地震法修订（转载）")
    school, school_copy = article(3, title="中小学开学"), article(4, title="中小学开学（转载）")
    Match.objects.create(a=law, b=law_copy, kind="near", distance=1, similarity=0.92)
    Match.objects.create(a=school, b=school_copy, kind="near", distance=2, similarity=0.88)
    # The school story holds one sentence of the law's: under half of the smaller article.
    Match.objects.create(a=law, b=school, kind="partial", distance=20, similarity=0.42)
    yield law, law_copy, school, school_copy
    selectors.table_forget()


def test_editor_follows_a_link_from_one_story_to_the_other(page, sign_in, stories, shot):
    law, _law_copy, school, _school_copy = stories
    sign_in(page, "editor", "/")
    expect(page.locator(".cluster-row")).to_have_count(2)
    page.goto(f"/clusters/{law.id}/")
    expect(page.locator("table.members tbody tr")).to_have_count(2)
    link = page.locator("#links tr.link-row")
    expect(link).to_have_count(1)
    expect(link.locator(".relation")).to_have_text("被引用于")
    shot(page, "50-cluster-links")
    link.locator("a.link-target").click()
    expect(page).to_have_url(re.compile(rf"/clusters/{school.id}/"))
    expect(page.locator("#links tr.link-row .relation")).to_have_text("引用了")
    page.goto(f"/articles/{school.id}/")
    story = page.locator("#matches td.story")
    expect(story).to_have_count(2)
    expect(page.locator("#matches td.story .relation.link")).to_have_text("引用了")
    shot(page, "51-article-links")
    assert not page.js_errors
