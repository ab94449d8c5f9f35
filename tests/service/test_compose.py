"""docker-compose.yml, the Dockerfile and .env.example agree with what dedup/settings.py reads.

There is no Docker engine here: these read the files. `docker compose config` would check the
syntax too; what it cannot check is that the app gets the variables settings.py reads.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "webhooks", "beat")
# Compose-only knobs: interpolated into docker-compose.yml, never passed to dedup.
# Read by compose or gunicorn.conf.py, not settings.py.
COMPOSE_ONLY = {
    "POSTGRES_PASSWORD",
    "DEDUP_PORT",
    "GUNICORN_MAX_REQUESTS",
    "GUNICORN_WORKERS",
    "GUNICORN_THREADS",
}


def settings_variables() -> set[str]:
    """Return the environment variables dedup/settings.py reads, by name."""
    source = (ROOT / "dedup" / "settings.py").read_text(encoding="utf-8")
    readers = r"env_str|env_int|env_float|env_bool|os\.environ\.get|os\.getenv"
    names = set(re.findall(rf"""(?:{readers})\(\s*["']([A-Z0-9_]+)["']""", source))
    names |= set(re.findall(r"""os\.environ\[\s*["']([A-Z0-9_]+)["']\s*\]""", source))
    return names


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


def test_settings_variables_are_found():
    found = settings_variables()
    assert {"SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS"} <= found


def test_compose_has_the_six_services(compose):
    services = {"postgres", "redis", "web", "worker", "webhooks", "beat"}
    assert set(compose["services"]) == services


def test_postgres_keeps_its_data_in_a_volume_and_has_a_health_check(compose):
    postgres = compose["services"]["postgres"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in postgres["volumes"]}
    assert mounts["/var/lib/postgresql/data"] in compose["volumes"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])


def test_redis_has_a_health_check(compose):
    assert "ping" in compose["services"]["redis"]["healthcheck"]["test"]


def test_app_services_wait_for_healthy_database_and_broker(compose):
    for name in APP_SERVICES:
        depends = compose["services"][name]["depends_on"]
        for needed in ("postgres", "redis"):
            assert depends[needed]["condition"] == "service_healthy", (name, needed)


def test_workers_start_after_web_has_migrated(compose):
    web = compose["services"]["web"]
    assert "healthcheck" in web
    for name in ("worker", "webhooks", "beat"):
        assert compose["services"][name]["depends_on"]["web"]["condition"] == "service_healthy"


def test_commands_run_gunicorn_after_migrate_and_celery(compose):
    services = compose["services"]
    web = services["web"]["command"]
    web = web if isinstance(web, str) else " ".join(web)
    assert web.index("migrate") < web.index("gunicorn dedup.wsgi")
    assert services["worker"]["command"][:4] == ["celery", "-A", "dedup", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "dedup", "beat"]
    webhooks = services["webhooks"]["command"]
    assert webhooks[:4] == ["celery", "-A", "dedup", "worker"]
    assert webhooks[webhooks.index("-Q") + 1] == "webhooks"


def test_web_and_worker_share_the_uploads(compose):
    def media(name: str) -> str:
        service = compose["services"][name]
        root = service["environment"]["MEDIA_ROOT"]
        return next(m.split(":")[0] for m in service["volumes"] if m.split(":")[1] == root)

    assert media("web") == media("worker")
    assert media("web") in compose["volumes"]


def test_app_services_get_the_same_environment(compose):
    environments = [compose["services"][name]["environment"] for name in APP_SERVICES]
    assert all(env == environments[0] for env in environments)


def test_every_variable_compose_passes_is_read_by_settings(compose):
    known = settings_variables()
    for name in APP_SERVICES:
        passed = set(compose["services"][name]["environment"])
        assert passed <= known, f"{name} passes {sorted(passed - known)}, unknown to settings"
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= set(
        compose["services"]["web"]["environment"]
    )


def test_compose_takes_secrets_from_env_file(compose):
    env = compose["services"]["web"]["environment"]
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD" in env["DATABASE_URL"]
    assert "@postgres:5432/" in env["DATABASE_URL"]
    assert env["REDIS_URL"].startswith("redis://redis:6379/")


def test_env_example_names_every_variable_settings_reads():
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    named = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))
    missing = settings_variables() - named
    assert not missing, f".env.example does not name {sorted(missing)}"


def test_env_example_names_what_compose_interpolates(compose):
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    named = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))
    raw = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    interpolated = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", raw))
    assert interpolated <= named, sorted(interpolated - named)
    assert named - settings_variables() <= COMPOSE_ONLY


def test_dockerfile_installs_the_project_and_collects_static_files():
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim", text, flags=re.MULTILINE)
    assert "pip install -e ." in text  # the compiled merges land beside the sources
    assert "gcc" in text and 'python -c "import dedup.engine._native"' in text
    assert "collectstatic --noinput" in text


def gunicorn_config() -> dict[str, str]:
    """Return gunicorn's settings as it reads them from gunicorn.conf.py (as the image's and
    the compose file's gunicorn do)."""
    printed = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", "dedup.wsgi"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    return {
        name.strip(): value.strip()
        for name, _, value in (line.partition("=") for line in printed.splitlines())
    }


def test_gunicorn_recycles_its_workers():
    """Each web worker is replaced after a bounded number of requests, staggered."""
    settings = gunicorn_config()
    assert 0 < int(settings["max_requests"]) <= 10000
    assert int(settings["max_requests_jitter"]) > 0


def test_gunicorn_serves_with_threads_in_each_worker():
    """Several processes, each with threads (gthread) that serve while another waits for the
    database; the compose file's command leaves them to gunicorn.conf.py."""
    settings = gunicorn_config()
    assert int(settings["workers"]) >= 2 and int(settings["threads"]) >= 2
    web = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]
    assert "--workers" not in web["command"] and "--threads" not in web["command"]
