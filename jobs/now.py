"""What a workspace is using and waiting for right now: who holds the GPUs, the queue of each resource quota in the
order DLC admits it, and the jobs that have run longest. The top of the Usage page (refreshed every 15 s), the
job page's "2nd of 5 in quota X" and the API's queue_position.

From the console's own rows (as fresh as the last status sync), one query of the workspace's active jobs with only
the fields needed: active jobs are bounded (hundreds), so the sums and the queue are worked out in Python, and the
page costs the same few queries however many jobs are active. Sizes come from jobs.usage.size_of, the one size
computation the usage report uses too.

DLC's API cannot tell a quota's capacity, so a quota's line is what this console's jobs hold on it, never a share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from jobs import priority
from jobs import status as st
from jobs.jobpage import human_duration
from jobs.models import Job, Workspace
from jobs.usage import Resources, size_of

# Admitted: DLC has reserved the job's resources on its quota (from EnvPreparing on, see jobs.priority.WAITING),
# until the job has ended, reserving states included.
HOLDING = frozenset({"EnvPreparing", "SanityChecking", "Running", "Restarting", "Stopping", "SucceededReserving",
                     "FailedReserving"})
# Not admitted yet: waiting in DLC's queue (Creating, Queuing; Bidding for spot resources) or still in the
# console (Waiting for an upstream job, Submitting).
QUEUED = frozenset({st.SUBMITTING, st.WAITING, "Creating", "Queuing", "Bidding"})
LONGEST = 5
PUBLIC = "public resources"


@dataclass(frozen=True)
class ActiveJob:
    """An active job as this module needs it. quota: the body's ResourceId ("" on public resources)."""

    pk: int
    name: str
    owner: str
    status: str
    quota: str
    priority: int
    created: datetime
    submitted: datetime | None
    started: datetime | None
    size: Resources
    idle: bool = False  # running idle, as the workspace's idle policy last found it (jobs.idle)

    @property
    def holding(self) -> bool:
        return self.status in HOLDING

    @property
    def queued(self) -> bool:
        return self.status in QUEUED

    @property
    def status_label(self) -> str:
        return st.label(self.status)

    @property
    def status_tone(self) -> str:
        return st.tone(self.status)


def queue_key(job: ActiveJob) -> tuple:
    """DLC's admission order within one quota's queue: higher Priority first, then earlier submitted (created on
    DLC). The rule localdlc emulates (localdlc/runner.py, _queue_order: -priority, created, arrival; its --help says
    "highest Priority first, then oldest") and the one jobs.priority relies on: a queued job's Priority (1 lowest,
    9 highest, DLC's default the lowest) decides its order in its quota's queue. A job the console has not sent
    yet (Waiting, Submitting) is in no DLC queue: whatever its Priority, DLC admits every job it already holds
    before it can even consider this one (a run-after job may wait hours for its upstream), so the console's own
    come after all of DLC's, ordered among themselves by the same rule. Priority only orders a quota's queue
    (jobs.priority.on_quota): on public resources, submission alone."""
    rank = -job.priority if job.quota else 0
    return job.submitted is None, rank, job.submitted or job.created, job.pk


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class Position:
    """A queued job's place in its quota's queue: 1 is admitted next."""

    position: int
    of: int
    quota_id: str
    quota_name: str  # the registered name, else the id; "" on public resources
    # Waiting for the job it runs after: not sent to DLC yet, so this is the place it will take once released.
    held: bool = False

    @property
    def where(self) -> str:
        return f"in quota {self.quota_name}" if self.quota_id else f"on {PUBLIC}"

    @property
    def text(self) -> str:
        return f"{ordinal(self.position)} of {self.of} {self.where}"

    def as_json(self) -> dict[str, Any]:
        return {"position": self.position, "of": self.of, "quota": self.quota_name or None, "held": self.held}


@dataclass
class QueuedEntry:
    job: ActiveJob
    position: Position
    waited: str = ""  # since the job was created, as the job list writes durations


@dataclass
class LongRun:
    job: ActiveJob
    run_time: str


@dataclass
class QueueGroup:
    """One quota's queue (or public resources'), in admission order."""

    quota_id: str
    label: str
    entries: list[QueuedEntry] = field(default_factory=list)


@dataclass
class Holding:
    """What a group of jobs holds (running) and asks (queued). cpu/gpu count known sizes only; `unknown` jobs run
    on an instance type the catalog does not describe."""

    key: str
    label: str = ""
    running: int = 0
    nodes: int = 0
    cpu: float = 0.0
    gpu: float = 0.0
    unknown: int = 0
    queued: int = 0
    queued_gpu: float = 0.0
    # Of the running: the jobs the idle policy found idle, and the GPUs and cores they hold (known sizes only).
    idle: int = 0
    idle_gpu: float = 0.0
    idle_cpu: float = 0.0

    def add(self, job: ActiveJob) -> None:
        if job.queued:
            self.queued += 1
            self.queued_gpu += job.size.gpu or 0.0
            return
        self.running += 1
        self.nodes += job.size.nodes
        self.idle += job.idle
        if job.size.cpu is None or job.size.gpu is None:
            self.unknown += 1
            return
        self.cpu += job.size.cpu
        self.gpu += job.size.gpu
        if job.idle:
            self.idle_cpu += job.size.cpu
            self.idle_gpu += job.size.gpu


@dataclass
class Snapshot:
    at: datetime
    total: Holding
    by_owner: list[Holding]
    by_quota: list[Holding]
    queues: list[QueueGroup]
    longest: list[LongRun]
    catalog_missing: bool = False

    @property
    def queued(self) -> int:
        return sum(len(group.entries) for group in self.queues)


def quota_names(workspace: Workspace) -> dict[str, str]:
    """Registered quotas by id: their name, or the id when none was given."""
    return {str(q["id"]): str(q.get("name") or q["id"]) for q in workspace.quotas or [] if q.get("id")}


def _priority(value: Any) -> int:
    # As text from the JSON body (SQLite answers a number, PostgreSQL its text); what DLC applies when none was set.
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isascii() and text.isdigit() and priority.LOW <= int(text) <= priority.HIGH \
        else priority.DEFAULT


_COLUMNS = ("pk", "display_name", "owner__username", "status", "resource_id", "priority_text", "created_at",
            "submitted_at", "started_at", "idle_since", "specs_json")


def _query(workspace: Workspace, statuses: Iterable[str], *, sized: bool = True):
    # The (workspace, status) index; only the body's three keys that matter, never the whole body.
    rows = (Job.objects.filter(workspace=workspace, status__in=list(statuses)).order_by()
            .annotate(resource_id=KeyTextTransform("ResourceId", "body"),
                      priority_text=KeyTextTransform("Priority", "body")))
    columns = _COLUMNS if sized else _COLUMNS[:-1]
    if sized:
        rows = rows.annotate(specs_json=KeyTextTransform("JobSpecs", "body"))
    return rows.values_list(*columns)


def active_jobs(workspace: Workspace, specs: Mapping[str, Mapping] | None = None, *, sized: bool = True,
                statuses: Iterable[str] = HOLDING | QUEUED) -> list[ActiveJob]:
    """The workspace's running and queued jobs, in one query. sized=False skips the JobSpecs (a queue position
    needs no size)."""
    sizes: dict[str | None, Resources] = {}
    jobs = []
    for row in _query(workspace, statuses, sized=sized):
        pk, name, owner, status, quota, prio, created, submitted, started, idle_since = row[:10]
        specs_json = row[10] if sized else None
        size = sizes.get(specs_json) or sizes.setdefault(specs_json, size_of(specs_json, specs))
        jobs.append(ActiveJob(pk, name, owner or "(deleted user)", status, str(quota or ""), _priority(prio),
                              created, submitted, started, size, idle_since is not None and status == "Running"))
    return jobs


def _quota_order(names: Mapping[str, str]):
    # Registered quotas in their listed order, then the unregistered ones jobs name by id, then public resources.
    listed = list(names)
    return lambda quota: (not quota, quota not in names, listed.index(quota) if quota in names else 0, quota)


def queues(jobs: Iterable[ActiveJob], names: Mapping[str, str], now: datetime | None = None) -> list[QueueGroup]:
    """The queued jobs per quota in admission order, each with its position (`now`: to say how long each waited)."""
    groups: dict[str, list[ActiveJob]] = {}
    for job in jobs:
        if job.queued:
            groups.setdefault(job.quota, []).append(job)
    result = []
    for quota in sorted(groups, key=_quota_order(names)):
        waiting = sorted(groups[quota], key=queue_key)
        name = names.get(quota, quota)
        group = QueueGroup(quota, f"Quota {name}" if quota else PUBLIC.capitalize())
        group.entries = [QueuedEntry(job, Position(n, len(waiting), quota, name),
                                     human_duration(now - job.created) if now else "")
                         for n, job in enumerate(waiting, start=1)]
        result.append(group)
    return result


def build(jobs: list[ActiveJob], names: Mapping[str, str], now: datetime, *, catalog_missing: bool = False) \
        -> Snapshot:
    """The snapshot of these jobs: sums per owner and per quota (every registered quota, even idle), the queues,
    and the longest running."""
    total = Holding("All")
    owners: dict[str, Holding] = {}
    quotas: dict[str, Holding] = {q: Holding(q, name) for q, name in names.items()}
    for job in jobs:
        total.add(job)
        owners.setdefault(job.owner, Holding(job.owner, job.owner)).add(job)
        label = names.get(job.quota, job.quota) if job.quota else PUBLIC.capitalize()
        quotas.setdefault(job.quota, Holding(job.quota, label)).add(job)
    quota_order = _quota_order(names)
    longest = [LongRun(j, human_duration(now - j.started))
               for j in sorted((j for j in jobs if j.holding and j.started), key=lambda j: (j.started, j.pk))[:LONGEST]]
    return Snapshot(
        at=now, total=total,
        by_owner=sorted(owners.values(), key=lambda h: (-h.gpu, -h.cpu, -h.running, -h.queued, h.key)),
        by_quota=sorted(quotas.values(), key=lambda h: quota_order(h.key)),
        queues=queues(jobs, names, now), longest=longest, catalog_missing=catalog_missing)


def snapshot(workspace: Workspace, specs: Mapping[str, Mapping] | None = None, *, now: datetime | None = None) \
        -> Snapshot:
    """What the workspace uses and waits for now. `specs`: ListEcsSpecs by instance type (None: jobs on instance
    types are of unknown size)."""
    return build(active_jobs(workspace, specs), quota_names(workspace), now or timezone.now(),
                 catalog_missing=specs is None)


def queue_position(job: Job) -> Position | None:
    """A queued job's place in its quota's queue (None for a job not queued): one query, of the workspace's queued
    jobs without their sizes."""
    if job.status not in QUEUED:
        return None
    workspace = job.workspace
    for group in queues(active_jobs(workspace, sized=False, statuses=QUEUED), quota_names(workspace)):
        for entry in group.entries:
            if entry.job.pk == job.pk:
                return replace(entry.position, held=job.status == st.WAITING)
    return None
