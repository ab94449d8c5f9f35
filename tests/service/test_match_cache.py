"""The match table each web process caches: kept at the version every writer moves, new matches
appended without reading the old ones again, article ids of any size."""

from __future__ import annotations

import datetime as dt
import re
from contextlib import contextmanager

import pytest
from django.db import connection

from dedup import selectors
from dedup.selectors import clusterings
from dedup.selectors.clusterings import DUPLICATE, REJECTED, UNDECIDED
from tests.texts import ARTICLE, EXACT, NEAR, OTHER

pytestmark = pytest.mark.django_db
WHEN = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
READS_MATCHES = re.compile(r"\bFROM dedup_match\b", re.IGNORECASE)


@pytest.fixture(autouse=True)
def fresh_table():
    selectors.table_forget()
    yield
    selectors.table_forget()


def article(**kw):
    from dedup.models import Article

    fields = {"body": "text", "dated_at": WHEN, "length": 100, "source": "s", **kw}
    return Article.objects.create(**fields)


def match(a, b, similarity=0.8, distance=2, kind="near"):
    from dedup.models import Match

    return Match.objects.create(
        a_id=a.id, b_id=b.id, kind=kind, distance=distance, similarity=similarity
    )


@contextmanager
def match_rows_read():
    """Count the rows that statements reading dedup_match return."""
    read = []

    def count(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if READS_MATCHES.search(sql):
            read.append(context["cursor"].rowcount)
        return result

    with connection.execute_wrapper(count):
        yield read


def test_matches_updated_in_place_are_served_as_updated():
    from dedup.models import Match

    a, b, c = article(), article(), article()
    first, second = match(a, b, 0.8, 2), match(b, c, 0.6, 3)
    assert selectors.match_table().similarity.tolist() == pytest.approx([0.8, 0.6])
    # A rebuild's verdicts replace the old ones in the same rows: same ids, same count.
    Match.objects.filter(id=first.id).update(similarity=0.95, distance=1)
    Match.objects.filter(id=second.id).update(kind="partial", distance=None)
    table = selectors.match_table()
    assert table.similarity.tolist() == pytest.approx([0.95, 0.6])
    assert table.distance.tolist() == [1, -1]
    assert table.kind.tolist() == [clusterings.NEAR, clusterings.PARTIAL]


def test_new_matches_are_appended_without_reading_the_old_ones_again():
    a, b, c, d, e = (article(title=f"t{i}") for i in range(5))
    match(a, b), match(b, c), match(d, e)
    before = selectors.match_table()
    late = article(title="late")
    match(a, late, 0.7)  # an old article and a new one
    match(c, d, 0.5)  # two old articles: two clusters become one
    with match_rows_read() as read:
        table = selectors.match_table()
    assert sum(read) == 2
    assert len(before.match_id) == 3 and len(table.match_id) == 5
    ids = table.article_id
    assert ids.tolist() == sorted(x.id for x in (a, b, c, d, e, late))
    pairs = {(int(ids[x]), int(ids[y])) for x, y in zip(table.a, table.b, strict=True)}
    expected = {(a.id, b.id), (b.id, c.id), (d.id, e.id), (a.id, late.id), (c.id, d.id)}
    assert pairs == expected
    assert table.titles[table.node(late.id)] == "late"
    # The clusters follow the new matches: the late article joins a's story; c, no copy of
    # a, is the centre of another story with d (a cluster is one story: no chain through b).
    found = table.clustering(clusterings.Bars())
    assert sorted(found.size.tolist()) == [2, 3]
    label = found.label
    assert label[table.node(late.id)] == label[table.node(a.id)] == label[table.node(b.id)]
    assert label[table.node(c.id)] == label[table.node(d.id)] != label[table.node(a.id)]


def test_decisions_after_an_append_land_on_their_pairs(django_user_model):
    from dedup.models import Decision

    a, b, c = article(), article(), article()
    match(a, b)
    selectors.match_table()
    match(b, c)
    Decision.objects.create(a_id=b.id, b_id=c.id, verdict="duplicate")
    Decision.objects.create(a_id=c.id, verdict="original")
    table = selectors.match_table()
    assert table.decision.tolist() == [UNDECIDED, DUPLICATE]
    assert table.chosen[table.node(c.id)] > 0


def test_pairs_of_article_ids_past_two_to_the_32_keep_their_own_decisions():
    from dedup.models import Decision

    low = [article(), article()]
    # Ids 2**32 apart share the low 32 bits, where a * 2**32 + b keeps only b's.
    high = [article(id=x.id + 2**32) for x in low]
    past_31 = [article(id=2**31 + 5), article(id=2**31 + 9)]
    for x, y in (low, high, past_31):
        match(x, y)
    Decision.objects.create(a_id=high[0].id, b_id=high[1].id, verdict="not_duplicate")
    Decision.objects.create(a_id=past_31[0].id, b_id=past_31[1].id, verdict="duplicate")
    table = selectors.match_table()
    ids = table.article_id
    verdicts = {
        (int(ids[x]), int(ids[y])): int(d)
        for x, y, d in zip(table.a, table.b, table.decision, strict=True)
    }
    assert verdicts == {
        (low[0].id, low[1].id): UNDECIDED,
        (high[0].id, high[1].id): REJECTED,
        (past_31[0].id, past_31[1].id): DUPLICATE,
    }


def processed(*texts: str, upload=None, **fields) -> list[int]:
    from dedup import services

    rows = [{"title": f"t{i}", "body": text, **fields} for i, text in enumerate(texts)]
    if "id" in fields:  # the first row alone keeps it
        rows[1:] = [{k: v for k, v in row.items() if k != "id"} for row in rows[1:]]
    ids = [a.pk for a in services.articles_ingest(rows=rows, upload=upload)]
    services.articles_process(article_ids=ids)
    return ids


def test_processing_and_decisions_move_the_version_as_additions(django_user_model):
    from dedup import services
    from dedup.models import Match

    before = selectors.table_version()
    a, b = processed(ARTICLE, NEAR)
    found = selectors.table_version()
    assert Match.objects.filter(a_id=a, b_id=b).exists()
    assert found.version != before.version and found.reset == before.reset
    editor = django_user_model.objects.create_user("li.wei")
    services.decision_record(a_id=a, b_id=b, verdict="duplicate", user=editor, seen=0)
    decided = selectors.table_version()
    assert decided.version != found.version and decided.reset == found.reset


def test_replacing_an_article_through_the_api_reads_everything_again():
    from dedup import services

    processed(ARTICLE, NEAR, source="s", id="1")
    assert len(selectors.match_table().match_id) == 1
    before = selectors.table_version()
    services.articles_submit(rows=[{"body": OTHER, "id": "1", "source": "s"}], replace=True)
    assert selectors.table_version().reset != before.reset
    assert len(selectors.match_table().match_id) == 0  # the replaced article's match went


def test_deleting_an_upload_reads_everything_again():
    from dedup import services
    from dedup.models import UploadBatch

    batch = UploadBatch.objects.create(name="news.jsonl")
    processed(ARTICLE, NEAR, upload=batch)
    assert len(selectors.match_table().match_id) == 1
    before = selectors.table_version()
    services.upload_delete(upload_id=batch.pk)
    assert selectors.table_version().reset != before.reset
    assert len(selectors.match_table().match_id) == 0


def test_a_rebuild_switching_over_reads_everything_again(monkeypatch):
    from dedup import services, tasks

    processed(ARTICLE, NEAR, EXACT)
    table = selectors.match_table()
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kw: None)
    job = services.settings_update(top_n=128)
    before = selectors.table_version()
    assert services.index_rebuild(job_id=job.pk).state == "done"
    assert selectors.table_version().reset != before.reset
    assert selectors.match_table() is not table


def test_every_process_sees_a_write_made_after_it_read():
    from dedup.models import Decision
    from dedup.selectors.matches import MatchCache

    a, b = article(), article()
    match(a, b)
    web1, web2 = MatchCache(), MatchCache()  # two web processes
    assert web1.table().decision.tolist() == web2.table().decision.tolist() == [UNDECIDED]
    Decision.objects.create(a_id=a.id, b_id=b.id, verdict="not_duplicate")
    assert web1.table().decision.tolist() == web2.table().decision.tolist() == [REJECTED]
    assert web1.rows_read == web2.rows_read == 1  # the decision alone: no match read again


def test_many_articles_are_read_by_one_range_and_the_unmatched_among_them_left_out(monkeypatch):
    from dedup.selectors import matches

    monkeypatch.setattr(matches, "READ_BY_ID", 1)
    a = article(title="First")
    article(title="unmatched, between the two")
    b = article(title="Second", source="t")
    match(a, b)
    table = selectors.match_table()
    assert table.article_id.tolist() == [a.id, b.id]
    assert table.titles == ["first", "second"]
    assert [table.sources[code] for code in table.source] == ["s", "t"]
