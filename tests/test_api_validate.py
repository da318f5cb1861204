"""POST /api/v1/jobs/validate: the dry run. Real localdlc behind the workspace (ListEcsSpecs through the SDK),
Django's test client in front; CSRF is enforced as a browser would meet it."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from jobs import clone, spec
from jobs.apitokens import create_token
from jobs.forms import wizard as glue
from jobs.models import Membership
from tests.support.wizard import form_data, local_workspace
from tests.test_forms_rules import CASES, run

pytestmark = pytest.mark.integration

URL = "/api/v1/jobs/validate"
VALID = {
    "DisplayName": "dry-run", "JobType": "PyTorchJob", "UserCommand": "echo hi",
    "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1, "EcsSpec": "ecs.g6.large"}],
}


@pytest.fixture
def ws(db, localdlc, tmp_path, settings):
    return local_workspace(localdlc, tmp_path, settings)


@pytest.fixture
def user(ws):
    user = get_user_model().objects.create_user("api-user")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    return user


@pytest.fixture
def api(client, user):
    client.force_login(user)
    return client


def post(client, body, **extra):
    text = body if isinstance(body, str) else json.dumps(body)
    return client.post(URL, text, content_type="application/json", **extra)


def test_a_valid_body_is_valid(api):
    answer = post(api, VALID)
    assert answer.status_code == 200
    assert answer.json()["valid"] is True


def test_the_dry_run_takes_secret_envs_like_the_create(api):
    ok = post(api, {**VALID, "SecretEnvs": {"WANDB_API_KEY": "w"}})
    assert ok.status_code == 200, ok.json()
    hidden = post(api, {**VALID, "Envs": {"WANDB_API_KEY": "********"}}).json()["errors"]
    assert "send the value in SecretEnvs" in hidden["Envs.WANDB_API_KEY"][0]


def test_errors_are_keyed_by_wire_path(api):
    body = {**VALID, "JobSpecs": [{**VALID["JobSpecs"][0], "PodCount": 0}], "Priority": 3,
            "Settings": {"Tags": {"aliyun-x": "1"}}}
    answer = post(api, body)
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert any("at least 1" in m for m in errors["JobSpecs[0].PodCount"])
    assert any("aliyun" in m for m in errors["Settings.Tags.aliyun-x"]), "the error names the tag"
    assert "Priority" in errors, "a priority without a quota is refused, not silently dropped"
    unknown = post(api, {**VALID, "Turbo": True}).json()["errors"]
    assert unknown == {"Turbo": ["Not supported by this console (unknown field or not sent by the wizard)."]}


def test_notes_are_keyed_by_wire_path_like_errors(api):
    # Were keyed by the wizard's section paths: vpc.vpc_id, environment.storages[0].uri (here DataSources[1].Uri, as a
    # dataset comes first), environment.envs[0].key, resources.spot_price: no field of the body an API caller sent.
    body = {**VALID, "JobSpecs": [{**VALID["JobSpecs"][0], "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit",
                                                                       "SpotPriceLimit": 0.01}}],
            "DataSources": [{"DataSourceId": "d-1", "MountPath": "/mnt/d"},
                            {"Uri": "nas://0a1b.cn-hangzhou/data", "MountPath": "/mnt/nas"}],
            "Envs": {"RANK": "1"}}
    answer = post(api, body)
    assert answer.status_code == 200, answer.json()
    notes = answer.json()["notes"]
    assert set(notes) == {"DataSources[0].DataSourceId", "DataSources[1].Uri", "Envs.RANK", "JobSpecs[0].SpotSpec",
                          "JobSpecs[0].SpotSpec.SpotPriceLimit", "UserVpc.VpcId"}, notes
    assert any("mount target" in m for m in notes["DataSources[1].Uri"])
    assert notes["Envs.RANK"] == ["RANK is set by DLC itself; your value overrides it."]


@pytest.mark.parametrize("text", ["{", "", "[1, 2", "\ud800", "null"])
def test_bad_json_is_a_clear_400(api, text):
    answer = api.post(URL, text.encode("utf-8", "surrogatepass"), content_type="application/json")
    assert answer.status_code == 400
    message = " ".join(answer.json()["errors"][""])
    assert ("not valid JSON" in message) or ("must be a JSON object" in message), message


def test_signed_out_callers_get_401_and_session_callers_need_the_csrf_token(ws, user):
    assert post(Client(), VALID).status_code == 401
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert post(browser, VALID).status_code == 403, "a session POST without the CSRF token is refused"
    browser.get("/jobs/new")  # sets the CSRF cookie, as the wizard page does for its JavaScript
    token = browser.cookies["csrftoken"].value
    assert post(browser, VALID, HTTP_X_CSRFTOKEN=token).status_code == 200


def test_api_tokens_need_no_csrf_token(ws, user):
    _row, raw = create_token(user, "ci")
    machine = Client(enforce_csrf_checks=True)
    assert post(machine, VALID, HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    assert post(machine, VALID, HTTP_AUTHORIZATION="Bearer dlcc_wrong").status_code == 401


def test_only_post(api):
    assert api.get(URL).status_code == 405


def top(path: str) -> str:
    """The part of a wire path both sides must name: "DataSources[0].Uri" -> "DataSources[0]"."""
    return re.match(r"[A-Za-z]*(\[\d+\])?", path).group(0)


def test_the_endpoint_and_the_wizard_agree_on_every_table_case(api, ws):
    """Both call jobs.spec, so given the same information they give the same verdict: each table case's body
    goes to the API, and the same body, opened in the wizard the way clone and import open it, goes through
    the form layer. Valid for one means valid for the other; errors land on the same part of the body."""
    catalog = glue.instance_catalog(ws)
    context = glue.context_for(ws, catalog)
    verdicts: dict = {True: 0, False: 0, "not expressible": 0}
    for rule, case, base, changes, _expected, _body in CASES:
        if changes.get("_region"):
            continue  # the workspace's region is fixed here
        body = spec.build(run(base, changes).sections, include_secrets=True)
        answer = post(api, body)
        sections = spec.inverse(body, clone.source_hints(body, {}, context))
        if spec.build(sections, include_secrets=True) != body:
            # The wizard cannot hold this body as it is (e.g. a custom-role CredentialConfig without an ARN):
            # the API says so instead of validating something else.
            assert answer.status_code == 400, (rule, case)
            verdicts["not expressible"] += 1
            continue
        wizard = glue.Wizard(glue.sections_to_data(sections), catalog=catalog)
        # The page never holds a password, so type it into the wizard as a user would.
        password = (body["JobSpecs"][0].get("ImageConfig") or {}).get("Password")
        if password:
            wizard = glue.Wizard({**wizard.data, glue.PASSWORD: password}, catalog=catalog)
        assert (answer.status_code == 200) == wizard.is_valid, (rule, case, answer.json(), wizard.errors())
        if not wizard.is_valid:
            ours = {top(spec.wire_path(path, wizard.sections)) for path in wizard.errors()}
            assert ours & {top(path) for path in answer.json()["errors"]}, (rule, case, ours, answer.json())
        verdicts[wizard.is_valid] += 1
    assert verdicts[True] >= 80 and verdicts[False] >= 40, verdicts


def test_validate_uses_the_workspace_region_and_instance_types(api, ws):
    lingjun_on_ecs = {**VALID, "JobSpecs": [{**VALID["JobSpecs"][0], "EcsSpec": "ecs.nope"}]}
    errors = post(api, lingjun_on_ecs).json()["errors"]
    assert any("Unknown instance type" in m for m in errors["JobSpecs[0].EcsSpec"])
    other = f"{URL}?workspace={ws.pk + 1000}"
    assert api.post(other, json.dumps(VALID), content_type="application/json").status_code == 404
    # The same verdict through the wizard's form layer (one rule, one place).
    wizard = glue.Wizard(form_data(resources__roles__0__instance_type="ecs.nope"),
                         catalog=glue.instance_catalog(ws))
    assert any("Unknown instance type" in m for m in wizard.errors()["resources.roles[0].instance_type"])
