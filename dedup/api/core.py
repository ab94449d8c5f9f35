"""The API's frame: the NinjaAPI, token or session authentication, per-caller rate limits,
and the one error shape, `{"error": "...", "errors": [...]}`.

Callers sign in with a session or send `Authorization: Token <key>` (see `manage.py api_token`).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.models.expressions import RawSQL
from django.http import HttpRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import URLPattern
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerDown
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer
from ninja.security import APIKeyHeader
from redis.exceptions import RedisError

from dedup.models import ApiToken

READ = "dedup.view_article"
READ_UPLOADS = "dedup.view_uploadbatch"
SUBMIT = "dedup.add_uploadbatch"
RETRY_AFTER_SECONDS = 30  # what a 503 asks a client to wait
# A token's last_used_at is written when it is this much older than the request (to the
# minute, not a write per request: a client checking every article it publishes would
# otherwise add a committed UPDATE to each of its requests).
TOKEN_USE_RECORDED = timedelta(minutes=1)
logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A request the API refuses, with the status and message to answer with."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None, **headers):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or []
        self.headers = headers


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


class _Utf8Renderer(JSONRenderer):
    json_dumps_params = {"ensure_ascii": False}  # noqa: RUF012 (ninja's own attribute)


api = NinjaAPI(
    title="dedup",
    version="1",
    description=(
        "Submit articles, check texts, read articles by id, external id or URL, follow new "
        "matches and editors' decisions with cursors. See docs/api.md."
    ),
    urls_namespace="api",
    renderer=_Utf8Renderer(),
    docs_url="/docs",
    openapi_url="/openapi.json",
)


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason


def _csrf_failure(request: HttpRequest) -> str | None:
    """Return why a session request fails the CSRF check, or None when it passes."""
    check = _CsrfCheck(lambda request: None)
    check.process_request(request)
    return check.process_view(request, None, (), {})


class TokenAuth(APIKeyHeader):
    """`Authorization: Token <key>`, or a signed-in session (with a CSRF token on POST), of a
    user holding the permission (a superuser holds every one); each caller within its rate
    limit."""

    param_name = "Authorization"
    # Markdown in the docs page: in backticks, "<key>" is shown, not taken for a tag.
    openapi_description = (
        "Send `Authorization: Token <key>`; make a key with `manage.py api_token`."
    )

    def __init__(self, permission: str) -> None:
        self.permission = permission
        super().__init__()

    def _get_key(self, request: HttpRequest) -> str | None:
        return request.headers.get("Authorization")

    def authenticate(self, request: HttpRequest, key: str | None):
        caller = _authenticate(request, key)
        user = request.user
        _permissions_read(user)
        if not user.has_perm(self.permission):  # staff status alone grants nothing here
            raise ApiError(403, f"Your account lacks the permission {self.permission}.")
        _rate_limit(caller)
        return user


def _authenticate(request: HttpRequest, header: str | None) -> str:
    """Set request.user from the token or the session and return a name for the caller (what
    the rate limit counts by); raise ApiError when neither holds."""
    if header is not None:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "token" or not key.strip():
            raise ApiError(401, "Send the header as 'Authorization: Token <key>'.")
        token = (
            ApiToken.objects.select_related("user")
            .annotate(held=_HELD)
            .filter(key_hash=ApiToken.hash_key(key.strip()))
            .first()
        )
        if token is None or not token.user.is_active:
            raise ApiError(401, "This API token is not valid; create one with manage.py api_token.")
        token.user._perm_cache = set(token.held)  # as ModelBackend keeps them for has_perm
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= TOKEN_USE_RECORDED:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        request.user = token.user
        return f"token:{token.key_hash}"
    if not request.user.is_authenticated:
        raise ApiError(401, "Sign in, or send 'Authorization: Token <key>'.")
    if request.method == "POST" and (reason := _csrf_failure(request)):
        raise ApiError(403, f"CSRF check failed ({reason}); token requests need no CSRF token.")
    return f"user:{request.user.pk}:{request.user.username}"


# A token's user's permissions, their own and their groups', as "app_label.codename" (what
# ModelBackend reads in two statements): read with the token, in its statement.
_HELD = RawSQL(
    "ARRAY(SELECT ct.app_label || '.' || p.codename FROM auth_permission p"
    " JOIN django_content_type ct ON ct.id = p.content_type_id WHERE p.id IN ("
    " SELECT permission_id FROM auth_user_user_permissions"
    " WHERE user_id = dedup_apitoken.user_id"
    " UNION SELECT gp.permission_id FROM auth_group_permissions gp"
    " JOIN auth_user_groups ug ON ug.group_id = gp.group_id"
    " WHERE ug.user_id = dedup_apitoken.user_id))",
    (),
)


def _permissions_read(user) -> None:
    """Read a user's permissions, their own and their groups', in one statement, where
    Django's ModelBackend keeps them for has_perm (it reads them in two)."""
    if not user.is_active or user.is_superuser or hasattr(user, "_perm_cache"):
        return  # has_perm decides these without reading permissions
    fields = ("content_type__app_label", "codename")
    own = Permission.objects.filter(user=user).values_list(*fields)
    held = own.union(Permission.objects.filter(group__user=user).values_list(*fields))
    user._perm_cache = {f"{app}.{codename}" for app, codename in held}


def _rate_limit(caller: str) -> None:
    """Count a request against the caller's limit per window; raise a 429 over it.

    A fixed window counted in Django's cache (Redis when REDIS_URL is set, so every web
    process counts together): `add` starts a window, `incr` counts in it atomically."""
    limit, window = settings.DEDUP_API_RATE_LIMIT, settings.DEDUP_API_RATE_WINDOW
    if limit <= 0:
        return
    now = time.time()
    start = int(now // window) * window
    key = f"dedup:api-rate:{caller}:{start}"
    try:
        if cache.add(key, 1, timeout=window + 1):
            return
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr: a new window
            cache.add(key, 1, timeout=window + 1)
            return
    except (RedisError, OSError) as exc:  # the cache is down: let the request through
        logger.warning("API rate limit not counted, the cache is not answering: %s", exc)
        return
    if count > limit:
        wait = max(1, math.ceil(start + window - now))
        raise ApiError(
            429,
            f"More than {limit} requests in {window} s; wait {wait} s (Retry-After).",
            Retry_After=str(wait),
        )


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> JsonResponse:
    return error(exc.status, exc.message, exc.errors, **exc.headers)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> JsonResponse:
    return error(401, "Sign in, or send 'Authorization: Token <key>'.")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> JsonResponse:
    return error(exc.status_code, str(exc))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(413, f"The request is larger than {limit} bytes; send fewer rows.")


@api.exception_handler(SuspiciousOperation)
@api.exception_handler(MultiPartParserError)
def _unreadable(request: HttpRequest, exc: Exception) -> JsonResponse:
    return error(400, f"The request could not be read: {exc}.")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
@api.exception_handler(BrokerDown)
def _unavailable(request: HttpRequest, exc: Exception) -> JsonResponse:
    logger.warning("API %s answered 503: %s", request.path, exc)
    part = "queue" if isinstance(exc, BrokerDown) else "database"
    return error(
        503,
        f"The service's {part} is not answering; try again in a minute.",
        Retry_After=str(RETRY_AFTER_SECONDS),
    )


@api.exception_handler(DatabaseError)
def _refused(request: HttpRequest, exc: DatabaseError) -> JsonResponse:
    logger.exception("API %s failed", request.path)
    return error(500, "The database refused this request; an admin can see why.")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> JsonResponse:
    """Answer pydantic's complaints about parameters in the API's error shape (400, as the
    hand-written checks before them did, not ninja's 422)."""
    errors = []
    for item in exc.errors:
        field = ".".join(str(part) for part in item.get("loc", ())[1:]) or None
        message = str(item.get("msg", "is not valid"))
        message = message.removeprefix("Value error, ")
        errors.append({"index": None, "field": field, "message": message})
    first = errors[0] if errors else {"field": None, "message": "invalid"}
    lead = first["message"]
    if first["field"] and not lead.startswith(first["field"]):
        lead = f"{first['field']}: {lead}"
    return error(400, lead, errors)


def not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Answer unknown API addresses in JSON."""
    return error(404, f"No API endpoint at /api/{path}; see /api/docs or docs/api.md.")


def json_not_allowed(pattern: URLPattern) -> URLPattern:
    """Return the pattern with its 405 answers (ninja's are plain text) in the API's shape."""
    view = pattern.callback

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and response.has_header("Allow"):
            allowed = ", ".join(sorted(m.strip() for m in response["Allow"].split(",")))
            return error(405, f"Use {allowed} here, not {request.method}.", Allow=allowed)
        return response

    return URLPattern(pattern.pattern, wrapper, pattern.default_args, pattern.name)
