"""The decision that counts on a pair, and a cluster's chosen original."""

from __future__ import annotations

from dedup.models import Decision, Verdict


def pair_latest(a_id: int, b_id: int) -> Decision | None:
    """Return the decision that counts for a pair: the latest."""
    lo, hi = sorted((a_id, b_id))
    return (
        Decision.objects.filter(a_id=lo, b_id=hi)
        .select_related("decided_by")
        .order_by("-id")
        .first()
    )


def original_latest(member_ids: list[int]) -> Decision | None:
    """Return the latest "original" choice among a cluster's members."""
    return (
        Decision.objects.filter(a_id__in=member_ids, b__isnull=True, verdict=Verdict.ORIGINAL)
        .select_related("decided_by")
        .order_by("-id")
        .first()
    )
