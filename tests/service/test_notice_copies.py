"""A notice copied into a page, through the worker's service (services.articles_process): it
is found by its fact keys (dedup.engine.facts), stored as passage-key rows, as
Detector.duplicates finds it, while its siblings (the template, other facts) are not."""

from __future__ import annotations

import pytest

from dedup import services
from dedup.engine.verify import Detector
from dedup.models import Match, PassageKey
from tests.engine.test_fact_keys import siblings_and_copy

pytestmark = pytest.mark.django_db


def test_a_notice_in_a_page_is_matched_as_the_engine_matches_it():
    texts, original = siblings_and_copy()
    rows = [{"title": f"t{i}", "body": t} for i, t in enumerate(texts)]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    position = {article_id: n for n, article_id in enumerate(ids)}
    found = {
        (position[a], position[b]): kind
        for a, b, kind in Match.objects.values_list("a_id", "b_id", "kind")
    }
    assert found[(original, len(texts) - 1)] == "partial"
    detector = Detector()
    features = [detector.features(t) for t in texts]
    expected = {(d.a, d.b): d.kind for d in detector.duplicates(features)}
    assert found == expected
    # Each article's passage keys, then its fact keys.
    stored = PassageKey.objects.filter(article_id=ids[original]).count()
    assert stored == len(features[original].passage_keys) + len(features[original].fact_keys)


def test_notices_of_one_street_on_other_days_are_not_matched_as_they_arrive():
    # One issuer's notices for one street, a day apart each, arriving one at a time (the
    # boilerplate learned as they come), with a repost and a page holding one of them.
    from tests.engine.test_facts_stated_otherwise import power_notice

    notices = [power_notice(day, day - 2) for day in (3, 10, 17, 24)]
    reposted = notices[2].replace("6月15日", "6月16日") + "\n\n转自：和平社区居委会"
    texts = [*notices, reposted]
    ids = []
    for i, text in enumerate(texts):
        ids += [a.pk for a in services.articles_ingest(rows=[{"title": f"t{i}", "body": text}])]
        services.articles_process(article_ids=ids[-1:])
    position = {article_id: n for n, article_id in enumerate(ids)}
    found = {
        (position[a], position[b]): kind
        for a, b, kind in Match.objects.values_list("a_id", "b_id", "kind")
    }
    assert found == {(2, 4): "near"}
