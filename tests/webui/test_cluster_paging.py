"""A very large cluster's page: every member and every pair reachable through its pages, none
twice, rows in place whatever is decided, and the editor's place kept."""

from __future__ import annotations

import pytest

from dedup.models import Decision, Match
from tests.webui.conftest import big_cluster

pytestmark = pytest.mark.django_db

MEMBERS, PAIRS = 400, 1000


@pytest.fixture
def big():
    """Return the ids of 400 articles in one cluster of 1,000 matches: 399 copies of the
    first and 601 more matches among them, similarities with ties (the order must not
    depend on the database's)."""
    return big_cluster(MEMBERS, PAIRS)


def pages_walked(client, first_url: str, param: str, read) -> list:
    """Follow a cluster page's pages of one kind from the first; return what `read` takes
    from each, in order."""
    found, url, seen_pages = [], first_url, 0
    while url:
        context = client.get(url).context
        found += read(context)
        seen_pages += 1
        pager = context[param]
        url = f"{first_url}&{param}={pager.next_page_number()}" if pager.has_next() else ""
        assert seen_pages < 50
    return found


def pair_of(edge: dict) -> tuple[int, int]:
    return edge["a"], edge["b"]


def test_every_member_and_pair_of_a_large_cluster_is_on_exactly_one_page(editor_client, big):
    first = f"/clusters/{big[0]}/?near=0&partial=0"
    page = editor_client.get(first)
    assert page.context["total"] == MEMBERS
    assert len(page.context["rows"]) < MEMBERS  # paged, not all at once
    members = pages_walked(
        editor_client,
        first,
        "members_page",
        lambda c: [row["member"].article_id for row in c["rows"]],
    )
    assert len(members) == MEMBERS and set(members) == set(big)
    paths = pages_walked(
        editor_client,
        first,
        "members_page",
        lambda c: [pair_of(row["edge"]) for row in c["rows"] if row["edge"]],
    )
    others = pages_walked(
        editor_client, first, "pairs_page", lambda c: [pair_of(e) for e in c["other_edges"]]
    )
    every = paths + others
    assert len(every) == PAIRS
    assert set(every) == set(Match.objects.values_list("a_id", "b_id"))


def test_decided_pairs_stay_in_place_on_a_later_page(editor_client, editor, big):
    url = f"/clusters/{big[0]}/?near=0&partial=0&pairs_page=3"
    before = [pair_of(e) for e in editor_client.get(url).context["other_edges"]]
    a, b = before[5]
    response = editor_client.post(
        "/decisions/", {"pick": f"not_duplicate:{a}:{b}:0", "next": url + "#p5"}
    )
    assert response["Location"] == url + "#p5"
    page = editor_client.get(url)
    after = page.context["other_edges"]
    assert [pair_of(e) for e in after] == before
    assert after[5]["decision"].verdict == "not_duplicate"
    assert Decision.objects.count() == 1


def test_a_member_far_down_opens_on_its_page_and_decisions_return_there(editor_client, big):
    page = editor_client.get(f"/clusters/{big[-1]}/")
    members = page.context["members_page"]
    assert members.number > 1
    assert big[-1] in [row["member"].article_id for row in page.context["rows"]]
    html = page.content.decode()
    assert f"members_page={members.number}" in html  # in the address a decision returns to
    assert 'rel="prev"' in html
    assert "全选本页" in html  # the checkbox selects the rows of this page only


@pytest.mark.parametrize("query", ["members_page=999", "pairs_page=x", "members_page=-1"])
def test_a_page_out_of_range_shows_the_nearest(editor_client, big, query):
    response = editor_client.get(f"/clusters/{big[0]}/?{query}")
    assert response.status_code == 200
    assert response.context["rows"]
