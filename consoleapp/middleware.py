"""Console-wide middleware."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.http import HttpRequest, HttpResponse
from django_htmx.http import HttpResponseClientRedirect


def page_path(current_url: str) -> str:
    """Only the path and query of a page's URL from a request header (HX-Current-URL, Referer): a scheme or host
    in the header (client-chosen) never reaches next= or a link."""
    parts = urlsplit(current_url)
    if not parts.path.startswith("/") or parts.path.startswith("//"):
        return ""
    return parts.path + (f"?{parts.query}" if parts.query else "")


class HtmxSignInRedirectMiddleware:
    """An htmx request that needs a sign-in (an expired session, a sign-out in another tab) is answered with
    HX-Redirect to the sign-in page instead of the 302 that htmx would follow and swap, sign-in form and all, into
    the polled fragment. next= is the page the user was on (HX-Current-URL), not the fragment's URL.

    One place for every view: login_required's redirect is recognised by its target, settings.LOGIN_URL. The JSON
    API answers 401 itself and never redirects, so it is untouched.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 302 or not getattr(request, "htmx", False):
            return response
        login_url = str(settings.LOGIN_URL)
        if urlsplit(response.get("Location", "")).path != login_url:
            return response
        page = page_path(request.headers.get("HX-Current-URL", ""))
        target = f"{login_url}?{urlencode({REDIRECT_FIELD_NAME: page}, safe='/')}" if page else login_url
        return HttpResponseClientRedirect(target)
