"""A short template filled in again by the thousand (issue 32): "Order N has shipped from the
warehouse today", one row each, through an upload and a real worker. Its rows share one
fingerprint (their buckets are hot: each row meets their earliest articles, not all of
them), and each states another order: no copies of one another. The upload is done in
seconds, its chunks bounded, and no match floods the queue; a real repost of one of them,
with its order kept, is still found."""

from __future__ import annotations

import json
import re
import time

from django.core.files.uploadedfile import SimpleUploadedFile

from dedup import services
from dedup.engine.verify import Detector
from dedup.index.segments import HOT_BUCKET_HITS
from dedup.models import Article, Match, UploadBatch

ROWS = 1_500
CHUNK = 300


def test_a_one_template_upload_is_done_in_seconds_with_no_match_flood(worker_factory, settings):
    settings.DEDUP_CHUNK_SIZE = CHUNK
    # A visibility timeout a chunk fits in, as in production (the tests' 4 s would have the
    # broker deliver a chunk again while it runs).
    worker = worker_factory(
        env_extra={"DEDUP_CHUNK_SIZE": str(CHUNK), "DEDUP_VISIBILITY_TIMEOUT": "120"}
    )
    rows = [
        {"id": f"n{n}", "text": f"Order {10_000 + n} has shipped from the warehouse today"}
        for n in range(ROWS)
    ]
    rows.append(
        {"id": "repost", "text": "Order 10007 has shipped from the warehouse today (via courier)"}
    )
    data = "\n".join(json.dumps(row) for row in rows).encode()
    start = time.monotonic()
    batch = services.upload_create(file=SimpleUploadedFile("orders.jsonl", data), name="o")
    while UploadBatch.objects.get(pk=batch.pk).state not in ("done", "failed"):
        assert time.monotonic() - start < 120, worker.log()[-3000:]
        time.sleep(0.5)
    assert UploadBatch.objects.get(pk=batch.pk).state == "done"
    assert set(Article.objects.values_list("status", flat=True)) == {"done"}
    found = {(m.a.external_id, m.b.external_id, m.kind) for m in Match.objects.all()}
    assert ("n7", "repost", "near") in found
    # Every other pair is two rows the engine cannot tell apart: a word is one unit, a code
    # point chosen by a 17-bit hash of it (dedup.engine.units), and two orders' numbers may
    # share one (5 pairs among these 1,500 rows).
    text = {row["id"]: row["text"] for row in rows}
    unit = Detector().features
    same = [
        (a, b)
        for a, b, _ in found - {("n7", "repost", "near")}
        if unit(text[a]).shingles.tolist() == unit(text[b]).shingles.tolist()
    ]
    assert len(same) == len(found) - 1 < ROWS // 100, sorted(found)[:10]
    # Each chunk verified a bounded number of candidates per article, however many rows
    # share its fingerprint.
    counts = [int(n) for n in re.findall(r"; candidates (\d+)", worker.log())]
    assert counts and max(counts) <= CHUNK * 3 * HOT_BUCKET_HITS, counts
