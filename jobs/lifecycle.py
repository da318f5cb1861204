"""Submission, status sync and stop: plain functions the Celery tasks call, testable without a worker."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import dlc, secretbox
from jobs import status as st
from jobs.models import Job, Workspace

log = logging.getLogger(__name__)


def wire_body(job: Job, secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CreateJob body as sent: the stored body, the idempotency tag, and unsealed secrets."""
    body = dict(job.body)
    settings_ = dict(body.get("Settings") or {})
    settings_["Tags"] = {**(settings_.get("Tags") or {}), dlc.IDEMPOTENCY_TAG_KEY: job.tag}
    body["Settings"] = settings_
    if job.workspace.dlc_workspace_id and not body.get("WorkspaceId"):
        body["WorkspaceId"] = job.workspace.dlc_workspace_id
    password = (secrets or {}).get("registry_password")
    if password:
        body["JobSpecs"] = [
            {**spec, "ImageConfig": {**(spec.get("ImageConfig") or {}), "Password": password}}
            for spec in body.get("JobSpecs", [])
        ]
    return body


def submit(job_id: int) -> str:
    """Create the job on DLC exactly once. Returns what happened; raises DLCError when worth a retry.

    Idempotent: a job that has a DLC id is left alone. Any earlier attempt may have reached DLC without
    an answer (timeout, worker killed mid-call), so every attempt after the first looks the tag up first.
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().select_related("workspace").get(pk=job_id)
        if job.dlc_job_id or job.status != st.SUBMITTING:
            return "already-submitted"
        previous_attempts = job.submit_attempts
        job.submit_attempts += 1
        job.save(update_fields=["submit_attempts"])

    if previous_attempts:
        found = dlc.find_by_tag(job.workspace, job.tag)
        if found:
            _mark_submitted(job, found)
            return "adopted"

    try:
        job_id_remote = dlc.create_job(job.workspace, wire_body(job, secretbox.unseal(job.sealed_secrets)))
    except dlc.DLCError as err:
        if err.transient:
            raise
        Job.objects.filter(pk=job.pk, dlc_job_id="").update(
            status=st.SUBMIT_FAILED, submit_error=err.as_dict(), sealed_secrets="", finished_at=timezone.now()
        )
        return "failed"
    _mark_submitted(job, job_id_remote)
    return "created"


def _mark_submitted(job: Job, remote_id: str) -> None:
    now = timezone.now()
    Job.objects.filter(pk=job.pk, dlc_job_id="").update(
        dlc_job_id=remote_id,
        status="Creating",
        submitted_at=now,
        sealed_secrets="",
        submit_error={},
        status_history=[{"Status": "Creating", "StartTime": now.isoformat()}],
    )


def give_up_submit(job_id: int, err: dlc.DLCError) -> None:
    """Retries ran out on a transient error: say so on the job, keep it editable."""
    Job.objects.filter(pk=job_id, dlc_job_id="", status=st.SUBMITTING).update(
        status=st.SUBMIT_FAILED, submit_error=err.as_dict(), sealed_secrets="", finished_at=timezone.now()
    )


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(str(value))
    if parsed and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, timezone.utc)
    return parsed


def apply_remote(job: Job, item: dict[str, Any]) -> bool:
    """Copy what DLC says about a job onto its row. Returns True when the job just became terminal."""
    was_active = job.is_active
    job.status = item.get("Status") or job.status
    job.sub_status = item.get("SubStatus") or ""
    job.reason_code = item.get("ReasonCode") or ""
    job.reason_message = item.get("ReasonMessage") or ""
    if item.get("StatusHistory"):
        job.status_history = item["StatusHistory"]
    if item.get("Pods") is not None:
        job.pods = item["Pods"]
    job.started_at = _dt(item.get("GmtRunningTime")) or job.started_at
    job.finished_at = _dt(item.get("GmtFinishTime")) or (timezone.now() if not job.is_active else None)
    job.synced_at = timezone.now()
    job.save(
        update_fields=[
            "status", "sub_status", "reason_code", "reason_message", "status_history", "pods",
            "started_at", "finished_at", "synced_at",
        ]
    )
    return was_active and not job.is_active


def sync_workspace(workspace: Workspace) -> list[int]:
    """One status cycle for a workspace: one ListJobs call per page of its active jobs.

    Returns the ids of jobs that ended in this cycle (their logs get archived).
    """
    active = list(
        Job.objects.filter(workspace=workspace)
        .exclude(dlc_job_id="")
        .exclude(status__in=st.TERMINAL)
        .only("id", "dlc_job_id", "status", "created_at")
    )
    ended: list[int] = []
    for start in range(0, len(active), dlc.LIST_PAGE_SIZE):
        page = active[start : start + dlc.LIST_PAGE_SIZE]
        by_remote = {j.dlc_job_id: j for j in page}
        # ListJobs covers the last 7 days unless told otherwise; ask from the oldest job of the page.
        oldest = min(j.created_at for j in page) - timedelta(days=1)
        items, _ = dlc.list_jobs(
            workspace,
            JobIds=",".join(by_remote),
            StartTime=oldest.strftime("%Y-%m-%dT%H:%M:%SZ"),
            PageSize=dlc.LIST_PAGE_SIZE,
            PageNumber=1,
        )
        for item in items:
            job = by_remote.get(item.get("JobId"))
            if job and apply_remote(job, item):
                ended.append(job.pk)
    return ended


def stop(job_id: int) -> str:
    job = Job.objects.select_related("workspace").get(pk=job_id)
    if job.status in st.TERMINAL:
        return "already-finished"
    if not job.dlc_job_id:
        return "not-submitted"
    dlc.stop_job(job.workspace, job.dlc_job_id)
    Job.objects.filter(pk=job.pk).exclude(status__in=st.TERMINAL).update(status="Stopping")
    return "stopping"


def stuck_jobs(older_than: timedelta) -> list[int]:
    """Jobs accepted but not submitted for a while: their task was lost (Redis down, worker died)."""
    cutoff = timezone.now() - older_than
    return list(
        Job.objects.filter(status=st.SUBMITTING, dlc_job_id="", created_at__lt=cutoff).values_list("pk", flat=True)
    )
