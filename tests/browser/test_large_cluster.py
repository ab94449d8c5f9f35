"""In a real browser: page through a cluster of 400 members and 1,000 matches, decide a pair
on a later page with the keyboard and come back to it; decide a filtered queue in bulk."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS
from tests.webui.conftest import article, big_cluster


def seen(page, name: str) -> None:
    """Save what the window shows (a page of 250 rows is too tall to look at whole)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.fixture
def big(transactional_db):
    from dedup import selectors

    selectors.table_forget()
    ids = big_cluster(400, 1000)
    yield ids
    selectors.table_forget()


def test_editor_pages_through_a_large_cluster_and_keeps_the_place(page, sign_in, big):
    from dedup.models import Decision

    sign_in(page, "editor", f"/clusters/{big[0]}/")
    members = page.locator("[data-pager=members]")
    expect(members).to_contain_text("第 1–150 个成员，共 400 个")
    expect(page.locator("table.members tbody tr")).to_have_count(150)
    expect(page.locator("table.edges tbody tr")).to_have_count(100)
    seen(page, "40-large-cluster-page-1")
    members.scroll_into_view_if_needed()
    seen(page, "40-large-cluster-page-1-pager")

    # The other matches, page 2: 601 in all, 100 a page.
    page.locator("[data-pager=pairs] a[rel=next]").click()
    expect(page).to_have_url(re.compile(r"pairs_page=2&members_page=1#pairs$"))
    pairs = page.locator("table.edges tbody tr")
    expect(pairs.first).to_be_visible()
    first_pair = pairs.first.get_attribute("id")
    expect(page.locator("[data-pager=pairs]")).to_contain_text("第 101–200 个匹配，共 601 个")

    # j moves through the rows; the third pair of this page, rejected with n.
    page.locator(f"#{first_pair}").scroll_into_view_if_needed()
    for _ in range(150 + 3):
        page.keyboard.press("j")
    current = page.locator("tr.current")
    expect(current).to_have_count(1)
    target = current.get_attribute("id")
    assert target == pairs.nth(2).get_attribute("id")
    page.keyboard.press("n")
    page.wait_for_load_state()
    expect(page).to_have_url(re.compile(rf"pairs_page=2#{target}$"))
    row = page.locator(f"#{target}")
    expect(row).to_have_class(re.compile(r"\bdecided\b"))
    expect(row).to_have_class(re.compile(r"\bcurrent\b"))  # j goes on from here
    assert pairs.nth(2).get_attribute("id") == target  # in place
    assert pairs.first.get_attribute("id") == first_pair
    seen(page, "41-large-cluster-pairs-page-2-decided")
    page.keyboard.press("j")
    expect(page.locator("tr.current")).to_have_id(pairs.nth(3).get_attribute("id"))
    assert Decision.objects.get().verdict == "not_duplicate"

    # The last page of members, from the pager.
    page.locator("[data-pager=members] a[rel=next]").click()
    page.locator("[data-pager=members] a[rel=next]").click()
    expect(members).to_contain_text("第 301–400 个成员，共 400 个")
    expect(page.locator("table.members tbody tr")).to_have_count(100)
    expect(page.locator("[data-pager=pairs]")).to_contain_text("第 101–200 个匹配")  # kept
    members.scroll_into_view_if_needed()
    seen(page, "42-large-cluster-members-page-3")
    assert not page.js_errors


def test_editor_decides_a_filtered_queue_in_bulk(page, sign_in, big, shot):
    from dedup.models import Decision, Match

    other = [article(n, source="人民日报") for n in (1001, 1002)]
    Match.objects.create(a=other[0], b=other[1], kind="near", distance=2, similarity=0.9)
    sign_in(page, "editor", "/")
    page.select_option("#queue-form select[name=source]", "新华社")
    bulk = page.locator("#bulk-open")
    expect(bulk).to_contain_text("1000")
    shot(page, "43-queue-filtered-bulk")
    bulk.click()
    expect(page.locator("#bulk-count")).to_have_text("1000")
    page.select_option("#bulk-filter select[name=kind]", "near")
    page.fill("#bulk-filter input[name=low]", "0.78")
    page.click("#bulk-filter button[type=submit]")
    wanted = Match.objects.filter(similarity__gte=0.78, a__source="新华社").count()
    expect(page.locator("#bulk-count")).to_have_text(str(wanted))
    # Each sampled pair says its kind and similarity, the most similar first.
    expect(page.locator(".bulk-sample .bulk-kind").first).to_have_text("近似副本")
    top = Match.objects.filter(a__source="新华社").order_by("-similarity").first().similarity
    expect(page.locator(".bulk-sample .bulk-similarity").first).to_have_text(f"{top:.3f}")
    shot(page, "44-bulk-confirm")
    page.click("#bulk-duplicate")
    expect(page.locator(".messages .msg.success")).to_contain_text(str(wanted))
    expect(page).to_have_url(re.compile(r"[?&]source=%E6%96%B0"))
    shot(page, "45-queue-after-bulk")
    decided = set(Decision.objects.values_list("a_id", "b_id"))
    assert len(decided) == wanted
    expected = Match.objects.filter(similarity__gte=0.78, a__source="新华社")
    assert decided == set(expected.values_list("a_id", "b_id"))
    assert not Decision.objects.filter(a=other[0]).exists()
    assert not page.js_errors
