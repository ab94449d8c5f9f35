"""Nothing waits on the broker: what arrives while it is down is stored and processed once it
answers, without anyone sending it again, and nothing is read or matched twice.

The broker's outage is a `delay` that raises kombu's OperationalError (what a send raises with
Redis down); the recovery runs on a real worker, Redis and PostgreSQL, through the sweeps beat
runs (uploads_requeue_stuck, articles_requeue_stuck), each run twice as beat would.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from kombu.exceptions import OperationalError as BrokerDown

from dedup import services, tasks
from dedup.models import ApiToken, Article, Match, UploadBatch
from dedup.services.uploads import WAITING_FOR_QUEUE
from tests import roles
from tests.texts import ARTICLE, NEAR, stranger


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


@pytest.fixture
def editor() -> User:
    user = User.objects.create_user("editor", password="a long enough password")
    user.groups.add(roles.group("editor"))
    return user


def broker_down(monkeypatch) -> None:
    def down(*args, **kwargs):
        raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.upload_process, "delay", down)
    monkeypatch.setattr(tasks.articles_process, "delay", down)


def invariants() -> None:
    """Every article processed once, no pair matched twice, counters equal to the rows."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM dedup_article WHERE status NOT IN ('done', 'exact')")
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            'SELECT count(*) FROM (SELECT upload_id, "row" FROM dedup_article'
            ' WHERE upload_id IS NOT NULL GROUP BY upload_id, "row" HAVING count(*) > 1) d'
        )
        assert cursor.fetchone()[0] == 0, "an upload's row stored twice"
        cursor.execute(
            "SELECT count(*) FROM (SELECT article_id, version FROM dedup_fingerprint"
            " GROUP BY article_id, version HAVING count(*) > 1) d"
        )
        assert cursor.fetchone()[0] == 0, "an article fingerprinted twice"
    for batch in UploadBatch.objects.all():
        stored = Article.objects.filter(upload=batch).count()
        assert (batch.state, batch.accepted, batch.processed) == ("done", stored, stored), batch


@pytest.mark.django_db(transaction=True)
def test_what_arrives_while_the_broker_is_down_is_processed_once_it_answers(
    editor, monkeypatch, worker_factory, wait_until
):
    broker_down(monkeypatch)
    key = ApiToken.issue(editor, name="t")[1]
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    file = SimpleUploadedFile("api.jsonl", jsonl([{"id": "a", "text": ARTICLE}]))
    response = api.post("/api/uploads", {"file": file})
    assert response.status_code == 202, response.content  # stored: no need to send it again
    web = Client(headers={"accept-language": "en"})
    web.force_login(editor)
    rows = [{"id": "near", "text": NEAR}] + [{"text": stranger(i)} for i in range(30)]
    file = SimpleUploadedFile("web.jsonl", jsonl(rows))
    response = web.post("/upload/", {"files": [file]}, headers={"accept": "application/json"})
    assert response.status_code == 202 and response.json()["errors"] == []
    response = api.post(
        "/api/articles", {"id": "direct", "text": NEAR + "。"}, content_type="application/json"
    )
    assert response.status_code == 202
    waiting = dict(UploadBatch.objects.values_list("name", "message"))
    assert waiting == {"api.jsonl": WAITING_FOR_QUEUE, "web.jsonl": WAITING_FOR_QUEUE}
    assert set(UploadBatch.objects.values_list("state", flat=True)) == {"received"}

    monkeypatch.undo()  # the broker answers again
    worker_factory()
    assert services.uploads_requeue_stuck(older_than_seconds=0) == 2
    services.articles_requeue_stuck(older_than_seconds=0)
    # beat's sweeps again: copies sent while the first are queued or running
    services.uploads_requeue_stuck(older_than_seconds=0)
    services.articles_requeue_stuck(older_than_seconds=0)
    wait_until(
        lambda: (
            set(UploadBatch.objects.values_list("state", flat=True)) == {"done"}
            and not Article.objects.filter(status__in=["pending", "processing"]).exists()
        ),
        timeout=60,
        message="the uploads and articles that waited for the broker are processed",
    )
    assert services.uploads_requeue_stuck(older_than_seconds=0) == 0
    invariants()
    assert Article.objects.count() == 1 + 31 + 1
    assert set(UploadBatch.objects.values_list("message", flat=True)) == {""}
    pairs = {
        tuple(sorted((m.a.external_id, m.b.external_id)))
        for m in Match.objects.select_related("a", "b")
    }
    assert {("a", "near"), ("a", "direct"), ("direct", "near")} <= pairs


def test_beat_sweeps_waiting_uploads():
    from django.conf import settings

    tasks_run = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "dedup.tasks.uploads_requeue_stuck" in tasks_run
    assert settings.DEDUP_UPLOAD_RESEND_SECONDS <= 120


@pytest.mark.django_db(transaction=True)
def test_a_copy_of_the_task_sent_again_does_not_read_an_upload_another_is_reading(monkeypatch):
    from django.db import connections

    monkeypatch.setattr(tasks.upload_process, "delay", lambda **kwargs: None)
    monkeypatch.setattr(tasks.articles_process, "delay", lambda **kwargs: None)
    batch = services.upload_create(
        file=SimpleUploadedFile("a.jsonl", jsonl([{"text": ARTICLE}, {"text": NEAR}])),
        name="a.jsonl",
    )
    other = connections.create_connection("default")  # another worker, reading it
    try:
        with other.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 0))", [f"upload-read\x1f{batch.pk}"]
            )
        assert services.upload_process(upload_id=batch.pk).state == "received"
        assert Article.objects.count() == 0
    finally:
        other.close()  # its session's lock goes with it, as with a worker that dies
    assert services.upload_process(upload_id=batch.pk).state == "processing"
    assert Article.objects.count() == 2


@pytest.mark.django_db(transaction=True)  # on_commit runs: the send happens after the commit
def test_the_upload_form_answers_waiting_for_the_queue_when_redis_is_down(editor, monkeypatch):
    broker_down(monkeypatch)
    web = Client(headers={"accept-language": "en"})
    web.force_login(editor)
    file = SimpleUploadedFile("form.jsonl", jsonl([{"id": "f", "text": ARTICLE}]))
    page = web.post("/upload/", {"files": [file]}, follow=True)
    assert page.status_code == 200
    html = page.content.decode()
    assert "1 file received" in html and "not answering; upload it again" not in html
    assert WAITING_FOR_QUEUE in html
    file = SimpleUploadedFile("script.jsonl", jsonl([{"id": "s", "text": NEAR}]))
    answer = web.post("/upload/", {"files": [file]}, headers={"accept": "application/json"})
    assert answer.status_code == 202 and answer.json()["errors"] == []
    waiting = dict(UploadBatch.objects.values_list("name", "message"))
    assert waiting == {"form.jsonl": WAITING_FOR_QUEUE, "script.jsonl": WAITING_FOR_QUEUE}
    status = web.get(f"/upload/{UploadBatch.objects.get(name='script.jsonl').pk}/status.json")
    assert (status.json()["state"], status.json()["message"]) == ("received", WAITING_FOR_QUEUE)
