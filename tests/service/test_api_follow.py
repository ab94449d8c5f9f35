"""What a newsroom's systems build on: articles by their own ids (look-ups, idempotent
re-sends, replacements), listings of new matches and decisions by cursor, rate limits."""

from __future__ import annotations

import json
import threading

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from dedup import selectors, services
from dedup.errors import ReplaceRefused
from dedup.models import ApiToken, Article, AuditEntry, Decision, Match, Settings, UploadBatch
from tests.roles import group
from tests.texts import ARTICLE, NEAR, OTHER

pytestmark = pytest.mark.django_db

PERMISSIONS = ["view_article", "view_match", "view_uploadbatch", "add_uploadbatch"]


def _client(username: str = "cms") -> Client:
    user = User.objects.create_user(username, password="pw")
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="dedup", codename__in=PERMISSIONS)
    )
    return Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")


@pytest.fixture
def client() -> Client:
    return _client()


def _post(client: Client, url: str, data):
    return client.post(url, json.dumps(data), content_type="application/json")


def _article(title: str, body: str = ARTICLE, **fields) -> Article:
    return Article.objects.create(
        title=title,
        body=body,
        dated_at=timezone.now(),
        content_hash=Article.hash_body(body),
        length=len(body),
        **fields,
    )


# External ids


def test_article_is_found_by_external_id_and_url(client, django_capture_on_commit_callbacks):
    rows = [
        {"id": "cms-7", "source": "日报", "url": "https://example.com/7", "body": ARTICLE},
        {"id": "cms-7", "source": "晚报", "body": OTHER},  # the same id from another source
        {"id": 8, "source": "日报", "body": NEAR},
    ]
    with django_capture_on_commit_callbacks():
        submitted = _post(client, "/api/articles", rows).json()["articles"]
    assert [s["external_id"] for s in submitted] == ["cms-7", "cms-7", "8"]
    assert {s["outcome"] for s in submitted} == {"created"}

    both = client.get("/api/articles", {"external_id": "cms-7"}).json()["articles"]
    assert [(a["id"], a["source"]) for a in both] == [
        (submitted[0]["id"], "日报"),
        (submitted[1]["id"], "晚报"),
    ]
    one = client.get("/api/articles", {"external_id": "cms-7", "source": "晚报"}).json()
    assert [a["id"] for a in one["articles"]] == [submitted[1]["id"]]
    by_url = client.get("/api/articles", {"url": "https://example.com/7"}).json()["articles"]
    assert [a["external_id"] for a in by_url] == ["cms-7"]
    assert client.get("/api/articles", {"external_id": "nothing"}).json()["articles"] == []
    detail = client.get(f"/api/articles/{submitted[2]['id']}").json()
    assert detail["external_id"] == "8"


def test_look_up_needs_something_to_look_by(client):
    response = client.get("/api/articles")
    assert response.status_code == 400
    assert "external_id" in response.json()["error"]


def test_look_up_pages_with_after(client):
    ids = [_article(f"第{i}篇", source="日报").pk for i in range(5)]
    first = client.get("/api/articles", {"source": "日报", "limit": 3}).json()
    assert [a["id"] for a in first["articles"]] == ids[:3] and first["more"]
    rest = client.get("/api/articles", {"source": "日报", "after": first["next"]}).json()
    assert [a["id"] for a in rest["articles"]] == ids[3:] and not rest["more"]


def test_matches_carry_both_external_ids(client):
    a = _article("原文", external_id="cms-1")
    b = _article("转载", body=NEAR, external_id="crawl-9")
    Match.objects.create(
        a=a, b=b, kind="near", distance=1, similarity=0.9, version=Settings.load().active_version
    )
    [match] = client.get(f"/api/articles/{b.pk}/matches").json()["matches"]
    assert (match["article"], match["external_id"]) == (a.pk, "cms-1")
    [listed] = client.get("/api/matches").json()["matches"]
    assert (listed["a"]["external_id"], listed["b"]["external_id"]) == ("cms-1", "crawl-9")


def test_resending_an_external_id_stores_nothing_and_says_so(
    client, django_capture_on_commit_callbacks
):
    row = {"id": "cms-1", "source": "日报", "title": "原文", "body": ARTICLE}
    with django_capture_on_commit_callbacks() as first_callbacks:
        [first] = _post(client, "/api/articles", row).json()["articles"]
    with django_capture_on_commit_callbacks() as again_callbacks:
        response = _post(client, "/api/articles", [row, {**row, "body": NEAR}])
    assert response.status_code == 202
    again = response.json()["articles"]
    assert [(a["id"], a["outcome"]) for a in again] == [(first["id"], "unchanged")] * 2
    assert Article.objects.count() == 1
    assert first_callbacks and not again_callbacks  # nothing new to process


def test_the_same_id_twice_in_one_request_is_stored_once(
    client, django_capture_on_commit_callbacks
):
    row = {"id": "cms-2", "body": ARTICLE}
    with django_capture_on_commit_callbacks():
        answers = _post(client, "/api/articles", [row, row]).json()["articles"]
    assert [a["outcome"] for a in answers] == ["created", "unchanged"]
    assert answers[0]["id"] == answers[1]["id"] and Article.objects.count() == 1


def test_replace_stores_the_new_text_and_reprocesses_it(client, django_capture_on_commit_callbacks):
    row = {"id": "cms-1", "source": "日报", "body": ARTICLE}
    with django_capture_on_commit_callbacks():
        [first] = _post(client, "/api/articles", row).json()["articles"]
    other = _article("别处", body=NEAR)
    Match.objects.create(
        a_id=first["id"], b=other, kind="near", distance=1, similarity=0.9,
        version=Settings.load().active_version,
    )  # fmt: skip
    with django_capture_on_commit_callbacks() as callbacks:
        response = _post(client, "/api/articles?replace=true", {**row, "body": OTHER})
    [replaced] = response.json()["articles"]
    assert (replaced["outcome"], replaced["replaced"]) == ("replaced", first["id"])
    assert replaced["status"] == "pending" and callbacks  # queued for matching again
    new = Article.objects.get(pk=replaced["id"])
    assert (new.body, new.external_id, new.source) == (OTHER, "cms-1", "日报")
    assert not Article.objects.filter(pk=first["id"]).exists()
    assert not Match.objects.exists()  # the old text's matches went with it
    found = client.get("/api/articles", {"external_id": "cms-1"}).json()["articles"]
    assert [a["id"] for a in found] == [new.pk]
    with django_capture_on_commit_callbacks():
        same = _post(client, "/api/articles?replace=true", {**row, "body": OTHER}).json()
    assert same["articles"][0]["outcome"] == "unchanged"  # nothing differs: nothing replaced


def _matched_and_decided(article_id: int) -> Article:
    other = _article("别处", body=NEAR)
    version = Settings.load().active_version
    Match.objects.create(
        a_id=article_id, b=other, kind="near", distance=1, similarity=0.9, version=version
    )
    Decision.objects.create(a_id=article_id, b=other, verdict="duplicate")
    return other


def test_another_users_token_cannot_replace_an_article(client, django_capture_on_commit_callbacks):
    row = {"id": "cms-1", "source": "日报", "body": ARTICLE}
    with django_capture_on_commit_callbacks():
        [first] = _post(client, "/api/articles", row).json()["articles"]
    _matched_and_decided(first["id"])
    other_editor = _client("other-desk")
    with django_capture_on_commit_callbacks() as callbacks:
        response = _post(other_editor, "/api/articles?replace=true", {**row, "body": OTHER})
    assert response.status_code == 403
    assert "only its sender or an admin" in response.json()["error"]
    assert Article.objects.filter(pk=first["id"], body=ARTICLE).exists() and not callbacks
    assert Match.objects.count() == 1 and Decision.objects.count() == 1
    assert not AuditEntry.objects.exists()
    # Without replace, the other user's re-send is answered as before.
    with django_capture_on_commit_callbacks():
        again = _post(other_editor, "/api/articles", {**row, "body": OTHER})
    assert again.json()["articles"][0]["outcome"] == "unchanged"


def test_replace_by_its_sender_or_an_admin_is_in_the_audit_log(
    client, django_capture_on_commit_callbacks
):
    row = {"id": "cms-1", "source": "日报", "body": ARTICLE}
    with django_capture_on_commit_callbacks():
        [first] = _post(client, "/api/articles", row).json()["articles"]
        _matched_and_decided(first["id"])
        [mine] = _post(client, "/api/articles?replace=true", {**row, "body": OTHER}).json()[
            "articles"
        ]
    [entry] = AuditEntry.objects.all()
    assert (entry.action, entry.username, entry.object_id) == (
        "article.replace",
        "cms",
        str(first["id"]),
    )
    assert entry.changes == {
        "replaced_by": mine["id"],
        "source": "日报",
        "external_id": "cms-1",
        "matches": 1,
        "decisions": 1,
    }
    admin = User.objects.create_user("chief", password="pw")
    admin.groups.add(group("admin"))
    chief = Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(admin)[1]}")
    with django_capture_on_commit_callbacks():
        response = _post(chief, "/api/articles?replace=true", {**row, "body": NEAR})
    assert response.status_code == 202
    assert response.json()["articles"][0]["replaced"] == mine["id"]
    assert list(AuditEntry.objects.values_list("username", flat=True).order_by("id")) == [
        "cms",
        "chief",
    ]


def test_an_uploads_rows_are_replaced_by_its_uploader_only(django_capture_on_commit_callbacks):
    uploader, other = User.objects.create_user("desk"), User.objects.create_user("other")
    upload = UploadBatch.objects.create(name="a.jsonl", uploaded_by=uploader)
    row = {"id": "u-1", "body": ARTICLE}
    with django_capture_on_commit_callbacks():
        [first] = services.articles_ingest(rows=[row], upload=upload)
        with pytest.raises(ReplaceRefused):
            services.articles_submit(rows=[{**row, "body": NEAR}], user=other, replace=True)
        [again] = services.articles_submit(
            rows=[{**row, "body": NEAR}], user=uploader, replace=True
        )
    assert (again.outcome, again.replaced) == ("replaced", first.pk)


def test_concurrent_resends_of_one_id_store_it_once(transactional_db):
    client_a, client_b = _client("a"), _client("b")
    row = {"id": "race-1", "source": "日报", "body": ARTICLE}
    answers, start = [], threading.Barrier(2)

    def send(client):
        from django.db import connection

        start.wait()
        answers.append(_post(client, "/api/articles", row).json()["articles"][0]["outcome"])
        connection.close()  # this thread's own

    threads = [threading.Thread(target=send, args=(c,)) for c in (client_a, client_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == ["created", "unchanged"]
    assert Article.objects.filter(external_id="race-1").count() == 1


# Listings by cursor


def _matches_version() -> str:
    return Settings.load().active_version


def test_match_listing_filters_and_the_cursor_moves_past_what_they_leave_out(client):
    a, b, c = _article("一", source="日报"), _article("二", source="晚报"), _article("三")
    version = _matches_version()
    near = Match.objects.create(a=a, b=b, kind="near", distance=1, similarity=0.9, version=version)
    Match.objects.create(a=a, b=c, kind="partial", similarity=0.5, version=version)
    low = Match.objects.create(a=b, b=c, kind="near", distance=3, similarity=0.45, version=version)

    def listed(**params):
        page = client.get("/api/matches", params).json()
        return [m["id"] for m in page["matches"]], page["next"], page["more"]

    assert listed(kind="near") == ([near.pk, low.pk], low.pk, False)
    assert listed(min_similarity=0.8) == ([near.pk], low.pk, False)
    assert listed(source="晚报")[0] == [near.pk, low.pk]
    assert listed(limit=1) == ([near.pk], near.pk, True)
    assert listed(after=low.pk) == ([], low.pk, False)
    response = client.get("/api/matches", {"min_similarity": "2"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "min_similarity"


def test_decision_listing_follows_editors(client):
    editor = User.objects.create_user("editor")
    a, b = _article("一"), _article("二", body=NEAR)
    # Editors decide on pairs that matched (decisions on others are refused).
    Match.objects.create(a=a, b=b, kind="near", similarity=0.9, version=_matches_version())
    first = services.decision_record(a_id=a.pk, b_id=b.pk, verdict="duplicate", user=editor, seen=0)
    page = client.get("/api/decisions").json()
    assert [(d["id"], d["verdict"], d["decided_by"]) for d in page["decisions"]] == [
        (first.pk, "duplicate", "editor")
    ]
    services.decision_record(
        a_id=a.pk, b_id=b.pk, verdict="not_duplicate", user=editor, seen=first.pk
    )
    later = client.get("/api/decisions", {"after": page["next"]}).json()["decisions"]
    assert [d["verdict"] for d in later] == ["not_duplicate"]
    assert later[0]["a"]["id"] == a.pk and later[0]["b"]["id"] == b.pk
    only = client.get("/api/decisions", {"verdict": "duplicate"}).json()["decisions"]
    assert [d["id"] for d in only] == [first.pk]
    assert Decision.objects.count() == 2


def test_paging_while_matches_arrive_sees_each_once(worker, wait_until):
    """A follower pages through /api/matches while two worker processes write new matches:
    it ends with every match, none twice."""
    from django.db import connection

    client = _client()
    # Reposts, each with a line of its own (no number: one restated in its place would make
    # them one template filled in with other facts).
    sites = "东南西北春夏秋冬金木水火土天地日月山川江河湖海风云"
    copies = [ARTICLE + f"\n\n本文转载自{sites[i]}站。" for i in range(24)]
    seen: list[int] = []
    cursor, stop = 0, threading.Event()

    def follow() -> bool:
        nonlocal cursor
        page = client.get("/api/matches", {"after": cursor, "limit": 7}).json()
        seen.extend(m["id"] for m in page["matches"])
        cursor = page["next"]
        return page["more"]

    def follower() -> None:
        while not stop.is_set():
            follow()
        connection.close()  # this thread's own

    thread = threading.Thread(target=follower)
    thread.start()
    try:
        for start in range(0, len(copies), 3):
            rows = [
                {"id": f"c{start + i}", "body": t} for i, t in enumerate(copies[start : start + 3])
            ]
            assert _post(client, "/api/articles", rows).status_code == 202
        wait_until(
            lambda: not Article.objects.filter(status__in=["pending", "processing"]).exists(),
            timeout=120,
            message="all processed",
        )
    finally:
        stop.set()
        thread.join()
    while follow():  # whatever arrived after the follower's last page
        pass
    assert len(seen) == len(set(seen)), "a match was listed twice"
    assert sorted(seen) == sorted(Match.objects.values_list("id", flat=True))
    assert len(seen) > 100  # the copies matched each other: the follower had work to do


def test_a_reader_never_passes_a_match_still_being_written(transactional_db):
    """Writers take the change lock: a match inserted first but committed last cannot be
    skipped by a reader whose cursor moved past a later one."""
    from django.db import connection, transaction

    from dedup.db import change_lock

    a, b, c = _article("一"), _article("二", body=NEAR), _article("三", body=OTHER)
    version = _matches_version()
    inserted, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        with transaction.atomic():
            change_lock()
            Match.objects.create(a=a, b=b, kind="near", distance=1, similarity=0.9, version=version)
            inserted.set()
            release.wait(10)
        connection.close()

    def quick_writer() -> None:
        with transaction.atomic():
            change_lock()  # waits for the slow writer
            Match.objects.create(a=a, b=c, kind="near", distance=2, similarity=0.8, version=version)
        connection.close()

    slow = threading.Thread(target=slow_writer)
    slow.start()
    inserted.wait(10)
    quick = threading.Thread(target=quick_writer)
    quick.start()
    quick.join(0.5)
    assert quick.is_alive(), "the second writer waited for the first"
    page = selectors.match_changes(after=0)
    assert page.rows == [] and page.next == 0
    release.set()
    slow.join()
    quick.join()
    page = selectors.match_changes(after=0)
    assert len(page.rows) == 2 and page.rows[0].id < page.rows[1].id


# Rate limits


def test_requests_over_the_limit_are_429_with_retry_after(client, settings):
    settings.DEDUP_API_RATE_LIMIT, settings.DEDUP_API_RATE_WINDOW = 3, 60
    article = _article("一")
    for _ in range(3):
        assert client.get(f"/api/articles/{article.pk}").status_code == 200
    response = client.get(f"/api/articles/{article.pk}")
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "Retry-After" in response.json()["error"]
    assert _client("other").get(f"/api/articles/{article.pk}").status_code == 200  # per token
