"""A chunk claims its articles even while another transaction holds a key-share lock on them:
a match being written elsewhere that refers to the article (a twin's, processed at the same
moment by another worker) locks its row FOR KEY SHARE until that transaction commits, and a
claim that skipped such rows left them waiting for good (seen: 68 of a twin upload's 600)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from dedup import services
from dedup.models import Article
from tests.texts import stranger
from tests.workers import database_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_chunk_claims_articles_another_transaction_refers_to():
    ids = [a.pk for a in services.articles_ingest(rows=[{"body": stranger(i)} for i in range(3)])]
    with psycopg.connect(database_url(connection.settings_dict)) as other:
        # What inserting a match that refers to the article takes until it commits.
        other.execute("SELECT id FROM dedup_article WHERE id = %s FOR KEY SHARE", [ids[0]])
        services.articles_process(article_ids=ids)
        statuses = dict(Article.objects.filter(id__in=ids).values_list("id", "status"))
        other.rollback()
    assert statuses == dict.fromkeys(ids, "done")
