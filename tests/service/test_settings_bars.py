"""Issue 29: an admin threshold means what it says at once, in the queue, the API's match
listings and the CSV export, and turning it back gives back what was there."""

from __future__ import annotations

import csv
import io
import time

import pytest
from django.test import Client

from dedup import selectors, services
from dedup.models import ApiToken, Match
from tests.service.test_api import EDITOR_PERMISSIONS, _user
from tests.webui.conftest import article, user_in

pytestmark = pytest.mark.django_db

LONG = "今天北京的天气很好，我们去公园散步，看见许多人在湖边锻炼身体。" * 10  # 320 characters


@pytest.fixture(autouse=True)
def fresh_table():
    selectors.table_forget()
    yield
    selectors.table_forget()


@pytest.fixture
def stored():
    """Matches as verification stored them under the default settings (near 0.4, near_short
    0.3, partial 0.4, min_chars 60): a long near copy at 0.796, one at 0.95, a short near
    copy at 0.35 (under near, over near_short), a long excerpt (300 shared characters) at
    0.7 and a partial copy of 80 characters at 0.75."""
    arts = [article(n, body=LONG + str(n)) for n in range(1, 9)]
    short = [article(n) for n in (20, 21)]  # about 30 characters: a short pair
    made = {
        "near796": Match.objects.create(
            a=arts[0], b=arts[1], kind="near", distance=3, similarity=0.796, shared_chars=250
        ),
        "near95": Match.objects.create(
            a=arts[2], b=arts[3], kind="near", distance=1, similarity=0.95, shared_chars=300
        ),
        "short35": Match.objects.create(
            a=short[0], b=short[1], kind="near", distance=4, similarity=0.35, shared_chars=10
        ),
        "excerpt": Match.objects.create(
            a=arts[4], b=arts[5], kind="partial", similarity=0.7, shared_chars=300
        ),
        "partial": Match.objects.create(
            a=arts[6], b=arts[7], kind="partial", similarity=0.75, shared_chars=80
        ),
    }
    return made


@pytest.fixture
def editor_client(django_user_model):
    client = Client()
    client.force_login(user_in(django_user_model, "editor", "li.wei"))
    return client


@pytest.fixture
def api_client():
    key = ApiToken.issue(_user("api-editor", EDITOR_PERMISSIONS), name="tests")[1]
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def shown(editor_client, api_client, stored) -> dict[str, set[int]]:
    """Return the match ids shown in the queue, by the API and in the cluster export."""
    queue = editor_client.get("/queue/results/?status=all").context
    in_queue = queue["counts"]["matches"]
    api = set()
    for m in stored.values():
        for row in api_client.get(f"/api/articles/{m.a_id}/matches").json()["matches"]:
            if row["article"] == m.b_id:
                api.add(m.pk)
    response = editor_client.get("/export/clusters.csv?status=all")
    _head, *rows = csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    exported = {int(r[1]) for r in rows}
    csv_shown = {m.pk for m in stored.values() if {m.a_id, m.b_id} <= exported}
    assert in_queue == len(api) == len(csv_shown), (in_queue, api, csv_shown)
    return {"api": api, "csv": csv_shown}


def ids(stored, *names) -> set[int]:
    return {stored[n].pk for n in names}


def test_a_raised_threshold_shows_at_once_everywhere_and_its_undo_gives_back_the_same(
    editor_client, api_client, stored
):
    every = ids(stored, "near796", "near95", "short35", "excerpt", "partial")
    before = shown(editor_client, api_client, stored)  # the process's table is warm now
    assert before == {"api": every, "csv": every}

    start = time.monotonic()
    services.settings_update(near=0.9)
    after = shown(editor_client, api_client, stored)
    assert time.monotonic() - start < 10
    # the 0.796 copy is gone; the short pair keeps its own bar (near_short)
    assert after["api"] == after["csv"] == every - ids(stored, "near796")

    services.settings_update(near_short=0.4)
    assert shown(editor_client, api_client, stored)["api"] == ids(
        stored, "near95", "excerpt", "partial"
    )

    # partial 0.9: the long excerpt passes at 0.75 x 0.9 = 0.675, the other partial does not
    services.settings_update(partial=0.9)
    assert shown(editor_client, api_client, stored)["csv"] == ids(stored, "near95", "excerpt")
    services.settings_update(partial=1.0)
    assert shown(editor_client, api_client, stored)["csv"] == ids(stored, "near95")

    services.settings_update(near=0.4, near_short=0.3, partial=0.4)
    assert shown(editor_client, api_client, stored) == before
    assert Match.objects.count() == 5  # nothing was deleted: only what is shown changed


def test_the_editors_bar_only_raises_the_settings_bar(editor_client, stored):
    services.settings_update(near=0.9)
    counts = editor_client.get("/queue/results/?status=all&near=0.5").context["counts"]
    # the slider's near 0.5 lowers nothing (0.796 stays out) and raises the short pair's 0.3
    assert counts["matches"] == 3
    counts = editor_client.get("/queue/results/?status=all&near=0.96").context["counts"]
    assert counts["matches"] == 2  # the slider raises it further: the partial copies stay


def test_a_change_saved_by_another_process_shows_at_the_next_request(editor_client, stored):
    from dedup.models import Settings

    assert editor_client.get("/queue/results/?status=all").context["counts"]["matches"] == 5
    # another process's save: no hook runs here, the row alone moves
    Settings.objects.filter(pk=1).update(near=0.9)
    assert editor_client.get("/queue/results/?status=all").context["counts"]["matches"] == 4
    Settings.objects.filter(pk=1).update(near=0.4)
    assert editor_client.get("/queue/results/?status=all").context["counts"]["matches"] == 5
