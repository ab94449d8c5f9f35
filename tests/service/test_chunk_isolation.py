"""One article never sinks its chunk (issue 32): an error in a step the chunk shares (the
look-up, the boilerplate of its queries) fails the article that raised it, its neighbours
are matched; the changelog case that did it runs through a real worker."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dedup import index, services
from dedup.engine.boilerplate import Boilerplate
from dedup.models import Article, Match, UploadBatch
from tests.engine.test_boilerplate_lines import RELEASES, SIGNED_TWICE
from tests.texts import ARTICLE, NEAR, OTHER, stranger


def _upload(name: str, texts: list[str]) -> UploadBatch:
    data = "\n".join(
        json.dumps({"id": f"{name}-{i}", "text": text}, ensure_ascii=False)
        for i, text in enumerate(texts)
    )
    return services.upload_create(file=SimpleUploadedFile(name, data.encode()), name=name)


def _statuses() -> dict[str, str]:
    return dict(Article.objects.values_list("external_id", "status"))


def test_a_changelog_signed_twice_is_judged_with_its_chunk(worker, wait_until):
    first = _upload("releases", RELEASES)
    wait_until(
        lambda: UploadBatch.objects.get(pk=first.pk).state == "done", message="releases done"
    )
    chunk = [ARTICLE, SIGNED_TWICE, NEAR, *(stranger(seed) for seed in range(5))]
    second = _upload("chunk", chunk)
    wait_until(
        lambda: UploadBatch.objects.get(pk=second.pk).state in ("done", "failed"),
        timeout=60,
        message="the chunk's upload finished",
    )
    statuses = _statuses()
    assert UploadBatch.objects.get(pk=second.pk).state == "done"
    assert statuses == dict.fromkeys(statuses, "done")  # the twice-signed one too
    found = {(m.a.external_id, m.b.external_id, m.kind) for m in Match.objects.all()}
    assert found == {("chunk-0", "chunk-2", "near")}
    # The engine on the same texts (what `duplicates` runs) finds the same.
    names = [f"releases-{i}" for i in range(len(RELEASES))] + [
        f"chunk-{i}" for i in range(len(chunk))
    ]
    detector = index.detector_for(index.settings_current())
    engine = detector.duplicates([detector.features(t) for t in [*RELEASES, *chunk]])
    assert {(names[d.a], names[d.b], d.kind) for d in engine} == found


@pytest.mark.django_db
def test_an_error_in_a_shared_step_fails_only_its_article(monkeypatch):
    ids = [
        a.pk
        for a in services.articles_ingest(
            rows=[{"title": str(i), "body": t} for i, t in enumerate((ARTICLE, OTHER, NEAR))]
        )
    ]
    real = Boilerplate.shingles
    length = index.detector_for(index.settings_current()).features(OTHER).length

    def failing(self, features):
        if features.length == length:
            raise ValueError("no boilerplate for this one")
        return real(self, features)

    monkeypatch.setattr(Boilerplate, "shingles", failing)
    services.articles_process(article_ids=ids)
    articles = {a.pk: a for a in Article.objects.all()}
    assert [articles[i].status for i in ids] == ["done", "failed", "done"]
    assert "no boilerplate for this one" in articles[ids[1]].status_message
    assert {(m.a_id, m.b_id, m.kind) for m in Match.objects.all()} == {(ids[0], ids[2], "near")}
