"""Company single sign-on behind an authenticating proxy (see docs/sso.md).

Enabled by DLC_REMOTE_USER=1: the proxy authenticates the person and passes their user name in a request
header (DLC_REMOTE_USER_HEADER, default X-Forwarded-User) or in the WSGI REMOTE_USER variable. Only safe
when every request reaches the console through that proxy and the proxy overwrites the header.
"""

from django.conf import settings
from django.contrib.auth.middleware import PersistentRemoteUserMiddleware


class ProxyRemoteUserMiddleware(PersistentRemoteUserMiddleware):
    """RemoteUserMiddleware reading the header named in settings; the session survives pages the proxy
    does not protect (e.g. static files), and signing out of the proxy is the proxy's business."""

    @property
    def header(self) -> str:  # type: ignore[override]
        name = settings.DLC_REMOTE_USER_HEADER
        return name if name == "REMOTE_USER" else "HTTP_" + name.upper().replace("-", "_")
