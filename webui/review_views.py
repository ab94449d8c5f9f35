"""The review pages: queue, cluster, side by side, decisions and CSV exports."""

from __future__ import annotations

import csv
import itertools
import unicodedata

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from dedup import selectors, services
from dedup.models import Article, Decision, Settings, Verdict
from dedup.selectors import clusterings
from webui import review_context as ctx
from webui.access import editor_required
from webui.queue_page import listed_clusters
from webui.review_params import queue_params_parse


def _bad(request: HttpRequest, error: Exception) -> HttpResponse:
    return render(request, "webui/review/bad_request.html", {"message": str(error)}, status=400)


def _next(request: HttpRequest, field: str = "next") -> str:
    target = request.POST.get(field, "")
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return reverse("webui:queue")


@require_GET
@editor_required
def queue(request: HttpRequest) -> HttpResponse:
    """Show the clusters waiting for review, with the similarity bars and filters."""
    return _queue_render(request, "webui/review/queue.html")


@require_GET
@editor_required
def queue_partial(request: HttpRequest) -> HttpResponse:
    """Return the queue's results alone: what a slider move re-draws."""
    return _queue_render(request, "webui/review/_queue_results.html")


def _queue_render(request: HttpRequest, template: str) -> HttpResponse:
    try:
        context = ctx.queue_context(request.GET, Settings.load(), request.GET.get("page"))
    except ctx.ParamError as error:
        return _bad(request, error)
    return render(request, template, context)


@require_GET
@editor_required
def cluster(request: HttpRequest, article_id: int) -> HttpResponse:
    """Show the cluster holding an article at the current similarity bars."""
    article = get_object_or_404(Article.objects.defer("body"), id=article_id)
    try:
        threshold = ctx.threshold_parse(request.GET)
    except ctx.ParamError as error:
        return _bad(request, error)
    asked = ctx.PageAsked(request.GET.get("members_page"), request.GET.get("pairs_page"))
    context = ctx.cluster_context(article, threshold, Settings.load(), asked)
    return render(request, "webui/review/cluster.html", context)


@require_GET
@editor_required
def compare(request: HttpRequest, a: int, b: int) -> HttpResponse:
    """Show two articles side by side, differences highlighted word by word."""
    if a == b:
        raise Http404(_("Choose two different articles to compare."))
    both = Article.objects.in_bulk([a, b])  # one statement for the two
    if a not in both or b not in both:
        raise Http404("No Article matches the given query.")  # as get_object_or_404
    left, right = both[a], both[b]
    settings = Settings.load()
    try:
        threshold = ctx.threshold_parse(request.GET)
    except ctx.ParamError as error:
        return _bad(request, error)
    context = ctx.compare_context(left, right, settings)
    context["threshold"] = threshold
    following = ctx.next_pair(left.id, threshold, (left.id, right.id))
    if following is not None:
        context["next_url"] = reverse("webui:compare", args=following) + "?" + threshold.query()
    return render(request, "webui/review/compare.html", context)


def _pair(value: str) -> services.PairDecision:
    """Read "a:b:seen" (ids) as a pair decision."""
    try:
        a, b, seen = (int(part) for part in value.split(":"))
    except ValueError:
        raise services.DecisionInvalid(_("That pair could not be read; reload the page.")) from None
    return services.PairDecision(a, b, seen)


@require_POST
@editor_required
def decision_create(request: HttpRequest) -> HttpResponse:
    """Record one verdict on one pair ("pick" is verdict:a:b:seen)."""
    verdict, _sep, rest = request.POST.get("pick", "").partition(":")
    try:
        pair = _pair(rest)
        services.decision_record(
            a_id=pair.a,
            b_id=pair.b,
            verdict=verdict,
            user=request.user,
            seen=pair.seen,
            note=request.POST.get("note", "")[:500],
        )
    except (services.DecisionConflict, services.DecisionInvalid) as error:
        messages.error(request, str(error))
        if request.POST.get("here"):
            return redirect(_next(request, "here"))  # not on to the next pair: this one failed
    else:
        label = dict(Decision._meta.get_field("verdict").choices)[verdict]
        if verdict == Verdict.UNDONE:
            message = _("Undone: the decision on %(a)s ~ %(b)s; the pair waits again.")
        else:
            message = _("Recorded: %(a)s ~ %(b)s %(verdict)s.")
        messages.success(request, message % {"a": pair.a, "b": pair.b, "verdict": label})
        if verdict == Verdict.UNDONE and request.POST.get("here"):
            return redirect(_next(request, "here"))  # an undo stays on the pair it undid
    return redirect(_next(request))


@require_POST
@editor_required
def decisions_bulk(request: HttpRequest) -> HttpResponse:
    """Record one verdict on every selected pair."""
    values = request.POST.getlist("pair")
    if not values:
        messages.warning(request, _("Select at least one pair with its checkbox first."))
        return redirect(_next(request))
    try:
        pairs = [_pair(v) for v in values]
        done, problems = services.decisions_bulk(
            pairs=pairs, verdict=request.POST.get("verdict", ""), user=request.user
        )
    except services.DecisionInvalid as error:
        messages.error(request, str(error))
        return redirect(_next(request))
    if done:
        messages.success(request, _("Recorded %(n)s decisions.") % {"n": done})
    for problem in problems:
        messages.error(request, problem)
    return redirect(_next(request))


@require_POST
@editor_required
def decisions_cluster(request: HttpRequest) -> HttpResponse:
    """Record one verdict on every undecided pair of a cluster, shown or not."""
    try:
        article_id = int(request.POST.get("cluster", ""))
        threshold = ctx.threshold_parse(request.POST)
        pairs = [
            services.PairDecision(a, b, seen)
            for a, b, seen in ctx.cluster_waiting_pairs(article_id, threshold)
        ]
        done, problems = services.decisions_bulk(
            pairs=pairs, verdict=request.POST.get("verdict", ""), user=request.user
        )
    except (ValueError, services.DecisionInvalid) as error:
        message = str(error) if isinstance(error, services.DecisionInvalid) else ""
        messages.error(request, message or _("That cluster could not be read; reload the page."))
        return redirect(_next(request))
    if done:
        messages.success(request, _("Recorded %(n)s decisions.") % {"n": done})
    elif not problems:
        messages.info(request, _("No pair of this cluster was waiting."))
    for problem in problems:
        messages.error(request, problem)
    return redirect(_next(request))


@require_POST
@editor_required
def original_choose(request: HttpRequest) -> HttpResponse:
    """Make an article the original of its cluster."""
    try:
        article_id = int(request.POST.get("original", ""))
        seen = int(request.POST.get("seen_original", "0") or 0)
        threshold = ctx.threshold_parse(request.POST)
        members = ctx.cluster_member_ids(article_id, threshold)
        services.original_choose(
            article_id=article_id, member_ids=members, user=request.user, seen=seen
        )
    except ValueError:
        messages.error(request, _("That article could not be read; reload the page."))
    except (services.DecisionConflict, services.DecisionInvalid) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Article %(id)s is now the original.") % {"id": article_id})
    return redirect(_next(request))


class _Echo:
    def write(self, value: str) -> str:
        return value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
LEAD = 16  # characters looked at for the first one a spreadsheet reads


def csv_cell(value):
    """Return a cell a spreadsheet shows as text: a leading =, +, -, @, tab or CR would make
    it a formula (=HYPERLINK(...), +cmd|...), so such text gets a leading apostrophe. So do
    their full-width and small forms (＝, ＋, －, ＠, ﹦: one under NFKC) and any of them
    after a byte order mark, other invisible characters or spaces, which some spreadsheets
    skip."""
    if isinstance(value, str) and _formula_lead(value):
        return "'" + value
    return value


def _formula_lead(value: str) -> bool:
    if value.startswith(FORMULA_STARTS):
        return True
    for char in value[:LEAD]:
        if unicodedata.category(char) in ("Cf", "Zs") or char in "\n\x0b\x0c":
            continue  # U+FEFF, zero-width and other invisible characters, spaces
        return unicodedata.normalize("NFKC", char).startswith(FORMULA_STARTS)
    return False


def _csv_response(rows, name: str) -> StreamingHttpResponse:
    """Stream `rows` as CSV, after a UTF-8 byte-order mark: without it Excel reads the file
    in the machine's code page and garbles Chinese (other readers skip the mark)."""
    writer = csv.writer(_Echo())
    lines = (writer.writerow([csv_cell(v) for v in row]) for row in rows)
    response = StreamingHttpResponse(
        itertools.chain(["\ufeff"], lines), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# What an editor knows an article by, beside its internal id, in every export.
ARTICLE_FIELDS = ("external_id", "title", "source", "url")


def _decision_rows():
    head = ["decision", "article_a", "article_b", "verdict", "decided_by", "decided_at", "note"]
    yield [*head, *(f"{side}_{name}" for side in ("a", "b") for name in ARTICLE_FIELDS)]
    names = [f"{side}__{name}" for side in ("a", "b") for name in ARTICLE_FIELDS]
    rows = Decision.objects.order_by("id").values_list(
        "id", "a_id", "b_id", "verdict", "decided_by__username", "decided_at", "note", *names
    )
    for did, a, b, verdict, who, when, note, *fields in rows.iterator(chunk_size=2000):
        fields = ["" if value is None else value for value in fields]
        # In the site's time zone, as the pages show it (the offset says which).
        at = timezone.localtime(when).isoformat()
        yield [did, a, b or "", verdict, who or "", at, note, *fields]


@require_GET
@editor_required
def decisions_export(request: HttpRequest) -> StreamingHttpResponse:
    """Stream every decision as CSV, oldest first (the latest per pair counts)."""
    return _csv_response(_decision_rows(), "decisions.csv")


def _with_article_fields(rows: list[list]):
    """Yield rows (their second cell an article id) with the article's external id, title
    and URL appended: one query per batch of rows."""
    ids = {row[1] for row in rows}
    found = Article.objects.filter(id__in=ids).values_list("id", "external_id", "title", "url")
    fields = {pk: rest for pk, *rest in found}
    for row in rows:
        yield row + list(fields.get(row[1], ("", "", "")))


def _cluster_rows(found: clusterings.Clustering, numbers: list[int]):
    yield [
        "cluster", "article", "role", "size", "via", "kind", "distance", "similarity", "source",
        "external_id", "title", "url",
    ]  # fmt: skip
    table = found.table
    grouped, starts, ends = clusterings.cluster_groups(found)
    batch: list[list] = []
    for c in numbers:
        members, _edges = clusterings.member_paths(found, c, grouped[starts[c] : ends[c]])
        original = members[0].article_id
        for m in members:
            source = table.sources[table.source[m.node]] if table.sources else ""
            if m.edge is None:
                batch.append(
                    [original, m.article_id, "original", len(members), "", "", "", "", source]
                )
                continue
            d = int(table.distance[m.edge])
            batch.append(
                [
                    original,
                    m.article_id,
                    "member",
                    len(members),
                    m.via,
                    clusterings.KIND_NAMES[int(table.kind[m.edge])],
                    "" if d < 0 else d,
                    f"{float(table.similarity[m.edge]):.4f}",
                    source,
                ]
            )
        if len(batch) >= 2000:
            yield from _with_article_fields(batch)
            batch = []
    yield from _with_article_fields(batch)


@require_GET
@editor_required
def clusters_export(request: HttpRequest) -> HttpResponse:
    """Stream the clusters at the current similarity bars as CSV: one row per member, of the
    clusters the queue's filters select (source, length band, dates, search; a status when
    one is chosen, else every cluster), in the queue's order."""
    params = request.GET.copy()
    params.setdefault("status", "all")
    try:
        threshold = ctx.threshold_parse(params)
        qp = queue_params_parse(params)
    except ctx.ParamError as error:
        return _bad(request, error)
    found = selectors.match_table().clustering(threshold.bars)
    order, _hits, _limited = listed_clusters(found, qp)
    name = f"clusters-near{threshold.near:g}-partial{threshold.partial:g}.csv"
    return _csv_response(_cluster_rows(found, order.tolist()), name)
