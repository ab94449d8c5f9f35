"""Test settings: the machine's real PostgreSQL and Redis (`.ci/run` starts them)."""

import os

import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dedup.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("SECRET_KEY", "tests-only-secret")
os.environ.setdefault("DEDUP_VAR_DIR", "/tmp/dedup-tests-var")
# The test client and the browser speak plain HTTP to the test server (no https redirect).
os.environ.setdefault("DEDUP_HTTPS", "0")

# A real Celery worker and wait_until, for tests/service and tests/browser.
pytest_plugins = ["tests.workers"]


def pytest_configure(config):
    """Load Django with the settings above (pytest-django reads the environment too early)."""
    import django

    django.setup()
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
