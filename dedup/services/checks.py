"""Checking a text against the stored articles (text_check): nothing is stored.

A check of the largest article allowed takes a second or more of a web worker: no more than
DEDUP_CHECK_CONCURRENCY checks of texts over DEDUP_CHECK_LONG_CHARS run at once over all web
processes (each holds one of that many PostgreSQL advisory locks for its transaction; one
that finds none free is refused at once, ChecksBusy), and every check's queries stop after
DEDUP_CHECK_SECONDS, so that checks never take every worker from the pages. Checks of
article-sized texts (tens of milliseconds) are not counted: a client checking each article
it is about to publish is never refused for another's long text."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import OperationalError, connection, transaction
from psycopg.errors import QueryCanceled

from dedup import index
from dedup.errors import ArticleInvalid, ChecksBusy, DedupError
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


CHECK_SLOTS = 0x6465647563686B00  # the advisory lock keys of the slots: this, +1, +2...


def _check_slot_take(text: str) -> None:
    """Bound this transaction's queries' time; for a long text, take a free slot first, or
    raise ChecksBusy."""
    slots = max(1, django_settings.DEDUP_CHECK_CONCURRENCY)
    with connection.cursor() as cursor:
        if len(text) > django_settings.DEDUP_CHECK_LONG_CHARS and not _slot_taken(cursor, slots):
            raise ChecksBusy(
                f"{slots} texts of over {django_settings.DEDUP_CHECK_LONG_CHARS:,} characters "
                "are being checked already (DEDUP_CHECK_CONCURRENCY); try again in a second"
            )
        seconds = max(1, django_settings.DEDUP_CHECK_SECONDS)
        cursor.execute(f"SET LOCAL statement_timeout = {seconds * 1000}")


def _slot_taken(cursor, slots: int) -> bool:
    """Take one of the slots' advisory locks for this transaction; return whether one was free."""
    for slot in range(slots):
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [CHECK_SLOTS + slot])
        if cursor.fetchone()[0]:
            return True
    return False


def text_check(*, text: str, k: int | None = None) -> dict:
    """Return a text's fingerprint and the stored articles it duplicates; store nothing.
    Raise ChecksBusy when the text is long and DEDUP_CHECK_CONCURRENCY checks of long texts
    are running already."""
    _text_valid(text)
    try:
        with transaction.atomic():
            _check_slot_take(text)
            return _text_checked(text, k)
    except OperationalError as error:
        if not isinstance(error.__cause__, QueryCanceled):
            raise
        seconds = django_settings.DEDUP_CHECK_SECONDS
        raise ChecksBusy(
            f"the check took over {seconds} s (DEDUP_CHECK_SECONDS); try again in a minute"
        ) from None


def _text_checked(text: str, k: int | None) -> dict:
    current = index.settings_current()
    settings = current.active()  # answers come from the active version until a rebuild ends
    version = current.active_version
    if k is None:
        k = settings.k_max
    if not 0 <= k <= settings.k_max:
        raise DedupError(f"k must be from 0 to {settings.k_max} (the index's k_max), not {k}")
    detector = index.detector_for(settings)
    fingerprint, features = detector.fingerprint_and_features(text)
    counted: dict[int, int] = {}  # passage keys' holders, read once for both steps
    candidates = index.candidates_find(
        features=features,
        version=version,
        plan=settings.plan(),
        k=k,
        since=index.retention_start(settings),
        counted=counted,
    )
    found = index.duplicates_find(
        article_id=None,
        features=features,
        candidates=candidates,
        version=version,
        detector=detector,
        counted=counted,
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
    if not found:
        return []
    # The duplicates' names and whether each has exactly this text, in one statement.
    digest = Article.hash_body(text)
    rows = list(
        Article.objects.filter(id__in=[d.b for d in found]).values_list(
            "id", "title", "external_id", "content_hash"
        )
    )
    names = {pk: (title, external_id) for pk, title, external_id, _ in rows}
    exact = {pk for pk, _, _, content_hash in rows if content_hash == digest}
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
