"""The pipeline end to end: a real Celery worker, Redis and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal

from django.core.files.uploadedfile import SimpleUploadedFile

from dedup import selectors, services, tasks
from dedup.models import Article, Fingerprint, Match, RebuildJob, SegmentRow, Settings, UploadBatch
from tests.texts import ARTICLE, EXACT, NEAR, OTHER, PAGE, stranger


def upload(name: str, rows: list) -> UploadBatch:
    data = "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows)
    return services.upload_create(file=SimpleUploadedFile(name, data.encode()), name=name)


def state(batch: UploadBatch) -> str:
    return UploadBatch.objects.get(pk=batch.pk).state


def kinds() -> dict[tuple[str, str], str]:
    return {
        (m.a.external_id, m.b.external_id): m.kind for m in Match.objects.select_related("a", "b")
    }


def all_processed() -> bool:
    return not Article.objects.filter(status__in=["pending", "processing"]).exists()


def test_upload_is_fingerprinted_and_matched_with_bad_rows_reported(worker, wait_until):
    batch = upload(
        "news.jsonl",
        [
            {"id": "a", "title": "讲话", "text": ARTICLE},
            {"id": "near", "text": NEAR},
            "{oops",
            {"id": "page", "text": PAGE},
            {"id": "other", "text": OTHER},
            {"id": "nobody"},
            {"id": "exact", "text": EXACT},
        ],
    )
    wait_until(lambda: state(batch) in ("done", "failed"), message="upload finished")
    status = selectors.upload_status(upload_id=batch.pk)
    assert (status["state"], status["total_rows"], status["accepted"]) == ("done", 7, 5)
    assert (status["rejected"], status["processed"], status["progress"]) == (2, 5, 1.0)
    assert [e["row"] for e in status["errors"]] == [3, 6]
    assert "not valid JSON" in status["errors"][0]["message"]
    found = kinds()
    assert found[("a", "near")] == "near"
    assert found[("a", "page")] == "partial"
    assert ("other", "page") in found or ("page", "other") in found  # the page holds it too
    exact = [k for pair, k in found.items() if "exact" in pair]
    assert exact == ["exact"]
    assert Article.objects.get(external_id="exact").status == "exact"


def test_a_wholly_bad_file_fails_with_a_message(worker, wait_until):
    batch = services.upload_create(
        file=SimpleUploadedFile("table.csv", b"name,age\nli,3\n"), name="table.csv"
    )
    wait_until(lambda: state(batch) == "failed", message="upload failed")
    batch.refresh_from_db()
    assert "text (or body) column" in batch.message
    assert not Article.objects.exists()


def test_tasks_sent_twice_change_nothing_twice(worker, wait_until):
    batch = upload(
        "twice.jsonl", [{"id": str(i), "text": t} for i, t in enumerate((ARTICLE, NEAR, PAGE))]
    )
    tasks.upload_process.delay(upload_id=batch.pk)  # a second delivery of the same upload
    wait_until(lambda: state(batch) == "done" and all_processed(), message="upload done")
    ids = list(Article.objects.order_by("id").values_list("id", flat=True))
    assert len(ids) == 3
    before = sorted(Match.objects.values_list("id", "a_id", "b_id", "kind"))
    for _ in range(2):
        tasks.articles_process.delay(article_ids=ids)
    Article.objects.filter(id__in=ids).update(status="pending")  # as if never finished
    tasks.articles_process.delay(article_ids=ids)
    wait_until(all_processed, message="reprocessed")
    assert sorted(Match.objects.values_list("id", "a_id", "b_id", "kind")) == before
    assert Fingerprint.objects.count() == 3


def big_upload(count: int) -> tuple[UploadBatch, int]:
    rows = [{"id": "a", "text": ARTICLE}, {"id": "near", "text": NEAR}]
    rows += [{"id": f"s{i}", "text": stranger(i, sentences=10)} for i in range(count)]
    rows.append({"id": "page", "text": PAGE})
    return upload("big.jsonl", rows), len(rows)


def assert_complete(total: int) -> None:
    assert Article.objects.filter(status="done").count() == total
    assert Fingerprint.objects.count() == total
    table_count = Settings.load().plan().table_count
    assert SegmentRow.objects.count() == total * table_count
    found = kinds()
    assert found[("a", "near")] == "near" and found[("a", "page")] == "partial"


def test_killed_pool_process_mid_chunk_is_redelivered(worker_factory, wait_until, settings):
    settings.DEDUP_CHUNK_SIZE = 500  # one chunk: the kill lands in the middle of it
    worker = worker_factory(pool="prefork", concurrency=1)
    batch, total = big_upload(80)
    claimed = Article.objects.filter(status="processing")
    wait_until(lambda: claimed.count() >= 5, message="chunk claimed")
    [child] = worker.children()
    os.kill(child, signal.SIGKILL)
    assert Article.objects.filter(status="done").count() < total, "too late to kill mid-chunk"
    wait_until(all_processed, timeout=60, message="redelivered chunk finished")
    assert_complete(total)
    # Claimed by the killed process and once more by the redelivery, never a third time.
    assert not Article.objects.filter(attempts__gt=2).exists()
    wait_until(lambda: state(batch) == "done", message="upload done")


def test_killed_worker_mid_chunk_loses_nothing(worker_factory, wait_until, settings):
    settings.DEDUP_CHUNK_SIZE = 500
    first = worker_factory(pool="solo", concurrency=1)
    _, total = big_upload(80)
    wait_until(lambda: Article.objects.filter(status="processing").count() >= 5, message="claimed")
    first.kill()
    assert Article.objects.filter(status="done").count() < total, "too late to kill mid-chunk"
    # Another worker: the unacknowledged chunk comes back after the visibility timeout, and
    # the claimed articles are taken back by the redelivery (or by requeueing stuck articles).
    worker_factory(pool="solo", concurrency=1)
    wait_until(all_processed, timeout=60, message="chunk redelivered and finished")
    assert_complete(total)
    assert services.articles_requeue_stuck(older_than_seconds=0) == 0


def test_config_change_rebuilds_through_the_worker(worker, wait_until):
    batch = upload(
        "r.jsonl", [{"id": i, "text": t} for i, t in enumerate((ARTICLE, NEAR, PAGE, EXACT))]
    )
    wait_until(lambda: state(batch) == "done", message="upload done")
    before = {(m.a_id, m.b_id, m.kind) for m in Match.objects.all()}
    job = services.settings_update(top_n=128)
    wait_until(lambda: RebuildJob.objects.get(pk=job.pk).state != "running", message="rebuild done")
    job.refresh_from_db()
    assert job.state == "done" and job.done == job.total == 6 and job.articles == 3  # two passes
    assert Settings.load().active_version == job.version
    versions = lambda: set(Fingerprint.objects.values_list("version", flat=True))  # noqa: E731
    wait_until(lambda: versions() == {job.version}, message="the old version's rows deleted")
    assert {(m.a_id, m.b_id, m.kind) for m in Match.objects.all()} == before
    assert set(Match.objects.values_list("version", flat=True)) == {job.version}


def test_two_worker_processes_match_simultaneous_near_copies_once(worker, wait_until):
    ids = [a.pk for a in services.articles_ingest(rows=[{"body": ARTICLE}])]
    wait_until(all_processed)
    # Near copies sent as separate tasks at once: the two pool processes take them together.
    for text in (NEAR, NEAR + "另外补充一句话。"):
        ids += [a.pk for a in services.articles_ingest(rows=[{"body": text}])]
    wait_until(all_processed, message="processed")
    assert Match.objects.count() == 3  # every pair of the three, once
    assert len({(m.a_id, m.b_id) for m in Match.objects.all()}) == 3
