"""The dashboard's shell pages: bulk upload with live progress, and the admins' overview."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateformat import format as date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods

from dedup import selectors, services
from dedup.errors import UploadTooLarge
from dedup.models import UploadBatch, UploadState
from webui import overview as overview_data
from webui.access import admin_required, editor_required
from webui.forms import UploadForm

RECENT_UPLOADS = 20


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@editor_required
@require_http_methods(["GET", "POST"])
def upload_page(request: HttpRequest) -> HttpResponse:
    """Show the upload form and recent uploads; store posted files for the workers."""
    form = UploadForm(request.POST, request.FILES) if request.method == "POST" else UploadForm()
    if request.method == "POST":
        created, problems = _uploads_store(form, request.user)
        if _wants_json(request):  # upload.js: one file per request
            rows = [_upload_row(selectors.upload_status(upload_id=u.pk)) for u in created]
            return JsonResponse(
                {"uploads": rows, "errors": problems},
                status=202 if created else 400,
                json_dumps_params={"ensure_ascii": False},
            )
        if created:
            for problem in problems:
                messages.error(request, problem)
            message = ngettext(
                "%(n)d file received: the workers read it in the background.",
                "%(n)d files received: the workers read them in the background.",
                len(created),
            )
            messages.success(request, message % {"n": len(created)})
            return redirect("webui:upload_page")
        for problem in problems if form.is_valid() else []:
            form.add_error(None, problem)  # the form shows its own errors
    ids = UploadBatch.objects.order_by("-id").values_list("id", flat=True)[:RECENT_UPLOADS]
    uploads = [_upload_row(selectors.upload_status(upload_id=pk)) for pk in ids]
    context = {"form": form, "uploads": uploads, "max_mb": settings.DEDUP_MAX_UPLOAD_BYTES // 2**20}
    return render(request, "webui/upload.html", context, status=400 if form.errors else 200)


def _uploads_store(form: UploadForm, user) -> tuple[list[UploadBatch], list[str]]:
    """Store each file of a valid form; return the uploads made and the messages of failures."""
    if not form.is_valid():
        return [], [str(e) for errors in form.errors.values() for e in errors]
    created, problems = [], []
    for file in form.cleaned_data["files"]:
        try:
            created.append(
                services.upload_create(
                    file=file,
                    name=file.name,
                    user=user,
                    source=form.cleaned_data["source"],
                    published_at=form.cleaned_data["published"],
                )
            )
        except UploadTooLarge as exc:  # the form checks first; the service has the last word
            problems.append(str(exc))
        # With the broker down an upload is stored and waits (services.upload_create): nothing
        # to tell the user here but the upload's own state.
    return created, problems


@editor_required
@require_GET
def upload_status(request: HttpRequest, upload_id: int) -> JsonResponse:
    """Return an upload's progress, counts and row errors for the progress bar."""
    try:
        row = _upload_row(selectors.upload_status(upload_id=upload_id))
    except UploadBatch.DoesNotExist:
        raise Http404(_("There is no such upload.")) from None
    return JsonResponse(row, json_dumps_params={"ensure_ascii": False})


def _upload_row(status: dict) -> dict:
    """Return an upload's status as the page and its script show it."""
    finished = status["state"] in (UploadState.DONE, UploadState.FAILED)
    return {
        **status,
        "state_label": str(UploadState(status["state"]).label),
        "finished": finished,
        "percent": round(100 * status["progress"]),
        "created_label": date_format(localtime(status["created_at"]), "Y-m-d H:i"),
        "status_url": reverse("webui:upload_status", args=[status["id"]]),
        "detail_url": reverse("webui:upload_detail", args=[status["id"]]),
    }


@admin_required
@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    """Show the system's health: counts, backlog, workers, hot buckets, distances over time."""
    return render(request, "webui/overview.html", overview_data.overview_context())
