"""One verdict everywhere: the review queue at its defaults, the API's matches and
`python -m dedup duplicates` name the same pairs, of the same kinds, for the same texts.

A mixed corpus goes through the upload API to a real Celery worker (PostgreSQL, Redis): near
copies, one whose fingerprint landed beyond k_max (a place name replaced everywhere), a short
text's copy verified at the short-text bar, an exact copy, a partial copy inside a bigger
page, and strangers. The queue's pairs are read from its pages as an editor sees them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from dedup import selectors
from dedup.models import ApiToken, Article, Match, MatchKind, Settings
from tests import roles
from tests.texts import ARTICLE, EXACT, NEAR, OTHER, stranger
from tests.workers import ROOT

CITY = (  # about 560 characters; 杭州 fourteen times
    "本报杭州5月20日电 记者从杭州市政府获悉，杭州今年将投入专项资金改造老旧小区，"
    "计划年内完成两百个小区的加装电梯和管网更新工程。杭州市住房保障局负责人介绍，"
    "改造工作坚持居民自愿、政府引导的原则，每个小区的方案都要经过居民议事会讨论通过。"
    "去年杭州已经完成一百二十个小区的改造，惠及居民四万多户，群众满意度超过九成。"
    "今年的改造重点放在上城区和拱墅区，这两个区的老旧住宅比例最高，基础设施最为薄弱。"
    "除了加装电梯，杭州还将同步推进雨污分流、停车位增设和社区养老服务中心建设。"
    "施工期间，各小区将设立临时公告栏，每周公布工程进度和资金使用情况，接受居民监督。"
    "专家认为，杭州的做法把城市更新和民生改善结合起来，为其他城市提供了可以借鉴的经验。"
    "据了解，杭州市还出台了配套政策，对改造中涉及的审批手续实行并联办理，缩短工期。"
    "市民王女士说，她家住在六楼，过去上下楼很不方便，现在终于盼来了电梯，心里特别高兴。"
    "也有居民提出，低层住户并不需要电梯，费用分摊应当更加合理，社区正在逐户上门听取意见。"
    "按照计划，杭州各城区将在六月底前公布第一批改造小区名单，七月起陆续开工，年底前全部完工。"
    "住建部门提醒，改造期间请居民注意施工安全，遇到问题可以拨打杭州市民热线反映。"
    "下一步，杭州将建立改造项目的长效管理机制，确保小区改得好、管得住、居民住得舒心。"
)
POST = (  # under 140 characters: near from a similarity of Settings.near_short
    "今晚八点，市体育中心将举行新年音乐会。门票已经全部售完，主办方表示不会加场。"
    "没有买到票的市民可以收看电视直播，也可以在网上观看。演出时长约两个小时。"
)
POST_EDITED = POST.replace("门票已经全部售完，主办方表示不会加场。", "站票还有。").replace(
    "没有买到票的市民可以收看电视直播", "届时周边道路将实行交通管制"
)  # similarity 0.37: between near_short (0.3) and near (0.4)
PAGE = "\n".join(
    ["首页 > 城市频道 > 民生", CITY, "相关阅读：", stranger(7), stranger(8), "网友评论：支持！"]
)
ROWS = [
    {"id": "news", "title": "新年讲话", "text": ARTICLE},
    {"id": "news-near", "title": "新年讲话（转载）", "text": NEAR},
    {"id": "farm", "title": "粮食丰收", "text": OTHER},
    {"id": "city", "title": "杭州改造老旧小区", "text": CITY},
    {"id": "post", "title": "音乐会", "text": POST},
    {"id": "stranger-0", "text": stranger(0)},
    {"id": "farm-cut", "text": OTHER.replace("农村改革不断深化，", "")},
    {"id": "news-exact", "title": "新年讲话（原样）", "text": EXACT},
    {"id": "city-renamed", "title": "苏州改造老旧小区", "text": CITY.replace("杭州", "苏州")},
    {"id": "post-edited", "title": "音乐会（改）", "text": POST_EDITED},
    {"id": "page", "title": "城市频道", "text": PAGE},
    {"id": "stranger-1", "text": stranger(1)},
]

Pairs = dict[frozenset, str]  # {frozenset({external id, external id}): kind}


@pytest.fixture
def editor(transactional_db) -> User:
    user = User.objects.create_user("editor", password="pw")
    user.groups.add(roles.group("editor"))
    return user


@pytest.fixture
def web(editor) -> Client:
    client = Client()
    client.force_login(editor)
    return client


@pytest.fixture
def api(editor) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(editor)[1]}")


@pytest.fixture
def corpus(tmp_path, api, worker, wait_until) -> dict:
    """Upload ROWS through the API and wait until the worker matched them; return the file's
    path and {article pk: row id}."""
    selectors.table_forget()  # a table cached by an earlier test's database
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), "utf-8")
    with path.open("rb") as file:
        response = api.post("/api/uploads", {"file": file})
    assert response.status_code == 202, response.content
    status = f"/api/uploads/{response.json()['upload']}"

    def finished():
        answer = api.get(status).json()
        return answer["state"] == "done" and answer["processed"] == len(ROWS)

    wait_until(finished, timeout=60, message="the upload processed")
    yield {"path": path, "ids": dict(Article.objects.values_list("id", "external_id"))}
    selectors.table_forget()


def queue_pairs(web: Client, ids: dict, *, decided: bool = False) -> Pairs:
    """Return the pairs the review queue shows at its default bars: the clusters it lists, and
    the matches each cluster's page shows but for those it marks rejected. Before any decision
    the queue counts exactly those (`decided`: after one, an article that joined the story
    only through a rejected pair keeps its row on the cluster's page, marked, and its other
    pairs there, while the queue's counts follow the story without it)."""
    originals, page = [], 1
    while True:
        context = web.get("/", {"status": "all", "page": page}).context
        originals += [row["original_id"] for row in context["rows"]]
        if not context["page"].has_next():
            break
        page += 1
    found = {}
    for original in originals:
        response = web.get(f"/clusters/{original}/")
        context = response.context
        assert (context["total"], context["other_total"]) == (
            len(context["rows"]),
            len(context["other_edges"]),
        )  # nothing left out for size
        with translation.override(response.wsgi_request.LANGUAGE_CODE):
            kinds = {str(label): value for value, label in MatchKind.choices}
        edges = [row["edge"] for row in context["rows"] if row["edge"]] + context["other_edges"]
        for edge in edges:
            if edge["decision"] and edge["decision"].verdict == "not_duplicate":
                continue  # a cluster's page keeps a rejected pair in its row, marked
            found[frozenset((ids[edge["a"]], ids[edge["b"]]))] = kinds[edge["kind"]]
    counts = web.get("/", {"status": "all"}).context["counts"]
    if decided:
        assert counts["matches"] <= len(found)  # every match the queue counts is on a page
    else:
        assert counts["matches"] == len(found)
    return found


def api_pairs(api: Client, ids: dict) -> Pairs:
    """Return the pairs GET /api/articles/<id>/matches names, over every article."""
    found = {}
    for pk, external in ids.items():
        response = api.get(f"/api/articles/{pk}/matches")
        assert response.status_code == 200
        for match in response.json()["matches"]:
            found[frozenset((external, ids[match["article"]]))] = match["kind"]
    return found


def cli_pairs(path) -> Pairs:
    """Return the pairs `python -m dedup duplicates` reports for the same file."""
    done = subprocess.run(
        [sys.executable, "-m", "dedup", "duplicates", "--input", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {frozenset((line["a"], line["b"])): line["kind"] for line in lines}


def test_queue_api_and_command_line_agree_on_every_pair(corpus, web, api):
    ids = corpus["ids"]
    settings = Settings.load()
    matches = Match.objects.filter(version=settings.active_version)
    assert matches.count() == Match.objects.count()
    stored = {frozenset((ids[m.a_id], ids[m.b_id])): m for m in matches}
    # The corpus holds what the test is about: a verified copy beyond the fingerprint's reach,
    # a short text's copy under the usual near bar, an exact copy and a partial copy.
    far = stored[frozenset(("city", "city-renamed"))]
    assert far.kind == "near" and far.distance > settings.k_max and far.similarity > 0.8
    short = stored[frozenset(("post", "post-edited"))]
    assert short.kind == "near" and settings.near_short <= short.similarity < settings.near
    assert stored[frozenset(("news", "news-exact"))].kind == "exact"
    assert stored[frozenset(("city", "page"))].kind == "partial"

    queue = queue_pairs(web, ids)
    assert queue == {pair: m.kind for pair, m in stored.items()}  # every stored match
    assert api_pairs(api, ids) == queue
    assert cli_pairs(corpus["path"]) == queue

    # A pair an editor rejects leaves the queue and the API alike.
    pk = {external: pk for pk, external in ids.items()}
    web.post("/decisions/", {"pick": f"not_duplicate:{pk['city']}:{pk['city-renamed']}:0"})
    rejected = frozenset(("city", "city-renamed"))
    assert (
        queue_pairs(web, ids, decided=True)
        == api_pairs(api, ids)
        == {pair: kind for pair, kind in queue.items() if pair != rejected}
    )
