"""The audit log: one function writes it, everything that changes something calls it.

Details are free-form JSON, but never a secret: keys that look like one are dropped before saving, so a
careless caller cannot leak a password into the log.

An event made by a request that an API token authenticated says so: its details' `api_token` holds the token's
name and prefix (jobs.apitokens puts the token's row on the request's user as `api_token`), never the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.models import AuditEvent, Job, Workspace
from jobs.spec import looks_like_secret

# Detail keys whose values are never recorded (registry passwords, tokens, AccessKeys, API keys): the one test
# of a secret-looking name, shared with the wizard's warning on environment variables.
_looks_secret = looks_like_secret
# The console's own field names that read like a secret's but hold a name: a workspace's credentials profile names a
# profile of the credentials file, whose keys stay there. Dropped, a rebinding to another profile went unaudited.
NAMES_NOT_SECRETS = frozenset({"credential_profile"})


def scrub(value: Any) -> Any:
    """A JSON-safe copy of value with secret-looking keys removed at any depth."""
    if isinstance(value, Mapping):
        return {str(k): scrub(v) for k, v in value.items() if k in NAMES_NOT_SECRETS or not _looks_secret(k)}
    if isinstance(value, list | tuple | set | frozenset):
        return [scrub(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# The details key of the token an event came through. Added after scrubbing, which drops it from what callers
# pass: only the request's own token is ever recorded there.
TOKEN_KEY = "api_token"


def token_of(actor) -> dict[str, str] | None:
    """{"name", "prefix"} of the API token that authenticated `actor` in this request, else None."""
    token = getattr(actor, "api_token", None)
    if token is None:
        return None
    return {"name": str(token.name), "prefix": str(token.prefix)}


def record(actor, action: str, *, workspace: Workspace, job: Job | None = None, source: Job | None = None,
           by: str = "system", **details: Any) -> AuditEvent:
    """Append one event. `actor` is a user (or None for the system, e.g. a sync import, named by `by`)."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    saved = scrub(details)
    token = token_of(user)
    if token is not None:
        saved[TOKEN_KEY] = token
    return AuditEvent.objects.create(
        actor=user,
        actor_name=user.get_username() if user else by,
        action=action,
        workspace=workspace,
        job=job,
        job_name=job.display_name if job else "",
        source=source,
        details=saved,
    )


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{field: {"from": old, "to": new}} for the fields that differ, for a "changed" event's details."""
    return {
        key: {"from": scrub(before.get(key)), "to": scrub(after.get(key))}
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    }
