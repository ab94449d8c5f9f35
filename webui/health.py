"""Probes for the compose file and load balancers: /healthz (the process answers) and /readyz
(the database, the broker and a worker answer). Both answer JSON, to anyone, without a session."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webui import overview

RETRY_AFTER_SECONDS = 30


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer that this web process is alive; it checks nothing else."""
    return JsonResponse({"ok": True})


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        connection.close_if_unusable_or_obsolete()
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ""


def _broker() -> str:
    if not settings.REDIS_URL:
        return "" if settings.BROKER_DIR.is_dir() else f"no broker folder {settings.BROKER_DIR}"
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except Exception as exc:
        return str(exc) or type(exc).__name__
    finally:
        client.close()
    return ""


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when the database, the broker and at least one worker answer, else 503."""
    started = time.monotonic()
    checks = {"database": _database(), "broker": _broker()}
    workers = overview.workers_status() if not checks["broker"] else {"ok": False}
    if workers.get("ok") is None:
        checks["worker"] = "no answer yet"
    elif not workers["ok"]:
        checks["worker"] = workers.get("error") or "no worker answered a ping"
    else:
        checks["worker"] = ""
    ok = not any(checks.values())
    body = {
        "ok": ok,
        "checks": {name: (problem or "ok") for name, problem in checks.items()},
        "workers": workers.get("names", []),
        "seconds": round(time.monotonic() - started, 3),
    }
    response = JsonResponse(body, status=200 if ok else 503)
    if not ok:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
