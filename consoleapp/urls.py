from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path

from jobs import health, portal


def favicon(_request: HttpRequest) -> HttpResponse:
    # Browsers ask /favicon.ico whatever the page links: a 404 there is a console error per session. Not permanent:
    # the static file's hashed name changes with it in production.
    return redirect(static("favicon.svg"))


urlpatterns = [
    # Django's LoginView with a failed-attempt limit per client IP and username.
    path("accounts/login/", portal.login, name="login"),
    # A GET shows a Sign out button (POST) rather than an empty 405.
    path("accounts/logout/", portal.logout, name="logout"),
    path("healthz", health.healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    # The admin's own sign-in page would bypass the rate limit: it uses the console's instead.
    path("admin/login/", portal.login),
    path("admin/", admin.site.urls),
    path("", include("jobs.urls")),
]

handler400 = "consoleapp.errors.bad_request"
