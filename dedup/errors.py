"""Errors the services raise; each message tells the caller what to fix."""


class DedupError(Exception):
    """Something a caller asked for cannot be done; the message says why and what to do."""


class ArticleInvalid(DedupError):
    """An article (a row of a request or an upload) is malformed; the message names the field."""

    def __init__(self, message: str, *, row: int | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.row = row
        self.field = field


class ReplaceRefused(ArticleInvalid):
    """A row would replace an article its sender may not delete (not theirs, not an admin)."""


class UploadTooLarge(DedupError):
    """An uploaded file is over DEDUP_MAX_UPLOAD_BYTES."""


class SettingsInvalid(DedupError):
    """A settings change names an unknown field or an impossible value."""


class ChecksBusy(DedupError):
    """As many text checks as DEDUP_CHECK_CONCURRENCY are running: try again in a second."""
