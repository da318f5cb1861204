"""The console's own 400 page: Django's default one says only "Bad Request" and renders without the request."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import defaults


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A BadRequest the console raised carries a message written for the user (e.g. a template version that is
    not a number), so it is shown on a normal page. Any other 400 (a suspicious Host header, a bad multipart
    body) keeps Django's page, which renders without the request: its context would read the same bad input."""
    if type(exception) is not BadRequest:
        return defaults.bad_request(request, exception)
    return render(request, "400.html", {"message": str(exception)}, status=400)
