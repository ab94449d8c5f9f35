"""No one raises their own role in the admin: only superusers make superusers, no one changes
their own groups, permissions or superuser status, a superuser's account (its password) is
changed only by superusers, and a group is changed only by a superuser or someone outside it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from tests import roles

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-passphrase-7"


@pytest.fixture
def boss() -> User:
    return roles.user_in("admin", "zhang.wei", password=PASSWORD, is_staff=True)


def _form(client, user: User, **changes) -> dict:
    """Return the admin's change form of a user as shown, with `changes` made."""
    page = client.get(f"/admin/auth/user/{user.pk}/change/")
    assert page.status_code == 200
    form = {
        name: value
        for name, value in page.context["adminform"].form.initial.items()
        if value is not None and name not in ("password", "groups", "user_permissions")
    }
    form["date_joined_0"], form["date_joined_1"] = user.date_joined.strftime(
        "%Y-%m-%d %H:%M:%S"
    ).split()
    form["groups"] = list(user.groups.values_list("pk", flat=True))
    form.update(changes)
    return form


def test_an_admin_cannot_make_themselves_superuser_or_change_their_own_groups(boss):
    client = roles.signed_in(boss)
    page = client.get(f"/admin/auth/user/{boss.pk}/change/")
    fields = page.context["adminform"].form.fields
    assert not {"is_superuser", "groups", "user_permissions"} & set(fields)
    every = list(Permission.objects.values_list("pk", flat=True))
    form = _form(
        client, boss, is_superuser="on", groups=[], user_permissions=every, first_name="伟"
    )
    response = client.post(f"/admin/auth/user/{boss.pk}/change/", form)
    assert response.status_code == 302
    boss.refresh_from_db()
    assert boss.first_name == "伟"  # the rest of the form is saved
    assert not boss.is_superuser and not boss.user_permissions.exists()
    assert list(boss.groups.values_list("name", flat=True)) == ["admin"]


def test_only_a_superuser_makes_another_user_superuser(boss):
    editor = roles.user_in("editor", "li.wei")
    client = roles.signed_in(boss)
    response = client.post(
        f"/admin/auth/user/{editor.pk}/change/", _form(client, editor, is_superuser="on")
    )
    assert response.status_code == 302
    editor.refresh_from_db()
    assert not editor.is_superuser
    root = User.objects.create_superuser("root", password=PASSWORD)
    client = roles.signed_in(root)
    client.post(f"/admin/auth/user/{editor.pk}/change/", _form(client, editor, is_superuser="on"))
    editor.refresh_from_db()
    assert editor.is_superuser


def test_an_admin_cannot_change_a_superusers_password_or_account(boss):
    root = User.objects.create_superuser("root", password=PASSWORD)
    client = roles.signed_in(boss)
    response = client.post(
        f"/admin/auth/user/{root.pk}/password/",
        {"password1": "taken-over-passphrase-1", "password2": "taken-over-passphrase-1",
         "usable_password": "true"},
    )  # fmt: skip
    assert response.status_code == 403
    root.refresh_from_db()
    assert root.check_password(PASSWORD)
    page = client.get(f"/admin/auth/user/{root.pk}/change/")
    assert page.status_code == 200 and "adminform" in page.context
    assert not page.context["has_change_permission"]  # shown, not editable
    deleted = client.post(f"/admin/auth/user/{root.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403 and User.objects.filter(pk=root.pk).exists()


def test_an_admin_cannot_add_permissions_to_their_own_group(boss):
    group = roles.group("admin")
    before = set(group.permissions.values_list("pk", flat=True))
    extra = Permission.objects.exclude(pk__in=before).first()
    client = roles.signed_in(boss)
    response = client.post(
        f"/admin/auth/group/{group.pk}/change/",
        {"name": "admin", "permissions": [*before, extra.pk]},
    )
    assert response.status_code == 403
    assert set(group.permissions.values_list("pk", flat=True)) == before
    editor = roles.group("editor")  # a group they are not in: changed as before
    response = client.post(
        f"/admin/auth/group/{editor.pk}/change/",
        {"name": "editor", "permissions": list(editor.permissions.values_list("pk", flat=True))},
    )
    assert response.status_code == 302
