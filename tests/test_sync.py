"""Status sync, stop and log archive with the real session stack (Redis, Celery worker and beat, localdlc), and
the sync's call budget on 500 active jobs (ListJobs calls counted by localdlc itself)."""

from __future__ import annotations

import math
import threading

import pytest
import requests
from alibabacloud_pai_dlc20201203 import models as sdk

from tests.test_lifecycle import (  # noqa: F401 - fixture_* register the fixtures used here by name
    fixture_backend,
    fixture_quiet_stack,
    fixture_ws,
    job_body,
    make_job,
    make_workspace,
    use_broker,
    wait_for,
    write_credentials,
)
from tests.test_skeleton_flow import signed_in_session

pytestmark = pytest.mark.integration


def stack_client(stack):
    from alibabacloud_pai_dlc20201203.client import Client
    from alibabacloud_tea_openapi.models import Config

    return Client(Config(access_key_id=stack.access_key_id, access_key_secret=stack.access_key_secret,
                         endpoint=f"127.0.0.1:{stack.localdlc_port}", protocol="http", region_id="cn-hangzhou"))


def stack_stats(stack) -> dict:
    url = f"http://127.0.0.1:{stack.localdlc_port}/_localdlc/stats"
    return requests.get(url, timeout=5).json()["calls"]


def submit_through_the_stack(stack, workspace, owner, command: str, name: str | None = None):
    """What the create page does: save the row and enqueue the submit on the stack's Redis."""
    from jobs.views import save_and_enqueue

    with use_broker(stack.redis_url):
        return save_and_enqueue(workspace=workspace, owner=owner, body=job_body(command, name))


def status_of(job) -> str:
    job.refresh_from_db()
    return job.status


def test_stop_goes_through_celery_and_the_row_says_stopping_until_dlc_confirms(stack, member, workspace):
    from jobs import lifecycle

    # The pod ignores SIGTERM, so DLC takes its grace period (3 s) to stop it: "Stopping" lasts a while.
    job = submit_through_the_stack(stack, workspace, member, "trap '' TERM; echo started; sleep 60")
    web = signed_in_session(stack.url, member.username)
    wait_for(lambda: status_of(job) == "Running", timeout=60, what="job running")
    stops_before = stack_stats(stack).get("StopJob", 0)

    with use_broker(stack.redis_url):
        assert lifecycle.request_stop(member, job) == "stopping"
    assert status_of(job) == "Stopping"
    assert "Stopping" in web.get(f"{stack.url}/jobs/{job.pk}/row").text

    seen = []

    def stopped() -> bool:
        seen.append(status_of(job))
        return seen[-1] == "Stopped"

    wait_for(stopped, timeout=30, interval=0.1, what="stop confirmed")
    assert set(seen) <= {"Stopping", "Stopped"}, f"the row must not flick back while stopping: {seen}"
    assert stack_stats(stack).get("StopJob", 0) == stops_before + 1
    job.refresh_from_db()
    assert job.stop_sent_at and job.finished_at and job.status_history[-1]["Status"] == "Stopped"
    assert "Stopped" in web.get(f"{stack.url}/jobs/{job.pk}/row").text


def test_logs_are_archived_when_the_job_ends_and_outlive_it_on_dlc(stack, member, workspace, settings):
    """2500 lines (more than one GetPodLogs page) archived by the worker once sync sees the job end."""
    from jobs import dlc, logarchive
    from jobs.models import PodLog

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # for this process's own DLC calls

    job = submit_through_the_stack(stack, workspace, member, "seq 1 1500; sleep 0.5; seq 1501 2500; echo done >&2")
    wait_for(lambda: status_of(job) == "Succeeded", timeout=60, what="job succeeded")
    pod_id = job.pods[0]["PodId"]
    wait_for(lambda: PodLog.objects.filter(job=job, pod_id=pod_id).exists(), timeout=30, what="log archived")
    expected = [str(n) for n in range(1, 2501)] + ["done"]
    assert logarchive.read(job, pod_id) == expected
    archived = PodLog.objects.get(job=job, pod_id=pod_id)
    assert archived.lines == 2501 and len(bytes(archived.content)) < len("\n".join(expected)) / 2
    job.refresh_from_db()
    assert job.logs_archived_at

    stack_client(stack).delete_job(job.dlc_job_id)  # DLC forgets the job and its logs
    with pytest.raises(dlc.DLCError) as gone:
        dlc.get_pod_logs(job.workspace, job.dlc_job_id, pod_id)
    assert gone.value.status == 404
    assert logarchive.read(job, pod_id) == expected
    assert logarchive.read(job, "no-such-pod") is None


def test_fetch_lines_pages_through_a_log_longer_than_a_page(ws, backend):
    """The bisection itself, with a 100-line page on 1000 lines printed in bursts of 50: every line, in order."""
    from jobs import lifecycle, logarchive
    from jobs.models import Job

    job = make_job(ws, command="for b in $(seq 1 20); do seq $((b*50-49)) $((b*50)); sleep 0.05; done")
    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    backend.wait_for_status(job.dlc_job_id, ["Succeeded"], timeout=20)
    lifecycle.sync_workspace(ws)
    job = Job.objects.get(pk=job.pk)
    pod = job.pods[0]
    calls = backend.stats()["calls"].get("GetPodLogs", 0)
    start, end = logarchive.pod_range(job, pod)
    lines = logarchive.fetch_lines(ws, job.dlc_job_id, pod["PodId"], start, end, page_lines=100)
    assert lines == [str(n) for n in range(1, 1001)]
    assert backend.stats()["calls"]["GetPodLogs"] - calls >= 10, "a 100-line page cannot carry 1000 lines"

    assert logarchive.archive(job.pk, page_lines=100) == 1
    assert logarchive.archive(job.pk, page_lines=100) == 0  # idempotent
    assert logarchive.read(job, pod["PodId"]) == lines


def test_sync_of_500_active_jobs_uses_a_list_jobs_call_per_page_plus_one(transactional_db, quiet_stack,
                                                                        localdlc_factory, settings, tmp_path):
    """500 active jobs: each cycle costs at most ceil(500 / page size) + 1 ListJobs calls and no GetJob,
    counted by localdlc; jobs created elsewhere meanwhile are imported by that "+1" call."""
    from django.utils import timezone

    from jobs import dlc, tasks
    from jobs.models import Job

    # 2 emulated cores: one job runs, the other 499 queue (active, yet no 500 processes on the test machine).
    big = localdlc_factory(cpu=2, memory_gib=16, creating_seconds=0.05, env_preparing_seconds=0.05)
    settings.LOCALDLC_CREDENTIALS_FILE = str(
        write_credentials(tmp_path / "big.ini", big.access_key_id, big.access_key_secret)
    )
    ws = make_workspace(big.endpoint)

    ids: list[str] = []
    lock = threading.Lock()

    def create(names: range) -> None:
        client = big.client()
        for i in names:
            body = job_body("sleep 60", f"bulk-{i}")
            remote = client.create_job(sdk.CreateJobRequest().from_map(body)).body.job_id
            with lock:
                ids.append(remote)

    threads = [threading.Thread(target=create, args=(range(t, 500, 8),)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(ids) == 500
    now = timezone.now()
    Job.objects.bulk_create(
        Job(workspace=ws, display_name=f"bulk-{n}", job_type="PyTorchJob", body=job_body("sleep 60"),
            dlc_job_id=remote, status="Creating", created_at=now, submitted_at=now)
        for n, remote in enumerate(ids)
    )
    budget = math.ceil(500 / dlc.LIST_PAGE_SIZE) + 1

    def cycle() -> dict:
        before = big.stats()["calls"]
        tasks.sync_jobs()  # the beat's task, run here so that each cycle is counted on its own
        after = big.stats()["calls"]
        return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}

    first = cycle()
    assert 1 <= first.get("ListJobs", 0) <= budget and not first.get("GetJob"), first
    assert Job.objects.filter(workspace=ws, synced_at__isnull=True).count() == 0
    assert set(Job.objects.filter(workspace=ws).values_list("status", flat=True)) <= {"Queuing", "Running"}
    assert Job.objects.filter(workspace=ws, status="Queuing").count() >= 495

    # Jobs created elsewhere (another console, the CLI) show up through the import, within the same budget.
    client = big.client()
    foreign = [client.create_job(sdk.CreateJobRequest().from_map(job_body("sleep 60", f"cli-{n}"))).body.job_id
               for n in range(3)]
    for _ in range(8):
        counts = cycle()
        assert counts.get("ListJobs", 0) <= budget and not counts.get("GetJob"), counts
        if Job.objects.filter(dlc_job_id__in=foreign).count() == 3:
            break
    assert Job.objects.filter(dlc_job_id__in=foreign, imported=True, owner=None).count() == 3
    assert Job.objects.filter(workspace=ws).count() == 503

    # A change on DLC's side shows after one cycle (now 503 active jobs: one page more).
    client.stop_job(ids[-1])
    wait_for(lambda: client.get_job(ids[-1], sdk.GetJobRequest()).body.status == "Stopped", timeout=10)
    counts = cycle()
    assert counts.get("ListJobs", 0) <= math.ceil(503 / dlc.LIST_PAGE_SIZE) + 1 and not counts.get("GetJob")
    assert Job.objects.get(dlc_job_id=ids[-1]).status == "Stopped"
