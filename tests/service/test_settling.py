"""Issue 32: verdicts that do not depend on the order articles were processed in. One held-out
collection is processed in three orders (by id, shuffled, shuffled with the database lost
while a chunk was matched); taken out of order, the live pairs differ from `duplicates` on the
same texts; settled, they are exactly its pairs and kinds. And beat's check starts a settling
once a burst is over, not before, and not twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import Max
from django.test import override_settings

from bench import orders
from bench.corpora import build
from dedup import services, tasks
from dedup.models import Article, ArticleStatus, Match, RebuildJob, RebuildState
from dedup.selectors.settings import settings_current
from dedup.services.settling import SETTLING

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(monkeypatch):
    """A held-out news collection stored through the service, nothing processed yet."""
    for task in (tasks.articles_process, tasks.index_rebuild):
        monkeypatch.setattr(task, "delay", lambda **kwargs: None)
    texts = [doc.text for doc in build("news", seed=11, split="test", size=400)]
    rows = [{"body": text, "external_id": str(n)} for n, text in enumerate(texts)]
    return texts, [article.pk for article in services.articles_ingest(rows=rows)]


@pytest.mark.parametrize("order", orders.ORDERS)
def test_settled_pairs_are_those_of_duplicates_in_every_order(collection, order):
    texts, ids = collection
    orders.process_in_order(ids, order, seed=3)
    assert set(Article.objects.values_list("status", flat=True)) <= {"done", "exact"}
    cli = orders.cli_pairs(texts)
    live = orders.pairs(ids)
    if order != "by id":  # taken out of order, articles were judged on less than it holds
        assert live != cli
    orders.settle()
    assert orders.pairs(ids) == cli
    job = RebuildJob.objects.get()
    assert (job.state, job.done, job.total) == (RebuildState.DONE, len(ids), len(ids))


def test_a_settling_starts_once_a_burst_is_over(collection):
    _, ids = collection
    services.articles_process(article_ids=ids[:200])
    newest = Article.objects.aggregate(at=Max("processed_at"))["at"]
    with override_settings(DEDUP_SETTLE_QUIET_SECONDS=60, DEDUP_SETTLE_EVERY_SECONDS=3600):
        assert services.settle_if_due(now=newest + timedelta(seconds=90)) is None  # 200 wait
        services.articles_process(article_ids=ids[200:])
        newest = Article.objects.aggregate(at=Max("processed_at"))["at"]
        assert services.settle_if_due(now=newest + timedelta(seconds=30)) is None  # not quiet
        job = services.settle_if_due(now=newest + timedelta(seconds=61))
        assert job is not None and job.version == settings_current().active_version
        assert RebuildJob.objects.get().message == SETTLING
        assert services.settle_if_due(now=newest + timedelta(seconds=120)) is None  # running
        services.index_rebuild(job_id=job.pk)
        later = newest + timedelta(hours=2)
        assert services.settle_if_due(now=later) is None  # nothing processed since
        # Under a steady stream (an article always waiting), once the last is old enough.
        Article.objects.filter(pk=ids[-1]).update(status=ArticleStatus.PENDING, processed_at=None)
        services.articles_process(article_ids=ids[-1:])
        Article.objects.filter(pk=ids[0]).update(status=ArticleStatus.PENDING)
        now = Article.objects.aggregate(at=Max("processed_at"))["at"]
        assert services.settle_if_due(now=now + timedelta(seconds=120)) is None
        assert services.settle_if_due(now=now + timedelta(hours=1, seconds=1)) is not None
    assert Match.objects.exists()
