"""Issue 31's rough edges a new user hit on the dashboard, each pinned by a test: the queue's
headline counts what its list shows, an undone decision reads the same on the compare and the
cluster pages, CSV exports open in Excel (byte-order mark) with the pages' local times and a
link that names each parameter once, and /favicon.ico answers."""

from __future__ import annotations

import csv
import io
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.utils import timezone

from dedup.models import Decision, Match
from tests.webui.conftest import article

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain():
    a, b, c = article(1), article(2), article(3)
    Match.objects.create(a=a, b=b, kind="near", distance=2, similarity=0.81)
    Match.objects.create(a=a, b=c, kind="near", distance=3, similarity=0.62)
    return a, b, c


def visible(html: str) -> str:
    """The page's text, tags dropped and spaces squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.usefixtures("chain")
def test_the_queue_headline_counts_the_clusters_its_list_shows(editor_client):
    done, copy = article(20, source="新华社"), article(21, source="新华社")
    Match.objects.create(a=done, b=copy, kind="near", distance=1, similarity=0.9)
    Decision.objects.create(a=done, b=copy, verdict="duplicate")  # reviewed: not waiting
    for status, listed in (("waiting", 1), ("reviewed", 1), ("all", 2)):
        counts = editor_client.get(f"/?status={status}").context["counts"]
        assert (counts["clusters"], counts["listed"]) == (listed, listed), status
    counts = editor_client.get("/?status=waiting").context["counts"]
    assert (counts["articles"], counts["waiting"], counts["matches"]) == (3, 1, 2)
    # None listed: the page still says the filters leave them out, not that there are none.
    html = editor_client.get("/?status=waiting&source=新华社").content.decode()
    assert "没有符合这些条件的簇" in html, html[-3000:]


def test_an_undone_decision_reads_the_same_on_the_compare_and_cluster_pages(editor_client, chain):
    a, b, _c = chain
    editor_client.post("/decisions/", {"pick": f"not_duplicate:{a.id}:{b.id}:0"})
    first = Decision.objects.get()
    editor_client.post("/decisions/", {"pick": f"undone:{a.id}:{b.id}:{first.id}"})
    compare = visible(editor_client.get(f"/compare/{a.id}/{b.id}/").content.decode())
    cluster = visible(editor_client.get(f"/clusters/{a.id}/").content.decode())
    assert "决定已撤销" not in compare and "决定已撤销" not in cluster
    said = "等待中 撤销者 li.wei"
    assert said in compare and said in cluster


def test_csv_exports_start_with_a_byte_order_mark_and_show_local_times(
    editor_client, editor, chain, settings
):
    a, b, _c = chain
    Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=editor)
    for url in ("/export/decisions.csv", "/export/clusters.csv"):
        body = b"".join(editor_client.get(url).streaming_content)
        assert body.startswith("\ufeff".encode()), url  # Excel reads UTF-8 then
    body = b"".join(editor_client.get("/export/decisions.csv").streaming_content)
    head, row = csv.reader(io.StringIO(body.decode("utf-8-sig")))
    at = row[head.index("decided_at")]
    decided = Decision.objects.get().decided_at
    assert settings.TIME_ZONE == "Asia/Shanghai"
    assert at == timezone.localtime(decided).isoformat() and at.endswith("+08:00")


def test_the_export_link_names_each_parameter_once(editor_client, chain):
    html = editor_client.get("/?near=0.5&partial=0.3&source=人民日报&status=all").content
    link = re.search(r'href="(/export/clusters\.csv\?[^"]*)"', html.decode()).group(1)
    pairs = parse_qsl(urlsplit(link.replace("&amp;", "&")).query)
    names = [name for name, _ in pairs]
    assert len(names) == len(set(names)), link
    assert dict(pairs) == {"near": "0.5", "partial": "0.3", "source": "人民日报", "status": "all"}


def test_favicon_answers_without_a_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 204
    assert "max-age" in response["Cache-Control"]


def test_a_cut_title_that_ends_in_an_ellipsis_gets_one_not_two(editor_client):
    """Issue 31: "肯…..." in the queue's rows: the demo's titles hold an ellipsis of their own
    ("…（摘录）"), and cutting one just after it added a second (Django's Chinese one, "...")."""
    original = article(1)
    for n, at in enumerate((23, 24, 25, 26), 2):  # wherever the cut falls, ellipsis or "..."
        title = "中南外长联合举行记者招待会阐述两国关系和对台湾"[:at] + "肯…（摘录）"
        copy = article(n, title=title)
        Match.objects.create(a=original, b=copy, kind="near", distance=1, similarity=0.9)
    html = editor_client.get("/?status=all").content.decode()
    assert html.count("肯") >= 3  # the copies' titles are in the row, cut there
    for twice in ("……", "…...", "...…", "......"):
        assert twice not in html, twice
