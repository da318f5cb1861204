"""The API's answers at its edges (jobs.api.JsonErrorsMiddleware): a too-large body is a JSON 413 on every operation
taking a body, HEAD works wherever GET does, OPTIONS is a JSON 405 with Allow, answers are private and not stored,
and a 204 has no content type. Through Django's test client with real tokens."""

from __future__ import annotations

import logging

import pytest

from jobs.models import Schedule
from tests import portal_fixtures as pf
from tests.support.api import Api
from tests.test_api_schedules import NIGHTLY


@pytest.fixture
def member(team):
    return Api(team.users["member"])


def _send(api: Api, method: str, url: str, body: bytes, content_type: str = "application/json"):
    return api.client.generic(method, url, body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {api.token}")


def test_a_too_large_body_is_a_json_413_on_every_operation_taking_one_without_a_traceback(team, member, settings,
                                                                                          caplog):
    """QA: a 3 MB body got Django's HTML 400 page ("Bad request") and a logged traceback everywhere but the dry run."""
    schedule = member.post(f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()["id"]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = b'{"text": "' + b"x" * 2000 + b'"}'
    job, ws = team.job.pk, team.alpha.pk
    calls = [("POST", f"/api/v1/jobs?workspace={ws}"), ("POST", f"/api/v1/jobs/validate?workspace={ws}"),
             ("POST", f"/api/v1/jobs/{job}/clone"), ("POST", f"/api/v1/jobs/{job}/notes"),
             ("POST", f"/api/v1/sweeps?workspace={ws}"), ("POST", f"/api/v1/schedules?workspace={ws}"),
             ("PATCH", f"/api/v1/jobs/{job}"), ("PATCH", f"/api/v1/schedules/{schedule}")]
    caplog.set_level(logging.INFO)
    for method, url in calls:
        answer = _send(member, method, url, big)
        assert answer.status_code == 413 and answer["Content-Type"] == "application/json", (url, answer.content[:80])
        assert answer.json() == {"errors": {"": ["The request body is too large (at most 1,000 bytes)."]}}, url
    assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"
    assert Schedule.objects.count() == 1


def test_head_works_wherever_get_does_and_options_is_a_json_405_with_allow(team, member):
    """QA: HEAD and OPTIONS answered 405 on every GET endpoint (require_GET leaves HEAD out)."""
    schedule = member.post(f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()["id"]
    ws, job = team.alpha.pk, team.job.pk
    for url in ("/api/v1/openapi.json", "/api/v1/workspaces", f"/api/v1/jobs?workspace={ws}", f"/api/v1/jobs/{job}",
                f"/api/v1/jobs/{job}/notes", f"/api/v1/sweeps?workspace={ws}", f"/api/v1/schedules?workspace={ws}",
                f"/api/v1/schedules/{schedule}", f"/api/v1/workspaces/{ws}/usage"):
        got, head = member.get(url), member.client.head(url, HTTP_AUTHORIZATION=f"Bearer {member.token}")
        assert got.status_code == head.status_code == 200, (url, head.status_code)
        assert head["Content-Type"] == "application/json" and head.content == b"", url
    options = member.client.options("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {member.token}")
    assert options.status_code == 405 and options["Allow"] == "GET, HEAD, POST"
    assert options.json() == {"error": "Method OPTIONS is not allowed here; allowed: GET, HEAD, POST."}
    assert Schedule.objects.get(pk=schedule).enabled, "a HEAD changes nothing"


def test_api_answers_are_private_and_not_stored_and_a_204_has_no_content_type(team, member):
    """QA: authenticated JSON had no Cache-Control; DELETE /api/v1/schedules/{id} answered 204 text/html."""
    for answer in (member.get("/api/v1/jobs"), member.get("/api/v1/nope"), member.post("/api/v1/jobs", "[")):
        assert answer["Cache-Control"] == "private, no-store", answer.status_code
    schedule = member.post(f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()["id"]
    gone = member.client.delete(f"/api/v1/schedules/{schedule}", HTTP_AUTHORIZATION=f"Bearer {member.token}")
    assert gone.status_code == 204 and "Content-Type" not in gone and gone.content == b""
    assert gone["Cache-Control"] == "private, no-store"
    # Pages outside /api/ keep their own headers.
    assert "private, no-store" not in pf.client_for().get("/accounts/login/").get("Cache-Control", "")
