"""Password reset by mail: with no mail set up (no EMAIL_HOST) the pages answer 404 and say to
ask an admin, sending nothing; with mail, a reset link goes out, a few times per window at
most per address and per mail address, then 429."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client

from tests import roles

pytestmark = pytest.mark.django_db


def test_without_mail_the_reset_pages_say_to_ask_an_admin(settings):
    assert not settings.EMAIL_HOST and not settings.DEDUP_PASSWORD_RESET  # the default
    roles.user_in("editor", "li.wei", email="li.wei@example.com")
    client = Client(headers={"accept-language": "en"})
    for response in (
        client.get("/accounts/password_reset/"),
        client.post("/accounts/password_reset/", {"email": "li.wei@example.com"}),
        client.get("/accounts/password_reset/done/"),
    ):
        assert response.status_code == 404
        assert b"ask an admin to reset yours" in response.content
    assert mail.outbox == []


def test_with_mail_resets_are_sent_a_few_times_per_window(settings):
    settings.DEDUP_PASSWORD_RESET, settings.DEDUP_PASSWORD_RESETS = True, 2
    roles.user_in("editor", "li.wei", email="li.wei@example.com")
    client = Client(headers={"accept-language": "en"}, REMOTE_ADDR="203.0.113.9")
    assert client.get("/accounts/password_reset/").status_code == 200
    for _ in range(2):
        response = client.post("/accounts/password_reset/", {"email": "li.wei@example.com"})
        assert response.status_code == 302
        assert response["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 2 and "li.wei@example.com" in mail.outbox[0].to
    refused = client.post("/accounts/password_reset/", {"email": "li.wei@example.com"})
    assert refused.status_code == 429 and b"Too many password resets" in refused.content
    # Another address asking for the same mail address is refused too; nothing more was sent.
    other = Client(headers={"accept-language": "en"}, REMOTE_ADDR="198.51.100.7")
    again = other.post("/accounts/password_reset/", {"email": "LI.WEI@example.com"})
    assert again.status_code == 429 and len(mail.outbox) == 2
