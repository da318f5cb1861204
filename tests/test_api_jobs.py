"""The JSON API: list (filters, keyset pagination), get, create (same validation, 400 with field paths,
sealed secrets), stop, clone, and its OpenAPI description."""

from __future__ import annotations

import json
import re

import pytest

from jobs import secretbox
from jobs.models import AuditEvent, Job, Membership
from tests import portal_fixtures as pf
from tests.support.api import Api

# --- list and get ----------------------------------------------------------------------------------------


def test_list_shows_only_the_callers_workspaces(team, api):
    names = {j["name"] for j in api["member"].get("/api/v1/jobs").json()["jobs"]}
    assert names == {"train-a", "admin-job"}
    assert {j["name"] for j in api["other"].get("/api/v1/jobs").json()["jobs"]} == {"beta-job"}
    assert api["member"].get("/api/v1/jobs", workspace=team.beta.pk).status_code == 404


def test_list_filters_and_pages_by_keyset_like_the_list_page(team, api):
    for i in range(23):
        pf.make_job(team.alpha, team.users["member"], f"batch-{i:02d}", status="Succeeded")
    seen, url, pages = [], "/api/v1/jobs", 0
    query = {"workspace": team.alpha.pk, "q": "batch", "size": 10}
    while url:
        answer = api["viewer"].get(url, **query) if pages == 0 else api["viewer"].get(url)
        assert answer.status_code == 200
        data = answer.json()
        seen += [j["name"] for j in data["jobs"]]
        url = data["next"] and data["next"].replace("http://testserver", "")
        pages += 1
    assert pages == 3 and len(seen) == 23 and len(set(seen)) == 23
    assert seen == [f"batch-{i:02d}" for i in range(22, -1, -1)], "newest first"
    running = api["viewer"].get("/api/v1/jobs", status="Running").json()["jobs"]
    assert {j["name"] for j in running} == {"train-a", "admin-job"}
    bad = api["viewer"].get("/api/v1/jobs", created_from="not-a-date")
    assert bad.status_code == 400 and "created_from" in bad.json()["errors"]


def test_a_bad_size_lists_the_allowed_values_and_a_bad_cursor_is_called_invalid(team, api):
    # QA: size=1 got a bare "Select a valid choice"; after=<bad> got "showing the first page" with its 400.
    size = api["viewer"].get("/api/v1/jobs", size=1)
    assert size.status_code == 400 and size.json()["errors"] == {"size": ["Choose one of: 10, 20, 50, 100."]}
    sort = api["viewer"].get("/api/v1/jobs", sort="best")
    assert sort.status_code == 400 and "Choose one of: -created, created, name" in sort.json()["errors"]["sort"][0]
    for name in ("after", "before"):
        cursor = api["viewer"].get("/api/v1/jobs", **{name: "@@@"})
        assert cursor.status_code == 400
        message = " ".join(cursor.json()["errors"][name])
        assert "Invalid page cursor" in message and "first page" not in message


def test_get_a_job(team, api):
    data = api["viewer"].get(f"/api/v1/jobs/{team.job.pk}").json()
    assert data["name"] == "train-a" and data["status"] == "Running" and data["owner"] == "member"
    assert data["pods"][0]["PodId"] == "train-a-worker-0" and data["body"]["UserCommand"] == "echo hello"
    assert api["other"].get(f"/api/v1/jobs/{team.job.pk}").status_code == 404
    assert pf.client_for().get(f"/api/v1/jobs/{team.job.pk}").status_code == 401


# --- create ----------------------------------------------------------------------------------------------


def test_create_a_job_from_a_createjob_body(team, api):
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", {**pf.BODY, "DisplayName": "via-api"})
    assert answer.status_code == 201, answer.json()
    data = answer.json()
    job = Job.objects.get(pk=data["id"])
    assert answer["Location"].endswith(f"/api/v1/jobs/{job.pk}")
    assert (job.owner, job.workspace, job.status) == (team.users["member"], team.alpha, "Submitting")
    assert job.body["DisplayName"] == "via-api" and data["status_label"] == "Waiting to submit"
    assert AuditEvent.objects.get(job=job).action == "created"


def test_a_single_workspace_needs_no_parameter_but_two_do(team, api):
    assert api["member"].post("/api/v1/jobs", {**pf.BODY, "DisplayName": "only-one"}).status_code == 201
    Membership.objects.create(user=team.users["member"], workspace=team.beta, role="member")
    answer = api["member"].post("/api/v1/jobs", pf.BODY)
    assert answer.status_code == 400 and "workspace" in answer.json()["errors"]
    assert answer.json()["candidates"] == [{"id": ws.pk, "name": ws.name, "dlc_workspace_id": ws.dlc_workspace_id}
                                           for ws in (team.alpha, team.beta)]
    assert f"{team.alpha.pk} (Alpha), {team.beta.pk} (Beta)" in answer.json()["errors"]["workspace"][0]


def test_with_several_workspaces_the_bodys_workspace_id_picks_the_one_that_has_it(team, api):
    """QA: an all-workspaces token got 400 "Name the console workspace" once its user joined a second workspace,
    even with the body's WorkspaceId naming the DLC workspace."""
    from jobs.models import Workspace

    Membership.objects.create(user=team.users["member"], workspace=team.beta, role="member")
    answer = api["member"].post("/api/v1/jobs", {**pf.BODY, "DisplayName": "to-beta", "WorkspaceId": "beta"})
    assert answer.status_code == 201, answer.json()
    assert Job.objects.get(pk=answer.json()["id"]).workspace == team.beta
    # A DLC workspace none of theirs has: the candidates are all of theirs.
    unknown = api["member"].post("/api/v1/jobs", {**pf.BODY, "WorkspaceId": "gamma"})
    assert unknown.status_code == 400 and [c["id"] for c in unknown.json()["candidates"]] == [team.alpha.pk,
                                                                                              team.beta.pk]
    # Two of theirs on the same DLC workspace: those two are the candidates.
    twin = Workspace.objects.create(name="Beta twin", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="beta")
    Membership.objects.create(user=team.users["member"], workspace=twin, role="member")
    both = api["member"].post("/api/v1/jobs", {**pf.BODY, "WorkspaceId": "beta"})
    assert both.status_code == 400 and [c["id"] for c in both.json()["candidates"]] == [team.beta.pk, twin.pk]
    assert "2 of your workspaces have DLC workspace 'beta'" in both.json()["errors"]["workspace"][0]
    # ?workspace= still decides, and a viewer of the matching workspace may not create there.
    Membership.objects.filter(user=team.users["member"], workspace=twin).delete()
    Membership.objects.filter(user=team.users["member"], workspace=team.beta).update(role="viewer")
    assert api["member"].post("/api/v1/jobs", {**pf.BODY, "WorkspaceId": "beta"}).status_code == 403
    assert Job.objects.filter(workspace=team.beta, display_name="train-a").count() == 0


@pytest.mark.parametrize(("payload", "path", "fragment"), [
    ({**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 0}]}, "JobSpecs[0].PodCount", ""),
    ({**pf.BODY, "DisplayName": "bad name!"}, "DisplayName", ""),
    ({**pf.BODY, "JobSpecs": "lots"}, "JobSpecs", ""),
    ({**pf.BODY, "WorkspaceId": "someone-elses"}, "WorkspaceId", "leave WorkspaceId out"),
    ([1, 2], "", "JSON object"),
    ("{not json", "", "not valid JSON"),
])
def test_invalid_bodies_get_400_with_field_paths(team, api, payload, path, fragment):
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", payload)
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert path in errors, errors
    assert fragment in " ".join(errors[path])
    assert Job.objects.count() == 3


def test_roles_decide_who_creates(team, api):
    body = {**pf.BODY, "DisplayName": "x"}
    assert api["viewer"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).status_code == 403
    assert api["other"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).status_code == 404
    assert api["admin"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).status_code == 201


def test_registry_password_is_sealed_never_stored_or_echoed(team, api):
    body = {**pf.BODY, "DisplayName": "private-image", "JobSpecs": [{
        **pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob", "Password": "hunter2-registry"}}]}
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body)
    assert answer.status_code == 201, answer.json()
    assert "hunter2" not in answer.text
    job = Job.objects.get(pk=answer.json()["id"])
    assert job.body["JobSpecs"][0]["ImageConfig"] == {"Username": "bob"}
    assert "hunter2" not in job.sealed_secrets
    assert secretbox.unseal(job.sealed_secrets) == {"registry_password": "hunter2-registry"}
    assert job.hints["secrets"] == ["registry_password"]
    assert "hunter2" not in api["member"].get(f"/api/v1/jobs/{job.pk}").text


def test_template_locks_apply_to_the_api_too(team, api):
    from jobs import templates_lib

    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    url = f"/api/v1/jobs?workspace={team.alpha.pk}&template={team.template.pk}&version=1"
    refused = api["member"].post(url, {**pf.BODY, "UserCommand": "echo other"})
    assert refused.status_code == 400
    assert "locked by the template" in refused.json()["errors"]["UserCommand"][0]
    assert api["member"].post(url, pf.BODY).status_code == 201


def test_a_lock_on_the_variables_holds_for_secret_variables_in_create_and_clone(team, api):
    """QA: with Environment variables locked, SecretEnvs in a create ({"LD_PRELOAD_TOKEN": "x"}) and secret_envs in
    a clone ({"API_TOKEN": "zzz"}) made a job with the variable (plain Envs were refused): the lock check saw the
    body before the secrets were merged back into Envs."""
    from jobs import templates_lib

    templates_lib.set_locks(team.template, team.users["admin"], ["environment.envs", "environment.command"])
    url = f"/api/v1/jobs?workspace={team.alpha.pk}&template={team.template.pk}"
    before = Job.objects.count()
    refused = api["member"].post(url, {**pf.BODY, "SecretEnvs": {"LD_PRELOAD_TOKEN": "x"}})
    assert refused.status_code == 400, refused.json()
    assert "locked by the template" in refused.json()["errors"]["SecretEnvs"][0]
    plain = api["member"].post(url, {**pf.BODY, "Envs": {"LD_PRELOAD": "/x.so"}})
    assert plain.status_code == 400 and "locked by the template" in plain.json()["errors"]["Envs"][0]
    made = api["member"].post(url, pf.BODY)
    assert made.status_code == 201, made.json()
    clone = f"/api/v1/jobs/{made.json()['id']}/clone"
    sneaked = api["member"].post(clone, {"secret_envs": {"API_TOKEN": "zzz"}})
    assert sneaked.status_code == 400, sneaked.json()
    assert "locked by the template" in sneaked.json()["errors"]["secret_envs"][0]
    assert Job.objects.count() == before + 1, "only the job that keeps the template's variables"
    assert api["member"].post(clone).status_code == 201


def test_a_templates_own_secret_variable_may_be_sent_in_secret_envs_under_its_lock(team, api):
    # The template's secret variable has no value (templates keep none): the job sends it, and that is no change.
    from jobs import spec, templates_lib
    from jobs.models import JobTemplateVersion

    sections = spec.inverse({**pf.BODY, "Envs": {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}})
    JobTemplateVersion.objects.create(template=team.template, number=2, sections=templates_lib.strip_secrets(sections))
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.envs"])
    url = f"/api/v1/jobs?workspace={team.alpha.pk}&template={team.template.pk}&version=2"
    made = api["member"].post(url, {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "w"}})
    assert made.status_code == 201, made.json()
    assert secretbox.unseal(Job.objects.get(pk=made.json()["id"]).sealed_secrets) == {"env:WANDB_API_KEY": "w"}
    other = api["member"].post(url, {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "w", "B_TOKEN": "b"}})
    assert other.status_code == 400 and "locked by the template" in other.json()["errors"]["SecretEnvs"][0]


def test_a_clone_refuses_secret_envs_in_changes_and_names_the_field_that_takes_them(team, api):
    """QA: {"changes": {"SecretEnvs": {"A_TOKEN": "1"}}} made a clone without the variable."""
    url = f"/api/v1/jobs/{team.job.pk}/clone"
    refused = api["member"].post(url, {"changes": {"SecretEnvs": {"A_TOKEN": "1"}}})
    assert refused.status_code == 400
    assert "top-level secret_envs" in refused.json()["errors"]["changes.SecretEnvs"][0]
    assert not Job.objects.filter(cloned_from=team.job).exists()
    made = api["member"].post(url, {"secret_envs": {"A_TOKEN": "1"}})
    assert made.status_code == 201 and made.json()["body"]["Envs"] == {"A_TOKEN": "********"}


def test_a_command_with_a_trailing_line_break_is_refused_saying_so(team, api):
    """QA: "Not in the console's form: it would be sent as ..." never said what differed. The wizard trims the
    same command (a form's text is stripped), so the API says so rather than storing a body the wizard never makes."""
    url = f"/api/v1/jobs?workspace={team.alpha.pk}"
    for command, words in (("echo hello\n", "Ends with a line break"), ("echo hello ", "Ends with a space"),
                           ("  echo hello", "Starts with a space")):
        answer = api["member"].post(url, {**pf.BODY, "UserCommand": command})
        assert answer.status_code == 400
        assert answer.json()["errors"]["UserCommand"] == [
            f'{words}, which the console\'s form trims: send "echo hello".'], command


def test_the_stored_body_is_the_checked_one_and_an_empty_spot_spec_is_refused_by_both_calls(team, api):
    """Audit: `"SpotSpec": {}` was checked as a public job (the checks drop empty values) but stored and sent with
    it; `{"SpotStrategy": "", "SpotDiscountLimit": null}` passed the dry run and DLC refused it."""
    url = f"/api/v1/jobs?workspace={team.alpha.pk}"
    role = pf.BODY["JobSpecs"][0]
    for spot in ({}, {"SpotStrategy": "", "SpotDiscountLimit": None}):
        body = {**pf.BODY, "DisplayName": "spot-empty", "JobSpecs": [{**role, "SpotSpec": spot}]}
        for answer in both_answers(api["member"], body, f"?workspace={team.alpha.pk}"):
            assert answer.status_code == 400, answer.json()
            assert answer.json()["errors"] == {"JobSpecs[0].SpotSpec": ["Choose a bid method: by discount or by "
                                                                        "price."]}
    assert not Job.objects.filter(display_name="spot-empty").exists()
    empties = {**pf.BODY, "DisplayName": "with-empties", "Description": "", "DataSources": [], "CodeSource": None,
               "Envs": {"EPOCHS": "3", "EMPTY": ""}, "Settings": {"Tags": {}}, "SecretEnvs": {"HF_TOKEN": "h"},
               "JobSpecs": [{**role, "ImageConfig": {}, "SpotSpec": None}]}
    answer = api["member"].post(url, empties)
    assert answer.status_code == 201, answer.json()
    assert Job.objects.get(pk=answer.json()["id"]).body == {
        **pf.BODY, "DisplayName": "with-empties", "Envs": {"EPOCHS": "3", "EMPTY": "", "HF_TOKEN": "********"}}


def test_a_bad_version_or_a_version_without_template_is_a_400_at_version(team, api):
    # QA: version=abc and -1 created the job from the default version without a word; version=2 alone was ignored.
    from jobs import templates_lib

    base = f"/api/v1/jobs?workspace={team.alpha.pk}"
    before = Job.objects.count()
    for query in (f"&template={team.template.pk}&version=abc", f"&template={team.template.pk}&version=-1",
                  f"&template={team.template.pk}&version=0", f"&template={team.template.pk}&version=1.0",
                  "&version=2"):
        answer = api["member"].post(base + query, pf.BODY)
        assert answer.status_code == 400, query
        expected = templates_lib.VERSION_WITHOUT_TEMPLATE if query == "&version=2" else \
            templates_lib.VERSION_NOT_A_NUMBER
        assert answer.json()["errors"]["version"] == [expected], query
    missing = api["member"].post(f"{base}&template={team.template.pk}&version=99", pf.BODY)
    assert missing.json()["errors"] == {"version": ["No such version of the template."]}
    for bad in ("abc", "-1", "0", "1.0"):  # QA: the wizard answered template=abc with a 404, version=abc with a 400
        assert api["member"].post(f"{base}&template={bad}", pf.BODY).json()["errors"] == {
            "template": [templates_lib.TEMPLATE_NOT_AN_ID]}, bad
    assert api["member"].post(f"{base}&template=999999", pf.BODY).json()["errors"] == {
        "template": ["No such template in this workspace."]}
    assert Job.objects.count() == before, "nothing was created"
    assert api["member"].post(f"{base}&template={team.template.pk}&version=1", pf.BODY).status_code == 201


def test_the_wizard_takes_template_and_version_by_the_same_rule(team):
    from django.utils.html import escape

    from jobs import templates_lib

    client = pf.client_for(team.users["member"])
    for query in ("version=abc", "version=-1", "version=2"):
        template = "" if query == "version=2" else f"template={team.template.pk}&"
        page = client.get(f"/jobs/new?{template}{query}")
        assert page.status_code == 400, query
        # The console's 400 page (consoleapp.errors) says what was wrong, inside the console's frame.
        expected = templates_lib.VERSION_WITHOUT_TEMPLATE if query == "version=2" else \
            templates_lib.VERSION_NOT_A_NUMBER
        assert escape(expected) in page.content.decode() and 'id="error-page"' in page.content.decode(), query
    assert client.get(f"/jobs/new?template={team.template.pk}&version=1").status_code == 200
    bad = client.get("/jobs/new?template=abc")
    assert bad.status_code == 400 and escape(templates_lib.TEMPLATE_NOT_AN_ID) in bad.content.decode()
    assert client.get("/jobs/new?template=999999").status_code == 404


# --- stop and clone ---------------------------------------------------------------------------------------


def test_stop_follows_roles(team, api):
    assert api["viewer"].post(f"/api/v1/jobs/{team.job.pk}/stop").status_code == 403
    assert api["member"].post(f"/api/v1/jobs/{team.admin_job.pk}/stop").status_code == 403
    assert api["other"].post(f"/api/v1/jobs/{team.job.pk}/stop").status_code == 404
    answer = api["member"].post(f"/api/v1/jobs/{team.job.pk}/stop")
    assert answer.status_code == 202 and answer.json()["result"] == "stopping"
    assert answer.json()["job"]["status"] == "Stopping"
    assert api["admin"].post(f"/api/v1/jobs/{team.admin_job.pk}/stop").json()["result"] == "stopping"
    assert AuditEvent.objects.filter(action="stopped").count() == 2


def test_clone_makes_a_new_job_with_a_fresh_name_and_a_link_to_the_source(team, api):
    answer = api["member"].post(f"/api/v1/jobs/{team.job.pk}/clone")
    assert answer.status_code == 201, answer.json()
    clone = Job.objects.get(pk=answer.json()["id"])
    assert clone.display_name == "train-a-copy" and clone.cloned_from == team.job
    assert clone.idempotency_tag != team.job.idempotency_tag
    again = api["member"].post(f"/api/v1/jobs/{team.job.pk}/clone", {"changes": {"UserCommand": "echo 2"}})
    assert again.json()["name"] == "train-a-copy-2" and again.json()["body"]["UserCommand"] == "echo 2"
    event = AuditEvent.objects.get(job=clone)
    assert event.action == "cloned" and event.source == team.job
    assert api["viewer"].post(f"/api/v1/jobs/{team.job.pk}/clone").status_code == 403
    assert api["other"].post(f"/api/v1/jobs/{team.job.pk}/clone").status_code == 404


def test_clone_refuses_unknown_keys_and_changes_that_are_not_an_object(team, api):
    # QA: {"DisplayName": "x"}, {"overrides": {...}} and {"changes": []} all made an unchanged copy.
    url = f"/api/v1/jobs/{team.job.pk}/clone"
    allowed = "Unknown field; the fields are: changes, ray_redis_password, registry_password, secret_envs."
    for payload, key in (({"DisplayName": "x"}, "DisplayName"), ({"overrides": {"UserCommand": "x"}}, "overrides"),
                         ({"name": "x", "changes": {}}, "name")):
        answer = api["member"].post(url, payload)
        assert answer.status_code == 400 and answer.json()["errors"] == {key: [allowed]}, payload
    for changes in ([], None, "DisplayName=x", 3):
        answer = api["member"].post(url, {"changes": changes})
        assert answer.status_code == 400 and list(answer.json()["errors"]) == ["changes"], changes
    assert not Job.objects.filter(cloned_from=team.job).exists()
    made = api["member"].post(url, {"changes": {"DisplayName": "renamed-copy"}})
    assert made.status_code == 201 and made.json()["name"] == "renamed-copy"


def test_clone_never_copies_a_secret_and_asks_for_it(team, api):
    body = {**pf.BODY, "DisplayName": "private", "JobSpecs": [{
        **pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob", "Password": "hunter2-registry"}}]}
    source = Job.objects.get(pk=api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).json()["id"])
    refused = api["member"].post(f"/api/v1/jobs/{source.pk}/clone")
    assert refused.status_code == 400 and "registry_password" in refused.json()["errors"]
    answer = api["member"].post(f"/api/v1/jobs/{source.pk}/clone", {"registry_password": "new-secret"})
    assert answer.status_code == 201
    clone = Job.objects.get(pk=answer.json()["id"])
    assert secretbox.unseal(clone.sealed_secrets) == {"registry_password": "new-secret"}
    assert "new-secret" not in json.dumps(clone.body) and "new-secret" not in answer.text


def test_secret_envs_are_sealed_shown_as_the_placeholder_and_asked_again_by_a_clone(team, api):
    url = f"/api/v1/jobs?workspace={team.alpha.pk}"
    body = {**pf.BODY, "DisplayName": "wandb", "Envs": {"EPOCHS": "3", "HF_TOKEN": "hf-plain-secret"},
            "SecretEnvs": {"WANDB_API_KEY": "wandb-api-secret"}}
    answer = api["member"].post(url, body)
    assert answer.status_code == 201, answer.json()
    job = Job.objects.get(pk=answer.json()["id"])
    # SecretEnvs, and an Envs value named like a secret, are sealed; the body keeps their names.
    assert job.body["Envs"] == {"EPOCHS": "3", "HF_TOKEN": "********", "WANDB_API_KEY": "********"}
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": "wandb-api-secret",
                                                    "env:HF_TOKEN": "hf-plain-secret"}
    shown = api["member"].get(f"/api/v1/jobs/{job.pk}").text
    assert "secret" not in shown.replace("SecretEnvs", "") and '"WANDB_API_KEY": "********"' in shown
    refused = api["member"].post(f"/api/v1/jobs/{job.pk}/clone")
    assert refused.status_code == 400 and set(refused.json()["errors"]) == {"Envs.HF_TOKEN", "Envs.WANDB_API_KEY"}
    again = api["member"].post(f"/api/v1/jobs/{job.pk}/clone",
                               {"secret_envs": {"WANDB_API_KEY": "w2", "HF_TOKEN": "h2"}})
    assert again.status_code == 201, again.json()
    clone = Job.objects.get(pk=again.json()["id"])
    assert secretbox.unseal(clone.sealed_secrets) == {"env:WANDB_API_KEY": "w2", "env:HF_TOKEN": "h2"}


def test_an_env_only_the_wide_rule_names_a_secret_is_sealed_not_exported_and_asked_again_by_a_clone(team, api):
    """HFTOKEN (a secret's name run together), not sent in SecretEnvs: once only the job page hid it, while the
    row, the exports and a clone kept its value. One rule now: sealed (the job still gets it), never stored."""
    value = "abc123"
    body = {**pf.BODY, "DisplayName": "hftoken", "Envs": {"HFTOKEN": value, "KEYBOARD": "us-abc123x"}}
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body)
    assert answer.status_code == 201, answer.json()
    job = Job.objects.get(pk=answer.json()["id"])
    assert job.body["Envs"] == {"HFTOKEN": "********", "KEYBOARD": "us-abc123x"}
    assert secretbox.unseal(job.sealed_secrets) == {"env:HFTOKEN": value}
    stored = json.dumps(Job.objects.filter(pk=job.pk).values("body", "hints", "submit_error").get())
    assert f'"{value}"' not in stored
    web = pf.client_for(team.users["member"])
    for fmt in ("json", "python"):  # a params file cannot hold a secret variable: the page offers none then
        exported = web.get(f"/jobs/{job.pk}/export/{fmt}").content.decode()
        assert "HFTOKEN" in exported and value not in exported.replace("us-abc123x", ""), fmt
    assert value not in api["member"].get(f"/api/v1/jobs/{job.pk}").text.replace("us-abc123x", "")
    refused = api["member"].post(f"/api/v1/jobs/{job.pk}/clone")
    assert refused.status_code == 400 and set(refused.json()["errors"]) == {"Envs.HFTOKEN"}
    again = api["member"].post(f"/api/v1/jobs/{job.pk}/clone", {"secret_envs": {"HFTOKEN": "hf-again-2"}})
    assert again.status_code == 201, again.json()
    assert secretbox.unseal(Job.objects.get(pk=again.json()["id"]).sealed_secrets) == {"env:HFTOKEN": "hf-again-2"}


@pytest.mark.parametrize("extra,path,fragment", [
    ({"SecretEnvs": ["x"]}, "SecretEnvs", "Must be an object"),
    ({"SecretEnvs": {"A_KEY": ""}}, "SecretEnvs.A_KEY", "non-empty"),
    ({"Envs": {"A": "1"}, "SecretEnvs": {"A": "2"}}, "SecretEnvs.A", "in Envs too"),
    ({"Envs": {"WANDB_API_KEY": "********"}}, "Envs.WANDB_API_KEY", "send the value in SecretEnvs"),
    ({"SecretEnvs": {"1BAD": "x"}}, "SecretEnvs.1BAD", "digits and '_'"),  # where it was sent, not at Envs
    # Bad Envs next to SecretEnvs are refused, not replaced by the secrets alone (the job would lose them unsaid).
    ({"Envs": ["EPOCHS=3"], "SecretEnvs": {"B_TOKEN": "x"}}, "Envs", "Must be an object"),
    ({"Envs": "EPOCHS=3", "SecretEnvs": {"B_TOKEN": "x"}}, "Envs", "Must be an object"),
])
def test_bad_secret_envs_get_400_at_the_field(team, api, extra, path, fragment):
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", {**pf.BODY, **extra})
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert any(k.startswith(path) and fragment in " ".join(v) for k, v in errors.items()), errors
    assert not Job.objects.filter(display_name=pf.BODY["DisplayName"]).exclude(pk=team.job.pk).exists()


# --- OpenAPI ---------------------------------------------------------------------------------------------


def test_openapi_describes_every_api_endpoint(team):
    from django.urls import get_resolver

    doc = pf.client_for().get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.") and doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"

    def routes(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from routes(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    # Django's <int:pk> is the document's {id}, any other <type:name> its {name} (a pod's log: {pod_id}).
    api_routes = {"/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: "{id}" if m[1] == "pk" else f"{{{m[1]}}}", r)
                  for r in routes(get_resolver().url_patterns)
                  if r.startswith("api/v1/") and not r.endswith("openapi.json")}
    assert api_routes and api_routes <= set(doc["paths"]), api_routes - set(doc["paths"])
    page = pf.client_for(team.users["viewer"]).get("/account/api")
    assert 'href="/api/v1/openapi.json"' in page.text


# --- errors outside the endpoints --------------------------------------------------------------------------


def test_an_unknown_api_path_and_a_wrong_method_answer_json(team, api):
    """QA: /api/v1/nope returned the HTML 404 page; a 405 had an empty body."""
    for path in ("/api/v1/nope", "/api/v1/jobs/1/nope", "/api/"):
        answer = api["member"].get(path)
        assert answer.status_code == 404 and answer["Content-Type"] == "application/json", path
        assert "no API endpoint" in answer.json()["error"]
    wrong = api["member"].client.delete("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {api['member'].token}")
    assert wrong.status_code == 405 and wrong["Allow"] == "GET, HEAD, POST"
    assert wrong.json() == {"error": "Method DELETE is not allowed here; allowed: GET, HEAD, POST."}
    assert pf.client_for().put("/api/v1/openapi.json").json()["error"].startswith("Method PUT")
    # An endpoint's own 404 keeps its answer; pages outside /api/ keep Django's.
    assert api["member"].get("/api/v1/jobs/999999").json() == {"error": "Not found."}
    assert b"<" in pf.client_for(team.users["member"]).get("/no-such-page").content[:100]


def test_an_api_clone_keeps_the_sources_hints_and_dlc_workspace_so_compare_finds_no_difference(team, api):
    """QA: after an API clone, Compare showed 'Image type: Alibaba Cloud Image ≠ Image Address' and 'DLC workspace:
    local ≠ —' between a job and its exact clone. The source is made as the wizard makes one: its body names the
    DLC workspace, its hints say what the body cannot (an Alibaba Cloud image)."""
    from jobs import compare, spec

    sections = spec.inverse({**pf.BODY, "DisplayName": "wizard-made"}, {"image_type": "official"})
    source = pf.make_job(team.alpha, team.users["member"], "wizard-made", hints=spec.hints_from_sections(sections))
    Job.objects.filter(pk=source.pk).update(body=spec.build(sections, workspace_id="alpha"))
    source.refresh_from_db()
    assert source.body["WorkspaceId"] == "alpha" and source.hints["image_type"] == "official"
    answer = api["member"].post(f"/api/v1/jobs/{source.pk}/clone")
    assert answer.status_code == 201, answer.json()
    clone = Job.objects.get(pk=answer.json()["id"])
    assert clone.hints["image_type"] == "official" and clone.body["WorkspaceId"] == "alpha"
    table = compare.compare(team.users["member"], [str(source.pk), str(clone.pk)])
    differing = [row.label for group in table.groups for row in group.rows if row.differs]
    # The name, the one reset field here, heads each column rather than being a row.
    assert differing == [], differing
    assert [c.job.display_name for c in table.columns] == ["wizard-made", "wizard-made-copy"]


def test_a_clones_secret_variable_is_asked_for_in_the_field_the_clone_endpoint_takes(team, api):
    """QA: the clone's error said "send the value in SecretEnvs", but the clone endpoint takes `secret_envs`."""
    body = {**pf.BODY, "DisplayName": "with-secret", "SecretEnvs": {"WANDB_API_KEY": "w"}}
    source = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).json()["id"]
    refused = api["member"].post(f"/api/v1/jobs/{source}/clone").json()["errors"]
    assert "send the value in secret_envs" in refused["Envs.WANDB_API_KEY"][0]
    direct = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                                {**pf.BODY, "Envs": {"WANDB_API_KEY": "********"}}).json()["errors"]
    assert "send the value in SecretEnvs" in direct["Envs.WANDB_API_KEY"][0]  # POST /api/v1/jobs takes SecretEnvs


# --- the dry run picks and checks as the create does ---------------------------------------------------------


def both_answers(api, body, query=""):
    """(create, dry run) of one body: the dry run must give the create's verdict."""
    return (api.post(f"/api/v1/jobs{query}", body), api.post(f"/api/v1/jobs/validate{query}", body))


def test_the_dry_run_refuses_a_workspace_id_of_another_dlc_workspace_as_the_create_does(team, api):
    """QA: WorkspaceId "zzz" with ?workspace= was valid for the dry run, 400 for the create."""
    for query in (f"?workspace={team.alpha.pk}", ""):
        created, checked = both_answers(api["member"], {**pf.BODY, "WorkspaceId": "zzz"}, query)
        assert created.status_code == checked.status_code == 400, (query, checked.json())
        assert checked.json()["errors"] == created.json()["errors"]
        assert "submits to DLC workspace 'alpha'; leave WorkspaceId out" in checked.json()["errors"]["WorkspaceId"][0]
    assert not Job.objects.filter(display_name="train-a").exclude(pk=team.job.pk).exists()


def test_the_dry_run_chooses_the_workspace_the_create_would_use(team, api):
    """QA: with two workspaces the dry run took the first one's guardrails and said valid where the create asked
    which workspace is meant."""
    from jobs import templates_lib
    from jobs.models import WorkspacePolicy

    Membership.objects.create(user=team.users["member"], workspace=team.beta, role="member")
    created, checked = both_answers(api["member"], {**pf.BODY, "DisplayName": "unsaid"})
    assert created.status_code == checked.status_code == 400
    assert checked.json()["candidates"] == created.json()["candidates"] and len(checked.json()["candidates"]) == 2
    # Alpha's guardrail refuses the image, Beta has none: the body's WorkspaceId says whose rules apply.
    WorkspacePolicy.objects.create(workspace=team.alpha, allowed_image_prefixes=["registry.alpha/"])
    to_beta = {**pf.BODY, "DisplayName": "to-beta", "WorkspaceId": "beta"}
    in_beta = api["member"].post("/api/v1/jobs/validate", to_beta)
    assert in_beta.status_code == 200 and in_beta.json()["valid"] is True, in_beta.json()
    to_alpha = api["member"].post("/api/v1/jobs/validate", {**to_beta, "WorkspaceId": "alpha"})
    assert to_alpha.status_code == 400 and "registry.alpha/" in str(to_alpha.json()["errors"])
    # A template's locks hold in the dry run as in the create.
    query = f"?workspace={team.alpha.pk}&template={team.template.pk}"
    WorkspacePolicy.objects.filter(workspace=team.alpha).delete()
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    created, checked = both_answers(api["member"], {**pf.BODY, "UserCommand": "echo other"}, query)
    assert created.status_code == checked.status_code == 400
    assert "locked by the template" in checked.json()["errors"]["UserCommand"][0]
    assert api["member"].post(f"/api/v1/jobs/validate{query}", pf.BODY).status_code == 200


def test_the_dry_run_says_whether_the_caller_may_create_what_it_validated(team, api):
    """QA: a viewer's or a read-only token's dry run said {"valid": true} and nothing else; the create is a 403."""
    query = f"?workspace={team.alpha.pk}"
    member = api["member"].post(f"/api/v1/jobs/validate{query}", pf.BODY).json()
    assert member["valid"] is True and member["can_create"] is True and "cannot_create" not in member
    read_only = Api(team.users["member"], read_only=True)
    for caller in (api["viewer"], read_only):
        created, checked = both_answers(caller, pf.BODY, query)
        assert created.status_code == 403 and checked.status_code == 200, checked.content
        assert checked.json()["valid"] is True and checked.json()["can_create"] is False
        assert checked.json()["cannot_create"] == created.json()["error"]
    assert "read-only" in read_only.post(f"/api/v1/jobs/validate{query}", pf.BODY).json()["cannot_create"]
    documented = api["viewer"].get("/api/v1/openapi.json").json()["paths"]["/api/v1/jobs/validate"]["post"]
    schema = documented["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"can_create", "cannot_create"} <= set(schema["properties"]) and "can_create" in schema["required"]


def test_a_workspace_that_is_no_number_is_a_400_at_workspace_and_an_unknown_one_a_404(team, api):
    """QA: ?workspace=abc answered 404 "Not found." on the endpoints documented to take an integer."""
    member = api["member"]
    for answer in (member.get("/api/v1/jobs", workspace="abc"), member.post("/api/v1/jobs?workspace=abc", pf.BODY),
                   member.post("/api/v1/jobs/validate?workspace=abc", pf.BODY),
                   member.get("/api/v1/sweeps", workspace="1.5"), member.get("/api/v1/schedules", workspace="²")):
        assert answer.status_code == 400, answer.content
        assert "whole number" in answer.json()["errors"]["workspace"][0]
    for answer in (member.get("/api/v1/jobs", workspace=team.beta.pk),
                   member.post(f"/api/v1/jobs/validate?workspace={team.beta.pk}", pf.BODY),
                   member.get("/api/v1/jobs", workspace=10 ** 30)):
        assert answer.status_code == 404
    assert member.get("/api/v1/jobs", workspace=team.alpha.pk).status_code == 200


def test_a_caller_without_a_workspace_is_told_so(team):
    from django.contrib.auth import get_user_model

    from tests.support.api import Api

    loner = Api(get_user_model().objects.create_user("loner"))
    answer = loner.post("/api/v1/jobs/validate", pf.BODY)
    assert answer.status_code == 400 and "member of no workspace" in answer.json()["errors"]["workspace"][0]


def test_next_is_a_url_to_follow_and_its_after_parameter_the_cursor(team, api):
    """QA: the document said `after` is "Cursor from `next`", but next is a URL: after=<next> is a 400."""
    from urllib.parse import parse_qs, urlsplit

    for i in range(3):
        pf.make_job(team.alpha, team.users["member"], f"page-{i}")
    first = api["viewer"].get("/api/v1/jobs", size=10).json()
    assert first["next"] is None
    for i in range(10):
        pf.make_job(team.alpha, team.users["member"], f"more-{i}")
    first = api["viewer"].get("/api/v1/jobs", size=10).json()
    cursor = parse_qs(urlsplit(first["next"]).query)["after"][0]
    by_cursor = api["viewer"].get("/api/v1/jobs", size=10, after=cursor).json()
    assert by_cursor["jobs"] == api["viewer"].get(first["next"]).json()["jobs"] != []
    assert api["viewer"].get("/api/v1/jobs", size=10, after=first["next"]).status_code == 400
    doc = pf.client_for().get("/api/v1/openapi.json").json()
    page = doc["components"]["schemas"]["JobPage"]["properties"]
    assert page["next"]["format"] == page["previous"]["format"] == "uri"
    assert "`after` query parameter is the cursor" in page["next"]["description"]
    params = {p["name"]: p["description"] for p in doc["paths"]["/api/v1/jobs"]["get"]["parameters"]}
    assert "not a URL" in params["after"] and "`next`" in params["after"] and "not a URL" in params["before"]
    assert "with `status`, a job whose status changes" in params["sort"]


def test_the_document_gives_every_workspace_taking_call_its_404_and_the_errors_bodies(team):
    doc = pf.client_for().get("/api/v1/openapi.json").json()
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            if any(p.get("name") == "workspace" for p in operation.get("parameters", [])):
                assert {"400", "404"} <= set(operation["responses"]), (method, path)
    validate = doc["paths"]["/api/v1/jobs/validate"]["post"]
    assert [p["name"] for p in validate["parameters"]] == ["workspace", "template", "version"]
    assert "404" in validate["parameters"][0]["description"]
    errors = {"$ref": "#/components/schemas/ValidationErrors"}
    patch = doc["paths"]["/api/v1/jobs/{id}"]["patch"]["responses"]
    assert patch["409"]["content"]["application/json"]["schema"] == patch["502"]["content"]["application/json"][
        "schema"] == errors


# --- what no field can store or send: a 400 at the field, never a 500 (audit) ------------------------------

_SPEC = pf.BODY["JobSpecs"][0]
_RAY = {**pf.BODY, "JobType": "RayJob", "JobSpecs": [{**_SPEC, "Type": "Head"}]}
_OSS = "oss://bucket.oss-cn-hangzhou.aliyuncs.com/p/"


def _unstorable_bodies(bad: str) -> list[tuple[dict, str]]:
    """(body, wire path) with `bad` in each text the audit found passing the checks and 500ing the create."""
    return [
        ({**pf.BODY, "Description": f"a{bad}b"}, "Description"),
        ({**pf.BODY, "UserCommand": f"echo {bad}x"}, "UserCommand"),
        ({**pf.BODY, "Envs": {"A": f"x{bad}"}}, "Envs"),
        ({**pf.BODY, "Settings": {"Tags": {"team": f"v{bad}"}}}, "Settings.Tags"),
        ({**pf.BODY, "DataSources": [{"DataSourceId": "d-1", "MountPath": f"/mnt/a{bad}"}]}, "DataSources[0]"),
        ({**pf.BODY, "DataSources": [{"Uri": f"{_OSS}{bad}", "MountPath": "/mnt/o"}]}, "DataSources[0]"),
        ({**pf.BODY, "CodeSource": {"CodeSourceId": "code-1", "Branch": f"main{bad}"}}, "CodeSource.Branch"),
        ({**pf.BODY, "Settings": {"EnableErrorMonitoringInAIMaster": True, "ErrorMonitoringArgs": f"--x {bad}"}},
         "Settings.ErrorMonitoringArgs"),
        ({**_RAY, "Settings": {"AdvancedSettings": {"RayRedisAddress": f"redis{bad}:6379"}}},
         "Settings.AdvancedSettings"),
    ]


@pytest.mark.parametrize(("bad", "words"), [("\x00", "NUL character"), ("\ud800", "lone surrogate")],
                         ids=["nul", "lone-surrogate"])
def test_text_that_cannot_be_stored_is_a_400_at_its_field_in_the_create_and_the_dry_run(team, api, bad, words):
    # PostgreSQL refused the NUL ("\u0000 cannot be converted to text": 500) and SQLite stored it; the lone
    # surrogate failed the body size check's encode(): 500 in both calls.
    for body, path in _unstorable_bodies(bad):
        for url in (f"/api/v1/jobs?workspace={team.alpha.pk}", f"/api/v1/jobs/validate?workspace={team.alpha.pk}"):
            answer = api["member"].post(url, body)
            assert answer.status_code == 400, (url, path, answer.content[:200])
            errors = answer.json()["errors"]
            assert any(p.startswith(path) and words in " ".join(m) for p, m in errors.items()), (url, path, errors)
    assert Job.objects.count() == 3


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(team, api, constant):
    # Python's json reads them; SQLite's JSON_VALID check then failed the save: a 500.
    text = json.dumps({**_RAY, "Settings": {"AdvancedSettings": {"RayRuntimeEnv": {"x": "__N__"}}}})
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", text.replace('"__N__"', constant))
    assert answer.status_code == 400
    assert answer.json()["errors"] == {"": [f"The request body is not valid JSON: {constant} is not a JSON number."]}
    assert Job.objects.count() == 3


def test_a_value_nested_beyond_the_limit_is_a_400_not_a_recursion_error(team, api):
    # RayRuntimeEnv nested 600 levels passed the checks, then copy.deepcopy (strip_secrets) raised RecursionError.
    deep = '{"a":' * 600 + "1" + "}" * 600
    text = json.dumps({**_RAY, "Settings": {"AdvancedSettings": {"RayRuntimeEnv": "__X__"}}}).replace('"__X__"', deep)
    for url in (f"/api/v1/jobs?workspace={team.alpha.pk}", f"/api/v1/jobs/validate?workspace={team.alpha.pk}"):
        answer = api["member"].post(url, text)
        assert answer.status_code == 400, (url, answer.content[:200])
        (path, messages), = answer.json()["errors"].items()
        assert path.startswith("Settings.AdvancedSettings.RayRuntimeEnv.a.a") and "Nested too deeply" in messages[0]
    # Within the limit it is the spec's own rule that speaks, at the field.
    within = '{"a":' * 40 + "1" + "}" * 40
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", text.replace(deep, within))
    assert answer.json()["errors"] == {"Settings.AdvancedSettings": [
        "RayRuntimeEnv: Nested too deeply: at most 32 levels of objects and lists."]}
    assert Job.objects.count() == 3


def test_a_command_with_crlf_line_breaks_is_refused_saying_the_console_sends_lf(team, api):
    answer = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                                {**pf.BODY, "UserCommand": "cd /mnt/code\r\npython train.py"})
    assert answer.status_code == 400
    assert answer.json()["errors"]["UserCommand"] == [
        'Has CR (\\r) line breaks, which the console turns into LF (a shell takes a CR as part of its line): send '
        '"cd /mnt/code\\npython train.py".']
    fixed = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                               {**pf.BODY, "UserCommand": "cd /mnt/code\npython train.py"})
    assert fixed.status_code == 201, fixed.json()


def test_tiny_cpu_and_memory_get_their_minimums_not_an_exponent(team, api):
    # The API refused "0.00001" asking for "1e-05", and the wizard sent "CPU": "1e-07", "Memory": "1e-09Gi".
    quota = {**pf.BODY, "ResourceId": "quota-1", "JobSpecs": [
        {"Type": "Worker", "Image": _SPEC["Image"], "PodCount": 1, "ResourceConfig": {"CPU": "0.00001",
                                                                                      "Memory": "0.000000001Gi"}}]}
    errors = api["member"].post(f"/api/v1/jobs/validate?workspace={team.alpha.pk}", quota).json()["errors"]
    assert errors == {
        "JobSpecs[0].ResourceConfig.CPU": [
            "The CPU cores must be at least 0.001 (one millicore, the finest step Kubernetes takes)."],
        "JobSpecs[0].ResourceConfig.Memory": ["The memory must be at least 0.001 GiB (about 1 MiB)."]}
    quota["JobSpecs"][0]["ResourceConfig"] = {"CPU": "0.001", "Memory": "0.0625Gi"}
    assert api["member"].post(f"/api/v1/jobs/validate?workspace={team.alpha.pk}", quota).json()["valid"] is True


# --- the request's edges: body, content type, query parameters ---------------------------------------------


def test_an_empty_body_is_not_json_for_the_create_and_the_dry_run_but_a_clone_may_send_none(team, api):
    """QA: the create took an empty body as {} while the dry run said "not valid JSON"."""
    for url in (f"/api/v1/jobs?workspace={team.alpha.pk}", f"/api/v1/jobs/validate?workspace={team.alpha.pk}"):
        answer = api["member"].post(url)
        assert answer.status_code == 400 and answer.json() == {"errors": {"": [
            "The request body is empty, which is not valid JSON: send a JSON object."]}}, url
    assert api["member"].post(f"/api/v1/jobs/{team.job.pk}/clone").status_code == 201, "no body: no changes"


def test_a_body_sent_as_a_form_or_text_is_a_415_saying_which_header_to_send(team, api):
    """QA: `curl -d` sends application/x-www-form-urlencoded, and the body was parsed as JSON all the same."""
    body = json.dumps({**pf.BODY, "DisplayName": "typed"})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api['member'].token}"}
    client = api["member"].client
    for url in (f"/api/v1/jobs?workspace={team.alpha.pk}", f"/api/v1/jobs/validate?workspace={team.alpha.pk}",
                f"/api/v1/jobs/{team.job.pk}/clone"):
        for kind in ("application/x-www-form-urlencoded", "text/plain; charset=utf-8"):
            answer = client.generic("POST", url, body, content_type=kind, **auth)
            assert answer.status_code == 415, (url, kind, answer.status_code)
            assert "-H 'Content-Type: application/json'" in answer.json()["errors"][""][0]
    assert not Job.objects.filter(display_name="typed").exists()
    # A +json type is JSON; no Content-Type at all says nothing else, and the body is parsed strictly as JSON.
    assert client.generic("POST", f"/api/v1/jobs/validate?workspace={team.alpha.pk}", body,
                          content_type="application/vnd.api+json", **auth).json()["valid"]
    assert client.generic("POST", f"/api/v1/jobs?workspace={team.alpha.pk}", body, content_type="",
                          **auth).status_code == 201


def test_nesting_beyond_pythons_own_limit_is_said_in_the_apis_words(team, api):
    """QA: 5000 levels answered Python's "maximum recursion depth exceeded while decoding a JSON array..."."""
    deep = '{"DisplayName": "x", "Extra": ' + "[" * 5000 + "]" * 5000 + "}"
    for url in (f"/api/v1/jobs?workspace={team.alpha.pk}", f"/api/v1/jobs/validate?workspace={team.alpha.pk}"):
        answer = api["member"].post(url, deep)
        assert answer.status_code == 400 and answer.json() == {"errors": {"": [
            "The request body is nested too deeply (at most 64 levels of objects and lists)."]}}, url


def test_the_list_refuses_an_unknown_or_repeated_parameter_naming_the_known_ones(team, api):
    """QA: ?staus=Running listed every job; ?status=Running&status=Stopped silently used the last."""
    viewer = api["viewer"]
    typo = viewer.get("/api/v1/jobs", staus="Running")
    assert typo.status_code == 400 and list(typo.json()["errors"]) == ["staus"]
    message = typo.json()["errors"]["staus"][0]
    assert message.startswith("Unknown parameter: send ") and "status" in message and "workspace" in message
    twice = viewer.client.get("/api/v1/jobs?status=Running&status=Stopped",
                              HTTP_AUTHORIZATION=f"Bearer {viewer.token}")
    assert twice.status_code == 400 and twice.json()["errors"] == {"status": ["Sent more than once: send it once."]}
    assert viewer.client.get("/api/v1/jobs?tag=a&tag=b", HTTP_AUTHORIZATION=f"Bearer {viewer.token}"
                             ).status_code == 200, "tag may repeat"
    # The list page's forms and htmx add parameters of their own: the page is not held to the API's rule.
    assert pf.client_for(team.users["viewer"]).get("/", {"staus": "Running", "tag_add": ""}).status_code == 200


def test_every_job_endpoint_refuses_an_unknown_or_repeated_query_parameter(team, api):
    """QA: only the lists checked their query. POST /api/v1/jobs?workspace=1&templat=3 created a job free of the
    template's locks, ?workspace=1&workspace=2 used the last; GET /api/v1/jobs/1?fields=x, a stop, a clone and
    GET /api/v1/workspaces took anything."""
    member, one = api["member"], f"/api/v1/jobs/{team.job.pk}"
    alpha = team.alpha.pk
    for url, payload in ((f"/api/v1/jobs?workspace={alpha}&templat={team.template.pk}", pf.BODY),
                         (f"/api/v1/jobs/validate?workspace={alpha}&templat={team.template.pk}", pf.BODY),
                         (f"{one}/clone?dry_run=1", {}), (f"{one}/stop?force=1", None)):
        answer = member.post(url, payload)
        key = "templat" if "templat" in url else url.rsplit("?", 1)[1].split("=")[0]
        assert answer.status_code == 400 and list(answer.json()["errors"]) == [key], (url, answer.json())
        assert answer.json()["errors"][key][0].startswith("Unknown parameter"), url
    created = member.post(f"/api/v1/jobs?workspace={alpha}&workspace={team.beta.pk}", pf.BODY)
    assert created.status_code == 400
    assert created.json()["errors"] == {"workspace": ["Sent more than once: send it once."]}
    for url in (f"{one}?fields=name", "/api/v1/workspaces?role=admin"):
        answer = member.get(url)
        assert answer.status_code == 400, url
        assert answer.json()["errors"][url.rsplit("?", 1)[1].split("=")[0]] == [
            "Unknown parameter: this endpoint takes none."], url
    assert Job.objects.count() == 3 and Job.objects.get(pk=team.job.pk).status == team.job.status
    # The parameters each call does take still work.
    started = member.post(f"/api/v1/jobs/validate?workspace={alpha}&template={team.template.pk}&version=1", pf.BODY)
    assert "Unknown parameter" not in started.content.decode()
    assert member.get(one).status_code == 200 and member.get("/api/v1/workspaces").status_code == 200


def test_a_stop_refuses_a_body_with_fields_rather_than_dropping_them(team, api):
    """QA: POST /stop {"reason": "diverged"} answered 202, the reason silently dropped."""
    url = f"/api/v1/jobs/{team.job.pk}/stop"
    member = api["member"]
    refused = member.post(url, {"reason": "diverged"})
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"reason": ["Unknown field: this call takes no body (send none, or {})."]}
    assert member.post(url, ["x"]).status_code == 400 and member.post(url, "{").status_code == 400
    form = member.client.post(url, {"reason": "x"}, HTTP_AUTHORIZATION=f"Bearer {member.token}")  # multipart
    assert form.status_code == 400 and list(form.json()["errors"]) == ["reason"]
    assert Job.objects.get(pk=team.job.pk).stop_requested_at is None, "nothing was stopped"
    # No body (also as `curl -X POST -d ''` sends it: a form type, empty) or {} is a stop.
    empty_form = member.client.post(url, "", content_type="application/x-www-form-urlencoded",
                                    HTTP_AUTHORIZATION=f"Bearer {member.token}")
    assert empty_form.status_code == 202
    assert member.post(url, {}).status_code == 202


def test_a_clone_names_the_key_it_was_sent_when_a_secret_is_of_the_wrong_type(team, api):
    """QA: {"secret_envs": ["x"]} was an error at SecretEnvs, a key the caller never sent; {"registry_password": 5}
    said "send it again", as if it had not been sent."""
    body = {**pf.BODY, "DisplayName": "private", "JobSpecs": [{
        **pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob", "Password": "hunter2-registry"}}]}
    source = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).json()["id"]
    url = f"/api/v1/jobs/{source}/clone"
    answer = api["member"].post(url, {"secret_envs": ["x"], "registry_password": 5})
    assert answer.status_code == 400
    assert answer.json()["errors"] == {
        "secret_envs": ['Must be an object of variable names to secret values, e.g. {"WANDB_API_KEY": "..."}.'],
        "registry_password": ["Must be a string."]}
    assert not Job.objects.filter(cloned_from_id=source).exists()
    assert api["member"].post(url, {"registry_password": "again", "secret_envs": None}).status_code == 201


def test_a_read_only_token_is_refused_a_create_before_being_asked_to_name_a_workspace(team):
    """QA: a read-only token of a user in two workspaces got "name the workspace with ?workspace=" on a create, and
    only once it did, the 403 that it may not create at all."""
    Membership.objects.create(user=team.users["member"], workspace=team.beta, role=Membership.MEMBER)
    read_only = Api(team.users["member"], read_only=True)
    for url, payload in (("/api/v1/jobs", pf.BODY), ("/api/v1/sweeps", {"Job": pf.BODY, "Parameters": {"A": [1]}})):
        answer = read_only.post(url, payload)
        assert answer.status_code == 403, (url, answer.json())
        assert answer.json()["error"] == "This API token is read-only: it may not create. Use a read-write token."
    dry_run = read_only.post("/api/v1/jobs/validate", pf.BODY)
    assert dry_run.status_code == 400 and "candidates" in dry_run.json(), "a dry run may still ask which workspace"
    assert Job.objects.count() == 3


def test_a_clones_registry_password_without_a_registry_username_is_refused_not_dropped(team, api):
    """QA: {"registry_password": "pw"} on a clone of a job without registry credentials answered 201, the password
    silently dropped (no role had an ImageConfig to take it)."""
    url = f"/api/v1/jobs/{team.job.pk}/clone"
    refused = api["member"].post(url, {"registry_password": "pw-registry"})
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"registry_password": [
        'The job has no registry username for this password: send JobSpecs with ImageConfig {"Username": ...} in '
        "changes, or leave registry_password out."]}
    assert not Job.objects.filter(cloned_from=team.job).exists()
    # With the username in changes, the password goes with it: sealed, never stored.
    role = {**pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob"}}
    made = api["member"].post(url, {"registry_password": "pw-registry", "changes": {"JobSpecs": [role]}})
    assert made.status_code == 201, made.json()
    clone = Job.objects.get(pk=made.json()["id"])
    assert secretbox.unseal(clone.sealed_secrets) == {"registry_password": "pw-registry"}
    assert clone.body["JobSpecs"][0]["ImageConfig"] == {"Username": "bob"} and "pw-registry" not in made.text


def test_a_clone_whose_changes_drop_the_registry_username_refuses_the_password_it_was_sent(team, api):
    body = {**pf.BODY, "DisplayName": "private", "JobSpecs": [{
        **pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob", "Password": "hunter2-registry"}}]}
    source = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", body).json()["id"]
    answer = api["member"].post(f"/api/v1/jobs/{source}/clone", {
        "registry_password": "again", "changes": {"JobSpecs": pf.BODY["JobSpecs"]}})
    assert answer.status_code == 400 and list(answer.json()["errors"]) == ["registry_password"], answer.json()
    assert not Job.objects.filter(cloned_from_id=source).exists()


def test_a_clones_ray_redis_password_is_used_for_a_ray_job_and_refused_for_another(team, api):
    """QA: {"ray_redis_password": "pw"} on a clone of a job without one answered 201, the password silently
    dropped. A RayJob takes it (sealed, never stored); another job type says it has none."""
    refused = api["member"].post(f"/api/v1/jobs/{team.job.pk}/clone", {"ray_redis_password": "pw-ray"})
    assert refused.status_code == 400 and list(refused.json()["errors"]) == ["ray_redis_password"], refused.json()
    assert "Only a RayJob has a Ray Redis password" in refused.json()["errors"]["ray_redis_password"][0]
    assert not Job.objects.filter(cloned_from=team.job).exists()
    source = api["member"].post(f"/api/v1/jobs?workspace={team.alpha.pk}", {**_RAY, "DisplayName": "ray"})
    assert source.status_code == 201, source.json()
    made = api["member"].post(f"/api/v1/jobs/{source.json()['id']}/clone", {"ray_redis_password": "pw-ray"})
    assert made.status_code == 201, made.json()
    clone = Job.objects.get(pk=made.json()["id"])
    assert secretbox.unseal(clone.sealed_secrets) == {"RayRedisPassword": "pw-ray"} and "pw-ray" not in made.text
    assert "pw-ray" not in json.dumps(clone.body)


def test_the_mask_is_refused_as_a_secret_value_as_it_is_in_envs(team, api):
    """QA: SecretEnvs {"WANDB_API_KEY": "********"} was sealed as the key, where Envs refuses the mask. One rule,
    one message."""
    url = f"/api/v1/jobs?workspace={team.alpha.pk}"
    before = Job.objects.count()
    in_envs = api["member"].post(url, {**pf.BODY, "Envs": {"WANDB_API_KEY": "********"}})
    in_secret_envs = api["member"].post(url, {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "********"}})
    message = "******** stands for a secret value that is never copied: send the value in SecretEnvs."
    assert in_envs.status_code == 400 and in_envs.json()["errors"] == {"Envs.WANDB_API_KEY": [message]}
    assert in_secret_envs.status_code == 400
    assert in_secret_envs.json()["errors"] == {"SecretEnvs.WANDB_API_KEY": [message]}
    dry_run = api["member"].post(f"/api/v1/jobs/validate?workspace={team.alpha.pk}",
                                 {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "********"}})
    assert dry_run.status_code == 400 and list(dry_run.json()["errors"]) == ["SecretEnvs.WANDB_API_KEY"]
    assert Job.objects.count() == before
    # A clone takes them as secret_envs: its errors are at the key it was sent (were at SecretEnvs.<NAME>).
    source = api["member"].post(url, {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "w-secret"}}).json()["id"]
    clone_url = f"/api/v1/jobs/{source}/clone"
    for value, said in (("********", message.replace("in SecretEnvs", "in secret_envs")),
                        ("", "Must be a non-empty string.")):
        answer = api["member"].post(clone_url, {"secret_envs": {"WANDB_API_KEY": value}})
        assert answer.status_code == 400 and answer.json()["errors"] == {"secret_envs.WANDB_API_KEY": [said]}, value
    assert not Job.objects.filter(cloned_from_id=source).exists()
