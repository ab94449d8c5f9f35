"""Who may see what: editors review, admins also configure and watch the system."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

EDITOR = "editor"
ADMIN = "admin"


def user_role(user) -> str | None:
    """Return "admin", "editor" or None for a user (superusers are admins)."""
    if not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    # One query per request at most: the names are cached on the user object.
    names = getattr(user, "_webui_groups", None)
    if names is None:
        names = set(user.groups.values_list("name", flat=True))
        user._webui_groups = names
    if ADMIN in names:
        return ADMIN
    if EDITOR in names:
        return EDITOR
    return None


def _require(allowed: tuple[str, ...]) -> Callable:
    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if user_role(request.user) not in allowed:
                raise PermissionDenied("this page is for the roles " + ", ".join(allowed))
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


editor_required = _require((EDITOR, ADMIN))
editor_required.__doc__ = "Let signed-in editors and admins in; others sign in or get 403."
admin_required = _require((ADMIN,))
admin_required.__doc__ = "Let signed-in admins in; others sign in or get 403."


def role(request: HttpRequest) -> dict:
    """Tell templates the user's role: `role`, `is_editor` and `is_admin`."""
    user = getattr(request, "user", None)
    current = user_role(user) if user is not None else None
    return {"role": current, "is_editor": current is not None, "is_admin": current == ADMIN}
