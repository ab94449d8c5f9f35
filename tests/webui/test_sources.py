"""Who copies whom: the counts the match table's triggers keep, a source's copies, the
sources pages, their CSV and API, and who may see them."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from dedup import selectors
from dedup.models import Match, SourceEdge
from tests.webui.conftest import WHEN, article, user_in

pytestmark = pytest.mark.django_db

HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


def match(x, y, kind="near", similarity=0.9):
    a, b = sorted((x.pk, y.pk))
    return Match.objects.create(a_id=a, b_id=b, kind=kind, similarity=similarity, distance=3)


@pytest.fixture
def copies():
    """新华社 publishes first; 人民日报 copies two of its articles (near, partial), one of
    them received earlier than its original was published; 澎湃 copies one; a match within
    one source and one with no source count for nobody."""
    x1 = article(1, source="新华社", dated_at=WHEN)
    x2 = article(2, source="新华社", dated_at=WHEN + HOUR)
    # Arrived first (lower id) but dated later: the copy, all the same.
    r1 = article(3, source="人民日报", dated_at=WHEN + 3 * HOUR)
    r2 = article(4, source="人民日报", dated_at=WHEN + 2 * HOUR)
    p1 = article(5, source="澎湃", dated_at=WHEN + dt.timedelta(days=2))
    x3 = article(6, source="新华社", dated_at=WHEN + 4 * HOUR)
    blank = article(7, source="", dated_at=WHEN + 5 * HOUR)
    match(x1, r1)
    match(x2, r2, kind="partial", similarity=0.5)
    match(x1, p1)
    match(x1, x3)
    match(x2, blank)
    return {"x1": x1, "x2": x2, "r1": r1, "r2": r2, "p1": p1}


def test_triggers_count_copies_per_sources_day_and_month(copies):
    fields = ("original", "copier", "span", "day", "copies", "near", "partial", "lag_seconds")
    rows = sorted(SourceEdge.objects.exclude(span="a").values_list(*fields))
    day, month, later = WHEN.date(), WHEN.date().replace(day=1), (WHEN + 2 * DAY).date()
    pairs = [row for row in rows if row[0] and row[1]]
    assert pairs == [
        ("新华社", "人民日报", "d", day, 2, 1, 1, 4 * 3600),
        ("新华社", "人民日报", "m", month, 2, 1, 1, 4 * 3600),
        ("新华社", "澎湃", "d", later, 1, 1, 0, 2 * 86400),
        ("新华社", "澎湃", "m", month, 1, 1, 0, 2 * 86400),
    ]
    ever = dict(
        ((o, c), n)
        for o, c, n in SourceEdge.objects.filter(span="a").values_list(
            "original", "copier", "copies"
        )
    )
    assert ever == {
        ("新华社", "人民日报"): 2,
        ("新华社", "澎湃"): 1,
        ("新华社", ""): 3,  # copies of its articles
        ("", "人民日报"): 2,  # copies it made
        ("", "澎湃"): 1,
        ("", ""): 3,
    }


def test_a_period_reads_whole_months_and_ragged_days_once():
    """Copies every day from 10 April to 20 June; any period counts each once."""
    start = dt.datetime(2024, 4, 10, 12, tzinfo=dt.UTC)
    for n in range(72):
        x = article(2 * n, source="新华社", dated_at=start + n * DAY)
        y = article(2 * n + 1, source="人民日报", dated_at=start + n * DAY + HOUR)
        match(x, y)
    last = (start + 71 * DAY).date()
    assert last == dt.date(2024, 6, 20)
    cases = [
        (None, None, 72),
        (dt.date(2024, 4, 1), None, 72),
        (dt.date(2024, 4, 15), dt.date(2024, 6, 3), 50),
        (dt.date(2024, 5, 1), dt.date(2024, 5, 31), 31),
        (dt.date(2024, 5, 2), dt.date(2024, 5, 30), 29),
        (None, dt.date(2024, 4, 30), 21),
        (dt.date(2024, 6, 20), None, 1),
        (dt.date(2024, 6, 21), None, 0),
    ]
    for since, until, expected in cases:
        edges = selectors.source_edges(selectors.Period(since, until))
        assert sum(e.copies for e in edges) == expected, (since, until)


def test_triggers_follow_updates_and_deletes(copies):
    Match.objects.filter(a_id=copies["x1"].pk, b_id=copies["r1"].pk).update(kind="exact")
    kinds = SourceEdge.objects.filter(original="新华社", copier="人民日报", span="d").values_list(
        "exact", "near", "partial"
    )
    assert list(kinds) == [(1, 0, 1)]
    copies["p1"].delete()
    assert not SourceEdge.objects.filter(copier="澎湃").exists()
    assert SourceEdge.objects.get(original="", copier="", span="a").copies == 2
    Match.objects.all().delete()
    assert not SourceEdge.objects.exists()


def test_overview_ranks_copiers_and_copied_over_a_period(copies):
    overview = selectors.sources_overview()
    assert [(r.source, r.copies, r.partners) for r in overview["copiers"]] == [
        ("人民日报", 2, 1),
        ("澎湃", 1, 1),
    ]
    assert [(r.source, r.copies) for r in overview["copied"]] == [("新华社", 3)]
    edge = overview["edges"][0]
    assert (edge.original, edge.copier, edge.near, edge.partial, edge.lag_mean) == (
        "新华社",
        "人民日报",
        1,
        1,
        2 * 3600,
    )
    first_day = selectors.Period(since=WHEN.date(), until=WHEN.date())
    assert [e.copier for e in selectors.sources_overview(first_day)["edges"]] == ["人民日报"]
    later = selectors.Period(since=WHEN.date() + dt.timedelta(days=1))
    assert [e.copier for e in selectors.sources_overview(later)["edges"]] == ["澎湃"]


def test_source_copies_both_ways_newest_first(copies):
    copied, more = selectors.source_copies("新华社")
    assert not more
    assert [(c.original_id, c.copy_id, c.kind) for c in copied] == [
        (copies["x2"].pk, copies["r2"].pk, "partial"),
        (copies["x1"].pk, copies["p1"].pk, "near"),
        (copies["x1"].pk, copies["r1"].pk, "near"),
    ]
    assert copied[1].lag_seconds == 2 * 86400
    taken, _ = selectors.source_copies("人民日报", taken=True)
    assert [(c.original_source, c.copy_id) for c in taken] == [
        ("新华社", copies["r1"].pk),
        ("新华社", copies["r2"].pk),
    ]
    assert selectors.source_copies("人民日报")[0] == []  # copied from nobody
    day = selectors.Period(until=WHEN.date())
    assert len(selectors.source_copies("新华社", period=day)[0]) == 2


PAGES = ["/sources/", "/sources/新华社/", "/sources/edges.csv"]


@pytest.mark.parametrize("address", PAGES)
def test_pages_need_a_signed_in_editor(address, copies, django_user_model):
    anonymous = Client().get(address)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    nobody = Client()
    nobody.force_login(user_in(django_user_model, None, "no.role"))
    assert nobody.get(address).status_code == 403


def test_overview_draws_the_graph_and_ranks(editor_client, copies):
    page = editor_client.get("/sources/").content.decode()
    assert page.count("<line ") == 2 and page.count("<circle ") == 3
    assert 'href="/sources/%E4%BA%BA%E6%B0%91%E6%97%A5%E6%8A%A5/"' in page  # 人民日报
    assert "/sources/edges.csv" in page
    later = editor_client.get("/sources/", {"since": "2024-05-02"}).content.decode()
    assert later.count("<line ") == 1
    assert editor_client.get("/sources/", {"since": "tomorrow"}).status_code == 400


def test_names_and_titles_are_escaped(editor_client):
    evil = '<script>alert(1)</script>"'
    x = article(1, source=evil, title="<img src=x onerror=alert(2)>", dated_at=WHEN)
    y = article(2, source="新华社", dated_at=WHEN + HOUR)
    match(x, y)
    for address in ["/sources/", "/sources/新华社/"]:
        page = editor_client.get(address).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_source_page_lists_copies_both_ways_linking_to_compare(editor_client, copies):
    page = editor_client.get("/sources/新华社/").content.decode()
    x1, r1, p1 = copies["x1"].pk, copies["r1"].pk, copies["p1"].pk
    assert f'href="/compare/{x1}/{r1}/"' in page and f'href="/compare/{x1}/{p1}/"' in page
    assert "2.0 天" in page  # 澎湃 copied two days later (the site speaks Chinese first)
    taken = editor_client.get("/sources/人民日报/").content.decode()
    assert f'href="/compare/{x1}/{r1}/"' in taken.split('id="taken"')[1]
    assert editor_client.get("/sources/nobody/").status_code == 404


def test_edges_csv_has_a_bom_and_guards_formulas(editor_client):
    x = article(1, source='=HYPERLINK("http://evil")', dated_at=WHEN)
    y = article(2, source="新华社", dated_at=WHEN + HOUR)
    match(x, y)
    response = editor_client.get("/sources/edges.csv")
    body = b"".join(response.streaming_content).decode("utf-8")
    assert response["Content-Type"].startswith("text/csv")
    assert body.startswith("\ufefforiginal,copier,copies")
    assert '"\'=HYPERLINK(""http://evil"")",新华社,1,0,1,0,3600.0' in body


def test_api_sources_and_copies(copies, django_user_model):
    from django.contrib.auth.models import Permission

    from dedup.models import ApiToken

    user = django_user_model.objects.create_user("reader")
    user.user_permissions.add(Permission.objects.get(codename="view_article"))
    client = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    assert Client().get("/api/sources").status_code == 401
    body = client.get("/api/sources", {"until": "2024-05-01"}).json()
    assert body["copiers"] == [{"source": "人民日报", "copies": 2, "partners": 1}]
    assert body["edges"][0] == {
        "original": "新华社",
        "copier": "人民日报",
        "copies": 2,
        "exact": 0,
        "near": 1,
        "partial": 1,
        "lag_mean_seconds": 7200.0,
    }
    page = client.get("/api/sources/人民日报/copies", {"taken": "true"}).json()
    assert [(c["original"]["id"], c["copy"]["id"]) for c in page["copies"]] == [
        (copies["x1"].pk, copies["r1"].pk),
        (copies["x2"].pk, copies["r2"].pk),
    ]
    assert page["copies"][0]["lag_seconds"] == 3 * 3600 and page["more"] is False
    assert client.get("/api/sources/nobody/copies").status_code == 404


def test_source_copies_page_on_past_uncopied_articles():
    """260 articles of one source, only the 55 oldest copied: the newest 200 read first give
    nothing, the next batch fills the page, and page 2 holds the last 5."""
    from dedup.models import Article

    def made(n, source, when):
        return Article(title=f"t{n}", body="x", source=source, length=1, dated_at=when)

    mine = Article.objects.bulk_create(made(n, "新华社", WHEN + n * HOUR) for n in range(260))
    copies = Article.objects.bulk_create(
        made(n, "人民日报", WHEN + n * HOUR + 30 * dt.timedelta(minutes=1)) for n in range(55)
    )
    for original, copy in zip(mine, copies, strict=False):
        match(original, copy)
    first, more = selectors.source_copies("新华社")
    assert more and len(first) == 50
    assert [c.original_id for c in first] == [a.pk for a in mine[54:4:-1]]
    second, more = selectors.source_copies("新华社", page=2)
    assert not more and [c.original_id for c in second] == [a.pk for a in mine[4::-1]]
    assert second[0].lag_seconds == 1800
