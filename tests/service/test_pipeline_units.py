"""The pipeline's services on the test database, without a worker (tasks are not sent)."""

from __future__ import annotations

import io
import threading
import zipfile
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone

from dedup import index, selectors, services, tasks
from dedup.engine.verify import Features
from dedup.errors import ArticleInvalid, SettingsInvalid, UploadTooLarge
from dedup.index.segments import combined_keys
from dedup.models import (
    Article,
    Fingerprint,
    Match,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
    UploadBatch,
    to_unsigned,
)
from dedup.selectors import Bars
from tests.texts import ARTICLE, EXACT, NEAR, OTHER, PAGE, stranger

pytestmark = pytest.mark.django_db


def ingest(*texts: str, **fields) -> list[int]:
    rows = [{"title": f"t{i}", "body": text, **fields} for i, text in enumerate(texts)]
    return [a.pk for a in services.articles_ingest(rows=rows)]


def process(*texts: str) -> list[int]:
    ids = ingest(*texts)
    services.articles_process(article_ids=ids)
    return ids


def pairs() -> dict[tuple[int, int], str]:
    return {(m.a_id, m.b_id): m.kind for m in Match.objects.all()}


def snapshot() -> tuple:
    return (
        sorted(Match.objects.values_list("id", "a_id", "b_id", "kind", "similarity")),
        Fingerprint.objects.count(),
        SegmentRow.objects.count(),
        PassageKey.objects.count(),
        sorted(Article.objects.values_list("id", "status", "exact_of_id")),
    )


# --- ingest -----------------------------------------------------------------------------------


def test_ingest_stores_fields_and_dates(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        [article] = services.articles_ingest(
            rows=[
                {
                    "id": 7,
                    "title": " 新年讲话 ",
                    "text": ARTICLE,
                    "source": "新华社",
                    "url": "https://example.com/1",
                    "published_at": "1998-01-01T08:00:00+08:00",
                }
            ]
        )
    article.refresh_from_db()
    assert (article.external_id, article.title, article.source) == ("7", "新年讲话", "新华社")
    assert article.dated_at == article.published_at
    assert article.content_hash == Article.hash_body(ARTICLE)
    assert article.status == "pending" and article.length == len(ARTICLE)
    assert len(callbacks) == 1  # one chunk sent once the transaction commits


@pytest.mark.parametrize(
    "row, field",
    [
        ({"title": "x"}, "body"),
        ({"body": "   "}, "body"),
        ({"body": 12}, "body"),
        ({"body": ARTICLE, "published_at": "去年"}, "published_at"),
        ({"body": ARTICLE, "title": "长" * 501}, "title"),
        ({"body": ARTICLE, "id": ["a"]}, "id"),
    ],
)
def test_ingest_with_a_bad_row_stores_nothing_and_names_it(row, field):
    with pytest.raises(ArticleInvalid) as caught:
        services.articles_ingest(rows=[{"body": ARTICLE}, row])
    assert caught.value.row == 1 and caught.value.field == field
    assert "articles[1]: " in caught.value.message
    assert Article.objects.count() == 0


def test_ingest_sends_chunks(settings, django_capture_on_commit_callbacks, monkeypatch):
    settings.DEDUP_CHUNK_SIZE = 2
    sent = []
    monkeypatch.setattr(tasks.articles_process, "delay", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        ids = ingest(*(stranger(i) for i in range(5)))
    assert [kw["article_ids"] for kw in sent] == [ids[0:2], ids[2:4], ids[4:5]]


# --- processing -------------------------------------------------------------------------------


def test_near_partial_and_exact_copies_are_matched():
    a, near, page, other, exact = process(ARTICLE, NEAR, PAGE, OTHER, EXACT)
    found = pairs()
    assert found[(a, near)] == "near"
    assert found[(a, page)] == "partial"
    assert found[(a, exact)] == "exact"
    assert (a, other) not in found and (near, other) not in found
    assert Article.objects.get(pk=exact).exact_of_id == a
    assert set(Article.objects.values_list("status", flat=True)) == {"done", "exact"}
    partial = Match.objects.get(a=a, b=page)
    assert partial.shared_passages and all(len(p) == 2 for p in partial.shared_passages)
    exact_match = Match.objects.get(a=a, b=exact)
    assert (exact_match.distance, exact_match.similarity) == (0, 1.0)


def test_index_rows_and_stored_features():
    [a] = process(ARTICLE)
    settings = index.settings_current()
    fingerprint = Fingerprint.objects.get(article_id=a)
    assert fingerprint.version == settings.index_version == settings.active_version
    features = Features.from_bytes(fingerprint.features)
    detector = index.detector_for(settings)
    assert features.fingerprint == to_unsigned(fingerprint.value)
    assert features.to_bytes() == detector.features(ARTICLE).to_bytes()
    assert fingerprint.status == "ok" and fingerprint.tokens > 10
    plan = settings.plan()
    assert SegmentRow.objects.filter(article_id=a).count() == plan.table_count
    keys = combined_keys(plan, np.array([features.fingerprint], np.uint64))[:, 0]
    stored = SegmentRow.objects.filter(article_id=a).values_list("key", flat=True)
    assert sorted(to_unsigned(key) for key in stored) == sorted(keys.tolist())
    assert PassageKey.objects.filter(article_id=a).count() == len(features.passage_keys) + len(
        features.fact_keys
    )


def test_processing_twice_changes_nothing():
    ids = process(ARTICLE, NEAR, PAGE, EXACT)
    before = snapshot()
    services.articles_process(article_ids=ids)
    services.articles_process(article_ids=ids, stale_after=0)  # a redelivery takes them back
    Article.objects.update(status="pending")
    services.articles_process(article_ids=ids)
    after = snapshot()
    assert after[:4] == before[:4]


def test_text_without_words_is_done_without_index_rows():
    [a] = process("!!! 123 ...")
    article = Article.objects.get(pk=a)
    assert article.status == "done"
    assert Fingerprint.objects.get(article_id=a).value is None
    assert not SegmentRow.objects.filter(article_id=a).exists()


def test_a_failing_article_does_not_sink_the_chunk(monkeypatch):
    ids = ingest(ARTICLE, "boom " + OTHER, NEAR)
    detector = index.detector_for(index.settings_current())
    real = detector.fingerprint_and_features

    def flaky(text):
        if text.startswith("boom"):
            raise RuntimeError("tokenizer exploded")
        return real(text)

    monkeypatch.setattr(detector, "fingerprint_and_features", flaky)
    services.articles_process(article_ids=ids)
    statuses = dict(Article.objects.values_list("id", "status"))
    assert [statuses[i] for i in ids] == ["done", "failed", "done"]
    failed = Article.objects.get(pk=ids[1])
    assert "tokenizer exploded" in failed.status_message
    assert pairs() == {(ids[0], ids[2]): "near"}


def test_retention_window_limits_candidates_and_prune_removes_old_rows():
    settings = index.settings_current()
    settings.retention_days = 30
    settings.save()
    old = (timezone.now() - timedelta(days=90)).isoformat()
    [a] = ingest(ARTICLE, published_at=old)
    services.articles_process(article_ids=[a])
    [b] = process(NEAR)
    assert not Match.objects.exists()  # the old one is outside the window
    done = services.articles_prune()
    assert done["segment_rows_deleted"] + done["passage_keys_deleted"] > 0
    assert not SegmentRow.objects.filter(article_id=a).exists()
    assert not PassageKey.objects.filter(article_id=a).exists()
    assert SegmentRow.objects.filter(article_id=b).exists()
    assert Article.objects.count() == 2


def test_stuck_articles_are_requeued_and_taken_back(monkeypatch):
    sent = []
    monkeypatch.setattr(tasks.articles_process, "delay", lambda **kw: sent.append(kw))
    fresh, stuck, waiting = ingest(ARTICLE, NEAR, OTHER)
    long_ago = timezone.now() - timedelta(hours=1)
    Article.objects.filter(pk=stuck).update(status="processing", claimed_at=long_ago)
    Article.objects.filter(pk=waiting).update(created_at=long_ago)
    Article.objects.filter(pk=fresh).update(status="processing", claimed_at=timezone.now())
    assert services.articles_requeue_stuck(older_than_seconds=600) == 2
    assert [kw["article_ids"] for kw in sent] == [[stuck, waiting]]
    assert services.articles_requeue_stuck(older_than_seconds=600) == 1  # not the pending again
    services.articles_process(**sent[0])
    assert Article.objects.get(pk=stuck).status == "done"
    assert Article.objects.get(pk=fresh).status == "processing"  # someone else's, still


# --- checking a text --------------------------------------------------------------------------


def test_text_check_finds_duplicates_and_stores_nothing():
    a, _ = process(ARTICLE, OTHER)
    before = snapshot(), Article.objects.count()
    answer = services.text_check(text=NEAR)
    assert answer["status"] == "ok" and len(answer["fingerprint"]) == 16
    assert [(m["article"], m["kind"]) for m in answer["matches"]] == [(a, "near")]
    assert answer["matches"][0]["title"] == "t0"
    assert services.text_check(text=EXACT)["matches"][0]["kind"] == "exact"
    assert (snapshot(), Article.objects.count()) == before
    assert services.text_check(text="。。。")["fingerprint"] is None
    with pytest.raises(services.DedupError, match="k must be"):
        services.text_check(text=ARTICLE, k=99)


# --- uploads ----------------------------------------------------------------------------------


def upload(name: str, data: bytes) -> UploadBatch:
    return services.upload_create(file=SimpleUploadedFile(name, data), name=name)


def jsonl(*rows) -> bytes:
    import json

    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def test_upload_with_bad_rows_keeps_good_rows_and_reports_them():
    batch = upload(
        "news.jsonl",
        jsonl(
            {"id": "a", "title": "讲话", "text": ARTICLE},
            "{not json",
            {"id": "b", "title": "没有正文"},
            "",
            {"id": "c", "text": NEAR, "published_at": "1998-01-02"},
        ),
    )
    assert batch.state == "received" and batch.file.name
    batch = services.upload_process(upload_id=batch.pk)
    assert (batch.state, batch.total_rows, batch.accepted, batch.rejected) == (
        "processing",
        4,
        2,
        2,
    )
    assert [e["row"] for e in batch.errors] == [2, 3]
    assert "news.jsonl:2: not valid JSON" in batch.errors[0]["message"]
    assert "news.jsonl:3" in batch.errors[1]["message"] and "body" in batch.errors[1]["message"]
    articles = list(Article.objects.filter(upload=batch).order_by("row"))
    assert [(a.external_id, a.row) for a in articles] == [("a", 1), ("c", 4)]
    services.upload_process(upload_id=batch.pk)  # a retry creates nothing twice
    assert Article.objects.filter(upload=batch).count() == 2
    batch.refresh_from_db()
    assert batch.state == "processing" and not batch.file  # the file was deleted once read
    status = selectors.upload_status(upload_id=batch.pk)
    assert (status["processed"], status["progress"]) == (0, 0.0)
    services.articles_process(article_ids=[a.pk for a in articles])
    status = selectors.upload_status(upload_id=batch.pk)
    assert (status["state"], status["processed"], status["progress"]) == ("done", 2, 1.0)


def test_an_uploads_file_is_deleted_once_read_or_refused(settings):
    good = upload("a.jsonl", jsonl({"text": ARTICLE}))
    bad = upload("b.csv", b"name,age\nx,1\n")
    paths = [settings.MEDIA_ROOT / b.file.name for b in (good, bad)]
    assert all(path.exists() for path in paths)
    for batch in (good, bad):
        services.upload_process(upload_id=batch.pk)
        batch.refresh_from_db()
        assert batch.file.name == "" and batch.name in ("a.jsonl", "b.csv")
    assert not any(path.exists() for path in paths)
    assert [good.state, bad.state] == ["processing", "failed"]


def test_upload_csv_and_zip():
    csv = f'id,title,text,source\n1,讲话,"{ARTICLE}",新华社\n2,短\n3,别的,{OTHER},\n'.encode()
    batch = services.upload_process(upload_id=upload("a.csv", csv).pk)
    assert (batch.accepted, batch.rejected) == (2, 1)
    assert "has 2 fields" in batch.errors[0]["message"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pages/one.html", f"<html><p>{ARTICLE}</p></html>")
        archive.writestr("pages/two.txt", NEAR)
        archive.writestr("rows.jsonl", jsonl({"text": PAGE}, "[1]"))
        archive.writestr("notes.pdf", b"%PDF")
    batch = services.upload_process(upload_id=upload("many.zip", buffer.getvalue()).pk)
    assert (batch.total_rows, batch.accepted, batch.rejected) == (5, 3, 2)
    titles = set(Article.objects.filter(upload=batch).values_list("title", flat=True))
    assert {"one", "two"} <= titles


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("bad.csv", b"name,age\nx,1\n", "text (or body) column"),
        ("bad.zip", b"PK not really", "not a readable .zip"),
        ("bad.jsonl", b"\xfe\x00garbage\n\x00\x01\n", "none of the 2 rows"),
        ("utf16.jsonl", b"\xff\xfe{\x00}\x00", "is UTF-16; save the file as UTF-8"),
        ("empty.jsonl", b"", "holds no articles"),
        ("photo.png", b"\x89PNG", "cannot read .png"),
    ],
)
def test_a_wholly_bad_file_fails_with_what_to_do(name, data, reason):
    batch = services.upload_process(upload_id=upload(name, data).pk)
    assert batch.state == "failed" and reason in batch.message
    assert "JSON Lines" in batch.message or "UTF-8" in batch.message or "column" in batch.message
    assert not Article.objects.exists()
    assert selectors.upload_status(upload_id=batch.pk)["progress"] == 1.0


def test_upload_over_the_limit_is_refused(settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 10
    with pytest.raises(UploadTooLarge, match="split it"):
        upload("big.jsonl", b"x" * 11)
    assert not UploadBatch.objects.exists()


def test_upload_errors_are_capped_but_counted(monkeypatch):
    monkeypatch.setattr(services.uploads, "MAX_UPLOAD_ERRORS", 3)
    batch = services.upload_process(
        upload_id=upload("x.jsonl", jsonl(*["{"] * 10, {"text": ARTICLE})).pk
    )
    assert (batch.rejected, batch.accepted, len(batch.errors)) == (10, 1, 3)


# --- settings and rebuild ---------------------------------------------------------------------


def test_settings_change_rebuilds_and_switches(django_capture_on_commit_callbacks, monkeypatch):
    process(ARTICLE, NEAR, PAGE, EXACT)
    before = pairs()
    old = index.settings_current().active_version
    assert services.settings_update(threshold=4) is None  # no fingerprint change
    sent = []
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        job = services.settings_update(top_n=128)
    assert sent == [{"job_id": job.pk}] and job.state == "running"
    settings = Settings.load()
    assert settings.active_version == old != settings.index_version == job.version
    assert services.text_check(text=NEAR)["version"] == old  # answers stay on the old one
    [late] = process(stranger(1))  # processed meanwhile: under the active version
    assert set(Fingerprint.objects.filter(article_id=late).values_list("version", flat=True)) == {
        old
    }
    job = services.index_rebuild(job_id=job.pk)
    assert (job.state, job.done, job.articles) == ("done", 8, 4)  # indexed, then matched
    settings.refresh_from_db()
    assert settings.active_version == job.version
    assert services.index_clean()["fingerprints"] == 4  # sent once the switch commits
    assert set(Fingerprint.objects.values_list("version", flat=True)) == {job.version}
    assert set(SegmentRow.objects.values_list("version", flat=True)) == {job.version}
    assert set(Match.objects.values_list("version", flat=True)) == {job.version}
    assert pairs() == before
    assert services.text_check(text=NEAR)["version"] == job.version
    assert Fingerprint.objects.filter(article_id=late).exists()


def test_during_a_rebuild_the_active_settings_keep_what_applies_at_once():
    index.settings_current()
    services.settings_update(top_n=128, near=0.9, partial=0.8, retention_days=30, threshold=2)
    settings = Settings.load()
    active = settings.active()
    assert active.top_n == 256 and active.index_version == settings.active_version
    assert (active.near, active.partial, active.retention_days) == (0.9, 0.8, 30)
    assert active.threshold == 2


def test_settings_change_back_cancels_the_rebuild():
    process(ARTICLE)
    job = services.settings_update(top_n=64)
    assert services.settings_update(top_n=256) is None
    job.refresh_from_db()
    assert job.state == "failed" and "superseded" in job.message
    assert services.index_rebuild(job_id=job.pk).state == "failed"
    with pytest.raises(SettingsInvalid, match="unknown"):
        services.settings_update(colour="red")
    with pytest.raises(SettingsInvalid):
        services.settings_update(tokenizer="nonsense")
    assert RebuildJob.objects.filter(state="running").count() == 0


# --- reads ------------------------------------------------------------------------------------


def test_article_matches_and_index_health():
    a, near, page, exact, _ = process(ARTICLE, NEAR, PAGE, EXACT, OTHER)
    found = selectors.article_matches(article_id=a)
    assert {m.b_id for m in found} == {near, page, exact}
    assert found[0].b_id == exact  # most similar first
    strict = Bars(near=0.99, partial=0.99)
    assert {m.b_id for m in selectors.article_matches(article_id=a, bars=strict)} >= {exact}
    assert all(m.distance <= 2 for m in selectors.article_matches(article_id=a, k=2))
    health = selectors.index_health()
    assert health["articles"]["done"] == 4 and health["articles"]["exact"] == 1
    assert health["matches"]["exact"] == 1 and health["backlog"] == 0
    plan = index.settings_current().plan()
    assert health["segment_rows"] == 4 * plan.table_count
    assert health["hot_buckets"] == []


# --- the race ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_near_copies_processed_at_the_same_moment_match_once(monkeypatch):
    ids = ingest(ARTICLE, NEAR)
    barrier = threading.Barrier(2, timeout=20)
    real, looked = index.candidates_find_many, []

    def after_both_indexed(**kwargs):
        barrier.wait()  # both have committed their index rows: each will find the other
        looked.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(index, "candidates_find_many", after_both_indexed)
    errors = []

    def run(article_id):
        try:
            services.articles_process(article_ids=[article_id])
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert len(looked) == 2  # both looked, after both were indexed
    assert pairs() == {tuple(ids): "near"}
    assert Match.objects.count() == 1
    assert set(Article.objects.values_list("status", flat=True)) == {"done"}


def test_identical_texts_found_while_both_were_in_flight_are_exact_matches():
    # Two workers each took one of two identical texts before either was done: the content
    # hash check saw no original, so the verifier found them; the match still says exact.
    first, second = ingest(ARTICLE, ARTICLE + "\n")
    rows = [
        Match(a_id=first, b_id=second, kind="near", distance=0, similarity=1.0, version="v"),
        Match(a_id=first, b_id=second, kind="near", distance=0, similarity=0.99, version="v"),
    ]
    services.processing._exact_in_flight(rows)
    assert [r.kind for r in rows] == ["exact", "near"]


def test_thresholds_are_shares_and_the_short_text_one_reaches_the_detector():
    with pytest.raises(SettingsInvalid, match="near_short"):
        services.settings_update(near_short=1.5)
    with pytest.raises(SettingsInvalid, match="partial"):
        services.settings_update(partial=-0.1)
    assert services.settings_update(near_short=0.3) is None  # no rebuild: applies at once
    settings = index.settings_current()
    assert index.detector_for(settings).near_short == 0.3
    assert index.detector_for(settings.active()).near_short == 0.3


def test_a_rebuild_whose_version_changed_under_it_ends_failed_not_running(monkeypatch):
    process(ARTICLE)
    job = services.settings_update(top_n=64)
    real = services.rebuilds._rebuild_chunk

    def chunk_then_settings_move_on(*args, **kwargs):
        real(*args, **kwargs)
        Settings.objects.filter(pk=1).update(top_n=128)  # not through settings_update

    monkeypatch.setattr(services.rebuilds, "_rebuild_chunk", chunk_then_settings_move_on)
    job = services.index_rebuild(job_id=job.pk)
    assert job.state == "failed" and "superseded" in job.message
    assert index.settings_current().active_version != job.version  # never switched to it
