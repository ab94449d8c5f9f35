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


def big_cluster(members: int, pairs: int, source: str = "新华社") -> list[int]:
    """Make one cluster: `members` articles, each a copy of the first (a cluster is one
    story: every member matches its original) and more matches among them up to `pairs`,
    similarities with ties; return the article ids in order."""
    from dedup.models import Article, Match

    made = Article.objects.bulk_create(
        Article(
            title=f"大集群 {i}",
            body=f"第{i}篇",
            length=4,
            source=source,
            dated_at=WHEN + dt.timedelta(minutes=i),
        )
        for i in range(members)
    )
    ids = [a.pk for a in made]
    edges = [(0, i) for i in range(1, members)]
    tree = set(edges)
    for i in range(members):
        for j in range(i + 3, members, 7):
            if len(edges) < pairs and (i, j) not in tree:
                edges.append((i, j))
    if len(edges) != pairs:
        raise ValueError(f"{members} members make at most {len(edges)} pairs this way")
    Match.objects.bulk_create(
        Match(
            a_id=ids[i],
            b_id=ids[j],
            kind="near",
            distance=3,
            similarity=0.6 + (i * 7 + j * 13) % 5 / 20,
        )
        for i, j in edges
    )
    return ids


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
