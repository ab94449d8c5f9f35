"""The audit log: every kind of change an admin or editor makes leaves an entry saying who,
when, on what and what changed; admins read it (the dashboard's page and the admin), editors
are refused, and nobody can edit or delete an entry through any page."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dedup import services
from dedup.models import ApiToken, AuditAction, AuditEntry, Match, Settings, UploadBatch
from tests import roles
from tests.webui.conftest import article

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-passphrase-7"


@pytest.fixture
def boss() -> User:
    return roles.user_in("admin", "zhang.wei", password=PASSWORD, is_staff=True)


@pytest.fixture
def boss_client(boss) -> Client:
    return roles.signed_in(boss)


def only_entry(action: AuditAction) -> AuditEntry:
    entries = list(AuditEntry.objects.filter(action=action))
    assert len(entries) == 1, [str(e) for e in AuditEntry.objects.all()]
    return entries[0]


def test_a_settings_change_in_the_admin_logs_who_and_the_values_before_and_after(boss, boss_client):
    row = Settings.load()
    form = {name: getattr(row, name) for name in services.EDITABLE}
    form.update(threshold=row.threshold - 1, stop_words=row.stop_words or "")
    response = boss_client.post(f"/admin/dedup/settings/{row.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = only_entry(AuditAction.SETTINGS_CHANGE)
    assert (entry.user, entry.username) == (boss, "zhang.wei")
    assert entry.object_type == "dedup.Settings" and entry.object_id == str(row.pk)
    assert entry.changes == {"threshold": [row.threshold, row.threshold - 1]}
    assert entry.at is not None


def test_an_upload_deleted_in_the_admin_is_logged_with_what_went(boss, boss_client):
    upload = UploadBatch.objects.create(name="wire.jsonl")
    article(1, upload=upload, row=1)
    response = boss_client.post(
        "/admin/dedup/uploadbatch/",
        {"action": "uploads_delete_with_articles", "_selected_action": [upload.pk],
         "confirmed": "yes"},
    )  # fmt: skip
    assert response.status_code == 302
    entry = only_entry(AuditAction.UPLOAD_DELETE)
    assert entry.user == boss
    assert (entry.object_id, entry.object_repr) == (str(upload.pk), str(upload))
    assert entry.changes["articles"] == 1


def test_tokens_issued_and_revoked_in_the_admin_are_logged_never_their_secret(boss, boss_client):
    response = boss_client.post("/admin/dedup/apitoken/add/", {"user": boss.pk, "name": "crawler"})
    assert response.status_code == 302
    token = ApiToken.objects.get()
    issued = only_entry(AuditAction.TOKEN_ISSUE)
    assert (issued.user, issued.object_id) == (boss, str(token.pk))
    assert issued.changes == {"owner": "zhang.wei", "name": "crawler"}
    response = boss_client.post(f"/admin/dedup/apitoken/{token.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not ApiToken.objects.exists()
    revoked = only_entry(AuditAction.TOKEN_REVOKE)
    assert (revoked.user, revoked.object_id) == (boss, str(token.pk))
    assert token.key_hash not in str(issued.changes) + str(revoked.changes)


def test_a_token_issued_from_the_shell_is_logged_without_a_user(boss):
    from django.core.management import call_command

    call_command("api_token", "zhang.wei", name="nightly", stdout=io.StringIO())
    entry = only_entry(AuditAction.TOKEN_ISSUE)
    assert entry.user is None and entry.changes["owner"] == "zhang.wei"


def test_a_role_change_in_the_admin_logs_the_groups_before_and_after(boss, boss_client):
    editor = roles.user_in("editor", "li.wei")
    page = boss_client.get(f"/admin/auth/user/{editor.pk}/change/")
    form = {
        name: value
        for name, value in page.context["adminform"].form.initial.items()
        if value is not None and name not in ("password", "groups", "user_permissions")
    }
    form["date_joined_0"], form["date_joined_1"] = editor.date_joined.strftime(
        "%Y-%m-%d %H:%M:%S"
    ).split()
    form["groups"] = [roles.group("admin").pk]
    response = boss_client.post(f"/admin/auth/user/{editor.pk}/change/", form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    entry = only_entry(AuditAction.ROLES_CHANGE)
    assert (entry.user, entry.object_repr) == (boss, "li.wei")
    assert entry.changes["groups"] == [["editor"], ["admin"]]


def test_a_user_added_in_the_admin_is_logged_without_the_password(boss, boss_client):
    response = boss_client.post(
        "/admin/auth/user/add/",
        {"username": "new.editor", "usable_password": "true",
         "password1": PASSWORD, "password2": PASSWORD},
    )  # fmt: skip
    assert response.status_code == 302
    entry = only_entry(AuditAction.ADMIN_ADD)
    assert (entry.user, entry.object_type, entry.object_repr) == (boss, "auth.User", "new.editor")
    assert PASSWORD not in str(entry.changes) + entry.message


def test_an_article_corrected_in_the_admin_logs_the_field_before_and_after(boss, boss_client):
    a = article(1)
    response = boss_client.post(
        f"/admin/dedup/article/{a.pk}/change/",
        {"title": "更正的标题", "source": a.source, "url": ""},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    entry = only_entry(AuditAction.ADMIN_CHANGE)
    assert entry.changes == {"title": ["标题 1", "更正的标题"]}
    assert entry.object_id == str(a.pk)


def test_failed_sign_ins_and_the_lockout_are_logged_with_the_name_and_address(settings):
    roles.user_in("editor", "li.wei")
    settings.DEDUP_SIGNIN_FAILURES = 3
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(4):
        client.post("/accounts/login/", {"username": "li.wei", "password": "wrong"})
    failed = AuditEntry.objects.filter(action=AuditAction.SIGNIN_FAILED)
    assert failed.count() == 3  # the fourth was refused before its password was checked
    assert {(e.username, e.address) for e in failed} == {("li.wei", "203.0.113.9")}
    locked = only_entry(AuditAction.SIGNIN_LOCKED)
    assert locked.changes == {"failures": 3}


def test_the_audit_page_lists_entries_and_decisions_newest_first(boss, boss_client, editor):
    a, b = article(1), article(2)
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.9, version="v")
    services.settings_update(user=boss, retention_days=7)
    services.decision_record(a_id=a.pk, b_id=b.pk, verdict="duplicate", user=editor, seen=0)
    page = boss_client.get("/audit/")
    assert page.status_code == 200
    rows = page.context["rows"]
    assert [(r.kind, r.username) for r in rows] == [
        ("decision", "li.wei"),
        ("settings.change", "zhang.wei"),
    ]
    html = page.content.decode()
    assert "retention_days" in html and f"/compare/{a.pk}/{b.pk}/" in html
    only_decisions = boss_client.get("/audit/", {"kind": "decision"}).context["rows"]
    assert [r.kind for r in only_decisions] == ["decision"]
    by_user = boss_client.get("/audit/", {"user": "ZHANG.WEI"}).context["rows"]
    assert [r.kind for r in by_user] == ["settings.change"]
    later = boss_client.get("/audit/", {"since": "2999-01-01"}).context["rows"]
    assert later == []


def test_bad_filters_are_answered_with_a_message(boss_client):
    page = boss_client.get("/audit/", {"since": "2025-02-01", "until": "2025-01-01"})
    assert page.status_code == 400
    assert "swap them" in page.content.decode()
    assert boss_client.get("/audit/", {"kind": "nonsense"}).status_code == 400


def test_editors_are_refused_the_audit_page_and_the_admins_log(editor_client):
    assert editor_client.get("/audit/").status_code == 403
    assert editor_client.get("/admin/dedup/auditentry/").status_code == 302  # not staff


def test_entries_cannot_be_added_edited_or_deleted_in_the_admin(boss, boss_client):
    entry = services.audit_record(action=AuditAction.SETTINGS_CHANGE, user=boss)
    assert boss_client.get("/admin/dedup/auditentry/").status_code == 200
    view = boss_client.get(f"/admin/dedup/auditentry/{entry.pk}/change/")
    assert view.status_code == 200 and 'name="_save"' not in view.content.decode()
    assert boss_client.post(f"/admin/dedup/auditentry/{entry.pk}/change/", {}).status_code == 403
    deleted = boss_client.post(f"/admin/dedup/auditentry/{entry.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert boss_client.get("/admin/dedup/auditentry/add/").status_code == 403
    listing = boss_client.get("/admin/dedup/auditentry/").content.decode()
    assert "delete_selected" not in listing
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def test_the_audit_page_writes_nothing_and_speaks_chinese(boss):
    client = Client(headers={"accept-language": "zh-hans"})
    client.force_login(boss)
    page = client.get("/audit/").content.decode()
    assert "审计日志" in page
    forms = re.findall(r'<form[^>]*method="post"[^>]*>', page)
    assert all("/i18n/setlang/" in f or "/accounts/logout/" in f for f in forms), forms
