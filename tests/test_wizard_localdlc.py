"""The SDK accepts every body the wizard builds, and localdlc's 400 never fires for a body our validation
passed: a varied set of valid forms (every passing case of the rules table, the fully populated clone
sources, every framework with each of its roles) goes through the form layer, then through the worker's own
wire_body() and jobs.dlc.create_job() -- the official SDK, signed requests -- to a real localdlc process."""

from __future__ import annotations

import json

import pytest
from alibabacloud_pai_dlc20201203.models import CreateJobRequest, GetJobRequest

from jobs import catalog as C
from jobs import dlc, lifecycle, spec
from jobs.forms import wizard as glue
from jobs.models import Job, Workspace
from tests.support.wizard import credentials_file, form_data
from tests.test_clone import BASE_OF, FULL
from tests.test_forms_rules import CASES, DROPPED, OK, run

pytestmark = pytest.mark.integration



def forms() -> list:
    """Valid forms as varied as the rules table and the clone sources make them."""
    out = []
    for rule, case, base, changes, expected, _body in CASES:
        if expected in (OK, DROPPED) and not changes.get("_region"):
            wizard = run(base, changes)
            out.append(pytest.param(f"{rule}: {case}", wizard.data, id=f"{rule}: {case}"))
    for kind, changes in FULL.items():
        changes = dict(changes)
        shown = changes.pop("_framework_shown", None)
        data = form_data(BASE_OF[kind], **changes)
        if shown:
            data["_framework_shown"] = shown
        out.append(pytest.param(f"full {kind}", data, id=f"full {kind}"))
    return out


def framework_roles() -> list:
    return [pytest.param(fw.name, role, id=f"{fw.name}-{role}")
            for fw in C.FRAMEWORKS.values() if fw.job_type for role in fw.roles]


@pytest.fixture(scope="module")
def backend():
    from tests.support.localdlc import LocalDLC

    # No capacity to speak of: every job queues, so a hundred CreateJobs start no processes.
    instance = LocalDLC(cpu=0.001, memory_gib=0.001)
    yield instance
    instance.cleanup()


@pytest.fixture
def ws(db, backend, tmp_path, settings):
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(backend, tmp_path))
    return Workspace.objects.create(name="SDK", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="",
                                    endpoint=backend.endpoint, region="cn-hangzhou")


def submit(ws: Workspace, data: dict[str, str]) -> tuple[dict, str]:
    wizard = glue.Wizard(data, catalog=glue.instance_catalog(ws), context=glue.context_for(ws))
    assert wizard.errors() == {}, wizard.errors()
    body = wizard.body(ws.dlc_workspace_id)
    assert spec.validate(body, spec.Context(hints=wizard.hints(), reserved_tags=1, specs=wizard.catalog.by_type())) \
        == {}
    wire = lifecycle.wire_body(Job(workspace=ws, body=body), wizard.secrets())
    CreateJobRequest().from_map(wire).validate()  # the SDK's own model check
    return wire, dlc.create_job(ws, wire)


@pytest.mark.parametrize(("case", "data"), forms())
def test_localdlc_accepts_every_body_the_wizard_builds(ws, backend, case, data):
    data = {**data}
    if data.get("environment-registry_username") and not data.get(glue.PASSWORD):
        data[glue.PASSWORD] = "registry-pw"
    if spec.SECRET_PLACEHOLDER in data.get("resources-advanced", ""):
        data["resources-advanced"] = data["resources-advanced"].replace(spec.SECRET_PLACEHOLDER, "redis-pw")
    wire, job_id = submit(ws, data)
    assert job_id
    got = backend.client().get_job(job_id, GetJobRequest()).body
    assert got.display_name == wire["DisplayName"] and got.job_type == wire["JobType"]


@pytest.mark.parametrize(("framework", "role"), framework_roles())
def test_localdlc_accepts_every_framework_with_each_of_its_roles(ws, framework, role):
    fw = C.FRAMEWORKS[framework]
    roles = list(dict.fromkeys([*fw.required, role]))
    data = form_data(resources__framework=framework, _framework_shown=framework)
    for i, name in enumerate(roles):
        data.update({f"resources-roles-{i}-role": name, f"resources-roles-{i}-count": "1",
                     f"resources-roles-{i}-instance_type": "ecs.c6.large"})
    _wire, job_id = submit(ws, data)
    assert job_id


def test_a_secret_env_reaches_the_pod_but_never_the_database(stack, member):
    """Through the wizard's POST, the worker's CreateJob and a real localdlc pod: the pod prints the secret's
    length and a hash of it (so the value is really there), while the Job row, its sealed secrets after the
    submit and the audit log never hold it."""
    import hashlib

    from jobs.models import AuditEvent
    from tests.support.waiting import wait_for
    from tests.test_skeleton_flow import csrf, signed_in_session

    secret = "wandb-" + hashlib.sha256(b"task-e").hexdigest()[:24]
    web = signed_in_session(stack.url, member.username)
    create_url = f"{stack.url}/jobs/new"
    data = form_data(basic__name="secret-env", environment__image="registry.example/pytorch:2.3",
                     resources__roles__0__instance_type="ecs.g6.large",
                     environment__command='echo "len=${#WANDB_API_KEY} sha=$(printf %s "$WANDB_API_KEY" | sha256sum)"',
                     environment__envs__0__key="WANDB_API_KEY", environment__envs__0__value=secret,
                     environment__envs__0__secret="on")
    answer = web.post(create_url, data={**data, "csrfmiddlewaretoken": csrf(web, create_url)},
                      headers={"Referer": create_url})
    assert answer.status_code == 200 and secret not in answer.text
    job = Job.objects.get(display_name="secret-env")
    assert job.body["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}

    def finished():
        job.refresh_from_db()
        return job.status in ("Succeeded", "Failed") and job.pods

    wait_for(finished, timeout=90)
    assert job.status == "Succeeded", job.reason_message
    logs = web.get(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs").text
    assert f"len={len(secret)} sha={hashlib.sha256(secret.encode()).hexdigest()}" in logs
    assert job.sealed_secrets == ""  # cleared once DLC has the job
    row = json.dumps({"body": job.body, "hints": job.hints, "pods": job.pods, "error": job.submit_error})
    assert secret not in row
    assert not any(secret in json.dumps(e.details) for e in AuditEvent.objects.filter(job=job))
    page = web.get(f"{stack.url}/jobs/{job.pk}").text
    assert secret not in page and "WANDB_API_KEY" in page
