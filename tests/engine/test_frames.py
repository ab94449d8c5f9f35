"""Site templates: pages of one template are no partial copies of each other, while a copy
placed last in a bigger page still is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dedup.engine import frames
from dedup.engine.verify import BOILERPLATE_OWNERS, Detector
from tests.texts import ARTICLE, FOOTER, NEAR, stranger

# A site's page template filled in for four pages: a header, then the page's own text, then a
# box of related links and the footer. Held by four pages, fewer than boilerplate needs.
HEADER = "环球资讯网 首页 国内 国际 财经 科技 体育 娱乐 登录注册 设为首页收藏本站\n\n"
RELATED = (
    "\n\n相关阅读\n"
    "全省粮食生产再获丰收农民收入稳步增长乡镇企业发展势头良好。\n"
    "各地加大农业投入兴修水利设施科技兴农取得明显成效良种覆盖率提高。\n"
    "城市交通拥堵问题以及地铁建设的长远规划引起市民广泛关注和讨论。\n"
    "共享单车的管理问题同样值得关注乱停乱放现象在一些地区仍然突出。\n\n"
)
PAGES = 4


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def page(body: str) -> str:
    return HEADER + body + RELATED + FOOTER


def test_pages_of_one_template_are_not_partial_copies(detector):
    assert PAGES < BOILERPLATE_OWNERS  # the template is no boilerplate
    texts = [page(stranger(seed, 8)) for seed in range(PAGES)]
    features = [detector.features(t) for t in texts]
    assert detector.duplicates(features) == []


def test_without_the_frame_rule_the_template_makes_them_partial(detector, monkeypatch):
    monkeypatch.setattr(frames, "FRAME_OWNERS", 10**9)
    texts = [page(stranger(seed, 8)) for seed in range(PAGES)]
    found = detector.duplicates([detector.features(t) for t in texts])
    assert found and all(d.kind == "partial" for d in found)  # what the rule is for


def test_a_copy_of_a_page_of_the_template_is_still_found(detector):
    # Four pages of the template again: two others, a page and a bigger one ending with it.
    body = stranger(10, 8)
    texts = [page(stranger(seed, 8)) for seed in range(PAGES - 2)]
    texts.append(stranger(99, 8) + "\n\n" + page(body))
    texts.append(page(body))
    found = detector.duplicates([detector.features(t) for t in texts])
    assert [(d.a, d.b, d.kind) for d in found] == [(PAGES - 2, PAGES - 1, "partial")]


def test_a_copy_placed_last_in_a_bigger_page_is_partial(detector):
    # The article's text is held by three articles, more than the pair, and sits at the end
    # of both: it is all of the smaller one, so it is the copy, not a frame.
    texts = [ARTICLE, NEAR, stranger(3, 10) + "\n\n" + ARTICLE]
    found = detector.duplicates([detector.features(t) for t in texts])
    assert (0, 2, "partial") in [(d.a, d.b, d.kind) for d in found]
    assert (1, 2) in [(d.a, d.b) for d in found]


def test_pages_whose_text_is_joined_into_their_frame_are_not_partial_copies(detector):
    # Five pages of one site's template (bench.trusted's tech_en corpus): a header, a short
    # text of their own, a box of related links. In some, the page's own short paragraphs are
    # joined into the frame's passage: none is a passage of its own, though half of the page's
    # text is not in the other.
    pages = json.loads((Path(__file__).parent / "data" / "site_pages.json").read_text())
    found = detector.duplicates([detector.features(t) for t in pages["pages"]])
    assert [d for d in found if d.kind == "partial"] == []


CONTRIBUTING = (
    "Contributing: pull requests are welcome. For major changes, please open an issue first to "
    "discuss what you would like to change, and make sure to update the tests as appropriate."
)


def test_a_frame_cut_otherwise_in_each_page_is_still_no_evidence(detector):
    # Five pages of another template: one ends its text with a standard section many
    # articles hold (boilerplate), joined there to the related links; in the others the
    # page's last paragraph is joined to them. The passages ending both differ in key, each
    # held by the template's pages.
    pages = json.loads((Path(__file__).parent / "data" / "site_pages.json").read_text())
    texts = pages["ending_otherwise"] + [f"{stranger(n, 5)}\n{CONTRIBUTING}" for n in range(10)]
    found = detector.duplicates([detector.features(t) for t in texts])
    assert [(d.a, d.b, d.kind) for d in found] == []
