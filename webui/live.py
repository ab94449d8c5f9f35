"""What changed since a page was drawn, for the page to poll (static/webui/live.js): new
matches since the queue was drawn, and decisions by others on a cluster's articles. A cursor
is a row id: match and decision ids are taken in commit order (dedup.db.change_lock), so
nothing committed is missed between two polls."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Max, Q
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dedup.models import Decision, Match
from webui.access import editor_required

IDS_MAX = 500  # articles a cluster page may ask about at once
SHOWN_MAX = 20  # decisions sent back at once
ARTICLES_COUNTED = 5000  # new matches whose articles are counted


def match_cursor() -> int:
    return Match.objects.aggregate(n=Max("id"))["n"] or 0


def decision_cursor() -> int:
    return Decision.objects.aggregate(n=Max("id"))["n"] or 0


def poll_ms() -> int:
    return settings.DEDUP_LIVE_POLL_MS


def _int(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


@require_GET
@never_cache
@editor_required
def queue(request: HttpRequest) -> JsonResponse:
    """New matches after ?after=<match id>: how many, and how many articles they bring."""
    after = _int(request.GET.get("after"))
    new = Match.objects.filter(id__gt=after)
    counted = new.aggregate(n=Count("id"), top=Max("id"))
    pairs = new.values_list("a_id", "b_id")[:ARTICLES_COUNTED]
    return JsonResponse(
        {
            "cursor": counted["top"] or after,
            "matches": counted["n"],
            "articles": len({article for pair in pairs for article in pair}),
        }
    )


@require_GET
@never_cache
@editor_required
def cluster(request: HttpRequest) -> JsonResponse:
    """Decisions by other editors after ?after=<decision id> on the articles ?ids=1,2,3."""
    after = _int(request.GET.get("after"))
    ids = [_int(part) for part in request.GET.get("ids", "").split(",")[:IDS_MAX]]
    ids = [i for i in ids if i]
    rows = (
        Decision.objects.filter(id__gt=after)
        .filter(Q(a_id__in=ids) | Q(b_id__in=ids))
        .exclude(decided_by=request.user)
        .select_related("decided_by")
        .order_by("id")[:SHOWN_MAX]
    )
    decisions = [
        {
            "id": d.id,
            "a": d.a_id,
            "b": d.b_id,
            "verdict": d.verdict,
            "label": str(d.get_verdict_display()),
            "by": d.decided_by.get_username() if d.decided_by else "",
        }
        for d in rows
    ]
    cursor = decisions[-1]["id"] if decisions else max(after, decision_cursor())
    return JsonResponse({"cursor": cursor, "decisions": decisions})
