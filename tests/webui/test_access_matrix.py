"""Every address of the site, for every role: anonymous, signed in without a role, editor, admin.

The addresses are read from the URL resolver, so an address added later is in the matrix by
itself (and fails here until it says who may see it). Parameters are filled with a real pair of
matched articles and a real upload, so a page that lets someone in answers 200 (an address
that only takes POST, asked by POST with an empty form: refused or sent back), not 404.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from dedup.models import Match, UploadBatch
from tests import roles
from tests.webui.conftest import article

pytestmark = pytest.mark.django_db

# Open to anyone: the probes, the (empty) icon, signing in and out, the language switch.
PUBLIC = {
    "healthz",
    "favicon.ico",
    "readyz",
    "accounts/login/",
    "accounts/logout/",
    "accounts/password_reset/",
    "accounts/password_reset/done/",
    "accounts/reset/<uidb64>/<token>/",
    "accounts/reset/done/",
    "i18n/setlang/",
}
SIGNED_IN = {"accounts/password_change/", "accounts/password_change/done/"}
ADMIN_ONLY = {"overview/", "audit/"}  # the system's health; who changed what
# Addresses that only take POST (a GET is answered 405 before anything else): asked by POST.
POST_ONLY = {
    "decisions/",
    "decisions/bulk/",
    "decisions/cluster/",
    "decisions/original/",
}
# Served by their own authentication, tested per operation in tests/service/test_api.py.
OWN_CHECKS = ("admin/", "api/")


def addresses(patterns=None, prefix: str = "") -> list[str]:
    """Return every address pattern of the site, as route strings."""
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += addresses(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            found.append(route)
    return found


@pytest.fixture
def filled():
    """Return a function that turns a route into a real address."""
    a, b = article(1, "一段正文"), article(2, "一段正文的副本")
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.9, version="v")
    upload = UploadBatch.objects.create(name="a.jsonl")
    values = {"article_id": a.pk, "a": a.pk, "b": b.pk, "upload_id": upload.pk, "name": a.source}

    def fill(route: str) -> str:
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), route)

    return fill


def ask(client: Client, route: str, fill):
    method = client.post if route in POST_ONLY else client.get
    return method(fill(route))


def client_as(django_user_model, group: str | None) -> Client:
    client = Client()
    user = django_user_model.objects.create_user(f"user-{group}", password="pw")
    if group:
        user.groups.add(roles.group(group))
    if group == "admin":
        user.is_staff = True
        user.save()
    client.force_login(user)
    return client


def dashboard() -> list[str]:
    routes = [r for r in addresses() if not r.startswith(OWN_CHECKS)]
    return [r for r in routes if r not in PUBLIC | SIGNED_IN]


def test_the_matrix_covers_the_dashboard():
    routes = dashboard()
    assert len(routes) >= 15
    for expected in ("", "articles/<int:article_id>/", "compare/<int:a>/<int:b>/", "overview/",
                     "audit/"):  # fmt: skip
        assert expected in routes
    assert "decisions/filtered/" in routes  # GET shows the count, POST decides: not POST_ONLY


def test_anonymous_callers_are_sent_to_sign_in_everywhere_but_the_public_addresses(filled):
    client = Client()
    for route in dashboard() + sorted(SIGNED_IN):
        response = ask(client, route, filled)
        assert response.status_code == 302, route
        assert response["Location"].startswith("/accounts/login/?next="), route
    assert client.get("/admin/").status_code == 302
    assert client.get("/api/matches").status_code == 401
    for route in ("healthz", "accounts/login/"):
        assert client.get(filled(route)).status_code == 200, route


def test_a_signed_in_user_without_a_role_is_refused_every_page(django_user_model, filled):
    client = client_as(django_user_model, None)
    for route in dashboard():
        assert ask(client, route, filled).status_code == 403, route
    assert client.get("/admin/").status_code == 302  # the admin's own sign-in: not staff
    assert client.get("/api/matches").status_code == 403


@pytest.mark.parametrize("group", ["editor", "admin"])
def test_editors_and_admins_reach_every_page(django_user_model, filled, group):
    client = client_as(django_user_model, group)
    for route in dashboard():
        response = ask(client, route, filled)
        if route in ADMIN_ONLY and group == "editor":
            assert response.status_code == 403, route
        elif route in POST_ONLY:  # let in: an empty form is refused, or sent back to the queue
            assert response.status_code in (302, 400), (route, response.status_code)
            assert "login" not in response.get("Location", ""), route
        else:
            assert response.status_code == 200, (route, response.status_code)
    assert client.get("/api/matches").status_code == 200


def test_post_only_addresses_are_the_ones_listed(django_user_model, filled):
    client = client_as(django_user_model, "admin")
    refused = {route for route in dashboard() if client.get(filled(route)).status_code == 405}
    assert refused == POST_ONLY


def test_only_admins_reach_the_admin(django_user_model):
    editor = client_as(django_user_model, "editor")
    assert editor.get("/admin/").status_code == 302
    assert editor.get("/admin/dedup/settings/").status_code == 302
    admin = client_as(django_user_model, "admin")
    assert admin.get("/admin/").status_code == 200
    assert admin.get("/admin/dedup/settings/", follow=True).status_code == 200
    assert admin.get("/admin/auth/user/").status_code == 200
    assert admin.get("/admin/dedup/auditentry/").status_code == 200
    assert editor.get("/admin/dedup/auditentry/").status_code == 302
