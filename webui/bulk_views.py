"""Deciding every waiting pair a filtered queue selects: GET shows the count and asks for a
confirmation, POST records the decisions (the selection read again, and refused if it moved)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from dedup import services
from webui import bulk_page
from webui.access import editor_required
from webui.review_params import ParamError

PROBLEMS_SHOWN = 5


def _bad(request: HttpRequest, error: Exception) -> HttpResponse:
    return render(request, "webui/review/bad_request.html", {"message": str(error)}, status=400)


@require_http_methods(["GET", "POST"])
@editor_required
def decisions_filtered(request: HttpRequest) -> HttpResponse:
    """Show how many waiting pairs the queue's filters select (GET); decide them all (POST)."""
    params = request.POST if request.method == "POST" else request.GET
    try:
        selection = bulk_page.selection_read(params)
    except ParamError as error:
        return _bad(request, error)
    if request.method == "GET":
        context = bulk_page.selection_context(selection)
        return render(request, "webui/review/bulk.html", context)
    return _decide(request, selection)


def _decide(request: HttpRequest, selection: bulk_page.Selection) -> HttpResponse:
    here = reverse("webui:decisions_filtered") + "?" + selection.query()
    count = len(selection.pairs)
    if str(count) != request.POST.get("expected", ""):
        messages.error(
            request,
            _("The selection changed: %(n)s pairs match now. Look at them and confirm again.")
            % {"n": count},
        )
        return redirect(here)
    if selection.too_many:
        messages.error(
            request,
            _("%(n)s pairs are more than the %(max)s decided at once: narrow the filters.")
            % {"n": count, "max": bulk_page.BULK_MAX},
        )
        return redirect(here)
    pairs = [services.PairDecision(a, b, seen) for a, b, seen in selection.pairs]
    try:
        done, problems = services.decisions_batched(
            pairs=pairs, verdict=request.POST.get("verdict", ""), user=request.user
        )
    except services.DecisionInvalid as error:
        messages.error(request, str(error))
        return redirect(here)
    messages.success(request, _("Recorded %(n)s decisions.") % {"n": done})
    for problem in problems[:PROBLEMS_SHOWN]:
        messages.warning(request, problem)
    if len(problems) > PROBLEMS_SHOWN:
        rest = len(problems) - PROBLEMS_SHOWN
        messages.warning(request, _("%(n)s more pairs were left alone.") % {"n": rest})
    return redirect(reverse("webui:queue") + "?" + selection.queue_query())
