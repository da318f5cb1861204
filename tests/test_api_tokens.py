"""Personal API tokens: shown once, stored only as a hash, revocable; and the one auth helper, api_user."""

from __future__ import annotations

import hashlib
import re

import pytest

from jobs import apitokens
from jobs.models import ApiToken, AuditEvent
from tests import portal_fixtures as pf


@pytest.fixture
def team(db):
    return pf.make_team()


def create_on_page(client, name="ci"):
    page = client.post("/account/api", {"name": name})
    assert page.status_code == 200
    match = re.search(r'id="token-value">(dlcc_[A-Za-z0-9_-]+)<', page.text)
    assert match, "the new token is shown on the page"
    return match.group(1), page


def test_token_is_shown_once_and_stored_as_its_sha256(team):
    client = pf.client_for(team.users["member"])
    raw, page = create_on_page(client)
    assert page["Cache-Control"].startswith("max-age=0") or "no-cache" in page["Cache-Control"]
    token = ApiToken.objects.get(user=team.users["member"])
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(ApiToken.objects.values().get()), "the plaintext is in no column"
    again = client.get("/account/api")
    assert raw not in again.text and token.prefix in again.text
    assert AuditEvent.objects.filter(action="token", details__event="created").exists()


def test_bearer_token_authenticates_and_updates_last_used(team):
    client = pf.client_for(team.users["member"])
    raw, _ = create_on_page(client)
    anonymous = pf.client_for()
    answer = anonymous.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert answer.status_code == 200
    assert answer.json()["workspaces"] == [{"id": team.alpha.pk, "name": "Alpha", "role": "member",
                                           "region": "cn-hangzhou", "dlc_workspace_id": "alpha", "policy": {}}]
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.parametrize("header", ["Bearer dlcc_wrong", "Bearer ", "Basic bWVtYmVyOnB3", "Bearer not-even-ours"])
def test_bad_credentials_get_401(team, header):
    answer = pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=header)
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_a_bad_token_does_not_fall_back_to_the_session(team):
    # A browser session plus a wrong token is judged by the token.
    answer = pf.client_for(team.users["member"]).get("/api/v1/jobs", HTTP_AUTHORIZATION="Bearer dlcc_wrong")
    assert answer.status_code == 401


def test_revoked_tokens_and_inactive_users_are_refused(team):
    client = pf.client_for(team.users["member"])
    raw, _ = create_on_page(client)
    token = ApiToken.objects.get()
    assert client.post(f"/account/api/tokens/{token.pk}/revoke").status_code == 302
    assert pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    _, raw2 = apitokens.create_token(team.users["viewer"], "other")
    team.users["viewer"].is_active = False
    team.users["viewer"].save()
    assert pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw2}").status_code == 401


def test_nobody_revokes_someone_elses_token(team):
    token, raw = apitokens.create_token(team.users["admin"], "admin's")
    answer = pf.client_for(team.users["member"]).post(f"/account/api/tokens/{token.pk}/revoke")
    assert answer.status_code == 403
    assert pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


def test_token_requests_skip_csrf_but_session_requests_do_not(team):
    import json

    _, raw = apitokens.create_token(team.users["member"], "ci")
    strict = pf.client_for(team.users["member"], enforce_csrf_checks=True)
    body = json.dumps(pf.BODY)
    session = strict.post(f"/api/v1/jobs?workspace={team.alpha.pk}", body, content_type="application/json")
    assert session.status_code == 403 and "CSRF" in session.json()["error"]
    tokened = pf.client_for(enforce_csrf_checks=True).post(
        f"/api/v1/jobs?workspace={team.alpha.pk}", body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert tokened.status_code == 201
    strict.get("/account/api")  # sets the CSRF cookie, as a page load does
    cookie = strict.cookies["csrftoken"].value
    with_header = strict.post(f"/api/v1/jobs?workspace={team.alpha.pk}", json.dumps({**pf.BODY, "DisplayName": "s"}),
                              content_type="application/json", HTTP_X_CSRFTOKEN=cookie)
    assert with_header.status_code == 201
