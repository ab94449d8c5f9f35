"""The live queue's polls: new matches after a cursor, decisions by others on a cluster."""

from __future__ import annotations

import pytest
from django.test import Client

from dedup.models import Decision, Match
from tests.webui.conftest import article, user_in

pytestmark = pytest.mark.django_db


def test_polls_need_a_signed_in_editor():
    for address in ["/live/queue.json", "/live/cluster.json"]:
        assert Client().get(address).status_code == 302


def test_queue_counts_matches_after_the_cursor(editor_client):
    x, y, z = article(1), article(2), article(3)
    first = Match.objects.create(a=x, b=y, kind="near", similarity=0.9)
    page = editor_client.get("/").content.decode()
    assert f'data-cursor="{first.id}"' in page and 'id="live-new"' in page
    assert editor_client.get("/live/queue.json", {"after": first.id}).json() == {
        "cursor": first.id,
        "matches": 0,
        "articles": 0,
    }
    later = Match.objects.create(a=x, b=z, kind="partial", similarity=0.5)
    answer = editor_client.get("/live/queue.json", {"after": first.id}).json()
    assert answer == {"cursor": later.id, "matches": 1, "articles": 2}
    assert editor_client.get("/live/queue.json", {"after": "x"}).json()["matches"] == 2


def test_cluster_shows_decisions_by_others_only(editor_client, editor, django_user_model):
    x, y, z = article(1), article(2), article(3)
    Match.objects.create(a=x, b=y, kind="near", similarity=0.9)
    other = user_in(django_user_model, "editor", "wang.fang")
    mine = Decision.objects.create(a=x, b=y, verdict="duplicate", decided_by=editor)
    theirs = Decision.objects.create(a=x, b=y, verdict="not_duplicate", decided_by=other)
    Decision.objects.create(a=z, verdict="original", decided_by=other)  # another cluster
    answer = editor_client.get(
        "/live/cluster.json", {"after": mine.id - 1, "ids": f"{x.id},{y.id},junk"}
    ).json()
    assert answer["cursor"] == theirs.id
    assert [(d["a"], d["b"], d["verdict"], d["by"]) for d in answer["decisions"]] == [
        (x.id, y.id, "not_duplicate", "wang.fang")
    ]
    assert answer["decisions"][0]["label"] in ("not a duplicate", "不重复")  # as the page reads
    again = editor_client.get("/live/cluster.json", {"after": theirs.id, "ids": str(x.id)})
    assert again.json()["decisions"] == []
