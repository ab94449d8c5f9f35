"""The JSON API: submit articles and files, check a text, read articles, matches and uploads.

Callers sign in with a session or send `Authorization: Token <key>` (see `manage.py api_token`).
Every answer is JSON; errors are `{"error": "...", "errors": [...]}` with a fitting status.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from kombu.exceptions import OperationalError as BrokerDown

from dedup import selectors, services
from dedup.clusters import Bars
from dedup.errors import ArticleInvalid, DedupError, UploadTooLarge
from dedup.index import settings_current
from dedup.models import ApiToken, Article

MAX_ARTICLES_PER_REQUEST = 1000
READ = "dedup.view_article"
READ_UPLOADS = "dedup.view_uploadbatch"
SUBMIT = "dedup.add_uploadbatch"
RETRY_AFTER_SECONDS = 30  # what a 503 asks a client to wait
logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A request the API refuses, with the status and message to answer with."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or []


def answer(data: dict, status: int = 200) -> JsonResponse:
    """Return a JSON answer; Chinese text stays readable (UTF-8, not \\u escapes)."""
    return JsonResponse(data, status=status, json_dumps_params={"ensure_ascii": False})


def error(status: int, message: str, errors: list[dict] | None = None, **headers) -> JsonResponse:
    """Return the API's error answer."""
    body = {"error": message}
    if errors:
        body["errors"] = errors
    response = answer(body, status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason


def _csrf_failure(request: HttpRequest) -> str | None:
    """Return why a session request fails the CSRF check, or None when it passes."""
    check = _CsrfCheck(lambda request: None)
    check.process_request(request)
    return check.process_view(request, None, (), {})


def _authenticate(request: HttpRequest) -> None:
    """Set request.user from the token or the session; raise ApiError when neither holds."""
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "token" or not key.strip():
            raise ApiError(401, "Send the header as 'Authorization: Token <key>'.")
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=ApiToken.hash_key(key.strip()))
            .first()
        )
        if token is None or not token.user.is_active:
            raise ApiError(401, "This API token is not valid; create one with manage.py api_token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        request.user = token.user
        return
    if not request.user.is_authenticated:
        raise ApiError(401, "Sign in, or send 'Authorization: Token <key>'.")
    if request.method == "POST" and (reason := _csrf_failure(request)):
        raise ApiError(403, f"CSRF check failed ({reason}); token requests need no CSRF token.")


def api_view(method: str, permission: str) -> Callable:
    """Serve one method to users holding a permission (or staff), answering errors in JSON."""

    def decorate(view: Callable) -> Callable:
        @csrf_exempt  # token requests carry no CSRF token; _authenticate checks sessions
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> JsonResponse:
            if request.method != method:
                return error(405, f"Use {method} here, not {request.method}.", Allow=method)
            try:
                _authenticate(request)
                user = request.user
                if not (user.is_staff or user.has_perm(permission)):
                    raise ApiError(403, f"Your account lacks the permission {permission}.")
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error(exc.status, exc.message, exc.errors)
            except RequestDataTooBig:
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                return error(413, f"The request is larger than {limit} bytes; send fewer rows.")
            except (SuspiciousOperation, MultiPartParserError) as exc:
                return error(400, f"The request could not be read: {exc}.")
            except (OperationalError, InterfaceError, BrokerDown) as exc:
                logger.warning("API %s answered 503: %s", request.path, exc)
                part = "queue" if isinstance(exc, BrokerDown) else "database"
                return error(
                    503,
                    f"The service's {part} is not answering; try again in a minute.",
                    Retry_After=str(RETRY_AFTER_SECONDS),
                )
            except DatabaseError:
                logger.exception("API %s failed", request.path)
                return error(500, "The database refused this request; an admin can see why.")

        return wrapper

    return decorate


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


def _k_max() -> int:
    """Return the largest distance answers can use (the active version's, during a rebuild)."""
    return settings_current().active().k_max


@api_view("POST", SUBMIT)
def articles_submit(request: HttpRequest) -> JsonResponse:
    """Store one article or a list of them and queue them for matching."""
    rows = _json_body(request)
    rows = [rows] if isinstance(rows, dict) else rows
    if not isinstance(rows, list) or not rows:
        raise ApiError(400, "Send an article as a JSON object, or a non-empty list of them.")
    if len(rows) > MAX_ARTICLES_PER_REQUEST:
        raise ApiError(
            400, f"{len(rows)} articles in one request; send at most {MAX_ARTICLES_PER_REQUEST}."
        )
    try:
        articles = services.articles_ingest(rows=rows, user=request.user)  # all rows or none
    except ArticleInvalid as exc:
        raise ApiError(400, str(exc), _article_errors(exc)) from None
    return answer({"articles": [{"id": a.pk, "status": a.status} for a in articles]}, status=202)


def _article_errors(exc: ArticleInvalid) -> list[dict]:
    """Return the row error an ArticleInvalid describes, in the API's form."""
    return [{"index": exc.row, "field": exc.field, "message": exc.message}]


@api_view("POST", READ)
def text_check(request: HttpRequest) -> JsonResponse:
    """Return the stored articles a text duplicates, storing nothing."""
    data = _json_body(request)
    if not isinstance(data, dict):
        raise ApiError(400, 'Send a JSON object: {"text": "...", "k": 3}.')
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "text must be a non-empty string.", [_field("text", "required")])
    k = data.get("k")
    if k is not None:
        k = _int_param(k, "k", 0, _k_max())
    try:
        return answer(services.text_check(text=text, k=k))
    except DedupError as exc:
        raise ApiError(400, str(exc)) from None


def _field(name: str, message: str) -> dict:
    return {"index": None, "field": name, "message": message}


def _article_or_404(article_id: int) -> Article:
    try:
        return Article.objects.get(pk=article_id)
    except Article.DoesNotExist:
        raise ApiError(404, f"There is no article {article_id}.") from None


@api_view("GET", READ)
def article_detail(request: HttpRequest, article_id: int) -> JsonResponse:
    """Return an article, its status and its current fingerprint."""
    article = _article_or_404(article_id)
    version = settings_current().active_version
    prints = article.fingerprints.order_by("-created_at", "-pk")
    fingerprint = prints.filter(version=version).first() or prints.first()
    return answer(
        {
            "id": article.pk,
            "title": article.title,
            "source": article.source,
            "url": article.url,
            "status": article.status,
            "status_message": article.status_message,
            "exact_of": article.exact_of_id,
            "fingerprint": selectors.fingerprint_hex(fingerprint.value) if fingerprint else None,
            "version": fingerprint.version if fingerprint else None,
            "published_at": article.published_at,
            "created_at": article.created_at,
        }
    )


@api_view("GET", READ)
def article_matches(request: HttpRequest, article_id: int) -> JsonResponse:
    """Return the articles an article duplicates, as the review queue shows them (the same
    bars near and partial, 0 by default: every verified copy), most similar first."""
    _article_or_404(article_id)
    k = request.GET.get("k")
    if k is not None:
        k = _int_param(k, "k", 0, _k_max())
    # min_similarity, the one bar of older callers, fills the bars not given (as s does on
    # the queue's addresses).
    both = _share_param(request.GET.get("min_similarity"), "min_similarity", 0.0)
    bars = Bars(
        near=_share_param(request.GET.get("near"), "near", both),
        partial=_share_param(request.GET.get("partial"), "partial", both),
    )
    matches = selectors.article_matches(article_id=article_id, bars=bars, k=k)
    return answer({"article": article_id, "matches": [_match_json(m, article_id) for m in matches]})


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


def _match_json(match, article_id: int) -> dict:
    other = match.b if match.a_id == article_id else match.a
    return {
        "article": other.pk,
        "title": other.title,
        "kind": match.kind,
        "distance": match.distance,
        "similarity": match.similarity,
        "shared_chars": match.shared_chars,
        "shared_passages": match.shared_passages,
    }


@api_view("POST", SUBMIT)
def upload_create(request: HttpRequest) -> JsonResponse:
    """Store an uploaded file; workers read its rows."""
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
    return answer({"upload": upload.pk, "status_url": status_url}, status=202)


@api_view("GET", READ_UPLOADS)
def upload_detail(request: HttpRequest, upload_id: int) -> JsonResponse:
    """Return how far an upload has got and its rows' errors."""
    try:
        return answer(selectors.upload_status(upload_id=upload_id))
    except ObjectDoesNotExist:
        raise ApiError(404, f"There is no upload {upload_id}.") from None


def not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Answer unknown API addresses in JSON."""
    return error(404, f"No API endpoint at /api/{path}; see the README's JSON API section.")
