"""localdlc conformance: job actions through the official SDK (CreateJob, GetJob, ListJobs, logs, events, ...)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException

pytestmark = pytest.mark.integration

ISO_RE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def job_request(command: str = "echo hello", *, name: str | None = None, job_type: str = "PyTorchJob",
                pods: int = 1, role: str = "Worker", **extra) -> models.CreateJobRequest:
    spec = models.JobSpec(type=role, pod_count=pods, image="registry.example/pytorch:2.3",
                          resource_config=models.ResourceConfig(cpu="1", memory="1Gi"))
    return models.CreateJobRequest(display_name=name or f"t-{uuid.uuid4().hex[:8]}", job_type=job_type,
                                   job_specs=[spec], user_command=command, workspace_id="ws-test", **extra)


def test_create_get_succeeds_with_history_pods_and_iso_times(localdlc):
    client = localdlc.client()
    created = client.create_job(job_request("echo out-line; echo err-line >&2"))
    assert created.body.job_id.startswith("dlc") and created.body.job_id == created.body.job_id.lower()
    assert created.body.request_id
    assert created.headers.get("x-acs-request-id") == created.body.request_id

    first = client.get_job(created.body.job_id, models.GetJobRequest()).body
    assert first.status in ("Creating", "EnvPreparing", "Running", "Succeeded")
    body = localdlc.wait_for_status(created.body.job_id)
    assert body.status == "Succeeded"
    statuses = [h.status for h in body.status_history]
    assert statuses[0] == "Creating" and statuses[-1] == "Succeeded"
    assert statuses.index("EnvPreparing") < statuses.index("Running")
    for stamp in (body.gmt_create_time, body.gmt_running_time, body.gmt_finish_time, body.gmt_successed_time):
        assert isinstance(stamp, str)
        assert __import__("re").match(ISO_RE, stamp), stamp
    assert body.display_name and body.job_type == "PyTorchJob" and body.workspace_id == "ws-test"
    assert len(body.pods) == 1
    pod = body.pods[0]
    assert pod.status == "Succeeded" and pod.ip == "127.0.0.1" and pod.type == "Worker" and pod.pod_uid
    assert pod.gmt_start_time and pod.gmt_finish_time
    assert body.job_specs[0].image == "registry.example/pytorch:2.3"

    logs = client.get_pod_logs(body.job_id, pod.pod_id, models.GetPodLogsRequest()).body
    assert logs.logs == ["out-line", "err-line"]
    assert logs.pod_uid == pod.pod_uid


def test_failed_pod_fails_job_and_kills_the_others(localdlc):
    client = localdlc.client()
    command = 'if [ "$RANK" = "1" ]; then exit 3; fi; sleep 30'
    job_id = client.create_job(job_request(command, pods=3)).body.job_id
    started = time.monotonic()
    body = localdlc.wait_for_status(job_id, timeout=15)
    assert body.status == "Failed"
    assert time.monotonic() - started < 10  # the sleeping pods were killed, not waited for
    assert body.reason_code == "PodFailed"
    assert "exited with code 3" in body.reason_message and f"{job_id}-worker-1" in body.reason_message
    assert all(p.status == "Failed" for p in body.pods)
    assert body.status_history[-1].reason_code == "PodFailed"


def test_envs_and_job_name_injected(localdlc):
    client = localdlc.client()
    request = job_request('echo "A=$MY_VAR J=$JOB_NAME U=$PYTHONUNBUFFERED W=$WORLD_SIZE R=$RANK"',
                          envs={"MY_VAR": "hello world"})
    job_id = client.create_job(request).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.status == "Succeeded"
    assert body.envs == {"MY_VAR": "hello world"}
    logs = client.get_pod_logs(job_id, body.pods[0].pod_id, models.GetPodLogsRequest()).body.logs
    assert logs == [f"A=hello world J={job_id} U=1 W=1 R=0"]


def test_pod_logs_max_lines_time_window_and_download(localdlc):
    client = localdlc.client()
    command = "for i in 1 2 3 4 5; do echo line-$i; done; sleep 1.2; echo late-1; echo late-2"
    job_id = client.create_job(job_request(command)).body.job_id
    body = localdlc.wait_for_status(job_id)
    pod_id = body.pods[0].pod_id
    all_lines = ["line-1", "line-2", "line-3", "line-4", "line-5", "late-1", "late-2"]
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest()).body.logs == all_lines
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(max_lines=3)).body.logs == \
        ["line-5", "late-1", "late-2"]
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(max_lines=2, download_to_file=True)
                               ).body.logs == all_lines
    # Time bounds: the late lines come >= 1 s after the early ones; split at the pod's start + ~0.6 s.
    start = time.strptime(body.pods[0].gmt_start_time, "%Y-%m-%dT%H:%M:%SZ")
    start_epoch = int(time.mktime(start) - time.timezone)
    finish_epoch = int(time.mktime(time.strptime(body.pods[0].gmt_finish_time, "%Y-%m-%dT%H:%M:%SZ"))
                       - time.timezone)
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    early = client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(
        start_time=iso(start_epoch - 1), end_time=iso(start_epoch - 1))).body.logs
    assert early == []
    windowed = client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(
        start_time=iso(start_epoch - 1), end_time=iso(finish_epoch + 1))).body.logs
    assert windowed == all_lines
    future = client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(
        start_time=iso(finish_epoch + 5))).body.logs
    assert future == []


def test_job_and_pod_events(localdlc):
    client = localdlc.client()
    job_id = client.create_job(job_request("true")).body.job_id
    body = localdlc.wait_for_status(job_id)
    events = client.get_job_events(job_id, models.GetJobEventsRequest()).body
    assert events.job_id == job_id
    text = "\n".join(events.events)
    assert "Created" in text and "Running" in text and "Succeeded" in text
    assert client.get_job_events(job_id, models.GetJobEventsRequest(max_events_num=2)).body.events == \
        events.events[-2:]
    pod = body.pods[0]
    pod_events = client.get_pod_events(job_id, pod.pod_id, models.GetPodEventsRequest(pod_uid=pod.pod_uid)).body
    assert pod_events.pod_id == pod.pod_id and pod_events.pod_uid == pod.pod_uid
    assert any("Started" in e for e in pod_events.events) and any("exited with code 0" in e
                                                                     for e in pod_events.events)


def test_list_jobs_filters_sort_and_paging(localdlc):
    client = localdlc.client()
    marker = uuid.uuid4().hex[:8]
    ws = f"ws-{marker}"
    ids = []
    for i, (name, job_type) in enumerate([(f"Alpha-{marker}", "PyTorchJob"), (f"beta-{marker}", "TFJob"),
                                          (f"ALPHA-two-{marker}", "PyTorchJob")]):
        request = job_request("true", name=name, job_type=job_type,
                              settings=models.JobSettings(tags={"run": marker, "idx": str(i)}))
        request.workspace_id = ws
        ids.append(client.create_job(request).body.job_id)
        time.sleep(0.02)
    for job_id in ids:
        localdlc.wait_for_status(job_id)

    def listed(**kw):
        body = client.list_jobs(models.ListJobsRequest(workspace_id=ws, **kw)).body
        return body.total_count, [j.job_id for j in body.jobs]

    assert listed() == (3, ids[::-1])  # default: newest first
    assert listed(order="asc") == (3, ids)
    assert listed(display_name="alpha") == (2, [ids[2], ids[0]])  # fuzzy, case-insensitive
    assert listed(job_type="TFJob") == (1, [ids[1]])
    assert listed(status="Succeeded")[0] == 3
    assert listed(status="Running") == (0, [])
    assert listed(tags={"run": marker, "idx": "1"}) == (1, [ids[1]])
    assert listed(tags={"run": "nope"}) == (0, [])
    assert listed(job_id=ids[1].upper()) == (1, [ids[1]])
    assert listed(job_ids=f"{ids[0]},{ids[2]}", order="asc") == (2, [ids[0], ids[2]])
    assert listed(page_size=2, page_number=1) == (3, ids[::-1][:2])
    assert listed(page_size=2, page_number=2) == (3, ids[::-1][2:])
    assert listed(sort_by="DisplayName", order="asc")[1] == [ids[0], ids[2], ids[1]]
    past = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - s))  # noqa: E731
    assert listed(start_time=past(3600))[0] == 3
    assert listed(start_time=past(3600 * 3), end_time=past(3600 * 2)) == (0, [])

    item = client.list_jobs(models.ListJobsRequest(workspace_id=ws, job_id=ids[0])).body.jobs[0]
    assert item.status == "Succeeded" and item.node_count == "1" and item.settings.tags["run"] == marker
    assert item.gmt_create_time and item.status_history[-1].status == "Succeeded"

    with pytest.raises(ClientException) as err:
        client.list_jobs(models.ListJobsRequest(page_size=101))
    assert err.value.code == "InvalidParameter" and "PageSize" in err.value.message
    assert err.value.status_code == 400 and err.value.data["RequestId"]


def test_get_job_not_found_is_sdk_client_exception(localdlc):
    client = localdlc.client()
    with pytest.raises(ClientException) as err:
        client.get_job("dlcdoesnotexist", models.GetJobRequest())
    exc = err.value
    assert exc.status_code == 404 and exc.code == "JobNotFound"
    assert exc.request_id == exc.data["RequestId"] and exc.data["HostId"]
    assert "request id:" in exc.message


def test_tags_json_is_sent_as_query_string(localdlc):
    """The SDK sends Tags as a JSON string in the query; a tag value with spaces and symbols must match."""
    client = localdlc.client()
    value = "a b&c=d+é"
    job_id = client.create_job(job_request("true", settings=models.JobSettings(
        tags={"console-idempotency": value}))).body.job_id
    found = client.list_jobs(models.ListJobsRequest(tags={"console-idempotency": value})).body
    assert [j.job_id for j in found.jobs] == [job_id]
    assert json.dumps(found.jobs[0].settings.tags, ensure_ascii=False) == json.dumps(
        {"console-idempotency": value}, ensure_ascii=False)
