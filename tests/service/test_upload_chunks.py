"""A 300-row upload's progress moves (issue 31: it went from 0 to 100% in one step, its rows
all in one chunk of DEDUP_CHUNK_SIZE, 400): an upload's first chunks are small and grow."""

from __future__ import annotations

import json
import time

from django.core.files.uploadedfile import SimpleUploadedFile

from dedup import services
from dedup.models import UploadBatch
from dedup.services.uploads import chunk_limit
from tests.texts import stranger


def test_an_uploads_chunks_grow_to_the_chunk_size(settings):
    settings.DEDUP_CHUNK_SIZE = 400
    assert [chunk_limit(n) for n in range(6)] == [50, 100, 200, 400, 400, 400]
    settings.DEDUP_CHUNK_SIZE = 80
    assert [chunk_limit(n) for n in range(3)] == [50, 80, 80]


def test_a_300_row_uploads_progress_is_seen_between_0_and_300(worker, wait_until, settings):
    settings.DEDUP_CHUNK_SIZE = 400
    rows = "".join(
        json.dumps({"id": f"r{n}", "text": stranger(n, sentences=30)}, ensure_ascii=False) + "\n"
        for n in range(300)
    ).encode()
    file = SimpleUploadedFile("three-hundred.jsonl", rows)
    batch = services.upload_create(file=file, name="three-hundred.jsonl")
    seen = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        upload = UploadBatch.objects.get(pk=batch.pk)
        seen.add(upload.processed)
        if upload.state == "done":
            break
        time.sleep(0.02)
    assert upload.state == "done" and upload.processed == 300, upload.state
    assert seen & set(range(1, 300)), sorted(seen)  # seen part way, not only 0 and 300
