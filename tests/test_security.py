"""CSRF on every state-changing request (HTMX included), the sign-in rate limit, and production settings
passing `manage.py check --deploy` without a warning."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache

from tests import portal_fixtures as pf
from tests.test_authz_matrix import MATRIX, routes

ROOT = Path(__file__).resolve().parents[1]


def post_target(route: str, team):
    """A path and data for POSTing to route: the matrix's case (the one the admin may do), else the route."""
    for case in MATRIX.get(route, []):
        if case.method == "POST":
            data = case.data(team) if case.data else {}
            return case.path(team), (json.dumps(data), "application/json") if case.json else (data, None)
    for case in MATRIX.get(route, []):
        return case.path(team), ({}, None)
    from tests.test_authz_matrix import admin_path

    return admin_path(route), ({}, None)


ALL_ROUTES = sorted({route for _ns, route, _p in routes()})
# Exempt from the CSRF check: they change nothing, and a POST is a plain 405 (tests/test_health.py).
CHANGES_NOTHING = {"healthz"}


def is_csrf_failure(response) -> bool:
    text = response.content.decode(errors="replace")
    return response.status_code == 403 and ("CSRF" in text)


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_every_post_without_a_csrf_token_is_refused(team, htmx):
    """Signed in as Alpha's admin (who may do everything in Alpha), no request without the token gets through."""
    failures = []
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    for route in ALL_ROUTES:
        client = pf.client_for(team.users["admin"], enforce_csrf_checks=True)
        path, (data, content_type) = post_target(route, team)
        kwargs = {"content_type": content_type} if content_type else {}
        response = client.post(path, data, **kwargs, **headers)
        if route in CHANGES_NOTHING:
            if response.status_code != 405:
                failures.append((route, response.status_code))
        elif not is_csrf_failure(response):
            failures.append((route, response.status_code))
    assert not failures, f"accepted without a CSRF token: {failures}"


def test_the_same_posts_with_the_token_pass_the_csrf_check(team):
    """The control: the check above fails for the right reason, not because every POST is refused."""
    client = pf.client_for(team.users["admin"], enforce_csrf_checks=True)
    client.get("/")
    token = client.cookies["csrftoken"].value
    for route in ("jobs/<int:pk>/stop", "workspaces/<int:ws>/members/<int:pk>", "templates/<int:pk>/locks",
                  "api/v1/jobs", "jobs/new/section/<str:name>"):
        path, (data, content_type) = post_target(route, team)
        kwargs = {"content_type": content_type} if content_type else {}
        response = client.post(path, data, HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true", **kwargs)
        assert not is_csrf_failure(response), route
        assert response.status_code < 400, (route, response.status_code)


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_other_unsafe_methods_need_the_token_too(team, method):
    client = pf.client_for(team.users["admin"], enforce_csrf_checks=True)
    for path in (f"/jobs/{team.job.pk}/stop", f"/api/v1/jobs/{team.job.pk}/stop", f"/templates/{team.template.pk}"):
        assert is_csrf_failure(getattr(client, method)(path)), (method, path)


# --- sign-in rate limit ---------------------------------------------------------------------------------


@pytest.fixture
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def alice(db, fresh_cache, settings):
    from django.contrib.auth import get_user_model

    # A fast hasher: these tests are about counting attempts, not about hashing them.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return get_user_model().objects.create_user("alice", password="right-password-1")


def sign_in(client, username, password, path="/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def test_login_is_blocked_after_repeated_failures_even_with_the_right_password(alice, settings):
    settings.LOGIN_MAX_FAILURES = 5
    client = pf.client_for()
    for _ in range(5):
        assert sign_in(client, "alice", "wrong").status_code == 200
    blocked = sign_in(client, "alice", "right-password-1")
    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.text
    assert "_auth_user_id" not in client.session
    # Another address is not blocked, and another username from this address still may try.
    assert sign_in(pf.client_for(REMOTE_ADDR="10.9.9.9"), "alice", "right-password-1").status_code == 302
    assert sign_in(client, "bob", "whatever").status_code == 200


def test_a_success_resets_the_count(alice, settings):
    settings.LOGIN_MAX_FAILURES = 3
    client = pf.client_for()
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", "right-password-1").status_code == 302
    client = pf.client_for()
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", "right-password-1").status_code == 302


def test_many_usernames_from_one_address_are_blocked_too(alice, settings):
    settings.LOGIN_MAX_FAILURES_PER_IP = 4
    client = pf.client_for()
    for name in ("u1", "u2", "u3", "u4"):
        sign_in(client, name, "guess")
    assert sign_in(client, "alice", "right-password-1").status_code == 429


def test_the_admin_sign_in_is_the_same_rate_limited_page(alice, settings):
    settings.LOGIN_MAX_FAILURES = 2
    client = pf.client_for()
    for _ in range(2):
        sign_in(client, "alice", "wrong", "/admin/login/")
    assert sign_in(client, "alice", "right-password-1", "/admin/login/").status_code == 429
    assert sign_in(client, "alice", "right-password-1").status_code == 429


def test_the_window_ends(alice, settings):
    import time

    settings.LOGIN_MAX_FAILURES = 2
    # From the first failure: the third sign-in must come within it (1 s was short on a loaded machine).
    settings.LOGIN_WINDOW_SECONDS = 2
    client = pf.client_for()
    for _ in range(2):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", "right-password-1").status_code == 429
    time.sleep(2.1)
    assert sign_in(client, "alice", "right-password-1").status_code == 302


# --- production settings ----------------------------------------------------------------------------------


def test_production_settings_pass_check_deploy_without_warnings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEBUG"))}
    env.update(
        DLC_PRODUCTION="1",
        SECRET_KEY=secrets.token_urlsafe(64),
        DLC_DEMO_PASSWORD=secrets.token_urlsafe(16),
        ALLOWED_HOSTS="console.example.com",
        CSRF_TRUSTED_ORIGINS="https://console.example.com",
        DLC_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DLC_SECRET_BOX_KEY=secrets.token_urlsafe(32),
    )
    # And the same command does warn about a development configuration, so the check is really looking. Both run
    # side by side: each is seconds of Django start-up.
    dev_env = {k: v for k, v in env.items() if k != "DLC_PRODUCTION"}
    check = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    runs = [subprocess.Popen(check, cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for e in (env, dev_env)]
    (out, err), (dev_out, dev_err) = (run.communicate(timeout=120) for run in runs)
    assert runs[0].returncode == 0, out + err
    assert "System check identified no issues" in out
    assert runs[1].returncode != 0 and "security.W" in dev_out + dev_err


# --- bad input --------------------------------------------------------------------------------------------

GARBAGE = ["", "0", "-1", "99999999999999999999999", "x" * 5000, "<script>", "\u202e\u0000", "1.5", "[]", "{}",
           "²"]  # a digit to str.isdigit(), not to int()


def test_garbage_input_never_gives_a_500(team):
    """Every console URL, GET and POST, with garbage in every parameter a view reads: errors, never a crash."""
    names = ["q", "status", "job", "user", "action", "since", "until", "before", "after", "size", "sort",
             "workspace", "template", "version", "role", "remove", "name", "text", "format", "job_type",
             "locked", "default_version", "max_nodes", "max_gpus", "max_duration", "max_duration_unit",
             "allowed_sources", "default_tags", "required_tag_keys", "region", "endpoint", "username", "watch",
             "pod", "_workspace", "_template", "_template_version", "_clone", "_template_name", "prefill"]
    crashes = []
    for route in ALL_ROUTES:
        if route.startswith("admin/") and route != "admin/login/":
            continue
        path = post_target(route, team)[0].split("?")[0]
        client = pf.client_for(team.users["admin"])
        client.raise_request_exception = False
        for value in GARBAGE:
            data = {name: value for name in names}
            for response in (client.get(path, data), client.post(path, data),
                             client.post(path, value, content_type="application/json")):
                if response.status_code >= 500 and response.status_code != 502 and route != "healthz":
                    crashes.append((route, value[:20], response.status_code))
    assert not crashes, crashes
