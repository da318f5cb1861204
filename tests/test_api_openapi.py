"""The OpenAPI document describes exactly what the API answers: every operation is called through Django's test
client and each answer checked against the document's schema for its status (tests/support/openapi_check):
no undocumented status or field, no missing required one, types, nullability and enums respected."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Job, Membership, PodLog, WorkspaceCost
from tests import portal_fixtures as pf
from tests.support import openapi_check


@pytest.fixture
def doc(db):
    return pf.client_for().get("/api/v1/openapi.json").json()


class Calls:
    """Sends requests and collects what the document does not describe of their answers."""

    def __init__(self, doc):
        self.doc, self.found, self.seen = doc, [], set()

    def check(self, method: str, path: str, response, status: int):
        assert response.status_code == status, (method, path, response.status_code, response.content[:300])
        self.seen.add(id(openapi_check.operation(self.doc, method, path)))
        self.found += openapi_check.response_problems(self.doc, method, path, response)
        return response


def _ran(team, name, *, hours=2.0, **fields):
    started = datetime.now(UTC) - timedelta(hours=hours + 1)
    return pf.make_job(team.alpha, team.users["member"], name, status="Succeeded", started_at=started,
                       submitted_at=started, finished_at=started + timedelta(hours=hours), **fields)


def test_the_walker_fails_on_what_the_schema_does_not_allow(doc):
    job = doc["components"]["schemas"]["Job"]
    problems = openapi_check.problems
    assert problems(doc, {"type": "integer"}, True) and problems(doc, {"type": "number"}, "1")
    assert problems(doc, {"type": "string", "enum": ["a"]}, "b") and problems(doc, {"type": "string"}, None)
    assert not problems(doc, {"type": "string", "nullable": True, "enum": ["a"]}, None)
    assert problems(doc, {"type": "object", "properties": {"a": {"type": "integer"}}}, {"b": 1}), "undocumented"
    assert problems(doc, {"type": "object", "required": ["a"], "properties": {"a": {}}}, {}), "missing"
    assert problems(doc, {"type": "string", "format": "date-time"}, "2026-01-01T00:00:00"), "no offset"
    assert problems(doc, {"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1), "two oneOf options fit"
    assert problems(doc, {"$ref": "#/components/schemas/Job"}, {"id": 1}) and job["required"]


def test_every_operation_answers_as_documented(team, api, doc):
    """One or a few calls per operation and status; the answer of each must fit the document exactly."""
    calls, member, viewer = Calls(doc), api["member"], api["viewer"]
    job = team.job
    now = datetime.now(UTC)
    Job.objects.filter(pk=job.pk).update(sub_status="Running", started_at=now, submitted_at=now, idle_since=now,
                                         idle_detail={"metric": "CPU", "value": 0.4, "threshold_percent": 5,
                                                      "window_minutes": 30, "cores": 2, "text": "CPU 0.4% of 2 cores"})
    _ran(team, "ended", imported=True, submit_error={"Code": "X", "Message": "m"})
    WorkspaceCost.objects.create(workspace=team.alpha, gpu_hour_price="10", cpu_core_hour_price="1",
                                 instance_prices={"ecs.g6.large": "2.5"}, monthly_budget="100")
    team.alpha.refresh_from_db()
    calls.check("GET", "/api/v1/workspaces", member.get("/api/v1/workspaces"), 200)
    calls.check("GET", "/api/v1/workspaces", pf.client_for().get("/api/v1/workspaces"), 401)
    calls.check("GET", "/api/v1/jobs", viewer.get("/api/v1/jobs", size=10), 200)
    calls.check("GET", "/api/v1/jobs", viewer.get("/api/v1/jobs", status="Nope"), 400)
    calls.check("GET", "/api/v1/jobs", viewer.get("/api/v1/jobs", q="x" * 257), 400)
    calls.check("GET", "/api/v1/jobs", viewer.get("/api/v1/jobs", workspace=team.beta.pk), 404)
    created = calls.check("POST", "/api/v1/jobs", member.post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                                                              {**pf.BODY, "DisplayName": "made"}), 201)
    calls.check("POST", "/api/v1/jobs", member.post(f"/api/v1/jobs?workspace={team.alpha.pk}", {"JobType": 1}), 400)
    calls.check("POST", "/api/v1/jobs", viewer.post(f"/api/v1/jobs?workspace={team.alpha.pk}", pf.BODY), 403)
    form = member.client.post(f"/api/v1/jobs?workspace={team.alpha.pk}", {"DisplayName": "x"},
                              HTTP_AUTHORIZATION=f"Bearer {member.token}")
    calls.check("POST", "/api/v1/jobs", form, 415)
    # Two workspaces and no ?workspace=: the 400 lists the candidates.
    Membership.objects.create(user=team.users["member"], workspace=team.beta, role=Membership.MEMBER)
    calls.check("POST", "/api/v1/jobs", member.post("/api/v1/jobs", {**pf.BODY, "DisplayName": "which"}), 400)
    one = f"/api/v1/jobs/{job.pk}"
    detail = calls.check("GET", one, viewer.get(one), 200).json()
    assert detail["cost"] and detail["idle"], "a priced job the idle policy flagged: their fields are checked too"
    calls.check("GET", one, viewer.get("/api/v1/jobs/999999"), 404)
    patch = member.client.patch(one, '{"priority": 3}', content_type="application/json",
                                HTTP_AUTHORIZATION=f"Bearer {member.token}")
    calls.check("PATCH", one, patch, 409)
    calls.check("POST", f"{one}/stop", viewer.post(f"{one}/stop"), 403)
    calls.check("POST", f"{one}/stop", member.post(f"{one}/stop"), 202)
    clone = f"/api/v1/jobs/{created.json()['id']}/clone"
    calls.check("POST", clone, member.post(clone, {"changes": {"DisplayName": "copy"}}), 201)
    calls.check("POST", clone, member.post(clone, {"nope": 1}), 400)
    validate = f"/api/v1/jobs/validate?workspace={team.alpha.pk}"
    calls.check("POST", validate, viewer.post(validate, pf.BODY), 200)
    calls.check("POST", validate, viewer.post(validate, {"JobType": 1}), 400)
    session = pf.client_for(team.users["viewer"], enforce_csrf_checks=True)
    calls.check("POST", validate, session.post(validate, pf.BODY, content_type="application/json"), 403)
    notes = f"{one}/notes"
    calls.check("POST", notes, member.post(notes, {"text": "a note"}), 201)
    calls.check("POST", notes, member.post(notes, {"text": ""}), 400)
    calls.check("GET", notes, viewer.get(notes), 200)
    ended = _ran(team, "archived", pods=[{"PodId": "archived-worker-0", "Type": "Worker", "Status": "Succeeded",
                                          "GmtStartTime": "2026-03-01T10:00:00Z"}])
    PodLog.objects.create(job=ended, pod_id="archived-worker-0", content=zlib.compress(b"a\nb"), lines=2)
    pods, events = f"/api/v1/jobs/{ended.pk}/pods", f"{one}/events"
    calls.check("GET", pods, viewer.get(pods), 200)
    calls.check("GET", pods, viewer.get(f"/api/v1/jobs/{team.other_job.pk}/pods"), 404)
    for log in (f"{pods}/archived-worker-0/log", f"{pods}/archived-worker-0/log.txt"):
        calls.check("GET", log, viewer.get(log), 200)
        calls.check("GET", log, viewer.get(log.replace("archived-worker-0", "nope")), 404)
        running = log.replace(pods, f"{one}/pods").replace("archived-worker-0", "train-a-worker-0")
        calls.check("GET", log, viewer.get(running), 502)  # the team's DLC endpoint is a closed port
    calls.check("GET", f"{pods}/archived-worker-0/log", viewer.get(f"{pods}/archived-worker-0/log", since="x"), 400)
    waiting = pf.make_job(team.alpha, team.users["member"], "waiting", status="Submitting", dlc_job_id="")
    calls.check("GET", events, viewer.get(f"/api/v1/jobs/{waiting.pk}/events"), 200)
    calls.check("GET", events, viewer.get(events), 502)
    calls.check("GET", events, viewer.get(f"/api/v1/jobs/{team.other_job.pk}/events"), 404)
    sweeps = f"/api/v1/sweeps?workspace={team.alpha.pk}"
    sweep = calls.check("POST", sweeps, member.post(sweeps, {
        "Job": {**pf.BODY, "DisplayName": "grid"}, "Parameters": {"LR": ["0.1", "0.01"]},
        "EarlyStopping": {"Metric": "loss"}}), 201).json()
    calls.check("POST", sweeps, member.post(sweeps, {"Job": pf.BODY}), 400)
    calls.check("GET", sweeps, viewer.get(sweeps), 200)
    calls.check("GET", sweeps, member.get("/api/v1/sweeps"), 200)  # all the caller's workspaces
    calls.check("GET", sweeps, viewer.get("/api/v1/sweeps", after="x"), 400)
    one_sweep = f"/api/v1/sweeps/{sweep['id']}"
    calls.check("GET", one_sweep, viewer.get(one_sweep), 200)
    calls.check("GET", one_sweep, viewer.get(one_sweep, rank="loss"), 400)  # no trial has it
    calls.check("POST", f"{one_sweep}/stop", member.post(f"{one_sweep}/stop"), 202)
    usage = f"/api/v1/workspaces/{team.alpha.pk}/usage"
    report = calls.check("GET", usage, viewer.get(usage), 200).json()
    assert report["budget"] and report["top_jobs"][0]["cost"], "the cost fields are checked, not only their nulls"
    calls.check("GET", usage, viewer.get(usage, days=5), 400)
    schedules = f"/api/v1/schedules?workspace={team.alpha.pk}"
    schedule = calls.check("POST", schedules, member.post(schedules, {
        "name": "nightly", "recurrence": {"kind": "daily", "at": "02:00"}, "job": pf.BODY}), 201).json()
    calls.check("POST", schedules, member.post(schedules, {"name": "x"}), 400)
    calls.check("GET", schedules, viewer.get(schedules), 200)
    calls.check("GET", schedules, member.get("/api/v1/schedules"), 200)  # all the caller's workspaces
    url = f"/api/v1/schedules/{schedule['id']}"
    calls.check("GET", url, viewer.get(url), 200)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {member.token}"}
    calls.check("PATCH", url, member.client.patch(url, '{"enabled": false}', content_type="application/json",
                                                  **auth), 200)
    edit = '{"name": "weekly", "recurrence": {"kind": "weekly", "weekdays": ["mon"], "at": "03:00"}}'
    calls.check("PATCH", url, member.client.patch(url, edit, content_type="application/json", **auth), 200)
    calls.check("PATCH", url, member.client.patch(url, '{"recurrence": {"kind": "cron"}}',
                                                  content_type="application/json", **auth), 400)
    configured = json.dumps({"job": {**pf.BODY, "UserCommand": "echo new", "SecretEnvs": {"HF_TOKEN": "t0ken"}}})
    changed = calls.check("PATCH", url, member.client.patch(url, configured, content_type="application/json",
                                                            **auth), 200).json()
    assert changed["job"]["UserCommand"] == "echo new" and "t0ken" not in json.dumps(changed)
    refused = json.dumps({"name": "renamed", "job": {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Image": ""}]}})
    calls.check("PATCH", url, member.client.patch(url, refused, content_type="application/json", **auth), 400)
    take_over = f"{url}/take-over"
    calls.check("POST", take_over, member.post(take_over), 403)
    taken = calls.check("POST", take_over, api["admin"].post(take_over), 200).json()
    assert taken["dropped"] == ["SecretEnvs.HF_TOKEN"], "the field is checked with a value"
    calls.check("DELETE", url, member.client.delete(url, **auth), 403)  # the admin's now
    calls.check("DELETE", url, api["admin"].client.delete(url, HTTP_AUTHORIZATION=f"Bearer {api['admin'].token}"), 204)
    assert not calls.found, "\n".join(calls.found)
    # A new operation gets its call here, so that its answers are held to the document too.
    uncalled = [(method, path) for path, operations in doc["paths"].items()
                for method, operation in operations.items() if id(operation) not in calls.seen]
    assert not uncalled, uncalled


def test_a_wrong_method_and_a_too_large_body_are_documented(team, api, doc, settings):
    """The JSON 405 of a method an endpoint does not take is the shared Error; every operation with a body
    documents its 413."""
    wrong = api["member"].client.delete("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {api['member'].token}")
    assert wrong.status_code == 405
    error = openapi_check.resolve(doc, doc["components"]["responses"]["Error"])
    assert "405" in error["description"]
    assert not openapi_check.problems(doc, error["content"]["application/json"]["schema"], wrong.json())
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                assert "413" in operation["responses"], (method, path)
    # Too many invalid tokens from one address: the shared 429, documented on every authenticated operation.
    from django.core.cache import cache

    settings.API_TOKEN_MAX_FAILURES_PER_IP = 0
    cache.clear()
    try:
        refused = pf.client_for().get("/api/v1/jobs", HTTP_AUTHORIZATION="Bearer dlcc_wrong")
    finally:
        cache.clear()
    assert refused.status_code == 429 and refused["Retry-After"].isdigit()
    assert not openapi_check.response_problems(doc, "GET", "/api/v1/jobs", refused)
    assert all("429" in operation["responses"] for operations in doc["paths"].values()
               for operation in operations.values() if "401" in operation["responses"])
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    validate = f"/api/v1/jobs/validate?workspace={team.alpha.pk}"
    big = api["member"].post(validate, {**pf.BODY, "UserCommand": "x" * 200})
    assert big.status_code == 413 and not openapi_check.response_problems(doc, "POST", validate, big)


def test_the_answers_to_a_stray_parameter_a_stop_body_and_a_keyed_clone_are_documented(team, api, doc):
    """The 400 of a query parameter an operation does not take (every authenticated one), a stop's 400 and 415 for a
    body, and a clone's Idempotency-Key answers (409, 422) fit the document."""
    calls, member = Calls(doc), api["member"]
    one = f"/api/v1/jobs/{team.job.pk}"
    calls.check("GET", one, member.get(one, fields="name"), 400)
    calls.check("GET", "/api/v1/workspaces", member.get("/api/v1/workspaces", role="admin"), 400)
    calls.check("GET", f"{one}/notes", member.get(f"{one}/notes", author="x"), 400)
    calls.check("POST", f"{one}/stop", member.post(f"{one}/stop", {"reason": "x"}), 400)
    text = member.client.post(f"{one}/stop", "stop", content_type="text/plain",
                              HTTP_AUTHORIZATION=f"Bearer {member.token}")
    calls.check("POST", f"{one}/stop", text, 415)
    keyed = {"content_type": "application/json", "HTTP_AUTHORIZATION": f"Bearer {member.token}",
             "HTTP_IDEMPOTENCY_KEY": "k-1"}
    calls.check("POST", f"{one}/clone", member.client.post(f"{one}/clone", "{}", **keyed), 201)
    calls.check("POST", f"{one}/clone", member.client.post(f"{one}/clone", '{"changes": {}}', **keyed), 422)
    malformed = member.client.post(f"/api/v1/jobs?workspace={team.alpha.pk}", json.dumps(pf.BODY),
                                   **{**keyed, "HTTP_IDEMPOTENCY_KEY": "\u00e9"})
    calls.check("POST", "/api/v1/jobs", malformed, 400)
    assert not calls.found, "\n".join(calls.found)


def test_a_schedules_job_is_documented_without_the_keys_a_schedule_refuses(team, api, doc):
    """QA: a schedule's job (POST and PATCH) was documented as CreateJobBody, run_after and run_after_when included,
    which the API refuses there with a 400. The document now describes what is taken: CreateJobBody's properties
    but those, which `not` refuses (the properties are open), as the API does."""
    schemas = doc["components"]["schemas"]
    refused = {"run_after", "run_after_when"}
    assert refused <= set(schemas["CreateJobBody"]["properties"]), "POST /api/v1/jobs takes them"
    for name in ("ScheduleCreate", "SchedulePatch"):
        job = openapi_check.resolve(doc, schemas[name]["properties"]["job"])
        assert set(job["properties"]) == set(schemas["CreateJobBody"]["properties"]) - refused, name
        assert {key for option in job["not"]["anyOf"] for key in option["required"]} == refused, name
        assert "run_after and run_after_when are refused" in job["description"], name
    calls = Calls(doc)
    schedules = f"/api/v1/schedules?workspace={team.alpha.pk}"
    for key, value in (("run_after", team.job.pk), ("run_after_when", "ended")):
        answer = calls.check("POST", schedules, api["member"].post(schedules, {
            "name": f"after-{key}", "recurrence": {"kind": "daily", "at": "02:00"}, "job": {**pf.BODY, key: value}}),
            400)
        assert list(answer.json()["errors"]) == [f"job.{key}"], answer.json()
    assert not calls.found, "\n".join(calls.found)
