"""What the admins' overview and the admin's confirmations count."""

from __future__ import annotations

from datetime import date, datetime

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from dedup.models import Article, Decision, Match


def match_distances_by_day(*, since: datetime, k_max: int) -> dict[tuple[date, int], int]:
    """Return how many matches were found per local day and distance (0..k_max) since then."""
    rows = (
        Match.objects.filter(found_at__gte=since, distance__isnull=False, distance__lte=k_max)
        .annotate(day=TruncDate("found_at", tzinfo=timezone.get_current_timezone()))
        .values_list("day", "distance")
        .annotate(n=Count("id"))
    )
    return {(day, distance): n for day, distance, n in rows}


def uploads_contents(*, upload_ids: list[int]) -> dict[str, int]:
    """Return how many articles some uploads hold, and the matches and decisions on them."""
    touching = Q(a__upload_id__in=upload_ids) | Q(b__upload_id__in=upload_ids)
    return {
        "articles": Article.objects.filter(upload_id__in=upload_ids).count(),
        "matches": Match.objects.filter(touching).count(),
        "decisions": Decision.objects.filter(touching).count(),
    }
