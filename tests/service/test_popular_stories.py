"""Copies of a popular story through the worker's service (services.articles_process): a
passage held by more than MAX_PASSAGE_OWNERS articles still finds the copies where it is not
boilerplate in the article asking, as Detector.candidates finds them."""

from __future__ import annotations

import numpy as np
import pytest

from dedup import index, services
from dedup.engine.graph import components
from dedup.engine.verify import MAX_PASSAGE_OWNERS, MAX_POPULAR_OWNERS, POPULAR_HOLDERS, Detector
from dedup.index import caches, candidates, stories
from dedup.models import Match, Settings
from tests.texts import FOOTER, reposted, stranger

pytestmark = pytest.mark.django_db


def arrive(texts: list[str], chunk: int) -> list[int]:
    """Store and process the texts as a feed brings them: `chunk` at a time, in order."""
    ids = []
    for start in range(0, len(texts), chunk):
        some = texts[start : start + chunk]
        rows = [{"title": f"t{start + i}", "body": t} for i, t in enumerate(some)]
        some = [a.pk for a in services.articles_ingest(rows=rows)]
        services.articles_process(article_ids=some)
        ids += some
    return ids


def test_every_copy_of_a_story_reposted_fifty_times_is_matched():
    family = reposted(50)
    pages = [stranger(400 + i, 8) + FOOTER for i in range(3 * MAX_PASSAGE_OWNERS)]
    texts = [t for pair in zip(family, pages, strict=False) for t in pair] + pages[len(family) :]
    ids = arrive(texts, chunk=10)
    position = {article_id: n for n, article_id in enumerate(ids)}
    found = {
        (position[a], position[b]): kind
        for a, b, kind in Match.objects.values_list("a_id", "b_id", "kind")
    }
    mine = {texts.index(t) for t in family}
    assert {x for pair in found for x in pair} == mine  # every copy, and no page of the footer
    a, b = (np.array(side, np.int64) for side in zip(*found, strict=True))
    assert len({components(len(texts), a, b)[x] for x in mine}) == 1
    assert sum(kind == "partial" for kind in found.values()) >= 5
    # The engine finds these pairs too, with the same verdicts.
    detector = Detector()
    expected = {
        (d.a, d.b): d.kind for d in detector.duplicates([detector.features(t) for t in texts])
    }
    assert {pair: found.get(pair) for pair in expected} == expected


def test_a_new_copy_checked_finds_the_latest_copies_before_it():
    family = reposted(50)
    ids = arrive(family[:-6], chunk=400)
    caches.caches_clear()
    answer = services.text_check(text=family[-6])
    matched = {m["article"] for m in answer["matches"]}
    assert matched <= set(ids) and set(ids[-POPULAR_HOLDERS:]) <= matched


@pytest.mark.parametrize("read", [1, 3, 7])
def test_holders_read_a_few_at_a_time_give_what_one_read_of_them_all_gives(monkeypatch, read):
    # Copies of a story among quotes of one of its sentences (too short to be story holders):
    # the latest holders of a key are mostly not story holders, so reading a few at a time
    # takes several reads to find POPULAR_HOLDERS story holders.
    family = reposted(40)
    sentence = family[0].split("。")[3] + "。"
    quotes = [stranger(700 + i, 1) + sentence for i in range(3 * MAX_PASSAGE_OWNERS)]
    texts = [t for n, copy in enumerate(family) for t in [copy, *quotes[3 * n : 3 * n + 3]]]
    ids = arrive(texts, chunk=400)
    settings, version = index.processing_settings(Settings.load())
    stored = index.features_load(article_ids=ids[-30:], version=version)
    queries = sorted(stored.items())
    found = {}
    for size in (read, MAX_POPULAR_OWNERS):  # MAX_POPULAR_OWNERS: one read of them all
        caches.caches_clear()
        monkeypatch.setattr(candidates, "HOLDERS_READ", size)
        found[size] = index.candidates_find_many(
            queries=queries, version=version, plan=settings.plan(), k=settings.k_max
        )
    assert found[read] == found[MAX_POPULAR_OWNERS]
    assert sum(len(some) for some in found[read]) > 30 * POPULAR_HOLDERS // 2


def test_story_holders_confirmed_by_their_last_count_are_not_counted_again(monkeypatch):
    family = reposted(50)
    ids = arrive(family, chunk=400)
    settings, version = index.processing_settings(Settings.load())
    queries = sorted(index.features_load(article_ids=ids[-10:], version=version).items())
    counted = []
    own_counted = stories._own_counted
    monkeypatch.setattr(
        stories,
        "_own_counted",
        lambda ids, *rest: counted.append(len(ids)) or own_counted(ids, *rest),
    )
    caches.caches_clear()
    found = []
    for _ in range(2):  # cold, then with what the first look-up counted
        counted.append(0)
        found.append(
            index.candidates_find_many(
                queries=queries, version=version, plan=settings.plan(), k=settings.k_max
            )
        )
    cold, warm = sum(counted[: counted.index(0, 1)]), sum(counted[counted.index(0, 1) :])
    assert found[0] == found[1] and sum(map(len, found[0])) >= 5 * POPULAR_HOLDERS
    assert cold >= POPULAR_HOLDERS and warm == 0


def test_verification_counts_no_key_the_story_look_up_counted(monkeypatch):
    # The story holders a look-up reads are the candidates verified next: their keys' holders
    # were counted by the look-up, and verification (its StoredOwners) counts none again.
    from dedup.index import boilerplate

    family = reposted(40)
    ids = arrive(family[:-10], chunk=400)
    settings, version = index.processing_settings(Settings.load())
    queries = sorted(index.features_load(article_ids=ids[-10:], version=version).items())
    asked: list[set[int]] = []
    count = boilerplate.passage_owner_counts
    monkeypatch.setattr(
        boilerplate,
        "passage_owner_counts",
        lambda keys, version: asked[-1].update(keys) or count(keys, version),
    )
    caches.caches_clear()
    counted: dict[int, int] = {}
    asked.append(set())
    found = index.candidates_find_many(
        queries=queries, version=version, plan=settings.plan(), k=settings.k_max, counted=counted
    )
    looked_up = asked[-1]
    asked.append(set())
    verdicts = index.duplicates_find_many(
        queries=queries, candidates=found, version=version, detector=Detector(), counted=counted
    )
    assert len(looked_up) >= POPULAR_HOLDERS and not looked_up & asked[-1]
    # The same verdicts as verification counting every key itself.
    asked.append(set())
    again = index.duplicates_find_many(
        queries=queries, candidates=found, version=version, detector=Detector()
    )
    assert verdicts == again and sum(map(len, verdicts)) >= 10 * POPULAR_HOLDERS // 2
