"""Webhooks: new matches and decisions (read after each webhook's cursor, as the API's
listings are) and finished uploads become deliveries; a task POSTs each one, signed, retries
it with backoff, and records what the receiver answered, its status and size
(webhook_deliver), to public addresses only (webhook_addresses).

Deliveries are sent from their own queue ("webhooks"): a slow or failing receiver keeps a
webhooks worker waiting, never the workers that match.

The signature: `X-Dedup-Signature: sha256=<hex>` is HMAC-SHA256, keyed with the webhook's
secret, of `<X-Dedup-Timestamp>.<body>`; a receiver recomputes it and refuses old timestamps.
"""

from __future__ import annotations

import hmac
import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from dedup import selectors
from dedup.models import DeliveryState, Webhook, WebhookDelivery
from dedup.services import webhook_addresses

logger = logging.getLogger(__name__)

MATCH_CREATED = "match.created"
DECISION_CREATED = "decision.created"
UPLOAD_FINISHED = "upload.finished"
EVENTS = (MATCH_CREATED, DECISION_CREATED, UPLOAD_FINISHED)
DISPATCH_PAGE = 500


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Return the X-Dedup-Signature of a body sent at a timestamp (Unix seconds)."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256")
    return f"sha256={mac.hexdigest()}"


def webhooks_notify() -> None:
    """Have new matches and decisions dispatched soon, when a webhook listens for them."""
    listening = Webhook.objects.filter(Q(on_match=True) | Q(on_decision=True), active=True)
    if listening.exists():
        from dedup import tasks

        tasks.webhooks_dispatch.delay()


def webhook_start(*, webhook: Webhook) -> None:
    """Start a new webhook's cursors at the newest match and decision: it is told what
    happens from now on, not the past."""
    from dedup.models import Decision, Match

    webhook.match_cursor = Match.objects.aggregate(newest=Max("id"))["newest"] or 0
    webhook.decision_cursor = Decision.objects.aggregate(newest=Max("id"))["newest"] or 0
    webhook.save()


def webhooks_dispatch() -> int:
    """Turn the matches and decisions after each active webhook's cursors into deliveries,
    and queue them; return how many were made."""
    made = 0
    for webhook_id in Webhook.objects.filter(active=True).values_list("id", flat=True):
        made += _webhook_dispatch(webhook_id)
    return made


def _webhook_dispatch(webhook_id: int) -> int:
    with transaction.atomic():
        # Two dispatchers at once: one does this webhook, the other passes it by.
        webhook = (
            Webhook.objects.select_for_update(skip_locked=True)
            .filter(id=webhook_id, active=True)
            .first()
        )
        if webhook is None:
            return 0
        payloads = []
        if webhook.on_match:
            webhook.match_cursor, found = _changes(
                webhook.match_cursor,
                lambda after: selectors.match_changes(
                    after=after, limit=DISPATCH_PAGE, min_similarity=webhook.min_similarity
                ),
                "dedup.Match",
            )
            payloads += [(MATCH_CREATED, {"match": selectors.match_change_json(m)}) for m in found]
        if webhook.on_decision:
            webhook.decision_cursor, found = _changes(
                webhook.decision_cursor,
                lambda after: selectors.decision_changes(after=after, limit=DISPATCH_PAGE),
                "dedup.Decision",
            )
            payloads += [
                (DECISION_CREATED, {"decision": selectors.decision_change_json(d)}) for d in found
            ]
        webhook.save(update_fields=["match_cursor", "decision_cursor"])
        return len(_deliveries_create(webhook, payloads))


def _changes(cursor: int | None, read, model: str) -> tuple[int, list]:
    """Return the cursor moved past every change after it, and those changes. A webhook
    made without webhook_start starts from the newest at its first dispatch."""
    from django.apps import apps

    if cursor is None:
        newest = apps.get_model(model).objects.aggregate(newest=Max("id"))["newest"]
        return newest or 0, []
    found = []
    while True:
        page = read(cursor)
        found += page.rows
        cursor = page.next
        if not page.more:
            return cursor, found


def _deliveries_create(webhook: Webhook, payloads: list[tuple[str, dict]]) -> list[int]:
    """Store deliveries of events to a webhook and queue them once the transaction commits."""
    rows = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(webhook=webhook, event=event, payload={"event": event, **data})
            for event, data in payloads
        ]
    )
    ids = [row.pk for row in rows]
    if ids:
        from dedup import tasks

        transaction.on_commit(lambda: [tasks.webhook_deliver.delay(i) for i in ids])
    return ids


@transaction.atomic
def upload_finished_notify(*, upload_id: int) -> int:
    """Tell the webhooks that listen that an upload is finished (done or failed)."""
    webhooks = list(Webhook.objects.filter(active=True, on_upload=True))
    if not webhooks:
        return 0
    status = selectors.upload_status(upload_id=upload_id)
    return sum(
        len(_deliveries_create(webhook, [(UPLOAD_FINISHED, {"upload": status})]))
        for webhook in webhooks
    )


@transaction.atomic
def deliveries_resend(*, delivery_ids: list[int]) -> int:
    """Send deliveries again (an admin's action), each with its tries counted afresh."""
    ids = list(WebhookDelivery.objects.filter(id__in=delivery_ids).values_list("id", flat=True))
    WebhookDelivery.objects.filter(id__in=ids).update(
        state=DeliveryState.PENDING, attempts=0, error=""
    )
    from dedup import tasks

    transaction.on_commit(lambda: [tasks.webhook_deliver.delay(i) for i in ids])
    return len(ids)


_opener = webhook_addresses.opener()
ANSWER_READ = 1000  # bytes of an answer read: its size is recorded up to this, never its text


def webhook_deliver(*, delivery_id: int, last_try: bool) -> bool:
    """POST a delivery and record the answer; return False when it should be tried again
    (it failed, and this was not the last try)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(id=delivery_id).first()
    if delivery is None or delivery.state != DeliveryState.PENDING:
        return True  # deleted, or sent already (a task delivered twice)
    webhook = delivery.webhook
    body = json.dumps(delivery.payload, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        webhook.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "dedup-webhooks/1",
            "X-Dedup-Event": delivery.event,
            "X-Dedup-Delivery": str(delivery.pk),
            "X-Dedup-Timestamp": timestamp,
            "X-Dedup-Signature": signature(webhook.secret, timestamp, body),
        },
    )
    status, answer, problem = None, b"", ""
    try:
        if urlsplit(webhook.url).scheme.lower() not in webhook_addresses.SCHEMES:
            raise ValueError("a webhook's address starts with https:// or http://")
        with _opener.open(request, timeout=django_settings.DEDUP_WEBHOOK_TIMEOUT) as response:
            status, answer = response.status, response.read(ANSWER_READ + 1)
    except urllib.error.HTTPError as exc:
        status, answer = exc.code, exc.read(ANSWER_READ + 1)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        problem = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"[:500]
    sent = status is not None and 200 <= status < 300
    if not sent and not problem:
        problem = f"the receiver answered {status}"
    state = (
        DeliveryState.SENT
        if sent
        else (DeliveryState.FAILED if last_try else DeliveryState.PENDING)
    )
    WebhookDelivery.objects.filter(id=delivery.pk, state=DeliveryState.PENDING).update(
        state=state,
        attempts=F("attempts") + 1,
        response_status=status,
        # Its size, not its text: the text of whatever answers at an address is no one's
        # business here (and an admin reading it would make the worker a way in).
        response_body=_size(answer) if status is not None else "",
        error="" if sent else problem,
        sent_at=timezone.now() if sent else None,
    )
    if not sent:
        logger.info("webhook delivery %s to %s: %s", delivery.pk, webhook.url, problem)
    return sent or last_try


def _size(answer: bytes) -> str:
    if len(answer) > ANSWER_READ:
        return f"over {ANSWER_READ} bytes"
    return f"{len(answer)} bytes"


def backoff_seconds(tries: int) -> float:
    """Return how long to wait before the next try, after `tries` failed ones."""
    return min(1800.0, django_settings.DEDUP_WEBHOOK_BACKOFF * 2 ** max(0, tries - 1))
