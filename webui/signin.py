"""Sign-in with a limit on failures, per address and per user name, for the site and the admin.

Failures are counted in the "signin" cache (Redis when REDIS_URL is set, so every web worker
sees the same counts): DEDUP_SIGNIN_FAILURES within DEDUP_SIGNIN_WINDOW_SECONDS lock the user
name, and the address, out until the window ends, even with the right password. Each
failure, and each lockout, is in the audit log.
"""

from __future__ import annotations

import hashlib
import logging

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from dedup import services
from dedup.models import AuditAction

logger = logging.getLogger(__name__)


def client_address(request: HttpRequest) -> str:
    """Return the caller's address: behind a proxy (DEDUP_BEHIND_PROXY), the one it appended."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and forwarded:
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "")


def failure_keys(request: HttpRequest | None, username: str) -> list[str]:
    """Return the cache keys counting failures of this address and of this user name."""
    name = hashlib.sha256(username.strip().lower().encode("utf-8", "replace")).hexdigest()[:32]
    address = client_address(request) if request is not None else ""
    return [f"address:{address}", f"user:{name}"]


def signin_blocked(keys: list[str]) -> bool:
    """Return whether any of the keys reached the limit; a cache that is down blocks nobody."""
    try:
        counts = caches["signin"].get_many(keys)
    except Exception:  # Redis down: signing in matters more than the limit
        logger.warning("sign-in limit not checked: the signin cache is not answering")
        return False
    return any(count >= settings.DEDUP_SIGNIN_FAILURES for count in counts.values())


def window_count(keys: list[str]) -> int:
    """Count one against each key in the "signin" cache (the window starts at the first);
    return the highest count, 0 when the cache is down."""
    cache = caches["signin"]
    counts = [0]
    try:
        for key in keys:
            cache.add(key, 0, timeout=settings.DEDUP_SIGNIN_WINDOW_SECONDS)
            counts.append(cache.incr(key))
    except Exception:
        logger.warning("%s not counted: the signin cache is not answering", keys)
    return max(counts)


def signin_failed(keys: list[str]) -> int:
    """Count a failure against each key; return the highest count, 0 when the cache is down."""
    return window_count(keys)


def signin_audit(request: HttpRequest | None, username: str, count: int) -> None:
    """Put a failed sign-in in the audit log, and the lockout when this failure reached it."""
    address = client_address(request) if request is not None else ""
    entry = {"username": username, "address": address, "changes": {"failures": count}}
    services.audit_record(action=AuditAction.SIGNIN_FAILED, **entry)
    if count == settings.DEDUP_SIGNIN_FAILURES:
        services.audit_record(action=AuditAction.SIGNIN_LOCKED, **entry)


class LimitedSignIn:
    """Refuse to check a password once its user name or address failed too often."""

    too_many_message = _(
        "Too many failed sign-ins for this user name or from this address: try again in "
        "%(minutes)d minutes, or ask an admin to reset your password."
    )

    @property
    def too_many(self) -> bool:
        return any(e.code == "too_many" for e in self.errors.as_data().get("__all__", []))

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        keys = failure_keys(self.request, username)
        if signin_blocked(keys):
            minutes = max(1, settings.DEDUP_SIGNIN_WINDOW_SECONDS // 60)
            raise forms.ValidationError(
                self.too_many_message, code="too_many", params={"minutes": minutes}
            )
        try:
            return super().clean()
        except forms.ValidationError:
            signin_audit(self.request, username, signin_failed(keys))
            raise


class SignInForm(LimitedSignIn, AuthenticationForm):
    """The site's sign-in form."""


class AdminSignInForm(LimitedSignIn, AdminAuthenticationForm):
    """The admin's sign-in form."""
