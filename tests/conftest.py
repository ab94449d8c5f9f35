"""Test settings: the machine's real PostgreSQL and Redis (`.ci/run` starts them).

Names are this checkout's own, so that two checkouts on one machine never meet: the test
database is test_dedup_<checkout>, every Redis key starts with dedup-test-<checkout>: (the
broker's queues and the caches; the tests empty only those), files go to
/tmp/dedup-tests-<checkout>. Without a PostgreSQL on 127.0.0.1:5432 (and no DATABASE_URL) the
tests use the checkout's embedded one, as `./dev serve` does. Under pytest-xdist (`-n 2`) each
process is a checkout of its own: its names end with the worker's (gw0, gw1). `./dev test` runs
one process: in two, tests with a Celery worker sometimes saw no task arrive (not understood).
"""

import hashlib
import os
import socket
from pathlib import Path

import pytest

CHECKOUT = hashlib.sha1(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:8]
CHECKOUT += os.environ.get("PYTEST_XDIST_WORKER", "")
_ENVIRONMENT = dict(os.environ)  # as given, before the names below


def _local_postgres() -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 5432)) == 0


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dedup.settings")
os.environ.setdefault("SECRET_KEY", "tests-only-secret")
os.environ.setdefault("DEDUP_VAR_DIR", f"/tmp/dedup-tests-{CHECKOUT}")
if not os.environ.get("DATABASE_URL") and _local_postgres():
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/postgres"
if os.environ.get("DATABASE_URL") and "test_name=" not in os.environ["DATABASE_URL"]:
    joiner = "&" if "?" in os.environ["DATABASE_URL"] else "?"
    os.environ["DATABASE_URL"] += f"{joiner}test_name=test_dedup_{CHECKOUT}"
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("DEDUP_REDIS_PREFIX", f"dedup-test-{CHECKOUT}:")
# The test client and the browser speak plain HTTP to the test server (no https redirect).
os.environ.setdefault("DEDUP_HTTPS", "0")

# A real Celery worker and wait_until, for tests/service and tests/browser.
pytest_plugins = ["tests.workers"]


def pytest_configure(config):
    """Load Django with the settings above (pytest-django reads the environment too early)."""
    import django

    django.setup()
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        # The controller of a two-process run: its workers start from the environment as given
        # and name their own database, Redis prefix and directory (with this one's, Django would
        # read them before their conftest runs).
        os.environ.clear()
        os.environ.update(_ENVIRONMENT)
    from django.conf import settings

    # WhiteNoise warns on every request when the collected static files' directory is missing.
    os.makedirs(settings.STATIC_ROOT, exist_ok=True)
    # Sign-in failures are counted in this process, not in Redis, where they would outlive the
    # run (and the browser tests' wrong passwords add up for 127.0.0.1); emptied per test.
    settings.CACHES["signin"] = {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "signin-tests",
    }


@pytest.fixture(autouse=True)
def _signin_failures_forgotten():
    """Each test starts with no sign-in failures counted."""
    from django.core.cache import caches

    caches["signin"].clear()
