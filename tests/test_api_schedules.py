"""The schedules API (jobs.api_schedules) through Django's test client with real tokens: create with errors at
their fields, list and get without secrets, enable/disable and delete by the owner or an admin only."""

from __future__ import annotations

import json
import re

from jobs import apitokens, schedules
from jobs.models import Schedule
from tests import portal_fixtures as pf

NIGHTLY = {"name": "nightly", "recurrence": {"kind": "weekly", "weekdays": ["mon", "thu"], "at": "02:00"},
           "job": {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "wandb-very-secret"}}}


def call(user, method: str, path: str, payload=None, **token_options):
    _, plain = apitokens.create_token(user, "t", **token_options)
    client = pf.client_for()
    kwargs = {"data": json.dumps(payload), "content_type": "application/json"} if payload is not None else {}
    return getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {plain}", **kwargs)


def test_create_list_get_without_secrets(db, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    response = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY)
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["recurrence"] == {"kind": "weekly", "every_hours": None, "at": "02:00", "weekdays": ["mon", "thu"],
                                     "cron": None}
    assert created["recurrence_text"] == "Weekly on Mon, Thu at 02:00" and created["time_zone"] == "Europe/Berlin"
    assert created["owner"] == "member" and created["enabled"] and created["skip_if_active"]
    assert created["job"]["Envs"] == {"WANDB_API_KEY": "********"} and created["next_run_at"]
    assert response["Location"].endswith(f"/api/v1/schedules/{created['id']}")
    listed = call(team.users["viewer"], "get", f"/api/v1/schedules?workspace={team.alpha.pk}")
    assert [s["name"] for s in listed.json()["schedules"]] == ["nightly"]
    one = call(team.users["viewer"], "get", f"/api/v1/schedules/{created['id']}")
    assert one.status_code == 200 and one.json()["runs"] == []
    for answer in (response, listed, one):
        assert b"wandb-very-secret" not in answer.content


def test_bad_requests_say_each_error_at_its_field(db):
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    bad = {"name": "night ly", "recurrence": {"kind": "hourly", "every_hours": 0, "when": "x"}, "extra": 1,
           "enabled": "yes", "job": {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 0}]}}
    response = call(team.users["member"], "post", url, bad)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {"name", "recurrence.every_hours", "recurrence.when", "extra", "enabled"} <= set(errors), errors
    # The job is checked once the schedule's own fields are right, as POST /api/v1/jobs checks a body.
    response = call(team.users["member"], "post", url, {**NIGHTLY, "job": bad["job"]})
    assert list(response.json()["errors"]) == ["job.JobSpecs[0].PodCount"]
    response = call(team.users["member"], "post", url, {"name": "x", "recurrence": "daily"})
    assert set(response.json()["errors"]) == {"recurrence", "job"}
    assert call(team.users["member"], "post", url, [1]).status_code == 400
    assert not Schedule.objects.exists()


def test_a_schedules_job_with_run_after_is_refused_saying_why_not_unsupported(db):
    """QA: job.run_after was refused as "Not supported by this console", which POST /api/v1/jobs contradicts."""
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    job = {**NIGHTLY["job"], "run_after": team.job.pk, "run_after_when": "succeeded"}
    response = call(team.users["member"], "post", url, {**NIGHTLY, "job": job})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert set(errors) == {"job.run_after", "job.run_after_when"}, errors
    assert errors["job.run_after"] == [
        "A schedule's job cannot run after another job: each run starts at its slot (skip_if_active skips a run "
        "while the previous one is active). Leave run_after and run_after_when out."]
    assert not Schedule.objects.exists()
    created = call(team.users["member"], "post", url, NIGHTLY).json()
    patched = call(team.users["member"], "patch", f"/api/v1/schedules/{created['id']}",
                   {"job": {**pf.BODY, "run_after": team.job.pk}})
    assert patched.status_code == 400 and list(patched.json()["errors"]) == ["job.run_after"]
    assert "cannot run after another job" in patched.json()["errors"]["job.run_after"][0]


def test_the_list_refuses_an_unknown_or_repeated_query_parameter(db):
    """QA: ?workspce=<id> was silently ignored (the caller's only workspace answered), as was a repeated one."""
    team = pf.make_team()
    typo = call(team.users["viewer"], "get", f"/api/v1/schedules?workspce={team.alpha.pk}")
    assert typo.status_code == 400
    assert typo.json()["errors"] == {"workspce": ["Unknown parameter: send after, workspace."]}
    twice = call(team.users["viewer"], "get", f"/api/v1/schedules?workspace={team.alpha.pk}&workspace=1")
    assert twice.status_code == 400 and list(twice.json()["errors"]) == ["workspace"]
    assert call(team.users["viewer"], "get", f"/api/v1/schedules?workspace={team.alpha.pk}").status_code == 200


def test_create_a_cron_schedule(db, settings):
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    settings.TIME_ZONE = "America/New_York"
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    payload = {**NIGHTLY, "recurrence": {"kind": "cron", "cron": "*/30 * * * *"}}
    response = call(team.users["member"], "post", url, payload)
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["recurrence"] == {"kind": "cron", "every_hours": None, "at": None, "weekdays": [],
                                     "cron": "*/30 * * * *"}
    assert created["recurrence_text"] == "Every 30th minute of every hour (cron */30 * * * *)"
    first = datetime.fromisoformat(created["next_run_at"])
    assert first.astimezone(ZoneInfo("America/New_York")).minute in (0, 30)
    assert timedelta(0) < first - datetime.now(first.tzinfo) <= timedelta(minutes=30)
    assert Schedule.objects.get(pk=created["id"]).cron == "*/30 * * * *"
    got = call(team.users["viewer"], "get", f"/api/v1/schedules/{created['id']}").json()
    assert got["recurrence"]["cron"] == "*/30 * * * *"


def test_bad_cron_schedules_say_the_error_at_recurrence_cron(db, settings):
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    for cron, said in (("*/5 * * * *", "at least 10 minutes apart"), ("0 24 * * *", "Bad hour"),
                       ("0 0 * * * *", "Give 5 fields"), (None, "Enter a cron expression"),
                       (15, "Enter a cron expression")):
        recurrence = {"kind": "cron"} if cron is None else {"kind": "cron", "cron": cron}
        response = call(team.users["member"], "post", url, {**NIGHTLY, "recurrence": recurrence})
        assert response.status_code == 400
        errors = response.json()["errors"]
        assert list(errors) == ["recurrence.cron"] and said in errors["recurrence.cron"][0], (cron, errors)
    assert not Schedule.objects.exists()


def test_enable_disable_and_delete_by_owner_or_admin_only(db):
    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    url = f"/api/v1/schedules/{created['id']}"
    assert call(team.users["viewer"], "patch", url, {"enabled": False}).status_code == 403
    assert call(team.users["other"], "patch", url, {"enabled": False}).status_code == 404
    answer = call(team.users["member"], "patch", url, {"enabled": False}, read_only=True)
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    refused = call(team.users["member"], "patch", url, {"enabled": "no"})
    assert refused.status_code == 400 and refused.json()["errors"] == {"enabled": ["Must be true or false."]}
    refused = call(team.users["member"], "patch", url, {"enabled": False, "job": [pf.BODY]})
    assert refused.status_code == 400 and refused.json()["errors"] == {"job": [
        "Must be a JSON object: the CreateJob body, as POST /api/v1/jobs takes it."]}
    assert Schedule.objects.get().enabled, "nothing changed"
    off = call(team.users["member"], "patch", url, {"enabled": False}).json()
    assert off["enabled"] is False and off["next_run_at"] is None
    on = call(team.users["admin"], "patch", url, {"enabled": True}).json()
    assert on["enabled"] is True and on["next_run_at"]
    assert call(team.users["viewer"], "delete", url).status_code == 403
    assert call(team.users["admin"], "delete", url).status_code == 204
    assert not Schedule.objects.exists()


def test_an_owner_made_viewer_may_disable_or_delete_the_schedule_but_not_enable_or_edit_it(db):
    from jobs.models import Membership

    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    url = f"/api/v1/schedules/{created['id']}"
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).update(role=Membership.VIEWER)
    owner = team.users["member"]
    # Anything but a disable alone needs the right to create jobs here: said, nothing changed.
    for payload in ({"name": "renamed"}, {"enabled": False, "skip_if_active": False}, {"job": pf.BODY}):
        refused = call(owner, "patch", url, payload)
        assert refused.status_code == 403, (payload, refused.content)
        assert "you may only disable or delete it" in refused.json()["error"]
    # A read-only token never may.
    answer = call(owner, "patch", url, {"enabled": False}, read_only=True)
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    assert call(owner, "delete", url, read_only=True).status_code == 403
    assert Schedule.objects.get().enabled and Schedule.objects.get().name == "nightly"
    off = call(owner, "patch", url, {"enabled": False})
    assert off.status_code == 200 and off.json()["enabled"] is False and off.json()["next_run_at"] is None
    assert call(owner, "patch", url, {"enabled": True}).status_code == 403, "enabling would only be skipped runs"
    assert Schedule.objects.get().enabled is False
    # Another viewer, who owns it not, may do neither; the owner may delete it.
    assert call(team.users["viewer"], "delete", url).status_code == 403
    assert call(owner, "delete", url).status_code == 204
    assert not Schedule.objects.exists()
    # Removed from the workspace, the owner sees it no more (404), as anyone outside it.
    again = call(team.users["admin"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    Schedule.objects.filter(pk=again["id"]).update(owner=owner)
    Membership.objects.filter(user=owner, workspace=team.alpha).delete()
    assert call(owner, "delete", f"/api/v1/schedules/{again['id']}").status_code == 404


def test_another_member_may_not_change_a_members_schedule(db):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    second = get_user_model().objects.create_user("second", password=None)
    Membership.objects.create(user=second, workspace=team.alpha, role=Membership.MEMBER)
    assert call(second, "delete", f"/api/v1/schedules/{created['id']}").status_code == 403
    assert Schedule.objects.filter(pk=created["id"]).exists()


def test_runs_show_their_jobs_and_skip_reasons(db):
    from datetime import UTC, datetime, timedelta

    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    Schedule.objects.filter(pk=created["id"]).update(next_run_at=datetime.now(UTC) - timedelta(minutes=1))
    schedules.run_due()
    run = call(team.users["viewer"], "get", f"/api/v1/schedules/{created['id']}").json()["runs"][0]
    assert run["job"] and run["job_status"] and run["skipped_reason"] is None


def test_the_openapi_document_describes_schedules(db):
    from jobs import api_jobs

    doc = api_jobs.openapi_document("http://x")
    assert doc["info"]["version"] == "1.16.0"
    assert {"get", "post"} <= set(doc["paths"]["/api/v1/schedules"])
    patch = doc["paths"]["/api/v1/schedules/{id}"]["patch"]
    assert patch["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SchedulePatch"}
    edit = doc["components"]["schemas"]["SchedulePatch"]
    assert set(edit["properties"]) == {"name", "recurrence", "skip_if_active", "enabled", "job"}
    assert edit["properties"]["job"] == {"$ref": "#/components/schemas/ScheduleJob"}  # CreateJobBody but run_after
    assert "required" not in edit["properties"]["recurrence"] and not edit["additionalProperties"]
    assert {"get", "patch", "delete"} <= set(doc["paths"]["/api/v1/schedules/{id}"])
    assert {"Schedule", "ScheduleCreate", "ScheduleList"} <= set(doc["components"]["schemas"])
    recurrence = doc["components"]["schemas"]["ScheduleCreate"]["properties"]["recurrence"]["properties"]
    assert "cron" in recurrence["kind"]["enum"] and recurrence["cron"]["maxLength"] == schedules.CRON_MAX
    weekday_kinds = recurrence["weekdays"]["items"]["oneOf"]
    assert [k["type"] for k in weekday_kinds] == ["string", "integer"] and "1 = Monday" in weekday_kinds[1][
        "description"] and "0 or 7 = Sunday" in recurrence["weekdays"]["description"]
    assert "only" in recurrence["every_hours"]["description"]


def test_a_registry_password_is_sealed_never_echoed_and_a_scoped_token_sees_no_other_workspace(db):
    from jobs import secretbox

    team = pf.make_team()
    role = {**pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bot", "Password": "registry-very-secret"}}
    job = {**pf.BODY, "JobSpecs": [role]}
    response = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}",
                    {**NIGHTLY, "job": job})
    assert response.status_code == 201, response.content
    row = Schedule.objects.get()
    sealed = secretbox.unseal(row.sealed_secrets)
    assert sealed["registry_password"] == "registry-very-secret"
    shown = call(team.users["viewer"], "get", f"/api/v1/schedules/{row.pk}")
    for where in (response.content.decode(), shown.content.decode(), json.dumps(row.body), row.sealed_secrets):
        assert "registry-very-secret" not in where
    # A token scoped to Beta: Alpha's schedule is no schedule at all, and Alpha takes no new one.
    assert call(team.users["admin"], "get", f"/api/v1/schedules/{row.pk}", workspace=team.beta).status_code == 404
    assert call(team.users["admin"], "delete", f"/api/v1/schedules/{row.pk}", workspace=team.beta).status_code == 404
    assert call(team.users["admin"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}",
                {**NIGHTLY, "name": "other"}, workspace=team.beta).status_code == 404


def test_a_huge_number_of_hours_is_a_field_error_not_a_500(db):
    team = pf.make_team()
    payload = {**NIGHTLY, "recurrence": {"kind": "hourly", "every_hours": "9" * 5000}}
    response = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", payload)
    assert response.status_code == 400 and list(response.json()["errors"]) == ["recurrence.every_hours"]


def test_listing_reads_the_runs_of_all_schedules_at_once(db):
    from datetime import UTC, datetime, timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    team = pf.make_team()
    _, plain = apitokens.create_token(team.users["viewer"], "t")
    client = pf.client_for()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"

    def add_and_run(name: str) -> None:
        created = call(team.users["member"], "post", url, {**NIGHTLY, "name": name}).json()
        Schedule.objects.filter(pk=created["id"]).update(next_run_at=datetime.now(UTC) - timedelta(minutes=1))
        schedules.run_due()

    def queries() -> tuple[int, list]:
        with CaptureQueriesContext(connection) as seen:
            answer = client.get(url, HTTP_AUTHORIZATION=f"Bearer {plain}")
        return len(seen), [len(s["runs"]) for s in answer.json()["schedules"]]

    add_and_run("first")
    queries()  # the token's first use is written down once
    one, runs = queries()
    assert runs == [1]
    for n in range(3):
        add_and_run(f"more{n}")
    many, runs = queries()
    assert runs == [1, 1, 1, 1] and many == one, "one query per schedule for its runs (N+1)"


def test_with_several_workspaces_the_job_bodys_workspace_id_picks_the_workspace(db):
    """QA: POST /api/v1/schedules with an all-workspaces token of a user in two workspaces answered 400 even
    though the job body's WorkspaceId named the DLC workspace."""
    from jobs.models import Membership

    team = pf.make_team()
    Membership.objects.create(user=team.users["member"], workspace=team.beta, role="member")
    payload = {**NIGHTLY, "job": {**NIGHTLY["job"], "WorkspaceId": "beta"}}
    response = call(team.users["member"], "post", "/api/v1/schedules", payload)
    assert response.status_code == 201, response.content
    assert Schedule.objects.get().workspace == team.beta
    unnamed = call(team.users["member"], "post", "/api/v1/schedules", NIGHTLY)
    assert unnamed.status_code == 400 and [c["name"] for c in unnamed.json()["candidates"]] == ["Alpha", "Beta"]

    # QA: the list answered 400 with candidates where GET /api/v1/jobs lists every workspace of the caller.
    in_alpha = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY)
    assert in_alpha.status_code == 201
    listed = call(team.users["member"], "get", "/api/v1/schedules")
    assert listed.status_code == 200, listed.content
    assert [s["workspace"]["name"] for s in listed.json()["schedules"]] == ["Beta", "Alpha"], "oldest first"
    only = call(team.users["member"], "get", f"/api/v1/schedules?workspace={team.alpha.pk}").json()["schedules"]
    assert [s["workspace"]["name"] for s in only] == ["Alpha"]
    scoped = call(team.users["member"], "get", "/api/v1/schedules", workspace=team.beta).json()["schedules"]
    assert [s["workspace"]["name"] for s in scoped] == ["Beta"], "a workspace token sees its workspace only"


def test_the_list_pages_by_id_with_a_next_link(db, monkeypatch):
    from jobs import api_schedules

    monkeypatch.setattr(api_schedules, "LIST_SIZE", 2)
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    made = [call(team.users["member"], "post", url, {**NIGHTLY, "name": f"s{n}"}).json()["id"] for n in range(5)]
    _, plain = apitokens.create_token(team.users["viewer"], "t")
    client, seen, pages = pf.client_for(), [], 0
    while url:
        page = client.get(url.removeprefix("http://testserver"), HTTP_AUTHORIZATION=f"Bearer {plain}").json()
        assert len(page["schedules"]) <= 2
        seen += [s["id"] for s in page["schedules"]]
        url, pages = page["next"], pages + 1
    assert seen == made and pages == 3, "every schedule once, oldest first"
    bad = client.get("/api/v1/schedules?after=0", HTTP_AUTHORIZATION=f"Bearer {plain}")
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["after"]


def test_fields_of_another_kind_and_text_numbers_are_refused_and_cron_weekday_numbers_kept(db):
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    member = team.users["member"]
    response = call(member, "post", url, {**NIGHTLY, "recurrence": {"kind": "daily", "at": "02:00",
                                                                    "cron": "* * * * *"}})
    assert response.status_code == 400
    assert response.json()["errors"] == {"recurrence.cron": ["cron is only used when kind is cron."]}
    for hours in ("6", 6.0):
        response = call(member, "post", url, {**NIGHTLY, "recurrence": {"kind": "hourly", "every_hours": hours}})
        assert response.status_code == 400 and list(response.json()["errors"]) == ["recurrence.every_hours"]
    response = call(member, "post", url, {**NIGHTLY, "recurrence": {"kind": "weekly", "at": "02:00",
                                                                    "weekdays": ["monkey"]}})
    assert response.status_code == 400 and "Not a weekday: 'monkey'" in response.json()["errors"][
        "recurrence.weekdays"][0]
    assert not Schedule.objects.exists()
    response = call(member, "post", url, {**NIGHTLY, "recurrence": {"kind": "weekly", "at": "02:00",
                                                                    "weekdays": [1, 2, 0], "every_hours": None}})
    assert response.status_code == 201, response.json()
    assert response.json()["recurrence"]["weekdays"] == ["mon", "tue", "sun"]


def test_a_name_that_differs_only_in_case_is_a_400_at_name(db):
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    assert call(team.users["member"], "post", url, NIGHTLY).status_code == 201
    twin = call(team.users["member"], "post", url, {**NIGHTLY, "name": "Nightly"})
    assert twin.status_code == 400
    assert twin.json()["errors"] == {"name": ["A schedule of this workspace is named 'nightly': names may not differ "
                                              "only in case."]}


def test_names_differing_only_in_case_posted_at_once_are_a_201_and_a_400_at_name(transactional_db):
    """QA: `Nightly` and `nightly` posted at once both passed the name check and both saved. The database refuses
    the second now (migration 0040) and the API answers as the check does: 400 at `name`, never a 500. The first
    waits at its insert for the second (a bounded chance, not a sleep). A race on PostgreSQL (production's) only:
    on SQLite the second request's token bookkeeping writes, so it waits for the first to commit before its check."""
    from tests.support.threads import second_while_first_saves

    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"

    def post(name):  # the token made before: its write would wait for the first save, and so miss the race
        _, plain = apitokens.create_token(team.users["member"], "t")
        client = pf.client_for()
        return lambda: client.post(url, data=json.dumps({**NIGHTLY, "name": name}), content_type="application/json",
                                   HTTP_AUTHORIZATION=f"Bearer {plain}")

    answers = second_while_first_saves(post("Nightly"), post("nightly"), Schedule)
    saved, refused = sorted(answers, key=lambda answer: answer.status_code)
    assert (saved.status_code, refused.status_code) == (201, 400), refused.content
    assert refused.json()["errors"] == {"name": [f"A schedule of this workspace is named '{saved.json()['name']}': "
                                                 "names may not differ only in case."]}
    assert list(Schedule.objects.filter(workspace=team.alpha).values_list("name", flat=True)) == [
        saved.json()["name"]]


def test_patch_edits_the_fields_sent_and_keeps_the_others(db, settings):
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from jobs.models import AuditEvent

    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    url = f"/api/v1/schedules/{created['id']}"
    sealed, body = Schedule.objects.values_list("sealed_secrets", "body").get()

    def patch(payload, user="member"):
        answer = call(team.users[user], "patch", url, payload)
        assert answer.status_code == 200, answer.content
        return answer.json()

    at = patch({"recurrence": {"at": "03:30"}})  # the kind and weekdays stay
    assert at["recurrence"] == {**created["recurrence"], "at": "03:30"}
    local = datetime.fromisoformat(at["next_run_at"]).astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.weekday() in (0, 3), local.hour, local.minute) == (True, 3, 30)
    assert datetime.fromisoformat(at["next_run_at"]) > datetime.now(UTC)
    renamed = patch({"name": "weekly-evals", "skip_if_active": False}, user="admin")
    assert (renamed["name"], renamed["skip_if_active"], renamed["recurrence"]) == ("weekly-evals", False,
                                                                                    at["recurrence"])
    # QA: the answer's job kept the old name's DisplayName; a run's job is named after the schedule.
    assert re.fullmatch(r"weekly-evals-\d{8}-\d{4}", renamed["job"]["DisplayName"]), renamed["job"]["DisplayName"]
    days = patch({"recurrence": {"kind": "weekly", "weekdays": [5]}})  # the same kind, sent: at stays
    assert days["recurrence"]["weekdays"] == ["fri"] and days["recurrence"]["at"] == "03:30"
    hourly = patch({"recurrence": {"kind": "hourly", "every_hours": 6}})  # a new kind: the old fields go
    assert hourly["recurrence"] == {"kind": "hourly", "every_hours": 6, "at": None, "weekdays": [], "cron": None}
    off = patch({"enabled": False, "recurrence": {"kind": "cron", "cron": "30 2 * * MON-FRI"}})
    assert off["enabled"] is False and off["next_run_at"] is None and off["recurrence"]["cron"] == "30 2 * * MON-FRI"
    on = patch({"enabled": True, "recurrence": {"cron": "0 4 * * *"}})
    assert on["enabled"] is True and on["next_run_at"] and on["recurrence_text"].endswith("(cron 0 4 * * *)")
    row = Schedule.objects.get()
    assert (row.sealed_secrets, row.body) == (sealed, {**body, "DisplayName": renamed["job"]["DisplayName"]}), \
        "the job and its secrets stay as they were, but for the name of its runs"
    assert on["job"] == renamed["job"]
    events = list(AuditEvent.objects.filter(details__event="schedule-edited").order_by("id"))
    assert len(events) == 6 and events[1].details["changes"]["name"] == {"from": "nightly", "to": "weekly-evals"}
    assert events[-1].details["changes"]["enabled"] == {"from": False, "to": True}


def test_patch_says_each_error_at_the_path_post_uses_and_changes_nothing(db, settings):
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    team = pf.make_team()
    url = f"/api/v1/schedules?workspace={team.alpha.pk}"
    created = call(team.users["member"], "post", url, NIGHTLY).json()
    assert call(team.users["member"], "post", url, {**NIGHTLY, "name": "evals"}).status_code == 201
    one = f"/api/v1/schedules/{created['id']}"
    for payload, errors in (
            ({"recurrence": {"kind": "cron"}}, {"recurrence.cron": ["Enter a cron expression (minute hour "
                                                                    "day-of-month month day-of-week), e.g. */30 * * * "
                                                                    "*."]}),
            ({"recurrence": {"kind": "daily"}}, {"recurrence.at": ["Enter a time as HH:MM (24-hour), e.g. 02:30."]}),
            ({"recurrence": {"kind": "daily", "at": "02:00", "cron": "0 2 * * *"}},
             {"recurrence.cron": ["cron is only used when kind is cron."]}),
            ({"recurrence": {"cron": "0 2 * * *"}}, {"recurrence.cron": ["cron is only used when kind is cron."]}),
            ({"recurrence": {"kind": "hourly", "every_hours": "6"}},
             {"recurrence.every_hours": ["Enter a whole number of hours from 1 to 168, as a JSON number (e.g. 6)."]}),
            ({"recurrence": {"weekdays": []}}, {"recurrence.weekdays": ["Choose at least one weekday."]}),
            ({"recurrence": {"kind": "yearly"}}, {"recurrence.kind": ["Choose one of: hourly, daily, weekly, cron."]}),
            ({"recurrence": {"when": "x"}}, {"recurrence.when": ["Unknown field."]}),
            ({"name": "night ly"}, {"name": [schedules.name_problem("night ly")]}),
            ({"name": 5}, {"name": ['Enter the name as a JSON string, e.g. "nightly".']}),
            ({"name": "evals"}, {"name": [schedules.NAME_TAKEN]}),
            ({"name": "EVALS"}, {"name": ["A schedule of this workspace is named 'evals': names may not differ only "
                                          "in case."]}),
            ({"skip_if_active": "no", "enabled": 1}, {"skip_if_active": ["Must be true or false."],
                                                      "enabled": ["Must be true or false."]}),
            ({"extra": 1}, {"extra": ["Unknown field; the fields are: enabled, job, name, recurrence, "
                                      "skip_if_active."]}),
            ({}, {"": ["Send a JSON object with at least one of: enabled, job, name, recurrence, skip_if_active."]}),
            ({"job": "echo"}, {"job": ["Must be a JSON object: the CreateJob body, as POST /api/v1/jobs takes it."]})):
        answer = call(team.users["member"], "patch", one, payload)
        assert answer.status_code == 400, payload
        assert answer.json()["errors"] == errors, payload
    answer = call(team.users["member"], "patch", one, {"recurrence": "daily"})
    assert answer.status_code == 400 and list(answer.json()["errors"]) == ["recurrence"]
    answer = call(team.users["member"], "patch", one, {"recurrence": {"kind": "cron", "cron": "*/5 * * * *"}})
    assert "at least 10 minutes apart" in answer.json()["errors"]["recurrence.cron"][0]
    assert call(team.users["member"], "get", one).json() == created, "nothing changed"
    # Who may edit: as for enable/disable.
    assert call(team.users["viewer"], "patch", one, {"name": "x"}).status_code == 403
    assert call(team.users["other"], "patch", one, {"name": "x"}).status_code == 404
    assert call(team.users["member"], "patch", one, {"name": "x"}, read_only=True).status_code == 403
    assert Schedule.objects.get(pk=created["id"]).name == "nightly"


# --- PATCH with job: the schedule's job configuration (schedules.edit_config, as the wizard's Edit configuration) ---


def _configured(team) -> tuple[dict, str]:
    """NIGHTLY created by the member (its WANDB_API_KEY sealed): (its GET, its URL)."""
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY)
    assert created.status_code == 201, created.content
    url = f"/api/v1/schedules/{created.json()['id']}"
    return call(team.users["viewer"], "get", url).json(), url


def test_patch_job_replaces_the_configuration_keeps_the_owners_secret_and_seals_new_ones(db):
    from jobs import secretbox, spec
    from jobs.models import AuditEvent, Job

    team = pf.make_team()
    before, url = _configured(team)
    assert before["job"]["Envs"] == {"WANDB_API_KEY": "********"}
    role = {**before["job"]["JobSpecs"][0], "Image": "registry.example/pytorch:2.4",
            "ImageConfig": {"Username": "bot", "Password": "registry-new-secret"}}
    # GET's body sent back changed, its secret variable as GET shows it: the owner keeps its sealed value.
    job = {**before["job"], "UserCommand": "echo new", "JobSpecs": [role],
           "Envs": {**before["job"]["Envs"], "PLAIN": "1"}, "SecretEnvs": {"HF_TOKEN": "hf-new-secret"}}
    answer = call(team.users["member"], "patch", url, {"job": job})
    assert answer.status_code == 200, answer.content
    shown = call(team.users["viewer"], "get", url)
    for got in (answer.json(), shown.json()):
        assert got["job"]["UserCommand"] == "echo new"
        assert got["job"]["JobSpecs"][0]["Image"] == "registry.example/pytorch:2.4"
        assert got["job"]["JobSpecs"][0]["ImageConfig"] == {"Username": "bot"}
        assert got["job"]["Envs"] == {"WANDB_API_KEY": "********", "PLAIN": "1", "HF_TOKEN": "********"}
        assert (got["name"], got["next_run_at"], got["enabled"]) == (before["name"], before["next_run_at"], True), \
            "a job alone keeps the timing, as the wizard's edit does"
        assert got["job"]["DisplayName"] == before["job"]["DisplayName"]
    row = Schedule.objects.get()
    assert secretbox.unseal(row.sealed_secrets) == {
        spec.SECRET_ENV_PREFIX + "WANDB_API_KEY": "wandb-very-secret",
        spec.SECRET_ENV_PREFIX + "HF_TOKEN": "hf-new-secret", "registry_password": "registry-new-secret"}
    for where in (answer.content.decode(), shown.content.decode(), json.dumps(row.body), row.sealed_secrets):
        assert not any(secret in where for secret in ("wandb-very-secret", "hf-new-secret", "registry-new-secret"))
    edits = AuditEvent.objects.filter(details__event=schedules.CONFIG_EDITED)
    assert [e.details["schedule_id"] for e in edits] == [row.pk] and "secrets" in edits.get().details["changed"]
    assert not AuditEvent.objects.filter(details__event="schedule-edited").exists()
    # The next run's job is the new configuration, with the kept secret.
    from datetime import UTC, datetime, timedelta

    Schedule.objects.filter(pk=row.pk).update(next_run_at=datetime.now(UTC) - timedelta(minutes=1))
    schedules.run_due()
    ran = Job.objects.get(scheduled_run__schedule=row)
    assert ran.body["UserCommand"] == "echo new"
    assert secretbox.unseal(ran.sealed_secrets)[spec.SECRET_ENV_PREFIX + "WANDB_API_KEY"] == "wandb-very-secret"


def test_patch_job_sent_back_as_get_shows_it_keeps_the_owners_registry_password(db):
    from jobs import secretbox

    team = pf.make_team()
    before, url = _configured(team)
    role = {**before["job"]["JobSpecs"][0], "ImageConfig": {"Username": "bot", "Password": "registry-first"}}
    assert call(team.users["member"], "patch", url, {"job": {**before["job"], "JobSpecs": [role]}}).status_code == 200
    shown = call(team.users["member"], "get", url).json()["job"]
    assert shown["JobSpecs"][0]["ImageConfig"] == {"Username": "bot"}, "GET never shows the password"
    # GET's body sent back with a new command: the registry login it still has keeps its password (it was dropped,
    # and the runs could no longer pull the image).
    answer = call(team.users["member"], "patch", url, {"job": {**shown, "UserCommand": "echo again"}})
    assert answer.status_code == 200, answer.content
    assert secretbox.unseal(Schedule.objects.get().sealed_secrets)["registry_password"] == "registry-first"
    # Without the login, the password goes with it.
    plain = {**shown["JobSpecs"][0]}
    plain.pop("ImageConfig")
    assert call(team.users["member"], "patch", url, {"job": {**shown, "JobSpecs": [plain]}}).status_code == 200
    assert "registry_password" not in secretbox.unseal(Schedule.objects.get().sealed_secrets)


def test_patch_job_by_an_admin_must_send_the_secret_again(db):
    from jobs import secretbox, spec

    team = pf.make_team()
    before, url = _configured(team)
    sealed = Schedule.objects.get().sealed_secrets
    # Not the owner: "********" keeps nothing, or the admin could run the owner's key with a command of their own.
    answer = call(team.users["admin"], "patch", url, {"job": {**before["job"], "UserCommand": "env"}})
    assert answer.status_code == 400
    assert list(answer.json()["errors"]) == ["job.Envs.WANDB_API_KEY"], answer.json()
    assert "SecretEnvs" in answer.json()["errors"]["job.Envs.WANDB_API_KEY"][0]
    row = Schedule.objects.get()
    assert (row.sealed_secrets, row.body["UserCommand"]) == (sealed, "echo hello"), "nothing changed"
    # Sent in SecretEnvs (its Envs entry as GET shows it, or left out): the admin's value is sealed.
    for envs in (before["job"]["Envs"], {}):
        job = {**before["job"], "Envs": envs, "UserCommand": "env", "SecretEnvs": {"WANDB_API_KEY": "admin-key"}}
        answer = call(team.users["admin"], "patch", url, {"job": job})
        assert answer.status_code == 200, answer.content
        assert answer.json()["job"]["Envs"] == {"WANDB_API_KEY": "********"}
        assert secretbox.unseal(Schedule.objects.get().sealed_secrets) == {
            spec.SECRET_ENV_PREFIX + "WANDB_API_KEY": "admin-key"}


def test_patch_job_is_all_or_nothing_with_the_other_fields(db):
    from jobs.models import AuditEvent

    team = pf.make_team()
    before, url = _configured(team)
    assert call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}",
                {**NIGHTLY, "name": "evals"}).status_code == 201
    row = Schedule.objects.get(name="nightly")
    kept = (row.body, row.sealed_secrets, row.hints, row.next_run_at, row.at)
    bad = {**before["job"], "JobSpecs": [{**before["job"]["JobSpecs"][0], "Image": ""}]}
    said = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}",
                {**NIGHTLY, "name": "probe", "job": {**NIGHTLY["job"], "JobSpecs": bad["JobSpecs"]}}).json()["errors"]
    assert list(said) == ["job.JobSpecs[0].Image"], said
    good = {**before["job"], "UserCommand": "echo new"}
    for payload, errors in (
            ({"job": bad}, said),
            # A valid rename with a refused job: the rename (saved first) is undone.
            ({"name": "renamed", "recurrence": {"at": "05:00"}, "job": bad}, said),
            # A valid job with a taken name: the job is not saved either.
            ({"name": "evals", "job": good}, {"name": [schedules.NAME_TAKEN]}),
            ({"name": "evals", "job": bad}, {"name": [schedules.NAME_TAKEN], **said}),
            # The settings' own errors come first, as in POST: the job is not checked.
            ({"name": "bad name", "job": bad}, {"name": [schedules.name_problem("bad name")]}),
            ({"job": good, "extra": 1}, {"extra": ["Unknown field; the fields are: enabled, job, name, recurrence, "
                                                   "skip_if_active."]})):
        answer = call(team.users["member"], "patch", url, payload)
        assert answer.status_code == 400, payload
        assert answer.json()["errors"] == errors, payload
        row.refresh_from_db()
        assert (row.name, (row.body, row.sealed_secrets, row.hints, row.next_run_at, row.at)) == ("nightly", kept), \
            payload
    assert call(team.users["viewer"], "get", url).json() == before, "nothing changed"
    assert not AuditEvent.objects.filter(details__event__in=["schedule-edited", schedules.CONFIG_EDITED]).exists()
    # Both valid: both saved, the runs named after the new name.
    answer = call(team.users["member"], "patch", url, {"name": "renamed", "enabled": False, "job": good})
    assert answer.status_code == 200, answer.content
    got = answer.json()
    assert (got["name"], got["enabled"], got["job"]["UserCommand"]) == ("renamed", False, "echo new")
    assert re.fullmatch(r"renamed-\d{8}-\d{4}", got["job"]["DisplayName"]), got["job"]["DisplayName"]
    assert call(team.users["viewer"], "get", url).json()["job"] == got["job"]


def test_patch_job_needs_the_right_to_change_the_schedule(db):
    team = pf.make_team()
    before, url = _configured(team)
    job = {**before["job"], "UserCommand": "echo new"}
    assert call(team.users["viewer"], "patch", url, {"job": job}).status_code == 403
    assert call(team.users["other"], "patch", url, {"job": job}).status_code == 404
    assert call(team.users["member"], "patch", url, {"job": job}, read_only=True).status_code == 403
    assert Schedule.objects.get().body["UserCommand"] == "echo hello"


def test_an_admin_takes_over_a_schedule_and_it_cannot_be_enabled_until_the_dropped_secret_is_sent(db):
    from jobs import secretbox
    from jobs.models import AuditEvent, Membership

    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).update(role=Membership.VIEWER)
    url = f"/api/v1/schedules/{created['id']}/take-over"
    sealed = Schedule.objects.get().sealed_secrets
    for user, options in ((team.users["member"], {}), (team.users["viewer"], {}), (team.users["admin"],
                                                                                 {"read_only": True})):
        refused = call(user, "post", url, **options)
        assert refused.status_code == 403, (user, refused.content)
        assert refused.json()["error"] == (schedules.TAKE_OVER_REFUSED if not options else
                                           "This API token is read-only: it may not manage. Use a read-write token.")
    assert call(team.users["other"], "post", url).status_code == 404
    assert call(team.users["admin"], "get", url).status_code == 405
    row = Schedule.objects.get()
    assert (row.owner, row.sealed_secrets, row.enabled) == (team.users["member"], sealed, True), "nothing changed"
    answer = call(team.users["admin"], "post", url)
    assert answer.status_code == 200, answer.content
    taken = answer.json()
    shown = call(team.users["admin"], "get", f"/api/v1/schedules/{created['id']}").json()
    assert {k: v for k, v in taken.items() if k != "dropped"} == shown, "the schedule as GET shows it"
    assert taken["dropped"] == ["SecretEnvs.WANDB_API_KEY"]
    assert taken["owner"] == "admin" and taken["enabled"] is False and taken["next_run_at"] is None
    assert b"wandb-very-secret" not in answer.content
    event = AuditEvent.objects.get(details__event=schedules.TAKEN_OVER)
    assert event.details["dropped"] == ["SecretEnvs.WANDB_API_KEY"] and "wandb-very-secret" not in str(event.details)
    assert event.details["api_token"]["name"] == "t"
    # Enabling alone is refused, naming what to send; with the secret in the same PATCH's job it is enabled.
    patch = f"/api/v1/schedules/{created['id']}"
    refused = call(team.users["admin"], "patch", patch, {"enabled": True})
    assert refused.status_code == 400 and list(refused.json()["errors"]) == ["enabled"]
    assert "SecretEnvs.WANDB_API_KEY" in refused.json()["errors"]["enabled"][0]
    refused = call(team.users["admin"], "patch", patch, {"enabled": True, "skip_if_active": False})
    assert refused.status_code == 400 and list(refused.json()["errors"]) == ["enabled"], refused.json()
    row = Schedule.objects.get()
    assert (row.enabled, row.skip_if_active) == (False, True), "all or nothing"
    job = {**shown["job"], "SecretEnvs": {"WANDB_API_KEY": "admins-key"}}
    enabled = call(team.users["admin"], "patch", patch, {"enabled": True, "job": job})
    assert enabled.status_code == 200, enabled.content
    assert enabled.json()["enabled"] is True and enabled.json()["next_run_at"]
    assert secretbox.unseal(Schedule.objects.get().sealed_secrets) == {"env:WANDB_API_KEY": "admins-key"}


def test_a_schedules_calls_refuse_a_stray_parameter_and_a_take_over_refuses_a_body(db):
    """A parameter a call does not take was silently ignored (`?dry_run=1` on a DELETE deleted); a take-over, which
    takes no body, silently dropped one. Each is a 400 at what was sent, and nothing changed."""
    team = pf.make_team()
    created = call(team.users["member"], "post", f"/api/v1/schedules?workspace={team.alpha.pk}", NIGHTLY).json()
    url = f"/api/v1/schedules/{created['id']}"
    for method, payload in (("get", None), ("patch", {"name": "renamed"}), ("delete", None)):
        refused = call(team.users["member"], method, f"{url}?dry_run=1", payload)
        assert refused.status_code == 400, (method, refused.content)
        assert "dry_run" in refused.json()["errors"], refused.json()
    refused = call(team.users["admin"], "post", f"{url}/take-over", {"owner": "admin"})
    assert refused.status_code == 400 and "owner" in refused.json()["errors"], refused.content
    assert call(team.users["admin"], "post", f"{url}/take-over?owner=admin").status_code == 400
    row = Schedule.objects.get()
    assert (row.name, row.owner) == (created["name"], team.users["member"]), "nothing changed"
    assert call(team.users["admin"], "post", f"{url}/take-over", {}).status_code == 200, "an empty object is fine"
