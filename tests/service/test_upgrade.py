"""Upgrading to a release that stores rows another way: the index version names what is
stored, and a database indexed by an older release is rebuilt by itself, once, while answers
keep coming from the old rows without failing on what this release cannot read."""

from __future__ import annotations

import logging
import threading

import pytest
from django.core.management import call_command
from django.db import connection

from dedup import index, services, tasks
from dedup.engine import features as engine_features
from dedup.engine.verify import Features
from dedup.management.commands import rebuild as rebuild_command
from dedup.models import (
    Article,
    Fingerprint,
    Match,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
)
from tests.texts import ARTICLE, EXACT, NEAR, OTHER, PAGE

TEXTS = (ARTICLE, NEAR, PAGE, EXACT, OTHER)


def process(*texts: str) -> list[int]:
    """Store and process articles here, sending no task to the workers."""
    rows = [{"title": f"t{i}", "body": text} for i, text in enumerate(texts)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.articles_process, "delay", lambda **kwargs: None)
        ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    return ids


def format_1(data: bytes) -> bytes:
    """Return packed features as a release of FEATURES_FORMAT 1 stored them (its format byte)."""
    data = bytes(data)
    return data[:4] + bytes([1]) + data[5:]


def old_release() -> str:
    """Make the database look indexed by the release before the features format was part of
    the version: format-1 features, every row under the version without `/f2`. Return it."""
    settings = index.settings_current()
    old = settings.index_version.rsplit("/", 1)[0]
    for fingerprint in Fingerprint.objects.all():
        fingerprint.features = format_1(fingerprint.features)
        fingerprint.version = old
        fingerprint.save(update_fields=["features", "version"])
    for model in (SegmentRow, PassageKey, Match):
        model.objects.update(version=old)
    Settings.objects.filter(pk=1).update(active_version=old)
    index.caches_clear()
    return old


def assert_rebuilt_under_the_new_version(pair: tuple[int, int]) -> None:
    """Check what a finished upgrade leaves: every row under this release's version, readable."""
    services.index_clean()  # sent once the switch commits: the old release's rows go
    settings = Settings.load()
    version = settings.index_version
    assert settings.active_version == version
    done = set(Article.objects.filter(status="done").values_list("id", flat=True))
    stored = dict(Fingerprint.objects.filter(version=version).values_list("article_id", "features"))
    assert set(stored) == done
    for data in stored.values():
        Features.from_bytes(data)  # readable by this release
    for model in (Fingerprint, SegmentRow, PassageKey, Match):
        assert set(model.objects.values_list("version", flat=True)) == {version}, model
    assert Match.objects.filter(a_id=min(pair), b_id=max(pair), kind="near").exists()


@pytest.fixture
def sent(monkeypatch) -> list[dict]:
    """Rebuilds sent to the workers (none is: the test runs them)."""
    calls: list[dict] = []
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kwargs: calls.append(kwargs))
    return calls


# --- the version -------------------------------------------------------------------------------


def test_index_version_names_the_features_format(monkeypatch):
    settings = Settings()
    now = settings.index_version
    assert now.endswith(f"/f{engine_features.FEATURES_FORMAT}")
    monkeypatch.setattr(engine_features, "FEATURES_FORMAT", engine_features.FEATURES_FORMAT + 1)
    assert settings.index_version != now
    assert settings.index_version.endswith(f"/f{engine_features.FEATURES_FORMAT}")


# --- reading old rows --------------------------------------------------------------------------


@pytest.mark.django_db
def test_features_load_skips_unreadable_features_and_logs_once(caplog):
    article, near = process(ARTICLE, NEAR)
    version = Settings.load().index_version
    stored = Fingerprint.objects.get(article_id=near, version=version)
    stored.features = format_1(stored.features)
    stored.save(update_fields=["features"])
    index.caches_clear()
    with caplog.at_level(logging.WARNING, logger="dedup.index"):
        assert set(index.features_load(article_ids=[article, near], version=version)) == {article}
        assert set(index.features_load(article_ids=[article, near], version=version)) == {article}
    [record] = [r for r in caplog.records if r.name == "dedup.index"]
    assert f"article {near}" in record.getMessage() and "format 1" in record.getMessage()


@pytest.mark.django_db
def test_until_the_rebuild_ends_answers_come_from_the_old_rows_without_failing():
    process(*TEXTS)
    old = old_release()
    found = services.text_check(text=NEAR)  # no stored features can be read: none verified
    assert (found["version"], found["matches"]) == (old, [])
    [late] = process(NEAR + "另外补充一句话。")  # indexed under the new version, not failed
    assert Article.objects.get(pk=late).status == "done"
    assert Fingerprint.objects.get(article_id=late).version == Settings.load().index_version


# --- starting the rebuild ----------------------------------------------------------------------


@pytest.mark.django_db
def test_an_upgrade_starts_one_rebuild_that_restores_the_index(
    sent, django_capture_on_commit_callbacks
):
    article, near, *_ = process(*TEXTS)
    assert services.index_upgrade() is None  # this release made these rows: nothing to do
    old_release()
    with django_capture_on_commit_callbacks(execute=True):
        job = services.index_upgrade()
        assert services.index_upgrade() is None  # running already
    assert sent == [{"job_id": job.pk}]
    assert job.version == Settings.load().index_version and job.total == 4
    job = services.index_rebuild(job_id=job.pk)
    assert (job.state, job.done, job.articles) == ("done", 8, 4)  # indexed, then matched
    assert_rebuilt_under_the_new_version((article, near))
    assert services.index_upgrade() is None and RebuildJob.objects.count() == 1


@pytest.mark.django_db
def test_an_old_releases_rebuild_is_superseded_by_one_to_the_new_version(sent):
    process(ARTICLE)
    old = old_release()
    stale = RebuildJob.objects.create(version=f"{old}-top_n-changed", total=1)
    job = services.index_upgrade()
    stale.refresh_from_db()
    assert stale.state == "failed" and "superseded" in stale.message
    assert job.version == Settings.load().index_version
    assert services.index_rebuild(job_id=stale.pk).state == "failed"


@pytest.mark.django_db(transaction=True)
def test_workers_checking_at_the_same_moment_start_one_rebuild(sent):
    process(ARTICLE, NEAR)
    old_release()
    barrier = threading.Barrier(4, timeout=20)
    started, errors = [], []

    def check() -> None:
        try:
            barrier.wait()
            started.append(services.index_upgrade())
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=check) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    [job] = [one for one in started if one is not None]
    assert list(RebuildJob.objects.values_list("id", flat=True)) == [job.pk]
    assert sent == [{"job_id": job.pk}]


@pytest.mark.django_db
def test_rebuild_command_after_an_upgrade_rebuilds_to_the_new_version(monkeypatch, capsys):
    article, near, *_ = process(*TEXTS)
    old = old_release()
    monkeypatch.setattr(rebuild_command, "worker_running", lambda: False)
    call_command("rebuild")
    out = capsys.readouterr().out
    version = Settings.load().index_version
    assert version != old and f"to {version} (4 article(s))" in out and "done: 4" in out
    assert_rebuilt_under_the_new_version((article, near))


@pytest.mark.django_db
def test_beat_checks_for_an_upgrade_every_few_minutes(sent, settings):
    every = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "dedup.tasks.index_upgrade" in every
    process(ARTICLE)
    old_release()
    tasks.index_upgrade.apply().get()
    assert RebuildJob.objects.get().version == Settings.load().index_version


@pytest.mark.django_db
def test_index_health_says_whether_the_upgrades_rebuild_runs(sent, capsys):
    process(ARTICLE)
    old = old_release()
    call_command("index_health")
    out = capsys.readouterr().out
    assert f"version in use: {old}" in out and "no rebuild running" in out
    services.index_upgrade()
    call_command("index_health")
    assert f"{Settings.load().index_version} (rebuilding)" in capsys.readouterr().out


# --- with workers ------------------------------------------------------------------------------


def test_workers_started_after_an_upgrade_rebuild_once(worker_factory, wait_until):
    article, near, *_ = process(*TEXTS)
    old_release()
    # Two workers (four pool processes) starting at the same moment: each checks as it starts.
    workers = [worker_factory(wait=False), worker_factory(wait=False)]
    for one in workers:
        one.wait_ready()

    def finished() -> bool:
        return RebuildJob.objects.filter(state="done").exists()

    wait_until(finished, timeout=60, message="the upgrade's rebuild done")
    [job] = RebuildJob.objects.all()
    assert (job.version, job.done, job.articles) == (Settings.load().index_version, 8, 4)
    assert sum(one.log().count(f"rebuild {job.pk} started") for one in workers) == 1
    assert_rebuilt_under_the_new_version((article, near))
