"""localdlc conformance: CreateJob/UpdateJob validation answers 400 InvalidParameter and stores nothing."""

from __future__ import annotations

import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException

pytestmark = pytest.mark.integration


def spec(**kw) -> models.JobSpec:
    values = dict(type="Worker", pod_count=1, image="img", resource_config=models.ResourceConfig(cpu="1", memory="1Gi"))
    values.update(kw)
    return models.JobSpec(**values)


def base(**kw) -> models.CreateJobRequest:
    values = dict(display_name="valid-name", job_type="PyTorchJob", job_specs=[spec()], user_command="true")
    values.update(kw)
    return models.CreateJobRequest(**values)


CASES = [
    ("missing DisplayName", dict(display_name=None), "DisplayName"),
    ("empty DisplayName", dict(display_name=""), "DisplayName"),
    ("DisplayName bad chars", dict(display_name="has space!"), "DisplayName"),
    ("DisplayName too long", dict(display_name="a" * 257), "DisplayName"),
    ("missing JobType", dict(job_type=None), "JobType"),
    ("unknown JobType", dict(job_type="CaffeJob"), "JobType"),
    ("missing JobSpecs", dict(job_specs=None), "JobSpecs"),
    ("empty JobSpecs", dict(job_specs=[]), "JobSpecs"),
    ("missing UserCommand", dict(user_command=None), "UserCommand"),
    ("blank UserCommand", dict(user_command="   "), "UserCommand"),
    ("PodCount zero", dict(job_specs=[spec(pod_count=0)]), "JobSpecs[0].PodCount"),
    ("PodCount string", dict(job_specs=[spec(pod_count="2")]), "JobSpecs[0].PodCount"),
    ("PodCount float", dict(job_specs=[spec(pod_count=1.5)]), "JobSpecs[0].PodCount"),
    ("both spot limits", dict(job_specs=[spec(spot_spec=models.SpotSpec(
        spot_strategy="SpotWithPriceLimit", spot_discount_limit=0.4, spot_price_limit=0.01))]),
     "SpotDiscountLimit and SpotPriceLimit"),
    ("Priority 0", dict(priority=0), "Priority"),
    ("Priority 10", dict(priority=10), "Priority"),
    ("role not valid for JobType", dict(job_specs=[spec(type="PS")]), "JobSpecs[0].Type"),
    ("TF role Master", dict(job_type="TFJob", job_specs=[spec(type="Master")]), "JobSpecs[0].Type"),
    ("duplicate role", dict(job_specs=[spec(), spec()]), "JobSpecs[1].Type"),
    ("two masters", dict(job_specs=[spec(type="Master", pod_count=2)]), "JobSpecs[0].PodCount"),
    ("unknown EcsSpec", dict(job_specs=[spec(resource_config=None, ecs_spec="ecs.nope.large")]),
     "JobSpecs[0].EcsSpec"),
    ("bad memory", dict(job_specs=[spec(resource_config=models.ResourceConfig(cpu="1", memory="lots"))]),
     "JobSpecs[0].ResourceConfig.Memory"),
    ("fractional max minutes", dict(job_max_running_time_minutes=0.5), "JobMaxRunningTimeMinutes"),
    ("bad tag key", dict(settings=models.JobSettings(tags={"aliyun-x": "v"})), "Settings.Tags"),
    ("env not string", dict(envs={"A": 1}), "Envs.A"),
    ("relative mount path", dict(data_sources=[models.CreateJobRequestDataSources(uri="file:///tmp",
                                                                                 mount_path="mnt/x")]),
     "DataSources[0].MountPath"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_invalid_create_job_is_400_and_leaves_no_job(localdlc, case):
    _, overrides, field = case
    client = localdlc.client()
    workspace = f"ws-invalid-{uuid.uuid4().hex[:8]}"
    request = base(workspace_id=workspace, **overrides)
    with pytest.raises(ClientException) as err:
        client.create_job(request)
    exc = err.value
    assert exc.status_code == 400
    assert exc.code == "InvalidParameter"
    assert field in exc.data["Message"]
    assert exc.data["RequestId"] and exc.request_id == exc.data["RequestId"]
    listed = client.list_jobs(models.ListJobsRequest(workspace_id=workspace)).body
    assert listed.total_count == 0 and listed.jobs == []


def test_valid_variants_are_accepted(localdlc):
    client = localdlc.client()
    accepted = [
        base(job_specs=[spec(resource_config=None, ecs_spec="ecs.g6.large")]),
        base(job_type="TFJob", job_specs=[spec(type="Chief"), spec(type="PS"), spec(type="Worker", pod_count=2)]),
        base(job_specs=[spec(type="Master"), spec(type="Worker", pod_count=2)], priority=9),
        base(job_specs=[spec(spot_spec=models.SpotSpec(spot_strategy="SpotWithPriceLimit", spot_discount_limit=0.4))]),
        base(job_type="RayJob", job_specs=[spec(type="Head"), spec(type="Worker-cpu")]),
        base(display_name="a" * 256, job_max_running_time_minutes=5),
    ]
    ids = [client.create_job(r).body.job_id for r in accepted]
    assert len(set(ids)) == len(accepted)
    for job_id in ids:
        client.stop_job(job_id)


def test_update_job_validation(localdlc):
    client = localdlc.client()
    job_id = client.create_job(base(user_command="sleep 5")).body.job_id
    try:
        with pytest.raises(ClientException) as err:
            client.update_job(job_id, models.UpdateJobRequest(priority=12))
        assert err.value.code == "InvalidParameter" and "Priority" in err.value.data["Message"]
        with pytest.raises(ClientException) as err:
            client.update_job(job_id, models.UpdateJobRequest(accessibility="PRIVATE"))
        assert "Accessibility" in err.value.data["Message"]
        with pytest.raises(ClientException) as err:
            client.update_job("dlcmissing", models.UpdateJobRequest(priority=3))
        assert err.value.status_code == 404
    finally:
        client.stop_job(job_id)
