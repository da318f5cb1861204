"""jobs.logarchive for jobs the console did not run: a job imported from DLC after it had already ended gets its
pods' logs archived like any job that ends under the console's eye, once, by the session stack's own processes."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from alibabacloud_pai_dlc20201203 import models as sdk
from django.db import transaction
from django.utils import timezone

from tests.support.waiting import wait_for
from tests.test_lifecycle import job_body
from tests.test_sync import stack_client, stack_stats

pytestmark = pytest.mark.integration


def test_a_job_imported_already_ended_has_its_pods_logs_archived_once(stack, transactional_db, settings):
    from jobs import lifecycle, logarchive
    from jobs.models import Job, PodLog, Workspace, WorkspaceSync

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # for this process's own DLC calls
    # A DLC workspace of its own: the session localdlc keeps every earlier test's jobs, and ListJobs filters by it.
    dlc_workspace = f"imp-{uuid.uuid4().hex[:8]}"
    client = stack_client(stack)
    body = job_body("echo made-elsewhere; seq 1 3", "ended-before-import", WorkspaceId=dlc_workspace)
    remote = client.create_job(sdk.CreateJobRequest().from_map(body)).body.job_id
    wait_for(lambda: client.get_job(remote, sdk.GetJobRequest()).body.status == "Succeeded", timeout=30,
             what="the job ended on DLC before the console knew it")

    # The workspace is added afterwards, its import starting before the job was created (the session stack's
    # look-back is 0 h): the first sync imports the job already ended. One commit, so no cycle sees one without
    # the other.
    with transaction.atomic():
        workspace = Workspace.objects.create(
            name=dlc_workspace, backend=Workspace.BACKEND_LOCAL, dlc_workspace_id=dlc_workspace,
            endpoint=f"127.0.0.1:{stack.localdlc_port}",
        )
        WorkspaceSync.objects.create(workspace=workspace, import_from=timezone.now() - timedelta(minutes=5))

    job = wait_for(lambda: Job.objects.filter(workspace=workspace, dlc_job_id=remote).first(), timeout=30,
                   what="job imported")
    assert job.imported and job.status == "Succeeded" and job.pods
    pod_id = job.pods[0]["PodId"]
    # The job is marked archived last, after its pods' logs are written and its metrics and diagnosis read from
    # them (logarchive.archive): waiting for the PodLog row alone could look in between (a CI run did).
    wait_for(lambda: Job.objects.filter(pk=job.pk, logs_archived_at__isnull=False).exists(), timeout=30,
             what="log archived")
    assert logarchive.read(job, pod_id) == ["made-elsewhere", "1", "2", "3"]

    # Archived once: nothing more is owed, so neither the sweep nor a second task asks DLC for those logs again.
    calls = stack_stats(stack).get("GetPodLogs", 0)
    assert job.pk not in lifecycle.unarchived_jobs(timedelta(0))
    time.sleep(2)  # a few sync cycles: the import does not enqueue the job again
    assert PodLog.objects.filter(job=job).count() == len(job.pods)
    assert stack_stats(stack).get("GetPodLogs", 0) == calls


def test_a_log_read_forward_a_part_at_a_time_gives_every_line_once_in_order(db, localdlc, tmp_path, settings):
    """fetch_oldest (early stopping reads a running trial this way): each part is the range's first lines, at
    least `limit` while more remain, and ends where the next part starts, so no line is skipped or read twice,
    whatever the parts' sizes against GetPodLogs' pages."""
    from jobs import dlc, logarchive
    from tests.support.wizard import local_workspace

    ws = local_workspace(localdlc, tmp_path, settings, name="Forward")
    # In bursts of 200 lines 10 ms apart: lines written at once share their instant, and more than a page of them
    # (500 here) in one instant cannot be paged by time (fetch_lines then says so in a line of its own).
    command = "for b in $(seq 0 24); do seq $((b * 200 + 1)) $((b * 200 + 200)); sleep 0.01; done; echo done"
    body = {"DisplayName": "forward", "JobType": "PyTorchJob", "UserCommand": command,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}
    start = timezone.now() - timedelta(minutes=1)
    job_id = dlc.create_job(ws, body)
    item = wait_for(lambda: (found := dlc.get_job(ws, job_id))["Status"] == "Succeeded" and found, timeout=30)
    pod = item["Pods"][0]["PodId"]
    end = timezone.now()
    assert dlc.get_pod_logs(ws, job_id, pod, max_lines=1, end_time=dlc.api_time(end)) == ["done"]
    read: list[str] = []
    parts = 0
    while start <= end:
        part, upto = logarchive.fetch_oldest(ws, job_id, pod, start, end, limit=700, page_lines=500)
        assert len(part) >= 700 or upto == end, (len(part), upto)
        read += part
        start, parts = upto + timedelta(microseconds=1), parts + 1
    assert read == [str(n) for n in range(1, 5001)] + ["done"]
    assert 2 <= parts <= 8, parts
