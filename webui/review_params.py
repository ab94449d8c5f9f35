"""The review pages' query parameters: the similarity bars and the queue's filters."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np
from django.utils import timezone
from django.utils.translation import gettext as _

from dedup.selectors.clusterings import BANDS, Bars, QueueFilter

STATUSES = ("waiting", "reviewed", "all")
SORTS = ("size", "newest")


class ParamError(ValueError):
    """A query parameter the page cannot use; the message says what to send instead."""


@dataclass(frozen=True)
class Threshold:
    """The least similarity of the near and partial copies shown (clusterings.Bars); 0 shows
    every verified copy."""

    near: float = 0.0
    partial: float = 0.0

    @property
    def bars(self) -> Bars:
        return Bars(self.near, self.partial)

    @property
    def everything(self) -> bool:
        """Whether every verified copy is shown (the defaults)."""
        return not self.near and not self.partial

    def query(self) -> str:
        return urlencode({"near": f"{self.near:g}", "partial": f"{self.partial:g}"})


def _share(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise ParamError(
            _("The least similarity %(name)s must be a number from 0 to 1.") % {"name": name}
        )
    return round(min(max(value, 0.0), 1.0), 3)


def threshold_parse(params) -> Threshold:
    """Read the bars near and partial (0..1; out-of-range values are clamped) from a query.

    Older addresses still work: s (one least similarity for both kinds) fills a bar not given,
    and k (a fingerprint distance, which no longer hides verified copies) is ignored."""
    old = params.get("s", "").strip()
    fallback = _share(old, "s") if old else 0.0
    bars = {}
    for name in ("near", "partial"):
        raw = params.get(name, "").strip()
        bars[name] = _share(raw, name) if raw else fallback
    return Threshold(**bars)


def day_parse(raw: str, name: str) -> dt.date | None:
    if not raw:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ParamError(
            _("The date %(name)s must look like 2024-05-31.") % {"name": name}
        ) from None


def _epoch(day: dt.date) -> int:
    start = dt.datetime.combine(day, dt.time(), tzinfo=timezone.get_current_timezone())
    return int(start.timestamp())


@dataclass(frozen=True)
class QueueParams:
    status: str
    source: str
    date_from: dt.date | None
    date_to: dt.date | None
    band: str
    sort: str
    q: str

    def filter(self, hits: np.ndarray | None) -> QueueFilter:
        return QueueFilter(
            status=self.status,
            source=self.source,
            date_from=_epoch(self.date_from) if self.date_from else None,
            # The last day is included: up to the start of the next.
            date_to=_epoch(self.date_to + dt.timedelta(days=1)) if self.date_to else None,
            band=self.band,
            sort=self.sort,
            hits=hits,
        )


def queue_params_parse(params) -> QueueParams:
    """Read the queue's filters; unknown choices fall back to the defaults."""
    status = params.get("status", "waiting")
    sort = params.get("sort", "size")
    band = params.get("band", "")
    return QueueParams(
        status=status if status in STATUSES else "waiting",
        source=params.get("source", "")[:200],
        date_from=day_parse(params.get("from", "").strip(), "from"),
        date_to=day_parse(params.get("to", "").strip(), "to"),
        band=band if band in BANDS else "",
        sort=sort if sort in SORTS else "size",
        q=" ".join(params.get("q", "").split())[:200],
    )
