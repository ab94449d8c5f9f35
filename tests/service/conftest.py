"""Service tests: the worker fixtures come from tests/workers.py (a plugin of tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def _index_caches_cleared(index_caches_cleared):
    """Each test starts with no cached features or keys: a test database hands out ids again."""
