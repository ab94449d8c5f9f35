"""Webhooks: a receiver on 127.0.0.1 gets signed events from a real worker; a failing one is
tried again with backoff, then the delivery is marked failed, and an admin can send it again.
Addresses are public ones only (DEDUP_WEBHOOK_ALLOW_PRIVATE, off by default, lets the tests'
receivers on 127.0.0.1 be reached), checked on saving and as each delivery connects."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dedup import services
from dedup.models import Article, Match, Settings, Webhook, WebhookDelivery
from tests.texts import ARTICLE, NEAR, OTHER

SECRET = "s3cret-for-tests"
PRIVATE = {"DEDUP_WEBHOOK_ALLOW_PRIVATE": "1"}  # the receivers here are on 127.0.0.1
FAST_RETRIES = {
    "DEDUP_WEBHOOK_ATTEMPTS": "3",
    "DEDUP_WEBHOOK_BACKOFF_SECONDS": "0.2",
    **PRIVATE,
}


class Receiver:
    """An HTTP server on 127.0.0.1 that records what is POSTed and answers `status`."""

    def __init__(self, status: int = 200, delay: float = 0.0):
        self.status, self.delay = status, delay
        self.received: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(receiver.delay)
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok" if receiver.status == 200 else b"down")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def events(self) -> list[dict]:
        return [json.loads(body) for _, body in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    one = Receiver()
    yield one
    one.close()


def _webhook(url: str, **fields) -> Webhook:
    webhook = Webhook(url=url, secret=SECRET, **fields)
    services.webhook_start(webhook=webhook)
    return webhook


def _signed(headers: dict, body: bytes) -> bool:
    stamp = headers["X-Dedup-Timestamp"]
    expected = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(headers["X-Dedup-Signature"], f"sha256={expected.hexdigest()}")


def test_signature_is_hmac_sha256_of_timestamp_and_body():
    from dedup.services.webhooks import signature

    body = b'{"event":"match.created"}'
    mac = hmac.new(b"key", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature("key", "1700000000", body) == f"sha256={mac}"


def test_receiver_gets_signed_match_decision_and_upload_events(
    worker_factory, wait_until, receiver
):
    worker_factory(queues="celery,webhooks", env_extra=PRIVATE)
    old = services.articles_ingest(rows=[{"body": OTHER}])  # before the webhook: not sent
    wait_until(lambda: Article.objects.get(pk=old[0].pk).status == "done")
    webhook = _webhook(receiver.url, min_similarity=0.5)
    original, copy = services.articles_ingest(
        rows=[{"id": "cms-1", "body": ARTICLE}, {"id": "crawl-2", "body": NEAR}]
    )

    def of(event):
        return [e for e in receiver.events() if e["event"] == event]

    [match] = wait_until(lambda: of("match.created"), timeout=60, message="a match event")
    match = match["match"]
    assert (match["a"]["id"], match["b"]["id"]) == (original.pk, copy.pk)
    assert (match["a"]["external_id"], match["b"]["external_id"]) == ("cms-1", "crawl-2")
    assert match["similarity"] >= 0.5

    editor = User.objects.create_user("editor")
    services.decision_record(
        a_id=original.pk, b_id=copy.pk, verdict="duplicate", user=editor, seen=0
    )
    [decision] = wait_until(lambda: of("decision.created"), message="a decision event")
    assert (decision["decision"]["verdict"], decision["decision"]["decided_by"]) == (
        "duplicate",
        "editor",
    )

    line = json.dumps({"id": "u-1", "body": ARTICLE + "另加一句。"}, ensure_ascii=False)
    upload = services.upload_create(
        file=SimpleUploadedFile("a.jsonl", line.encode()), name="a.jsonl"
    )
    [finished] = wait_until(lambda: of("upload.finished"), timeout=60, message="upload event")
    assert (finished["upload"]["id"], finished["upload"]["state"]) == (upload.pk, "done")

    for headers, body in receiver.received:
        assert _signed(headers, body)
        assert abs(int(headers["X-Dedup-Timestamp"]) - time.time()) < 120
        assert headers["X-Dedup-Event"] == json.loads(body)["event"]
    deliveries = WebhookDelivery.objects.filter(webhook=webhook)
    wait_until(lambda: not deliveries.exclude(state="sent").exists(), message="all recorded")
    assert {(d.state, d.response_status, d.attempts) for d in deliveries} == {("sent", 200, 1)}
    # The upload's own matches (a third copy) came too; nothing from before the webhook.
    assert all(
        old[0].pk not in (e["match"]["a"]["id"], e["match"]["b"]["id"]) for e in of("match.created")
    )


def test_failing_receiver_is_retried_then_marked_failed_and_can_be_sent_again(
    worker_factory, wait_until
):
    receiver = Receiver(status=500)
    try:
        worker_factory(queues="celery,webhooks", env_extra=FAST_RETRIES)
        webhook = _webhook(receiver.url, on_match=False, on_upload=False)
        a, b = services.articles_ingest(rows=[{"body": ARTICLE}, {"body": OTHER}])
        editor = User.objects.create_user("editor", is_staff=True, is_superuser=True)
        # Editors decide on pairs that matched: this one as if the queue had shown it.
        version = Settings.load().active_version
        Match.objects.create(a=a, b=b, kind="partial", similarity=0.5, version=version)
        services.decision_record(a_id=a.pk, b_id=b.pk, verdict="not_duplicate", user=editor, seen=0)
        delivery = wait_until(
            lambda: WebhookDelivery.objects.filter(webhook=webhook, state="failed").first(),
            timeout=60,
            message="the delivery marked failed",
        )
        assert (delivery.attempts, delivery.response_status) == (3, 500)
        # Its size, not its text (what answers at an address is not shown in the admin).
        assert "500" in delivery.error and delivery.response_body == "4 bytes"
        assert len(receiver.received) == 3  # tried three times in all

        # The admin shows it and sends it again; the receiver is back.
        receiver.status = 200
        admin = Client()
        admin.force_login(editor)
        page = admin.get(f"/admin/dedup/webhook/{webhook.pk}/change/")
        assert page.status_code == 200 and b"decision.created" in page.content
        response = admin.post(
            "/admin/dedup/webhookdelivery/",
            {"action": "resend", "_selected_action": [delivery.pk]},
        )
        assert response.status_code == 302
        wait_until(
            lambda: WebhookDelivery.objects.get(pk=delivery.pk).state == "sent",
            message="sent again",
        )
        delivery.refresh_from_db()
        assert (delivery.attempts, delivery.response_status) == (1, 200)
        assert len(receiver.received) == 4
    finally:
        receiver.close()


def test_slow_receiver_does_not_hold_up_matching(worker_factory, wait_until):
    """Deliveries wait in their own queue: the matching worker finishes the articles while a
    receiver that answers in 3 s keeps the webhooks worker busy."""
    receiver = Receiver(delay=3.0)
    try:
        worker_factory()  # matching
        worker_factory(queues="webhooks", concurrency=1, env_extra=PRIVATE)
        _webhook(receiver.url)
        start = time.monotonic()
        for i in range(4):
            services.articles_ingest(rows=[{"body": ARTICLE + f"\n\n转载自{'东南西北'[i]}站。"}])
        wait_until(
            lambda: not Article.objects.exclude(status="done").exists(),
            timeout=60,
            message="processed",
        )
        processed_in = time.monotonic() - start
        # Six pairs: six deliveries, 18 s of the receiver's time; matching did not wait.
        wait_until(lambda: WebhookDelivery.objects.count() == 6, message="six deliveries")
        assert WebhookDelivery.objects.exclude(state="sent").exists()
        assert processed_in < 15
    finally:
        receiver.close()


@pytest.mark.django_db
def test_a_webhook_added_in_the_admin_starts_from_now(settings):
    settings.DEDUP_WEBHOOK_ALLOW_PRIVATE = True
    from django.utils import timezone

    from dedup.models import Decision, Match, Settings

    a, b = (
        Article.objects.create(
            body=text, dated_at=timezone.now(), content_hash=Article.hash_body(text)
        )
        for text in (ARTICLE, NEAR)
    )
    match = Match.objects.create(
        a=a, b=b, kind="near", distance=1, similarity=0.9, version=Settings.load().active_version
    )
    decision = Decision.objects.create(a=a, b=b, verdict="duplicate")
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password="pw"))
    form = {
        "url": "http://127.0.0.1:9/hook", "secret": "x", "active": "on", "on_match": "on",
        "min_similarity": "0.5", "on_decision": "on",
        "deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0",
    }  # fmt: skip
    response = admin.post("/admin/dedup/webhook/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    webhook = Webhook.objects.get()
    assert (webhook.match_cursor, webhook.decision_cursor) == (match.pk, decision.pk)
    assert services.webhooks_dispatch() == 0  # nothing from before it
