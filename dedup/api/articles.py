"""Articles: submit (idempotent per source and external id), look up by id, external id or
URL, their matches; check a text; uploads."""

from __future__ import annotations

import difflib
import json

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpRequest
from django.urls import reverse
from ninja import Query, Status

from dedup import selectors, services
from dedup.api.core import READ, READ_UPLOADS, SUBMIT, ApiError, TokenAuth, api
from dedup.api.schemas import (
    ArticleIn,
    ArticleMatches,
    ArticleOut,
    ArticlePage,
    CheckIn,
    CheckOut,
    Error,
    SubmitOut,
    UploadCreated,
    UploadOut,
)
from dedup.errors import (
    ArticleInvalid,
    ChecksBusy,
    DedupError,
    ReplaceRefused,
    UploadTooLarge,
)
from dedup.index import settings_current
from dedup.models import Article
from dedup.selectors import Bars

MAX_ARTICLES_PER_REQUEST = 1000
PAGE_MAX = 500
ERRORS = {400: Error, 401: Error, 403: Error, 429: Error}

_SUBMIT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        ArticleIn.model_json_schema(),
                        {
                            "type": "array",
                            "items": ArticleIn.model_json_schema(),
                            "minItems": 1,
                            "maxItems": MAX_ARTICLES_PER_REQUEST,
                        },
                    ]
                }
            }
        },
    }
}
_CHECK_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": CheckIn.model_json_schema()}},
    }
}
_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            }
        },
    }
}


def _json_body(request: HttpRequest):
    """Return the parsed JSON body of a request."""
    if not request.body.strip():
        raise ApiError(400, "The request has no body; send JSON.")
    try:
        return json.loads(request.body)
    except RecursionError:
        raise ApiError(400, "The body is nested too deeply; send a list of flat objects.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}.") from None


def _int_param(value, name: str, low: int, high: int) -> int:
    """Return a whole number in low..high, from JSON or a query string."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(400, f"{name} must be a whole number from {low} to {high}.")
    return value


def _share_param(value: str | None, name: str, default: float) -> float:
    """Return a number from 0 to 1 from a query string, or the default when not given."""
    if value is None:
        return default
    try:
        share = float(value)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:  # also refuses nan
        raise ApiError(400, f"{name} must be a number from 0 to 1.")
    return share


def _k_max() -> int:
    """Return the largest distance answers can use (the active version's, during a rebuild)."""
    return settings_current().active().k_max


# The request bodies are read by the services' own checks (article_clean, shared with uploads
# and the command line), so that a row is refused with the same message whichever way it
# came; the schema above describes them.
@api.post(
    "/articles",
    auth=TokenAuth(SUBMIT),
    response={202: SubmitOut, 413: Error, **ERRORS},
    url_name="articles_submit",
    tags=["articles"],
    openapi_extra=_SUBMIT_BODY,
    summary="Submit one article or a list",
)
def articles_submit(request: HttpRequest, replace: bool = False):
    """Store articles (all rows or none) and queue them for matching. A row whose `id` its
    `source` sent before is stored again only with `replace=true` (as a new article, the old
    one and its matches deleted, in the audit log), by the user who sent it or an admin
    (403 otherwise); without it, it is answered `unchanged`."""
    rows = _json_body(request)
    rows = [rows] if isinstance(rows, dict) else rows
    if not isinstance(rows, list) or not rows:
        raise ApiError(400, "Send an article as a JSON object, or a non-empty list of them.")
    if len(rows) > MAX_ARTICLES_PER_REQUEST:
        raise ApiError(
            400, f"{len(rows)} articles in one request; send at most {MAX_ARTICLES_PER_REQUEST}."
        )
    for index, row in enumerate(rows):
        _known_fields(row, index)
    try:
        stored = services.articles_submit(rows=rows, user=request.user, replace=replace)
    except ReplaceRefused as exc:
        raise ApiError(403, str(exc), [_row_error(exc)]) from None
    except ArticleInvalid as exc:
        raise ApiError(400, str(exc), [_row_error(exc)]) from None
    return Status(
        202,
        {
            "articles": [
                {
                    "id": s.article.pk,
                    "external_id": s.article.external_id,
                    "status": s.article.status,
                    "outcome": s.outcome,
                    "replaced": s.replaced,
                }
                for s in stored
            ]
        },
    )


# What a row may hold (ArticleIn): anything else is a mistake the caller wants to hear of (a
# typo in "source" would store the article under no source, and its id would not be known
# again when re-sent).
ROW_FIELDS = ("body", "text", "title", "source", "url", "id", "external_id", "published_at")


def _known_fields(row, index: int) -> None:
    if not isinstance(row, dict):
        return  # article_clean says what a row must be
    if index == 0 and isinstance(row.get("articles"), list):
        raise ApiError(
            400, 'Send the articles themselves (an object or a list), not {"articles": [...]}.'
        )
    for key in row:
        if key not in ROW_FIELDS:
            close = difflib.get_close_matches(str(key), ROW_FIELDS, n=1)
            known = ", ".join(ROW_FIELDS)
            hint = f'; did you mean "{close[0]}"?' if close else f"; fields are {known}"
            message = f'articles[{index}]: unknown field "{key}"{hint}'
            raise ApiError(400, message, [{"index": index, "field": str(key), "message": message}])


def _row_error(exc: ArticleInvalid) -> dict:
    return {"index": exc.row, "field": exc.field, "message": exc.message}


@api.get(
    "/articles",
    auth=TokenAuth(READ),
    response={200: ArticlePage, **ERRORS},
    url_name="articles_find",
    tags=["articles"],
    summary="Find articles by external id, URL or source",
)
def articles_find(
    request: HttpRequest,
    external_id: str | None = None,
    url: str | None = None,
    source: str | None = None,
    after: int = Query(0, ge=0, description="the `next` of the page before"),
    limit: int = Query(100, ge=1, le=PAGE_MAX),
):
    """Return the articles with this external id (of any source, unless `source` is given),
    URL or source, oldest first, a page at a time."""
    if external_id is None and url is None and source is None:
        raise ApiError(400, "Give external_id, url or source to look articles up by.")
    found = selectors.articles_find(
        external_id=external_id, url=url, source=source, after=after, limit=limit + 1
    )
    more = len(found) > limit
    found = found[:limit]
    prints = selectors.article_fingerprints(article_ids=[a.pk for a in found])
    return {
        "articles": [_article_json(a, prints.get(a.pk)) for a in found],
        "next": found[-1].pk if found else after,
        "more": more,
    }


def _article_json(article: Article, fingerprint) -> dict:
    return {
        **selectors.article_ref(article),
        "status": article.status,
        "status_message": article.status_message,
        "exact_of": article.exact_of_id,
        "fingerprint": selectors.fingerprint_hex(fingerprint.value) if fingerprint else None,
        "version": fingerprint.version if fingerprint else None,
        "published_at": article.published_at,
        "created_at": article.created_at,
    }


@api.post(
    "/check",
    auth=TokenAuth(READ),
    response={200: CheckOut, 503: Error, **ERRORS},
    url_name="text_check",
    tags=["articles"],
    openapi_extra=_CHECK_BODY,
    summary="Check a text, storing nothing",
)
def text_check(request: HttpRequest):
    """Return the stored articles a text duplicates, storing nothing."""
    data = _json_body(request)
    if not isinstance(data, dict):
        raise ApiError(400, 'Send a JSON object: {"text": "...", "k": 3}.')
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(
            400,
            "text must be a non-empty string.",
            [{"index": None, "field": "text", "message": "required"}],
        )
    k = data.get("k")
    if k is not None:
        k = _int_param(k, "k", 0, _k_max())
    try:
        return services.text_check(text=text, k=k)
    except ChecksBusy as exc:
        raise ApiError(503, str(exc), Retry_After="1") from None
    except DedupError as exc:
        raise ApiError(400, str(exc)) from None


def _article_or_404(article_id: int) -> Article:
    try:
        return Article.objects.get(pk=article_id)
    except Article.DoesNotExist:
        raise ApiError(404, f"There is no article {article_id}.") from None


@api.get(
    "/articles/{int:article_id}",
    auth=TokenAuth(READ),
    response={200: ArticleOut, 404: Error, **ERRORS},
    url_name="article_detail",
    tags=["articles"],
    summary="Read an article",
)
def article_detail(request: HttpRequest, article_id: int):
    """Return an article, its status and its current fingerprint."""
    article = _article_or_404(article_id)
    prints = selectors.article_fingerprints(article_ids=[article.pk])
    return _article_json(article, prints.get(article.pk))


@api.get(
    "/articles/{int:article_id}/matches",
    auth=TokenAuth(READ),
    response={200: ArticleMatches, 404: Error, **ERRORS},
    url_name="article_matches",
    tags=["articles"],
    summary="Read an article's matches",
)
def article_matches(
    request: HttpRequest,
    article_id: int,
    k: str | None = Query(None, description="a whole number, 0 to k_max: a diagnostic"),
    near: str | None = Query(None, description="least similarity of near copies, 0 to 1"),
    partial: str | None = Query(None, description="least containment of partial copies"),
    min_similarity: str | None = Query(None, description="both bars, where not given"),
):
    """Return the articles an article duplicates, as the review queue shows them (the same
    bars near and partial, 0 by default: every verified copy), most similar first."""
    # The numbers are read here, not by pydantic, to answer with the messages callers know.
    article = _article_or_404(article_id)
    if k is not None:
        k = _int_param(k, "k", 0, _k_max())
    # min_similarity, the one bar of older callers, fills the bars not given (as s does on
    # the queue's addresses).
    both = _share_param(min_similarity, "min_similarity", 0.0)
    bars = Bars(
        near=_share_param(near, "near", both), partial=_share_param(partial, "partial", both)
    )
    matches = selectors.article_matches(article_id=article_id, bars=bars, k=k)
    return {
        "article": article_id,
        "external_id": article.external_id,
        "matches": [_match_json(m, article_id) for m in matches],
    }


def _match_json(match, article_id: int) -> dict:
    other = match.b if match.a_id == article_id else match.a
    return {
        "article": other.pk,
        "external_id": other.external_id,
        "title": other.title,
        "source": other.source,
        "url": other.url,
        "kind": match.kind,
        "distance": match.distance,
        "similarity": match.similarity,
        "shared_chars": match.shared_chars,
        "shared_passages": match.shared_passages,
    }


@api.post(
    "/uploads",
    auth=TokenAuth(SUBMIT),
    response={202: UploadCreated, 413: Error, **ERRORS},
    url_name="upload_create",
    tags=["uploads"],
    openapi_extra=_UPLOAD_BODY,
    summary="Upload a file of articles",
)
def upload_create(request: HttpRequest):
    """Store an uploaded file (JSON Lines, CSV, txt, html or zip); workers read its rows."""
    limit = settings.DEDUP_MAX_UPLOAD_BYTES
    size = int(request.META.get("CONTENT_LENGTH") or 0)
    if size > limit + 64 * 1024:  # room for the multipart envelope around the file
        raise ApiError(413, f"The file is larger than {limit // (1024 * 1024)} MB; split it.")
    file = request.FILES.get("file")
    if file is None:
        raise ApiError(400, "Send the file as multipart/form-data in the field 'file'.")
    try:
        upload = services.upload_create(file=file, name=file.name, user=request.user)
    except UploadTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    status_url = request.build_absolute_uri(reverse("api:upload_detail", args=[upload.pk]))
    return Status(202, {"upload": upload.pk, "status_url": status_url})


@api.get(
    "/uploads/{int:upload_id}",
    auth=TokenAuth(READ_UPLOADS),
    response={200: UploadOut, 404: Error, **ERRORS},
    url_name="upload_detail",
    tags=["uploads"],
    summary="Read an upload's progress",
)
def upload_detail(request: HttpRequest, upload_id: int):
    """Return how far an upload has got and its rows' errors."""
    try:
        return selectors.upload_status(upload_id=upload_id)
    except ObjectDoesNotExist:
        raise ApiError(404, f"There is no upload {upload_id}.") from None
