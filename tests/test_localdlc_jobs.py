"""localdlc conformance: job actions through the official SDK (CreateJob, GetJob, ListJobs, logs, events, ...)."""

from __future__ import annotations

import calendar
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
    command = "for i in 1 2 3 4 5; do echo line-$i; done; sleep 2.2; echo late-1; echo late-2"
    job_id = client.create_job(job_request(command)).body.job_id
    body = localdlc.wait_for_status(job_id)
    pod_id = body.pods[0].pod_id
    early = ["line-1", "line-2", "line-3", "line-4", "line-5"]
    late = ["late-1", "late-2"]
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest()).body.logs == early + late
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(max_lines=3)).body.logs == \
        ["line-5", "late-1", "late-2"]
    assert client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(max_lines=2, download_to_file=True)
                               ).body.logs == early + late

    def epoch(stamp: str) -> int:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))

    def iso(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    # Pod start E (whole seconds): early lines fall in [E, E+1.x), late ones >= E+2.2, so E+2 splits them.
    start = epoch(body.pods[0].gmt_start_time)
    split = start + 2

    def window(**kw) -> list[str]:
        return client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest(**kw)).body.logs

    assert window(start_time=iso(start - 1), end_time=iso(split)) == early
    assert window(start_time=iso(split)) == late
    assert window(start_time=iso(split), max_lines=1) == ["late-2"]
    assert window(start_time=iso(start - 5), end_time=iso(start - 1)) == []


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


def test_update_job_fields_and_need_detail(localdlc):
    client = localdlc.client()
    job_id = client.create_job(job_request("sleep 0.5", description="before")).body.job_id
    updated = client.update_job(job_id, models.UpdateJobRequest(
        description="after", accessibility="PUBLIC", priority=4)).body
    assert updated.job_id == job_id and updated.request_id
    body = client.get_job(job_id, models.GetJobRequest(need_detail=False)).body
    assert (body.description, body.accessibility, body.priority) == ("after", "PUBLIC", 4)
    assert body.pods is None or body.pods == []
    public = client.list_jobs(models.ListJobsRequest(accessibility="PUBLIC", job_id=job_id)).body
    assert public.total_count == 1
    assert localdlc.wait_for_status(job_id).status == "Succeeded"


def test_every_status_is_observable_in_order(localdlc_factory):
    """Poll to see the short Creating and EnvPreparing phases live, not only in the history."""
    dlc = localdlc_factory(creating_seconds=0.8, env_preparing_seconds=0.8)
    client = dlc.client()
    job_id = client.create_job(job_request("sleep 0.8")).body.job_id
    seen: list[str] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        status = client.get_job(job_id, models.GetJobRequest()).body.status
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("Succeeded", "Failed", "Stopped"):
            break
        time.sleep(0.03)
    assert seen == ["Creating", "EnvPreparing", "Running", "Succeeded"]
