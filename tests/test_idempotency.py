"""jobs.idempotency: the Idempotency-Key of the API's creates (jobs, sweeps, schedules), through Django's test client
with real tokens; concurrent requests with one key in threads on their own database connections."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import idempotency
from jobs.models import ApiIdempotencyKey, Job, Schedule, Sweep
from tests import portal_fixtures as pf
from tests.support.api import Api
from tests.support.threads import all_at_once


def post(api: Api, url: str, payload, key: str | None = "abc-123"):
    data = payload if isinstance(payload, str) else json.dumps(payload)
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return api.client.post(url, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api.token}",
                           **headers)


def body(name="keyed", **changes):
    return {**pf.BODY, "DisplayName": name, **changes}


def jobs_url(team) -> str:
    return f"/api/v1/jobs?workspace={team.alpha.pk}"


# --- jobs ----------------------------------------------------------------------------------------------------


def test_a_retry_with_the_same_key_and_body_creates_nothing_and_answers_the_same(team, api):
    before = Job.objects.count()
    first = post(api["member"], jobs_url(team), body())
    assert first.status_code == 201, first.json()
    assert "Idempotent-Replayed" not in first
    Job.objects.filter(pk=first.json()["id"]).update(status="Running")  # the worker moved on meanwhile
    again = post(api["member"], jobs_url(team), body())
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again["Location"] == first["Location"] and again.json()["id"] == first.json()["id"]
    assert again.json()["status"] == "Running", "the created job as it is now"
    assert Job.objects.count() == before + 1
    # Without a key, the same body is a new job each time, as before.
    assert post(api["member"], jobs_url(team), body(), key=None).json()["id"] != first.json()["id"]


def test_the_same_key_with_another_body_or_query_is_a_422_at_the_header(team, api):
    assert post(api["member"], jobs_url(team), body()).status_code == 201
    before = Job.objects.count()
    for answer in (post(api["member"], jobs_url(team), body("other-name")),
                   post(api["member"], jobs_url(team) + f"&template={team.template.pk}", body())):
        assert answer.status_code == 422
        assert answer.json()["code"] == "idempotency_key_reused"
        assert "another request" in answer.json()["errors"]["Idempotency-Key"][0]
    assert Job.objects.count() == before


def test_a_failed_create_is_not_recorded_so_the_fixed_request_may_use_the_key(team, api):
    bad = post(api["member"], jobs_url(team), body("bad name!"))
    assert bad.status_code == 400 and "DisplayName" in bad.json()["errors"]
    assert not ApiIdempotencyKey.objects.exists()
    viewer = post(api["viewer"], jobs_url(team), body())  # refused (403): not recorded either
    assert viewer.status_code == 403 and not ApiIdempotencyKey.objects.exists()
    fixed = post(api["member"], jobs_url(team), body())
    assert fixed.status_code == 201 and Job.objects.filter(pk=fixed.json()["id"], display_name="keyed").exists()
    row = ApiIdempotencyKey.objects.get()
    assert (row.status, row.object_id, row.location) == (201, fixed.json()["id"], fixed["Location"])
    assert row.fingerprint != "" and "keyed" not in row.fingerprint  # a hash, never the request


def test_keys_are_per_user_and_per_endpoint(team, api):
    mine = post(api["member"], jobs_url(team), body())
    admins = post(api["admin"], jobs_url(team), body())
    assert mine.status_code == admins.status_code == 201 and mine.json()["id"] != admins.json()["id"]
    schedule = {"name": "nightly", "recurrence": {"kind": "daily", "at": "02:00"}, "job": body()}
    assert post(api["member"], f"/api/v1/schedules?workspace={team.alpha.pk}", schedule).status_code == 201


@pytest.mark.parametrize("key", ["", "x" * 256, "clé", "tab\there", "nul\x00"])
def test_a_malformed_key_is_a_400_at_the_header_and_creates_nothing(team, api, key):
    before = Job.objects.count()
    answer = post(api["member"], jobs_url(team), body(), key=key)
    assert answer.status_code == 400 and answer.json()["code"] == "idempotency_key_invalid"
    assert "printable ASCII" in answer.json()["errors"]["Idempotency-Key"][0]
    assert Job.objects.count() == before


def test_a_key_of_255_printable_characters_is_taken(team, api):
    key = "".join(chr(32 + i % 95) for i in range(255))
    assert post(api["member"], jobs_url(team), body(), key=key).status_code == 201
    assert post(api["member"], jobs_url(team), body(), key=key)["Idempotent-Replayed"] == "true"


def test_a_key_older_than_24_hours_is_a_new_request_and_the_beat_prunes_it(team, api):
    from jobs import tasks

    first = post(api["member"], jobs_url(team), body())
    ApiIdempotencyKey.objects.update(created_at=timezone.now() - idempotency.KEEP - timedelta(seconds=1))
    second = post(api["member"], jobs_url(team), body("renamed"))  # not a 422: the old use has expired
    assert second.status_code == 201 and second.json()["id"] != first.json()["id"]
    assert "Idempotent-Replayed" not in second
    post(api["admin"], jobs_url(team), body())
    ApiIdempotencyKey.objects.filter(user=team.users["admin"]).update(
        created_at=timezone.now() - idempotency.KEEP - timedelta(minutes=1))
    tasks.sweep_stuck()
    assert list(ApiIdempotencyKey.objects.values_list("user__username", flat=True)) == ["member"]


def test_while_the_first_request_runs_a_retry_answers_409_in_progress(team, api, monkeypatch):
    # The claim a first request holds while it creates, as a request running in another process leaves it.
    monkeypatch.setattr(idempotency, "WAIT", 0.2)
    ApiIdempotencyKey.objects.create(user=team.users["member"], endpoint=idempotency.JOBS, key="abc-123",
                                     fingerprint=idempotency.fingerprint(_request(team, body())))
    before = Job.objects.count()
    answer = post(api["member"], jobs_url(team), body())
    assert answer.status_code == 409 and answer["Retry-After"] == "1"
    assert answer.json()["code"] == "idempotency_key_in_progress"
    assert "in progress" in answer.json()["errors"]["Idempotency-Key"][0]
    # One that never finished (its process died): said as such, never run again.
    ApiIdempotencyKey.objects.update(created_at=timezone.now() - idempotency.STALE - timedelta(seconds=1))
    stale = post(api["member"], jobs_url(team), body())
    assert stale.status_code == 409 and "never finished" in stale.json()["errors"]["Idempotency-Key"][0]
    assert Job.objects.count() == before


def _request(team, payload):
    from django.test import RequestFactory

    return RequestFactory().post(jobs_url(team), json.dumps(payload), content_type="application/json")


# --- sweeps and schedules ------------------------------------------------------------------------------------


def test_a_sweep_retried_with_its_key_is_the_same_sweep(team, api):
    url = f"/api/v1/sweeps?workspace={team.alpha.pk}"
    payload = {"Job": body("grid", UserCommand="python train.py --lr $LR"), "Parameters": {"LR": ["0.1", "0.01"]}}
    first = post(api["member"], url, payload)
    assert first.status_code == 201, first.json()
    jobs = Job.objects.count()
    again = post(api["member"], url, payload)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] and again["Location"] == first["Location"]
    assert [t["job"]["id"] for t in again.json()["trials"]] == [t["job"]["id"] for t in first.json()["trials"]]
    assert Sweep.objects.count() == 1 and Job.objects.count() == jobs


def test_a_schedule_retried_with_its_key_is_the_same_and_once_deleted_is_a_409(team, api):
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    payload = {"name": "nightly", "recurrence": {"kind": "daily", "at": "02:00"}, "job": body()}
    first = post(api["member"], url, payload)
    assert first.status_code == 201, first.json()
    again = post(api["member"], url, payload)
    assert again.status_code == 201 and again.json()["id"] == first.json()["id"], "not a 400: name taken"
    assert again["Idempotent-Replayed"] == "true" and Schedule.objects.count() == 1
    Schedule.objects.all().delete()
    gone = post(api["member"], url, payload)
    assert gone.status_code == 409 and gone.json()["code"] == "idempotency_key_target_gone"
    assert first["Location"] in gone.json()["errors"]["Idempotency-Key"][0]
    assert not Schedule.objects.exists()


def test_a_clone_retried_with_its_key_is_the_same_job(team, api):
    """QA: a clone ignored Idempotency-Key: a script retrying one after a timeout made a second copy."""
    url = f"/api/v1/jobs/{team.job.pk}/clone"
    first = post(api["member"], url, {"changes": {"UserCommand": "echo 2"}})
    assert first.status_code == 201, first.json()
    again = post(api["member"], url, {"changes": {"UserCommand": "echo 2"}})
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] and again["Location"] == first["Location"]
    assert Job.objects.filter(cloned_from=team.job).count() == 1
    other = post(api["member"], url, {"changes": {"UserCommand": "echo 3"}})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    # A key is per source job: the same key and body cloning another job is another clone.
    elsewhere = post(api["admin"], f"/api/v1/jobs/{team.admin_job.pk}/clone", {})
    assert elsewhere.status_code == 201 and post(api["admin"], f"/api/v1/jobs/{team.job.pk}/clone", {}).json()[
        "id"] != elsewhere.json()["id"]


def test_the_openapi_document_describes_the_header_on_the_three_creates(team, api):
    paths = api["viewer"].get("/api/v1/openapi.json").json()["paths"]
    for path in ("/api/v1/jobs", "/api/v1/sweeps", "/api/v1/schedules", "/api/v1/jobs/{id}/clone"):
        operation = paths[path]["post"]
        header = [p for p in operation["parameters"] if p["name"] == "Idempotency-Key"]
        assert header and header[0]["in"] == "header" and not header[0]["required"], path
        assert {"409", "422"} <= set(operation["responses"]), path


# --- concurrency ---------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_concurrent_requests_with_one_key_create_one_job(transactional_db):
    """QA: three concurrent POSTs with `Idempotency-Key: abc-123` made three jobs."""
    team = pf.make_team()
    api = Api(team.users["member"])
    # Held behind a running job, so nothing is enqueued: no broker is involved.
    payload = body("concurrent", run_after=team.job.pk)

    def post():
        return pf.client_for().post(jobs_url(team), json.dumps(payload), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {api.token}", HTTP_IDEMPOTENCY_KEY="abc-123")

    answers = all_at_once(post, timeout=60)
    created = list(Job.objects.filter(display_name="concurrent").values_list("pk", flat=True))
    assert len(created) == 1, f"{len(created)} jobs for one key"
    assert sorted(a.status_code for a in answers) in ([201, 201, 201], [201, 201, 409], [201, 409, 409])
    assert {a.json()["id"] for a in answers if a.status_code == 201} == set(created)
    assert [a.status_code for a in answers if "Idempotent-Replayed" not in a] == [201], "one created, others replayed"
