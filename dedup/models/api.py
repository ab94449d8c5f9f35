"""What the JSON API and its followers use: tokens, webhooks and their deliveries."""

from __future__ import annotations

import functools
import hashlib
import secrets

from django.conf import settings as django_settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils.translation import gettext_lazy as _

from dedup.models.settings import SHARE


class ApiToken(models.Model):
    """A secret for the JSON API; only its hash is kept."""

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        verbose_name=_("user"),
    )
    name = models.CharField(max_length=100, blank=True, verbose_name=_("name"))
    key_hash = models.CharField(
        max_length=64, unique=True, editable=False, verbose_name=_("key hash")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    last_used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last used at"))

    class Meta:
        verbose_name, verbose_name_plural = _("API token"), _("API tokens")

    def __str__(self) -> str:
        return _("%(name)s of %(user)s") % {"name": self.name or _("token"), "user": self.user}

    @staticmethod
    def hash_key(key: str) -> str:
        """Return the stored form of a token."""
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token for a user; return it and the secret, shown once."""
        key = secrets.token_urlsafe(32)
        return cls.objects.create(user=user, name=name, key_hash=cls.hash_key(key)), key


class Webhook(models.Model):
    """An address told about new matches, decisions and finished uploads (dedup/webhooks.py)."""

    url = models.URLField(_("URL"), max_length=2000)
    secret = models.CharField(
        _("secret"),
        max_length=200,
        default=functools.partial(secrets.token_urlsafe, 32),
        help_text=_("signs each delivery: X-Dedup-Signature"),
    )
    on_match = models.BooleanField(_("new matches"), default=True)
    min_similarity = models.FloatField(
        _("matches at least this similar"), default=0.0, validators=SHARE
    )
    on_decision = models.BooleanField(_("editors' decisions"), default=True)
    on_upload = models.BooleanField(_("finished uploads"), default=True)
    active = models.BooleanField(_("active"), default=True)
    # The last match and decision turned into deliveries (their change sequence); null until
    # the first dispatch, which starts from the newest: a new webhook is not sent the past.
    match_cursor = models.BigIntegerField(
        null=True, blank=True, editable=False, verbose_name=_("match cursor")
    )
    decision_cursor = models.BigIntegerField(
        null=True, blank=True, editable=False, verbose_name=_("decision cursor")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name, verbose_name_plural = _("webhook"), _("webhooks")

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending", _("waiting")
    SENT = "sent", _("sent")
    FAILED = "failed", _("failed")


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to a webhook, and what its receiver answered last."""

    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("webhook")
    )
    event = models.CharField(max_length=40, verbose_name=_("event"))
    payload = models.JSONField(encoder=DjangoJSONEncoder, verbose_name=_("payload"))
    state = models.CharField(
        max_length=10,
        choices=DeliveryState.choices,
        default=DeliveryState.PENDING,
        verbose_name=_("state"),
    )
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts"))
    response_status = models.PositiveSmallIntegerField(
        null=True, blank=True, verbose_name=_("response status")
    )
    response_body = models.CharField(max_length=1000, blank=True, verbose_name=_("response body"))
    error = models.CharField(max_length=500, blank=True, verbose_name=_("error"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    sent_at = models.DateTimeField(null=True, blank=True, verbose_name=_("sent at"))

    class Meta:
        verbose_name, verbose_name_plural = _("webhook delivery"), _("webhook deliveries")
        indexes = [models.Index(fields=["webhook", "state"])]

    def __str__(self) -> str:
        return _("%(event)s to %(webhook)s (%(state)s)") % {
            "event": self.event,
            "webhook": self.webhook,
            "state": self.get_state_display(),
        }
