"""Webhooks reach public addresses only: an address that is not http(s), or is or resolves to
a loopback, private, link-local or reserved one, is refused when saved in the admin and again
as a delivery connects (to the address checked then: a name resolved to a public address on
saving and to 127.0.0.1 at delivery reaches nothing). The receiver's answer is recorded by its
size, never its text."""

from __future__ import annotations

import socket

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dedup.models import Webhook, WebhookDelivery
from dedup.services import WebhookUrlRefused, webhook_url_check
from dedup.services.webhook_addresses import address_public
from dedup.services.webhooks import webhook_deliver
from tests.service.test_webhooks import Receiver

pytestmark = pytest.mark.django_db

PUBLIC_IP = "93.184.215.14"
_getaddrinfo = socket.getaddrinfo


@pytest.fixture
def receiver():
    one = Receiver()
    yield one
    one.close()


@pytest.fixture
def names(monkeypatch):
    """Return a dict of made-up host names to what they resolve to in turn (the last answer
    again once the others are given), each answer a tuple of IP addresses."""
    answers: dict[str, list[tuple[str, ...]]] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in answers:
            return _getaddrinfo(host, port, *args, **kwargs)
        ips = answers[host].pop(0) if len(answers[host]) > 1 else answers[host][0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in ips]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def _admin_add(url: str):
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password="pw"))
    form = {
        "url": url, "secret": "x", "active": "on", "on_match": "on", "min_similarity": "0.5",
        "deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0",
    }  # fmt: skip
    return admin.post("/admin/dedup/webhook/add/", form)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6390/",
        "http://[::1]/hook",
        "http://localhost/hook",
        "ftp://ftp.example.org/hook",
        "http://10.0.0.5/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0:8000/hook",
        "file:///etc/passwd",
    ],
)
def test_an_address_reaching_no_public_host_is_refused_in_the_admin(url):
    response = _admin_add(url)
    assert response.status_code == 200  # the form again, with the reason
    assert response.context["adminform"].form.errors["url"]
    assert not Webhook.objects.exists()


def test_a_public_address_is_saved(names):
    names["hooks.example.org"] = [(PUBLIC_IP,)]
    response = _admin_add("https://hooks.example.org/dedup")
    assert response.status_code == 302
    assert Webhook.objects.get().url == "https://hooks.example.org/dedup"


def test_a_name_that_resolves_to_a_private_address_is_refused(names):
    names["intranet.example.org"] = [(PUBLIC_IP, "192.168.1.20")]
    with pytest.raises(WebhookUrlRefused, match=r"192\.168\.1\.20, not a public address"):
        webhook_url_check("https://intranet.example.org/")  # one address of two is private


@pytest.mark.parametrize(
    ("ip", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("100.64.0.1", False),  # carrier-grade NAT
        ("fd00::1", False),
        ("fe80::1%eth0", False),
        ("224.0.0.1", False),  # multicast
        ("::ffff:10.0.0.1", False),  # IPv4 in IPv6 wrappings
        ("64:ff9b::7f00:1", False),
        ("2002:7f00:1::", False),
    ],
)
def test_public_addresses(ip, public):
    assert address_public(ip) is public


def _delivery(url: str) -> WebhookDelivery:
    webhook = Webhook.objects.create(url=url, secret="x")  # saved past the admin's check
    return WebhookDelivery.objects.create(
        webhook=webhook, event="match.created", payload={"event": "match.created"}
    )


def test_a_delivery_to_a_private_address_reaches_nothing_unless_allowed(receiver, settings):
    delivery = _delivery(receiver.url)
    assert webhook_deliver(delivery_id=delivery.pk, last_try=True)
    delivery.refresh_from_db()
    assert delivery.state == "failed" and "not a public address" in delivery.error
    assert delivery.response_status is None and receiver.received == []

    settings.DEDUP_WEBHOOK_ALLOW_PRIVATE = True  # a receiver beside the service, by choice
    again = _delivery(receiver.url)
    assert webhook_deliver(delivery_id=again.pk, last_try=True)
    again.refresh_from_db()
    assert (again.state, again.response_status) == ("sent", 200)
    assert again.response_body == "2 bytes" and len(receiver.received) == 1


def test_a_name_resolved_again_to_loopback_at_delivery_reaches_nothing(receiver, names):
    port = receiver.server.server_port
    names["rebind.example.org"] = [(PUBLIC_IP,), ("127.0.0.1",)]  # public once, then loopback
    url = f"http://rebind.example.org:{port}/hook"
    webhook_url_check(url)  # as the admin checks it on saving: public
    delivery = _delivery(url)
    webhook_deliver(delivery_id=delivery.pk, last_try=True)
    delivery.refresh_from_db()
    assert delivery.state == "failed" and "127.0.0.1, not a public address" in delivery.error
    assert receiver.received == []


def test_a_delivery_to_another_scheme_is_refused(names):
    delivery = _delivery("ftp://ftp.example.org/hook")
    webhook_deliver(delivery_id=delivery.pk, last_try=True)
    delivery.refresh_from_db()
    assert delivery.state == "failed" and "https:// or http://" in delivery.error
