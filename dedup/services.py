"""Writes: ingest articles and uploads, fingerprint and match them, settings and rebuilds.

Every service here may run twice for the same input (a task retried, a message delivered
again after its worker died): rows are claimed with a conditional UPDATE, index rows and
matches are written with `ignore_conflicts`, and upload rows are keyed by (upload, row).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.conf import settings as django_settings
from django.core.files import File
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from dedup import index, rebuilds
from dedup.db import columns, int_array, pg_cursor
from dedup.engine.config import ConfigError
from dedup.engine.plan import PlanError
from dedup.engine.records import BadRow, InputError
from dedup.errors import ArticleInvalid, DedupError, SettingsInvalid, UploadTooLarge
from dedup.models import (
    Article,
    ArticleStatus,
    Fingerprint,
    Match,
    MatchKind,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
    UploadBatch,
    UploadState,
)
from dedup.readers import SUPPORTED, upload_rows

__all__ = [
    "ArticleInvalid",
    "DedupError",
    "SettingsInvalid",
    "UploadTooLarge",
    "articles_ingest",
    "articles_process",
    "articles_prune",
    "articles_requeue_stuck",
    "index_rebuild",
    "settings_update",
    "text_check",
    "upload_create",
    "upload_process",
]

logger = logging.getLogger(__name__)

ANALYZE_AFTER_ROWS = 5000  # an upload this big refreshes the article table's statistics
MAX_UPLOAD_ERRORS = 100  # per-row errors kept on an upload; the counts stay exact
_LIMITS = {"title": 500, "source": 200, "url": 2000, "external_id": 500}


# --- articles -------------------------------------------------------------------------------


def article_clean(row: dict, *, number: int | None = None, label: str = "") -> dict:
    """Return an article's fields from a row, or raise ArticleInvalid naming the field.

    `number` becomes the error's `row` (the list index for a request, 0-based); `label`
    starts its message (e.g. "articles[3]")."""
    at = f"{label}: " if label else ""
    if not isinstance(row, dict):
        example = '{"title": ..., "body": ...}'
        raise ArticleInvalid(f"{at}expected an object like {example}", row=number)
    body = row.get("body", row.get("text"))
    if body is None:
        raise ArticleInvalid(f'{at}needs a "body" (or "text")', row=number, field="body")
    if not isinstance(body, str):
        kind = type(body).__name__
        raise ArticleInvalid(f'{at}"body" must be a string, not {kind}', row=number, field="body")
    if not body.strip():
        raise ArticleInvalid(f'{at}"body" is empty', row=number, field="body")
    fields = {"body": body}
    names = (("title", "title"), ("source", "source"), ("url", "url"), ("external_id", "id"))
    for name, key in names:
        value = row.get(key)
        if value is None:
            value = ""
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ArticleInvalid(
                f'{at}"{key}" must be a string, not {type(value).__name__}', row=number, field=key
            )
        value = str(value).strip()
        if len(value) > _LIMITS[name]:
            raise ArticleInvalid(
                f'{at}"{key}" is {len(value)} characters long, at most {_LIMITS[name]} fit',
                row=number,
                field=key,
            )
        fields[name] = value
    fields["published_at"] = _parse_published(row.get("published_at"), at, number)
    return fields


def _parse_published(value, at: str, number: int | None) -> datetime | None:
    if value is None or value == "":
        return None
    parsed = None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value.strip())
            if parsed is None and (day := parse_date(value.strip())) is not None:
                parsed = datetime(day.year, day.month, day.day)
        except ValueError:
            parsed = None
    if parsed is None:
        raise ArticleInvalid(
            f'{at}"published_at" must be an ISO-8601 date or time like 2024-05-01T08:00:00+08:00,'
            f" not {value!r}",
            row=number,
            field="published_at",
        )
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed)
    return parsed


def _article(fields: dict, *, now: datetime, upload=None, row: int | None = None) -> Article:
    return Article(
        **fields,
        dated_at=fields["published_at"] or now,
        content_hash=Article.hash_body(fields["body"]),
        length=len(fields["body"]),
        upload=upload,
        row=row,
    )


def _articles_insert(rows: list[tuple[dict, int]], *, upload_id: int, now: datetime) -> list[int]:
    """Insert an upload's articles (fields, row number); rows made already are left alone.
    Return the ids of those rows' articles still waiting to be processed."""
    if connection.vendor != "postgresql":
        made = [_article(fields, now=now, upload=None, row=row) for fields, row in rows]
        for article in made:
            article.upload_id = upload_id
        Article.objects.bulk_create(made, ignore_conflicts=True)
        return list(
            Article.objects.filter(
                upload_id=upload_id, row__in=[row for _, row in rows], status=ArticleStatus.PENDING
            ).values_list("id", flat=True)
        )
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


def _enqueue_process(article_ids: list[int]) -> None:
    """Send the articles to the workers in chunks once the transaction commits."""
    from dedup import tasks

    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    for start in range(0, len(article_ids), size):
        chunk = list(article_ids[start : start + size])
        transaction.on_commit(lambda chunk=chunk: tasks.articles_process.delay(article_ids=chunk))


@transaction.atomic
def articles_ingest(*, rows: list[dict], upload=None, user=None) -> list[Article]:
    """Validate and store articles, then have them fingerprinted and matched."""
    if not isinstance(rows, list):
        raise ArticleInvalid("expected a list of articles")
    now = timezone.now()
    articles = [
        _article(article_clean(row, number=i, label=f"articles[{i}]"), now=now, upload=upload)
        for i, row in enumerate(rows)
    ]
    created = Article.objects.bulk_create(articles)
    _enqueue_process([a.pk for a in created])
    return created


def articles_process(*, article_ids: list[int], stale_after: int | None = None) -> None:
    """Fingerprint, index and match a chunk of articles; one failing does not stop the others.

    An article is claimed when pending, or processing but claimed more than `stale_after`
    seconds ago (default DEDUP_STUCK_AFTER_SECONDS; 0 when a task is retried or delivered again,
    since then the claim is its own). The chunk is claimed, read, indexed and finished in a few
    statements; only the lookups go article by article."""
    settings = index.settings_current()
    detector = index.detector_for(settings)
    if stale_after is None:
        stale_after = django_settings.DEDUP_STUCK_AFTER_SECONDS
    version, plan = settings.index_version, settings.plan()
    clock = _Clock()
    claimed = _articles_claim(article_ids, stale_after, version)
    if not claimed:
        return
    clock.lap("claim")
    articles = [article for article, _ in claimed]
    # An article indexed by an earlier run of this task (one that then failed) stays indexed:
    # it is not turned into an exact copy of a text that was processed meanwhile.
    indexed = {article.id for article, seen in claimed if seen}
    exact = {a: o for a, o in _exact_originals(articles).items() if a not in indexed}
    clock.lap("read")
    items, failed = [], {}
    for article in articles:
        if article.id in exact:
            continue
        try:
            fingerprint, features = detector.fingerprint_and_features(article.body)
        except Exception as error:  # one bad text must not sink the chunk
            logger.exception("article %s failed", article.id)
            failed[article.id] = f"{type(error).__name__}: {error}"[:500]
            continue
        items.append(index.Indexed(article.id, fingerprint, features))
    clock.lap("features")
    with transaction.atomic():
        written = index.index_store(items=items, version=version, plan=plan)
    clock.lap("store")
    if index.index_vacuum_if_due(written):
        clock.lap("vacuum")
    # Committed before looking: of two near-copies indexed at the same moment, whichever looks
    # second finds the other (both may; the unique pair keeps one match).
    rows = [
        Match(
            a_id=min(a, b), b_id=max(a, b), kind=MatchKind.EXACT, distance=0, similarity=1.0,
            version=version,
        )
        for b, a in exact.items()
    ]  # fmt: skip
    found = _matches_find(items, settings, detector, version, plan, clock)
    done = []
    for item, result in zip(items, found, strict=True):
        if isinstance(result, Exception):
            logger.error("article %s failed: %r", item.article_id, result)
            failed[item.article_id] = f"{type(result).__name__}: {result}"[:500]
            continue
        rows += result
        done.append(item.article_id)
    _exact_in_flight(rows)
    # In pair order: two workers inserting the same pairs wait for each other, never deadlock.
    rows.sort(key=lambda row: (row.a_id, row.b_id))
    upload_of = {article.id: article.upload_id for article in articles if article.upload_id}
    with transaction.atomic():
        Match.objects.bulk_create(rows, ignore_conflicts=True)
        finished = _articles_finish(done, exact, failed, timezone.now())
        per_upload = Counter(upload_of[i] for i in finished if i in upload_of)
        for upload_id, count in sorted(per_upload.items()):
            UploadBatch.objects.filter(id=upload_id).update(processed=F("processed") + count)
    for upload_id in sorted(per_upload):
        _upload_finish_if_processed(upload_id)
    clock.lap("write")
    logger.info("articles_process: %d articles, %s", len(claimed), clock)


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
    if connection.vendor != "postgresql":
        finished = []
        processing = Article.objects.filter(status=ArticleStatus.PROCESSING)
        for article_id, original, status, message in rows:
            changed = processing.filter(id=article_id).update(
                status=status, exact_of_id=original, status_message=message, processed_at=now
            )
            if changed:
                finished.append(article_id)
        return finished
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


class _Clock:
    """Seconds spent in the named parts of a task, for its log line (bench/pipeline.py reads
    them)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.parts: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.parts[name] = self.parts.get(name, 0.0) + now - self.last
        self.last = now

    def __str__(self) -> str:
        parts = " ".join(f"{name} {seconds:.3f}" for name, seconds in self.parts.items())
        counts = " ".join(f"{name} {count}" for name, count in self.counts.items())
        return f"{self.last - self.start:.3f} s: {parts}" + (f"; {counts}" if counts else "")


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
    if connection.vendor == "postgresql":
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
                    FOR UPDATE OF d SKIP LOCKED
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
    claimable = Q(status=ArticleStatus.PENDING) | Q(
        Q(claimed_at__isnull=True) | Q(claimed_at__lte=stale), status=ArticleStatus.PROCESSING
    )
    with transaction.atomic():
        ids = list(
            Article.objects.select_for_update(skip_locked=True)
            .filter(claimable, id__in=article_ids)
            .values_list("id", flat=True)
        )
        Article.objects.filter(id__in=ids).update(
            status=ArticleStatus.PROCESSING, claimed_at=now, attempts=F("attempts") + 1
        )
    articles = Article.objects.filter(id__in=ids).order_by("id")
    articles = articles.only("id", "body", "content_hash", "upload_id")
    indexed = set(
        Fingerprint.objects.filter(version=version, article_id__in=ids).values_list(
            "article_id", flat=True
        )
    )
    return [(article, article.id in indexed) for article in articles]


def _exact_originals(articles: list[Article]) -> dict[int, int]:
    """Return {article: the earliest article with the same text} for the exact copies among
    these (in id order): of a text twice in the chunk, the first is processed, the rest copy it."""
    first: dict[str, int] = {}
    hashes = sorted({a.content_hash for a in articles})
    if connection.vendor == "postgresql":
        # By hash alone, the status checked here: with a status condition the planner may
        # combine in the status index, which reads every article done (its statistics lag
        # behind a big upload).
        with pg_cursor() as cursor:
            cursor.execute(
                "SELECT content_hash, id, status FROM dedup_article"
                " WHERE content_hash = ANY(%s::text[]) ORDER BY id",
                [hashes],
            )
            earlier = [(h, i) for h, i, status in cursor.fetchall() if status == ArticleStatus.DONE]
    else:
        earlier = (
            Article.objects.filter(content_hash__in=hashes, status=ArticleStatus.DONE)
            .order_by("id")
            .values_list("content_hash", "id")
        )
    for content_hash, article_id in earlier:
        first.setdefault(content_hash, article_id)
    copies = {}
    for article in articles:
        original = first.setdefault(article.content_hash, article.id)
        if original != article.id:
            copies[article.id] = original
    return copies


def _matches_find(
    items, settings, detector, version, plan, clock: _Clock | None = None
) -> list[list[Match] | Exception]:
    """Return the unsaved matches of each indexed article (or the error that stopped it)."""
    queries = [(item.article_id, item.features) for item in items]
    if not queries:
        return []
    candidates = index.candidates_find_many(
        queries=queries,
        version=version,
        plan=plan,
        k=settings.k_max,
        since=index.retention_start(settings),
    )
    if clock:
        clock.lap("look up")
    found = index.duplicates_find_many(
        queries=queries,
        candidates=candidates,
        version=version,
        detector=detector,
        counts=clock.counts if clock else None,
    )
    if clock:
        clock.lap("verify")
    return [
        result if isinstance(result, Exception) else index.match_rows(result, version=version)
        for result in found
    ]


def articles_requeue_stuck(*, older_than_seconds: int | None = None) -> int:
    """Send again the articles waiting or processing for too long; return how many. Uploads
    whose articles are all finished (some perhaps deleted meanwhile) are marked done."""
    if older_than_seconds is None:
        older_than_seconds = django_settings.DEDUP_STUCK_AFTER_SECONDS
    for upload_id in UploadBatch.objects.filter(state=UploadState.PROCESSING).values_list(
        "id", flat=True
    ):
        _upload_finish_if_processed(upload_id, recount=True)
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    # claimed_at of a pending article records when it was last sent again, so that a long
    # queue is not sent twice every time this runs.
    stuck = Article.objects.filter(
        Q(status=ArticleStatus.PENDING, claimed_at__isnull=True, created_at__lte=cutoff)
        | Q(status=ArticleStatus.PENDING, claimed_at__lte=cutoff)
        | Q(status=ArticleStatus.PROCESSING, claimed_at__lte=cutoff)
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
            article_ids=ids[start : start + size], stale_after=older_than_seconds
        )
    logger.info("requeued %d stuck articles", len(ids))
    return len(ids)


def articles_prune(*, now: datetime | None = None) -> int:
    """Delete the index rows of articles outside the retention window; return how many."""
    start = index.retention_start(index.settings_current(), now)
    if start is None:
        return 0
    deleted, _ = SegmentRow.objects.filter(article__dated_at__lt=start).delete()
    passages, _ = PassageKey.objects.filter(article__dated_at__lt=start).delete()
    return deleted + passages


# --- checking a text ------------------------------------------------------------------------


def text_check(*, text: str, k: int | None = None) -> dict:
    """Return a text's fingerprint and the stored articles it duplicates; store nothing."""
    if not isinstance(text, str) or not text.strip():
        raise ArticleInvalid('needs a non-empty "text"', field="text")
    current = index.settings_current()
    settings = current.active()  # answers come from the active version until a rebuild ends
    version = current.active_version
    if k is None:
        k = settings.k_max
    if not 0 <= k <= settings.k_max:
        raise DedupError(f"k must be from 0 to {settings.k_max} (the index's k_max), not {k}")
    detector = index.detector_for(settings)
    fingerprint, features = detector.fingerprint_and_features(text)
    candidates = index.candidates_find(
        features=features,
        version=version,
        plan=settings.plan(),
        k=k,
        since=index.retention_start(settings),
    )
    found = index.duplicates_find(
        article_id=None,
        features=features,
        candidates=candidates,
        version=version,
        detector=detector,
    )
    titles = dict(Article.objects.filter(id__in=[d.b for d in found]).values_list("id", "title"))
    exact = set(
        Article.objects.filter(content_hash=Article.hash_body(text)).values_list("id", flat=True)
    )
    matches = [
        {
            "article": d.b,
            "title": titles.get(d.b, ""),
            "kind": MatchKind.EXACT if d.b in exact else d.kind,
            "distance": d.distance,
            "similarity": 1.0 if d.b in exact else d.similarity,
            "shared_passages": [list(p) for p in d.shared_passages],
        }
        for d in found
    ]
    matches.sort(key=lambda m: (-m["similarity"], m["article"]))
    return {
        "fingerprint": fingerprint.hex,
        "status": str(fingerprint.status),
        "tokens": fingerprint.tokens,
        "version": version,
        "matches": matches,
    }


# --- uploads --------------------------------------------------------------------------------


def upload_create(*, file, name: str, user=None) -> UploadBatch:
    """Store an uploaded file and have a worker read it; nothing is parsed here."""
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
        batch = UploadBatch(name=name[:300], uploaded_by=user)
        batch.file.save(safe_name, File(file, name=safe_name), save=False)
        batch.save()
        from dedup import tasks

        transaction.on_commit(lambda: tasks.upload_process.delay(upload_id=batch.pk))
    return batch


def upload_process(*, upload_id: int) -> UploadBatch:
    """Read a stored upload into articles, chunk by chunk; bad rows are recorded, not fatal.

    Run again (a retry), it recounts the file and creates only the rows it has not created."""
    batch = UploadBatch.objects.get(id=upload_id)
    if batch.state in (UploadState.DONE, UploadState.FAILED):
        return batch
    UploadBatch.objects.filter(id=upload_id).update(state=UploadState.PARSING)
    made = set(Article.objects.filter(upload_id=upload_id).values_list("row", flat=True))
    limit = django_settings.DEDUP_MAX_UPLOAD_BYTES
    total = accepted = rejected = 0
    errors: list[dict] = []
    pending: list[tuple[dict, int]] = []  # (fields, row number)
    now = timezone.now()

    def flush() -> None:
        with transaction.atomic():
            # Another run of this upload (a task delivered twice) may have made some already.
            created = _articles_insert(pending, upload_id=upload_id, now=now)
            _enqueue_process(sorted(created))
            UploadBatch.objects.filter(id=upload_id).update(
                total_rows=total, accepted=accepted, rejected=rejected, errors=errors
            )
        pending.clear()

    try:
        with batch.file.open("rb") as stream:
            for number, row in enumerate(upload_rows(stream, batch.name, max_bytes=limit), 1):
                total += 1
                try:
                    if isinstance(row, BadRow):
                        raise ArticleInvalid(f"{row.where}: {row.reason}", row=number)
                    where, obj = row
                    fields = article_clean(obj)
                except ArticleInvalid as error:
                    rejected += 1
                    if len(errors) < MAX_UPLOAD_ERRORS:
                        message = error.message
                        if not isinstance(row, BadRow):
                            message = f"{where}: {message}"
                        errors.append({"row": number, "message": message})
                    continue
                accepted += 1
                if number not in made:
                    pending.append((fields, number))
                if len(pending) >= django_settings.DEDUP_CHUNK_SIZE:
                    flush()
            flush()
    except (InputError, OSError, ValueError) as error:
        return _upload_fail(batch, str(error))
    if total == 0:
        return _upload_fail(batch, f"{batch.name} holds no articles; {SUPPORTED}")
    if accepted == 0:
        first = errors[0]["message"] if errors else ""
        return _upload_fail(
            batch, f"none of the {total} rows could be read (first: {first}); {SUPPORTED}"
        )
    UploadBatch.objects.filter(id=upload_id).update(state=UploadState.PROCESSING)
    if connection.vendor == "postgresql" and accepted >= ANALYZE_AFTER_ROWS:
        # The planner's statistics of the article table are now far off; autovacuum would
        # fix them within minutes, while the workers are busy with these very articles.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE dedup_article")
    _upload_finish_if_processed(upload_id)
    batch.refresh_from_db()
    return batch


def _upload_fail(batch: UploadBatch, message: str) -> UploadBatch:
    UploadBatch.objects.filter(id=batch.pk).update(
        state=UploadState.FAILED, message=message, finished_at=timezone.now()
    )
    batch.refresh_from_db()
    return batch


def _upload_finish_if_processed(upload_id: int, *, recount: bool = False) -> None:
    """Mark an upload done once all its articles are finished: by its counter, or (recount)
    by looking for an article still waiting, which also catches articles deleted meanwhile."""
    processing = UploadBatch.objects.filter(id=upload_id, state=UploadState.PROCESSING)
    if recount:
        busy = (ArticleStatus.PENDING, ArticleStatus.PROCESSING)
        if Article.objects.filter(upload_id=upload_id, status__in=busy).exists():
            return
    else:
        processing = processing.filter(processed__gte=F("accepted"))
    processing.update(state=UploadState.DONE, finished_at=timezone.now())


# --- settings and rebuilds ------------------------------------------------------------------

EDITABLE = ("threshold", "k_max", "capacity", "top_n", "tokenizer", "retention_days",
            "stop_words", "near", "partial")  # fmt: skip


def settings_update(**fields) -> RebuildJob | None:
    """Change the settings; when what is stored changes (the index version), start a rebuild
    unless one to the new version is running."""
    unknown = sorted(set(fields) - set(EDITABLE))
    if unknown:
        raise SettingsInvalid(f"unknown setting(s) {', '.join(unknown)}; use {', '.join(EDITABLE)}")
    with transaction.atomic():
        row = rebuilds.settings_locked()
        for name, value in fields.items():
            setattr(row, name, value)
        try:
            row.full_clean(exclude=["active_version", "active_config"])
            row.index_version  # noqa: B018 (builds the Config and the Plan: bad ones raise)
        except (ConfigError, PlanError) as error:
            raise SettingsInvalid(str(error)) from error
        except Exception as error:  # ValidationError: name the fields
            raise SettingsInvalid(str(error)) from error
        if row.threshold > row.k_max:
            raise SettingsInvalid(f"threshold {row.threshold} is over k_max {row.k_max}")
        row.save()
        job, _ = rebuilds.rebuild_start(row)
        return job


def index_rebuild(*, job_id: int) -> RebuildJob:
    """Fingerprint, index and match every article under the new version, then switch to it."""
    job = RebuildJob.objects.get(id=job_id)
    settings = index.settings_current()
    if job.state != "running":
        return job
    if settings.index_version != job.version:
        RebuildJob.objects.filter(id=job_id).update(
            state="failed", message=rebuilds.superseded(settings.index_version)
        )
        job.refresh_from_db()
        return job
    detector = index.detector_for(settings)
    version, plan = job.version, settings.plan()
    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    RebuildJob.objects.filter(id=job_id).update(
        done=0, total=Article.objects.filter(status=ArticleStatus.DONE).count()
    )
    done = Article.objects.filter(status=ArticleStatus.DONE)
    last = 0
    while True:  # every article, in order: a resumed rebuild starts over, harmlessly
        if not RebuildJob.objects.filter(id=job_id, state="running").exists():
            job.refresh_from_db()
            return job
        chunk = list(done.filter(id__gt=last).order_by("id").values_list("id", "body")[:size])
        if not chunk:
            break
        _rebuild_chunk(chunk, settings, detector, version, plan)
        last = chunk[-1][0]
        RebuildJob.objects.filter(id=job_id).update(done=F("done") + len(chunk))
    while True:  # articles a worker finished under the old version meanwhile
        missing = list(
            done.exclude(fingerprints__version=version)
            .order_by("id")
            .values_list("id", "body")[:size]
        )
        if not missing:
            break
        _rebuild_chunk(missing, settings, detector, version, plan)
    with transaction.atomic():
        row = Settings.objects.select_for_update().get(pk=1)
        if (
            row.index_version != version
            or not RebuildJob.objects.filter(id=job_id, state="running").exists()
        ):
            job.refresh_from_db()
            return job
        Settings.objects.filter(pk=1).update(
            active_version=version, active_config=row.config_fields()
        )
        Match.objects.filter(kind=MatchKind.EXACT).update(version=version)
        Match.objects.exclude(version=version).delete()  # pairs the new version does not find
        SegmentRow.objects.exclude(version=version).delete()
        PassageKey.objects.exclude(version=version).delete()
        Fingerprint.objects.exclude(version=version).delete()
        RebuildJob.objects.filter(id=job_id).update(state="done", finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _rebuild_chunk(chunk, settings, detector, version, plan) -> None:
    ids = [article_id for article_id, _ in chunk]
    stored = index.features_load(article_ids=ids, version=version)
    new = []
    for article_id, body in chunk:
        if article_id not in stored:
            fingerprint, features = detector.fingerprint_and_features(body)
            new.append(index.Indexed(article_id, fingerprint, features))
            stored[article_id] = features
    with transaction.atomic():
        index.index_store(items=new, version=version, plan=plan)
    items = [index.Indexed(article_id, None, stored[article_id]) for article_id in ids]
    rows = []
    for result in _matches_find(items, settings, detector, version, plan):
        if isinstance(result, Exception):
            raise result
        rows += result
    # A rebuild: the new verdict replaces the old one. Two articles of one chunk find each
    # other twice: one row per pair.
    rows = list({(row.a_id, row.b_id): row for row in rows}.values())
    Match.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["a", "b"],
        update_fields=["kind", "distance", "similarity", "shared_passages", "version"],
    )
