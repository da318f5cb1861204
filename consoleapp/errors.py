"""The console's own 400 page (Django's default one says only "Bad Request" and renders without the request) and
CSRF refusal page (Django's is a dead end that talks about cookies and DEBUG)."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import defaults

from consoleapp.middleware import page_path


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A BadRequest the console raised carries a message written for the user (e.g. a template version that is
    not a number), so it is shown on a normal page. Any other 400 (a suspicious Host header, a bad multipart
    body) keeps Django's page, which renders without the request: its context would read the same bad input."""
    if type(exception) is not BadRequest:
        return defaults.bad_request(request, exception)
    return render(request, "400.html", {"message": str(exception)}, status=400)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form refused by the CSRF check, said as such with a way on. Its usual cause is a page opened before the
    user last signed in (Back after a session ended and a new sign-in, or another tab): a sign-in gives a new CSRF
    token, so the old page's form can never be sent; the same page opened again has the current one. The way on
    is the page the form was on (the Referer's path and query only, never its host)."""
    again = page_path(request.headers.get("Referer", ""))
    return render(request, "403_csrf.html", {"again": again}, status=403)
