"""Project middleware: request bodies refused by size before they are read, query strings
PostgreSQL cannot hold refused, a readable 503 when the database is down, and the content
security policy on every answer."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext

logger = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 30
UPLOAD_PATHS = ("/upload/", "/api/uploads")  # where a body may hold a whole file
ENVELOPE = 2**20  # room for a multipart body's headers and other fields around the file
# A refused body is read and dropped for up to this long before the answer (as nginx's
# lingering close): a server that closes on a client still sending resets the connection,
# and the client sees a broken pipe instead of the 413.
DRAIN_SECONDS = 10
DRAIN_CHUNK = 2**16


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


def _page(status: int, title: str, message: str, back: str, language: str = "en") -> str:
    """Return a page that needs nothing but itself (no template, session or database)."""
    return (
        f'<!doctype html><html lang="{escape(language)}"><head><meta charset="utf-8">'
        f"<title>{status} {escape(title)}"
        f'</title><link rel="stylesheet" href="/{settings.STATIC_URL.strip("/")}/webui/app.css">'
        f'</head><body><main class="card"><h1>{escape(title)}</h1><p>{escape(message)}</p>'
        f'<p><a href="{escape(back)}">{escape(back)}</a></p></main></body></html>'
    )


class RequestSizeLimit:
    """Refuse a request whose declared body is over the limit of its address (twice an
    upload's file limit, or DATA_UPLOAD_MAX_MEMORY_SIZE elsewhere) before anything reads or
    spools it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        upload = request.path_info in UPLOAD_PATHS
        allowed = (
            settings.DEDUP_MAX_UPLOAD_BYTES if upload else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        )
        # An upload may be read up to twice its file limit: the form then refuses a file a
        # little over the limit by its name, in the user's language (or takes two files).
        if length <= allowed * (2 if upload else 1) + ENVELOPE:
            return self.get_response(request)
        _drain(request, length)
        sizes = {"size": _mb(length), "limit": _mb(allowed)}
        if request.path_info.startswith("/api/"):  # the API speaks English
            with translation.override("en"):
                return JsonResponse({"error": _too_large(upload) % sizes}, status=413)
        # Before the session and LocaleMiddleware: the language from the cookie or the browser.
        language = translation.get_language_from_request(request)
        with translation.override(language):
            message = _too_large(upload) % sizes
            if "application/json" in request.headers.get("Accept", ""):
                return JsonResponse(
                    {"uploads": [], "errors": [message]},
                    status=413,
                    json_dumps_params={"ensure_ascii": False},
                )
            page = _page(413, gettext("Too large"), message, request.path, language)
        return HttpResponse(page, status=413)


def _drain(request: HttpRequest, length: int) -> None:
    """Read and drop a refused body, up to DRAIN_SECONDS, never keeping more than a chunk."""
    stream = request.META.get("wsgi.input")
    deadline = time.monotonic() + DRAIN_SECONDS
    left = length
    try:
        while left > 0 and time.monotonic() < deadline:
            chunk = stream.read(min(DRAIN_CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
    except Exception as exc:  # best effort: a client gone, a stream shorter than it said
        logger.info("%s: a refused body not read to its end: %r", request.path, exc)


def _too_large(upload: bool) -> str:
    if upload:
        return gettext(
            "The request is %(size)s, over the limit of %(limit)s per file "
            "(DEDUP_MAX_UPLOAD_MB): split the file, and send one file per request."
        )
    return gettext(
        "The request is %(size)s, over the limit of %(limit)s (DEDUP_MAX_REQUEST_MB): send "
        "less in each request."
    )


class QueryStringCheck:
    """Refuse a query string holding what PostgreSQL cannot hold in text (the NUL character)
    with a 400 naming the parameter (JSON under /api/), before any view passes it to a query
    (which the database refuses: a 500)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return _bad_parameter(request, name.replace("\x00", "\\x00"))
        return self.get_response(request)


def _bad_parameter(request: HttpRequest, name: str) -> HttpResponse:
    message = f"{name}: must not hold the NUL character (%00); send the text without it."
    if request.path_info.startswith("/api/"):
        errors = [{"index": None, "field": name, "message": message}]
        return JsonResponse(
            {"error": message, "errors": errors},
            status=400,
            json_dumps_params={"ensure_ascii": False},
        )
    return HttpResponse(_page(400, "Bad request", message, request.path), status=400)


class DatabaseDown:
    """Answer 503 with Retry-After, a readable page (JSON under /api/), when a view finds the
    database down: never a stack trace or a bare 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("%s answered 503: %s", request.path, exception)
        message = "The service's database is not answering; try again in a minute."
        if request.path_info.startswith("/api/"):
            response = JsonResponse({"error": message}, status=503)
        else:
            page = _page(503, "Try again in a minute", message, request.get_full_path())
            response = HttpResponse(page, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


class ContentSecurityPolicy:
    """Send DEDUP_CONTENT_SECURITY_POLICY with every answer that has none of its own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault(
            "Content-Security-Policy", settings.DEDUP_CONTENT_SECURITY_POLICY
        )
        return response
