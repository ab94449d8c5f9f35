"""A site's page template through the worker's service (services.articles_process): pages
of one template, held by fewer than boilerplate needs, are no partial copies of each other,
as Detector.duplicates finds (dedup.engine.frames), while a copy of one of them is."""

from __future__ import annotations

import pytest

from dedup import services
from dedup.engine.verify import Detector
from dedup.models import Match
from tests.engine.test_frames import page
from tests.texts import stranger

pytestmark = pytest.mark.django_db


def arrive(texts: list[str]) -> list[int]:
    rows = [{"title": f"t{i}", "body": t} for i, t in enumerate(texts)]
    ids = [a.pk for a in services.articles_ingest(rows=rows)]
    services.articles_process(article_ids=ids)
    return ids


def test_pages_of_one_template_are_matched_as_the_engine_matches_them():
    body = stranger(10, 8)
    texts = [page(stranger(seed, 8)) for seed in range(2)]
    texts += [stranger(99, 8) + "\n\n" + page(body), page(body)]
    ids = arrive(texts)
    position = {article_id: n for n, article_id in enumerate(ids)}
    found = {
        (position[a], position[b]): kind
        for a, b, kind in Match.objects.values_list("a_id", "b_id", "kind")
    }
    assert found == {(2, 3): "partial"}
    detector = Detector()
    expected = {
        (d.a, d.b): d.kind for d in detector.duplicates([detector.features(t) for t in texts])
    }
    assert found == expected
