"""Editors' decisions: a pair is a duplicate or not, an article is a cluster's original.
Decisions are only added: the latest on a pair counts, and undoing one adds an "undone".

Two editors on the same cluster must not overwrite each other silently: every write carries
the id of the latest decision the editor saw (0 for none), and is refused when a newer one
exists. The check and the write happen under a row lock on the pair's first article, so two
requests cannot both pass the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup.db import change_lock, int_array
from dedup.models import Article, Decision, Match, Verdict
from dedup.selectors.decisions import original_latest, pair_latest
from dedup.services.webhooks import webhooks_notify

PAIR_VERDICTS = (Verdict.DUPLICATE, Verdict.NOT_DUPLICATE)
BATCH = 500  # pairs recorded per transaction by decisions_batched


class DecisionConflict(Exception):
    """Someone decided meanwhile; the message says who, what and when."""

    def __init__(self, latest: Decision) -> None:
        self.latest = latest
        super().__init__(decision_conflict_message(latest))


class DecisionInvalid(Exception):
    """The decision asked for cannot be recorded (the message says why)."""


@dataclass(frozen=True)
class PairDecision:
    a: int
    b: int
    seen: int  # the id of the latest decision the editor saw on the pair, 0 for none


def decision_conflict_message(latest: Decision) -> str:
    """Return what to tell an editor whose view of a pair is out of date."""
    who = (
        latest.decided_by.get_full_name() or latest.decided_by.username
        if latest.decided_by
        else _("someone")
    )
    when = timezone.localtime(latest.decided_at).strftime("%H:%M")
    if latest.b_id is None:
        what = _("chose article %(id)s as the original") % {"id": latest.a_id}
    else:
        what = _("marked this pair %(verdict)s") % {"verdict": latest.get_verdict_display()}
    return _("%(who)s %(what)s at %(when)s; reload to see it.") % {
        "who": who,
        "what": what,
        "when": when,
    }


def _check_seen(latest: Decision | None, seen: int) -> None:
    if latest is None and seen:
        raise DecisionInvalid(_("That decision is gone; reload the page."))
    if latest is not None and latest.id != seen:
        raise DecisionConflict(latest)


def _pair_record(pair: PairDecision, verdict: str, user, note: str) -> Decision:
    lo, hi = sorted((pair.a, pair.b))
    if lo == hi:
        raise DecisionInvalid(_("An article cannot be compared with itself."))
    change_lock()  # before the row locks (see change_lock)
    locked = list(Article.objects.select_for_update().filter(id__in=(lo, hi)).values_list("id"))
    if len(locked) != 2:
        raise DecisionInvalid(_("One of these articles no longer exists; reload the page."))
    if not Match.objects.filter(a_id=lo, b_id=hi).exists():
        raise DecisionInvalid(
            _("Articles %(a)s and %(b)s were never matched: decide on pairs the queue shows.")
            % {"a": lo, "b": hi}
        )
    latest = pair_latest(lo, hi)
    _check_seen(latest, pair.seen)
    if verdict == Verdict.UNDONE and (latest is None or latest.verdict == Verdict.UNDONE):
        raise DecisionInvalid(_("This pair has no decision to undo."))
    transaction.on_commit(webhooks_notify)
    return Decision.objects.create(a_id=lo, b_id=hi, verdict=verdict, decided_by=user, note=note)


@transaction.atomic
def decision_record(
    *, a_id: int, b_id: int, verdict: str, user, seen: int, note: str = ""
) -> Decision:
    """Record a verdict on a pair unless someone decided after the decision `seen`; the
    verdict "undone" takes the latest back (the pair waits again, the history keeps both)."""
    if verdict not in (*PAIR_VERDICTS, Verdict.UNDONE):
        raise DecisionInvalid(_("Choose duplicate or not a duplicate."))
    return _pair_record(PairDecision(a_id, b_id, seen), verdict, user, note)


def decisions_bulk(*, pairs: list[PairDecision], verdict: str, user) -> tuple[int, list[str]]:
    """Record one verdict on many pairs; return how many were recorded and the conflicts.

    Each pair is its own transaction: a conflict on one leaves the others recorded, and the
    editor is told which to look at again."""
    if verdict not in PAIR_VERDICTS:
        raise DecisionInvalid(_("Choose duplicate or not a duplicate."))
    recorded, problems = 0, []
    for pair in pairs:
        try:
            with transaction.atomic():
                _pair_record(pair, verdict, user, "")
            recorded += 1
        except DecisionConflict as error:
            problems.append(f"{pair.a} ~ {pair.b}: {error}")
        except DecisionInvalid as error:
            problems.append(f"{pair.a} ~ {pair.b}: {error}")
    return recorded, problems


def decisions_batched(
    *, pairs: list[PairDecision], verdict: str, user, note: str = ""
) -> tuple[int, list[str]]:
    """Record one verdict on many pairs, BATCH pairs per transaction; return how many were
    recorded and, for each pair left alone, why (decided meanwhile, or no longer matched).

    A batch locks its articles once and reads every pair's latest decision in one query, so
    thousands of pairs cost a few statements, not a transaction each; every pair still gets
    its own decision, undone one by one like any other."""
    if verdict not in PAIR_VERDICTS:
        raise DecisionInvalid(_("Choose duplicate or not a duplicate."))
    recorded, problems = 0, []
    for start in range(0, len(pairs), BATCH):
        done, left = _batch_record(pairs[start : start + BATCH], verdict, user, note)
        recorded += done
        problems += left
    return recorded, problems


def _pairs_state(keys: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """Return, for each of these pairs still matched, the id of its latest decision (0: none)."""
    sql = (
        "SELECT m.a_id, m.b_id, COALESCE((SELECT d.id FROM dedup_decision d"
        " WHERE d.a_id = m.a_id AND d.b_id = m.b_id ORDER BY d.id DESC LIMIT 1), 0)"
        " FROM dedup_match m JOIN unnest(%s::bigint[], %s::bigint[]) AS p(a, b)"
        " ON m.a_id = p.a AND m.b_id = p.b"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [int_array(k[0] for k in keys), int_array(k[1] for k in keys)])
        return {(a, b): latest for a, b, latest in cursor.fetchall()}


@transaction.atomic
def _batch_record(
    pairs: list[PairDecision], verdict: str, user, note: str
) -> tuple[int, list[str]]:
    seen = {(min(p.a, p.b), max(p.a, p.b)): p.seen for p in pairs if p.a != p.b}
    change_lock()  # before the row locks (see change_lock)
    ids = sorted({i for key in seen for i in key})
    list(Article.objects.select_for_update().filter(id__in=ids).order_by("id").values_list("id"))
    state = _pairs_state(list(seen))
    made, problems = [], []
    for (lo, hi), saw in seen.items():
        if (lo, hi) not in state:
            problems.append(_("%(a)s ~ %(b)s: no longer matched.") % {"a": lo, "b": hi})
        elif state[(lo, hi)] != saw:
            problems.append(_("%(a)s ~ %(b)s: decided meanwhile.") % {"a": lo, "b": hi})
        else:
            made.append(Decision(a_id=lo, b_id=hi, verdict=verdict, decided_by=user, note=note))
    if made:
        Decision.objects.bulk_create(made)
        transaction.on_commit(webhooks_notify)
    return len(made), problems


@transaction.atomic
def original_choose(*, article_id: int, member_ids: list[int], user, seen: int) -> Decision:
    """Make an article its cluster's original unless someone chose one after `seen`."""
    if article_id not in member_ids:
        raise DecisionInvalid(_("That article is not in this cluster any more; reload the page."))
    change_lock()  # before the row locks (see change_lock)
    # Lock the members in id order (no deadlock between two editors) before reading.
    list(
        Article.objects.select_for_update()
        .filter(id__in=member_ids)
        .order_by("id")
        .values_list("id")
    )
    latest = original_latest(member_ids)
    _check_seen(latest, seen)
    transaction.on_commit(webhooks_notify)
    return Decision.objects.create(
        a_id=article_id, b=None, verdict=Verdict.ORIGINAL, decided_by=user
    )
