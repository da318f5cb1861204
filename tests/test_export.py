"""Tests of jobs.export: the generated SDK script, the `dlc submit` params file and JSON import. No Django."""

from __future__ import annotations

import json

import pytest
from alibabacloud_pai_dlc20201203.models import CreateJobRequest

from jobs import export, spec

SEED_PARAMS = """name=test_cli_tfjob_001
workers=1
worker_cpu=4
worker_gpu=0
worker_memory=4Gi
worker_shared_memory=4Gi
worker_image=registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/tensorflow-training:1.12.2PAI-cpu-py27-ubuntu16.04
command=echo good && sleep 120
resource_id=rs-abc123
workspace_id=ws-123456
"""


def _secret_body() -> dict:
    s = spec.defaults()
    s["basic"]["name"] = "ray-job"
    s["environment"].update(image_type="address", image="registry.example.com/ray:2", command="python run.py",
                            registry_username="bob", registry_password="hunter2")
    s["resources"].update(framework="Ray", roles=[{"role": "Head", "count": 1, "instance_type": "ecs.c6.large"}],
                          advanced='{"RayRedisAddress": "r:6379", "RayRedisPassword": "redis-pw"}')
    assert spec.validate_sections(s) == {}
    return spec.build(s, workspace_id="ws-1", include_secrets=True)


def _run_script(code: str, monkeypatch, env: dict[str, str]) -> dict:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    namespace: dict = {"__name__": "generated"}
    exec(compile(code, "generated.py", "exec"), namespace)  # noqa: S102 - our own generated code
    request = namespace["build_request"]()
    assert isinstance(request, CreateJobRequest)
    return _prune_empty(request.to_map())


def _prune_empty(value):
    """The SDK's to_map() adds empty lists for list fields it was not given."""
    if isinstance(value, dict):
        return {k: _prune_empty(v) for k, v in value.items() if v not in ([], None)}
    if isinstance(value, list):
        return [_prune_empty(v) for v in value]
    return value


def test_python_sdk_script_submits_the_body_without_embedding_secrets(monkeypatch):
    body = _secret_body()
    code = export.to_python_sdk(body, region="cn-beijing")
    assert "hunter2" not in code and "redis-pw" not in code
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in code and "CredClient()" in code
    assert "'cn-beijing'" in code and "pai-dlc.{REGION}.aliyuncs.com" in code
    got = _run_script(code, monkeypatch, {export.REGISTRY_PASSWORD_ENV: "hunter2",
                                          export.RAY_REDIS_PASSWORD_ENV: "redis-pw"})
    assert got == body


def test_python_sdk_script_without_secrets(monkeypatch):
    s = spec.defaults()
    s["basic"]["name"] = "plain"
    s["environment"].update(image="img", command="echo 'quotes' \"too\"\n\tand a newline")
    s["resources"]["roles"][0]["instance_type"] = "ecs.g7.xlarge"
    body = spec.build(s)
    code = export.to_python_sdk(body)
    assert "DLC_REGISTRY_PASSWORD" not in code and "uses no secrets" in code
    assert _run_script(code, monkeypatch, {}) == body


def test_python_sdk_script_with_a_non_literal_body(monkeypatch):
    body = {"DisplayName": "x", "JobType": "TFJob", "Settings": {"AdvancedSettings": {"a": float("nan")}}}
    code = export.to_python_sdk(body)
    assert "json.loads(" in code
    compile(code, "generated.py", "exec")


def test_params_file_from_seed_round_trips():
    body, errors = export.from_params_file(SEED_PARAMS, job_type="TFJob")
    assert errors == {}
    assert body == {
        "WorkspaceId": "ws-123456", "DisplayName": "test_cli_tfjob_001", "JobType": "TFJob",
        "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry-vpc.cn-beijing.aliyuncs.com/pai-dlc/"
                      "tensorflow-training:1.12.2PAI-cpu-py27-ubuntu16.04",
                      "ResourceConfig": {"CPU": "4", "GPU": "0", "Memory": "4Gi", "SharedMemory": "4Gi"}}],
        "UserCommand": "echo good && sleep 120", "ResourceId": "rs-abc123",
    }
    assert spec.validate(body) == {}
    assert export.to_params_file(body) == SEED_PARAMS
    assert export.params_submit_command(body, "./tfjob.params") == "./dlc submit tfjob --job_file ./tfjob.params"


def test_params_file_from_the_wizard():
    s = spec.defaults()
    s["basic"]["name"] = "q"
    s["environment"].update(image="img:1", command="python a.py --x=1")
    s["resources"].update(source="quota", quota_id="rs-1", framework="PyTorch", max_duration=None,
                          roles=[{"role": "Worker", "count": 2, "cpu": 8, "memory_gib": 32, "gpu": 1}])
    body = spec.build(s, workspace_id="ws-1")
    text = export.to_params_file(body)
    assert text is not None and "command=python a.py --x=1\n" in text
    again, errors = export.from_params_file(text, job_type="PyTorchJob")
    assert errors == {} and again == body


def test_params_file_offered_with_the_default_maximum_duration_but_not_another():
    s = spec.defaults()
    s["basic"]["name"] = "q"
    s["environment"].update(image="img:1", command="python a.py")
    s["resources"].update(source="quota", quota_id="rs-1", framework="PyTorch",
                          roles=[{"role": "Worker", "count": 1, "cpu": 2, "memory_gib": 4}])
    body = spec.build(s)
    assert body["JobMaxRunningTimeMinutes"] == 30 * 1440
    text = export.to_params_file(body)
    assert text is not None and "name=q\n" in text
    again, errors = export.from_params_file(text, job_type="PyTorchJob")
    assert errors == {} and again == {k: v for k, v in body.items() if k != "JobMaxRunningTimeMinutes"}
    assert export.to_params_file({**body, "JobMaxRunningTimeMinutes": 60}) is None


@pytest.mark.parametrize("change", [
    {"JobMaxRunningTimeMinutes": 60},
    {"Envs": {"A": "1"}},
    {"UserCommand": "echo a\necho b"},
    {"UserCommand": " leading space"},
    {"JobType": "DataJuicerJob"},
    {"JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1, "EcsSpec": "ecs.g7.xlarge"}]},
    {"JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1}, {"Type": "PS", "Image": "i", "PodCount": 1}]},
    {"JobSpecs": [{"Type": "Master", "Image": "i", "PodCount": 1}]},
])
def test_params_file_refuses_what_it_cannot_express(change):
    body, _ = export.from_params_file(SEED_PARAMS)
    body.update(change)
    assert export.to_params_file(body) is None


def test_params_file_errors():
    text = "name=x\nworkers=zero\nfoo=1\nname=y\nresource_id=<your_resource_quota_id>\njust text\n# comment\n"
    body, errors = export.from_params_file(text, job_type="NopeJob")
    assert set(errors) == {"workers", "foo", "name", "resource_id", "line 6", "job_type"}
    assert "placeholder" in errors["resource_id"][0]
    assert body["DisplayName"] == "x" and "ResourceId" not in body


def test_from_json_accepts_a_create_job_body():
    body = _secret_body()
    parsed, errors = export.from_json(json.dumps(body))
    assert errors == {} and parsed == body


def test_from_json_imports_a_get_job_echo():
    echo = {"JobId": "dlc-1", "Status": "Running", "GmtCreateTime": "2024-01-01T00:00:00Z", "DisplayName": "j",
            "JobType": "PyTorchJob", "UserCommand": "x", "Pods": [],
            "JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1, "EcsSpec": "ecs.g7.xlarge"}],
            "UserVpc": {"VpcId": "vpc-1", "SecurityGroupId": "sg-1", "ExtendedCidrs": ["10.0.0.0/8"]}}
    parsed, errors = export.from_json(json.dumps({"headers": {}, "statusCode": 200, "body": echo}))
    assert errors == {}
    assert "JobId" not in parsed and "Status" not in parsed
    assert parsed["UserVpc"]["ExtendedCIDRs"] == ["10.0.0.0/8"]
    assert spec.validate(parsed) == {}


@pytest.mark.parametrize("text,words", [
    ('{"DisplayName": "x",}', "line 1, column"),
    ("[1, 2]", "Expected a JSON object"),
    ("", "Invalid JSON"),
])
def test_from_json_errors(text, words):
    body, errors = export.from_json(text)
    assert body == {} and words in errors[""][0]


NAN = "Must be a finite number: NaN and Infinity are not JSON."


@pytest.mark.parametrize(("text", "errors"), [
    ('{"JobSpecs": [{"Type": "Worker", "PodCount": NaN}]}', {"JobSpecs[0].PodCount": [NAN]}),
    ('{"DisplayName": "j", "MaxRunningTimeMinutes": -Infinity}', {"MaxRunningTimeMinutes": [NAN]}),
    ('{"MaxRunningTimeMinutes": 1e999}', {"MaxRunningTimeMinutes": [NAN]}),  # a float Python's parser makes inf
    ('{"headers": {}, "body": {"JobId": "dlc-1", "UserCommand": NaN}}', {"UserCommand": [NAN]}),  # the job's path
    ('{"JobId": "dlc-1", "Pods": [NaN]}', {"": ["Invalid JSON: NaN is not a JSON number."]}),  # dropped, still no JSON
    ('{"UserCommand": "a\\u0000b"}',
     {"UserCommand": ["Must not contain a NUL character (\\u0000): it cannot be stored or sent."]}),
    ('{"Envs": {"A": "\\ud800"}}',
     {"Envs.A": ["Must not contain a lone surrogate (such as \\ud800): it is not Unicode text."]}),
    ('{"Envs": {"\\udfff": "x"}}',
     {"Envs": ["A key must not contain a lone surrogate (such as \\ud800): it is not Unicode text."]}),
    ('{"Settings": {"AdvancedSettings": {"RayRuntimeEnv": ' + "[" * 600 + "]" * 600 + "}}}",
     {"Settings.AdvancedSettings.RayRuntimeEnv[0]…": ["Nested too deeply: at most 64 levels of objects and lists."]}),
    ("[" * 100_000, {"": ["Invalid JSON: nested too deeply (at most 64 levels of objects and lists)."]}),
])
def test_from_json_refuses_what_no_field_can_store_at_its_path(text, errors):
    """The spec's parser (no NaN or Infinity) and its storable check, as POST /api/v1/jobs has them: nothing of
    such a file is imported."""
    assert export.from_json(text) == ({}, errors)


def test_a_body_as_deep_as_the_api_takes_imports_and_the_spec_says_what_is_too_deep_at_its_field():
    deep = "[" * 40 + "]" * 40
    body, errors = export.from_json('{"Settings": {"AdvancedSettings": {"RayRuntimeEnv": ' + deep + "}}}")
    assert errors == {} and body["Settings"]["AdvancedSettings"]["RayRuntimeEnv"] == json.loads(deep)
    assert spec.validate(body)["Settings.AdvancedSettings"] == [
        "RayRuntimeEnv: Nested too deeply: at most 32 levels of objects and lists."]


def test_a_params_file_value_with_a_nul_is_refused_at_its_key():
    body, errors = export.from_params_file(SEED_PARAMS.replace("command=echo", "command=e\x00cho"))
    assert errors == {"command": ["Must not contain a NUL character (\\u0000): it cannot be stored or sent."]}


# --- import into the wizard ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "filename", "job_type", "framework"), [
    ("# ./dlc submit xgboostjob --job_file ./job.params\nname=x\n", "", "XGBoostJob", "XGBoost"),
    ("name=x\n", "tfjob.params", "TFJob", "TensorFlow"),
    ("name=x\n", "/tmp/pytorchjob-v2.params", "PyTorchJob", "PyTorch"),
    ("name=x\n# ./dlc submit nosuchjob --job_file x\n", "job.params", "PyTorchJob", "PyTorch"),
])
def test_the_job_type_of_a_params_file_and_why(text, filename, job_type, framework):
    found, why = export.params_job_type(text, filename)
    assert found == job_type and framework in why
    if filename == "job.params":
        assert why == "No job type in the file: PyTorch assumed — change it in Resources."
        assert spec.FIELDS["resources"]["framework"] == "PyTorch", "the note names the wizard's default"


def test_read_import_says_which_job_type_a_params_file_got():
    read = export.read_import("name=x\nworkers=1\n")
    assert read.fmt == "params" and read.errors == {} and read.body["JobType"] == "PyTorchJob"
    assert [(n.path, n.field) for n in read.notes] == [("JobType", "resources.framework")]
    chosen = export.read_import("name=x\n", "params", job_type="OneFlowJob")
    assert chosen.body["JobType"] == "OneFlowJob" and chosen.notes == []
    assert export.read_import('{"DisplayName": "x"}').notes == [], "a JSON body says its own job type"


def test_an_official_image_is_recognised_only_when_every_role_uses_it_without_credentials():
    official = ["dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/ray:2.9-cpu-py310-ubuntu22.04"]
    role = {"Type": "Head", "Image": official[0], "PodCount": 1}
    assert export.import_hints({"JobSpecs": [role]}, official) == {"image_type": "official"}
    assert export.import_hints({"JobSpecs": [role, {**role, "Image": "my/ray:2"}]}, official) == {}
    assert export.import_hints({"JobSpecs": [{**role, "ImageConfig": {"Username": "u"}}]}, official) == {}
    assert export.import_hints({"JobSpecs": [role]}, []) == {}


def test_to_wizard_keeps_what_the_wizard_cannot_take_in_its_field_or_in_a_note():
    body = {"DisplayName": "x", "JobType": "PyTorchJob", "UserCommand": "run", "ResourceId": "quota-1",
            "JobMaxRunningTimeMinutes": "90", "SchedulingStrategy": 7, "Colour": {"hue": "blue"},
            "AccessToken": "tok-123",
            "JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": "two",
                          "ResourceConfig": {"CPU": 4, "Memory": "8Gi"}}]}
    problems = spec.validate(body)
    sections, notes = export.to_wizard(body, problems)
    by_path = {n.path: n for n in notes}
    role = sections["resources"]["roles"][0]
    assert role["count"] == "two" and role["cpu"] == "4", "typed fields get the value as pasted"
    assert by_path["JobSpecs[0].PodCount"].state == "kept" and by_path["JobSpecs[0].PodCount"].raw == '"two"'
    assert by_path["JobSpecs[0].PodCount"].field == "resources.roles[0].count"
    res = sections["resources"]
    assert (res["max_duration"], res["max_duration_unit"]) == ("90", "minutes"), "the API's unit comes along"
    assert by_path["SchedulingStrategy"].state == "dropped" and by_path["SchedulingStrategy"].raw == "7"
    assert by_path["Colour"].state == "dropped" and by_path["Colour"].raw == '{"hue": "blue"}'
    assert (by_path["AccessToken"].raw, by_path["AccessToken"].state) == ("", "dropped"), "a secret is not quoted"
    assert "tok-123" not in json.dumps([n.to_dict() for n in notes]) + json.dumps(sections)
    # What the wizard then makes of the carried values: 90 minutes, 4 CPUs; "two" stays its error.
    role["count"] = 2
    rebuilt = spec.build(sections)
    assert rebuilt["JobMaxRunningTimeMinutes"] == 90 and rebuilt["JobSpecs"][0]["ResourceConfig"]["CPU"] == "4"


def test_to_wizard_quotes_pasted_values_it_did_import():
    body = {"DisplayName": "x", "JobType": "PyTorchJob", "UserCommand": "run",
            "JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 0, "EcsSpec": "ecs.g6.large"}]}
    sections, notes = export.to_wizard(body, spec.validate(body))
    note = next(n for n in notes if n.path == "JobSpecs[0].PodCount")
    assert (note.raw, note.state, sections["resources"]["roles"][0]["count"]) == ("0", "", 0)


def test_python_sdk_script_reads_a_secret_env_from_its_own_environment(monkeypatch):
    s = spec.defaults()
    s["basic"]["name"] = "wandb"
    s["environment"].update(image="img", command="python train.py",
                            envs=[{"key": "WANDB_API_KEY", "value": "wandb-key-xyz", "secret": True},
                                  {"key": "EPOCHS", "value": "3"}])
    s["resources"]["roles"][0]["instance_type"] = "ecs.g7.xlarge"
    assert spec.validate_sections(s) == {}
    code = export.to_python_sdk(spec.build(s))
    assert "wandb-key-xyz" not in code and "Secrets are read from the environment: WANDB_API_KEY." in code
    got = _run_script(code, monkeypatch, {"WANDB_API_KEY": "wandb-key-xyz"})
    assert got == spec.build(s, include_secrets=True)


def test_an_imported_env_named_like_a_secret_becomes_a_secret_row_to_type_again():
    body = {"DisplayName": "j", "JobType": "PyTorchJob", "UserCommand": "run",
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 1, "EcsSpec": "ecs.g6.large"}],
            "Envs": {"HF_TOKEN": "hf_secret_value", "TOKENIZERS_PARALLELISM": "false"}}
    clean = spec.strip_secrets(body)
    sections, notes = export.to_wizard(clean, spec.validate(clean))
    assert sections["environment"]["envs"] == [{"key": "HF_TOKEN", "value": "", "secret": True},
                                               {"key": "TOKENIZERS_PARALLELISM", "value": "false", "secret": False}]
    assert "hf_secret_value" not in json.dumps(sections) + json.dumps([n.to_dict() for n in notes])
    note = next(n for n in notes if n.path == "Envs.HF_TOKEN")
    assert note.field == "environment.envs[0].value" and note.state == "dropped" and "type it" in note.message


@pytest.mark.parametrize("extra", [
    {"ApiKey": "leaked-value"},  # an unknown field named like a secret (API + key, as looks_like_secret reads it)
    {"Settings": {"AdvancedSettings": {"WandbApiKey": "leaked-value"}}},
    {"CustomEnvs": [{"Key": "HF_API_KEY", "Value": "leaked-value"}]},  # names in values: none is quoted
    {"Envs": ["WANDB_API_KEY=leaked-value"]},  # not a map: which value is whose cannot be told
    {"Settings": {"AdvancedSettings": {"SSH_KEY": "leaked-value"}}},  # the display rule's broader words
])
def test_import_notes_never_quote_a_value_that_may_be_a_secret(extra):
    body = {"DisplayName": "j", "JobType": "PyTorchJob", "UserCommand": "run",
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 1, "EcsSpec": "ecs.g6.large"}], **extra}
    clean = spec.strip_secrets(body)
    problems = spec.validate(clean)
    assert problems, "the pasted field is refused, so a note is made for it"
    sections, notes = export.to_wizard(clean, problems)
    assert "leaked-value" not in json.dumps([n.to_dict() for n in notes])
    assert "leaked-value" not in json.dumps(sections["resources"])


def test_import_notes_still_quote_a_plain_misfit():
    body = {"DisplayName": "j", "JobType": "PyTorchJob", "UserCommand": "run", "Envs": {"EPOCHS": 3},
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": "2", "EcsSpec": "ecs.g6.large"}]}
    _sections, notes = export.to_wizard(body, spec.validate(body))
    assert {n.path: n.raw for n in notes} == {"JobSpecs[0].PodCount": '"2"', "Envs.EPOCHS": "3"}


def test_imported_advanced_settings_named_like_secrets_are_dropped_with_a_note_to_type_them_again():
    """Nothing seals such a value (only RayRedisPassword is), so it must not ride into the wizard's field, the
    page and the session: the person types it again, as the note at the field says."""
    body = {"DisplayName": "j", "JobType": "PyTorchJob", "UserCommand": "run",
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 1, "EcsSpec": "ecs.g6.large"}],
            "Settings": {"AdvancedSettings": {"WandbApiKey": "wb-secret-1", "ReleaseResourcePolicy": "pod-exit",
                                              "HfToken": "hf-secret-2"}}}
    clean = spec.strip_secrets(body)
    sections, notes = export.to_wizard(clean, spec.validate(clean))
    assert sections["resources"]["advanced"] == "ReleaseResourcePolicy=pod-exit"
    dropped = {n.path: n for n in notes if n.state == "dropped"}
    for key in ("WandbApiKey", "HfToken"):
        note = dropped[f"Settings.AdvancedSettings.{key}"]
        assert note.field == "resources.advanced" and note.raw == "" and "type it again" in note.message
    text = json.dumps(sections) + json.dumps([n.to_dict() for n in notes])
    assert "wb-secret-1" not in text and "hf-secret-2" not in text


def test_drop_secret_advanced_keeps_ray_redis_password_and_plain_keys():
    resources = {"advanced": '{"RayRedisPassword": "********", "RayRedisAddress": "r:6379", "API_TOKEN": "t"}'}
    assert export.drop_secret_advanced(resources) == ["API_TOKEN"]
    assert spec.parse_advanced(resources["advanced"])[0] == {"RayRedisPassword": "********",
                                                             "RayRedisAddress": "r:6379"}
    only = {"advanced": "HfToken=x"}
    assert export.drop_secret_advanced(only) == ["HfToken"] and only["advanced"] == ""
    plain = {"advanced": "createSvcForAllWorkers=true"}
    assert export.drop_secret_advanced(plain) == [] and plain["advanced"] == "createSvcForAllWorkers=true"


@pytest.mark.parametrize(("change", "words"), [
    ({"Envs": {"A": "1"}}, "environment variables (Envs)"),
    ({"JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1, "EcsSpec": "ecs.g7.xlarge"}]},
     "Worker also has an instance type (EcsSpec)"),
    ({"JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1}, {"Type": "PS", "Image": "i", "PodCount": 1}]},
     "this job has 2 roles (Worker, PS)"),
    ({"JobSpecs": [{"Type": "Master", "Image": "i", "PodCount": 1}]}, "this job's role is Master"),
    ({"JobMaxRunningTimeMinutes": 60}, "a maximum duration other than 30 days"),
    ({"UserCommand": "echo a\necho b"}, "The startup command is not one line"),
    ({"JobType": "DataJuicerJob"}, "no params file for DataJuicerJob"),
])
def test_params_file_problem_names_the_real_reason(change, words):
    """QA: a job with exactly one Worker was told it needed "one Worker role"; the reason names what stands in
    the way (its variables, its instance type), and only the real one."""
    body, _ = export.from_params_file(SEED_PARAMS)
    assert export.params_file_problem(body) == ""
    body.update(change)
    problem = export.params_file_problem(body)
    assert words in problem, problem
    if "JobSpecs" not in change:
        assert "role" not in problem, problem
