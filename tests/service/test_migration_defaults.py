"""Migration 0028 moves the partial share an admin never changed to the new default (0.45 ->
0.4, chosen on bench.trusted's tune split); a share an admin set stays."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("dedup", "0027_calibrated_on_two_tune_draws")]
AFTER = [("dedup", "0028_partial_facts_kept")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("was", "now"), [(0.45, 0.4), (0.6, 0.6)])
def test_the_default_share_moves_and_a_chosen_one_stays(was, now):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        Settings = executor.loader.project_state(BEFORE).apps.get_model("dedup", "Settings")
        Settings.objects.update_or_create(pk=1, defaults={"partial": was})
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        Settings = executor.loader.project_state(AFTER).apps.get_model("dedup", "Settings")
        assert Settings.objects.get(pk=1).partial == now
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
