"""API tokens issued and revoked, each in the audit log."""

from __future__ import annotations

from django.db import transaction

from dedup.models import ApiToken, AuditAction
from dedup.services.audit import audit_record


@transaction.atomic
def token_issue(*, owner, name: str = "", user=None) -> tuple[ApiToken, str]:
    """Issue a token to `owner` (the secret is returned once), in the audit log under `user`."""
    token, key = ApiToken.issue(owner, name)
    changes = {"owner": owner.get_username(), "name": name}
    audit_record(action=AuditAction.TOKEN_ISSUE, user=user, obj=token, changes=changes)
    return token, key


@transaction.atomic
def tokens_revoke(*, token_ids: list[int], user=None) -> int:
    """Delete tokens (their callers get 401 from now on), each in the audit log; return how
    many went."""
    tokens = list(ApiToken.objects.select_related("user").filter(id__in=token_ids))
    for token in tokens:
        changes = {"owner": token.user.get_username(), "name": token.name}
        audit_record(action=AuditAction.TOKEN_REVOKE, user=user, obj=token, changes=changes)
    ApiToken.objects.filter(id__in=[t.id for t in tokens]).delete()
    return len(tokens)
