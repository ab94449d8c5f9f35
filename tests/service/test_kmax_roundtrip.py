"""Issue 29: k_max a -> b -> a gives back the matches a rebuild at a found. Matches found while
articles arrived can differ from a rebuild's until beat settles them (dedup.services.settling:
the arriving articles were judged on less than the collection holds); a rebuild indexes every
article, then matches each against the whole index, so the round trip is compared with one."""

from __future__ import annotations

import pytest

from bench.corpus import build_corpus
from dedup import services, tasks
from dedup.models import Match
from dedup.services import rebuilds

pytestmark = pytest.mark.django_db


def matches() -> set[tuple]:
    rows = Match.objects.values_list("a_id", "b_id", "kind", "distance", "similarity")
    return {
        (a, b, kind, distance, round(similarity, 6)) for a, b, kind, distance, similarity in rows
    }


def rebuilt(job) -> None:
    rebuilds.index_rebuild(job_id=job.pk)


def test_k_max_changed_and_changed_back_gives_back_the_same_matches(monkeypatch):
    monkeypatch.setattr(tasks.index_rebuild, "delay", lambda **kwargs: None)
    monkeypatch.setattr(tasks.articles_process, "delay", lambda **kwargs: None)
    rows = [{"title": f"t{i}", "body": d.text} for i, d in enumerate(build_corpus(per_band=8))]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    for i in range(0, len(ids), 7):  # as workers take them: small chunks
        services.articles_process(article_ids=ids[i : i + 7])
    rebuilt(services.index_rebuild_start(send=False)[0])  # every pair judged by a rebuild
    before = matches()
    assert len(before) > 100
    rebuilt(services.settings_update(k_max=3))
    rebuilt(services.settings_update(k_max=4))
    assert matches() == before
