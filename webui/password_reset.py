"""Password reset by mail, only where mail is set up (DEDUP_PASSWORD_RESET, on when EMAIL_HOST
is set), and then a few requests per address and per mail address in the sign-in window;
elsewhere a page that says to ask an admin (Django's view answered "sent" to anyone, with
no mail to send it by)."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from webui.signin import client_address, window_count

_reset = auth_views.PasswordResetView.as_view()
_done = auth_views.PasswordResetDoneView.as_view()


def _refused(request: HttpRequest, message: str, status: int) -> HttpResponse:
    context = {"message": message}
    return render(request, "registration/password_reset_off.html", context, status=status)


def _off(request: HttpRequest) -> HttpResponse:
    message = _("Passwords are not reset by mail here: ask an admin to reset yours.")
    return _refused(request, message, 404)


def password_reset(request: HttpRequest) -> HttpResponse:
    """Send a reset link by mail, a few times per window at most; 404 without mail."""
    if not settings.DEDUP_PASSWORD_RESET:
        return _off(request)
    if request.method == "POST":
        mail = request.POST.get("email", "").strip().lower()
        keys = [
            f"reset-address:{client_address(request)}",
            f"reset-mail:{hashlib.sha256(mail.encode('utf-8', 'replace')).hexdigest()[:32]}",
        ]
        if window_count(keys) > settings.DEDUP_PASSWORD_RESETS:
            minutes = max(1, settings.DEDUP_SIGNIN_WINDOW_SECONDS // 60)
            message = _(
                "Too many password resets asked for this mail address or from this address: "
                "try again in %(minutes)d minutes, or ask an admin to reset your password."
            ) % {"minutes": minutes}
            return _refused(request, message, 429)
    return _reset(request)


def password_reset_done(request: HttpRequest) -> HttpResponse:
    """Say the mail is on its way; 404 without mail."""
    if not settings.DEDUP_PASSWORD_RESET:
        return _off(request)
    return _done(request)
