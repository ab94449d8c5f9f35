"""Editors' look-ups: the search over every article, one article's page, one upload's page."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dedup import articles, selectors
from dedup.models import Article, ArticleStatus, UploadBatch
from webui import review_context as ctx
from webui import story_links
from webui.access import editor_required


def _page_number(params) -> int:
    raw = params.get("page", "1")
    return int(raw) if raw.isdigit() and 0 < int(raw) < 100_000 else 1


def search_params_parse(params) -> articles.SearchParams:
    """Read the search's words and filters; unknown choices are dropped."""
    status = params.get("status", "")
    upload = params.get("upload", "").strip()
    return articles.SearchParams(
        q=" ".join(params.get("q", "").split())[:200],
        source=params.get("source", "")[:200],
        upload=int(upload) if upload.isdigit() and len(upload) < 12 else None,
        status=status if status in ArticleStatus.values else "",
        date_from=ctx.day_parse(params.get("from", "").strip(), "from"),
        date_to=ctx.day_parse(params.get("to", "").strip(), "to"),
    )


@require_GET
@editor_required
def article_search(request: HttpRequest) -> HttpResponse:
    """Find articles by external id, number, URL, title or text, with filters and pages; the
    only hit of an exact look-up opens its article."""
    try:
        params = search_params_parse(request.GET)
    except ctx.ParamError as error:
        return render(request, "webui/review/bad_request.html", {"message": str(error)}, status=400)
    found = articles.article_search(params=params, page=_page_number(request.GET))
    if len(found["exact"]) == 1 and not found["rows"] and found["page"] == 1:
        return redirect("webui:article", article_id=found["exact"][0].id)
    query = {k: v for k, v in request.GET.items() if k != "page" and v != ""}
    return render(
        request,
        "webui/articles/search.html",
        {
            **found,
            "params": params,
            "query": urlencode(query),
            "sources": articles.search_sources(),
            "statuses": ArticleStatus.choices,
            "searched": bool(params.q or params.filtered),
        },
    )


@require_GET
@editor_required
def article(request: HttpRequest, article_id: int) -> HttpResponse:
    """Show one article: its fields, fingerprint, text, matches and decisions."""
    try:
        context = articles.article_detail(article_id=article_id)
    except Article.DoesNotExist:
        raise Http404(_("There is no article %(id)s.") % {"id": article_id}) from None
    story = story_links.article_story(article_id)
    for row in context["matches"]:
        row["story"] = story["relations"].get(row["other"].id)
    context["story_url"] = story["story_url"]
    return render(request, "webui/articles/article.html", context)


@require_GET
@editor_required
def upload_detail(request: HttpRequest, upload_id: int) -> HttpResponse:
    """Show one upload: its progress and counts, and its articles with what was found."""
    found = request.GET.get("found", "")
    try:
        context = articles.upload_articles(
            upload_id=upload_id, page=_page_number(request.GET), found=found
        )
    except UploadBatch.DoesNotExist:
        raise Http404(_("There is no such upload.")) from None
    context["status"] = selectors.upload_status(upload_id=upload_id)
    context["query"] = urlencode({"found": context["found"]} if context["found"] else {})
    return render(request, "webui/articles/upload.html", context)
