"""Articles from a request: each row checked (article_clean) and stored, then sent to the
workers in chunks once the transaction commits. A row whose external id its source sent
before is stored again only when asked to replace it (articles_submit)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from dedup.errors import ArticleInvalid, ReplaceRefused
from dedup.models import Article, AuditAction, Decision, Match, UploadBatch
from dedup.services.audit import audit_record

REPLACE_ANY = "dedup.delete_article"  # an admin's: replace any article, not only one's own

_LIMITS = {"title": 500, "source": 200, "url": 2000, "external_id": 500}


def text_problem(value: str) -> str | None:
    """Return what makes a text unstorable (a NUL character, a lone surrogate), or None."""
    if (at := value.find("\x00")) >= 0:
        return f"holds a NUL character (U+0000) at character {at + 1}; remove it"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(value[error.start])
        return (
            f"holds a lone surrogate (U+{code:04X}) at character {error.start + 1}, half of a "
            "character that was cut in two; fix the text's encoding"
        )
    return None


def _text_checked(value: str, key: str, at: str, number: int | None) -> str:
    if (problem := text_problem(value)) is not None:
        raise ArticleInvalid(f'{at}"{key}" {problem}', row=number, field=key)
    return value


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
    _text_checked(body, "body", at, number)
    size = len(body.encode("utf-8"))
    if size > (limit := django_settings.DEDUP_MAX_ARTICLE_BYTES):
        raise ArticleInvalid(
            f'{at}"body" is {size / 2**20:,.1f} MB, over the limit of {limit / 2**20:g} MB per '
            "article (DEDUP_MAX_ARTICLE_MB); split it into smaller articles",
            row=number,
            field="body",
        )
    fields = {"body": body}
    names = (("title", "title"), ("source", "source"), ("url", "url"), ("external_id", "id"))
    for name, key in names:
        value = row.get(key)
        if value is None and key == "id":  # the name the dashboard shows it under
            key, value = "external_id", row.get("external_id")
        if value is None:
            value = ""
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ArticleInvalid(
                f'{at}"{key}" must be a string, not {type(value).__name__}', row=number, field=key
            )
        value = _text_checked(str(value).strip(), key, at, number)
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
    if isinstance(value, str) and text_problem(value) is None:
        try:
            parsed = parse_datetime(value.strip())
            if parsed is None and (day := parse_date(value.strip())) is not None:
                parsed = datetime(day.year, day.month, day.day)
        except ValueError:
            parsed = None
    if parsed is None:
        raise ArticleInvalid(
            f'{at}"published_at" must be an ISO-8601 date or time like 2024-05-01T08:00:00+08:00,'
            f" not {repr(value)[:80]}",
            row=number,
            field="published_at",
        )
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed)
    return parsed


def article_new(
    fields: dict, *, now: datetime, upload=None, row: int | None = None, submitted_by=None
) -> Article:
    return Article(
        **fields,
        submitted_by=submitted_by,
        dated_at=fields["published_at"] or now,
        content_hash=Article.hash_body(fields["body"]),
        length=len(fields["body"]),
        upload=upload,
        row=row,
    )


def articles_enqueue(article_ids: list[int]) -> None:
    """Send the articles to the workers in chunks once the transaction commits."""
    from dedup import tasks

    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    for start in range(0, len(article_ids), size):
        chunk = list(article_ids[start : start + size])
        # robust: with the broker down the articles are stored all the same (the caller must
        # not send them again) and beat's articles_requeue_stuck sends them once it is back.
        transaction.on_commit(
            lambda chunk=chunk: tasks.articles_process.delay(article_ids=chunk), robust=True
        )


@dataclass(frozen=True)
class Submitted:
    """What became of one row: created, unchanged (its source's id was stored already), or
    replaced (stored as a new article; `replaced` is the old one's id, now deleted)."""

    article: Article
    outcome: str
    replaced: int | None = None


@transaction.atomic
def articles_ingest(*, rows: list[dict], upload=None, user=None) -> list[Article]:
    """Validate and store articles, then have them fingerprinted and matched; return each
    row's article (the one stored before, for an external id its source sent already)."""
    return [s.article for s in articles_submit(rows=rows, upload=upload, user=user)]


@transaction.atomic
def articles_submit(
    *, rows: list[dict], upload=None, user=None, replace: bool = False
) -> list[Submitted]:
    """Validate and store articles (all or none), then have them fingerprinted and matched.

    A row with an `id` its `source` sent before stores nothing (a re-send), unless `replace`:
    then, if anything differs, the old article is deleted with its matches and decisions and
    the row stored as a new one (stored features never change under an id: the workers
    cache them), in the audit log. Replacing is deleting: only the article's sender (or its
    upload's uploader) or a user who may delete articles (an admin) may; `user` None is the
    service itself (a command). A second row with the same id in one request refers to the
    first."""
    if not isinstance(rows, list):
        raise ArticleInvalid("expected a list of articles")
    now = timezone.now()
    cleaned = [article_clean(row, number=i, label=f"articles[{i}]") for i, row in enumerate(rows)]
    keys = sorted({(f["source"], f["external_id"]) for f in cleaned if f["external_id"]})
    known = _known_ids(keys)
    fresh: dict[int, Article] = {}  # row -> article to create
    first_row: dict[tuple[str, str], int] = {}
    answers: list[tuple[str, Article | int, int | None]] = []  # outcome, article or row, old
    for i, fields in enumerate(cleaned):
        key = (fields["source"], fields["external_id"]) if fields["external_id"] else None
        if key in first_row:
            answers.append(("unchanged", first_row[key], None))
            continue
        old = known.get(key)
        if old is not None and (not replace or _same(old, fields)):
            answers.append(("unchanged", old, None))
            continue
        if old is not None:
            _replace_check(old, user, number=i)
        if key is not None:
            first_row[key] = i
        sender = user if user is not None and user.is_authenticated else None
        fresh[i] = article_new(fields, now=now, upload=upload, submitted_by=sender)
        answers.append(("replaced" if old else "created", i, old))
    gone = {old.pk: _article_delete(old) for _, _, old in answers if old is not None}
    Article.objects.bulk_create(list(fresh.values()))  # sets their ids
    articles_enqueue([a.pk for a in fresh.values()])
    for _, i, old in answers:
        if old is not None:
            changes = {"replaced_by": fresh[i].pk, **gone[old.pk]}
            audit_record(action=AuditAction.ARTICLE_REPLACE, user=user, obj=old, changes=changes)
    answers = [(outcome, found, old.pk if old else None) for outcome, found, old in answers]
    return [
        Submitted(fresh[found] if isinstance(found, int) else found, outcome, old)
        for outcome, found, old in answers
    ]


def _replace_check(article: Article, user, *, number: int) -> None:
    """Refuse to replace an article the user may not delete: not theirs, and not an admin."""
    if user is None or user.has_perm(REPLACE_ANY):
        return
    if user.is_authenticated and user.pk in (article.submitted_by_id, _uploader_id(article)):
        return
    raise ReplaceRefused(
        f"articles[{number}]: article {article.pk} (source {article.source!r}, id "
        f"{article.external_id!r}) was sent by another user; only its sender or an admin may "
        "replace it. Send it without replace=true to leave it as it is.",
        row=number,
        field="id",
    )


def _uploader_id(article: Article) -> int | None:
    if article.upload_id is None:
        return None
    upload = UploadBatch.objects.filter(pk=article.upload_id).values("uploaded_by_id").first()
    return upload["uploaded_by_id"] if upload else None


def _article_delete(article: Article) -> dict:
    """Delete an article with its matches and decisions; return how many of each went."""
    _total, per_model = Article.objects.filter(pk=article.pk).delete()
    return {
        "source": article.source,
        "external_id": article.external_id,
        "matches": per_model.get(Match._meta.label, 0),
        "decisions": per_model.get(Decision._meta.label, 0),
    }


def _known_ids(keys: list[tuple[str, str]]) -> dict[tuple[str, str], Article]:
    """Return the newest stored article of each (source, external id), holding a lock on each
    key until the transaction ends: two requests re-sending the same id store it once."""
    if not keys:
        return {}
    with connection.cursor() as cursor:
        for source, external_id in keys:  # sorted: two requests lock in the same order
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"article-id\x1f{source}\x1f{external_id}"],
            )
    wanted = set(keys)
    found: dict[tuple[str, str], Article] = {}
    ids = sorted({external_id for _, external_id in keys})
    rows = Article.objects.filter(external_id__in=ids).defer("body").order_by("id")
    for article in rows:
        key = (article.source, article.external_id)
        if key in wanted:
            found[key] = article  # the newest wins
    return found


def _same(article: Article, fields: dict) -> bool:
    """Return whether a stored article already holds what a row sends."""
    return (
        article.content_hash == Article.hash_body(fields["body"])
        and (article.title, article.url) == (fields["title"], fields["url"])
        and article.published_at == fields["published_at"]
    )
