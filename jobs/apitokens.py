"""Personal API tokens and the one authentication helper of the JSON API.

A token is `dlcc_` plus 43 random URL-safe characters. Only its SHA-256 is stored, so a database dump
does not let anyone call the API; the plaintext is shown once, when it is created.

A token may be scoped to one workspace and to read-only, and may expire. The scope travels on the user that
api_view hands the view (`user.token_scope`), where jobs.access applies it to every question it answers.
"""

from __future__ import annotations

import functools
import hashlib
import math
import secrets
from collections.abc import Callable
from datetime import UTC, timedelta

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from jobs import access, audit, ratelimit
from jobs.access import TokenScope
from jobs.models import ApiToken, AuditEvent, Workspace

TOKEN_PREFIX = "dlcc_"
# Refreshing last_used_at on every call would turn each read into a write; a minute is precise enough.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenExpired(Exception):
    """A known, unrevoked token past its expiry: refused with a 401 that says so, unlike an unknown token."""

    def __init__(self, expires_at) -> None:
        super().__init__(expires_at)
        self.expires_at = expires_at


class TokenRevoked(Exception):
    """A known token its owner revoked: refused with a 401 that says so, so a script's owner knows to make a new
    one rather than look for a typo (the caller holds the token: nothing is revealed to anyone else)."""


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def create_token(user, name: str, *, workspace: Workspace | None = None, read_only: bool = False,
                 expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for user; returns the row and the plaintext, which is never available again.

    `workspace` None reaches all of the user's workspaces; `expires_in_days` None never expires. The caller
    checks that the user belongs to `workspace` (TokenForm does); a token of a workspace they leave sees nothing.
    """
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days is not None else None
    token = ApiToken.objects.create(user=user, name=name.strip()[:100] or "token", prefix=raw[:12],
                                    token_hash=digest(raw), workspace=workspace, read_only=read_only,
                                    expires_at=expires_at)
    return token, raw


def scope_details(token: ApiToken) -> dict[str, object]:
    """The token's scope as the audit log records it (never the token: only its recognisable prefix)."""
    return {"name": token.name, "prefix": token.prefix,
            "scope": f"workspace {token.workspace.name}" if token.workspace else "all workspaces",
            "read_only": token.read_only, "expires_at": token.expires_at.isoformat() if token.expires_at else "never"}


def record(user, token: ApiToken, event: str) -> None:
    """Audit a token event in every workspace the token reaches: its one workspace, or all of the user's."""
    workspaces = [token.workspace] if token.workspace else access.workspaces_for(user)
    for workspace in workspaces:
        audit.record(user, AuditEvent.TOKEN, workspace=workspace, event=event, **scope_details(token))


def revoke(user, token_id: int) -> tuple[ApiToken | None, bool]:
    """Revoke one of user's own tokens and audit it: (the token, whether this call revoked it).

    (None, False) when the token is not theirs or does not exist. Revoking is idempotent: only the call whose
    conditional UPDATE flips revoked_at records the "revoked" event, so a second click, a resent form or two
    concurrent requests leave one event and the first revocation time.
    """
    token = ApiToken.objects.select_related("workspace").filter(user=user, pk=token_id).first()
    if token is None:
        return None, False
    now = timezone.now()
    with transaction.atomic():
        revoked = ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=now) == 1
        if revoked:
            token.revoked_at = now
            record(user, token, "revoked")
    if not revoked:
        token.refresh_from_db(fields=["revoked_at"])
    return token, revoked


def user_for_token(raw: str):
    """The active user a token belongs to, carrying the token's scope (`token_scope`) and the token's row
    (`api_token`); None for unknown or inactive-user tokens. Raises TokenRevoked for a revoked token, TokenExpired
    for an expired one."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(token_hash=digest(raw)).first()
    if token is None or not token.user.is_active:
        return None
    if token.revoked_at is not None:
        raise TokenRevoked()
    now = timezone.now()
    if token.expires_at is not None and token.expires_at <= now:
        raise TokenExpired(token.expires_at)
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    user = token.user  # a fresh instance of this request's own: the scope cannot reach a session's user
    user.token_scope = TokenScope(workspace_id=token.workspace_id, read_only=token.read_only)
    user.api_token = token  # audit.record notes the token's name and prefix on what this request does
    return user


def bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def api_user(request: HttpRequest):
    """The caller of an API request: `Authorization: Bearer <token>` or the signed-in session; None if neither.

    A request that presents a token is judged by the token alone (no fallback to the session), and
    `request.api_token_auth` tells whether it did, since only session requests need a CSRF token. Raises
    TokenExpired for an expired token, TokenRevoked for a revoked one.
    """
    raw = bearer(request)
    request.api_token_auth = raw is not None
    if raw is not None:
        return user_for_token(raw)
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


def error(status: int, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _unauthorized(message: str, challenge: str = "", **extra) -> JsonResponse:
    response = error(401, message, **extra)
    response["WWW-Authenticate"] = 'Bearer realm="dlc-console"' + (f", {challenge}" if challenge else "")
    return response


def _too_many(wait: float) -> JsonResponse:
    # One number for the message and Retry-After: "a minute" beside `Retry-After: 9` left a script's owner unsure.
    seconds = math.ceil(wait)
    response = error(429, f"Too many requests with invalid API tokens from your address: try again in "
                          f"{seconds} second{'' if seconds == 1 else 's'}.", code="too_many_failures")
    response["Retry-After"] = str(seconds)
    return response


def api_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap an API view: authenticate with api_user, enforce CSRF for session callers, answer errors in JSON.

    The view receives the caller as `request.api_user`. Token callers are CSRF-exempt (a browser cannot
    attach the header cross-site); session callers are not. For a token caller `request.user` is the token's
    scoped user as well, so a view that reads request.user (e.g. views.current_workspace) cannot step outside
    the token's scope through a session cookie sent alongside. Invalid tokens are counted per client IP
    (ratelimit.token_failed): past the limit they get a 429 with Retry-After instead of the 401.
    """

    @csrf_exempt
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            user = api_user(request)
        except TokenExpired as exc:
            # ISO 8601 with its offset, as every other API timestamp: machine-readable, and no zone to guess.
            when = exc.expires_at.astimezone(UTC).isoformat(timespec="seconds")
            return _unauthorized(f"This API token expired at {when}: create a new one on /account/api.",
                                 'error="invalid_token", error_description="The token expired"', code="token_expired",
                                 expires_at=when)
        except TokenRevoked:
            return _unauthorized("This API token was revoked: create a new one on /account/api.",
                                 'error="invalid_token", error_description="The token was revoked"',
                                 code="token_revoked")
        if user is None and request.api_token_auth:
            # Counted only here, after the lookup: a valid token is never slowed down. Expired and revoked tokens
            # are not counted either: they are not guesses, and their 401 tells a script's owner what to do.
            if wait := ratelimit.token_failed(request):
                return _too_many(wait)
            # Unknown, or its user deactivated: one answer, so a token says nothing of whose it was.
            return _unauthorized("This API token is not valid: check that it was copied whole, or create a new one "
                                 "on /account/api.",
                                 'error="invalid_token", error_description="The token is not valid"')
        if user is None and request.headers.get("Authorization", "").strip():
            # `Token abc`, `Basic ...`, a bare token, `Bearer` with nothing after it: the caller meant to
            # authenticate, so say how, not just that they must. Not counted: no token was tried. The header's
            # value is not echoed: a bare token would come back in the answer.
            return _unauthorized("The Authorization header is not a bearer token: use `Authorization: Bearer "
                                 "<token>` with a token from /account/api (or sign in).")
        if user is None:
            return _unauthorized("Authentication required: sign in or send Authorization: Bearer <token>.")
        if not request.api_token_auth:
            rejected = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, None, (), {})
            if rejected is not None:
                return error(403, "CSRF check failed: send the X-CSRFToken header, or use an API token.")
        else:
            request.user = user
        request.api_user = user
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return error(403, str(exc) or "Not permitted.")
        except Http404:
            return error(404, "Not found.")

    return wrapped
