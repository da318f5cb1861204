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

Two first sign-ins at once (`Alice` and `alice`, two tabs or two devices) would both find no user and make one
each; the database cannot refuse the second, since a rule on auth_user's lower(username) would need a custom user
model, and would refuse the twins made before, which keep signing in. So the look-up and the making are one
transaction under a lock taken by every first sign-in (first_sign_in_lock): the second waits for the first to
commit, then finds its user. Only a sign-in with no user of its exact spelling takes it (a new session of a known
user does not wait), and a first sign-in is rare.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.middleware import PersistentRemoteUserMiddleware
from django.db import connection, transaction
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


def first_sign_in_lock() -> None:
    """Hold, until the current transaction ends, the lock that orders first sign-ins (see the module's doc). PostgreSQL:
    a transaction-scoped advisory lock, one key for every name (names that fold alike are not known before the
    look-up). SQLite: the transaction itself, begun IMMEDIATE (consoleapp/settings.py), holds the database's one
    write lock already."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('jobs.sso first sign-in'))")


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
        if not name or user is None or signed_in:
            super().process_request(request)
        elif get_user_model()._default_manager.filter(username=name).exists():  # a known user: nothing is made
            super().process_request(request)
        else:
            # A first sign-in (or another spelling): looked up and made under the lock, so a twin's first sign-in
            # at the same moment finds this one's user rather than making a second.
            with transaction.atomic():
                first_sign_in_lock()
                request.META[self.header] = stored_spelling(name)
                super().process_request(request)
