"""Signing in and out: htmx requests of an expired session (consoleapp.middleware), where a sign-in lands, what
signing out sends, and no CSRF token in a poll's URL. Rate limits of the sign-in: tests/test_security.py; the same in
Chromium: tests/test_browser_job_page.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import portal_fixtures as pf

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
PASSWORD = "auth-test-password-1"


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


def htmx_get(client, path: str, page: str):
    return client.get(path, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page)


@pytest.mark.parametrize("fragment", ["/jobs/{pk}", "/jobs/{pk}/logs", "/jobs/rows?watch={pk}.Running"])
def test_an_htmx_request_needing_a_sign_in_gets_hx_redirect_to_it_not_the_sign_in_page(team, fragment):
    """QA: the polls of a job page whose session expired followed the 302 and swapped the sign-in page into their
    targets (13 sign-in forms in one page)."""
    pk = team.job.pk
    response = htmx_get(pf.client_for(), fragment.format(pk=pk), f"http://testserver/jobs/{pk}?tab=logs")
    assert response.status_code == 200 and "Location" not in response
    assert response["HX-Redirect"] == f"/accounts/login/?next=/jobs/{pk}%3Ftab%3Dlogs"
    assert b"<form" not in response.content


def test_next_is_only_the_path_of_the_current_url(team):
    # HX-Current-URL is the client's word: another host in it must not become an off-site next=.
    response = htmx_get(pf.client_for(), "/jobs/counts", "https://evil.example/phish")
    assert response["HX-Redirect"] == "/accounts/login/?next=/phish"
    assert htmx_get(pf.client_for(), "/jobs/counts", "")["HX-Redirect"] == "/accounts/login/"


def test_plain_requests_other_redirects_and_the_api_are_untouched(team):
    anonymous = pf.client_for()
    page = anonymous.get(f"/jobs/{team.job.pk}")
    assert page.status_code == 302 and page["Location"] == f"/accounts/login/?next=/jobs/{team.job.pk}"
    api = anonymous.get("/api/v1/jobs", HTTP_HX_REQUEST="true")
    assert api.status_code == 401 and "HX-Redirect" not in api
    # A signed-in htmx request redirected elsewhere (Post/Redirect/Get of a saved form) keeps its 302.
    saved = pf.client_for(team.users["member"]).post("/account/notifications", {"email": ""}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 302 and saved["Location"] == "/account/notifications" and "HX-Redirect" not in saved


@pytest.fixture
def alice(db):
    from django.contrib.auth import get_user_model
    from django.core.cache import cache

    cache.clear()  # the sign-in rate limit's counters
    return get_user_model().objects.create_user("alice-auth", password=PASSWORD)


@pytest.mark.parametrize(("next_url", "lands"), [("/accounts/logout/", "/"), ("/accounts/login/", "/"),
                                                 ("/accounts/logout/?x=1", "/"), ("/sweeps/", "/sweeps/")])
def test_a_sign_in_never_lands_on_the_sign_out_or_sign_in_page(alice, client, next_url, lands):
    """QA: next=/accounts/logout/ landed a fresh sign-in on the Sign out button."""
    response = client.post("/accounts/login/", {"username": "alice-auth", "password": PASSWORD, "next": next_url})
    assert response.status_code == 302 and response["Location"] == lands


def test_signing_out_clears_the_browser_cache_of_the_origin(alice, client):
    """Chromium then evicts the back/forward cache: Back shows no private page (in Chromium:
    tests/test_browser_job_page.py)."""
    client.force_login(alice)
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Clear-Site-Data"] == '"cache"'
    assert "Clear-Site-Data" not in client.get("/accounts/login/")


def test_no_polling_get_includes_a_whole_form_with_its_csrf_token():
    """QA: the list's poll included #bulk-form, so every poll was GET /jobs/rows?…&csrfmiddlewaretoken=<token>,
    the token in URLs and the access log. An hx-get may include named inputs, never a form."""
    offenders = []
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        for tag in re.finditer(r"<[a-z][^>]*\bhx-get=[^>]*>", text, flags=re.S):
            included = re.search(r'hx-include="([^"]*)"', tag.group(0))
            if included and not all("[name=" in part for part in included.group(1).split(",")):
                offenders.append(f"{template.relative_to(TEMPLATES)}: {included.group(0)}")
            # A form that sends itself by GET sends its token too.
            if tag.group(0).startswith("<form") and "csrf" in text[tag.end():text.find("</form>", tag.end())]:
                offenders.append(f"{template.relative_to(TEMPLATES)}: a GET form with a CSRF token")
    assert offenders == []
