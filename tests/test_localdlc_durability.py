"""localdlc conformance: restart after SIGKILL keeps every job, leaves no orphans; concurrent CreateJob."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models

from tests.support.localdlc import alive, job_processes, wait_until
from tests.test_localdlc_runner import request, spec

pytestmark = pytest.mark.integration


def test_sigkill_restart_keeps_jobs_fails_running_resumes_queued(localdlc_factory):
    dlc = localdlc_factory(cpu=1, creating_seconds=0.05, env_preparing_seconds=0.05)
    client = dlc.client()
    done = client.create_job(request("echo finished")).body.job_id
    assert dlc.wait_for_status(done).status == "Succeeded"
    running = client.create_job(request("sleep 60 & sleep 61", [spec(pods=1)])).body.job_id
    dlc.wait_for_status(running, ["Running"])
    queued = client.create_job(request("echo after-restart")).body.job_id
    dlc.wait_for_status(queued, ["Queuing"])
    pids = wait_until(lambda: len(job_processes(running)) >= 2 and job_processes(running))
    assert pids

    dlc.kill()
    # The pods die with the service (PDEATHSIG for the shell, the guardian for its children).
    assert wait_until(lambda: not [p for p in pids if alive(p)], timeout=5)
    assert job_processes(running) == []

    dlc.restart()
    client = dlc.client()
    body = client.get_job(running, models.GetJobRequest()).body
    assert body.status == "Failed" and body.reason_code == "LocalDLCRestarted"
    assert body.reason_message and body.status_history[-1].status == "Failed"
    assert body.pods[0].status == "Failed"
    assert client.get_job(done, models.GetJobRequest()).body.status == "Succeeded"
    resumed = dlc.wait_for_status(queued, timeout=15)
    assert resumed.status == "Succeeded"
    assert client.get_pod_logs(queued, resumed.pods[0].pod_id, models.GetPodLogsRequest()).body.logs == \
        ["after-restart"]
    listed = client.list_jobs(models.ListJobsRequest(page_size=100)).body
    assert {done, running, queued} <= {j.job_id for j in listed.jobs} and listed.total_count == 3
    # Logs written before the crash are still served.
    assert client.get_pod_logs(done, f"{done}-worker-0", models.GetPodLogsRequest()).body.logs == ["finished"]


def test_200_concurrent_create_jobs_from_8_threads(localdlc_factory):
    dlc = localdlc_factory(cpu=1000, memory_gib=4000)
    workspace = f"ws-load-{uuid.uuid4().hex[:6]}"
    ids: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        client = dlc.client()
        for i in range(25):
            try:
                req = request("true", [spec(cpu="0.1")], display_name=f"load-{n}-{i}")
                req.workspace_id = workspace
                job_id = client.create_job(req).body.job_id
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                with lock:
                    errors.append(exc)
                continue
            with lock:
                ids.append(job_id)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ids) == 200 and len(set(ids)) == 200
    assert time.monotonic() - started < 30

    client = dlc.client()
    seen: list[str] = []
    for page in (1, 2):
        body = client.list_jobs(models.ListJobsRequest(workspace_id=workspace, page_size=100, page_number=page)).body
        assert body.total_count == 200
        seen += [j.job_id for j in body.jobs]
    assert sorted(seen) == sorted(ids)
    names = {j.display_name for j in client.list_jobs(models.ListJobsRequest(
        workspace_id=workspace, page_size=100, display_name="load-7-")).body.jobs}
    assert names == {f"load-7-{i}" for i in range(25)}
    assert dlc.stats()["calls"]["CreateJob"] == 200
