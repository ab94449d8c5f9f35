"""The queue's rows and histograms drawn by one tag each (webui/templatetags/review_rows.py)
are the markup the template loops drew: the same bytes for titled, untitled and missing
originals, long and short names, waiting and reviewed clusters, in both languages."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import translation

from dedup.models import Article
from webui.queue_page import similarity_chart
from webui.review_params import Threshold

# The loop of _queue_results.html and the whole of _histogram.html as they were before the
# tags, kept beside this test.
BEFORE = Path(__file__).parent / "queue_markup_before"
LOOP = (BEFORE / "rows.html").read_text(encoding="utf-8")
HISTOGRAM = (BEFORE / "histogram.html").read_text(encoding="utf-8")
AT = dt.datetime(2024, 5, 1, 23, 30, tzinfo=dt.UTC)  # 2 May in Asia/Shanghai


def _article(pk: int, title: str, head: str, **fields) -> Article:
    article = Article(id=pk, title=title, source=fields.get("source", "人民日报"), length=pk * 7)
    article.dated_at = fields.get("dated_at", AT)
    article.head = head
    return article


def _rows() -> list[dict]:
    long = "国家统计局今天发布数据显示今年前三季度国内生产总值同比增长百分之五点二" * 2
    others = [
        _article(11, "短标题", ""),
        _article(12, "一个很长很长的标题<b>&</b>超过二十八个字符一定会被截断的标题文字", ""),
        _article(13, "", long),
        _article(14, "", "短的开头"),
    ]
    originals = [
        (_article(1, "标题 <script>&\"'", "ignored"), 7, 3, others[:2]),
        (_article(2, "", long, source=""), 2, 1, others[2:]),
        (_article(3, "", "短的开头 e\u0301", dated_at=None), 3, 0, []),
        (_article(4, "", ""), 120, 0, others),
        (None, 5, 12, others[1:3]),
    ]
    return [
        {
            "original": original,
            "original_id": original.id if original else 99,
            "size": size,
            "waiting": waiting,
            "matches": size,
            "others": shown,
        }
        for original, size, waiting, shown in originals
    ]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_cluster_rows_draw_what_the_loop_drew(language):
    context = {"rows": _rows(), "threshold": Threshold(near=0.35, partial=0.5)}
    with translation.override(language):
        before = Template(LOOP).render(Context(context))
        after = Template("{% load review_rows %}{% cluster_rows rows threshold.query %}")
        drawn = after.render(Context(context))
    assert drawn == before
    assert "&amp;partial=0.5" in drawn and "&lt;script&gt;" in drawn
    assert "2024-05-02" in drawn  # the day where the site is


@pytest.mark.parametrize("language", ["zh-hans", "en"])
@pytest.mark.parametrize("least", [0.0, 0.45, 0.97])
def test_histogram_draws_what_the_include_drew(language, least):
    counts = [0, 3, 120, 7, 0, 1, 45, 2, 9, 1000]
    context = {"chart": similarity_chart(counts, least), "title": "近似 <副本> & 分布"}
    with translation.override(language):
        before = Template(HISTOGRAM).render(Context(context))
        drawn = Template("{% load review_rows %}{% histogram chart title %}").render(
            Context(context)
        )
    assert drawn == before
    assert 'class="out"' in drawn or least == 0.0
