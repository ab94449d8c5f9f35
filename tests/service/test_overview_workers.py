"""The overview's worker count with a real worker (issue 31: it said "0 — no worker answered"
while a worker ran). On Redis the ping answers; on the file broker of `./dev serve` a ping
takes about a second, longer than the page waits, so the overview counts a worker by its
heartbeat, which every process must see: without Redis the cache is in files under var/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.core.cache import cache
from django.test import Client

from tests import roles
from tests.workers import database_url
from webui import overview

ROOT = Path(__file__).resolve().parents[2]


def admin_client(django_user_model) -> Client:
    user = django_user_model.objects.create_user("ad", password="pw")
    user.groups.add(roles.group("admin"))
    client = Client()
    client.force_login(user)
    return client


def test_the_overview_counts_a_running_worker(worker, django_user_model, wait_until):
    for key in (overview.WORKERS_CACHE_KEY, overview.WORKERS_CACHE_KEY + ":last"):
        cache.delete(key)  # only these: clear() would empty the Redis database others share
    client = admin_client(django_user_model)
    wait_until(lambda: client.get("/overview/").context["workers"]["ok"], timeout=10)
    html = client.get("/overview/").content.decode()
    assert "没有后台进程应答" not in html


OVERVIEW = """
import json, time
import django
django.setup()
from webui import overview
seen = []
for _ in range(6):  # an admin reloading the overview
    seen.append(overview.workers_status()["ok"])
    time.sleep(0.5)
print(json.dumps(seen))
"""


def test_the_overview_counts_a_worker_on_the_file_broker_of_dev_serve(worker_factory, tmp_path):
    from django.db import connections

    var = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
        "DEDUP_VAR_DIR": str(var),
        "DATABASE_URL": database_url(connections["default"].settings_dict),
        "DJANGO_SETTINGS_MODULE": "dedup.settings",
    }
    worker_factory(env_extra={"REDIS_URL": "", "DEDUP_VAR_DIR": str(var)})
    done = subprocess.run(
        [sys.executable, "-c", OVERVIEW], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert False not in seen, seen  # never "0 — no worker answered"
    assert seen[-1] is True, seen
