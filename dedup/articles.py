"""Reads for editors' look-ups: one article with its matches and decisions, the search over
every article (matched or not), and an upload's articles with what was found for them.

Search is `icontains` on title, text and URL, served by trigram GIN indexes on those
expressions (migration 0016; the text's, a range of articles at a time: dedup.textindex). An
exact external id, URL or article number is looked up by itself and comes first.

Newest first, a page at a time: PostgreSQL walks the primary key backwards for a common word
and combines the trigram indexes for a rare one (about 20-30 ms either way at 100,000
articles here). The newest articles, past the text index's last range, have their text read
through the primary key (at most about DEDUP_TEXT_INDEX_ROWS of them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Greatest, StrIndex, Substr, Upper
from django.utils import timezone

from dedup.engine.hamming import to_unsigned
from dedup.models import (
    Article,
    Decision,
    Fingerprint,
    Match,
    Settings,
    UploadBatch,
)
from dedup.textindex import text_has

PER_PAGE = 25
UPLOAD_PER_PAGE = 50
MATCHES_SHOWN = 200  # an article in a hot cluster can have thousands
HISTORY_SHOWN = 200
SNIPPET = 180  # characters of text shown around a hit
SNIPPET_BEFORE = 50


def web_url(url: str) -> str:
    """Return an article's address when it is a web page (never javascript: and the like)."""
    return url if url.lower().startswith(("http://", "https://")) else ""


def fingerprint_hex(value: int | None) -> str:
    """Return a stored (signed) fingerprint as 16 hex digits, or "" when there is none."""
    return "" if value is None else f"{to_unsigned(value):016x}"


def text_marked(text: str, q: str) -> list[tuple[str, bool]]:
    """Split text into (piece, is_hit) around each occurrence of q, in any letter case; the
    template escapes every piece."""
    if not q:
        return [(text, False)]
    folded, needle = text.upper(), q.upper()
    if len(folded) != len(text):  # a letter whose upper case is longer (ß): no marks
        return [(text, False)]
    pieces, at = [], 0
    while (hit := folded.find(needle, at)) >= 0:
        if hit > at:
            pieces.append((text[at:hit], False))
        pieces.append((text[hit : hit + len(q)], True))
        at = hit + len(q)
    if at < len(text):
        pieces.append((text[at:], False))
    return pieces


# --- search ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchParams:
    """What an editor looks for: words or an id, and filters; all optional."""

    q: str = ""
    source: str = ""
    upload: int | None = None
    status: str = ""
    date_from: dt.date | None = None
    date_to: dt.date | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.source or self.upload or self.status or self.date_from or self.date_to)


def _filters(params: SearchParams) -> Q:
    where = Q()
    if params.source:
        where &= Q(source=params.source)
    if params.upload:
        where &= Q(upload_id=params.upload)
    if params.status:
        where &= Q(status=params.status)
    zone = timezone.get_current_timezone()
    if params.date_from:
        where &= Q(dated_at__gte=dt.datetime.combine(params.date_from, dt.time(), zone))
    if params.date_to:
        end = params.date_to + dt.timedelta(days=1)  # the last day is included
        where &= Q(dated_at__lt=dt.datetime.combine(end, dt.time(), zone))
    return where


def _exact(q: str) -> Q | None:
    """Return the look-up of what q names exactly (an external id, URL or article number)."""
    if not q:
        return None
    where = Q(external_id=q)
    number = q.removeprefix("#")
    if number.isascii() and number.isdigit() and len(number) < 19:
        where |= Q(id=int(number))
    if q.lower().startswith(("http://", "https://")):
        where |= Q(url=q)
    return where


def _listed(articles: QuerySet, q: str) -> QuerySet:
    """Return the articles without their text but with a snippet around q (or the start)."""
    if q:
        start = Greatest(StrIndex(Upper("body"), Upper(Value(q))) - SNIPPET_BEFORE, Value(1))
    else:
        start = Value(1)
    return (
        articles.defer("body")
        .select_related("upload")
        .only(
            "id", "title", "source", "url", "external_id", "status", "dated_at", "length",
            "upload__id", "upload__name",
        )
        .annotate(snippet=Substr("body", start, SNIPPET), snippet_from=start)
    )  # fmt: skip


def article_search(*, params: SearchParams, page: int = 1) -> dict:
    """Return one page of articles matching the search, newest first, with the exact hits
    (external id, URL, number) first on page 1; `has_next` instead of a total, which would
    count every hit."""
    where = _filters(params)
    exact_q = _exact(params.q)
    exact: list[Article] = []
    if exact_q is not None:
        exact = list(_listed(Article.objects.filter(exact_q & where), params.q).order_by("id"))
    hits = Article.objects.filter(where)
    if params.q:
        q = params.q
        hits = hits.filter(Q(title__icontains=q) | Q(url__icontains=q) | text_has(q))
    if exact:
        hits = hits.exclude(id__in=[a.id for a in exact])
    page = max(1, page)
    start = (page - 1) * PER_PAGE
    rows = list(_listed(hits, params.q).order_by("-id")[start : start + PER_PAGE + 1])
    found = rows[:PER_PAGE]
    for article in (*exact, *found):
        article.snippet_marked = text_marked(_snippet(article), params.q)
    return {
        "exact": exact if page == 1 else [],
        "rows": found,
        "page": page,
        "has_next": len(rows) > PER_PAGE,
        "has_previous": page > 1,
        "first_number": start + 1,
    }


def _snippet(article: Article) -> str:
    text = " ".join((article.snippet or "").split())
    before = "…" if article.snippet_from > 1 else ""
    after = "…" if article.snippet_from - 1 + SNIPPET < article.length else ""
    return before + text + after


SOURCES_SHOWN = 500


def search_sources() -> list[str]:
    """Return the sources articles name, for the filter (at most SOURCES_SHOWN)."""
    # DISTINCT reads every entry of the source index; this hops from one source to the next.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE s(source) AS (
                (SELECT source FROM dedup_article WHERE source > '' ORDER BY source LIMIT 1)
                UNION ALL
                SELECT (SELECT a.source FROM dedup_article a WHERE a.source > s.source
                        ORDER BY a.source LIMIT 1)
                FROM s WHERE s.source IS NOT NULL
            )
            SELECT source FROM s WHERE source IS NOT NULL LIMIT %s
            """,
            [SOURCES_SHOWN],
        )
        return [name for (name,) in cursor.fetchall()]


# --- one article -----------------------------------------------------------------------------


def _latest_by_pair(decisions: list[Decision]) -> dict[tuple[int, int], Decision]:
    latest: dict[tuple[int, int], Decision] = {}
    for decision in sorted(decisions, key=lambda d: d.id):
        if decision.b_id is not None:
            latest[(decision.a_id, decision.b_id)] = decision
    return latest


def article_detail(*, article_id: int) -> dict:
    """Return an article, its fingerprint, its matches (the most similar first, each with the
    latest decision on the pair) and the decisions touching it, the newest first."""
    article = Article.objects.select_related("upload", "exact_of").get(id=article_id)
    version = Settings.load().active_version
    fingerprint = (
        Fingerprint.objects.filter(article_id=article_id, version=version)
        .only("value", "status", "tokens", "version")
        .first()
    )
    touching = Q(a_id=article_id) | Q(b_id=article_id)
    matches = list(
        Match.objects.filter(touching)
        .select_related("a", "b")
        .defer("a__body", "b__body", "shared_passages")
        .order_by("-similarity", "id")[: MATCHES_SHOWN + 1]
    )
    history = list(
        Decision.objects.filter(touching)
        .select_related("decided_by")
        .order_by("-id")[: HISTORY_SHOWN + 1]
    )
    latest = _latest_by_pair(history)
    rows = []
    for match in matches[:MATCHES_SHOWN]:
        other = match.b if match.a_id == article_id else match.a
        rows.append(
            {
                "match": match,
                "other": other,
                "decision": latest.get((match.a_id, match.b_id)),
            }
        )
    return {
        "article": article,
        "url": web_url(article.url),
        "fingerprint": fingerprint,
        "fingerprint_hex": fingerprint_hex(fingerprint.value if fingerprint else None),
        "matches": rows,
        "matches_total": len(matches)
        if len(matches) <= MATCHES_SHOWN
        else Match.objects.filter(touching).count(),
        "history": history[:HISTORY_SHOWN],
        "history_more": len(history) > HISTORY_SHOWN,
        "exact_copies": Article.objects.filter(exact_of_id=article_id).count(),
    }


# --- one upload ------------------------------------------------------------------------------


# An upload's row lists its copies as the article page does, the closest kind first.
KIND_ORDER = {"exact": 0, "near": 1, "partial": 2}
COPIES_SHOWN = 3


def upload_articles(*, upload_id: int, page: int = 1, found: str = "") -> dict:
    """Return one page of an upload's articles in file order, each with what was found for
    it: its copies as the article page lists them (kind, similarity, the other article; near
    copies before partial ones, whose similarity is a containment: the two are not ranked
    against each other), how many, and the article it exactly copies.

    `found` narrows to "matched" (an exact copy or a match) or "new" (neither)."""
    batch = UploadBatch.objects.get(id=upload_id)
    articles = Article.objects.filter(upload_id=upload_id)
    if found in ("matched", "new"):
        has_match = Q(matches_as_a__isnull=False) | Q(matches_as_b__isnull=False)
        matched = articles.filter(has_match | Q(exact_of__isnull=False)).values("id")
        if found == "matched":
            articles = articles.filter(id__in=matched)
        else:
            articles = articles.exclude(id__in=matched)
    page = max(1, page)
    start = (page - 1) * UPLOAD_PER_PAGE
    rows = list(_listed(articles, "").order_by("row", "id")[start : start + UPLOAD_PER_PAGE + 1])
    shown = rows[:UPLOAD_PER_PAGE]
    ids = [a.id for a in shown]
    copies: dict[int, list[dict]] = {}
    counts: dict[int, int] = {}
    near = Match.objects.filter(Q(a_id__in=ids) | Q(b_id__in=ids)).defer("shared_passages")
    wanted = set(ids)
    found_matches = sorted(near, key=lambda m: (KIND_ORDER.get(m.kind, 9), -m.similarity, m.id))
    for match in found_matches:
        for mine, other in ((match.a_id, match.b_id), (match.b_id, match.a_id)):
            if mine in wanted:
                counts[mine] = counts.get(mine, 0) + 1
                if len(copies.setdefault(mine, [])) < COPIES_SHOWN:
                    copies[mine].append({"match": match, "other": other})
    exact_of = dict(
        Article.objects.filter(id__in=ids, exact_of__isnull=False).values_list("id", "exact_of")
    )
    for article in shown:
        article.snippet_marked = text_marked(_snippet(article), "")
        article.match_count = counts.get(article.id, 0)
        article.copies = copies.get(article.id, [])
        article.copies_more = article.match_count - len(article.copies)
        article.exact_of_number = exact_of.get(article.id)
    return {
        "upload": batch,
        "rows": shown,
        "page": page,
        "has_next": len(rows) > UPLOAD_PER_PAGE,
        "has_previous": page > 1,
        "found": found,
    }
