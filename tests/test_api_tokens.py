"""Personal API tokens: shown once, stored only as a hash, revocable, scoped (one workspace or all, read-only or
not) and expiring; and the one auth helper, api_user, whose scope jobs.access applies to every API request."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC

import pytest

from jobs import apitokens
from jobs.models import ApiToken, AuditEvent
from tests import portal_fixtures as pf
from tests import test_authz_matrix as matrix


def create_on_page(client, name="ci", **fields):
    """Post/Redirect/Get: the create answers with a redirect, and the page it leads to shows the token."""
    answer = client.post("/account/api", {"name": name, **fields})
    assert answer.status_code == 302 and answer["Location"] == "/account/api"
    page = client.get(answer["Location"])
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


def stored_session(client) -> tuple[str, dict]:
    """The client's session as the session store holds it: the raw row and what it decodes to."""
    from django.contrib.sessions.models import Session

    row = Session.objects.get(session_key=client.cookies["sessionid"].value)
    return row.session_data, row.get_decoded()


def test_a_create_redirects_and_the_next_get_alone_shows_the_token(team, caplog):
    import logging

    from jobs.portal import NEW_TOKEN_SESSION_KEY

    client = pf.client_for(team.users["member"])
    with caplog.at_level(logging.DEBUG):
        answer = client.post("/account/api", {"name": "ci"})
        assert answer.status_code == 302 and answer["Location"] == "/account/api"
        # Between the create and the GET the session carries the token, sealed: its row is in the database.
        row, decoded = stored_session(client)
        assert NEW_TOKEN_SESSION_KEY in decoded
        page = client.get("/account/api")
    raw = re.search(r'id="token-value">(dlcc_[A-Za-z0-9_-]+)<', page.text).group(1)
    assert page.text.count(raw) == 1 and 'data-copy="#token-value"' in page.text
    assert raw not in row and raw not in str(decoded), "the session store never holds the token in the clear"
    assert raw not in caplog.text
    assert NEW_TOKEN_SESSION_KEY not in stored_session(client)[1], "shown once, then gone from the session"

    # Reloading the page (F5 on the GET the redirect led to) shows no token and creates none.
    again = client.get("/account/api")
    assert again.status_code == 200 and raw not in again.text and 'id="token-value"' not in again.text
    assert ApiToken.objects.count() == 1
    assert AuditEvent.objects.filter(action="token", details__event="created").count() == 1
    assert raw not in str(list(ApiToken.objects.values())) + str(list(AuditEvent.objects.values()))


def test_a_form_error_is_shown_in_place_and_leaves_nothing_to_show_later(team):
    from jobs.portal import NEW_TOKEN_SESSION_KEY

    client = pf.client_for(team.users["member"])
    page = client.post("/account/api", {"name": "", "expiry": "30"})
    assert page.status_code == 200 and field_errors(page.text, "name")
    assert NEW_TOKEN_SESSION_KEY not in client.session
    assert 'id="token-value"' not in client.get("/account/api").text and not ApiToken.objects.exists()


def test_a_token_sealed_under_another_key_is_not_shown_nor_a_500(team):
    # A session written under another secret-box key (a rotated key, a copied session) shows nothing.
    from cryptography.fernet import Fernet

    from jobs.portal import NEW_TOKEN_SESSION_KEY

    client = pf.client_for(team.users["member"])
    session = client.session
    session[NEW_TOKEN_SESSION_KEY] = Fernet(Fernet.generate_key()).encrypt(b'{"token": "dlcc_forged"}').decode()
    session.save()
    page = client.get("/account/api")
    assert page.status_code == 200 and "dlcc_forged" not in page.text and 'id="token-value"' not in page.text


def test_bearer_token_authenticates_and_updates_last_used(team):
    client = pf.client_for(team.users["member"])
    raw, _ = create_on_page(client)
    anonymous = pf.client_for()
    answer = anonymous.get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert answer.status_code == 200
    assert answer.json()["workspaces"] == [{"id": team.alpha.pk, "name": "Alpha", "role": "member",
                                           "effective_role": "member", "read_only": False,
                                           "region": "cn-hangzhou", "dlc_workspace_id": "alpha", "policy": {}}]
    assert ApiToken.objects.get().last_used_at is not None


NOT_BEARER = "The Authorization header is not a bearer token: use `Authorization: Bearer <token>`"


@pytest.mark.parametrize(("header", "said"), [
    ("Bearer dlcc_wrong", "This API token is not valid"), ("Bearer not-even-ours", "This API token is not valid"),
    (None, "Authentication required"), ("Bearer ", NOT_BEARER), ("Basic bWVtYmVyOnB3", NOT_BEARER),
    ("Token dlcc_abc", NOT_BEARER), ("dlcc_abc", NOT_BEARER)])
def test_bad_credentials_get_401_and_a_wrong_token_hears_it_is_not_valid(team, header, said):
    answer = pf.client_for().get("/api/v1/jobs", **({"HTTP_AUTHORIZATION": header} if header else {}))
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert answer.json()["error"].startswith(said), answer.json()
    assert "dlcc_abc" not in answer.text, "the header is not echoed: it may be a bare token"
    assert ('error="invalid_token"' in answer["WWW-Authenticate"]) == (said.startswith("This API token")), \
        "no token was tried: RFC 6750 gives no error code to a request without one"


def test_a_header_of_another_scheme_is_told_to_use_bearer_and_not_counted(team, fresh_limits):
    """QA: `Authorization: Token abc` heard only "Authentication required", which it had tried to give."""
    client = pf.client_for()
    answers = [client.get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Token abc{n}") for n in range(25)]
    assert {a.status_code for a in answers} == {401}, "not a guessed token: not counted towards the 429"
    assert answers[-1].json() == {"error": NOT_BEARER + " with a token from /account/api (or sign in)."}


@pytest.fixture
def fresh_limits():
    from django.core.cache import cache

    cache.clear()  # the limiter's counters are kept by client IP, the same for every test
    yield
    cache.clear()


def test_wrong_tokens_from_one_address_are_slowed_down_but_a_valid_token_is_not(team, fresh_limits):
    """QA: 30 requests with wrong Bearer tokens all got 401, with no slowdown."""
    _, raw = apitokens.create_token(team.users["member"], "ci")
    client = pf.client_for()
    answers = [client.get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer dlcc_guess{n}") for n in range(30)]
    assert [a.status_code for a in answers] == [401] * 20 + [429] * 10
    refused = answers[-1]
    assert refused.json()["code"] == "too_many_failures"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # QA: the message said "try again in a minute" beside Retry-After: 9. One number, said in both.
    wait = refused["Retry-After"]
    assert refused.json()["error"].endswith(f"try again in {wait} second{'' if wait == '1' else 's'}."), \
        (refused.json(), wait)
    assert client.get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200, "a valid token is not"
    elsewhere = client.get("/api/v1/jobs", HTTP_AUTHORIZATION="Bearer dlcc_guess", REMOTE_ADDR="10.0.0.9")
    assert elsewhere.status_code == 401, "counted per client IP"


def test_a_bad_token_does_not_fall_back_to_the_session(team):
    # A browser session plus a wrong token is judged by the token.
    answer = pf.client_for(team.users["member"]).get("/api/v1/jobs", HTTP_AUTHORIZATION="Bearer dlcc_wrong")
    assert answer.status_code == 401


def test_revoked_tokens_and_inactive_users_are_refused(team):
    client = pf.client_for(team.users["member"])
    raw, _ = create_on_page(client)
    token = ApiToken.objects.get()
    assert client.post(f"/account/api/tokens/{token.pk}/revoke").status_code == 302
    revoked = pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert revoked.status_code == 401 and revoked.json()["code"] == "token_revoked"
    assert revoked.json()["error"] == "This API token was revoked: create a new one on /account/api."
    assert 'error_description="The token was revoked"' in revoked["WWW-Authenticate"]
    unknown = pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw[:-2]}xx")
    assert unknown.status_code == 401 and "code" not in unknown.json(), "an unknown token is not called revoked"
    _, raw2 = apitokens.create_token(team.users["viewer"], "other")
    team.users["viewer"].is_active = False
    team.users["viewer"].save()
    inactive = pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {raw2}")
    assert inactive.status_code == 401
    assert inactive.json() == unknown.json(), "a deactivated user's token says no more than an unknown one"


def test_revoking_twice_records_one_event_and_keeps_the_first_time(both):
    def revoked_events():
        return list(AuditEvent.objects.filter(action="token", details__event="revoked"))

    member = both.users["member"]
    client = pf.client_for(member)
    token, raw = apitokens.create_token(member, "ci")  # all workspaces: one event in each of Alpha and Beta
    url = f"/account/api/tokens/{token.pk}/revoke"
    first = client.post(url, follow=True)
    assert first.status_code == 200 and "Token ci revoked." in first.text
    events = revoked_events()
    assert sorted(e.workspace.name for e in events) == ["Alpha", "Beta"]
    revoked_at = ApiToken.objects.get().revoked_at
    assert revoked_at is not None

    again = client.post(url, follow=True)
    assert revoked_events() == events, "a second revoke is no event"
    assert again.status_code == 200 and "Token ci was already revoked." in again.text
    assert ApiToken.objects.get().revoked_at == revoked_at
    assert call(raw, "GET", "/api/v1/jobs").status_code == 401
    assert apitokens.revoke(member, token.pk) == (token, False)
    assert revoked_events() == events


def test_nobody_revokes_someone_elses_token(team):
    token, raw = apitokens.create_token(team.users["admin"], "admin's")
    answer = pf.client_for(team.users["member"]).post(f"/account/api/tokens/{token.pk}/revoke")
    assert answer.status_code == 404, "another user's token id is as unknown as one that does not exist"
    assert pf.client_for(team.users["member"]).post("/account/api/tokens/999999/revoke").status_code == 404
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


# --- scopes: one workspace, read-only, expiry ------------------------------------------------------------------
#
# The team's Alpha users join Beta with the same role, so every 404 below comes from the token's scope, not from a
# missing membership; each test also shows the unscoped token (or the session) of the same user getting through.


@pytest.fixture
def both(team):
    from jobs.models import Membership

    for role in ("viewer", "member", "admin"):
        Membership.objects.create(user=team.users[role], workspace=team.beta, role=role)
    team.beta_job = pf.make_job(team.beta, team.users["member"], "beta-mine")
    return team


def call(raw: str, method: str, path: str, body=None, client=None):
    import json

    client = client or pf.client_for()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    if method == "GET":
        return client.get(path, **auth)
    return client.post(path, json.dumps(body if body is not None else {}), content_type="application/json", **auth)


def new_body(name: str) -> dict:
    return {**pf.BODY, "DisplayName": name}


# What each role's Alpha-scoped token may do in Alpha (its role's rights) and in Beta (nothing: 404).
ROLE_IN_ALPHA = {"viewer": {"create": 403, "stop": 403}, "member": {"create": 201, "stop": 202},
                 "admin": {"create": 201, "stop": 202}}


@pytest.mark.parametrize("role", ["viewer", "member", "admin"])
def test_a_token_scoped_to_one_workspace_sees_and_acts_there_only(both, role):
    from jobs.models import Job

    t = both
    user = t.users[role]
    _, raw = apitokens.create_token(user, "alpha only", workspace=t.alpha)
    _, everywhere = apitokens.create_token(user, "all")
    alpha_ids = {t.job.pk, t.admin_job.pk}

    assert [w["name"] for w in call(raw, "GET", "/api/v1/workspaces").json()["workspaces"]] == ["Alpha"]
    assert {j["id"] for j in call(raw, "GET", "/api/v1/jobs").json()["jobs"]} == alpha_ids
    assert {j["id"] for j in call(everywhere, "GET", "/api/v1/jobs").json()["jobs"]} == \
        alpha_ids | {t.other_job.pk, t.beta_job.pk}, "the same user's unscoped token sees Beta"
    assert call(raw, "GET", f"/api/v1/jobs?workspace={t.alpha.pk}").status_code == 200
    assert call(raw, "GET", f"/api/v1/jobs?workspace={t.beta.pk}").status_code == 404
    assert call(raw, "GET", f"/api/v1/jobs/{t.job.pk}").status_code == 200
    for job in (t.beta_job, t.other_job):
        assert call(raw, "GET", f"/api/v1/jobs/{job.pk}").status_code == 404
        assert call(raw, "POST", f"/api/v1/jobs/{job.pk}/stop").status_code == 404
        assert call(raw, "POST", f"/api/v1/jobs/{job.pk}/clone").status_code == 404
    assert call(everywhere, "GET", f"/api/v1/jobs/{t.beta_job.pk}").status_code == 200
    assert call(raw, "POST", f"/api/v1/jobs?workspace={t.beta.pk}", new_body("into-beta")).status_code == 404
    assert call(raw, "POST", f"/api/v1/jobs/validate?workspace={t.beta.pk}", new_body("v")).status_code == 404
    assert not Job.objects.filter(workspace=t.beta).exclude(pk__in=[t.other_job.pk, t.beta_job.pk]).exists()
    assert Job.objects.get(pk=t.beta_job.pk).status == "Running"

    expected = ROLE_IN_ALPHA[role]
    created = call(raw, "POST", f"/api/v1/jobs?workspace={t.alpha.pk}", new_body("in-alpha"))
    assert created.status_code == expected["create"], created.content
    # Without ?workspace the token's one workspace is the caller's only one, as for a member of one workspace.
    implicit = call(raw, "POST", "/api/v1/jobs", new_body("implicit"))
    assert implicit.status_code == expected["create"], implicit.content
    if expected["create"] == 201:
        assert implicit.json()["workspace"]["id"] == t.alpha.pk
    assert call(raw, "POST", f"/api/v1/jobs/{t.job.pk}/stop").status_code == expected["stop"]


@pytest.mark.parametrize("superuser", [False, True])
def test_every_answer_of_the_permission_helper_honours_the_scope(both, superuser):
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    from jobs import access

    t = both
    user = t.users["admin"]
    if superuser:
        user.is_superuser = True
        user.save()
    _, raw = apitokens.create_token(user, "alpha ro", workspace=t.alpha, read_only=True)
    scoped = apitokens.user_for_token(raw)
    assert access.scope_of(scoped) == access.TokenScope(workspace_id=t.alpha.pk, read_only=True)
    assert access.scope_of(user) is None, "the scope is on the token's user only"
    assert list(access.workspaces_for(scoped)) == [t.alpha]
    assert set(access.jobs_for(scoped)) == {t.job, t.admin_job}
    assert access.role_in(scoped, t.beta) is None and access.role_in(scoped, t.alpha) == "admin"
    assert not access.can(scoped, "view", workspace=t.beta) and access.can(scoped, "view", workspace=t.alpha)
    assert not access.jobs_in(scoped, t.beta).exists() and access.jobs_in(scoped, t.alpha).count() == 2
    for action in ("create", "clone", "stop", "manage"):
        assert not access.can(scoped, action, workspace=t.alpha, job=t.job), action
        assert access.can(user, action, workspace=t.beta, job=t.beta_job), action
        with pytest.raises(PermissionDenied, match="read-only"):
            access.require(scoped, action, workspace=t.alpha, job=t.job)
    assert access.get_template(scoped, t.template.pk) == t.template
    for lookup, pk in ((access.get_template, t.other_template.pk), (access.get_job, t.beta_job.pk),
                       (access.get_workspace, t.beta.pk)):
        with pytest.raises(Http404):
            lookup(scoped, pk)
        assert lookup(user, pk).pk == pk, "the same user's session reaches it"


def workspace_rows(raw: str | None, client=None) -> dict[str, dict]:
    answer = call(raw, "GET", "/api/v1/workspaces", client=client) if raw else client.get("/api/v1/workspaces")
    assert answer.status_code == 200, answer.content
    return {w["name"]: {k: w[k] for k in ("role", "effective_role", "read_only")} for w in answer.json()["workspaces"]}


@pytest.mark.parametrize("role", ["viewer", "member", "admin"])
def test_the_workspace_list_says_what_the_token_may_do(both, role):
    user = both.users[role]
    _, reader = apitokens.create_token(user, "ro", read_only=True)
    _, writer = apitokens.create_token(user, "rw")
    _, alpha_reader = apitokens.create_token(user, "alpha ro", workspace=both.alpha, read_only=True)
    as_viewer = {"role": role, "effective_role": "viewer", "read_only": True}
    as_role = {"role": role, "effective_role": role, "read_only": False}

    assert workspace_rows(reader) == {"Alpha": as_viewer, "Beta": as_viewer}
    assert workspace_rows(writer) == {"Alpha": as_role, "Beta": as_role}
    assert workspace_rows(alpha_reader) == {"Alpha": as_viewer}
    assert workspace_rows(None, client=pf.client_for(user)) == {"Alpha": as_role, "Beta": as_role}, "a session"
    # What the list says is what the API does: a read-only token's create is refused, a read-write one's is not
    # (for a member or an admin).
    create = f"/api/v1/jobs?workspace={both.alpha.pk}"
    assert call(reader, "POST", create, new_body("ro")).status_code == 403
    assert call(writer, "POST", create, new_body("rw")).status_code == (403 if role == "viewer" else 201)


def test_the_openapi_document_describes_the_workspace_list(db):
    answer = pf.client_for().get("/api/v1/openapi.json")
    document = answer.json()
    ref = document["paths"]["/api/v1/workspaces"]["get"]["responses"]["200"]["content"]["application/json"]
    name = ref["schema"]["$ref"].rsplit("/", 1)[1]
    row = document["components"]["schemas"][name]["properties"]["workspaces"]["items"]["properties"]
    assert {"id", "name", "role", "effective_role", "read_only", "region", "dlc_workspace_id", "policy"} <= set(row)


def test_a_scoped_token_of_a_superuser_is_scoped_too(both):
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", password=None)
    _, raw = apitokens.create_token(root, "alpha", workspace=both.alpha)
    assert [w["name"] for w in call(raw, "GET", "/api/v1/workspaces").json()["workspaces"]] == ["Alpha"]
    assert call(raw, "GET", f"/api/v1/jobs/{both.other_job.pk}").status_code == 404


def test_the_token_not_the_session_decides_when_both_are_sent(both):
    member = both.users["member"]
    session = pf.client_for(member)
    _, raw = apitokens.create_token(member, "alpha", workspace=both.alpha, read_only=True)
    assert session.get(f"/api/v1/jobs/{both.beta_job.pk}").status_code == 200, "the session alone sees Beta"
    assert call(raw, "GET", f"/api/v1/jobs/{both.beta_job.pk}", client=session).status_code == 404
    assert call(raw, "POST", f"/api/v1/jobs?workspace={both.alpha.pk}", new_body("x"), client=session).status_code \
        == 403


def test_sessions_are_unaffected_by_the_users_scoped_tokens(both):
    import json

    member = both.users["member"]
    apitokens.create_token(member, "ro", workspace=both.alpha, read_only=True)
    session = pf.client_for(member)
    assert {j["id"] for j in session.get("/api/v1/jobs").json()["jobs"]} == \
        {both.job.pk, both.admin_job.pk, both.other_job.pk, both.beta_job.pk}
    answer = session.post(f"/api/v1/jobs?workspace={both.beta.pk}", json.dumps(new_body("by-session")),
                          content_type="application/json")
    assert answer.status_code == 201
    assert session.get(f"/jobs/{both.beta_job.pk}").status_code == 200


@pytest.mark.parametrize("role", ["member", "admin"])
def test_a_read_only_token_reads_but_every_unsafe_call_is_refused(both, role):
    from jobs.models import AuditEvent, Job

    t = both
    _, raw = apitokens.create_token(t.users[role], "ro", read_only=True)
    _, writer = apitokens.create_token(t.users[role], "rw")
    for path in ("/api/v1/workspaces", "/api/v1/jobs", f"/api/v1/jobs?workspace={t.beta.pk}",
                 f"/api/v1/jobs/{t.job.pk}", f"/api/v1/jobs/{t.beta_job.pk}"):
        assert call(raw, "GET", path).status_code == 200, path
    assert call(raw, "POST", f"/api/v1/jobs/validate?workspace={t.alpha.pk}", new_body("dry")).status_code == 200

    jobs_before, events_before = Job.objects.count(), AuditEvent.objects.count()
    unsafe = [("POST", f"/api/v1/jobs?workspace={t.alpha.pk}", new_body("ro-create")),
              ("POST", "/api/v1/jobs?workspace=" + str(t.beta.pk), new_body("ro-create-b")),
              ("POST", f"/api/v1/jobs/{t.job.pk}/stop", None),
              ("POST", f"/api/v1/jobs/{t.beta_job.pk}/stop", None),
              ("POST", f"/api/v1/jobs/{t.job.pk}/clone", {}),
              ("POST", f"/api/v1/jobs/{t.beta_job.pk}/clone", {})]
    for method, path, body in unsafe:
        answer = call(raw, method, path, body)
        assert answer.status_code == 403, (path, answer.content)
        assert "read-only" in answer.json()["error"], answer.json()
    assert (Job.objects.count(), AuditEvent.objects.count()) == (jobs_before, events_before)
    assert Job.objects.get(pk=t.job.pk).status == "Running"
    # The same user's read-write token may do each of them: the 403s above come from the scope.
    codes = [call(writer, method, path, body).status_code for method, path, body in unsafe]
    assert codes == [201, 201, 202, 202, 201, 201]


def test_an_expired_token_gets_a_401_that_says_so(team):
    from datetime import timedelta

    from django.utils import timezone

    client = pf.client_for(team.users["member"])
    raw, _ = create_on_page(client, "week", expiry="7")
    token = ApiToken.objects.get()
    assert timedelta(days=7) - timedelta(minutes=5) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert call(raw, "GET", "/api/v1/jobs").status_code == 200
    used = ApiToken.objects.get().last_used_at

    # The clock "moves" by putting the token's expiry in the past through the ORM.
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1),
                                                last_used_at=used - timedelta(hours=1))
    answer = call(raw, "GET", "/api/v1/jobs")
    assert answer.status_code == 401
    assert "expired" in answer.json()["error"] and answer.json()["code"] == "token_expired"
    # The time as every API timestamp: ISO 8601 with its offset, in the message and as a field of its own.
    expired_at = ApiToken.objects.get().expires_at.astimezone(UTC).isoformat(timespec="seconds")
    assert answer.json()["expires_at"] == expired_at and f"expired at {expired_at}:" in answer.json()["error"]
    assert 'error="invalid_token"' in answer["WWW-Authenticate"]
    assert ApiToken.objects.get().last_used_at == used - timedelta(hours=1), "a refused call is no use"
    assert call(raw, "POST", f"/api/v1/jobs?workspace={team.alpha.pk}", new_body("late")).status_code == 401
    listed = client.get("/account/api").text
    assert re.search(rf'id="token-{token.pk}">.*?\(expired\).*?expired</td>', listed, re.S)
    # A revoked (or unknown) token is not told it expired: only the token's owner learns that.
    client.post(f"/account/api/tokens/{token.pk}/revoke")
    assert "expired" not in call(raw, "GET", "/api/v1/jobs").json()["error"]


def test_the_page_offers_90_days_by_default_and_a_name_only_post_gets_them(team):
    from datetime import timedelta

    from django.utils import timezone

    client = pf.client_for(team.users["member"])
    form = client.get("/account/api").text
    assert re.search(r'<option value="90" selected>', form)
    create_on_page(client)
    left = ApiToken.objects.get().expires_at - timezone.now()
    assert timedelta(days=89, hours=23) < left <= timedelta(days=90)
    client.post("/account/api", {"name": "forever", "expiry": "never"})
    assert ApiToken.objects.get(name="forever").expires_at is None


def test_the_account_page_lists_scope_expiry_and_last_use(both):
    client = pf.client_for(both.users["member"])
    raw, _ = create_on_page(client, "ci-ro", workspace=both.alpha.pk, read_only="on", expiry="30")
    token = ApiToken.objects.get()
    assert (token.workspace, token.read_only) == (both.alpha, True)
    row = re.search(rf'<tr id="token-{token.pk}">(.*?)</tr>', client.get("/account/api").text, re.S).group(1)
    assert "Alpha" in row and "read-only" in row
    assert f'{token.expires_at:%Y-%m-%d}' in row and "expired" not in row
    assert row.count("never") == 1, "last used: never"
    call(raw, "GET", "/api/v1/jobs")
    row = re.search(rf'<tr id="token-{token.pk}">(.*?)</tr>', client.get("/account/api").text, re.S).group(1)
    assert "never" not in row and f"{ApiToken.objects.get().last_used_at:%Y-%m-%d %H:%M}" in row
    client.post("/account/api", {"name": "all-rw", "expiry": "never"})
    row = re.search(r'<tr id="token-\d+">(.*?)</tr>', client.get("/account/api").text, re.S).group(1)
    assert "all my workspaces" in row and "read-write" in row and row.count("never") == 2


def field_errors(page: str, name: str) -> list[str]:
    block = re.search(rf'<div class="field invalid" id="field-{name}">(.*?)\n</div>', page, re.S)
    return re.findall(r'<div class="error">(.*?)</div>', block.group(1)) if block else []


@pytest.mark.parametrize(("data", "field"), [
    ({"name": "x", "workspace": "BETA"}, "workspace"),  # a workspace the member is not in
    ({"name": "x", "workspace": "abc"}, "workspace"),
    ({"name": "x", "workspace": "9" * 30}, "workspace"),
    ({"name": "x", "workspace": "-1"}, "workspace"),
    ({"name": "x", "expiry": "12"}, "expiry"),
    ({"name": "", "expiry": "30"}, "name"),
])
def test_the_creation_form_reports_bad_input_at_the_field(team, data, field):
    data = {k: (str(team.beta.pk) if v == "BETA" else v) for k, v in data.items()}
    page = pf.client_for(team.users["member"]).post("/account/api", data)
    assert page.status_code == 200
    assert field_errors(page.text, field), page.text
    assert 'id="token-value"' not in page.text and not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(action="token").exists()


def test_creating_a_token_audits_its_scope_never_the_token(both, caplog):
    import logging

    client = pf.client_for(both.users["admin"])
    with caplog.at_level(logging.DEBUG):
        raw, _ = create_on_page(client, "deploy", workspace=both.beta.pk, read_only="on", expiry="365")
        call(raw, "GET", "/api/v1/jobs")
        client.post("/account/api", {"name": "everything", "expiry": "never"})
    token = ApiToken.objects.get(name="deploy")
    scoped = AuditEvent.objects.filter(action="token", details__name="deploy")
    assert [e.workspace for e in scoped] == [both.beta], "a token of Beta is Beta's admins' business only"
    assert scoped.get().details == {"event": "created", "name": "deploy", "prefix": token.prefix,
                                    "scope": "workspace Beta", "read_only": True,
                                    "expires_at": token.expires_at.isoformat()}
    wide = AuditEvent.objects.filter(action="token", details__name="everything")
    assert {e.workspace for e in wide} == {both.alpha, both.beta}
    assert {(e.details["scope"], e.details["read_only"], e.details["expires_at"]) for e in wide} == \
        {("all workspaces", False, "never")}
    assert raw not in str(list(AuditEvent.objects.values())) and raw not in str(list(ApiToken.objects.values()))
    assert raw not in caplog.text


def test_tokens_from_before_scopes_keep_reaching_everything_read_write_forever(both):
    import importlib

    # A row as it was before the migration: only the old columns set, the new ones at the migration's defaults.
    migration = importlib.import_module("jobs.migrations.0008_api_token_scope").Migration
    defaults = {op.name: (op.field.null, op.field.default) for op in migration.operations}
    assert defaults["workspace"][0] and defaults["expires_at"][0] and defaults["read_only"][1] is False
    raw = apitokens.TOKEN_PREFIX + "old-token-from-before-scopes-0123456789abcde"
    ApiToken.objects.create(user=both.users["member"], name="old", prefix=raw[:12], token_hash=apitokens.digest(raw))
    old = ApiToken.objects.get()
    assert (old.workspace, old.read_only, old.expires_at) == (None, False, None)
    assert call(raw, "GET", f"/api/v1/jobs/{both.beta_job.pk}").status_code == 200
    assert call(raw, "POST", f"/api/v1/jobs?workspace={both.beta.pk}", new_body("old-ok")).status_code == 201


# --- the URL walk: every URL of the console with a scoped token ------------------------------------------------
#
# The cases and expectations are tests/test_authz_matrix.py's, so a URL added there is walked here too, and a URL
# added without an entry fails test_every_url_has_an_entry. Two scoped tokens stand in for two matrix roles:
# - Alpha's admin, also admin of Beta, with a token scoped to Beta, must answer like "other" (admin of Beta only,
#   nothing in Alpha), including the search of every answer for Alpha's data;
# - Alpha's admin with a read-only token must answer like "viewer", and every 403 must say the token is read-only.
# Outside /api/ a token authenticates nothing: every other URL answers the token like an anonymous caller.

API_CASES = [(route, i) for route, cases in matrix.MATRIX.items() if route.startswith("api/")
             for i in range(len(cases))]
PAGE_CASES = [(route, i) for route, cases in matrix.MATRIX.items() if not route.startswith("api/")
              for i in range(len(cases))]


def test_the_walk_covers_every_api_url():
    api_routes = {route for route in matrix.console_routes() if route.startswith("api/")}
    assert api_routes and api_routes <= {route for route, _ in API_CASES}


def run_case(team, case, client, raw):
    import json

    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    if case.data is not None:
        data = case.data(team)
        kwargs.update({"data": json.dumps(data), "content_type": "application/json"} if case.json else {"data": data})
    return getattr(client, case.method.lower())(case.path(team), **kwargs)


def assert_answer(response, expected, where):
    if expected == matrix.LOGIN:
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), where
    else:
        assert response.status_code == expected, (where, response.status_code, response.content[:300])


@pytest.mark.parametrize(("route", "index"), API_CASES, ids=[f"{r}#{i}" for r, i in API_CASES])
def test_a_workspace_scoped_token_reaches_no_other_workspace(db, route, index):
    from jobs.models import Membership

    case = matrix.MATRIX[route][index]
    team = pf.make_team()
    Membership.objects.create(user=team.users["admin"], workspace=team.beta, role=Membership.ADMIN)
    _, raw = apitokens.create_token(team.users["admin"], "beta only", workspace=team.beta)
    response = run_case(team, case, pf.client_for(), raw)
    assert_answer(response, case.expect["other"], (route, "beta-scoped"))
    if case.leak_check:
        leaked = [s for s in matrix.ALPHA_SECRETS if s in response.content]
        assert not leaked, f"{route}: a token scoped to Beta shows Alpha data: {leaked}"
    if case.check:
        case.check(team, "other", response)


@pytest.mark.parametrize(("route", "index"), API_CASES, ids=[f"{r}#{i}" for r, i in API_CASES])
def test_a_read_only_token_does_what_a_viewer_may_do(db, route, index):
    case = matrix.MATRIX[route][index]
    team = pf.make_team()
    _, raw = apitokens.create_token(team.users["admin"], "read only", read_only=True)
    response = run_case(team, case, pf.client_for(), raw)
    own = case.read_only is not None  # the viewer may because they own it: a read-only token never may
    assert_answer(response, case.read_only if own else case.expect["viewer"], (route, "read-only"))
    if response.status_code == 403:
        assert "read-only" in response.json()["error"]
    if case.check:
        case.check(team, "read-only" if own else "viewer", response)


@pytest.mark.parametrize(("route", "index"), PAGE_CASES, ids=[f"{r or '/'}#{i}" for r, i in PAGE_CASES])
def test_outside_the_api_a_token_is_no_sign_in(db, route, index):
    case = matrix.MATRIX[route][index]
    team = pf.make_team()
    _, raw = apitokens.create_token(team.users["admin"], "all")
    response = run_case(team, case, pf.client_for(), raw)
    assert_answer(response, case.expect["anon"], (route, "token only"))


def test_the_dry_run_uses_the_tokens_workspace_not_the_sessions(both):
    from jobs.models import WorkspacePolicy

    # Beta's guardrail refuses the body, so the answer tells which workspace's rules the dry run applied.
    WorkspacePolicy.objects.create(workspace=both.beta, allowed_image_prefixes=["registry.beta/"])
    member = both.users["member"]
    session = pf.client_for(member)
    assert session.post("/workspace", {"workspace": both.beta.pk}).status_code == 302
    in_beta = session.post(f"/api/v1/jobs/validate?workspace={both.beta.pk}", new_body("v"),
                           content_type="application/json")
    assert in_beta.status_code == 400 and "registry.beta/" in str(in_beta.json()["errors"])
    # As for a create, the session's chosen workspace does not pick one: two of them are candidates.
    unsaid = session.post("/api/v1/jobs/validate", new_body("v"), content_type="application/json")
    assert unsaid.status_code == 400 and len(unsaid.json()["candidates"]) == 2
    _, raw = apitokens.create_token(member, "alpha", workspace=both.alpha)
    assert call(raw, "POST", "/api/v1/jobs/validate", new_body("v"), client=session).status_code == 200


@pytest.mark.integration
def test_what_a_token_does_through_the_api_is_audited_with_the_tokens_name(stack, member, workspace):
    """Over real HTTP against the running stack: a job created and stopped with a token; the audit log names
    the token (name and prefix) on both events, and its page says so, never showing the token."""
    import requests

    from jobs.models import Membership
    from tests.conftest import PASSWORD

    Membership.objects.filter(user=member, workspace=workspace).update(role="admin")  # the audit page is theirs
    token, raw = apitokens.create_token(member, "ci-bot", workspace=workspace)
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {raw}"
    body = {"DisplayName": "via-token", "JobType": "PyTorchJob", "UserCommand": "sleep 30",
            "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/team/train:1.0", "PodCount": 1,
                          "EcsSpec": "ecs.g6.large"}]}
    created = api.post(f"{stack.url}/api/v1/jobs", params={"workspace": workspace.pk}, json=body, timeout=30)
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    stopped = api.post(f"{stack.url}/api/v1/jobs/{job_id}/stop", timeout=30)
    assert stopped.status_code == 202 and stopped.json()["result"] in ("stopping", "stopped"), stopped.text

    events = list(AuditEvent.objects.filter(job_id=job_id).order_by("id"))
    assert [(e.action, e.actor_name) for e in events] == [("created", member.username), ("stopped", member.username)]
    assert [e.details["api_token"] for e in events] == [{"name": "ci-bot", "prefix": token.prefix}] * 2
    assert raw not in str([e.details for e in events])

    web = requests.Session()
    web.headers["Referer"] = f"{stack.url}/"
    login = web.get(f"{stack.url}/accounts/login/", timeout=30).text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login).group(1)
    signed_in = web.post(f"{stack.url}/accounts/login/", timeout=30,
                         data={"username": member.username, "password": PASSWORD, "csrfmiddlewaretoken": csrf})
    assert signed_in.url == f"{stack.url}/", "sign-in failed"
    page = web.get(f"{stack.url}/workspaces/{workspace.pk}/audit", params={"job": job_id}, timeout=30)
    assert page.status_code == 200
    assert page.text.count(f'<div class="muted via">via API token ci-bot ({token.prefix}…)</div>') == 2
    assert raw not in page.text
