"""Processing articles: a chunk claimed, fingerprinted, indexed and matched
(articles_process); articles stuck waiting sent again (articles_requeue_stuck); index rows
outside the retention window deleted (articles_prune)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.conf import settings as django_settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from dedup import index
from dedup.db import change_lock, columns, int_array, pg_cursor
from dedup.models import (
    Article,
    ArticleStatus,
    Match,
    MatchKind,
    PassageKey,
    UploadBatch,
    UploadState,
)
from dedup.services.broker import broker_idle
from dedup.services.matching import Clock, matches_find
from dedup.services.uploads import upload_finish_if_processed
from dedup.services.webhooks import webhooks_notify
from dedup.textindex import text_index_seal_if_due

logger = logging.getLogger("dedup.services")


def articles_process(*, article_ids: list[int], stale_after: int | None = None) -> None:
    """Fingerprint, index and match a chunk of articles; one failing does not stop the others.

    An article is claimed when pending, or processing but claimed more than `stale_after`
    seconds ago (default DEDUP_LEASE_SECONDS: a claim is a lease that the chunk renews while it
    runs, so an older one was left by a worker that stopped; 0 when a task is retried or
    delivered again, since then the claim is its own). The chunk is claimed, read, indexed and
    finished in a few statements; only the lookups go article by article.

    Articles are processed under the active version while a rebuild runs (index.
    processing_settings): api/check and the queue find them at once, and the rebuild's final
    sweep indexes them under its own. A rebuild switching over in the middle of a chunk makes
    it start again under the new version, its claim its own."""
    if stale_after is None:
        stale_after = django_settings.DEDUP_LEASE_SECONDS
    for _ in range(3):
        try:
            return _chunk_process(article_ids, stale_after)
        except index.VersionMoved as moved:
            logger.info("the index version moved from %s: the chunk again", moved)
            stale_after = 0
    raise RuntimeError(f"the index version kept moving under articles {article_ids[:5]}...")


def _chunk_process(article_ids: list[int], stale_after: int) -> None:
    """Claim, fingerprint, index and match the chunk under the version of new articles."""
    settings, version = index.processing_settings(index.settings_current())
    detector = index.detector_for(settings)
    plan = settings.plan()
    clock = Clock()
    claimed = _articles_claim(article_ids, stale_after, version)
    if not claimed:
        return
    clock.lap("claim")
    with _lease_kept([article.id for article, _ in claimed]):
        _claimed_process(claimed, settings, version, detector, plan, clock)


def _claimed_process(claimed, settings, version, detector, plan, clock: Clock) -> None:
    articles = [article for article, _ in claimed]
    # An article indexed by an earlier run of this task (one that then failed) stays indexed:
    # it is not turned into an exact copy of a text that was processed meanwhile.
    indexed = {article.id for article, seen in claimed if seen}
    exact = {a: o for a, o in _exact_originals(articles).items() if a not in indexed}
    clock.lap("read")
    failed: dict[int, str] = {}
    items = _features_made([a for a in articles if a.id not in exact], detector, failed)
    clock.lap("features")
    with transaction.atomic():
        index.version_check(version)  # first: the share lock holds until the commit
        written = index.index_store(items=items, version=version, plan=plan)
    clock.lap("store")
    if index.index_vacuum_if_due(written):
        clock.lap("vacuum")
    # Committed before looking: of two near-copies indexed at once, whichever looks second
    # finds the other (both may; the unique pair keeps one match).
    rows = [
        Match(
            a_id=min(a, b), b_id=max(a, b), kind=MatchKind.EXACT, distance=0, similarity=1.0,
            version=version,
        )
        for b, a in exact.items()
    ]  # fmt: skip
    found = matches_find(items, settings, detector, version, plan, clock)
    done = []
    for item, result in zip(items, found, strict=True):
        if isinstance(result, Exception):
            logger.error("article %s failed: %r", item.article_id, result)
            failed[item.article_id] = f"{type(result).__name__}: {result}"[:500]
            continue
        rows += result
        done.append(item.article_id)
    _exact_in_flight(rows)
    _chunk_write(rows, articles, done, exact, failed, version)
    clock.lap("write")
    if text_index_seal_if_due():
        clock.lap("text index")
    logger.info("articles_process: %d articles, %s", len(claimed), clock)


# Renewing a lease never waits on a row the chunk's own transaction holds (it finishes them).
_LEASE_RENEW = """
    UPDATE dedup_article a SET claimed_at = %s
    FROM (
        SELECT id FROM dedup_article
        WHERE id = ANY(%s::bigint[]) AND status = %s
        ORDER BY id
        FOR NO KEY UPDATE SKIP LOCKED
    ) AS mine
    WHERE a.id = mine.id
"""


@contextmanager
def _lease_kept(article_ids: list[int]) -> Iterator[None]:
    """Renew the claim on these articles every third of DEDUP_LEASE_SECONDS while the block
    runs, from a thread of its own (its own database connection): a claim older than a lease
    is a dead worker's, which beat's sweep sends again within seconds."""
    every = max(django_settings.DEDUP_LEASE_SECONDS / 3, 0.5)
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(every):
                try:
                    with pg_cursor() as cursor:
                        cursor.execute(
                            _LEASE_RENEW,
                            [timezone.now(), int_array(article_ids), ArticleStatus.PROCESSING],
                        )
                except DatabaseError:  # the database away: the claim lapses, the sweep resends
                    pass
        finally:
            connection.close()

    thread = threading.Thread(target=renew, name="dedup-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def _features_made(articles: list[Article], detector, failed: dict[int, str]) -> list:
    """Return the Indexed fingerprint and features of each article; one whose text fails is
    recorded in `failed` (its message), and the others go on."""
    items = []
    for article in articles:
        try:
            fingerprint, features = detector.fingerprint_and_features(article.body)
        except Exception as error:  # one bad text must not sink the chunk
            logger.exception("article %s failed", article.id)
            failed[article.id] = f"{type(error).__name__}: {error}"[:500]
            continue
        items.append(index.Indexed(article.id, fingerprint, features))
    return items


def _chunk_write(
    rows: list[Match],
    articles: list[Article],
    done: list[int],
    exact: dict[int, int],
    failed: dict[int, str],
    version: str,
) -> None:
    """Write a chunk's matches and finish its articles and their uploads' counts, at once,
    if the version they were found under is still the one (else raise VersionMoved)."""
    # In pair order: two workers inserting the same pairs wait for each other, never deadlock.
    rows.sort(key=lambda row: (row.a_id, row.b_id))
    upload_of = {article.id: article.upload_id for article in articles if article.upload_id}
    with transaction.atomic():
        index.version_check(version)  # before change_lock, as a rebuild's switch takes them
        change_lock()  # first: matches take ids in commit order (the API's cursors, webhooks)
        Match.objects.bulk_create(rows, ignore_conflicts=True)
        if rows:
            transaction.on_commit(webhooks_notify)
        finished = _articles_finish(done, exact, failed, timezone.now())
        per_upload = Counter(upload_of[i] for i in finished if i in upload_of)
        for upload_id, count in sorted(per_upload.items()):
            UploadBatch.objects.filter(id=upload_id).update(processed=F("processed") + count)
    for upload_id in sorted(per_upload):
        upload_finish_if_processed(upload_id)


def _articles_finish(
    done: list[int], exact: dict[int, int], failed: dict[int, str], now: datetime
) -> list[int]:
    """Mark processed articles done, exact copies exact (of their original) and failures
    failed; return the ids finished now. Only an article still processing is finished, so
    each is finished (and counted on its upload) once."""
    rows = (
        [(article_id, None, ArticleStatus.DONE, "") for article_id in done]
        + [(a, original, ArticleStatus.EXACT, "") for a, original in sorted(exact.items())]
        + [(a, None, ArticleStatus.FAILED, message) for a, message in sorted(failed.items())]
    )
    if not rows:
        return []
    # The chunk's ids drive the join: a filter on status could make the planner read the
    # status index, whose statistics lag behind an upload's hundred thousand pending rows.
    with pg_cursor() as cursor:
        cursor.execute(
            """
            WITH chunk AS MATERIALIZED (
                SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[])
                    AS c(id, original, status, message)
            )
            UPDATE dedup_article a
            SET status = chunk.status, exact_of_id = chunk.original,
                status_message = chunk.message, processed_at = %s
            FROM chunk
            WHERE a.id = chunk.id AND a.status = %s
            RETURNING a.id
            """,
            [*columns(rows), now, ArticleStatus.PROCESSING],
        )
        return [article_id for (article_id,) in cursor.fetchall()]


def _exact_in_flight(rows: list[Match]) -> None:
    """Call exact the near matches of two identical texts: a copy whose original was still
    being processed elsewhere passed the content-hash check, but not this one."""
    same = [r for r in rows if r.kind == MatchKind.NEAR and r.distance == 0 and r.similarity == 1]
    if not same:
        return
    ids = {r.a_id for r in same} | {r.b_id for r in same}
    hashes = dict(Article.objects.filter(id__in=ids).values_list("id", "content_hash"))
    for row in same:
        if hashes.get(row.a_id) == hashes.get(row.b_id):
            row.kind, row.shared_passages = MatchKind.EXACT, []


def _articles_claim(
    article_ids: list[int], stale_after: int, version: str
) -> list[tuple[Article, bool]]:
    """Claim the articles nobody is working on; return them (id, body, content hash) in id
    order, each with whether it is indexed under the version already (by an earlier run)."""
    now = timezone.now()
    stale = now - timedelta(seconds=stale_after)
    # Claim and read in one statement. The chunk's ids drive the join (see _articles_finish).
    with pg_cursor() as cursor:
        cursor.execute(
            """
            WITH chunk AS MATERIALIZED (SELECT unnest(%s::bigint[]) AS id)
            UPDATE dedup_article a
            SET status = %s, claimed_at = %s, attempts = a.attempts + 1
            FROM (
                SELECT d.id FROM chunk JOIN dedup_article d ON d.id = chunk.id
                WHERE d.status = %s
                    OR (d.status = %s AND (d.claimed_at IS NULL OR d.claimed_at <= %s))
                ORDER BY d.id
                FOR NO KEY UPDATE OF d SKIP LOCKED
            ) AS free
            WHERE a.id = free.id
            RETURNING a.id, a.body, a.content_hash, a.upload_id, EXISTS (
                SELECT 1 FROM dedup_fingerprint f
                WHERE f.article_id = a.id AND f.version = %s
            )
            """,
            [
                int_array(article_ids), ArticleStatus.PROCESSING, now, ArticleStatus.PENDING,
                ArticleStatus.PROCESSING, stale, version,
            ],
        )  # fmt: skip
        rows = sorted(cursor.fetchall())
    return [
        (Article(id=i, body=body, content_hash=h, upload_id=u), seen)
        for i, body, h, u, seen in rows
    ]


ORIGINAL_STATUSES = (ArticleStatus.DONE, ArticleStatus.PENDING, ArticleStatus.PROCESSING)


def _exact_originals(articles: list[Article]) -> dict[int, int]:
    """Return {article: the earliest article with the same text} for the exact copies among
    these: of a text stored more than once, the one with the lowest id that is done, waiting
    or being processed is the original, and the others copy it.

    Waiting and in-flight originals count too: two workers processing twins at once (one file
    uploaded twice at the same moment) each see both, and agree on which is the original,
    so the text is indexed once; the original is processed in its own chunk."""
    first: dict[str, int] = {}
    hashes = sorted({a.content_hash for a in articles})
    # By hash alone, the status checked here: with a status condition the planner may
    # combine in the status index, which reads every article done (its statistics lag
    # behind a big upload).
    with pg_cursor() as cursor:
        cursor.execute(
            "SELECT content_hash, id, status FROM dedup_article"
            " WHERE content_hash = ANY(%s::text[]) ORDER BY id",
            [hashes],
        )
        earlier = [(h, i) for h, i, status in cursor.fetchall() if status in ORIGINAL_STATUSES]
    for content_hash, article_id in earlier:
        first.setdefault(content_hash, article_id)
    copies = {}
    for article in articles:
        original = first.setdefault(article.content_hash, article.id)
        if original != article.id:
            copies[article.id] = original
    return copies


def articles_requeue_stuck(
    *, older_than_seconds: int | None = None, lease_seconds: int | None = None
) -> int:
    """Send again the articles whose claim lapsed (not renewed for `lease_seconds`, default
    DEDUP_LEASE_SECONDS: their worker stopped) and those waiting since they were last sent
    `older_than_seconds` ago (default DEDUP_STUCK_AFTER_SECONDS), or a lease ago when the
    broker holds no task waiting (theirs was lost); return how many. Uploads whose articles
    are all finished (some perhaps deleted meanwhile) are marked done."""
    if older_than_seconds is None:
        older_than_seconds = django_settings.DEDUP_STUCK_AFTER_SECONDS
    if lease_seconds is None:
        lease_seconds = django_settings.DEDUP_LEASE_SECONDS
    for upload_id in UploadBatch.objects.filter(state=UploadState.PROCESSING).values_list(
        "id", flat=True
    ):
        upload_finish_if_processed(upload_id, recount=True)
    now = timezone.now()
    lapsed = now - timedelta(seconds=lease_seconds)
    waiting = now - timedelta(seconds=older_than_seconds)
    if waiting < lapsed and broker_idle():
        waiting = lapsed
    # claimed_at of a pending article records when it was last sent again, so that a long
    # queue is not sent twice every time this runs.
    stuck = Article.objects.filter(
        Q(status=ArticleStatus.PENDING, claimed_at__isnull=True, created_at__lte=waiting)
        | Q(status=ArticleStatus.PENDING, claimed_at__lte=waiting)
        | Q(status=ArticleStatus.PROCESSING, claimed_at__lte=lapsed)
        | Q(status=ArticleStatus.PROCESSING, claimed_at__isnull=True)
    )
    ids = list(stuck.order_by("id").values_list("id", flat=True))
    if not ids:
        return 0
    from dedup import tasks

    Article.objects.filter(id__in=ids, status=ArticleStatus.PENDING).update(claimed_at=now)
    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    for start in range(0, len(ids), size):
        tasks.articles_process.delay(
            article_ids=ids[start : start + size], stale_after=lease_seconds
        )
    logger.info("requeued %d stuck articles", len(ids))
    return len(ids)


def articles_prune(*, now: datetime | None = None) -> dict[str, int]:
    """Move the segment index's day partitions with the retention window (make the coming
    days', drop those before it) and delete the passage keys of articles outside it; return
    the partitions made and dropped, and the rows deleted one by one (segment rows of the
    default partition, passage keys)."""
    now = now or timezone.now()
    start = index.retention_start(index.settings_current(), now)
    done = index.partitions_maintain(
        start=start and start.astimezone(UTC).date(), today=now.astimezone(UTC).date()
    )
    passages = 0
    if start is not None:
        passages, _ = PassageKey.objects.filter(article__dated_at__lt=start).delete()
    return {
        "partitions_made": done["made"],
        "partitions_dropped": done["dropped"],
        "partitions_merged": done["merged"],
        "segment_rows_deleted": done["deleted"],
        "passage_keys_deleted": passages,
    }
