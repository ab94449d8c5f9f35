"""Upgrading to a release that stores rows another way: the index version names it, and the
rows of the old version are rebuilt by themselves."""

from __future__ import annotations

from dedup.engine import verify
from dedup.models import Settings


def test_index_version_names_the_features_format(monkeypatch):
    settings = Settings()
    now = settings.index_version
    assert now.endswith(f"/f{verify.FEATURES_FORMAT}")
    monkeypatch.setattr(verify, "FEATURES_FORMAT", verify.FEATURES_FORMAT + 1)
    assert settings.index_version != now
    assert settings.index_version.endswith(f"/f{verify.FEATURES_FORMAT}")
