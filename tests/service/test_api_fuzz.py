"""Property-based: requests schemathesis makes from the API's own OpenAPI document (valid ones
and ones that break it) are never answered 5xx. In process, against the test database, with
no network (the document is read from the app): EXAMPLES per operation keep it under a
minute."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from dedup.models import ApiToken
from tests import roles

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())
EXAMPLES = 30  # about 35 s in all; at 40 it found a NUL in /api/decisions?source= before the fix


@pytest.fixture
def token(db, settings):
    """Return an admin's token; requests keep the test's database connection (as Django's
    test client does: a request's end would close it, and the test's transaction with it)."""
    settings.DEDUP_API_RATE_LIMIT = 0  # every example counts against no limit
    user = roles.user_in("admin", "fuzz")
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield ApiToken.issue(user, name="fuzz")[1]
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_request_is_answered_5xx(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=[not_a_server_error])
