"""Deciding every waiting pair a filtered queue selects: exactly those pairs, the count shown
before, each its own decision (undone one by one), refused when too many or when the
selection moved, and only for editors."""

from __future__ import annotations

import pytest
from django.test import Client

from dedup import services
from dedup.models import Article, Decision, Match
from tests.webui.conftest import article, user_in

pytestmark = pytest.mark.django_db

URL = "/decisions/filtered/"


@pytest.fixture
def clusters():
    """Three clusters: A and C from 新华社, B from 人民日报; one pair of C decided already."""
    a1, a2, a3 = (article(n, source="新华社") for n in (1, 2, 3))
    Article.objects.filter(id=a2.id).update(title="特别报道")
    b1, b2, b3 = (article(n, source="人民日报") for n in (11, 12, 13))
    c1, c2, c3 = (article(n, source="新华社") for n in (21, 22, 23))
    made = {}
    for name, x, y, kind, similarity in (
        ("a12", a1, a2, "near", 0.9),
        ("a23", a2, a3, "near", 0.7),
        ("a13", a1, a3, "partial", 0.6),
        ("b12", b1, b2, "near", 0.95),
        ("b13", b1, b3, "exact", 1.0),
        ("c12", c1, c2, "near", 0.85),
        ("c13", c1, c3, "near", 0.8),
    ):
        match = Match.objects.create(a=x, b=y, kind=kind, distance=2, similarity=similarity)
        made[name] = (match.a_id, match.b_id)
    Decision.objects.create(a_id=made["c12"][0], b_id=made["c12"][1], verdict="duplicate")
    return made


def latest() -> dict[tuple[int, int], str]:
    return {(d.a_id, d.b_id): d.verdict for d in Decision.objects.order_by("id")}


def test_queue_offers_the_waiting_pairs_of_the_clusters_it_lists(editor_client, clusters):
    html = editor_client.get("/?source=新华社").content.decode()
    assert 'id="bulk-open"' in html and "4" in html
    assert editor_client.get("/?source=新华社").context["waiting_pairs"] == 4  # A: 3, C: 1
    assert editor_client.get("/?status=reviewed").context["waiting_pairs"] == 0


def test_exactly_the_filtered_pairs_are_decided_and_the_count_said_first(
    editor_client, editor, clusters
):
    query = "source=新华社&kind=near&low=0.75&high=1"
    page = editor_client.get(f"{URL}?{query}")
    assert page.status_code == 200
    assert page.context["count"] == 2  # a12 (0.9) and c13 (0.8); a23 is 0.7, a13 partial
    assert 'id="bulk-count">2<' in page.content.decode()
    assert not Decision.objects.exclude(verdict="duplicate").exists()
    before = latest()
    response = editor_client.post(URL + "?ignored=1", {
        "source": "新华社", "kind": "near", "low": "0.75", "high": "1",
        "expected": "2", "verdict": "not_duplicate",
    })  # fmt: skip
    assert response.status_code == 302
    assert response["Location"] == "/?source=%E6%96%B0%E5%8D%8E%E7%A4%BE"
    after = latest()
    changed = {pair for pair, verdict in after.items() if before.get(pair) != verdict}
    assert changed == {clusters["a12"], clusters["c13"]}
    assert set(after.values()) == {"duplicate", "not_duplicate"}
    assert Decision.objects.filter(decided_by=editor).count() == 2
    # Each pair has its own decision: one is undone alone.
    a, b = clusters["a12"]
    seen = Decision.objects.get(a_id=a, b_id=b).id
    editor_client.post("/decisions/", {"pick": f"undone:{a}:{b}:{seen}"})
    assert latest()[clusters["a12"]] == "undone" and latest()[clusters["c13"]] == "not_duplicate"
    # Undone, the pair waits again and is selected again.
    assert editor_client.get(f"{URL}?{query}").context["count"] == 1


def test_search_and_similarity_range_narrow_the_selection(editor_client, clusters):
    def count(query):
        return editor_client.get(f"{URL}?{query}").context["count"]

    assert count("") == 6  # every waiting pair of the waiting clusters
    assert count("q=特别报道") == 3  # cluster A alone
    assert count("q=特别报道&low=0.6&high=0.7") == 2
    assert count("kind=exact") == 1
    assert count("kind=partial&source=人民日报") == 0
    assert count("near=0.92") == 3  # a13 (partial) stays shown
    assert count("near=0.92&partial=0.9") == 2  # at the queue's bars: b12 0.95, exact b13


def test_a_selection_that_moved_is_not_decided(editor_client, clusters):
    page = editor_client.get(f"{URL}?source=人民日报")
    assert page.context["count"] == 2
    b = clusters["b12"]
    Decision.objects.create(a_id=b[0], b_id=b[1], verdict="duplicate")  # someone else
    decisions = Decision.objects.count()
    response = editor_client.post(
        URL, {"source": "人民日报", "expected": "2", "verdict": "duplicate"}, follow=True
    )
    assert Decision.objects.count() == decisions
    assert "1" in response.content.decode() and response.context["count"] == 1


def test_more_than_the_maximum_is_refused(editor_client, clusters, monkeypatch):
    monkeypatch.setattr("webui.bulk_page.BULK_MAX", 5)
    page = editor_client.get(URL)
    assert page.context["count"] == 6 and 'id="bulk-too-many"' in page.content.decode()
    assert 'id="bulk-decide"' not in page.content.decode()
    decisions = Decision.objects.count()
    editor_client.post(URL, {"expected": "6", "verdict": "duplicate"})
    assert Decision.objects.count() == decisions


@pytest.mark.parametrize("query", ["kind=copy", "low=2", "low=x", "low=0.8&high=0.5"])
def test_bad_filters_get_400_with_a_message(editor_client, clusters, query):
    response = editor_client.get(f"{URL}?{query}")
    assert response.status_code == 400 and response.context["message"]


def test_bad_verdict_records_nothing(editor_client, clusters):
    decisions = Decision.objects.count()
    editor_client.post(URL, {"expected": "6", "verdict": "original"})
    assert Decision.objects.count() == decisions


def test_only_editors_decide_in_bulk(django_user_model, clusters):
    form = {"expected": "6", "verdict": "duplicate"}
    decisions = Decision.objects.count()
    anonymous = Client()
    for response in (anonymous.get(URL), anonymous.post(URL, form)):
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    nobody = Client()
    nobody.force_login(user_in(django_user_model, None, "nobody"))
    assert nobody.get(URL).status_code == 403
    assert nobody.post(URL, form).status_code == 403
    assert Decision.objects.count() == decisions
    admin = Client()
    admin.force_login(user_in(django_user_model, "admin", "boss"))
    assert admin.post(URL, form).status_code == 302
    assert Decision.objects.count() == decisions + 6


def test_batches_record_every_pair_and_leave_the_stale_ones(editor, clusters, monkeypatch):
    monkeypatch.setattr("dedup.services.decisions.BATCH", 2)
    pairs = [services.PairDecision(a, b, 0) for a, b in clusters.values()]  # c12 was decided
    done, problems = services.decisions_batched(pairs=pairs, verdict="duplicate", user=editor)
    a, b = clusters["c12"]
    assert done == 6 and len(problems) == 1 and problems[0].startswith(f"{a} ~ {b}")
    assert Decision.objects.filter(decided_by=editor).count() == 6
    with pytest.raises(services.DecisionInvalid):
        services.decisions_batched(pairs=pairs, verdict="undone", user=editor)


def test_a_source_filter_decides_only_pairs_holding_its_articles(editor_client):
    # A demo story (d1 original, d2 and d3 reposts) with a trial repost t1 of it; a trial
    # story (t2, t3) sharing one sentence with d2 (a partial match under half of t2).
    d1, d2, d3 = (article(n, source="demo") for n in (1, 2, 3))
    t1 = article(4, source="trial")
    t2, t3 = (article(n, source="trial") for n in (5, 6))
    for x, y, kind, similarity in (
        (d1, d2, "near", 0.9),
        (d1, d3, "near", 0.85),
        (d2, d3, "near", 0.8),
        (d1, t1, "near", 0.7),
        (d2, t2, "partial", 0.45),
        (t2, t3, "exact", 1.0),
    ):
        Match.objects.create(a=x, b=y, kind=kind, distance=2, similarity=similarity)
    page = editor_client.get(f"{URL}?source=trial")
    assert page.context["count"] == 2  # t1 ~ d1 in the demo story, t2 ~ t3: no demo pair
    sample = page.context["sample"]
    assert [(p["a"], p["b"], p["kind"], p["similarity"]) for p in sample] == [
        (t2.id, t3.id, "完全相同", "1.000"),
        (d1.id, t1.id, "近似副本", "0.700"),
    ]
    html = page.content.decode()
    assert 'class="bulk-kind">近似副本<' in html and 'class="bulk-similarity">0.700<' in html
    assert editor_client.get("/?source=trial").context["waiting_pairs"] == 2
    editor_client.post(URL, {"source": "trial", "expected": "2", "verdict": "duplicate"})
    assert set(latest()) == {(d1.id, t1.id), (t2.id, t3.id)}
