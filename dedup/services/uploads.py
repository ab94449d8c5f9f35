"""Uploads: a file stored as it came (upload_create), then read by a worker into articles,
chunk by chunk (upload_process); an upload is done once all its articles are finished."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.conf import settings as django_settings
from django.core.files import File
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from dedup.db import int_array, pg_cursor
from dedup.engine.records import BadRow, InputError
from dedup.errors import ArticleInvalid, UploadTooLarge
from dedup.models import (
    Article,
    ArticleStatus,
    AuditAction,
    Decision,
    Match,
    UploadBatch,
    UploadState,
)
from dedup.readers import SUPPORTED, Limits, upload_rows
from dedup.services.audit import audit_record
from dedup.services.broker import broker_idle
from dedup.services.ingest import article_clean, articles_enqueue
from dedup.services.webhooks import upload_finished_notify

ANALYZE_AFTER_ROWS = 5000  # an upload this big refreshes the article table's statistics
MAX_UPLOAD_ERRORS = 100  # per-row errors kept on an upload; the counts stay exact

logger = logging.getLogger(__name__)


def storable(message: str) -> str:
    """Return a message with what PostgreSQL cannot store (NUL, lone surrogates) spelled out."""
    return message.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _articles_insert(rows: list[tuple[dict, int]], *, upload_id: int, now: datetime) -> list[int]:
    """Insert an upload's articles (fields, row number); rows made already are left alone.
    Return the ids of those rows' articles still waiting to be processed."""
    # One statement, every column one array: about twice as fast as bulk_create here.
    with pg_cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO dedup_article (title, body, source, url, external_id, published_at,
                created_at, dated_at, content_hash, length, status, status_message, upload_id,
                "row", attempts)
            SELECT t, b, s, u, e, p, %s, coalesce(p, %s), h, n, %s, '', %s, r, 0
            FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[],
                        %s::timestamptz[], %b::text[], %s::int[], %s::int[])
                AS x(t, b, s, u, e, p, h, n, r)
            ON CONFLICT (upload_id, "row") DO NOTHING
            RETURNING id
            """,
            [
                now, now, ArticleStatus.PENDING, upload_id,
                [f["title"] for f, _ in rows],
                [f["body"] for f, _ in rows],
                [f["source"] for f, _ in rows],
                [f["url"] for f, _ in rows],
                [f["external_id"] for f, _ in rows],
                [f["published_at"] for f, _ in rows],
                [Article.hash_body(f["body"]) for f, _ in rows],
                int_array(len(f["body"]) for f, _ in rows),
                int_array(row for _, row in rows),
            ],
        )  # fmt: skip
        ids = [article_id for (article_id,) in cursor.fetchall()]
        if len(ids) < len(rows):  # a run before this one made some: those still waiting
            cursor.execute(
                'SELECT id FROM dedup_article WHERE upload_id = %s AND "row" = ANY(%s::int[])'
                " AND status = %s",
                [upload_id, int_array(row for _, row in rows), ArticleStatus.PENDING],
            )
            ids += [article_id for (article_id,) in cursor.fetchall()]
    return sorted(set(ids))


def upload_create(
    *, file, name: str, user=None, source: str = "", published_at: datetime | None = None
) -> UploadBatch:
    """Store an uploaded file and have a worker read it; nothing is parsed here. `source`
    and `published_at` are given to the rows that name none."""
    limit = django_settings.DEDUP_MAX_UPLOAD_BYTES
    size = getattr(file, "size", None)
    if size is None:
        file.seek(0, 2)
        size = file.tell()
        file.seek(0)
    if size > limit:
        raise UploadTooLarge(
            f"{name} is {size / 2**20:.1f} MiB, over the limit of {limit / 2**20:.0f} MiB "
            "(DEDUP_MAX_UPLOAD_MB): split it into smaller files"
        )
    safe_name = PurePosixPath(name.replace("\\", "/")).name or "upload"
    with transaction.atomic():
        batch = UploadBatch(
            name=storable(name)[:300],
            uploaded_by=user,
            source=source.strip()[:200],
            published_at=published_at,
        )
        batch.file.save(safe_name, File(file, name=safe_name), save=False)
        batch.save()
        transaction.on_commit(lambda: _upload_send(batch.pk))
    return batch


WAITING_FOR_QUEUE = (
    "waiting for the queue (Redis), which was not answering: read as soon as it answers"
)


def _upload_send(upload_id: int) -> None:
    """Have a worker read the upload. With the broker down the upload waits, stored, saying
    so, and beat's uploads_requeue_stuck sends it once the broker answers: nobody re-sends."""
    from kombu.exceptions import OperationalError as BrokerDown

    from dedup import tasks

    try:
        tasks.upload_process.delay(upload_id=upload_id)
    except BrokerDown as error:
        logger.warning("upload %s waits for the broker: %s", upload_id, error)
        UploadBatch.objects.filter(id=upload_id, state=UploadState.RECEIVED).update(
            message=WAITING_FOR_QUEUE
        )


def uploads_requeue_stuck(*, older_than_seconds: int | None = None) -> int:
    """Send again the uploads received but not yet read after this many seconds (default
    DEDUP_UPLOAD_RESEND_SECONDS, a lease when the broker holds no task waiting): those that
    arrived while the broker was down, or whose task was lost; and those left half read by a
    task that gave up, which nobody is reading. A copy of a task that is still queued reads
    nothing twice (upload_process)."""
    from dedup import tasks

    if older_than_seconds is None:
        older_than_seconds = django_settings.DEDUP_UPLOAD_RESEND_SECONDS
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    # Nothing queued: an upload received a lease ago has no task coming (Redis came back empty).
    lapsed = now - timedelta(seconds=django_settings.DEDUP_LEASE_SECONDS)
    if cutoff < lapsed and broker_idle():
        cutoff = lapsed
    waiting = UploadBatch.objects.filter(state=UploadState.RECEIVED, created_at__lte=cutoff)
    ids = list(waiting.order_by("id").values_list("id", flat=True))
    # Read in part by a task that gave up (the database away longer than its retries): the
    # rest of the file is read by a copy, which skips the rows made already.
    reading = UploadBatch.objects.filter(state=UploadState.PARSING, created_at__lte=cutoff)
    ids += [u for u in reading.order_by("id").values_list("id", flat=True) if not _being_read(u)]
    for upload_id in ids:
        tasks.upload_process.delay(upload_id=upload_id)
    UploadBatch.objects.filter(id__in=ids, message=WAITING_FOR_QUEUE).update(message="")
    if ids:
        logger.info("sent %d waiting uploads again", len(ids))
    return len(ids)


def chunk_limit(flushed: int, first: int = 50) -> int:
    """Return the most rows of an upload's chunk number `flushed` (from 0): 50, 100, 200,
    then DEDUP_CHUNK_SIZE, so that progress moves (300 rows in one chunk went 0 to 100%)."""
    largest = max(1, django_settings.DEDUP_CHUNK_SIZE)
    return min(largest, first << min(flushed, 20))


@dataclass
class _Reading:
    """What reading one upload has counted so far, and its rows waiting to be stored."""

    batch: UploadBatch
    made: set[int]  # rows stored by an earlier run of this upload
    now: datetime = field(default_factory=timezone.now)
    total: int = 0
    accepted: int = 0
    rejected: int = 0
    errors: list[dict] = field(default_factory=list)
    pending: list[tuple[dict, int]] = field(default_factory=list)  # (fields, row number)
    flushed: int = 0  # chunks stored so far

    def accept(self, fields: dict, number: int) -> None:
        self.accepted += 1
        if number not in self.made:
            self.pending.append((fields, number))
        if len(self.pending) >= chunk_limit(self.flushed):
            self.flush()

    def reject(self, number: int, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_UPLOAD_ERRORS:
            self.errors.append({"row": number, "message": storable(message)})

    def flush(self) -> None:
        """Store the pending rows and the counts so far, in one transaction."""
        upload_id = self.batch.id
        with transaction.atomic():
            # Another run of this upload (a task delivered twice) may have made some already.
            created = _articles_insert(self.pending, upload_id=upload_id, now=self.now)
            articles_enqueue(sorted(created))
            UploadBatch.objects.filter(id=upload_id).update(
                total_rows=self.total,
                accepted=self.accepted,
                rejected=self.rejected,
                errors=self.errors,
            )
        self.pending.clear()
        self.flushed += 1


def _upload_fields(row, batch: UploadBatch) -> dict:
    """Return an upload row's article fields (the upload's source and date where it names
    none), or raise ArticleInvalid saying where the row is wrong."""
    if isinstance(row, BadRow):
        raise ArticleInvalid(f"{row.where}: {row.reason}")
    where, obj = row
    try:
        fields = article_clean(obj)
    except ArticleInvalid as error:
        raise ArticleInvalid(f"{where}: {error.message}") from None
    if not fields["source"]:
        fields["source"] = batch.source
    if fields["published_at"] is None:
        fields["published_at"] = batch.published_at
    return fields


def upload_process(*, upload_id: int) -> UploadBatch:
    """Read a stored upload into articles, chunk by chunk; bad rows are recorded, not fatal.

    Run again (a retry), it recounts the file and creates only the rows it has not created."""
    with _upload_reader(upload_id) as alone:
        if not alone:  # another copy of the task is reading it (sent again while queued)
            return UploadBatch.objects.get(id=upload_id)
        return _upload_read_all(upload_id)


def _reader_key(upload_id: int) -> list[str]:
    return [f"upload-read\x1f{upload_id}"]


def _being_read(upload_id: int) -> bool:
    """Return whether a task is reading the upload now (it holds the reader's lock)."""
    with _upload_reader(upload_id) as alone:
        return not alone


@contextmanager
def _upload_reader(upload_id: int):
    """Yield whether this process is the only one reading the upload: a session lock, which
    PostgreSQL lets go when a worker dies, so that a retried task can read it again."""
    key = _reader_key(upload_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", key)
        alone = cursor.fetchone()[0]
    try:
        yield alone
    finally:
        if alone:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", key)


def _upload_read_all(upload_id: int) -> UploadBatch:
    batch = UploadBatch.objects.get(id=upload_id)
    # Processing: every row was read (its file is gone); a task delivered again has no more to do.
    if batch.state in (UploadState.PROCESSING, UploadState.DONE, UploadState.FAILED):
        return batch
    UploadBatch.objects.filter(id=upload_id).update(state=UploadState.PARSING, message="")
    made = set(Article.objects.filter(upload_id=upload_id).values_list("row", flat=True))
    reading = _Reading(batch, made)
    limits = Limits(
        article_bytes=django_settings.DEDUP_MAX_ARTICLE_BYTES,
        unpacked_bytes=django_settings.DEDUP_MAX_UNPACKED_BYTES,
    )
    try:
        with batch.file.open("rb") as stream:
            for number, row in enumerate(upload_rows(stream, batch.name, limits=limits), 1):
                reading.total += 1
                try:
                    reading.accept(_upload_fields(row, batch), number)
                except ArticleInvalid as error:
                    reading.reject(number, error.message)
            reading.flush()
    except (InputError, OSError, ValueError) as error:
        return _upload_fail(batch, str(error))
    return _upload_read(batch, reading)


def _upload_read(batch: UploadBatch, reading: _Reading) -> UploadBatch:
    """End the reading of an upload: failed when no row could be read, else processing."""
    if reading.total == 0:
        return _upload_fail(batch, f"{batch.name} holds no articles; {SUPPORTED}")
    if reading.accepted == 0:
        first = reading.errors[0]["message"] if reading.errors else ""
        return _upload_fail(
            batch,
            f"none of the {reading.total} rows could be read (first: {first}); {SUPPORTED}",
        )
    UploadBatch.objects.filter(id=batch.id).update(state=UploadState.PROCESSING)
    _upload_file_delete(batch)
    if reading.accepted >= ANALYZE_AFTER_ROWS:
        # The planner's statistics of the article table are now far off; autovacuum would
        # fix them within minutes, while the workers are busy with these very articles.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE dedup_article")
    upload_finish_if_processed(batch.id)
    batch.refresh_from_db()
    return batch


def upload_abandon(*, upload_id: int, error: Exception) -> None:
    """Mark an upload failed by an error no retry mends, so that it is not left unfinished."""
    UploadBatch.objects.filter(
        id=upload_id, state__in=(UploadState.RECEIVED, UploadState.PARSING)
    ).update(
        state=UploadState.FAILED,
        message=storable(
            f"could not be read ({type(error).__name__}: {str(error)[:300]}); the rows read "
            "before it are kept; report this to an admin and upload the rest again"
        ),
        finished_at=timezone.now(),
    )


def _upload_file_delete(batch: UploadBatch) -> None:
    """Delete an upload's file once its rows are read: the articles hold what it held."""
    if batch.file:
        batch.file.delete(save=False)
        UploadBatch.objects.filter(id=batch.pk).update(file="")


def _upload_fail(batch: UploadBatch, message: str) -> UploadBatch:
    fields = {
        "state": UploadState.FAILED,
        "message": storable(message),
        "finished_at": timezone.now(),
    }
    if UploadBatch.objects.filter(id=batch.pk).exclude(state=UploadState.FAILED).update(**fields):
        upload_finished_notify(upload_id=batch.pk)  # once, when it fails
    else:
        UploadBatch.objects.filter(id=batch.pk).update(**fields)
    _upload_file_delete(batch)
    batch.refresh_from_db()
    return batch


def upload_finish_if_processed(upload_id: int, *, recount: bool = False) -> None:
    """Mark an upload done once all its articles are finished: by its counter, or (recount)
    by looking for an article still waiting, which also catches articles deleted meanwhile."""
    processing = UploadBatch.objects.filter(id=upload_id, state=UploadState.PROCESSING)
    if recount:
        busy = (ArticleStatus.PENDING, ArticleStatus.PROCESSING)
        if Article.objects.filter(upload_id=upload_id, status__in=busy).exists():
            return
    else:
        processing = processing.filter(processed__gte=F("accepted"))
    if processing.update(state=UploadState.DONE, finished_at=timezone.now()):
        upload_finished_notify(upload_id=upload_id)


@transaction.atomic
def upload_delete(*, upload_id: int, user=None) -> int:
    """Delete an upload with its articles and all that hangs on them (fingerprints, index
    rows, matches, decisions), in the audit log under `user`; return how many articles went.

    An article of another upload that was set aside as an exact copy of one of them was never
    indexed: it is sent to the workers again, to be fingerprinted or to find another original."""
    batch = UploadBatch.objects.select_for_update().get(id=upload_id)
    orphans = list(
        Article.objects.filter(exact_of__upload_id=upload_id)
        .exclude(upload_id=upload_id)
        .values_list("id", flat=True)
    )
    _total, per_model = Article.objects.filter(upload_id=upload_id).delete()
    Article.objects.filter(id__in=orphans).update(
        status=ArticleStatus.PENDING, exact_of=None, status_message="", claimed_at=None
    )
    articles_enqueue(sorted(orphans))
    gone = {
        "articles": per_model.get(Article._meta.label, 0),
        "matches": per_model.get(Match._meta.label, 0),
        "decisions": per_model.get(Decision._meta.label, 0),
    }
    audit_record(action=AuditAction.UPLOAD_DELETE, user=user, obj=batch, changes=gone)
    name = batch.file.name
    batch.delete()
    if name:
        transaction.on_commit(lambda: batch.file.storage.delete(name))
    return gone["articles"]
