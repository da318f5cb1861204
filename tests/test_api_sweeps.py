"""The sweeps API (create with the wizard's grid rules and the jobs API's body checks, list, get, stop all) and the
usage report API, through Django's test client with real tokens; then one sweep run for real on the stack."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from jobs import api_sweeps, apitokens, secretbox, sweeps
from jobs import catalog as C
from jobs.models import AuditEvent, Job, Sweep
from tests import portal_fixtures as pf
from tests.support.api import Api

GRID = {"LR": ["0.1", "0.01"], "BS": [32, 64]}


# --- the grid, without a request ----------------------------------------------------------------------------


def test_values_may_be_numbers_taken_as_written_in_the_order_given():
    grid, errors = api_sweeps.parameters_grid({"LR": [Decimal("0.00001"), " 0.1 "], "BS": [64, 32]}, limit=50)
    assert errors == {}
    assert grid.parameters == (("LR", ("0.00001", "0.1")), ("BS", ("64", "32")))
    assert grid.trials()[0] == {"LR": "0.00001", "BS": "64"}


@pytest.mark.parametrize(("given", "path", "fragment"), [
    ({"LR": []}, "Parameters.LR", "at least one value"),
    ({"LR": "0.1, 0.2"}, "Parameters.LR", "Must be a list"),
    ({"LR": [True, False]}, "Parameters.LR", "string or a number"),
    ({"LR": [None, 1]}, "Parameters.LR", "string or a number"),
    ({"LR": ["0.1", ""]}, "Parameters.LR", "empty value"),
    ({"LR": ["0.1", " 0.1"]}, "Parameters.LR", "0.1 more than once"),
    ({"LR": ["0.1,0.2", "3"]}, "Parameters.LR", "comma"),
    ({"1LR": ["1", "2"]}, "Parameters.1LR", "not an environment variable name"),
    ({"WANDB_API_KEY": ["a", "b"]}, "Parameters.WANDB_API_KEY", "looks like the name of a secret"),
    ({"MODE": ["a", "b"]}, "Parameters.MODE", "already one of the job's environment variables"),
    ({"PATH": ["1", "2"]}, "Parameters.PATH", "PATH is a reserved variable"),
    ({"RANK": [0, 1]}, "Parameters.RANK", "RANK is a reserved variable"),
    ({"": ["a", "b"]}, "Parameters.", "name is empty"),
    ({"LR": ["0.1"]}, "Parameters", "at least 2 trials; these values make 1"),
    ({"A": [str(i) for i in range(8)], "B": [str(i) for i in range(8)]}, "Parameters", "make 64 trials"),
    ({f"P{i}": ["1"] for i in range(9)}, "Parameters", "at most 8 parameters"),
    ({}, "Parameters", "Must be an object"),
    (["LR"], "Parameters", "Must be an object"),
])
def test_each_rule_is_an_error_at_its_parameter_or_the_grid(given, path, fragment):
    grid, errors = api_sweeps.parameters_grid(given, ["MODE"], limit=50)
    assert grid is None
    assert fragment in " ".join(errors.get(path, [])), errors


def test_the_rules_are_the_wizards():
    # One source of truth: the same messages as the Sweep box's, without its "Line N:" and text syntax.
    text_errors = sweeps.parse("LR = 0.1, 0.1\nWANDB_API_KEY = a, b", limit=50)[1]
    _grid, errors = api_sweeps.parameters_grid({"LR": ["0.1", "0.1"], "WANDB_API_KEY": ["a", "b"]}, limit=50)
    api_errors = [errors["Parameters.LR"][0], errors["Parameters.WANDB_API_KEY"][0]]
    assert [e.split(": ", 1)[1] for e in text_errors] == api_errors


# --- create -------------------------------------------------------------------------------------------------


def job_body(name="lr-grid", **changes):
    return {**pf.BODY, "DisplayName": name, "UserCommand": "python train.py --lr $LR --bs $BS", **changes}


def create(api, team, job=None, parameters=None, **query):
    url = f"/api/v1/sweeps?workspace={team.alpha.pk}" + "".join(f"&{k}={v}" for k, v in query.items())
    return api.post(url, {"Job": job or job_body(), "Parameters": parameters or GRID})


def test_a_sweep_is_created_one_job_per_trial_in_grid_order(team, api):
    answer = create(api["member"], team)
    assert answer.status_code == 201, answer.json()
    data = answer.json()
    sweep = Sweep.objects.get()
    assert answer["Location"].endswith(f"/api/v1/sweeps/{sweep.pk}")
    assert (data["id"], data["name"], data["owner"], data["trial_count"]) == (sweep.pk, "lr-grid", "member", 4)
    assert data["parameters"] == {"LR": ["0.1", "0.01"], "BS": ["32", "64"]}
    assert [(t["number"], t["values"]) for t in data["trials"]] == [
        (1, {"LR": "0.1", "BS": "32"}), (2, {"LR": "0.1", "BS": "64"}),
        (3, {"LR": "0.01", "BS": "32"}), (4, {"LR": "0.01", "BS": "64"})]
    assert data["tally"] == {"Submitting": 4} and data["active"] is True
    jobs = [Job.objects.get(pk=t["job"]["id"]) for t in data["trials"]]
    assert [j.display_name for j in jobs] == ["lr-grid-01", "lr-grid-02", "lr-grid-03", "lr-grid-04"]
    assert jobs[2].body["Envs"] == {"LR": "0.01", "BS": "32"}
    assert {(j.owner, j.workspace, j.status) for j in jobs} == {(team.users["member"], team.alpha, "Submitting")}
    assert AuditEvent.objects.filter(job__in=jobs, action="created").count() == 4
    assert data["page"].endswith(sweep.get_absolute_url()) and data["trials"][0]["job"]["url"].endswith(
        f"/api/v1/jobs/{jobs[0].pk}")


def test_secret_envs_are_sealed_into_every_trial_never_stored_or_echoed(team, api):
    job = job_body(Envs={"EPOCHS": "3"}, SecretEnvs={"WANDB_API_KEY": "wandb-api-secret"})
    answer = create(api["member"], team, job, {"LR": ["1", "2"]})
    assert answer.status_code == 201, answer.json()
    assert "wandb-api-secret" not in answer.text
    for trial in Sweep.objects.get().trials.select_related("job"):
        assert trial.job.body["Envs"] == {"EPOCHS": "3", "WANDB_API_KEY": "********", "LR": trial.values["LR"]}
        assert secretbox.unseal(trial.job.sealed_secrets) == {"env:WANDB_API_KEY": "wandb-api-secret"}
        assert "wandb-api-secret" not in json.dumps(trial.job.body)


def test_a_parameter_may_not_redefine_a_secret_env_either(team, api):
    answer = create(api["member"], team, job_body(SecretEnvs={"LR": "x"}), {"LR": ["1", "2"]})
    assert answer.status_code == 400
    assert "already one of the job's environment variables" in answer.json()["errors"]["Parameters.LR"][0]


def test_the_job_and_the_grid_are_reported_together_at_their_paths_nothing_saved(team, api):
    bad_job = job_body(JobSpecs=[{**pf.BODY["JobSpecs"][0], "PodCount": 0}], WorkspaceId="someone-elses")
    answer = create(api["member"], team, bad_job, {"LR": ["1", "1"]})
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert set(errors) == {"Job.JobSpecs[0].PodCount", "Job.WorkspaceId", "Parameters.LR"}, errors
    assert Sweep.objects.count() == 0 and Job.objects.count() == 3


@pytest.mark.parametrize(("payload", "path", "fragment"), [
    ({"Parameters": GRID}, "Job", "Must be a JSON object"),
    ({"Job": "train", "Parameters": GRID}, "Job", "Must be a JSON object"),
    ({"Job": {}, "Parameters": GRID}, "Job.DisplayName", ""),
    ({"Job": job_body()}, "Parameters", "Must be an object"),
    ({"Job": job_body(), "Parameters": GRID, "Name": "x"}, "Name",
     "Unknown field; the fields are: Job, Parameters, Search (optional), EarlyStopping (optional)."),
    ({"Job": job_body(SecretEnvs={"A_KEY": ""}), "Parameters": GRID}, "Job.SecretEnvs.A_KEY", "non-empty"),
    ({"Job": job_body(DisplayName=""), "Parameters": GRID}, "Job.DisplayName", ""),
    ([1], "", "JSON object"),
    ("{not json", "", "not valid JSON"),
])
def test_bad_requests_get_400_at_the_field(team, api, payload, path, fragment):
    answer = api["member"].post(f"/api/v1/sweeps?workspace={team.alpha.pk}", payload)
    assert answer.status_code == 400, answer.content
    errors = answer.json()["errors"]
    assert path in errors and fragment in " ".join(errors[path]), errors
    assert Sweep.objects.count() == 0


def test_the_first_trial_the_rules_refuse_is_the_error(team, api):
    envs = {f"V{i}": "1" for i in range(C.MAX_ENVS - 1)}  # one more variable is allowed, two are not
    assert create(api["member"], team, job_body("ok", Envs=envs), {"A": ["1", "2"]}).status_code == 201
    answer = create(api["member"], team, job_body("too-many", Envs=envs), {"A": ["1", "2"], "B": ["x", "y"]})
    assert answer.status_code == 400
    assert answer.json()["errors"] == {"Parameters": [
        f"Trial 1 (A=1, B=x) would be refused: Envs: At most {C.MAX_ENVS} environment variables are allowed."]}
    assert Sweep.objects.count() == 1


def test_a_trial_refused_for_a_huge_value_is_named_without_repeating_the_value_whole(team, api):
    answer = create(api["member"], team, job_body("huge"), {"A": ["x" * 100_000, "y"]})
    assert answer.status_code == 400
    [message] = answer.json()["errors"]["Parameters"]
    assert message.startswith(f"Trial 1 (A={'x' * sweeps.SHOWN_VALUE}…) would be refused:"), message[:200]
    assert len(message) < 1_000 and "CreateJob accepts at most" in message


def test_a_templates_locks_apply_and_a_lock_on_the_variables_refuses_a_sweep(team, api):
    from jobs import templates_lib

    base = {**pf.BODY, "DisplayName": "from-tpl"}
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    changed = create(api["member"], team, {**base, "UserCommand": "echo other"}, template=team.template.pk)
    assert changed.status_code == 400 and "locked by the template" in changed.json()["errors"]["Job.UserCommand"][0]
    made = create(api["member"], team, base, template=team.template.pk)
    assert made.status_code == 201
    # Each trial remembers the template, so that its clones keep the locks (templates_lib.linked).
    trials = [Job.objects.get(pk=t["job"]["id"]) for t in made.json()["trials"]]
    assert {templates_lib.linked(trial)[0] for trial in trials} == {team.template}
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.envs"])
    refused = create(api["member"], team, base, template=team.template.pk)
    assert refused.status_code == 400
    assert "locks the environment variables" in refused.json()["errors"]["Parameters"][0]
    unknown = create(api["member"], team, base, template=999999)
    assert unknown.status_code == 400 and "template" in unknown.json()["errors"]
    assert Sweep.objects.count() == 1


def test_a_lock_on_the_variables_holds_for_a_sweeps_secret_variables(team, api):
    # QA: SecretEnvs slipped past the template's lock on Environment variables (one check_body for jobs and sweeps).
    from jobs import templates_lib

    templates_lib.set_locks(team.template, team.users["admin"], ["environment.envs"])
    refused = create(api["member"], team, {**job_body(), "SecretEnvs": {"LD_PRELOAD_TOKEN": "x"}},
                     template=team.template.pk)
    assert refused.status_code == 400
    assert "locked by the template" in refused.json()["errors"]["Job.SecretEnvs"][0]
    assert Sweep.objects.count() == 0


def test_who_may_create(team, api):
    assert create(api["viewer"], team).status_code == 403
    assert create(Api(team.users["member"], read_only=True), team).status_code == 403
    assert create(api["other"], team).status_code == 404
    assert create(Api(team.users["admin"], workspace=team.beta), team).status_code == 404
    assert pf.client_for().post(f"/api/v1/sweeps?workspace={team.alpha.pk}").status_code == 401
    assert Sweep.objects.count() == 0
    assert create(api["admin"], team).status_code == 201


# --- list, get, stop ----------------------------------------------------------------------------------------


def test_list_and_get_within_the_callers_workspaces_only(team, api):
    first = create(api["member"], team, parameters={"LR": ["1", "2"]}).json()
    second = create(api["admin"], team, job_body("bs-grid"), {"BS": ["1", "2", "3"]}).json()
    Job.objects.filter(pk=first["trials"][0]["job"]["id"]).update(status="Succeeded")
    rows = api["viewer"].get("/api/v1/sweeps", workspace=team.alpha.pk).json()["sweeps"]
    assert [(s["id"], s["trial_count"]) for s in rows] == [(second["id"], 3), (first["id"], 2)], "newest first"
    assert rows[1]["tally"] == {"Succeeded": 1, "Submitting": 1} and "trials" not in rows[1]
    got = api["viewer"].get(f"/api/v1/sweeps/{first['id']}").json()
    assert [t["job"]["status"] for t in got["trials"]] == ["Succeeded", "Submitting"]
    assert got["parameters"] == {"LR": ["1", "2"]} and got["owner"] == "member"
    assert api["other"].get(f"/api/v1/sweeps/{first['id']}").status_code == 404
    assert api["other"].get("/api/v1/sweeps", workspace=team.alpha.pk).status_code == 404
    assert api["other"].get("/api/v1/sweeps").json()["sweeps"] == []  # Beta, their only workspace
    scoped = Api(team.users["admin"], workspace=team.beta)
    assert scoped.get(f"/api/v1/sweeps/{first['id']}").status_code == 404
    assert Api(team.users["viewer"], read_only=True).get(f"/api/v1/sweeps/{first['id']}").status_code == 200


def test_an_unknown_or_repeated_query_parameter_is_a_400_at_it(team, api):
    """QA: unknown parameters were silently ignored (?rnk=loss answered unranked), a repeated one took its last."""
    sweep = create(api["member"], team, parameters={"LR": ["1", "2"]}).json()["id"]
    viewer = api["viewer"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {viewer.token}"}
    typo = viewer.get("/api/v1/sweeps", workspace=team.alpha.pk, workspce=team.alpha.pk)
    assert typo.status_code == 400
    assert typo.json()["errors"] == {"workspce": ["Unknown parameter: send after, workspace."]}
    twice = viewer.client.get(f"/api/v1/sweeps?workspace={team.alpha.pk}&workspace={team.beta.pk}", **auth)
    assert twice.status_code == 400 and twice.json()["errors"] == {"workspace": ["Sent more than once: send it once."]}
    rnk = viewer.get(f"/api/v1/sweeps/{sweep}", rnk="loss")
    assert rnk.status_code == 400 and rnk.json()["errors"] == {"rnk": ["Unknown parameter: send goal, rank, value."]}
    assert viewer.get(f"/api/v1/sweeps/{sweep}", value="last", goal="max").status_code == 200
    usage = viewer.get(f"/api/v1/workspaces/{team.alpha.pk}/usage", day=7)
    assert usage.status_code == 400 and list(usage.json()["errors"]) == ["day"]


def test_stop_all_follows_the_pages_rule_per_trial(team, api):
    mine = create(api["member"], team, parameters={"LR": ["1", "2", "3"]}).json()
    ids = [t["job"]["id"] for t in mine["trials"]]
    Job.objects.filter(pk=ids[2]).update(status="Succeeded")
    assert api["other"].post(f"/api/v1/sweeps/{mine['id']}/stop").status_code == 404
    assert Api(team.users["member"], read_only=True).post(f"/api/v1/sweeps/{mine['id']}/stop").status_code == 403
    viewer = api["viewer"].post(f"/api/v1/sweeps/{mine['id']}/stop")
    assert viewer.status_code == 403 and "may not stop" in viewer.json()["error"]
    assert Job.objects.filter(pk__in=ids, status="Submitting").count() == 2
    answer = api["member"].post(f"/api/v1/sweeps/{mine['id']}/stop")
    assert answer.status_code == 202
    data = answer.json()
    # Never submitted: stopped at once, without DLC.
    assert [(r["number"], r["job"], r["result"]) for r in data["results"]] == [
        (1, ids[0], "stopped"), (2, ids[1], "stopped"), (3, ids[2], "already-finished")]
    assert data["summary"] == "2 × Stopped" and data["sweep"]["active"] is False
    assert [Job.objects.get(pk=i).status for i in ids] == ["Stopped", "Stopped", "Succeeded"]
    assert api["member"].post(f"/api/v1/sweeps/{mine['id']}/stop").json()["summary"] == "No trial is active."


def test_a_member_stops_only_their_own_trials_an_admin_any(team, api):
    theirs = create(api["admin"], team, parameters={"LR": ["1", "2"]}).json()
    refused = api["member"].post(f"/api/v1/sweeps/{theirs['id']}/stop").json()
    assert [r["result"] for r in refused["results"]] == ["not-permitted"] * 2
    assert [r["result"] for r in api["admin"].post(f"/api/v1/sweeps/{theirs['id']}/stop").json()["results"]] == \
        ["stopped"] * 2


# --- usage --------------------------------------------------------------------------------------------------


def ran(team, name, owner="member", *, hours=2.0, job_type="PyTorchJob", roles=None):
    now = datetime.now(UTC)
    started = now - timedelta(hours=hours + 1)
    return Job.objects.create(
        workspace=team.alpha, owner=team.users[owner], display_name=name, job_type=job_type, status="Succeeded",
        dlc_job_id=f"dlc-{name}", created_at=started, started_at=started, finished_at=started + timedelta(hours=hours),
        body={**pf.BODY, "DisplayName": name, "JobSpecs": roles or [
            {"Type": "Worker", "PodCount": 1, "Image": "img", "ResourceConfig": {"CPU": "8", "GPU": "2"}}]})


def test_the_usage_report_as_json(team, api):
    Job.objects.all().delete()  # the fixture's jobs never started
    ran(team, "big", hours=3)
    ran(team, "small", owner="admin", hours=1, job_type="TFJob")
    ran(team, "ecs", owner="admin", hours=1, roles=[{"Type": "Worker", "PodCount": 2, "EcsSpec": "ecs.g6.large"}])
    answer = api["viewer"].get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=7)
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["period"]["days"] == 7 and data["period"]["label"] == "7 days"
    totals = data["totals"]
    assert (totals["jobs"], totals["gpu_hours"], totals["cpu_hours"]) == (3, pytest.approx(8), pytest.approx(32))
    assert totals["node_hours"] == pytest.approx(3 + 1 + 2 * 1) and totals["unknown_size_jobs"] == 1
    assert [(line["key"], line["jobs"]) for line in data["by_owner"]] == [("member", 1), ("admin", 2)]
    assert {line["key"]: line["jobs"] for line in data["by_type"]} == {"PyTorchJob": 2, "TFJob": 1}
    assert [j["name"] for j in data["top_jobs"]] == ["big", "small", "ecs"]
    ecs = data["top_jobs"][2]
    assert (ecs["nodes"], ecs["gpus"], ecs["gpu_hours"]) == (2, None, None)
    # The portal team's backend is a port nothing listens on: the instance types are unknown, and why is said.
    assert data["sizes_unknown"] is True and data["catalog_missing"] is True
    assert "Could not list instance types" in data["catalog_error"]


def test_usage_periods_and_access(team, api):
    url = f"/api/v1/workspaces/{team.alpha.pk}/usage"
    assert api["member"].get(url).json()["period"]["days"] == 30
    bad = api["member"].get(url, days=5)
    assert bad.status_code == 400 and "days" in bad.json()["errors"]
    assert api["member"].get(url, days="abc").status_code == 400
    assert api["other"].get(url).status_code == 404
    assert Api(team.users["admin"], workspace=team.beta).get(url).status_code == 404
    assert Api(team.users["viewer"], read_only=True).get(url).status_code == 200
    assert pf.client_for().get(url).status_code == 401
    assert api["member"].get("/api/v1/workspaces/999999/usage").status_code == 404


# --- OpenAPI ------------------------------------------------------------------------------------------------


def test_the_openapi_document_describes_sweeps_and_usage(db):
    doc = pf.client_for().get("/api/v1/openapi.json").json()
    assert doc["info"]["version"] == "1.16.0"  # 1.6 cron, 1.7 stop, 1.8 costs, 1.9 checks, 1.10-1.16 more
    paths = doc["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/sweeps"])
    assert "get" in paths["/api/v1/sweeps/{id}"] and "post" in paths["/api/v1/sweeps/{id}/stop"]
    assert paths["/api/v1/workspaces/{id}/usage"]["get"]["parameters"][1]["schema"]["enum"] == [1, 7, 30, 90]
    schemas = doc["components"]["schemas"]
    refs = json.dumps(doc)
    for name in ("CreateSweepBody", "Sweep", "SweepList", "SweepStop", "Usage"):
        assert name in schemas and f"#/components/schemas/{name}" in refs, name
    assert set(schemas["CreateSweepBody"]["required"]) == {"Job", "Parameters"}
    assert {"parameters", "tally", "trials", "owner", "created_at"} <= set(schemas["Sweep"]["properties"])
    assert {"totals", "by_owner", "by_type", "top_jobs", "period", "sizes_unknown"} <= set(
        schemas["Usage"]["properties"])


# --- for real -----------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_2x1_sweep_created_by_the_api_runs_on_localdlc(stack, member, workspace):
    """Over real HTTP against the running stack: the worker submits each trial through the SDK, localdlc runs its
    pod, the sync sees both Succeed; each trial's log holds its own values."""
    import requests

    from jobs import status as st
    from tests.support.waiting import wait_for
    from tests.test_skeleton_flow import signed_in_session

    _, raw = apitokens.create_token(member, "sweeper", workspace=workspace)
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {raw}"
    body = {"Job": {"DisplayName": "api-grid", "JobType": "PyTorchJob", "UserCommand": 'echo "trial lr=$LR bs=$BS"',
                    "JobSpecs": [{"Type": "Worker", "Image": "registry.example/pytorch:2.3", "PodCount": 1,
                                  "EcsSpec": "ecs.g6.large"}]},
            "Parameters": {"LR": [0.1, 0.01], "BS": [32]}}
    created = api.post(f"{stack.url}/api/v1/sweeps", params={"workspace": workspace.pk}, json=body, timeout=30)
    assert created.status_code == 201, created.text
    url = created.json()["url"]
    jobs = [Job.objects.get(pk=t["job"]["id"]) for t in created.json()["trials"]]

    def finished():
        for job in jobs:
            job.refresh_from_db()
        return all(job.status in st.TERMINAL and job.pods for job in jobs)

    wait_for(finished, timeout=120, what="both trials ended")
    done = api.get(url, timeout=30).json()
    assert done["tally"] == {"Succeeded": 2} and done["active"] is False, done
    assert [t["values"] for t in done["trials"]] == [{"LR": "0.1", "BS": "32"}, {"LR": "0.01", "BS": "32"}]
    web = signed_in_session(stack.url, member.username)
    for job, trial in zip(jobs, done["trials"], strict=True):
        assert job.status == "Succeeded", (job.display_name, job.reason_message, job.submit_error)
        log = web.get(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs", timeout=30).text
        assert f"trial lr={trial['values']['LR']} bs=32" in log, (job.display_name, log[-500:])


# --- random search ---------------------------------------------------------------------------------------------

RANDOM_PARAMETERS = {"LR": {"Distribution": "loguniform", "Min": 1e-5, "Max": 0.1},
                     "LAYERS": {"Distribution": "int", "Min": 2, "Max": 8}, "BS": [32, 64]}


def create_random(api, team, parameters=None, search=None, job=None):
    return api.post(f"/api/v1/sweeps?workspace={team.alpha.pk}", {
        "Job": job or job_body("lr-random"), "Parameters": parameters or RANDOM_PARAMETERS,
        "Search": {"Method": "random", "Trials": 6, "Seed": 7} if search is None else search})


def test_a_random_search_is_created_with_the_wizards_sampling_and_get_shows_method_trials_seed(team, api):
    answer = create_random(api["member"], team)
    assert answer.status_code == 201, answer.json()
    data = answer.json()
    sweep = Sweep.objects.get()
    assert (sweep.method, sweep.trials_asked, sweep.seed, data["trial_count"]) == ("random", 6, 7, 6)
    assert data["search"] == {"method": "random", "trials": 6, "seed": 7}
    assert data["parameters"] == RANDOM_PARAMETERS | {"BS": ["32", "64"]}
    # One source of truth: the wizard's text of the same search samples the same trials.
    text = "LR = loguniform(0.00001, 0.1)\nLAYERS = int(2, 8)\nBS = 32, 64"
    expected = sweeps.parse_form(text, "6", "7")[0].trials()
    assert [t["values"] for t in data["trials"]] == expected
    assert sweep.specs == [["LR", "loguniform(0.00001, 0.1)"], ["LAYERS", "int(2, 8)"], ["BS", "32, 64"]]
    for trial in data["trials"]:
        assert Job.objects.get(pk=trial["job"]["id"]).body["Envs"] == trial["values"]
    got = api["viewer"].get(f"/api/v1/sweeps/{sweep.pk}").json()
    assert got["search"] == data["search"] and got["parameters"] == data["parameters"]
    listed = api["viewer"].get("/api/v1/sweeps", workspace=team.alpha.pk).json()["sweeps"][0]
    assert listed["search"] == data["search"]
    grid = create(api["member"], team, job_body("a-grid")).json()
    assert grid["search"] == {"method": "grid", "trials": None, "seed": None}


def test_a_distribution_makes_a_random_search_without_a_method_and_a_seed_is_drawn(team, api):
    answer = create_random(api["member"], team, search={"Trials": 3})
    assert answer.status_code == 201, answer.json()
    data = answer.json()
    assert data["search"]["method"] == "random" and data["search"]["trials"] == 3
    assert isinstance(data["search"]["seed"], int) and Sweep.objects.get().seed == data["search"]["seed"]


@pytest.mark.parametrize(("parameters", "search", "path", "fragment"), [
    (None, {"Method": "random"}, "Search.Trials", "Give the number of trials of the random search: 2 to 50."),
    (None, {"Method": "random", "Trials": 1}, "Search.Trials", "A random search runs 2 to 50 trials, not 1."),
    (None, {"Method": "random", "Trials": 51}, "Search.Trials", "not 51"),
    (None, {"Method": "random", "Trials": 2.5}, "Search.Trials", "whole number"),
    (None, {"Method": "random", "Trials": True}, "Search.Trials", "whole number"),
    ({"A": {"Distribution": "int", "Min": 1, "Max": 2}}, {"Trials": 3}, "Search.Trials",
     "only 2 combinations, fewer than the 3 trials asked"),
    (None, {"Method": "random", "Trials": 5, "Seed": -1}, "Search.Seed", "whole number from 0"),
    (None, {"Method": "random", "Trials": 5, "Seed": "x"}, "Search.Seed", "a JSON integer, not the string 'x'."),
    (None, {"Method": "random", "Trials": 5, "Seed": "7"}, "Search.Seed", "a JSON integer, not the string '7'."),
    (None, {"Method": "random", "Trials": "5"}, "Search.Trials", "Must be a JSON integer, not the string '5'."),
    (None, {"Method": "annealing", "Trials": 5}, "Search.Method", 'Must be "grid" or "random"'),
    (None, {"Method": "random", "Trials": 5, "Budget": 1}, "Search.Budget",
     "Unknown field; the fields are: Method, Trials, Seed."),
    (None, "random", "Search", "Must be an object"),
    ({"LR": ["1", "2"]}, {"Method": "grid", "Trials": 5}, "Search.Trials", "Only for a random search"),
    # QA: lists and no Method make a grid, which took Trials and Seed and dropped them unsaid.
    ({"LR": ["1", "2"]}, {"Trials": 5}, "Search.Trials", 'Only for a random search: these parameters are lists'),
    ({"LR": ["1", "2"]}, {"Seed": 3}, "Search.Seed", 'send "Method": "random"'),
    ({"LR": {"Distribution": "uniform", "Min": 0, "Max": 1}}, {"Method": "grid"}, "Parameters.LR",
     "A distribution needs a random search"),
    ({"LR": {"Distribution": "normal", "Min": 0, "Max": 1}}, {"Trials": 5}, "Parameters.LR",
     "LR = normal(...): unknown distribution; use uniform(low, high), loguniform(low, high) or int(low, high)"),
    ({"LR": {"Distribution": "loguniform", "Min": 0, "Max": 0.1}}, {"Trials": 5}, "Parameters.LR",
     "low must be above 0"),
    ({"LR": {"Distribution": "uniform", "Min": 0.5, "Max": 0.1}}, {"Trials": 5}, "Parameters.LR",
     "low must be below high"),
    ({"N": {"Distribution": "int", "Min": 2, "Max": 8.5}}, {"Trials": 5}, "Parameters.N",
     "the bounds must be whole numbers"),
    ({"N": {"Distribution": "int", "Min": 0, "Max": "9" * 5000}}, {"Trials": 5}, "Parameters.N",
     "at most 18 digits"),  # int() of 5,000 digits raised ValueError: a 500 before
    ({"LR": {"Distribution": "uniform", "Min": "a", "Max": 1}}, {"Trials": 5}, "Parameters.LR",
     "the bounds must be numbers, not 'a'"),
    ({"LR": {"Distribution": "uniform", "Min": True, "Max": 1}}, {"Trials": 5}, "Parameters.LR",
     "Min and Max must be numbers"),
    ({"LR": {"Distribution": "uniform", "Max": 1}}, {"Trials": 5}, "Parameters.LR", "missing Min"),
    ({"LR": {"Distribution": "uniform", "Min": 0, "Max": 1, "Step": 1}}, {"Trials": 5}, "Parameters.LR",
     "unknown Step"),
    ({"HF_TOKEN": {"Distribution": "uniform", "Min": 0, "Max": 1}}, {"Trials": 5}, "Parameters.HF_TOKEN",
     "looks like the name of a secret"),
    ({"WORLD_SIZE": {"Distribution": "int", "Min": 1, "Max": 4}}, {"Trials": 3}, "Parameters.WORLD_SIZE",
     "WORLD_SIZE is a reserved variable (set by DLC in every pod)"),
])
def test_random_search_errors_at_their_paths_nothing_saved(team, api, parameters, search, path, fragment):
    answer = create_random(api["member"], team, parameters, search)
    assert answer.status_code == 400, answer.content
    errors = answer.json()["errors"]
    assert fragment in " ".join(errors.get(path, [])), errors
    assert Sweep.objects.count() == 0 and Job.objects.count() == 3  # the team's own jobs only


def test_the_api_and_the_text_give_the_same_distribution_errors():
    text_errors = sweeps.parse_form("LR = loguniform(0, 1)\nN = int(2, 8.5)", "5", "1", limit=50)[1]["sweep"]
    _found, errors = api_sweeps.parameters_grid({"LR": {"Distribution": "loguniform", "Min": 0, "Max": 1},
                                                 "N": {"Distribution": "int", "Min": 2, "Max": "8.5"}},
                                                search={"Trials": 5}, limit=50)
    assert [e.split(": ", 1)[1] for e in text_errors] == [errors["Parameters.LR"][0], errors["Parameters.N"][0]]


def test_the_openapi_document_describes_random_search(db):
    schemas = pf.client_for().get("/api/v1/openapi.json").json()["components"]["schemas"]
    search = schemas["CreateSweepBody"]["properties"]["Search"]
    assert search["properties"]["Method"]["enum"] == ["grid", "random"] and "Trials" in search["properties"]
    assert schemas["SweepDistribution"]["properties"]["Distribution"]["enum"] == ["uniform", "loguniform", "int"]
    assert "$ref" in json.dumps(schemas["CreateSweepBody"]["properties"]["Parameters"])
    assert set(schemas["Sweep"]["properties"]["search"]["properties"]) == {"method", "trials", "seed"}


def test_with_several_workspaces_the_job_bodys_workspace_id_picks_the_workspace(team, api):
    """QA: POST /api/v1/sweeps with an all-workspaces token of a user in two workspaces answered 400 even though
    the Job body's WorkspaceId named the DLC workspace."""
    from jobs.models import Membership

    Membership.objects.create(user=team.users["member"], workspace=team.beta, role="member")
    payload = {"Job": job_body(WorkspaceId="beta"), "Parameters": {"LR": ["1", "2"]}}
    answer = api["member"].post("/api/v1/sweeps", payload)
    assert answer.status_code == 201, answer.json()
    assert Sweep.objects.get().workspace == team.beta
    assert create(api["member"], team).status_code == 201
    # QA: the list answered 400 with candidates where GET /api/v1/jobs lists every workspace of the caller.
    listed = api["member"].get("/api/v1/sweeps")
    assert listed.status_code == 200, listed.json()
    assert [s["workspace"]["name"] for s in listed.json()["sweeps"]] == ["Alpha", "Beta"], "newest first"
    only = api["member"].get("/api/v1/sweeps", workspace=team.beta.pk).json()["sweeps"]
    assert [s["workspace"]["name"] for s in only] == ["Beta"]
    scoped = Api(team.users["member"], workspace=team.beta).get("/api/v1/sweeps").json()["sweeps"]
    assert [s["workspace"]["name"] for s in scoped] == ["Beta"], "a workspace token sees its workspace only"


def test_the_list_pages_by_id_with_a_next_link(team, api, monkeypatch):
    monkeypatch.setattr(api_sweeps, "LIST_SIZE", 2)
    made = [Sweep.objects.create(workspace=team.alpha, owner=team.users["member"], name=f"s{n}",
                                 parameters=[["LR", ["1", "2"]]]).pk for n in range(5)]
    Sweep.objects.create(workspace=team.beta, name="elsewhere", parameters=[["LR", ["1", "2"]]])
    seen, url, pages = [], f"/api/v1/sweeps?workspace={team.alpha.pk}", 0
    while url:
        page = api["viewer"].get(url.removeprefix("http://testserver")).json()
        assert page["limit"] == 2 and len(page["sweeps"]) <= 2
        seen += [s["id"] for s in page["sweeps"]]
        url, pages = page["next"], pages + 1
    assert seen == made[::-1] and pages == 3, "every sweep once, newest first, the workspace kept in next"
    bad = api["viewer"].get("/api/v1/sweeps", after="x")
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["after"]


def test_a_bad_goal_or_value_is_a_400_with_or_without_rank(team, api):
    """QA: ?value=bogus without rank answered 200 and was ignored; with rank=loss it was a 400."""
    sweep_id = create(api["member"], team).json()["id"]
    url = f"/api/v1/sweeps/{sweep_id}"
    for query, field in (({"value": "bogus"}, "value"), ({"rank": "loss", "value": "bogus"}, "value"),
                         ({"goal": "up"}, "goal"), ({"goal": "up", "rank": "loss"}, "goal")):
        answer = api["viewer"].get(url, **query)
        assert answer.status_code == 400 and list(answer.json()["errors"]) == [field], query
    assert "best or last value, not 'bogus'" in api["viewer"].get(url, value="bogus").json()["errors"]["value"][0]
    fine = api["viewer"].get(url, value="last", goal="max")
    assert fine.status_code == 200 and fine.json()["ranking"] is None


def test_a_rank_asked_seconds_after_the_last_trial_ended_says_its_metrics_are_coming(team, api):
    """QA: a client waiting for `active` false then asking ?rank=loss heard "no trial printed METRIC lines yet" in
    the seconds the ended trials' logs were still being read for them (they had printed them)."""
    from django.utils import timezone

    sweep_id = create(api["member"], team).json()["id"]
    url = f"/api/v1/sweeps/{sweep_id}"
    trials = Sweep.objects.get(pk=sweep_id).trials.all()
    for trial in trials:
        Job.objects.filter(pk=trial.job_id).update(status="Succeeded", dlc_job_id=f"dlc-{trial.job_id}",
                                                   finished_at=timezone.now())
    answer = api["viewer"].get(url, rank="loss")
    assert answer.status_code == 400
    assert answer.json()["errors"] == {"rank": [
        "No trial has a metric named 'loss' yet: the ended trials' metrics are being read from their logs."]}
    Job.objects.filter(sweep_trial__in=trials).update(logs_archived_at=timezone.now())
    assert "(no trial printed METRIC lines yet)" in api["viewer"].get(url, rank="loss").json()["errors"]["rank"][0]


def test_a_create_refuses_an_unknown_query_parameter_and_a_stop_a_body_with_fields(team, api):
    """QA: POST /api/v1/sweeps?workspace=1&templat=3 made a sweep free of the template's locks; a sweep's stop took
    {"reason": "..."} and dropped it."""
    url = f"/api/v1/sweeps?workspace={team.alpha.pk}&templat={team.template.pk}"
    refused = api["member"].post(url, {"Job": pf.BODY, "Parameters": {"LR": ["0.1", "0.01"]}})
    assert refused.status_code == 400 and list(refused.json()["errors"]) == ["templat"]
    assert not Sweep.objects.exists()
    made = api["member"].post(f"/api/v1/sweeps?workspace={team.alpha.pk}",
                              {"Job": pf.BODY, "Parameters": {"LR": ["0.1", "0.01"]}}).json()
    stop = f"/api/v1/sweeps/{made['id']}/stop"
    body = api["member"].post(stop, {"reason": "diverged"})
    assert body.status_code == 400 and list(body.json()["errors"]) == ["reason"]
    assert api["member"].post(f"{stop}?force=1").status_code == 400
    assert not Job.objects.filter(stop_requested_at__isnull=False).exists()
    assert api["member"].post(stop).status_code == 202
