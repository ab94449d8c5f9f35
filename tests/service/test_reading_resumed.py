"""An upload left half read, by a task that gave up (PostgreSQL away longer than its retries:
180 s against about two minutes of backoff), is read to its end by beat's sweep: the rows made
before are kept once, the rest are read, and an upload a live task is reading is left to it."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections

from dedup import services, tasks
from dedup.models import Article, UploadBatch
from tests.texts import stranger

ROWS = 1000


def rows_file() -> bytes:
    rows = [{"id": f"r{i}", "text": stranger(i)} for i in range(ROWS)]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


@pytest.mark.django_db(transaction=True)
def test_an_upload_whose_reader_gave_up_mid_file_is_read_to_its_end(
    monkeypatch, settings, worker_factory, wait_until
):
    monkeypatch.setattr(tasks.upload_process, "delay", lambda **kwargs: None)
    monkeypatch.setattr(tasks.articles_process, "delay", lambda **kwargs: None)
    batch = services.upload_create(
        file=SimpleUploadedFile("big.jsonl", rows_file()), name="big.jsonl"
    )
    # What the task that gave up left: the first chunk read and stored, the upload "parsing",
    # the file on disk, nobody reading it.
    settings.DEDUP_CHUNK_SIZE = 400
    made = services.articles_ingest(
        rows=[{"body": stranger(i), "external_id": f"r{i}"} for i in range(400)]
    )
    Article.objects.filter(id__in=[a.id for a in made]).update(
        upload=batch, row=None, external_id=""
    )
    for number, article in enumerate(made, start=1):
        Article.objects.filter(id=article.id).update(row=number)
    UploadBatch.objects.filter(id=batch.pk).update(state="parsing", total_rows=400, accepted=400)

    other = connections.create_connection("default")  # a live reader holds its lock
    try:
        with other.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 0))", [f"upload-read\x1f{batch.pk}"]
            )
        assert services.uploads_requeue_stuck(older_than_seconds=0) == 0
    finally:
        other.close()

    monkeypatch.undo()
    worker_factory()
    services.articles_requeue_stuck(older_than_seconds=0)  # the first chunk's, sent by no one
    assert services.uploads_requeue_stuck(older_than_seconds=0) == 1
    wait_until(
        lambda: UploadBatch.objects.get(pk=batch.pk).state == "done",
        timeout=180,
        message="the half-read upload read to its end and processed",
    )
    batch.refresh_from_db()
    assert (batch.total_rows, batch.accepted, batch.rejected, batch.processed) == (
        ROWS, ROWS, 0, ROWS
    )  # fmt: skip
    rows = list(Article.objects.filter(upload=batch).values_list("row", flat=True))
    assert sorted(rows) == list(range(1, ROWS + 1)), "a row lost or stored twice"
    assert not batch.file, "the file is deleted once read"
