"""Rebuilds that run once at a time, keep their progress, clean up after themselves when
superseded, and never hide the articles stored meanwhile (issue 16)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from dedup import selectors, services, tasks
from dedup.celery import app
from dedup.models import (
    ApiToken,
    Article,
    Fingerprint,
    Match,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
)
from tests.texts import ARTICLE, NEAR, OTHER, PAGE, stranger

TEXTS = (ARTICLE, NEAR, PAGE, OTHER, stranger(1))


def ingest(*texts: str) -> list[int]:
    rows = [{"title": f"t{i}", "body": text} for i, text in enumerate(texts)]
    return [a.pk for a in services.articles_ingest(rows=rows)]


def process(*texts: str) -> list[int]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.articles_process, "delay", lambda **kwargs: None)
        ids = ingest(*texts)
    services.articles_process(article_ids=ids)
    return ids


def matches() -> list[tuple]:
    return sorted(Match.objects.values_list("a_id", "b_id", "kind", "similarity", "version"))


NONE = {"Fingerprint": 0, "SegmentRow": 0, "PassageKey": 0, "Match": 0}


def rows_of(version: str) -> dict[str, int]:
    models = (Fingerprint, SegmentRow, PassageKey, Match)
    return {m.__name__: m.objects.filter(version=version).count() for m in models}


@pytest.fixture
def eager():
    """Tasks run here as they are sent (after the commit), as a worker would run them."""
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    app.conf.update(task_always_eager=False, task_eager_propagates=False)


@pytest.fixture
def unsent(monkeypatch):
    """Rebuilds are not sent: the test runs them."""
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kwargs: None)


def chunks_recorded(monkeypatch, then=None) -> list[list[int]]:
    """Record the articles of every rebuild chunk; call then(calls) after each."""
    real, calls = services.rebuilds._rebuild_chunk, []

    def chunk(*args, **kwargs):
        calls.append([row[0] for row in args[0]])
        if then is not None:
            then(calls)
        return real(*args, **kwargs)

    monkeypatch.setattr(services.rebuilds, "_rebuild_chunk", chunk)
    return calls


# --- once at a time ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_deliveries_of_one_rebuild_run_it_once(monkeypatch, settings, unsent):
    settings.DEDUP_CHUNK_SIZE = 2
    ids = process(*TEXTS)
    job = services.settings_update(top_n=128)
    first_in, second_done = threading.Event(), threading.Event()

    def hold_the_first_chunk(calls):
        if len(calls) == 1:
            first_in.set()
            second_done.wait(20)

    calls = chunks_recorded(monkeypatch, hold_the_first_chunk)
    errors = []

    def deliver():
        try:
            tasks.index_rebuild(job_id=job.pk)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    first = threading.Thread(target=deliver)
    first.start()
    assert first_in.wait(20)
    second = threading.Thread(target=deliver)  # the broker's visibility timeout ran out
    second.start()
    second.join(30)
    assert not second.is_alive()
    second_done.set()
    first.join(60)
    assert not errors
    job.refresh_from_db()
    assert (job.state, job.done, job.total) == ("done", 10, 10)  # indexed, then matched
    rebuilt = Counter(article for chunk in calls for article in chunk)
    assert rebuilt == Counter(ids * 2)  # each article once a pass, by one delivery


@pytest.mark.django_db
def test_a_rebuild_delivered_again_continues_where_it_stopped(monkeypatch, settings, unsent):
    settings.DEDUP_CHUNK_SIZE = 2
    ids = process(*TEXTS)
    job = services.settings_update(top_n=128)

    dying = [True]

    def die_in_the_second_chunk(calls):
        if dying[0] and len(calls) == 2:
            raise OperationalError("the server closed the connection")

    calls = chunks_recorded(monkeypatch, die_in_the_second_chunk)
    with pytest.raises(OperationalError):
        services.index_rebuild(job_id=job.pk)
    job.refresh_from_db()
    assert (job.state, job.done) == ("running", 2)
    calls.clear()
    dying[0] = False
    job = services.index_rebuild(job_id=job.pk)
    # Two passes over the five: indexed (from the third on: not the first chunk again), then
    # each matched against the whole index.
    assert (job.state, job.done, job.total) == ("done", 10, 10)
    assert [a for chunk in calls for a in chunk] == ids[2:] + ids


@pytest.mark.django_db
def test_beat_resumes_a_rebuild_whose_worker_stopped_beating(monkeypatch, unsent):
    process(ARTICLE)
    job = services.settings_update(top_n=128)
    sent = []
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kwargs: sent.append(kwargs))
    services.rebuilds_tend()
    assert sent == []  # started now: its worker is at it
    RebuildJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    services.rebuilds_tend()
    assert sent == [{"job_id": job.pk}]


# --- cancelled ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_rebuild_cancelled_midway_leaves_no_rows_and_the_active_verdicts(
    monkeypatch, settings, eager
):
    settings.DEDUP_CHUNK_SIZE = 2
    ingest(*TEXTS)  # processed at once (eager)
    before = matches()
    assert before and {version for *_, version in before} == {Settings.load().active_version}
    table = selectors.match_table()
    queue_before = sorted(zip(table.kind.tolist(), table.similarity.tolist(), strict=True))

    def set_the_value_back(calls):
        if len(calls) == 2:  # the first chunk is written
            services.settings_update(top_n=256)

    calls = chunks_recorded(monkeypatch, set_the_value_back)
    job = services.settings_update(top_n=64)  # the rebuild runs (eager) and is cancelled
    job.refresh_from_db()
    assert job.state == "failed" and "superseded" in job.message and len(calls) >= 2
    assert rows_of(job.version) == NONE
    assert matches() == before
    table = selectors.match_table()
    assert sorted(zip(table.kind.tolist(), table.similarity.tolist(), strict=True)) == queue_before


# --- new articles meanwhile ----------------------------------------------------------------------


@pytest.fixture
def api() -> Client:
    user = User.objects.create_user("editor", password="pw")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="dedup", codename__in=["view_article", "view_match"]
        )
    )
    key = ApiToken.issue(user, name="tests")[1]
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def checked(api: Client, text: str) -> set[int]:
    response = api.post("/api/check", json.dumps({"text": text}), content_type="application/json")
    assert response.status_code == 200, response.content
    return {m["article"] for m in response.json()["matches"]}


@pytest.mark.django_db(transaction=True)
def test_an_article_stored_during_a_rebuild_is_found_by_api_check_at_once(eager, unsent, api):
    [original, _] = ingest(ARTICLE, OTHER)
    job = services.settings_update(top_n=64)  # running; its worker has not reached it yet
    [late] = ingest(NEAR)  # processed now, during the rebuild
    assert Article.objects.get(pk=late).status == "done"
    assert late in checked(api, NEAR)
    # and the queue shows its match now, under the version it serves
    active = Settings.load().active_version
    assert Match.objects.filter(a_id=original, b_id=late, version=active).exists()
    job = services.index_rebuild(job_id=job.pk)
    assert job.state == "done" and Settings.load().active_version == job.version
    assert late in checked(api, NEAR)
    assert Match.objects.filter(a_id=original, b_id=late, version=job.version).exists()
    assert rows_of(active) == NONE


@pytest.mark.django_db
def test_a_rebuild_task_works_a_slice_then_sends_the_rest_behind_new_articles(
    monkeypatch, settings, unsent
):
    settings.DEDUP_CHUNK_SIZE = 2
    ids = process(*TEXTS)
    job = services.settings_update(top_n=128)
    sent = []
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kwargs: sent.append(kwargs))
    job = services.index_rebuild(job_id=job.pk, slice_seconds=0)  # one chunk a slice
    assert (job.state, job.done, job.position) == ("running", 2, ids[1])
    assert sent == [{"job_id": job.pk}]  # the rest: behind what is queued
    while job.state == "running":
        job = services.index_rebuild(job_id=job.pk, slice_seconds=0)
    # Three chunks a pass (indexed, then matched), a slice each.
    assert (job.state, job.done, len(sent)) == ("done", 10, 6)
