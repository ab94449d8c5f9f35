"""Browser tests: Playwright drives Debian's Chromium against pytest-django's live_server.

No browser is downloaded: `./dev test` installs Debian's chromium (and a Chinese font) when
/usr/bin/chromium is missing. Screenshots go to tests/browser/artifacts/ (gitignored): look at them.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]  # fmt: skip
PASSWORD = "browser-pw"

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# between steps are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: run ./dev test, which installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser, live_server):
    """A fresh browser profile (no cookies) that speaks Chinese, against the live server."""
    from django.core.cache import cache

    cache.clear()  # the overview's cached figures belong to an earlier test's database
    one = browser.new_context(
        base_url=live_server.url,
        locale="zh-CN",
        viewport={"width": 1280, "height": 860},
        accept_downloads=True,
    )
    one.set_default_timeout(10_000)
    yield one
    one.close()


@pytest.fixture
def page(context):
    one = context.new_page()
    errors: list[str] = []
    one.on("pageerror", lambda error: errors.append(str(error)))
    one.js_errors = errors
    return one


@pytest.fixture
def shot():
    """Return shot(page, name): save a full-page screenshot into tests/browser/artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def users(transactional_db) -> dict:
    """The editor and admin users, in their groups (a flushed test database lost the groups)."""
    from django.contrib.auth.models import Group, Permission, User

    roles = importlib.import_module("dedup.migrations.0002_roles")
    editor, _ = Group.objects.get_or_create(name="editor")
    for app, codename in roles.EDITOR:
        editor.permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.set(Permission.objects.filter(content_type__app_label__in=["dedup", "auth"]))
    made = {}
    for name, group, staff in (("editor", editor, False), ("admin", admin, True)):
        user = User.objects.create_user(name, password=PASSWORD, is_staff=staff, is_superuser=staff)
        user.groups.add(group)
        made[name] = user
    return made


@pytest.fixture
def sign_in(users):
    """Return sign_in(page, username): sign in through the login form."""

    def act(page, username: str = "editor", next_url: str = "/") -> None:
        page.goto(f"/accounts/login/?next={next_url}")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("form.stack button[type=submit]")
        page.wait_for_load_state()

    return act


@pytest.fixture(autouse=True)
def _index_caches_cleared(index_caches_cleared):
    """Each test starts with no cached features or keys: a test database hands out ids again."""
