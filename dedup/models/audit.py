"""The audit log: who changed what, and when (decisions have their own table, read beside it)."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class AuditAction(models.TextChoices):
    ADMIN_ADD = "admin.add", _("added in the admin")
    ADMIN_CHANGE = "admin.change", _("changed in the admin")
    ADMIN_DELETE = "admin.delete", _("deleted in the admin")
    SETTINGS_CHANGE = "settings.change", _("settings changed")
    UPLOAD_DELETE = "upload.delete", _("upload deleted")
    ARTICLE_REPLACE = "article.replace", _("article replaced")
    TOKEN_ISSUE = "token.issue", _("API token issued")
    TOKEN_REVOKE = "token.revoke", _("API token revoked")
    ROLES_CHANGE = "user.roles", _("roles changed")
    SIGNIN_FAILED = "signin.failed", _("sign-in failed")
    SIGNIN_LOCKED = "signin.locked", _("sign-in locked out")


class AuditEntry(models.Model):
    """One change made by someone: only added, never edited or deleted through any page.

    The user's name is kept beside the link, so an entry still says who after the user is
    deleted; `changes` holds what changed ({"field": [before, after]}) or what went."""

    at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("at"))
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    username = models.CharField(max_length=150, blank=True, verbose_name=_("username"))
    action = models.CharField(
        max_length=20, choices=AuditAction.choices, db_index=True, verbose_name=_("action")
    )
    object_type = models.CharField(max_length=100, blank=True, verbose_name=_("object type"))
    object_id = models.CharField(max_length=64, blank=True, verbose_name=_("object id"))
    object_repr = models.CharField(max_length=300, blank=True, verbose_name=_("object"))
    changes = models.JSONField(default=dict, blank=True, verbose_name=_("changes"))
    message = models.TextField(blank=True, verbose_name=_("message"))
    address = models.CharField(max_length=64, blank=True, verbose_name=_("address"))

    class Meta:
        verbose_name, verbose_name_plural = _("audit entry"), _("audit log")
        indexes = [models.Index(fields=["username", "at"], name="audit_user_at")]

    def __str__(self) -> str:
        who, what = self.username or "-", self.get_action_display()
        return f"{self.at:%Y-%m-%d %H:%M} {who} {what} {self.object_repr}"
