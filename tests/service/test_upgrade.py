"""Upgrading to a release that stores rows another way: the index version names what is
stored, and answers keep coming from the old rows without failing on what this release cannot
read."""

from __future__ import annotations

import logging

import pytest

from dedup import index, services, tasks
from dedup.engine import verify
from dedup.models import Article, Fingerprint, Match, PassageKey, SegmentRow, Settings
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


# --- the version -------------------------------------------------------------------------------


def test_index_version_names_the_features_format(monkeypatch):
    settings = Settings()
    now = settings.index_version
    assert now.endswith(f"/f{verify.FEATURES_FORMAT}")
    monkeypatch.setattr(verify, "FEATURES_FORMAT", verify.FEATURES_FORMAT + 1)
    assert settings.index_version != now
    assert settings.index_version.endswith(f"/f{verify.FEATURES_FORMAT}")


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
