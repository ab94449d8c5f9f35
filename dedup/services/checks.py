"""Checking a text against the stored articles (text_check): nothing is stored."""

from __future__ import annotations

from django.conf import settings as django_settings

from dedup import index
from dedup.errors import ArticleInvalid, DedupError
from dedup.models import Article, MatchKind
from dedup.services.ingest import text_problem


def _text_valid(text: str) -> None:
    """Raise ArticleInvalid, naming the problem, for a text that cannot be checked."""
    if not isinstance(text, str) or not text.strip():
        raise ArticleInvalid('needs a non-empty "text"', field="text")
    if (problem := text_problem(text)) is not None:
        raise ArticleInvalid(f'"text" {problem}', field="text")
    size = len(text.encode("utf-8"))
    if size > (limit := django_settings.DEDUP_MAX_ARTICLE_BYTES):
        raise ArticleInvalid(
            f'"text" is {size / 2**20:,.1f} MB, over the limit of {limit / 2**20:g} MB per '
            "article (DEDUP_MAX_ARTICLE_MB); check a part of it",
            field="text",
        )


def text_check(*, text: str, k: int | None = None) -> dict:
    """Return a text's fingerprint and the stored articles it duplicates; store nothing."""
    _text_valid(text)
    current = index.settings_current()
    settings = current.active()  # answers come from the active version until a rebuild ends
    version = current.active_version
    if k is None:
        k = settings.k_max
    if not 0 <= k <= settings.k_max:
        raise DedupError(f"k must be from 0 to {settings.k_max} (the index's k_max), not {k}")
    detector = index.detector_for(settings)
    fingerprint, features = detector.fingerprint_and_features(text)
    candidates = index.candidates_find(
        features=features,
        version=version,
        plan=settings.plan(),
        k=k,
        since=index.retention_start(settings),
    )
    found = index.duplicates_find(
        article_id=None,
        features=features,
        candidates=candidates,
        version=version,
        detector=detector,
    )
    return {
        "fingerprint": fingerprint.hex,
        "status": str(fingerprint.status),
        "tokens": fingerprint.tokens,
        "version": version,
        "matches": _matches_described(found, text),
    }


def _matches_described(found: list, text: str) -> list[dict]:
    """Return the API's description of each duplicate found, most similar first (an article
    with exactly this text is an exact copy)."""
    names = {
        pk: (title, external_id)
        for pk, title, external_id in Article.objects.filter(
            id__in=[d.b for d in found]
        ).values_list("id", "title", "external_id")
    }
    exact = set(
        Article.objects.filter(content_hash=Article.hash_body(text)).values_list("id", flat=True)
    )
    matches = [
        {
            "article": d.b,
            "external_id": names.get(d.b, ("", ""))[1],
            "title": names.get(d.b, ("", ""))[0],
            "kind": MatchKind.EXACT if d.b in exact else d.kind,
            "distance": d.distance,
            "similarity": 1.0 if d.b in exact else d.similarity,
            "shared_chars": 0 if d.b in exact else d.shared_chars,
            "shared_passages": [list(p) for p in d.shared_passages],
        }
        for d in found
    ]
    matches.sort(key=lambda m: (-m["similarity"], m["article"]))
    return matches
