"""Warm a web process before it serves: the match table the queue is drawn from, and the
tokenizer and passage detector the side-by-side view uses. Loaded lazily, they cost the first
editor of each process about a second (bench/results/dashboard.md: first request, first
partial comparison); gunicorn.conf.py calls `warm` in each worker before it accepts requests.
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

# Two short texts that share a passage: comparing them loads what a real comparison needs.
_LEFT = "这是一段用来预热的文字。编辑打开对比页面之前，词典和检测器已经载入。"
_RIGHT = "编辑打开对比页面之前，词典和检测器已经载入。这是另外一句话。"


def warm() -> float:
    """Load the match table, the tokenizer and the detector; return the seconds it took. A
    failure (the database not migrated yet, say) is logged: the first request loads them."""
    from dedup.selectors import match_table, settings_current
    from webui.diff import text_diff
    from webui.review_context import passage_detector

    start = time.perf_counter()
    try:
        match_table()
        passage_detector(settings_current().active().engine_config()).passages(_LEFT)
        text_diff(_LEFT, _RIGHT)
    except Exception:
        logger.exception("warming up failed; the first request will load what it needs")
    seconds = time.perf_counter() - start
    logger.info("warmed up in %.2f s", seconds)
    return seconds
