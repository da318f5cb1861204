from django.contrib import admin
from django.urls import include, path

from jobs import health, portal

urlpatterns = [
    # Django's LoginView with a failed-attempt limit per client IP and username.
    path("accounts/login/", portal.login, name="login"),
    # A GET shows a Sign out button (POST) rather than an empty 405.
    path("accounts/logout/", portal.logout, name="logout"),
    path("healthz", health.healthz, name="healthz"),
    # The admin's own sign-in page would bypass the rate limit: it uses the console's instead.
    path("admin/login/", portal.login),
    path("admin/", admin.site.urls),
    path("", include("jobs.urls")),
]

handler400 = "consoleapp.errors.bad_request"
