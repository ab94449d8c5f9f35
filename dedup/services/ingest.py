"""Articles from a request: each row checked (article_clean) and stored, then sent to the
workers in chunks once the transaction commits."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from dedup.errors import ArticleInvalid
from dedup.models import Article

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


def _article(fields: dict, *, now: datetime, upload=None, row: int | None = None) -> Article:
    return Article(
        **fields,
        dated_at=fields["published_at"] or now,
        content_hash=Article.hash_body(fields["body"]),
        length=len(fields["body"]),
        upload=upload,
        row=row,
    )


def _enqueue_process(article_ids: list[int]) -> None:
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
