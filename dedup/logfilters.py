"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied


class RefusalWithoutTraceback(logging.Filter):
    """A request refused with 403 (an account without the role) is an answer, not a fault:
    its warning line stays, its traceback goes (one per refused page filled the logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True
