"""Submission, status sync, import and stop: plain functions the Celery tasks call, testable without a worker.

Exactly-once submission rests on three things: the idempotency tag sent in Settings.Tags; a claim on the
row (`submit_unanswered_since`) so only one attempt is ever unanswered at a time; and, before any re-send,
a ListJobs look-up of the tag once the earlier attempt can no longer land (dlc.in_flight_window()).
"""

from __future__ import annotations

import logging
import math
import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import (
    access,
    audit,
    batchwrite,
    budget_alerts,
    dependencies,
    dlc,
    logmask,
    notify,
    notify_email,
    secretbox,
    spec,
    syncstate,
    tags,
)
from jobs import status as st
from jobs.models import Job, Workspace, WorkspaceSync

log = logging.getLogger(__name__)

IN_FLIGHT = "Console.SubmitInFlight"
# ListJobs looks back 7 days unless told otherwise; the import starts just inside that window.
LIST_WINDOW = timedelta(days=7)
# The import re-reads the newest jobs this far back, for jobs that become visible a little late.
IMPORT_OVERLAP = timedelta(minutes=2)
# Active jobs that ListJobs no longer returns are checked one by one, at most this many per cycle.
MISSING_CHECKS_PER_CYCLE = 5
# How long a cycle holds its workspace. A worker killed mid-cycle (SIGKILL, OOM) never lets go, so this is how
# long that workspace's statuses then stand still: short, and renewed by a long cycle as it goes (renew_lease).
SYNC_LEASE = timedelta(seconds=30)


# -- submission ------------------------------------------------------------------------------------------


def wire_body(job: Job, secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CreateJob body as sent: the stored body, the idempotency tag, and unsealed secrets."""
    body = dict(job.body)
    settings_ = dict(body.get("Settings") or {})
    settings_["Tags"] = {**(settings_.get("Tags") or {}), dlc.IDEMPOTENCY_TAG_KEY: job.tag}
    redis_password = (secrets or {}).get("RayRedisPassword")
    if redis_password:  # sealed by the wizard and the API like the registry password; never in job.body
        advanced = settings_.get("AdvancedSettings") or {}
        settings_["AdvancedSettings"] = {**advanced, "RayRedisPassword": redis_password}
    body["Settings"] = settings_
    if job.workspace.dlc_workspace_id and not body.get("WorkspaceId"):
        body["WorkspaceId"] = job.workspace.dlc_workspace_id
    password = (secrets or {}).get("registry_password")
    if password:
        body["JobSpecs"] = [
            {**spec_, "ImageConfig": {**(spec_.get("ImageConfig") or {}), "Password": password}}
            for spec_ in body.get("JobSpecs", [])
        ]
    envs = body.get("Envs")
    if isinstance(envs, dict):  # a variable ticked Secret is the placeholder in job.body, its value sealed
        body["Envs"] = {key: (secrets or {}).get(spec.SECRET_ENV_PREFIX + key, value) for key, value in envs.items()}
    return body


def _in_flight(seconds: float) -> dlc.DLCError:
    return dlc.DLCError(
        IN_FLIGHT, "An earlier CreateJob for this job may still be in flight; it is looked up once settled.",
        transient=True, retry_after=max(0.1, seconds),
    )


def submit(job_id: int) -> str:
    """Create the job on DLC exactly once: "created", "adopted", "failed", "cancelled" or "already-submitted".

    Raises DLCError when worth a retry (transient errors, or another attempt still in flight). Safe to run
    any number of times, concurrently too: every attempt after the first looks the tag up before sending.
    """
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().select_related("workspace").get(pk=job_id)
        if job.dlc_job_id or job.status != st.SUBMITTING:
            return "already-submitted"
        if job.stop_requested_at and not job.submit_attempts:
            _cancel_unsent(job, now)
            return "cancelled"
        if job.submit_unanswered_since:
            settled_at = job.submit_unanswered_since + timedelta(seconds=dlc.in_flight_window())
            if now < settled_at:
                raise _in_flight((settled_at - now).total_seconds())
        look_first = job.submit_attempts > 0
        job.submit_attempts += 1
        job.submit_last_attempt_at = now
        job.submit_unanswered_since = now  # the claim: concurrent attempts back off until it settles
        job.submit_next_attempt_at = None  # this is that attempt
        # The secrets' fingerprints, while the values can still be read: the job's logs are masked with them
        # (jobs.logmask) long after the values are erased. Those of the body too: a job saved before its names
        # were sealed (an older rule) still has such values there, and sends them as they are.
        job.secret_marks = logmask.marks_for([*secretbox.unseal(job.sealed_secrets).values(),
                                              *import_secrets(job.body or {})])
        job.save(update_fields=["submit_attempts", "submit_last_attempt_at", "submit_unanswered_since",
                                "submit_next_attempt_at", "secret_marks"])
    claim = now

    sent = False
    try:
        if look_first:
            found = dlc.find_by_tag(job.workspace, job.tag, since=job.created_at, display_name=job.display_name)
            if found:
                adopt(job, found)
                return "adopted"
        # Renew the claim right before sending (the look-up took time); lose it and someone else is on it.
        sent_at = timezone.now()
        if not Job.objects.filter(pk=job.pk, submit_unanswered_since=claim).update(submit_unanswered_since=sent_at):
            raise _in_flight(dlc.in_flight_window())
        claim, sent = sent_at, True
        remote_id = dlc.create_job(job.workspace, wire_body(job, secretbox.unseal(job.sealed_secrets)))
    except dlc.DLCError as err:
        if err.code != IN_FLIGHT and (not sent or not err.ambiguous):
            # An answer came back (or nothing was sent): no attempt of ours is in flight any more. Its error is kept
            # so the job page can say why the job still waits (adopt() clears it once DLC has the job).
            Job.objects.filter(pk=job.pk, dlc_job_id="", submit_unanswered_since=claim).update(
                submit_unanswered_since=None, submit_error=dlc.job_error(err, job.workspace)
            )
        if err.transient:
            raise
        _fail_submit(job.pk, err, job.workspace)
        return "failed"
    adopt(job, remote_id)
    return "created"


def _cancel_unsent(job: Job, now: datetime) -> None:
    """A stop asked before any CreateJob was sent (waiting to submit, or for its upstream): the job never reaches
    DLC. Its own dependents can no longer run after it: they are skipped once this is committed."""
    job.status = "Stopped"
    job.reason_code = dependencies.CANCELLED
    job.reason_message = "Stopped before it was submitted to DLC."
    job.sealed_secrets = ""
    job.finished_at = now
    job.save(update_fields=["status", "reason_code", "reason_message", "sealed_secrets", "finished_at"])
    _enqueue_notify(job.workspace_id, [job.pk])
    dependencies.cancelled(job.pk)


def adopt(job: Job, remote_id: str) -> bool:
    """Bind a DLC job to its row (fresh from CreateJob, or found by its tag). False if already bound."""
    now = timezone.now()
    with transaction.atomic():
        # An import that ran before the row was bound (a backend that hides tags) made a twin: the row wins.
        # exclude(dlc_job_id=""), the condition of one_row_per_dlc_job: SQLite seeks a partial index only for a
        # query that repeats its condition (else it walks the workspace; jobs.models.Job.Meta.indexes).
        Job.objects.filter(workspace_id=job.workspace_id, dlc_job_id=remote_id, imported=True).exclude(
            pk=job.pk
        ).exclude(dlc_job_id="").delete()
        current = Job.objects.select_for_update().filter(pk=job.pk).values("stop_requested_at").first()
        stopping = bool(current and current["stop_requested_at"])
        bound = Job.objects.filter(pk=job.pk, dlc_job_id="").update(
            dlc_job_id=remote_id,
            status="Stopping" if stopping else "Creating",
            submitted_at=now,
            sealed_secrets="",
            submit_error={},
            submit_unanswered_since=None,
            submit_next_attempt_at=None,
            finished_at=None,
            status_history=[{"Status": "Creating", "StartTime": now.isoformat()}],
        )
    if bound and stopping:
        _enqueue_stop(job.pk)
    return bool(bound)


def _fail_submit(job_id: int, err: dlc.DLCError, workspace: Workspace) -> None:
    failed = Job.objects.filter(pk=job_id, dlc_job_id="", status=st.SUBMITTING).update(
        status=st.SUBMIT_FAILED, submit_error=dlc.job_error(err, workspace), sealed_secrets="",
        finished_at=timezone.now(), submit_unanswered_since=None, submit_next_attempt_at=None,
    )
    if failed:
        if err.code == dlc.CREDENTIALS_CODE:  # the job keeps a plain message; the detail is for the operator
            log.warning("job %s not sent, no credentials for workspace %s: %s", job_id, workspace.pk, err)
        _enqueue_notify(workspace.pk, [job_id])
        dependencies.cancelled(job_id)


def give_up_submit(job_id: int, err: dlc.DLCError) -> None:
    """Retries ran out on a transient error: say so on the job, keep it editable.

    Should the last, unanswered attempt have landed after all, the import adopts that job into this row.
    """
    workspace = Workspace.objects.filter(jobs__pk=job_id).first()
    if workspace is not None:  # else the job was deleted meanwhile
        _fail_submit(job_id, err, workspace)


def schedule_retry(job_id: int, err: dlc.DLCError, retries: int) -> float:
    """The countdown before a submit's next attempt after `err`, noted on the row (submit_next_attempt_at) so the
    job page can say when it is due. Only a job still waiting is noted: one that DLC accepted or that failed
    meanwhile keeps its cleared value."""
    delay = retry_delay(err, retries)
    Job.objects.filter(pk=job_id, dlc_job_id="", status=st.SUBMITTING).update(
        submit_next_attempt_at=timezone.now() + timedelta(seconds=delay)
    )
    return delay


def retry_delay(err: dlc.DLCError, retries: int) -> float:
    """How long a task waits before its next try: what the backend asked for, else jittered backoff."""
    if err.retry_after:
        return err.retry_after + random.uniform(0, 0.1)
    return backoff(retries)


def backoff(retries: int, cap: float | None = None, base: float | None = None) -> float:
    """Exponential backoff with jitter, so many retrying workers do not hit DLC in step."""
    base = settings.DLC_RETRY_BASE_SECONDS if base is None else base
    cap = settings.DLC_RETRY_CAP_SECONDS if cap is None else cap
    ceiling = min(cap, base * 2.0 ** max(0, retries))
    return random.uniform(ceiling / 2, ceiling)


# -- status sync and import ------------------------------------------------------------------------------


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(str(value))
    if parsed and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, timezone.get_fixed_timezone(0))
    return parsed


# Pod fields that change while the pod itself does not (its running time so far): kept, they would rewrite
# the row of every running job in every cycle.
VOLATILE_POD_FIELDS = frozenset({"Duration"})


def _steady_pod(pod: Any) -> Any:
    if isinstance(pod, dict) and not VOLATILE_POD_FIELDS.isdisjoint(pod):
        return {k: v for k, v in pod.items() if k not in VOLATILE_POD_FIELDS}
    return pod


def apply_remote(job: Job, item: dict[str, Any]) -> bool:
    """Copy what DLC says about a job onto its row. Returns True when the job just became terminal.

    Writes only the fields that changed. A stop the user asked for keeps the row "Stopping" until DLC
    reports the job stopping or ended, so the row does not flick back to "Running" meanwhile.
    """
    was_active = job.is_active
    changed = take_remote(job, item)
    job.synced_at = timezone.now()
    job.save(update_fields=[*changed, "synced_at"])
    return was_active and not job.is_active


def _fit(field: str, value: Any) -> str:
    """DLC's text cut to its column: PostgreSQL refuses an over-long value, and with it the page's whole batched
    write, cycle after cycle, for as long as DLC answers the same."""
    return str(value or "")[:Job._meta.get_field(field).max_length]


def take_remote(job: Job, item: dict[str, Any]) -> list[str]:
    """Set what DLC says about a job on the instance, unsaved; the names of the fields that changed."""
    remote = item.get("Status") or job.status
    if job.stop_requested_at and st.is_active(remote) and remote != "Stopping" and not job.stop_error:
        remote = "Stopping"
    values: dict[str, Any] = {
        "status": _fit("status", remote),
        "sub_status": _fit("sub_status", item.get("SubStatus")),
        "reason_code": _fit("reason_code", item.get("ReasonCode")),
        "reason_message": str(item.get("ReasonMessage") or ""),
    }
    if item.get("StatusHistory"):
        values["status_history"] = item["StatusHistory"]
    if item.get("Pods") is not None:
        values["pods"] = [_steady_pod(pod) for pod in item["Pods"]]
    values["started_at"] = _dt(item.get("GmtRunningTime")) or job.started_at
    if st.is_active(remote):
        values["finished_at"] = None
    else:
        values["finished_at"] = _dt(item.get("GmtFinishTime")) or job.finished_at or timezone.now()
    changed = [name for name, value in values.items() if getattr(job, name) != value]
    for name in changed:
        setattr(job, name, values[name])
    return changed


def _take_lease(workspace: Workspace) -> WorkspaceSync | None:
    """The right to run this workspace's cycle; None while another cycle (another worker) holds it."""
    try:
        state, _ = WorkspaceSync.objects.get_or_create(workspace=workspace)
    except IntegrityError:  # another worker created it a moment ago
        state = WorkspaceSync.objects.get(workspace=workspace)
    now = timezone.now()
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)  # not backing off (jobs.syncstate)
    if not WorkspaceSync.objects.filter(free, due, pk=state.pk).update(lease_until=now + SYNC_LEASE):
        return None
    state.refresh_from_db()
    return state


def sync_workspace(workspace: Workspace) -> list[int] | None:
    """One status cycle for a workspace. Returns the ids of jobs that ended in it (their logs get archived),
    or None when another cycle for this workspace is still running, or its sync is backing off after failures.

    ListJobs calls: one per page of active jobs (JobIds filter) plus one for the import.
    """
    state = _take_lease(workspace)
    if state is None:
        return None
    failure: dlc.DLCError | None = None
    try:
        ended = sync_active(workspace)
        watched = len(ended)  # ends of rows the sync followed while active; then those the import found
        ended += import_new(workspace, state)
    except Exception as exc:
        failure = dlc.classify(exc)
        raise
    finally:
        now = timezone.now()
        WorkspaceSync.objects.filter(pk=state.pk).update(
            lease_until=None, cycles=state.cycles + 1, last_cycle_at=now,
            import_from=state.import_from, import_page=state.import_page,
            **syncstate.after_cycle(workspace, state, failure, now),
        )
    for job_id in ended:
        _enqueue_archive(job_id)
    _enqueue_notify(workspace.pk, ended[:watched], found=ended[watched:])
    # Jobs waiting for one of these (jobs.dependencies): one indexed query per cycle when any job ended.
    try:
        dependencies.after_ended(workspace.pk, ended)
    except Exception:  # noqa: BLE001 - the statuses are committed; the beat sweep releases what this missed
        log.exception("release of the dependents of workspace %s's ended jobs failed", workspace.pk)
    return ended


# What a cycle reads of an active row: what take_remote compares and _check_missing needs. With every other
# column too (bookkeeping datetimes, submit_error's JSON) loading 10k rows took 1.7-2x as long.
SYNC_FIELDS = ("id", "workspace_id", "dlc_job_id", "created_at", "status", "sub_status", "reason_code",
               "reason_message", "status_history", "pods", "started_at", "finished_at", "stop_requested_at",
               "stop_error")


class Lease:
    """Keeps a running cycle's hold on its workspace (WorkspaceSync.lease_until) SYNC_LEASE ahead: renewed once
    half of it has passed, so a cycle of many pages costs a write per 15 s, not one per page."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.renewed = time.monotonic()

    def renew(self) -> None:
        if time.monotonic() - self.renewed < SYNC_LEASE.total_seconds() / 2:
            return
        self.renewed = time.monotonic()
        WorkspaceSync.objects.filter(workspace=self.workspace).update(lease_until=timezone.now() + SYNC_LEASE)


def sync_active(workspace: Workspace) -> list[int]:
    """Refresh every active job of the workspace, a ListJobs page (JobIds filter) per API page of jobs."""
    active = list(
        Job.objects.filter(workspace=workspace)
        .exclude(dlc_job_id="")
        .exclude(status__in=st.TERMINAL)
        .only(*SYNC_FIELDS)
        .order_by("pk")
    )
    ended: list[int] = []
    missing: list[Job] = []
    lease = Lease(workspace)
    pages = [active[start : start + dlc.LIST_PAGE_SIZE] for start in range(0, len(active), dlc.LIST_PAGE_SIZE)]
    # The next page's ListJobs is under way while this page is compared and written: DLC's answer and the
    # database's commit then overlap instead of adding up. Still one call per page, each made once.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sync-list") as ahead:
        answer = ahead.submit(_list_page, workspace, pages[0]) if pages else None
        for number, page in enumerate(pages):
            items = answer.result()
            lease.renew()
            if number + 1 < len(pages):
                answer = ahead.submit(_list_page, workspace, pages[number + 1])
            ended += _apply_page(page, items)
            listed = {item.get("JobId") for item in items}
            missing += [j for j in page if j.dlc_job_id not in listed]
    for job in missing[:MISSING_CHECKS_PER_CYCLE]:
        if _check_missing(job):
            ended.append(job.pk)
    return ended


def _list_page(workspace: Workspace, page: list[Job]) -> list[dict[str, Any]]:
    """The ListJobs answer for a page of active jobs (JobIds filter)."""
    # Ask from a day before the page's oldest job: ListJobs would otherwise look back only 7 days.
    oldest = min(j.created_at for j in page) - timedelta(days=1)
    items, _ = dlc.list_jobs(
        workspace,
        JobIds=",".join(j.dlc_job_id for j in page),
        StartTime=dlc.api_time(oldest.replace(microsecond=0)),
        PageSize=dlc.LIST_PAGE_SIZE,
        PageNumber=1,
    )
    return items


def _apply_page(page: list[Job], items: list[dict[str, Any]]) -> list[int]:
    """Take what ListJobs said about a page of jobs and write it; the ids of the jobs that ended."""
    by_remote = {j.dlc_job_id: j for j in page}
    ended: list[int] = []
    stamp = timezone.now()
    seen: set[str] = set()
    changes: dict[int, tuple[Job, set[str]]] = {}  # by pk: a job listed twice is written once
    for item in items:
        job = by_remote.get(item.get("JobId"))
        if job is None:
            continue
        seen.add(job.dlc_job_id)
        was_active = job.is_active
        changed = take_remote(job, item)
        if changed:
            changes.setdefault(job.pk, (job, set()))[1].update(changed)
        if was_active and not job.is_active:
            ended.append(job.pk)
    for job, names in changes.values():
        # The stamp rides along with the change: one new row version, not two (on PostgreSQL a status
        # change writes every index entry of the row again).
        job.synced_at = stamp
        names.add("synced_at")
    unchanged = [by_remote[r].pk for r in seen if by_remote[r].pk not in changes]
    # One commit per page, only changed fields written (batched, see batchwrite), and one synced_at stamp
    # for the page: a steady 10k-job cycle was 10k single-row commits.
    with transaction.atomic():
        batchwrite.update_changed(changes.values())
        if unchanged:
            Job.objects.filter(pk__in=unchanged).update(synced_at=stamp)
        _keep_stopping([pk for pk, (job, names) in changes.items() if "status" in names])
    return ended


def _keep_stopping(pks: list[int]) -> None:
    """Put back "Stopping" on rows whose stop was asked after this cycle read them.

    take_remote keeps a stop-requested row "Stopping", but only for the stop it saw when the page was loaded;
    a user's stop in between was overwritten by the page's write, and the row showed the old status until the
    next cycle. Run after the write, in its transaction: the write holds the rows (PostgreSQL) or the database
    (SQLite), so a stop is either seen here or written after us.
    """
    if not pks:
        return
    asked = (Job.objects.filter(pk__in=pks, stop_requested_at__isnull=False)
             .exclude(status__in=[*st.TERMINAL, "Stopping"]).values_list("pk", "stop_error"))
    if fix := [pk for pk, error in asked if not error]:
        Job.objects.filter(pk__in=fix).update(status="Stopping")


def _check_missing(job: Job) -> bool:
    """An active job ListJobs did not return: ask GetJob; a job DLC no longer knows has ended."""
    try:
        item = dlc.get_job(job.workspace, job.dlc_job_id)
    except dlc.DLCError as err:
        # An unknown AccessKey is a 404 too (InvalidAccessKeyId.NotFound): that says nothing about the job.
        if err.status != 404 or err.kind == "credentials":
            log.warning("job %s (%s) is missing from ListJobs and GetJob failed: %s", job.pk, job.dlc_job_id, err)
            return False
        item = {"Status": "Failed", "ReasonCode": err.code or "JobNotFound",
                "ReasonMessage": f"DLC no longer knows this job: {err.message}"}
    return apply_remote(job, item)


def import_new(workspace: Workspace, state: WorkspaceSync) -> list[int]:
    """One ListJobs page of the workspace's jobs, oldest first from the import cursor: jobs created
    elsewhere (DLC console, SDK, CLI) get an imported row; jobs carrying our tag are adopted by their row.

    Advances state.import_from / import_page (saved by the caller). Returns ids of jobs that ended here, and of
    jobs imported already ended: their logs are archived like any ended job's, before DLC drops them.
    """
    now = timezone.now()
    # A new workspace starts with the jobs of the last DLC_IMPORT_LOOKBACK_HOURS before it was added.
    start = state.import_from or (workspace.created_at - timedelta(hours=settings.DLC_IMPORT_LOOKBACK_HOURS))
    # Never look back past the window ListJobs can serve (the cursor may be old after a long pause).
    start = max(start, now - LIST_WINDOW + timedelta(minutes=5)).replace(microsecond=0)
    items, _ = dlc.list_jobs(
        workspace,
        StartTime=dlc.api_time(start),
        SortBy="GmtCreateTime",
        Order="asc",
        PageSize=dlc.LIST_PAGE_SIZE,
        PageNumber=state.import_page,
    )
    ids = [item["JobId"] for item in items if item.get("JobId")]
    # Unordered and with one_row_per_dlc_job's condition, so SQLite seeks that index too (see adopt).
    known = set(Job.objects.filter(workspace=workspace, dlc_job_id__in=ids).exclude(dlc_job_id="").order_by()
                .values_list("dlc_job_id", flat=True))
    ended: list[int] = []
    for item in items:
        if item.get("JobId") and item["JobId"] not in known:
            row = import_or_adopt(workspace, item)
            if row is not None and not row.is_active:
                ended.append(row.pk)

    created = [t for t in (_dt(item.get("GmtCreateTime")) for item in items) if t]
    newest = max(created).replace(microsecond=0) if created else None
    if len(items) >= dlc.LIST_PAGE_SIZE:
        # A backlog: go on from the last job seen; many jobs in the same second are paged through instead.
        if newest and newest > start:
            state.import_from, state.import_page = newest, 1
        else:
            state.import_from, state.import_page = start, state.import_page + 1
    else:
        state.import_from = max(start, newest - IMPORT_OVERLAP) if newest else start
        state.import_page = 1
    return ended


def import_or_adopt(workspace: Workspace, item: dict[str, Any]) -> Job | None:
    """The row for a job found in DLC: its own row when it carries our tag, else a new imported row.

    None when it belongs to another console workspace or another cycle got there first.
    """
    tag = dlc.tag_of(item)
    row = _row_for_tag(tag) if tag else None
    if row is not None:
        if row.workspace_id != workspace.pk:
            return None
        if not row.dlc_job_id:
            # Submit and import raced (or the submit gave up too early): the tag says this job is the row's.
            adopt(row, item["JobId"])
            _mark_echoed_secrets(row.pk, item)
            row.refresh_from_db()
            apply_remote(row, item)
            return row
        if row.dlc_job_id == item["JobId"]:
            return None
        log.error("DLC job %s carries the tag of job %s, which is bound to %s: importing it so it is seen",
                  item["JobId"], row.pk, row.dlc_job_id)
    try:
        with transaction.atomic():
            job = Job.objects.create(
                workspace=workspace,
                owner=None,
                imported=True,
                display_name=str(item.get("DisplayName") or item["JobId"])[:256],
                job_type=str(item.get("JobType") or "")[:32],
                body=import_body(item),
                # The values are seen only now: their fingerprints mask them in the job's logs (jobs.logmask).
                secret_marks=logmask.marks_for(import_secrets(item)),
                dlc_job_id=item["JobId"],
                status=_fit("status", item.get("Status") or "Creating"),
                created_at=_dt(item.get("GmtCreateTime")) or timezone.now(),
                submitted_at=_dt(item.get("GmtSubmittedTime")) or _dt(item.get("GmtCreateTime")),
            )
            audit.record(None, "imported", workspace=workspace, job=job, dlc_job_id=job.dlc_job_id,
                         via="sync of jobs created outside the console")
            # In the same commit: nobody (a page, the archive sweep) sees the row without its pods and times.
            apply_remote(job, item)
    except IntegrityError:
        return None
    return job


def _row_for_tag(tag: str) -> Job | None:
    try:
        value = uuid.UUID(tag)
    except ValueError:
        return None
    return Job.objects.filter(idempotency_tag=value).select_related("workspace").first()


def import_body(item: dict[str, Any]) -> dict[str, Any]:
    """A CreateJob-shaped body from a ListJobs/GetJob item: the fields the console can send, nothing else.

    No secrets (registry passwords are never echoed, and are stripped if they were) and no idempotency
    tag of ours, so a clone gets its own.
    """
    raw = dict(item)
    vpc = raw.get("UserVpc")
    if isinstance(vpc, dict) and "ExtendedCidrs" in vpc:  # GetJob/ListJobs spell it differently
        vpc = dict(vpc)
        vpc["ExtendedCIDRs"] = vpc.pop("ExtendedCidrs")
        raw["UserVpc"] = vpc
    if not raw.get("JobMaxRunningTimeMinutes"):
        raw.pop("JobMaxRunningTimeMinutes", None)  # 0 in a listing means "not set"
    if not raw.get("ResourceId"):
        raw.pop("Priority", None)  # listings say 1 for every job; it is only set (and settable) with a quota
    body = tags.without_reserved(_project(raw, spec.WIRE_SCHEMA))
    # strip_secrets also puts the placeholder for an env value named like a secret (e.g. a W&B key set elsewhere).
    return spec.strip_secrets(body)


def import_secrets(item: dict[str, Any]) -> list[str]:
    """The secret values a ListJobs/GetJob item (or a stored body) shows: of every env variable (Envs, CustomEnvs)
    or advanced setting named like a secret (spec.looks_like_secret: what strip_secrets seals and the job page
    hides), of a custom env DLC itself hides (Visible false), and registry passwords. Only to fingerprint them:
    never stored."""
    found: list[Any] = []
    envs = item.get("Envs")
    for name, value in envs.items() if isinstance(envs, dict) else ():
        if spec.looks_like_secret(name):
            found.append(value)
    for env in item.get("CustomEnvs") or []:
        if isinstance(env, dict) and (spec.looks_like_secret(env.get("Key") or "")
                                      or str(env.get("Visible")).lower() == "false"):
            found.append(env.get("Value"))
    for role in item.get("JobSpecs") or []:
        image = role.get("ImageConfig") if isinstance(role, dict) else None
        if isinstance(image, dict):
            found.append(image.get("Password"))
    settings_ = item.get("Settings")
    advanced = settings_.get("AdvancedSettings") if isinstance(settings_, dict) else None
    for name, value in advanced.items() if isinstance(advanced, dict) else ():
        if spec.looks_like_secret(name):  # RayRedisPassword among them
            found.append(value)
    return [value for value in found if isinstance(value, str) and value and value != spec.SECRET_PLACEHOLDER]


def _mark_echoed_secrets(job_id: int, item: dict[str, Any]) -> None:
    """Our own job adopted from DLC's listing: its marks, from the secrets it sealed, gain those of the values DLC
    echoes named like secrets that it did not seal (a job saved before it sealed such names)."""
    more = logmask.marks_for(import_secrets(item))
    if not more:
        return
    with transaction.atomic():
        row = Job.objects.select_for_update().filter(pk=job_id, dlc_job_id=item["JobId"]).values("secret_marks").first()
        if row is not None:
            Job.objects.filter(pk=job_id).update(secret_marks=logmask.merged(row["secret_marks"], more))


_SCALARS = {"str": str, "int": int, "bool": bool, "num": (int, float)}


def _project(value: Any, schema: Any) -> Any:
    """The part of value that fits the wire schema; None for what does not (empty values count as unset)."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return None
        out = {}
        for key, sub in value.items():
            sub_schema = schema.get("*", schema.get(key))
            if sub_schema is None:
                continue
            clean = _project(sub, sub_schema)
            if clean is not None and (clean != {} and clean != [] and clean != "" or "*" in schema):
                out[key] = clean
        return out
    if isinstance(schema, list):
        if not isinstance(value, list):
            return None
        items = [_project(v, schema[0]) for v in value]
        return [i for i in items if i is not None and i != {}]
    if schema == "any":
        return value
    kind = _SCALARS.get(schema)
    if kind is None or not isinstance(value, kind) or (schema != "bool" and isinstance(value, bool)):
        return None
    return value


# -- stop ------------------------------------------------------------------------------------------------


def request_stop(user, job: Job, *, reason: str = "", by: str = "system") -> str:
    """A user asks to stop a job: "stopping", "stopped" (it never reached DLC), "already-finished",
    "not-permitted" or "failed: <error>". The StopJob call itself goes through Celery; the row shows
    "Stopping" until a sync sees DLC confirm. With `reason` and no user, the console itself stops it (a sweep's
    early stopping, jobs.early_stop): no permission to check, and the reason goes into the audit event, whose
    actor is `by` (the idle policy's stops, jobs.idle).
    """
    if not (user is None and reason) and not access.can(user, "stop", workspace=job.workspace, job=job):
        return "not-permitted"
    why = {"reason": reason, "by": by} if reason else {}
    now = timezone.now()
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job.pk)
        if row.status in st.TERMINAL:
            return "already-finished"
        if row.stop_requested_at and not row.stop_error:
            return "stopping"
        row.stop_requested_at = now
        row.stop_sent_at = None
        row.stop_error = {}
        fields = ["stop_requested_at", "stop_sent_at", "stop_error"]
        if not row.dlc_job_id and not row.submit_attempts:
            _cancel_unsent(row, now)
            row.save(update_fields=fields)
            audit.record(user, "stopped", workspace=job.workspace, job=row, result="stopped before submission", **why)
            return "stopped"
        if row.dlc_job_id:
            row.status = "Stopping"
            fields.append("status")
            transaction.on_commit(lambda: _enqueue_stop(row.pk))
        # Not on DLC yet but maybe on its way: the submit stops it as soon as it has its id.
        row.save(update_fields=fields)
        audit.record(user, "stopped", workspace=job.workspace, job=row, dlc_job_id=row.dlc_job_id, **why)
    job.refresh_from_db()
    return "stopping"


def bulk_stop(user, jobs: list[Job]) -> dict[int, str]:
    """request_stop for each job, each on its own: one failure does not stop the rest."""
    results: dict[int, str] = {}
    for job in jobs:
        try:
            results[job.pk] = request_stop(user, job)
        except Exception as exc:  # noqa: BLE001 - reported per job, the others still go ahead
            log.exception("stop of job %s failed", job.pk)
            results[job.pk] = f"failed: {exc}"
    return results


def stop(job_id: int) -> str:
    """Send StopJob for a job whose stop was asked: "stopping", "already-finished", "not-submitted" or
    "failed: ..." (DLC refused). Raises DLCError on transient errors. StopJob is idempotent on DLC's side."""
    job = Job.objects.select_related("workspace").get(pk=job_id)
    if job.status in st.TERMINAL:
        return "already-finished"
    if not job.dlc_job_id:
        return "not-submitted"
    try:
        dlc.stop_job(job.workspace, job.dlc_job_id)
    except dlc.DLCError as err:
        if err.transient:
            raise
        stop_failed(job.pk, err)
        return f"failed: {err}"
    Job.objects.filter(pk=job.pk).update(stop_sent_at=timezone.now(), stop_error={})
    Job.objects.filter(pk=job.pk).exclude(status__in=st.TERMINAL).update(
        status="Stopping", stop_requested_at=job.stop_requested_at or timezone.now()
    )
    return "stopping"


def stop_failed(job_id: int, err: dlc.DLCError) -> None:
    """DLC refused the stop (or retries ran out): record why; the next sync shows the job's true state."""
    workspace = Workspace.objects.filter(jobs__pk=job_id).first()
    error = dlc.job_error(err, workspace) if workspace is not None else err.as_dict()
    if err.code == dlc.CREDENTIALS_CODE:
        log.warning("stop of job %s not sent, no credentials: %s", job_id, err)
    Job.objects.filter(pk=job_id).update(stop_error=error, stop_sent_at=None)


# -- sweeps ----------------------------------------------------------------------------------------------


def stuck_jobs(older_than: timedelta) -> list[int]:
    """Jobs accepted but not submitted, with no attempt for a while: their task was lost (Redis was down,
    a worker died). Re-enqueuing one that is merely slow is harmless: submit() is idempotent."""
    now = timezone.now()
    cutoff = now - older_than
    settled = now - timedelta(seconds=dlc.in_flight_window())
    quiet = Job.objects.filter(status=st.SUBMITTING, dlc_job_id="", created_at__lt=cutoff)
    quiet = quiet.filter(Q(submit_last_attempt_at__isnull=True) | Q(submit_last_attempt_at__lt=cutoff))
    # An unanswered attempt that may still land is not stuck yet: re-enqueuing it would only wait.
    quiet = quiet.filter(Q(submit_unanswered_since__isnull=True) | Q(submit_unanswered_since__lt=settled))
    return list(quiet.values_list("pk", flat=True))


def unsent_stops(older_than: timedelta) -> list[int]:
    """Stops asked but not (or long ago) accepted by DLC for a job still active: their task was lost."""
    cutoff = timezone.now() - older_than
    return list(
        Job.objects.filter(stop_requested_at__lt=cutoff, stop_error={})
        .exclude(dlc_job_id="")
        .exclude(status__in=st.TERMINAL)
        .filter(Q(stop_sent_at__isnull=True) | Q(stop_sent_at__lt=cutoff - timedelta(minutes=5)))
        .values_list("pk", flat=True)
    )


def unarchived_jobs(older_than: timedelta) -> list[int]:
    """Ended jobs whose logs were not archived (the task was lost), while DLC still keeps logs. Imported jobs
    too, those that had ended before the import as well."""
    now = timezone.now()
    cutoff = now - older_than
    return list(
        Job.objects.filter(
            status__in=st.TERMINAL, logs_archived_at__isnull=True,
            finished_at__lt=cutoff, finished_at__gt=now - LIST_WINDOW,
        )
        # The archive was enqueued when the sync wrote the job's end, its last write (synced_at): a job imported
        # already ended long ago (an old finished_at) is not asked for again while that task is still due.
        .filter(Q(synced_at__isnull=True) | Q(synced_at__lt=cutoff))
        .exclude(dlc_job_id="")
        .exclude(pods=[])
        .values_list("pk", flat=True)[:100]
    )


# -- enqueueing ------------------------------------------------------------------------------------------


def _enqueue(task_name: str, job_id: int, countdown: float = 0) -> None:
    # The broker may be down: the row already says what is owed, and the beat sweep enqueues it later.
    from jobs import tasks

    try:
        getattr(tasks, task_name).apply_async(args=[job_id], retry=False, countdown=countdown or None)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not enqueue %s(%s), the sweep will: %s", task_name, job_id, exc)


def enqueue_submit(job_id: int) -> None:
    _enqueue("submit_job", job_id)


def _enqueue_stop(job_id: int) -> None:
    _enqueue("stop_job", job_id)


def _enqueue_archive(job_id: int) -> None:
    # A pod's last lines can reach the log store a moment after DLC reports the job ended: wait a little.
    transaction.on_commit(lambda: _enqueue("archive_logs", job_id, settings.DLC_ARCHIVE_DELAY))


def _enqueue_notify(workspace_id: int, job_ids: list[int], found: list[int] | None = None) -> None:
    """Tell the workspace's webhooks (jobs.notify) of these jobs' ends, once the end is committed. `found`: ended
    jobs the import just found; only rows the console submitted are news there, a job imported already ended
    ended before the console knew it. Most workspaces have no webhook: one query spares a task per ended job.
    Owners who opted in get a mail too (jobs.notify_email): one query for the whole batch finds them."""
    if not (job_ids or found):
        return
    for job_id in notify_email.owed(job_ids, found):
        transaction.on_commit(lambda job_id=job_id: _enqueue("email_job", job_id))
    # An end may take the month's spend past a budget threshold: checked now, not at the next beat (one query
    # spares the task for the many workspaces without a budget).
    if budget_alerts.has_budget(workspace_id):
        transaction.on_commit(lambda: _enqueue("check_budgets", workspace_id))
    if not notify.has_webhooks(workspace_id):
        return
    if found:
        job_ids = [*job_ids, *Job.objects.filter(pk__in=found, imported=False).values_list("pk", flat=True)]
    # The deliveries are made here, with the end they report, not by the task: should the broker be down, they
    # are owed rows all the same, and the sweep (notify.owed_jobs) enqueues them.
    # A sweep's one delivery is keyed on its first trial's job, not on the trial that ended last: enqueue the jobs
    # the deliveries are keyed on.
    owed = {d.job_id for job in Job.objects.filter(pk__in=job_ids) for d in notify.deliveries_for(job)}
    for job_id in sorted(owed):
        transaction.on_commit(lambda job_id=job_id: _enqueue("notify_job", job_id))


enqueue_notify = _enqueue_notify  # for jobs.dependencies, which ends jobs too (skipped ones)


def pages(count: int) -> int:
    """ListJobs calls a cycle makes for `count` active jobs: a page each, plus the import."""
    return math.ceil(count / dlc.LIST_PAGE_SIZE) + 1
