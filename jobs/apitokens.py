"""Personal API tokens and the one authentication helper of the JSON API.

A token is `dlcc_` plus 43 random URL-safe characters. Only its SHA-256 is stored, so a database dump
does not let anyone call the API; the plaintext is shown once, when it is created.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Callable
from datetime import timedelta

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from jobs.models import ApiToken

TOKEN_PREFIX = "dlcc_"
# Refreshing last_used_at on every call would turn each read into a write; a minute is precise enough.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def create_token(user, name: str) -> tuple[ApiToken, str]:
    """A new token for user; returns the row and the plaintext, which is never available again."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name.strip()[:100] or "token", prefix=raw[:12],
                                    token_hash=digest(raw))
    return token, raw


def revoke(user, token_id: int) -> ApiToken | None:
    """Revoke one of user's own tokens; None when it is not theirs (or does not exist)."""
    token = ApiToken.objects.filter(user=user, pk=token_id).first()
    if token and token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def user_for_token(raw: str):
    """The active user a token belongs to, or None for unknown, revoked or inactive-user tokens."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(token_hash=digest(raw), revoked_at=None).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def api_user(request: HttpRequest):
    """The caller of an API request: `Authorization: Bearer <token>` or the signed-in session; None if neither.

    A request that presents a token is judged by the token alone (no fallback to the session), and
    `request.api_token_auth` tells whether it did, since only session requests need a CSRF token.
    """
    raw = bearer(request)
    request.api_token_auth = raw is not None
    if raw is not None:
        return user_for_token(raw)
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


def error(status: int, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def api_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap an API view: authenticate with api_user, enforce CSRF for session callers, answer errors in JSON.

    The view receives the caller as `request.api_user`. Token callers are CSRF-exempt (a browser cannot
    attach the header cross-site); session callers are not.
    """

    @csrf_exempt
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        user = api_user(request)
        if user is None:
            response = error(401, "Authentication required: sign in or send Authorization: Bearer <token>.")
            response["WWW-Authenticate"] = 'Bearer realm="dlc-console"'
            return response
        if not request.api_token_auth:
            rejected = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, None, (), {})
            if rejected is not None:
                return error(403, "CSRF check failed: send the X-CSRFToken header, or use an API token.")
        request.api_user = user
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return error(403, str(exc) or "Not permitted.")
        except Http404:
            return error(404, "Not found.")

    return wrapped
