"""The same file uploaded twice at the same moment, read and processed at once by a worker's
two processes: each text is fingerprinted and indexed once, its twin stored as an `exact` copy
of it, and both uploads finish with counters equal to their rows."""

from __future__ import annotations

import json
import time

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.models import Count

from dedup import services
from dedup.models import Article, Fingerprint, Match, SegmentRow, UploadBatch
from tests.texts import stranger

ROWS = 600


def twin_file() -> bytes:
    rows = [{"id": f"story-{i}", "text": stranger(i)} for i in range(ROWS)]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def test_one_file_uploaded_twice_at_once_is_indexed_once_with_the_twins_exact(worker, wait_until):
    data = twin_file()
    first, second = (
        services.upload_create(file=SimpleUploadedFile(n, data), name=n)
        for n in ("wire.jsonl", "wire-again.jsonl")
    )
    start = time.monotonic()
    wait_until(
        lambda: set(UploadBatch.objects.values_list("state", flat=True)) == {"done"},
        timeout=240,
        message="both uploads finished",
    )
    print(f"\ntwo uploads of {ROWS} rows at once: {time.monotonic() - start:.1f} s")
    assert Article.objects.count() == 2 * ROWS
    statuses = dict(Article.objects.values_list("status").annotate(n=Count("id")).order_by())
    print(f"statuses: {statuses}")
    assert statuses == {"done": ROWS, "exact": ROWS}
    with connection.cursor() as cursor:  # every text: one original, one exact copy of it
        cursor.execute(
            "SELECT count(*) FROM (SELECT content_hash FROM dedup_article GROUP BY content_hash"
            " HAVING count(*) FILTER (WHERE status = 'done') = 1"
            " AND count(*) FILTER (WHERE status = 'exact') = 1) t"
        )
        assert cursor.fetchone()[0] == ROWS
    copies = Article.objects.filter(status="exact").select_related("exact_of")
    assert all(c.exact_of.content_hash == c.content_hash for c in copies)
    assert all(c.exact_of.status == "done" for c in copies)
    assert Fingerprint.objects.count() == ROWS, "a text fingerprinted twice"
    indexed = set(SegmentRow.objects.values_list("article_id", flat=True).distinct())
    assert indexed == set(Article.objects.filter(status="done").values_list("id", flat=True))
    assert Match.objects.filter(kind="exact").count() == ROWS
    assert not Match.objects.exclude(kind="exact").exists()
    for batch in UploadBatch.objects.all():
        assert (batch.accepted, batch.processed) == (ROWS, ROWS), batch
    assert {first.pk, second.pk} == set(UploadBatch.objects.values_list("id", flat=True))
