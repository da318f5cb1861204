"""Import (paste or upload a CreateJob JSON, a GetJob job or a `dlc submit` params file -> a prefilled wizard)
and export (JSON, Python SDK code, params file) of any job, never with a secret."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs import spec
from jobs.models import AuditEvent, Job
from tests import portal_fixtures as pf

PARAMS = """name=test_cli_tfjob_001
workers=2
worker_cpu=4
worker_gpu=0
worker_memory=4Gi
worker_shared_memory=4Gi
worker_image=registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/tensorflow-training:1.12.2PAI-cpu-py27-ubuntu16.04
command=echo good && sleep 120
resource_id=quota-123
"""


def import_into_wizard(client, **data):
    answer = client.post("/jobs/import", {"format": "auto", "job_type": "TFJob", **data})
    assert answer.status_code == 302, answer.context["form"].errors if answer.context else answer
    assert re.fullmatch(r"/jobs/new\?prefill=[\w-]{8}", answer["Location"]), answer["Location"]
    page = client.get(answer["Location"])
    assert page.status_code == 200
    return page


def field_value(page, name):
    return page.context["wizard"].data.get(name)


def test_pasted_createjob_json_opens_a_prefilled_wizard(team):
    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "DisplayName": "imported-json", "Description": "from the SDK",
            "Settings": {"Tags": {"team": "alpha"}}}
    page = import_into_wizard(client, text=json.dumps(body))
    assert field_value(page, "basic-name") == "imported-json"
    assert field_value(page, "environment-command") == "echo hello"
    assert field_value(page, "resources-roles-0-instance_type") == "ecs.g6.large"
    assert "Prefilled from an import (json)" in page.text
    assert not AuditEvent.objects.exists(), "reading a body into the wizard changes nothing: nothing to audit"
    again = client.get(page.request["PATH_INFO"] + "?" + page.request["QUERY_STRING"])
    assert again.context["wizard"].data.get("basic-name") == "imported-json", "a reload opens the same import"
    # The job the import becomes is audited when it is created, and its event says where it came from.
    answer = client.post("/jobs/new", {**page.context["wizard"].data, **page.context["hidden"]})
    job = Job.objects.get(display_name="imported-json")
    assert answer.status_code == 302 and answer["Location"] == job.get_absolute_url()
    event = AuditEvent.objects.get(job=job)
    assert event.action == "created" and event.details == {"imported_from": "json"} and event.actor_name == "member"


def test_a_job_from_getjob_imports_without_its_read_only_fields(team):
    listed = {**pf.BODY, "DisplayName": "from-getjob", "JobId": "dlc123", "Status": "Running", "Pods": [],
              "GmtCreateTime": "2024-01-01T00:00:00Z", "UserVpc": {"VpcId": "vpc-1", "SwitchId": "vsw-1",
                                                                   "SecurityGroupId": "sg-1",
                                                                   "ExtendedCidrs": ["10.0.0.0/8"]}}
    page = import_into_wizard(pf.client_for(team.users["member"]), text=json.dumps(listed))
    assert field_value(page, "basic-name") == "from-getjob"
    assert field_value(page, "vpc-vpc_id") == "vpc-1"


def test_a_params_file_pasted_or_uploaded_opens_the_wizard(team):
    client = pf.client_for(team.users["member"])
    page = import_into_wizard(client, text=PARAMS)
    assert field_value(page, "basic-name") == "test_cli_tfjob_001"
    assert field_value(page, "resources-framework") == "TensorFlow"
    assert field_value(page, "resources-roles-0-count") == "2"
    assert field_value(page, "resources-quota_id") == "quota-123"
    upload = SimpleUploadedFile("tfjob.params", PARAMS.replace("001", "002").encode(), "text/plain")
    page = import_into_wizard(client, file=upload)
    assert field_value(page, "basic-name") == "test_cli_tfjob_002"


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"text": "{\"DisplayName\": "}, "text", "Invalid JSON"),
    ({"text": "[1, 2]"}, "text", "Expected a JSON object"),
    ({"text": "name=x\ncolour=blue"}, "text", "colour: Unknown key"),
    ({"text": "name=x\nresource_id=<your_resource_quota_id>"}, "text", "Replace the placeholder"),
    ({"text": ""}, "text", "Paste a CreateJob JSON"),
    ({"file": SimpleUploadedFile("x.json", b"\xff\xfe\x00bad", "application/json")}, "file", "not UTF-8"),
])
def test_unreadable_imports_are_refused_at_the_field(team, data, field, message):
    answer = pf.client_for(team.users["member"]).post("/jobs/import", {"format": "auto", "job_type": "TFJob",
                                                                       **data})
    assert answer.status_code == 200
    assert message in " ".join(answer.context["form"].errors[field])
    assert not AuditEvent.objects.filter(action="imported").exists()


def test_an_imported_password_is_dropped_and_the_wizard_asks_for_it(team):
    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob",
                                                                               "Password": "hunter2-import"}}]}
    page = import_into_wizard(client, text=json.dumps(body))
    assert "hunter2" not in page.text
    assert "hunter2" not in str(dict(client.session))
    assert field_value(page, "environment-registry_username") == "bob"


def import_notes(page):
    return {note["path"]: note for note in page.context["portal_start"].notes}


def test_import_notes_name_the_wizard_field_with_the_api_path_in_small_print(team):
    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": "two"}]}
    page = import_into_wizard(client, text=json.dumps(body))
    note = import_notes(page)["JobSpecs[0].PodCount"]
    assert (note["label"], note["message"]) == ("Resources › Worker › Nodes", "Must be a whole number.")
    assert note["anchor"] == "f-resources-roles-0-count" and 'id="f-resources-roles-0-count"' in page.text
    item = page.text.split('data-field="resources.roles[0].count"')[1].split("</li>")[0]
    assert '<a href="#f-resources-roles-0-count">Resources › Worker › Nodes</a>: Must be a whole number.' in item
    assert '<small class="mono api-path" title="CreateJob API path">JobSpecs[0].PodCount</small>' in item


def test_a_value_the_wizard_cannot_take_stays_visible(team):
    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": "two"}], "SchedulingStrategy": 7,
            "Colour": {"hue": "blue"}}
    page = import_into_wizard(client, text=json.dumps(body))
    # A number input gets the text as pasted; the note says so and the wizard judges it at the field.
    assert field_value(page, "resources-roles-0-count") == "two"
    assert "Pasted <code>&quot;two&quot;</code>: kept in the field as pasted." in page.text
    # A choice cannot hold it: the note quotes it and says it was not imported.
    notes = import_notes(page)
    assert notes["SchedulingStrategy"]["label"] == "Resources › Scheduling policy"
    assert notes["SchedulingStrategy"]["state"] == "dropped" and notes["SchedulingStrategy"]["raw"] == "7"
    assert notes["Colour"]["label"] == "Job" and "Not supported" in notes["Colour"]["message"]
    assert "Pasted <code>{&quot;hue&quot;: &quot;blue&quot;}</code>: not imported." in page.text
    jobs = Job.objects.count()
    answer = client.post("/jobs/new", {**page.context["wizard"].data, "_workspace": team.alpha.pk})
    assert answer.status_code == 200 and Job.objects.count() == jobs
    assert answer.context["wizard"].errors()["resources.roles[0].count"] == ["Enter a whole number."]
    assert 'id="err-resources-roles-0-count"' in answer.text


def test_an_official_image_is_imported_as_official(team):
    client = pf.client_for(team.users["member"])
    official = "dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:2.3-cpu-py311-ubuntu22.04"
    assert team.alpha.region == "cn-hangzhou"
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Image": official}]}
    page = import_into_wizard(client, text=json.dumps(body))
    assert (field_value(page, "environment-image_type"), field_value(page, "environment-image")) == \
        ("official", official)
    assert '<select name="environment-image"' in page.text and "Alibaba Cloud image" in page.text
    params = PARAMS.replace(PARAMS.split("worker_image=")[1].split("\n")[0], official)
    assert field_value(import_into_wizard(client, text=params), "environment-image_type") == "official"
    other = import_into_wizard(client, text=json.dumps(pf.BODY))
    assert field_value(other, "environment-image_type") == "address", "any other image stays an address"


@pytest.mark.parametrize(("data", "framework", "note"), [
    ({"text": PARAMS}, "PyTorch", "No job type in the file: PyTorch assumed — change it in Resources."),
    ({"text": "# ./dlc submit xgboostjob --job_file ./job.params\n" + PARAMS}, "XGBoost",
     "Job type from the file's `dlc submit xgboostjob` line: XGBoost — change it in Resources if that is wrong."),
    ({"file": ("tfjob.params", PARAMS)}, "TensorFlow",
     "Job type from the file name tfjob.params: TensorFlow — change it in Resources if that is wrong."),
    ({"text": PARAMS, "job_type": "OneFlowJob"}, "OneFlow", None),
])
def test_a_params_file_says_which_job_type_it_got(team, data, framework, note):
    data = dict(data)
    if "file" in data:
        name, text = data.pop("file")
        data["file"] = SimpleUploadedFile(name, text.encode(), "text/plain")
    page = import_into_wizard(pf.client_for(team.users["member"]), format="params", **{"job_type": "", **data})
    assert field_value(page, "resources-framework") == framework
    found = import_notes(page).get("JobType")
    if note is None:
        assert found is None, "a job type chosen on the import page needs no note"
    else:
        assert (found["label"], found["message"]) == ("Resources › Framework", note)
        assert note.replace("'", "&#x27;") in page.text


def test_the_import_page_offers_the_job_type_from_the_file_by_default(team):
    page = pf.client_for(team.users["member"]).get("/jobs/import")
    assert page.context["form"]["job_type"].value() == ""
    assert '<option value="" selected>As the file says</option>' in page.text


def test_viewers_cannot_import(team):
    assert pf.client_for(team.users["viewer"]).post("/jobs/import", {"text": PARAMS}).status_code == 403


# --- export -----------------------------------------------------------------------------------------------


def test_export_as_json_python_and_params(team):
    client = pf.client_for(team.users["viewer"])
    as_json = client.get(f"/jobs/{team.job.pk}/export/json")
    assert as_json.status_code == 200 and as_json["Content-Disposition"] == 'attachment; filename="train-a.json"'
    assert json.loads(as_json.content) == pf.BODY
    python = client.get(f"/jobs/{team.job.pk}/export/python")
    assert "CreateJobRequest().from_map" in python.text and "'UserCommand': 'echo hello'" in python.text
    compile(python.content, "job.py", "exec")
    assert client.get(f"/jobs/{team.job.pk}/export/params").status_code == 409, "EcsSpec has no params key"
    from jobs import export

    quota_job = pf.make_job(team.alpha, team.users["member"], "test_cli_tfjob_001")
    quota_job.body = export.from_params_file(PARAMS)[0]
    quota_job.save()
    params = client.get(f"/jobs/{quota_job.pk}/export/params")
    assert params.status_code == 200 and params.text == PARAMS
    assert 'id="params-export"' in client.get(f"/jobs/{quota_job.pk}").text, "offered when there is a file"


def test_params_export_of_a_job_it_cannot_express_says_so(team):
    team.job.body = {**pf.BODY, "JobSpecs": [pf.BODY["JobSpecs"][0], {**pf.BODY["JobSpecs"][0], "Type": "Master"}]}
    team.job.save()
    client = pf.client_for(team.users["viewer"])
    answer = client.get(f"/jobs/{team.job.pk}/export/params")
    # QA: a bare text/plain 409 with no way back, and a reason that was not this job's.
    assert answer.status_code == 409 and answer["Content-Type"].startswith("text/html")
    assert "this job has 2 roles (Worker, Master)" in answer.text
    assert f'href="/jobs/{team.job.pk}">Back to the job' in answer.text and 'class="topbar"' in answer.text
    # The job page offers no link that leads there: it says the same reason instead.
    page = client.get(f"/jobs/{team.job.pk}").text
    assert 'id="params-export"' not in page and 'id="params-unavailable"' in page
    assert "this job has 2 roles (Worker, Master)" in page


def test_params_export_link_says_the_real_reason_for_one_worker(team):
    """QA: jobs with exactly one Worker were told "one Worker role…"; the reason is their instance type."""
    client = pf.client_for(team.users["viewer"])
    answer = client.get(f"/jobs/{team.job.pk}/export/params")
    assert answer.status_code == 409 and "instance type (EcsSpec)" in answer.text and "one Worker" not in answer.text
    page = client.get(f"/jobs/{team.job.pk}").text
    assert 'id="params-export"' not in page and "instance type (EcsSpec)" in page


def test_exports_never_contain_a_secret_and_stay_in_the_workspace(team):
    # Defence in depth: even a body that somehow holds a password is exported without it.
    team.job.body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0],
                                              "ImageConfig": {"Username": "bob", "Password": "hunter2-x"}}],
                     "Settings": {"AdvancedSettings": {"RayRedisPassword": "hunter2-y"}}}
    team.job.save()
    client = pf.client_for(team.users["viewer"])
    for fmt in ("json", "python", "params"):
        answer = client.get(f"/jobs/{team.job.pk}/export/{fmt}")
        assert b"hunter2" not in answer.content, fmt
    python = client.get(f"/jobs/{team.job.pk}/export/python").text
    assert "os.environ['DLC_REGISTRY_PASSWORD']" in python
    assert pf.client_for(team.users["viewer"]).get(f"/jobs/{team.other_job.pk}/export/json").status_code == 404
    assert client.get(f"/jobs/{team.job.pk}/export/yaml").status_code == 404


def test_export_then_import_round_trips(team):
    client = pf.client_for(team.users["member"])
    exported = client.get(f"/jobs/{team.job.pk}/export/json").content.decode()
    page = import_into_wizard(client, text=exported)
    answer = client.post("/jobs/new", {**page.context["wizard"].data, "_workspace": team.alpha.pk,
                                       "basic-name": "round-trip"})
    assert answer.status_code == 302
    assert Job.objects.get(display_name="round-trip").body == {**pf.BODY, "DisplayName": "round-trip",
                                                                "WorkspaceId": "alpha"}


def test_an_imported_secret_looking_env_is_not_kept_and_the_wizard_asks_for_it(team):
    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "Envs": {"WANDB_API_KEY": "wandb-import-secret", "EPOCHS": "3"}}
    page = import_into_wizard(client, text=json.dumps(body))
    assert "wandb-import-secret" not in page.text and "wandb-import-secret" not in str(dict(client.session))
    assert field_value(page, "environment-envs-0-secret") == "on"
    assert field_value(page, "environment-envs-1-value") == "3"
    assert "looks like a secret, so its value was not imported" in page.text


def test_exports_show_a_secret_env_as_the_placeholder_and_the_script_reads_it(team):
    team.job.body = {**pf.BODY, "Envs": {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "HF_TOKEN": "hf-plain-x"}}
    team.job.save()
    client = pf.client_for(team.users["viewer"])
    exported = json.loads(client.get(f"/jobs/{team.job.pk}/export/json").content)
    assert exported["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "HF_TOKEN": spec.SECRET_PLACEHOLDER}
    python = client.get(f"/jobs/{team.job.pk}/export/python").text
    assert "os.environ['WANDB_API_KEY']" in python and "hf-plain-x" not in python
    page = client.get(f"/jobs/{team.job.pk}").text
    assert "hf-plain-x" not in page


@pytest.mark.integration
def test_an_import_is_checked_against_the_same_instance_catalog_as_the_wizard(db, localdlc, tmp_path, settings):
    """A GPU cap needs each instance type's GPU count: the import reads the wizard's catalog (ListEcsSpecs of a real
    localdlc), so a body the wizard and the API accept gets no "GPU count unknown" note, and a GPU type over the
    cap gets the cap's own message."""
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, WorkspacePolicy
    from tests.support.wizard import local_workspace

    ws = local_workspace(localdlc, tmp_path, settings)
    WorkspacePolicy.objects.create(workspace=ws, max_gpus=1)
    user = get_user_model().objects.create_user("importer", password=None)
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    client = pf.client_for(user)
    for instance_type, gpus in (("ecs.c6.large", 0), ("ecs.gn6i-c24g1.12xlarge", 2)):
        body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "EcsSpec": instance_type}]}
        page = import_into_wizard(client, text=json.dumps(body))
        notes = " ".join(str(n) for n in page.context["portal_start"].notes)
        assert "GPU count of an instance type is unknown" not in notes, instance_type
        assert ("at most 1 GPUs per job (this job asks for 2)" in notes) == bool(gpus), notes


@pytest.mark.parametrize("text", ["\ufeff{\"DisplayName\": ", "\ufeff\n  [1,",
                                  "```json\n{\"DisplayName\": \"x\"}\n```"])
def test_detect_reads_text_that_starts_like_json_as_json_and_says_jsons_error(team, text):
    """A byte-order mark (Notepad, PowerShell) or a Markdown fence before the JSON: JSON's error with its line and
    column, not the params file's "Expected key=value"."""
    answer = pf.client_for(team.users["member"]).post("/jobs/import", {"format": "auto", "text": text})
    errors = " ".join(answer.context["form"].errors["text"])
    assert "Invalid JSON at line" in errors and "column" in errors and "key=value" not in errors


@pytest.mark.parametrize("text", ["null", '"str"', "1e999", "42", "true"])
def test_detect_reads_any_json_value_as_json_and_says_it_is_not_an_object(team, text):
    answer = pf.client_for(team.users["member"]).post("/jobs/import", {"format": "auto", "text": text})
    assert answer.context["form"].errors["text"] == [
        "Expected a JSON object (a CreateJob body or a job from GetJob)."]


@pytest.mark.parametrize("text", ["x" * (256 * 1024 + 1), "name=x\x00"])
def test_a_text_refused_by_its_field_gets_that_one_error(team, text):
    answer = pf.client_for(team.users["member"]).post("/jobs/import", {"format": "auto", "text": text})
    errors = answer.context["form"].errors["text"]
    assert len(errors) == 1 and "Paste a CreateJob JSON" not in errors[0], errors


def test_a_json_file_with_a_byte_order_mark_imports(team):
    upload = SimpleUploadedFile("job.json", "\ufeff".encode() + json.dumps(pf.BODY).encode(), "application/json")
    page = import_into_wizard(pf.client_for(team.users["member"]), file=upload)
    assert field_value(page, "basic-name") == "train-a"


def test_an_imported_console_job_loses_its_submission_tag_unsaid_and_the_api_refuses_that_tag(team):
    """QA: a GetJob of a console job brought `dlc-console-submission` into the wizard as an editable tag, and the
    API stored it from Settings.Tags. The import drops it as a clone does; the API says why at Settings.Tags."""
    from jobs import dlc
    from tests.support.api import Api

    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "DisplayName": "from-console",
            "Settings": {"Tags": {"team": "alpha", dlc.IDEMPOTENCY_TAG_KEY: "t-1"}}}
    page = import_into_wizard(client, text=json.dumps(body))
    data = page.context["wizard"].data
    assert [v for k, v in data.items() if k.startswith("basic-tags-") and k.endswith("-key") and v] == ["team"]
    assert dlc.IDEMPOTENCY_TAG_KEY not in page.text  # no row, and no note either
    api = Api(team.users["member"])
    for path in ("/api/v1/jobs/validate", "/api/v1/jobs"):
        refused = api.post(f"{path}?workspace={team.alpha.pk}", body)
        assert refused.status_code == 400, refused.content
        errors = refused.json()["errors"][f"Settings.Tags.{dlc.IDEMPOTENCY_TAG_KEY}"]  # the error names the tag
        assert "reserved for the console's exactly-once submission" in errors[0]
    assert not Job.objects.filter(display_name="from-console").exists()


def _pasted(**changes):
    """pf.BODY with changes, as JSON text; a value given as text (NaN, Infinity, a JSON escape) is pasted as is."""
    body = json.dumps({**pf.BODY, **{k: f"@{k}@" for k in changes}})
    for key, text in changes.items():
        body = body.replace(f'"@{key}@"', text)
    return body


DEEP = "[" * 600 + "]" * 600


@pytest.mark.parametrize(("text", "where", "words"), [
    (_pasted(JobSpecs='[{"Type": "Worker", "PodCount": NaN}]'), "JobSpecs[0].PodCount", "NaN and Infinity"),
    (_pasted(UserCommand="-Infinity"), "UserCommand", "NaN and Infinity"),
    (_pasted(UserCommand="1e999"), "UserCommand", "NaN and Infinity"),
    (_pasted(DisplayName='"a\\u0000"'), "DisplayName", "NUL character"),
    (_pasted(DisplayName='"\\ud800"'), "DisplayName", "lone surrogate"),
    (_pasted(Settings='{"Tags": {"\\udc00": "x"}}'), "Settings.Tags", "A key must not contain a lone surrogate"),
    (_pasted(Settings='{"AdvancedSettings": {"RayRuntimeEnv": ' + DEEP + "}}"),
     "Settings.AdvancedSettings.RayRuntimeEnv[0]…", "Nested too deeply: at most 64 levels"),
    ("[" * 100_000 + "]" * 100_000, "", "Invalid JSON: nested too deeply"),
])
def test_an_import_with_what_no_field_can_store_is_refused_at_its_path(team, text, where, words):
    """NaN, Infinity, NUL, a lone surrogate, absurd nesting: the spec's own parser and storable check say where, as
    the API's 400 does; nothing goes into the session for the wizard, nothing is a 500."""
    from jobs.portal import PREFILL_SESSION_KEY

    client, jobs = pf.client_for(team.users["member"]), Job.objects.count()
    answer = client.post("/jobs/import", {"format": "auto", "text": text})
    assert answer.status_code == 200
    errors = answer.context["form"].errors["text"]
    assert len(errors) == 1 and errors[0].startswith(f"{where}: " if where else "Invalid JSON") and words in errors[0]
    assert PREFILL_SESSION_KEY not in client.session and Job.objects.count() == jobs


def test_an_uploaded_params_file_with_a_nul_is_refused_at_its_key(team):
    """A pasted NUL is the text box's error; an uploaded file's text skips the box's checks, so the params file's."""
    upload = SimpleUploadedFile("tfjob.params", PARAMS.replace("name=test", "name=te\x00st").encode(), "text/plain")
    answer = pf.client_for(team.users["member"]).post("/jobs/import", {"format": "auto", "file": upload})
    assert answer.status_code == 200
    assert answer.context["form"].errors["file"] == ["name: Must not contain a NUL character (\\u0000): it cannot be "
                                                     "stored or sent."]


# --- the import waiting for the wizard: reloads, submit, bounds, secrets ------------------------------------


def imported(client, text: str) -> str:
    """The wizard URL an import redirects to (its key in ?prefill=)."""
    answer = client.post("/jobs/import", {"format": "auto", "job_type": "TFJob", "text": text})
    assert answer.status_code == 302, answer.context["form"].errors if answer.context else answer
    return answer["Location"]


def test_a_reload_of_the_wizard_keeps_the_import_and_its_notes_until_a_job_is_made_from_it(team):
    """F5 or Back-and-forward on the wizard after an import: the same prefilled page with its notes, every time;
    once a job is made from it the import is gone and its URL says so instead of a silent blank wizard."""
    client = pf.client_for(team.users["member"])
    url = imported(client, json.dumps({**pf.BODY, "DisplayName": "reloaded", "JobSpecs": [
        {**pf.BODY["JobSpecs"][0], "PodCount": "two"}]}))
    for _reload in range(3):
        page = client.get(url)
        assert field_value(page, "basic-name") == "reloaded"
        assert "Prefilled from an import (json)" in page.text and "JobSpecs[0].PodCount" in import_notes(page)
    key = url.rpartition("=")[2]
    assert page.context["hidden"]["_prefill"] == key, "the key goes with the form, so a submit can drop it"
    # A re-rendered page (a refused submit) keeps the notes too.
    refused = client.post("/jobs/new/form", {**page.context["wizard"].data, **page.context["hidden"],
                                             })
    assert refused.status_code == 200 and "JobSpecs[0].PodCount" in import_notes(refused)
    answer = client.post("/jobs/new/form", {**page.context["wizard"].data, **page.context["hidden"],
                                            "resources-roles-0-count": "2"})
    assert answer.status_code == 302, answer.context["summary"] if answer.context else answer
    assert Job.objects.filter(display_name="reloaded").count() == 1
    gone = client.get(url)
    assert gone.status_code == 200 and field_value(gone, "basic-name") == ""
    assert "This import is no longer available" in gone.text and "import the file again" in gone.text
    assert gone.context["portal_start"] is None


@pytest.mark.parametrize("url", ["/jobs/new?prefill=import", "/jobs/new?prefill=unknown1", "/jobs/new?prefill=%00"])
def test_an_unknown_or_old_import_key_says_the_import_is_gone(team, url):
    page = pf.client_for(team.users["member"]).get(url)
    assert page.status_code == 200 and "This import is no longer available" in page.text
    assert field_value(page, "basic-name") == ""


def test_imports_wait_a_bounded_time_and_only_the_newest_few(team):
    from jobs import portal

    client = pf.client_for(team.users["member"])
    urls = [imported(client, json.dumps({**pf.BODY, "DisplayName": f"import-{n}"}))
            for n in range(portal.PREFILL_KEEP + 1)]
    assert "no longer available" in client.get(urls[0]).text, "the oldest gave way to the newest"
    assert all(field_value(client.get(url), "basic-name") == f"import-{n}" for n, url in enumerate(urls) if n)
    session = client.session
    waiting = session[portal.PREFILL_SESSION_KEY]
    waiting[urls[1].rpartition("=")[2]]["at"] = time.time() - portal.PREFILL_MAX_AGE - 1
    session[portal.PREFILL_SESSION_KEY] = waiting
    session.save()
    assert "no longer available" in client.get(urls[1]).text, "a day-old import has expired"
    assert field_value(client.get(urls[2]), "basic-name") == "import-2"


def test_an_import_waits_in_the_session_of_its_user_and_workspace_only(team):
    url = imported(pf.client_for(team.users["member"]), json.dumps(pf.BODY))
    assert "no longer available" in pf.client_for(team.users["admin"]).get(url).text, "another session"
    member = pf.client_for(team.users["member"])
    assert "no longer available" in member.get(url).text, "another sign-in"


def test_the_session_row_keeps_no_secret_of_an_import(team):
    """The import waits in the session, which the database stores: nothing there may be a secret."""
    from django.contrib.sessions.models import Session

    client = pf.client_for(team.users["member"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "ImageConfig": {"Username": "bob",
                                                                               "Password": "hunter2-registry"}}],
            "Envs": {"WANDB_API_KEY": "hunter2-env", "EPOCHS": "3"},
            "Settings": {"AdvancedSettings": {"RayRedisPassword": "hunter2-ray", "WandbApiKey": "hunter2-adv"}}}
    url = imported(client, json.dumps(body))
    assert field_value(client.get(url), "environment-envs-1-value") == "3"
    stored = Session.objects.get(session_key=client.session.session_key)
    assert "hunter2" not in stored.session_data and "hunter2" not in json.dumps(stored.get_decoded())
    assert "hunter2" not in client.get(url).text


def test_an_import_from_another_dlc_workspace_says_where_the_job_will_be_created(team):
    client = pf.client_for(team.users["member"])
    page = client.get(imported(client, json.dumps({**pf.BODY, "WorkspaceId": "other"})))
    note = import_notes(page)["WorkspaceId"]
    assert note["raw"] == "other" and note["state"] == "dropped"
    assert "this workspace's DLC workspace 'alpha'" in note["message"] and "not in 'other'" in note["message"]
    assert "this workspace&#x27;s DLC workspace &#x27;alpha&#x27;" in page.text
    answer = client.post("/jobs/new/form", {**page.context["wizard"].data, **page.context["hidden"]})
    assert answer.status_code == 302 and Job.objects.get(display_name="train-a", pk__gt=team.other_job.pk
                                                         ).body["WorkspaceId"] == "alpha"
    same = client.get(imported(client, json.dumps({**pf.BODY, "WorkspaceId": "alpha"})))
    assert "WorkspaceId" not in import_notes(same), "no note when the file names this workspace's own"
