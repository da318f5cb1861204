"""Company single sign-on behind an authenticating proxy (see docs/sso.md).

Enabled by DLC_REMOTE_USER=1: the proxy authenticates the person and passes their user name in a request
header (DLC_REMOTE_USER_HEADER, default X-Forwarded-User) or in the WSGI REMOTE_USER variable. Only safe
when every request reaches the console through that proxy and the proxy overwrites the header.

User names from the proxy are matched ignoring case: identity providers (Active Directory, LDAP, Google, Okta,
Keycloak by default) take `Alice` and `alice` as one person, and a proxy may pass on whichever spelling the person
typed, so matched as written one person became two users, each with their own memberships, jobs and tokens. A
name signs in as the user of that exact spelling if there is one; else as the user whose name equals it but for
case, the oldest active one (the first spelling seen); else a new user is made with that spelling. Users made
twice before this rule (`Alice` and `alice`) each keep signing in as before with their own spelling, and a third
spelling signs in as the older one; an admin deactivates the unwanted one (Django admin) and a third spelling then
finds the other. A deactivated user is not replaced by a new one under another spelling: that sign-in is refused.
Case is folded by the database: PostgreSQL (production) folds every letter, SQLite ASCII letters only.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.middleware import PersistentRemoteUserMiddleware
from django.http import HttpRequest


def stored_spelling(name: str) -> str:
    """The user name `name` signs in as: its own if a user has it, else that of the oldest active user whose name
    equals it ignoring case (of the oldest deactivated one if all are: refused, not made anew), else `name` itself
    (a new user, so spelled)."""
    users = get_user_model()._default_manager
    if not name or users.filter(username=name).exists():
        return name
    twin = (users.filter(username__iexact=name).order_by("-is_active", "pk")
            .values_list("username", flat=True).first())
    return twin if twin is not None else name


class ProxyRemoteUserMiddleware(PersistentRemoteUserMiddleware):
    """RemoteUserMiddleware reading the header named in settings; the session survives pages the proxy
    does not protect (e.g. static files), and signing out of the proxy is the proxy's business."""

    # Sync only (the console runs under WSGI): under ASGI Django adapts it rather than take its async path, which
    # would skip the spelling below (and reads "HTTP_" + header, a name `header` has prefixed already).
    async_capable = False

    @property
    def header(self) -> str:  # type: ignore[override]
        name = settings.DLC_REMOTE_USER_HEADER
        return name if name == "REMOTE_USER" else "HTTP_" + name.upper().replace("-", "_")

    def process_request(self, request: HttpRequest) -> None:
        # The name as stored before Django reads it: both its "already signed in as this user" check and
        # RemoteUserBackend's get-or-create match user names exactly.
        name, user = request.META.get(self.header), getattr(request, "user", None)  # no user: super() says why
        signed_in = user is not None and user.is_authenticated and user.get_username() == name  # no query then
        if name and user is not None and not signed_in:
            request.META[self.header] = stored_spelling(name)
        super().process_request(request)
