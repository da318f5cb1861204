"""localdlc conformance: request parameters the SDK sends are honoured, or refused with a 400 naming them; unknown
jobs and pods answer 404 in the gateway error shape.

A parameter read loosely would answer a plausible, wrong result (a "nan" time window that matches nothing, a
NeedDetail=maybe read as false, a filter on another user that lists ours), so each is checked both ways.
"""

from __future__ import annotations

import time
import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException

pytestmark = pytest.mark.integration


def finished_job(dlc, client, **extra) -> str:
    spec = models.JobSpec(type="Worker", pod_count=1, image="registry.example/pytorch:2.3",
                          resource_config=models.ResourceConfig(cpu="1", memory="1Gi"))
    request = models.CreateJobRequest(display_name=f"p-{uuid.uuid4().hex[:8]}", job_type="PyTorchJob",
                                      job_specs=[spec], user_command="echo one", **extra)
    job_id = client.create_job(request).body.job_id
    assert dlc.wait_for_status(job_id).status == "Succeeded"
    return job_id


def refused(call, field: str) -> ClientException:
    with pytest.raises(ClientException) as err:
        call()
    assert err.value.status_code == 400 and err.value.code == "InvalidParameter", err.value.message
    assert err.value.data["Message"].startswith(f"{field}:"), err.value.data["Message"]
    return err.value


def test_times_that_are_not_finite_epochs_or_iso_are_refused(localdlc):
    client = localdlc.client()
    job_id = finished_job(localdlc, client)
    pod_id = client.get_job(job_id, models.GetJobRequest()).body.pods[0].pod_id
    # float() reads these; as a time bound they used to match nothing, silently.
    for bad in ("nan", "inf", "-inf", "1e30", "-5"):
        refused(lambda t=bad: client.list_jobs(models.ListJobsRequest(job_id=job_id, start_time=t)), "StartTime")
        refused(lambda t=bad: client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(end_time=t)), "EndTime")
        refused(lambda t=bad: client.get_job_events(job_id, models.GetJobEventsRequest(start_time=t)), "StartTime")
    # Epoch seconds and milliseconds are still times.
    hour_ago = time.time() - 3600
    for good in (str(int(hour_ago)), str(int(hour_ago * 1000)), "2000-01-01T00:00:00Z"):
        listed = client.list_jobs(models.ListJobsRequest(job_id=job_id, start_time=good)).body
        assert [j.job_id for j in listed.jobs] == [job_id]
        assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(start_time=good)).body.logs == ["one"]


def test_booleans_are_true_or_false(localdlc):
    client = localdlc.client()
    job_id = finished_job(localdlc, client)
    assert client.get_job(job_id, models.GetJobRequest(need_detail=True)).body.pods
    assert not client.get_job(job_id, models.GetJobRequest(need_detail=False)).body.pods
    # The model says bool; an app passing a string gets it sent as is, and used to be read as false.
    refused(lambda: client.get_job(job_id, models.GetJobRequest(need_detail="yes please")), "NeedDetail")
    pod_id = client.get_job(job_id, models.GetJobRequest()).body.pods[0].pod_id
    refused(lambda: client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(download_to_file="maybe")),
            "DownloadToFile")


def test_tags_filter_values_must_be_strings(localdlc):
    client = localdlc.client()
    marker = uuid.uuid4().hex[:8]
    job_id = finished_job(localdlc, client, settings=models.JobSettings(tags={"n": "1", "m": marker}))
    assert [j.job_id for j in client.list_jobs(models.ListJobsRequest(tags={"n": "1", "m": marker})).body.jobs] \
        == [job_id]
    # {"n": 1} can never equal a tag (tags are strings): it used to list nothing instead of saying so.
    refused(lambda: client.list_jobs(models.ListJobsRequest(tags={"n": 1, "m": marker})), "Tags")


def test_quota_and_user_filters_match_what_items_show(localdlc):
    client = localdlc.client()
    marker = uuid.uuid4().hex[:8]
    ws = f"ws-{marker}"
    quota = f"quota-{marker}"
    with_quota = finished_job(localdlc, client, workspace_id=ws, resource_id=quota)
    without = finished_job(localdlc, client, workspace_id=ws)

    def listed(**kw) -> list[str]:
        return sorted(j.job_id for j in client.list_jobs(models.ListJobsRequest(workspace_id=ws, **kw)).body.jobs)

    item = client.list_jobs(models.ListJobsRequest(workspace_id=ws, job_id=with_quota)).body.jobs[0]
    assert item.resource_quota_name == quota and item.username and item.user_id
    assert listed() == sorted([with_quota, without])
    assert listed(resource_quota_name=quota.upper()[2:]) == [with_quota]  # fuzzy, case-insensitive
    assert listed(resource_quota_name="no-such-quota") == []
    assert listed(username=item.username[1:4].upper()) == sorted([with_quota, without])
    assert listed(username="someone-else") == []
    assert listed(user_id_for_filter=item.user_id) == sorted([with_quota, without])
    assert listed(user_id_for_filter="someone-else") == []


def test_every_job_action_answers_an_unknown_job_or_pod_with_the_gateway_error_shape(localdlc):
    client = localdlc.client()
    missing = "dlc" + uuid.uuid4().hex[:14]
    calls = {
        "GetJob": lambda: client.get_job(missing, models.GetJobRequest()),
        "StopJob": lambda: client.stop_job(missing),
        "DeleteJob": lambda: client.delete_job(missing),
        "UpdateJob": lambda: client.update_job(missing, models.UpdateJobRequest(priority=2)),
        "GetPodLogs": lambda: client.get_pod_logs(missing, f"{missing}-worker-0", models.GetPodLogsRequest()),
        "GetPodEvents": lambda: client.get_pod_events(missing, f"{missing}-worker-0", models.GetPodEventsRequest()),
        "GetJobEvents": lambda: client.get_job_events(missing, models.GetJobEventsRequest()),
        "GetJobMetrics": lambda: client.get_job_metrics(missing, models.GetJobMetricsRequest(
            metric_type="CpuCoreUsage")),
    }
    for action, call in calls.items():
        with pytest.raises(ClientException) as err:
            call()
        exc = err.value
        assert (exc.status_code, exc.code) == (404, "JobNotFound"), action
        assert exc.request_id and exc.request_id == exc.data["RequestId"] and missing in exc.data["Message"], action

    job_id = finished_job(localdlc, client)
    for call in (lambda: client.get_pod_logs(job_id, f"{job_id}-worker-9", models.GetPodLogsRequest()),
                 lambda: client.get_pod_events(job_id, f"{job_id}-worker-9", models.GetPodEventsRequest())):
        with pytest.raises(ClientException) as err:
            call()
        assert (err.value.status_code, err.value.code) == (404, "PodNotFound")
    # Stopping a job that has ended changes nothing and succeeds (README: idempotent).
    assert client.stop_job(job_id).body.job_id == job_id
    assert client.get_job(job_id, models.GetJobRequest()).body.status == "Succeeded"
