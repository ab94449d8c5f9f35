"""Project middleware: request bodies refused by size before they are read, and the content
security policy on every answer."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

UPLOAD_PATHS = ("/upload/", "/api/uploads")  # where a body may hold a whole file
ENVELOPE = 2**20  # room for a multipart body's headers and other fields around the file


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


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
        if upload:
            message = (
                f"The request is {_mb(length)}, over the limit of {_mb(allowed)} per file "
                "(DEDUP_MAX_UPLOAD_MB): split the file, and send one file per request."
            )
        else:
            message = (
                f"The request is {_mb(length)}, over the limit of {_mb(allowed)} "
                "(DEDUP_MAX_REQUEST_MB): send less in each request."
            )
        if request.path_info.startswith("/api/"):
            return JsonResponse({"error": message}, status=413)
        if "application/json" in request.headers.get("Accept", ""):
            return JsonResponse({"uploads": [], "errors": [message]}, status=413)
        page = (
            '<!doctype html><html><head><meta charset="utf-8"><title>413</title></head><body>'
            f'<h1>413</h1><p>{escape(message)}</p><p><a href="{escape(request.path)}">Back</a>'
            "</p></body></html>"
        )
        return HttpResponse(page, status=413)


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
