"""Suggestions for the wizard's free-text fields (jobs.suggestions): values of the workspace's recent jobs, most
recent first, each once, capped, never a secret, never another workspace's; and the wizard's datalists."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import suggestions
from jobs.models import Job
from tests import portal_fixtures as pf

T0 = datetime(2030, 1, 1, tzinfo=UTC)  # after make_team's jobs (created now)


def job(workspace, n: int, **body):
    """The n-th job of a workspace (a later n is more recent), with the body's fields given."""
    return Job.objects.create(workspace=workspace, display_name=f"j{n}", created_at=T0 + timedelta(minutes=n),
                              body={"DisplayName": f"j{n}", "JobType": "PyTorchJob", **body}, status="Succeeded")


def image(name: str) -> dict:
    return {"JobSpecs": [{"Type": "Worker", "Image": name, "PodCount": 1, "EcsSpec": "ecs.g6.large"}]}


def test_most_recent_first_each_value_once_capped_per_field_from_the_newest_jobs_only(db):
    team = pf.make_team()
    for n in range(30):
        job(team.alpha, n, **image(f"reg.example/team/train:{n % 25}"))
    job(team.alpha, 30, **image("reg.example/team/train:3"))  # the newest: first, and once
    values = suggestions.recent_values(team.alpha)
    assert values["image"][:3] == ["reg.example/team/train:3", "reg.example/team/train:4",
                                   "reg.example/team/train:2"]
    assert len(values["image"]) == suggestions.PER_FIELD == len(set(values["image"]))
    assert values["instance_type"] == ["ecs.g6.large"]
    # Only the newest jobs are read: jobs 30, 29, 28, 27 and 26 used images 3, 4, 3, 2 and 1.
    assert suggestions.recent_values(team.alpha, limit_jobs=5)["image"] == [
        "reg.example/team/train:3", "reg.example/team/train:4", "reg.example/team/train:2", "reg.example/team/train:1"]


def test_one_query_of_the_body_column_only(db):
    team = pf.make_team()
    for n in range(3):
        job(team.alpha, n, **image(f"img:{n}"))
    with CaptureQueriesContext(connection) as seen:
        suggestions.recent_values(team.alpha)
    assert len(seen) == 1
    sql = seen[0]["sql"]
    selected = sql[:sql.upper().index(" FROM ")]
    assert '"body"' in selected and "display_name" not in selected and "sealed_secrets" not in selected
    assert "LIMIT 200" in sql.upper()


def test_every_place_of_the_body_is_offered_and_never_a_secret(db):
    team = pf.make_team()
    secrets = ["env-value-plain-0x1", "hunter2-registry", "ray-redis-0x2", "s3cr3t-in-uri", "cmd-token-0x3",
               "options-secret-0x4"]
    job(team.alpha, 1, JobSpecs=[{"Type": "Worker", "Image": "reg.example/a:1", "EcsSpec": "ecs.gn6i.xlarge",
                                  "ImageConfig": {"Username": "robot", "Password": secrets[1]}}],
        DataSources=[{"DataSourceId": "d-abc", "MountPath": "/mnt/data"},
                     {"Uri": "oss://bucket.oss-cn-hangzhou.aliyuncs.com/ckpt/", "MountPath": "/mnt/ckpt",
                      "Options": json.dumps({"token": secrets[5]})},
                     {"Uri": f"oss://ak:{secrets[3]}@bucket/path", "MountPath": "/mnt/other"}],
        CodeSource={"CodeSourceId": "code-123", "Branch": "main", "Commit": "abc1234", "MountPath": "/mnt/code"},
        ThirdpartyLibDir="/mnt/code/requirements.txt",
        Envs={"WANDB_API_KEY": "********", "EPOCHS": secrets[0]},
        UserCommand=f"export TOKEN={secrets[4]}; python train.py",
        Settings={"AdvancedSettings": {"RayRedisPassword": secrets[2]}},
        UserVpc={"VpcId": "vpc-1", "SwitchId": "vsw-1", "SecurityGroupId": "sg-1"})
    values = suggestions.recent_values(team.alpha)
    # PostgreSQL's jsonb keeps an object's keys in an order of its own.
    assert sorted(values.pop("env_key")) == ["EPOCHS", "WANDB_API_KEY"]
    assert values == {
        "image": ["reg.example/a:1", pf.BODY["JobSpecs"][0]["Image"]],  # then make_team's older jobs'
        "instance_type": ["ecs.gn6i.xlarge", "ecs.g6.large"], "dataset_id": ["d-abc"],
        "mount_path": ["/mnt/data", "/mnt/ckpt", "/mnt/other", "/mnt/code"],
        "storage_uri": ["oss://bucket.oss-cn-hangzhou.aliyuncs.com/ckpt/"], "code_source_id": ["code-123"],
        "code_branch": ["main"], "requirements_dir": ["/mnt/code/requirements.txt"],
        "vpc_id": ["vpc-1"], "switch_id": ["vsw-1"],
        "security_group_id": ["sg-1"]}
    flat = repr(values)
    assert not [s for s in secrets if s in flat] and "********" not in flat


def test_another_workspaces_jobs_and_odd_bodies_are_not_offered(db):
    team = pf.make_team()
    job(team.beta, 1, **image("beta.example/only-beta:1"), UserVpc={"VpcId": "vpc-beta"})
    job(team.alpha, 2, JobSpecs="not a list", DataSources=[None, 3, {"MountPath": ["x"]}], Envs=["A"])
    Job.objects.create(workspace=team.alpha, display_name="list-body", body=["x"], created_at=T0)
    values = suggestions.recent_values(team.alpha)
    assert "only-beta" not in repr(values) and "vpc-beta" not in repr(values)
    assert values == {"image": ["registry.example/pytorch:2.3"], "instance_type": ["ecs.g6.large"]}  # make_team's


def test_the_wizard_offers_them_in_datalists_connected_to_its_inputs(db):
    team = pf.make_team()
    job(team.alpha, 1, **image('reg.example/"><script>alert(1)</script>'),
        DataSources=[{"DataSourceId": "d-abc", "MountPath": "/mnt/data"}], UserVpc={"VpcId": "vpc-1"})
    job(team.beta, 2, UserVpc={"VpcId": "vpc-beta"})
    client = pf.client_for(team.users["member"])
    html = client.get("/jobs/new").content.decode()
    assert '<datalist id="suggest-vpc_id"><option value="vpc-1"></datalist>' in html
    assert '<datalist id="suggest-mount_path"><option value="/mnt/data"></datalist>' in html
    assert '<option value="reg.example/&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">' in html
    assert "<script>alert(1)" not in html and "vpc-beta" not in html
    assert re.search(r'<input type="text" name="vpc-vpc_id"[^>]*list="suggest-vpc_id"', html)
    # The dead endpoint's ListEcsSpecs fails: the instance type is typed, with the types the team used.
    assert re.search(r'name="resources-roles-0-instance_type"[^>]*list="suggest-instance_type"', html)
    # A re-rendered section (HTMX) keeps its datalists and connections: a custom image and a dataset row.
    page_data = {k: v for k, v in re.findall(r'<input type="hidden" name="(_workspace)" value="([^"]*)"', html)}
    section = client.post("/jobs/new/section/environment", {
        **page_data, "environment-image_type": "address", "environment-image": "x", "_add": "datasets"},
        HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'name="environment-image"[^>]*list="suggest-image"', section)
    assert re.search(r'name="environment-datasets-0-id"[^>]*list="suggest-dataset_id"', section)
    assert re.search(r'name="environment-datasets-0-mount_path"[^>]*list="suggest-mount_path"', section)
    assert '<datalist id="suggest-dataset_id"><option value="d-abc"></datalist>' in section
    # A secret variable's value and the registry password are no text inputs: never connected.
    assert not re.search(r'type="password"[^>]*list=', section)


def test_the_query_walks_the_workspaces_newest_jobs_index_and_sorts_nothing(db):
    """At a million jobs a sort of the workspace's rows would be the page's cost: the planner must read the
    (workspace, -created_at, -id) index from its start and stop after LIMIT rows, on both databases."""
    from tests.test_job_indexes import indexes_in, plan

    team = pf.make_team()
    with CaptureQueriesContext(connection) as seen:
        suggestions.recent_values(team.alpha)
    if connection.vendor == "postgresql":
        # A few rows are cheaper to sort than to walk in order, and PostgreSQL's costs know it (it took the
        # workspace FK index and a sort): ask which index serves the order when sorting is what must be avoided.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
    planned = plan(seen[0]["sql"])
    assert indexes_in(planned) == {"job_ws_created"}, planned
    assert "TEMP B-TREE" not in planned and "Sort" not in planned, planned
