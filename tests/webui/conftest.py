"""What the dashboard's view tests share: a fresh match table per test, an editor signed in,
and articles made in a line of a few words each."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from tests import roles

WHEN = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)


def user_in(django_user_model, group: str | None, name: str):
    user = django_user_model.objects.create_user(name, password="pw")
    if group:
        user.groups.add(roles.group(group))
    return user


def article(n: int, body: str = "", **kw):
    """Return article n: its title, source and date follow from n."""
    from dedup.models import Article  # Django is set up after conftests are read

    text = body or f"今天北京的天气很好，我们去公园散步。第{n}篇文章的内容在这里。"
    fields = {"title": f"标题 {n}", "source": "人民日报", "length": len(text), **kw}
    fields.setdefault("dated_at", WHEN + dt.timedelta(hours=n))
    return Article.objects.create(body=text, **fields)


@pytest.fixture(autouse=True)
def fresh_table():
    from dedup import selectors

    selectors.table_forget()  # each test's transaction starts from its own rows
    yield
    selectors.table_forget()


@pytest.fixture
def editor(django_user_model):
    return user_in(django_user_model, "editor", "li.wei")


@pytest.fixture
def editor_client(editor):
    client = Client()
    client.force_login(editor)
    return client
