"""jobs.priority: changing a queued quota job's priority (DLC UpdateJob) from the job page and the API.

Unit tests of the checks use the team of tests.portal_fixtures, whose workspaces point at a port nothing listens
on: a check that lets a call through reaches DLC and fails for real (connection refused). The integration test
queues real jobs behind a blocker on a private localdlc with room for one job.
"""

from __future__ import annotations

import json

import pytest
from alibabacloud_pai_dlc20201203 import models as sdk

from tests import portal_fixtures as pf
from tests.support.waiting import wait_for
from tests.support.wizard import credentials_file

QUOTA = {"ResourceId": "quota-gen", "JobSpecs": [{"Type": "Worker", "Image": "registry.example/pytorch:2.3",
                                                  "PodCount": 1, "ResourceConfig": {"CPU": "1", "Memory": "1Gi"}}]}
HTMX = {"HTTP_HX_REQUEST": "true"}


def quota_job(team, owner="member", status="Queuing", name="queued-q", dlc_job_id=None, **body):
    """A job of Alpha on a resource quota, as a sync leaves it (no DLC call)."""
    from jobs.models import Job

    return Job.objects.create(workspace=team.alpha, owner=team.users[owner], display_name=name, status=status,
                              job_type="PyTorchJob", dlc_job_id=f"dlc-{name}" if dlc_job_id is None else dlc_job_id,
                              body={**pf.BODY, **QUOTA, "DisplayName": name, **body})


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


# -- the checks --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 9, "5", " 7 "])
def test_a_whole_number_from_1_to_9_is_a_priority(value):
    from jobs import priority

    assert priority.parse(value) == int(str(value).strip())


@pytest.mark.parametrize("value", [0, 10, -1, "10", "", "high", "５", "²", None, True, 5.0, "5.0", [5], {"p": 5}])
def test_anything_else_is_refused_with_the_range(value):
    from jobs import catalog, priority

    with pytest.raises(priority.PriorityError) as err:
        priority.parse(value)
    assert err.value.kind == "invalid" and "from 1 (lowest) to 9 (highest)" in err.value.message
    assert (priority.LOW, priority.HIGH) == catalog.PRIORITY_RANGE, "one source of truth for the range"


@pytest.mark.parametrize("value", ["7", " 7 ", 5.0, True])
def test_a_json_value_is_a_priority_only_as_an_integer(value):
    from jobs import priority

    assert priority.parse(7, typed=True) == 7
    with pytest.raises(priority.PriorityError):
        priority.parse(value, typed=True)


def test_who_may_change_it_is_who_may_stop_it(team):
    from jobs import apitokens, priority

    job = quota_job(team)
    assert priority.refusal(team.users["member"], job) is None, "the owner"
    assert priority.refusal(team.users["admin"], job) is None, "a workspace admin"
    for role in ("viewer", "other"):
        assert priority.refusal(team.users[role], job).kind == "forbidden", role
    someone_elses = quota_job(team, owner="admin", name="admins-q")
    assert priority.refusal(team.users["member"], someone_elses).kind == "forbidden", "a member, not the owner"
    _, raw = apitokens.create_token(team.users["admin"], "ro", read_only=True)
    problem = priority.refusal(apitokens.user_for_token(raw), job)
    assert problem.kind == "forbidden" and "read-only" in problem.message


@pytest.mark.parametrize("status", ["Submitting", "EnvPreparing", "Running", "Stopping", "Succeeded", "Failed"])
def test_only_a_job_waiting_in_the_queue_can_change(team, status):
    from jobs import priority

    job = quota_job(team, status=status, dlc_job_id="" if status == "Submitting" else None)
    problem = priority.refusal(team.users["member"], job)
    assert problem.kind == "conflict" and "waits in the quota's queue" in problem.message, status
    assert problem.http_status == 409


def test_creating_and_queuing_jobs_can_change_but_a_job_not_on_a_quota_cannot(team):
    from jobs import priority

    for status in ("Creating", "Queuing"):
        assert priority.may_change(team.users["member"], quota_job(team, status=status, name=f"q-{status}"))
    public = pf.make_job(team.alpha, team.users["member"], "public-q", status="Queuing")
    problem = priority.refusal(team.users["member"], public)
    assert problem.kind == "conflict" and "resource quota" in problem.message
    assert priority.control(team.users["member"], public) is None, "no priority row for a public job"


def test_a_refused_value_or_job_never_reaches_dlc_and_changes_nothing(team):
    from jobs import priority
    from jobs.models import AuditEvent

    running = quota_job(team, status="Running", name="running-q")
    for user, job, value, kind in [(team.users["member"], quota_job(team), 12, "invalid"),
                                   (team.users["viewer"], quota_job(team, name="v-q"), 12, "forbidden"),
                                   (team.users["member"], running, 5, "conflict")]:
        with pytest.raises(priority.PriorityError) as err:
            priority.change_priority(user, job, value)
        assert err.value.kind == kind
        job.refresh_from_db()
        assert "Priority" not in job.body
    assert not AuditEvent.objects.filter(action=AuditEvent.CHANGED).exists()


def test_dlc_unreachable_is_a_message_and_nothing_is_stored(team, settings, tmp_path):
    """Real failure: the team's endpoint refuses connections (signed with a key nobody checks)."""
    from types import SimpleNamespace

    from jobs import priority
    from jobs.models import AuditEvent

    key = SimpleNamespace(access_key_id="LTAIunused", access_key_secret="unused")
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(key, tmp_path))
    job = quota_job(team, Priority=4)
    with pytest.raises(priority.PriorityError) as err:
        priority.change_priority(team.users["member"], job, 8)
    assert err.value.kind == "dlc" and err.value.http_status == 502
    assert err.value.message.startswith("The priority was not changed: ") and "cannot be reached" in err.value.message
    job.refresh_from_db()
    assert job.body["Priority"] == 4
    assert not AuditEvent.objects.filter(action=AuditEvent.CHANGED).exists()


# -- the page and the API, refusals (no DLC needed) ---------------------------------------------------------


def test_the_page_offers_the_form_to_the_owner_and_shows_the_value_to_everyone_else(team):
    job = quota_job(team, Priority=3)
    owner = pf.client_for(team.users["member"]).get(f"/jobs/{job.pk}").text
    assert 'name="priority"' in owner and '<option value="3" selected>' in owner
    assert f'hx-post="/jobs/{job.pk}/priority"' in owner
    viewer = pf.client_for(team.users["viewer"]).get(f"/jobs/{job.pk}").text
    assert 'name="priority"' not in viewer and '<span id="priority-value">3</span>' in viewer
    unset = quota_job(team, name="unset-q")
    page = pf.client_for(team.users["viewer"]).get(f"/jobs/{unset.pk}").text
    assert '<span id="priority-value">1</span>' in page and "(DLC's default)" in page
    running = quota_job(team, status="Running", name="running-q", Priority=3)
    page = pf.client_for(team.users["member"]).get(f"/jobs/{running.pk}").text
    assert 'name="priority"' not in page and '<span id="priority-value">3</span>' in page
    assert page.count("<dt>Priority</dt>") == 1


def test_a_refusal_is_shown_in_place_with_htmx_and_as_a_message_without(team):
    running = quota_job(team, status="Running", name="running-q")
    client = pf.client_for(team.users["member"])
    answer = client.post(f"/jobs/{running.pk}/priority", {"priority": "5"}, **HTMX)
    assert answer.status_code == 200 and 'id="job-priority"' in answer.text
    assert 'id="priority-error"' in answer.text and "The job is Running" in answer.text
    answer = client.post(f"/jobs/{running.pk}/priority", {"priority": "zero"}, follow=True)
    assert answer.redirect_chain[-1][0] == f"/jobs/{running.pk}"
    assert "Priority must be a whole number from 1" in answer.text, "the value first, then the job's state"
    queued = quota_job(team)
    answer = client.post(f"/jobs/{queued.pk}/priority", {"priority": "zero"}, **HTMX)
    assert "Priority must be a whole number from 1" in answer.text and 'name="priority"' in answer.text
    assert pf.client_for(team.users["viewer"]).post(f"/jobs/{queued.pk}/priority", {"priority": "5"}).status_code \
        == 403


def patch(raw, path, payload):
    return pf.client_for().patch(path, data=json.dumps(payload), content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_the_api_refuses_bad_bodies_at_the_field_and_read_only_tokens(team):
    from jobs import apitokens

    job = quota_job(team)
    _, writer = apitokens.create_token(team.users["member"], "rw")
    _, reader = apitokens.create_token(team.users["member"], "ro", read_only=True)
    answer = patch(writer, f"/api/v1/jobs/{job.pk}", {"priority": 12})
    assert answer.status_code == 400 and "from 1 (lowest)" in answer.json()["errors"]["priority"][0]
    # An unknown key is said at its path, as every body of the API says it (QA: it was said at "", keyless).
    answer = patch(writer, f"/api/v1/jobs/{job.pk}", {"priority": 5, "DisplayName": "x"})
    assert answer.status_code == 400 and answer.json()["errors"] == {
        "DisplayName": ["Unknown field; the fields are: priority."]}
    answer = patch(writer, f"/api/v1/jobs/{job.pk}", {"Priority": 5})
    assert answer.status_code == 400 and answer.json()["errors"] == {
        "Priority": ["Unknown field; the fields are: priority."],
        "priority": ['Send {"priority": <1-9>}: priority is the one field that can be changed.']}
    answer = patch(writer, f"/api/v1/jobs/{job.pk}", [5])
    assert answer.status_code == 400 and "priority is the one field" in answer.json()["errors"][""][0]
    answer = pf.client_for().patch(f"/api/v1/jobs/{job.pk}", data="{", content_type="application/json",
                                   HTTP_AUTHORIZATION=f"Bearer {writer}")
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["errors"][""][0]
    answer = patch(reader, f"/api/v1/jobs/{job.pk}", {"priority": 5})
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    running = quota_job(team, status="Running", name="running-q")
    answer = patch(writer, f"/api/v1/jobs/{running.pk}", {"priority": 5})
    assert answer.status_code == 409 and "The job is Running" in answer.json()["errors"]["priority"][0]
    # QA: -1 on a running job answered 409; "7" was taken and 5.0 not. JSON takes integers only, as a CreateJob
    # body's Priority, and a value that can never be right is a 400 whatever the job's state.
    for value in (-1, "7", 5.0, "5"):
        answer = patch(writer, f"/api/v1/jobs/{running.pk}", {"priority": value})
        assert answer.status_code == 400 and "whole number" in answer.json()["errors"]["priority"][0], value
    answer = patch(writer, f"/api/v1/jobs/{job.pk}", {"priority": "7"})
    assert answer.status_code == 400, "a waiting job too: text is not a JSON integer"
    body = {**pf.BODY, "DisplayName": "text-priority", **QUOTA, "Priority": "7"}
    created = pf.client_for().post(f"/api/v1/jobs?workspace={team.alpha.pk}", data=json.dumps(body),
                                   content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {writer}")
    assert created.status_code == 400 and "Priority" in created.json()["errors"], "the same rule at create"


def test_the_openapi_document_describes_the_patch():
    from jobs import api_jobs

    doc = api_jobs.openapi_document("http://x")
    patch_doc = doc["paths"]["/api/v1/jobs/{id}"]["patch"]
    schema = patch_doc["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["priority"] == {"type": "integer", "minimum": 1, "maximum": 9,
                                                "description": "1 lowest, 9 highest."}
    assert {"200", "400", "403", "409", "502"} <= set(patch_doc["responses"])
    assert doc["info"]["version"] == "1.16.0"


# -- against a real localdlc ---------------------------------------------------------------------------------


@pytest.fixture(name="queue")
def fixture_queue(db, localdlc_factory, settings, tmp_path):
    """A workspace on a private localdlc with room for one 1-core job: the rest queue behind it."""
    from tests.test_lifecycle import make_workspace

    backend = localdlc_factory(cpu=1, creating_seconds=0.05, env_preparing_seconds=0.05)
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(backend, tmp_path, "priority.ini"))
    return backend, make_workspace(backend.endpoint)


def submitted(ws, owner, name: str, command: str):
    """A quota job saved as the wizard does and submitted to localdlc by the real lifecycle code."""
    from jobs import lifecycle
    from jobs.models import Job
    from tests.test_lifecycle import job_body

    body = job_body(command, name, **QUOTA)
    job = Job.objects.create(workspace=ws, owner=owner, display_name=name, job_type=body["JobType"], body=body)
    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    return job


@pytest.mark.integration
def test_raising_a_queued_jobs_priority_makes_it_start_first(queue, tmp_path):
    from jobs import apitokens, lifecycle, priority
    from jobs.api_jobs import clone_body
    from jobs.models import AuditEvent, Job
    from tests.test_lifecycle import make_user

    backend, ws = queue
    client = backend.client()
    alice, vic = make_user(ws, "alice"), make_user(ws, "vic", role="viewer")
    blocker = submitted(ws, alice, "blocker", "sleep 60")
    backend.wait_for_status(blocker.dlc_job_id, ["Running"])
    order = tmp_path / "order.txt"  # one job runs at a time: the lines are the order they started in
    first = submitted(ws, alice, "first", f"echo first >> {order}")
    second = submitted(ws, alice, "second", f"echo second >> {order}")
    for job in (first, second):
        backend.wait_for_status(job.dlc_job_id, ["Queuing"])
    wait_for(lambda: lifecycle.sync_active(ws) is not None and
             set(Job.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == {"Queuing"})
    for job in (blocker, first, second):
        job.refresh_from_db()

    # A viewer is refused, on the page and in the function; a running job is refused with a message.
    assert pf.client_for(vic).post(f"/jobs/{second.pk}/priority", {"priority": "9"}).status_code == 403
    with pytest.raises(priority.PriorityError) as err:
        priority.change_priority(vic, second, 9)
    assert err.value.kind == "forbidden"
    with pytest.raises(priority.PriorityError) as err:
        priority.change_priority(alice, blocker, 9)
    assert err.value.kind == "conflict" and "The job is Running" in err.value.message
    assert client.get_job(blocker.dlc_job_id, sdk.GetJobRequest()).body.priority == 1

    # The owner raises the later job's priority from the page (htmx): the answer says so in place.
    answer = pf.client_for(alice).post(f"/jobs/{second.pk}/priority", {"priority": "9"}, **HTMX)
    assert answer.status_code == 200 and "Priority changed from 1 to 9." in answer.text
    assert '<option value="9" selected>' in answer.text
    assert client.get_job(second.dlc_job_id, sdk.GetJobRequest()).body.priority == 9
    second.refresh_from_db()
    assert second.body["Priority"] == 9 and clone_body(second)[0]["Priority"] == 9, "a clone starts from it"
    event = AuditEvent.objects.get(action=AuditEvent.CHANGED, job=second)
    assert event.actor == alice and event.details["event"] == "priority"
    assert event.details["changes"] == {"priority": {"from": 1, "to": 9}}

    # The API: a read-write token changes the first job (still below the second), a read-only one may not.
    _, writer = apitokens.create_token(alice, "rw")
    _, reader = apitokens.create_token(alice, "ro", read_only=True)
    answer = patch(reader, f"/api/v1/jobs/{first.pk}", {"priority": 2})
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    assert client.get_job(first.dlc_job_id, sdk.GetJobRequest()).body.priority == 1
    answer = patch(writer, f"/api/v1/jobs/{first.pk}", {"priority": 2})
    assert answer.status_code == 200 and answer.json()["body"]["Priority"] == 2
    assert client.get_job(first.dlc_job_id, sdk.GetJobRequest()).body.priority == 2
    event = AuditEvent.objects.get(action=AuditEvent.CHANGED, job=first)
    assert event.details["api_token"]["name"] == "rw"

    # DLC failing, or applying the change but losing the answer: the user is told, the row keeps what it knew.
    backend.set_faults({"action": "UpdateJob", "mode": "503", "count": 1})
    with pytest.raises(priority.PriorityError) as err:
        priority.change_priority(alice, first, 3)
    assert err.value.kind == "dlc" and "DLC is busy or failing" in err.value.message
    backend.set_faults({"action": "UpdateJob", "mode": "lost_response", "count": 1})
    with pytest.raises(priority.PriorityError) as err:
        priority.change_priority(alice, first, 3)
    assert "may or may not have changed. Try again" in err.value.message
    first.refresh_from_db()
    assert first.body["Priority"] == 2
    assert priority.change_priority(alice, first, 3) == priority.Change(2, 3), "trying again is safe"
    assert client.get_job(first.dlc_job_id, sdk.GetJobRequest()).body.priority == 3

    # The blocker goes: the second job, created later but now higher, starts before the first.
    client.stop_job(blocker.dlc_job_id)
    for job in (first, second):
        assert backend.wait_for_status(job.dlc_job_id, timeout=30).status == "Succeeded"
    assert order.read_text().split() == ["second", "first"]
