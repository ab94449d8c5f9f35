"""What the API answers and accepts, as pydantic models: the OpenAPI document is made from
these, and every answer is checked against them on its way out."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema


class RowError(Schema):
    index: int | None = Field(None, description="the row of the request, from 0")
    field: str | None = None
    message: str


class Error(Schema):
    error: str
    errors: list[RowError] | None = None


class ArticleIn(Schema):
    """One article to store; `body` (or `text`) is required."""

    body: str | None = Field(None, description="the text (or send it as `text`)")
    text: str | None = None
    title: str | None = None
    source: str | None = Field(None, description="who published it; ids are unique per source")
    url: str | None = None
    id: str | int | None = Field(None, description="your id for it, kept as external_id")
    published_at: str | None = Field(None, description="ISO 8601 date or time")


class Submitted(Schema):
    id: int
    external_id: str
    status: str
    outcome: Literal["created", "unchanged", "replaced"] = Field(
        description="created; unchanged: this source's id was stored already, nothing stored;"
        " replaced: stored again with the new text, under a new id"
    )
    replaced: int | None = Field(None, description="the id of the article replaced")


class SubmitOut(Schema):
    articles: list[Submitted]


class CheckIn(Schema):
    text: str
    k: int | None = Field(None, description="largest fingerprint distance, 0 to k_max")


class CheckMatch(Schema):
    article: int
    external_id: str
    title: str
    kind: str
    distance: int | None
    similarity: float
    shared_chars: int
    shared_passages: list[list[int]]


class CheckOut(Schema):
    fingerprint: str | None
    status: str
    tokens: int
    version: str
    matches: list[CheckMatch]


class ArticleOut(Schema):
    id: int
    external_id: str = Field(description="the id the article was sent with ('' if none)")
    title: str
    source: str
    url: str
    status: str
    status_message: str
    exact_of: int | None
    fingerprint: str | None = Field(description="16 hex digits, or null before processing")
    version: str | None
    published_at: datetime | None
    created_at: datetime


class ArticlePage(Schema):
    articles: list[ArticleOut]
    next: int = Field(description="pass as `after` for the next page")
    more: bool


class ArticleMatch(Schema):
    """A match as seen from one article: the other article and how alike they are."""

    article: int
    external_id: str
    title: str
    source: str
    url: str
    kind: str
    distance: int | None
    similarity: float
    shared_chars: int
    shared_passages: list[list[int]]


class ArticleMatches(Schema):
    article: int
    external_id: str
    matches: list[ArticleMatch]


class ArticleRef(Schema):
    id: int
    external_id: str
    title: str
    source: str
    url: str


class MatchOut(Schema):
    id: int = Field(description="its place in the change sequence")
    a: ArticleRef = Field(description="the earlier article")
    b: ArticleRef = Field(description="the later article")
    kind: str
    distance: int | None
    similarity: float
    shared_chars: int
    found_at: datetime


class MatchPage(Schema):
    matches: list[MatchOut]
    next: int = Field(description="pass as `after` to read on; changes after it come later")
    more: bool = Field(description="true when the page was full: ask again at once")


class DecisionOut(Schema):
    id: int = Field(description="its place in the change sequence")
    verdict: str = Field(description="duplicate, not_duplicate, or original (b is null)")
    a: ArticleRef
    b: ArticleRef | None
    decided_by: str | None
    decided_at: datetime
    note: str


class DecisionPage(Schema):
    decisions: list[DecisionOut]
    next: int
    more: bool


class UploadCreated(Schema):
    upload: int
    status_url: str


class UploadError(Schema):
    row: int | None = None
    message: str


class UploadOut(Schema):
    id: int
    name: str
    state: str
    total_rows: int
    accepted: int
    rejected: int
    processed: int
    failed: int
    exact: int
    progress: float
    errors: list[UploadError]
    message: str
    created_at: datetime
    finished_at: datetime | None


class RankedSource(Schema):
    source: str
    copies: int = Field(description="copies made (a copier) or of its articles (copied)")
    partners: int = Field(description="how many sources it copied, or that copied it")


class SourceEdgeOut(Schema):
    original: str = Field(description="the source that published first")
    copier: str = Field(description="the source that copied")
    copies: int
    exact: int
    near: int
    partial: int
    lag_mean_seconds: float = Field(description="mean time from an original's date to its copy's")


class SourcesOut(Schema):
    copies: int = Field(description="copies between sources in the period")
    copiers: list[RankedSource]
    copied: list[RankedSource]
    edges: list[SourceEdgeOut] = Field(description="between the busiest sources, most copies first")


class SourceArticle(Schema):
    id: int
    title: str
    source: str
    dated_at: datetime = Field(description="published, or received when not known")


class SourceCopy(Schema):
    match: int
    kind: str = Field(description="exact, near or partial")
    similarity: float
    original: SourceArticle
    copy_: SourceArticle = Field(alias="copy")
    lag_seconds: float


class SourceCopyPage(Schema):
    source: str
    copies: list[SourceCopy]
    more: bool = Field(description="true when another page follows (ask for page + 1)")
