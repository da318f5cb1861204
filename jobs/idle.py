"""Idle resources: running jobs that hold CPUs or GPUs and do nothing with them (a `sleep infinity`, a hung NCCL
barrier, a data loader waiting on a dead mount), flagged and, if the workspace's idle policy says so, stopped.

A pod's utilisation over a window is its average of GetJobMetrics' samples: GPU core usage (percent) when the job
has GPUs and DLC returns GPU samples; otherwise CPU cores used over the cores the pod requested (its role's
ResourceConfig, or its instance type's size from ListEcsSpecs), as a percent. The job is idle when every pod is
under the threshold and its samples cover most of the window, and the job has run for the whole window. Missing
data (no samples, too few, a size the console cannot tell, a failed read) is "unknown", never idle: a job is never
flagged, let alone stopped, on what was not measured.

`measure` reads DLC and `decide` is the rule, a plain function of the answers; `check` (the beat task's, at most
DLC_IDLE_MAX_CHECKS jobs a run, the least recently checked first) records each job's state on its row, tells the
owner and the webhooks once per idle spell, and stops a job idle for the policy's idle_stop_after_minutes through
the console's stop path (jobs.lifecycle.request_stop), with the reason on the job and in the audit log.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from jobs import dlc
from jobs.models import Job, WorkspacePolicy

log = logging.getLogger(__name__)

RUNNING = "Running"  # only a running job's pods hold resources worth measuring
GPU_METRIC, CPU_METRIC = "GpuCoreUsage", "CpuCoreUsage"
# The share of the window each pod's samples must span: a pod sampled for only part of it may have been busy in
# the rest (DLC's monitoring lags a little, hence not all of it).
COVERAGE = 0.8
POINTS = 30  # samples asked per pod over the window (its TimeStep is the window / POINTS)
# The shortest TimeStep asked: no shorter than the monitoring's own sampling (localdlc's every 2 s, Prometheus' scrape
# every 15 s), or the steps between two samples would read as gaps in the coverage.
MIN_STEP = 5.0
IDLE, BUSY, UNKNOWN = "idle", "busy", "unknown"
ACTOR = "idle policy"  # the audit log's actor of a stop made by the policy (no user)
MIN_AFTER_MINUTES = 10  # the policy form's floor: shorter windows flag every job that pauses to checkpoint
DEFAULT_THRESHOLD = 5


def max_checks() -> int:
    """Running jobs one cycle measures: each is one or two GetJobMetrics calls, so the API quota bounds it."""
    return int(getattr(settings, "DLC_IDLE_MAX_CHECKS", 20))


# --- what each pod asked for ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A pod's requested size: CPU cores and GPUs (None: unknown, an instance type the catalog does not know)."""

    cpu: float | None
    gpu: float | None


def _number(value: Any) -> float | None:
    try:
        number = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def role_request(role: Mapping, specs: Mapping[str, Mapping] | None) -> Request:
    """One JobSpecs role's pod size: its ResourceConfig, else its instance type's (ListEcsSpecs, PascalCase)."""
    config = role.get("ResourceConfig")
    if isinstance(config, Mapping) and (config.get("CPU") or config.get("GPU")):
        return Request(_number(config.get("CPU") or 0), _number(config.get("GPU") or 0))
    info = (specs or {}).get(str(role.get("EcsSpec") or ""))
    if not isinstance(info, Mapping):
        return Request(None, None)
    return Request(_number(info.get("Cpu", info.get("cpu"))), _number(info.get("Gpu", info.get("gpu"))))


def pod_requests(job: Job, pod_ids: Sequence[str], specs: Mapping[str, Mapping] | None) -> dict[str, Request]:
    """Each pod's size by its role: the role DLC named for it (the job's synced Pods' Type), else the role its name
    ends with (<job>-<role>-<n>), else the job's one role; a pod of no known role is left out (unknown)."""
    roles = {str(r.get("Type") or "").lower(): r for r in (job.body or {}).get("JobSpecs") or []
             if isinstance(r, Mapping)}
    types = {str(p.get("PodId")): str(p.get("Type") or "").lower() for p in job.pods or [] if isinstance(p, Mapping)}
    found = {}
    for pod_id in pod_ids:
        kind = types.get(pod_id, "")
        if kind not in roles:
            match = re.search(r"-([a-z0-9]+)-\d+$", pod_id.lower())
            kind = match.group(1) if match else ""
        role = roles.get(kind) or (next(iter(roles.values())) if len(roles) == 1 else None)
        if role is not None:
            found[pod_id] = role_request(role, specs)
    return found


# --- the rule ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodUse:
    pod_id: str
    percent: float | None  # the window's average; None: no samples
    coverage: float  # the share of the window the samples span, 0..1


def average(points: Sequence[Mapping], start: datetime, end: datetime, step: float) -> tuple[float | None, float]:
    """(mean value, share of [start, end] covered) of one pod's [{Time (ms), Value}]. Each point stands for the
    step that starts at its time, so points every step from the start to the end cover the window whole."""
    t0, t1 = start.timestamp() * 1000, end.timestamp() * 1000
    inside = sorted((max(float(p["Time"]), t0), float(p["Value"])) for p in points
                    if isinstance(p, Mapping) and isinstance(p.get("Time"), int | float)
                    and isinstance(p.get("Value"), int | float) and math.isfinite(p["Value"])
                    and t0 - 1000 < p["Time"] <= t1)  # a second's slack: a backend may round the start down
    if not inside:
        return None, 0.0
    span = max(t1 - t0, 1.0)
    covered = min(inside[-1][0] + step * 1000, t1) - inside[0][0]
    return sum(v for _, v in inside) / len(inside), max(0.0, min(covered / span, 1.0))


@dataclass(frozen=True)
class Verdict:
    """The rule's answer for one job. value: the busiest pod's average (percent); cores: what the job's measured
    pods asked for (CPU cores, or GPUs)."""

    state: str  # idle | busy | unknown
    metric: str = ""  # "GPU" | "CPU"
    value: float | None = None
    threshold: float = DEFAULT_THRESHOLD
    window_minutes: float = 0.0
    cores: float | None = None
    why: str = ""  # an unknown's reason

    @property
    def text(self) -> str:
        """"CPU 0.4% of 4 cores", "GPU 0.0% of 8 GPUs"."""
        if self.value is None:
            return self.why
        unit = "GPU" if self.metric == "GPU" else "core"
        size = f" of {self.cores:g} {unit}{'s' if self.cores != 1 else ''}" if self.cores else ""
        return f"{self.metric} {self.value:.1f}%{size}"

    def detail(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": round(self.value, 3) if self.value is not None else None,
                "threshold_percent": self.threshold, "window_minutes": self.window_minutes,
                "cores": self.cores, "text": self.text}


def _unknown(why: str, threshold: float, minutes: float) -> Verdict:
    return Verdict(UNKNOWN, threshold=threshold, window_minutes=minutes, why=why)


def decide(gpu: Sequence[Mapping], cpu: Sequence[Mapping], requests: Mapping[str, Request], *, start: datetime,
           end: datetime, step: float, threshold: float, ran_since: datetime | None) -> Verdict:
    """Idle, busy or unknown from GetJobMetrics' answers over [start, end] (`gpu`, `cpu`: [{PodId, Metrics}]),
    each pod's requested size, and when the job started running. Idle only when every pod's average is under the
    threshold (strictly) and covers COVERAGE of the window; busy as soon as one measured pod is at or above
    it (an idle pod beside it changes nothing: the job uses what it holds)."""
    minutes = round((end - start).total_seconds() / 60, 2)
    if ran_since is None or ran_since > start:
        return _unknown("running for less than the window", threshold, minutes)
    has_gpus = any((r.gpu or 0) > 0 for r in requests.values())
    gpu_samples = has_gpus and any(p.get("Metrics") for p in gpu)
    pods, metric = (gpu, "GPU") if gpu_samples else (cpu, "CPU")
    if not pods:
        return _unknown("no pods in the metrics", threshold, minutes)
    uses, cores = [], 0.0
    for pod in pods:
        pod_id = str(pod.get("PodId") or "")
        request = requests.get(pod_id)
        size = None if request is None else (request.gpu if metric == "GPU" else request.cpu)
        mean, coverage = average(pod.get("Metrics") or [], start, end, step)
        if metric == "CPU" and mean is not None:
            mean = mean / size * 100 if size else None  # a size the console cannot tell: no percent
        uses.append(PodUse(pod_id, mean, coverage if mean is not None else 0.0))
        cores += size or 0.0
    measured = [u for u in uses if u.percent is not None]
    busiest = max((u.percent for u in measured), default=None)
    verdict = Verdict(BUSY, metric, busiest, threshold, minutes, cores or None)
    if any(u.percent >= threshold for u in measured):  # used, however short the samples: never stopped
        return verdict
    if len(measured) < len(uses):
        return _unknown(f"no {metric} samples (or no size) for some pods", threshold, minutes)
    if any(u.coverage < COVERAGE for u in uses):
        return _unknown(f"{metric} samples cover too little of the window", threshold, minutes)
    return Verdict(IDLE, metric, busiest, threshold, minutes, cores or None)


# --- reading DLC ------------------------------------------------------------------------------------------


def step_for(window: timedelta) -> float:
    return max(MIN_STEP, float(int(window.total_seconds() // POINTS)))


def measure(job: Job, window: timedelta, threshold: float, *, now: datetime | None = None,
            specs: Mapping[str, Mapping] | None = None) -> Verdict:
    """The job's verdict over the last `window`, read from DLC (GPU samples only for a job that has GPUs). A read
    that fails is unknown, with its reason. `specs`: ListEcsSpecs by instance type (default: the workspace's
    cached catalog, read only when a role names an instance type)."""
    # Whole seconds: the API's times are, and a point stamped a rounded millisecond before a fractional start
    # would fall out of the window.
    end = (now or timezone.now()).replace(microsecond=0)
    start = end - window
    step = step_for(window)
    roles = [r for r in (job.body or {}).get("JobSpecs") or [] if isinstance(r, Mapping)]
    if specs is None and any(not (isinstance(r.get("ResourceConfig"), Mapping)
                                  and (r["ResourceConfig"].get("CPU") or r["ResourceConfig"].get("GPU")))
                             for r in roles):
        from jobs import policies

        specs = policies.instance_specs(job.workspace)
    ran_since = job.started_at
    try:
        cpu = dlc.get_job_metrics(job.workspace, job.dlc_job_id, CPU_METRIC, start, end, f"{step:g}s")
        requests = pod_requests(job, [str(p.get("PodId") or "") for p in cpu], specs)
        gpu = []
        if any((r.gpu or 0) > 0 for r in requests.values()):
            gpu = dlc.get_job_metrics(job.workspace, job.dlc_job_id, GPU_METRIC, start, end, f"{step:g}s")
            requests = requests | pod_requests(job, [str(p.get("PodId") or "") for p in gpu], specs)
    except dlc.DLCError as err:
        return _unknown(f"metrics not read: {dlc.reason(err)}", threshold, round(window.total_seconds() / 60, 2))
    return decide(gpu, cpu, requests, start=start, end=end, step=step, threshold=threshold, ran_since=ran_since)


# --- the policy, and what users see -----------------------------------------------------------------------


def stops_at(job: Job, policy: WorkspacePolicy | None) -> datetime | None:
    """When the policy will stop this idle job (None: it will not, or the job is not idle)."""
    if job.idle_since is None or policy is None or not policy.idle_after_minutes or \
            not policy.idle_stop_after_minutes:
        return None
    return job.idle_since + timedelta(minutes=policy.idle_stop_after_minutes)


def policy_of(job: Job) -> WorkspacePolicy | None:
    try:
        return job.workspace.policy
    except WorkspacePolicy.DoesNotExist:
        return None


def stop_due(stop_at: datetime | None, now: datetime | None = None) -> bool:
    """True when the stop's time has passed and the job still runs: the checks since could not tell (DLC
    unreachable, no samples), so the next check that finds it idle stops it."""
    return stop_at is not None and stop_at <= (now or timezone.now())


def as_json(job: Job, policy: WorkspacePolicy | None = None) -> dict[str, Any] | None:
    """The API's `idle`: null, or {since, metric, value, threshold_percent, window_minutes, stops_at}. Null once
    the job ended, as on the page: the flag is of a running job, and the policy's stop reason is the job's `reason`."""
    if job.idle_since is None or not job.is_active:
        return None
    detail = job.idle_detail or {}
    stop = stops_at(job, policy if policy is not None else policy_of(job))
    return {"since": job.idle_since.isoformat(), "metric": detail.get("metric"), "value": detail.get("value"),
            "threshold_percent": detail.get("threshold_percent"), "window_minutes": detail.get("window_minutes"),
            "stops_at": stop.isoformat() if stop else None}


def stop_reason(verdict: Verdict, idle_for: timedelta) -> str:
    """"Stopped by the idle policy: CPU 0.4% of 4 cores, under 5% for 60 min"."""
    seconds = idle_for.total_seconds()
    took = f"{round(seconds / 60)} min" if seconds >= 60 else f"{round(seconds)} s"
    return f"Stopped by the idle policy: {verdict.text}, under {verdict.threshold:g}% for {took}"


# --- the beat's cycle -------------------------------------------------------------------------------------


def candidates(limit: int) -> list[Job]:
    """Running jobs of workspaces whose idle policy is on, not being stopped: those never checked first, then the
    least recently checked (two walks of the partial index job_running_idle_check, no NULLS FIRST needed)."""
    rows = (Job.objects.filter(status=RUNNING, workspace__policy__idle_after_minutes__isnull=False,
                               stop_requested_at__isnull=True)
            .exclude(dlc_job_id="").select_related("workspace", "workspace__policy", "owner"))
    found = list(rows.filter(idle_checked_at__isnull=True).order_by("id")[:limit])
    if len(found) < limit:
        found += list(rows.filter(idle_checked_at__isnull=False).order_by("idle_checked_at", "id")
                      [:limit - len(found)])
    return found


def clear_flags(workspace: Any = None) -> int:
    """Unflag the running jobs of workspaces whose idle policy is off (of `workspace` only, when given): the beat
    skips them, so nothing else would ever end their spell. One UPDATE; returns the rows cleared."""
    from django.db.models import Q

    rows = Job.objects.filter(status=RUNNING, idle_since__isnull=False)
    if workspace is not None:
        rows = rows.filter(workspace=workspace)
    off = Q(workspace__policy__isnull=True) | Q(workspace__policy__idle_after_minutes__isnull=True)
    return rows.filter(off).update(idle_since=None, idle_detail={})


def spell_status(since: datetime) -> str:
    """The notification status of one idle spell ("Idle:<epoch>"): a webhook delivery and a mail are made once
    per spell (their unique keys), and the next spell is news again."""
    return f"{IDLE_STATUS}:{int(since.timestamp())}"


IDLE_STATUS = "Idle"


def record(job: Job, verdict: Verdict, now: datetime, window: timedelta) -> bool:
    """Write a check's outcome on the job's row; True when it starts an idle spell (the caller notifies), which
    began with the window the job was found idle over. Busy ends a spell; unknown leaves the row's state as it was
    (neither flagged nor cleared on missing data)."""
    rows = Job.objects.filter(pk=job.pk, status=RUNNING)
    rows.update(idle_checked_at=now)
    job.idle_checked_at = now
    if verdict.state == BUSY:
        rows.exclude(idle_since=None).update(idle_since=None, idle_detail={})
        job.idle_since, job.idle_detail = None, {}
        return False
    if verdict.state != IDLE:
        return False
    detail = verdict.detail()
    since = now - window
    started = rows.filter(idle_since=None).update(idle_since=since, idle_detail=detail)
    if not started:
        rows.update(idle_detail=detail)
    job.refresh_from_db(fields=["idle_since", "idle_detail"])
    return bool(started)


def stop(job: Job, verdict: Verdict, idle_for: timedelta) -> bool:
    """Stop an idle job through the console's stop path, the reason on the job (the page's status reason) and in
    the audit event, whose actor is the idle policy. Idempotent: a job already stopping or ended is left alone."""
    from jobs import lifecycle

    reason = stop_reason(verdict, idle_for)
    with transaction.atomic():
        result = lifecycle.request_stop(None, job, reason=reason, by=ACTOR)
        if result not in ("stopping", "stopped"):
            return False
        Job.objects.filter(pk=job.pk).update(idle_detail={**(job.idle_detail or {}), "stopped": reason})
    return True


def check_job(job: Job, policy: WorkspacePolicy, now: datetime | None = None, *,
              window: timedelta | None = None, stop_after: timedelta | None = None) -> Verdict:
    """One job's check under its workspace's policy: measure, record, notify a new spell, stop when due.
    `window`, `stop_after`: the policy's idle_after_minutes and idle_stop_after_minutes unless given (a test's are
    seconds; the policy form's floor is MIN_AFTER_MINUTES)."""
    now = now or timezone.now()
    window = window or timedelta(minutes=policy.idle_after_minutes or MIN_AFTER_MINUTES)
    if stop_after is None and policy.idle_stop_after_minutes:
        stop_after = timedelta(minutes=policy.idle_stop_after_minutes)
    verdict = measure(job, window, float(policy.idle_threshold_percent), now=now)
    if record(job, verdict, now, window):
        # Never stopped in the check that flags it: the owner hears of the spell first (and a stop no longer
        # than the window, however configured, waits for the next check).
        notify_idle(job)
    elif verdict.state == IDLE and job.idle_since is not None and stop_after is not None \
            and now - job.idle_since >= stop_after:
        stop(job, verdict, now - job.idle_since)
    return verdict


def notify_idle(job: Job) -> None:
    """A new idle spell: the owner's mail (if they opted in) and the webhooks that hear of idle jobs, each made
    once for the spell and sent by their tasks."""
    from jobs import notify, notify_email

    status = spell_status(job.idle_since)
    try:
        webhooks = notify.idle_deliveries(job, status)
        mailed = notify_email.idle_owed(job, status)
    except Exception:  # noqa: BLE001 - the news is not worth the check: its row state stands, the next spell tells
        log.exception("idle notifications of job %s failed", job.pk)
        return
    if webhooks:
        notify.enqueue([job.pk])
    if mailed:
        from jobs import lifecycle

        transaction.on_commit(lambda: lifecycle._enqueue("email_job", job.pk))


def check(limit: int | None = None) -> list[int]:
    """One cycle: measure at most `limit` (max_checks()) running jobs under an idle policy. Returns the ids of the
    jobs found idle. Safe to run twice or at once: each row's writes are conditional, a stop is request_stop's."""
    limit = max_checks() if limit is None else limit
    try:
        clear_flags()  # a policy turned off by any path (the admin, a shell) heals here
    except Exception:  # noqa: BLE001 - the checks below are worth more than the cleanup, which the next cycle redoes
        log.exception("clearing idle flags of workspaces without an idle policy failed")
    idle = []
    for job in candidates(limit):
        try:
            verdict = check_job(job, job.workspace.policy)
        except Exception:  # noqa: BLE001 - one job's bug must not keep the others unchecked
            log.exception("idle check of job %s failed", job.pk)
            Job.objects.filter(pk=job.pk).update(idle_checked_at=timezone.now())
            continue
        if verdict.state == IDLE:
            idle.append(job.pk)
    return idle
