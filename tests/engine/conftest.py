"""Fixtures the engine's fingerprint tests share: a Fingerprinter and real Chinese articles."""

import gzip
import json
from importlib import resources

import pytest

from dedup.engine import Fingerprinter


def _long_texts() -> list[str]:
    """Return real Chinese articles of at least 500 characters, in a fixed order."""
    try:
        from bench.corpus import load_peoples_daily

        texts = load_peoples_daily()
    except ImportError:
        path = resources.files("insuranceqa_data") / "answers.json.gz"
        with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
            answers = json.load(f)
        texts = [answers[key]["zh"] for key in sorted(answers, key=int)]
    return [text for text in texts if len(text) >= 500]


@pytest.fixture(scope="module")
def fp() -> Fingerprinter:
    return Fingerprinter()


@pytest.fixture(scope="module")
def articles() -> list[str]:
    """Forty long, unrelated real articles spread over the corpus."""
    texts = _long_texts()
    assert len(texts) >= 40
    return texts[:: len(texts) // 40][:40]


@pytest.fixture(scope="module")
def paragraphs(articles) -> list[str]:
    """Real one-paragraph texts of several sentences."""
    found = [p for a in articles for p in a.split("\n") if p.count("。") >= 4]
    assert len(found) >= 5
    return found[:8]
