"""What the job page shows, built from the Job row alone (no DLC call): the configuration in the wizard's
six sections, the status timeline, the pods table and the truth about a job still waiting to submit."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property, partial
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import access, catalog, dependencies, diagnosis, export, spec
from jobs import status as st
from jobs import tags as tagging
from jobs.models import Job

SECTION_TITLES = {
    "basic": "Basic information",
    "environment": "Environment",
    "resources": "Resources",
    "vpc": "VPC",
    "fault_tolerance": "Fault tolerance & diagnosis",
    "ram_role": "RAM role",
}
HIDDEN = "•••••• (hidden)"


@dataclass
class Item:
    label: str
    value: Any
    kind: str = "text"  # text | mono | pre | rows
    columns: list[tuple[str, str]] = field(default_factory=list)  # for rows: (key, heading)
    links: list[tuple[str, str]] = field(default_factory=list)  # (text, URL): the page shows these instead of value


@dataclass
class Section:
    key: str
    title: str
    items: list[Item]


def _on(value: Any) -> str:
    return "On" if value else "Off"


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _rows(rows: list[dict], columns: list[tuple[str, str]]) -> Item | None:
    """A table of list rows (cells as text), keeping only the columns some row has a value in."""
    rows = [r for r in rows if isinstance(r, dict)]
    if not rows:
        return None
    used = [(k, h) for k, h in columns if any(r.get(k) not in (None, "", [], False) for r in rows)]
    return Item("", [[_cell(r.get(k)) for k, _ in used] for r in rows], kind="rows", columns=used)


def _add(items: list[Item], label: str, value: Any, kind: str = "text") -> None:
    if value in (None, "", [], {}):
        return
    items.append(Item(label, value, kind))


def _duration(value: Any, unit: str) -> str:
    if value in (None, ""):
        return ""
    return f"{value} {unit}"


def _basic(s: dict, workspace_id: int | None = None) -> list[Item]:
    items: list[Item] = []
    _add(items, "Job name", s.get("name"))
    _add(items, "Description", s.get("description"), "pre")
    tags = [t for t in s.get("tags") or [] if not tagging.is_reserved(t.get("key"))]
    if tags:
        texts = [f"{t.get('key')}={t.get('value')}" for t in tags]
        # Each a link to the job list filtered by that tag (jobs.listing) in the job's own workspace, whichever is
        # chosen (views.job_list switches to it); compare keeps the text.
        base, where = reverse("job_list"), {"workspace": workspace_id} if workspace_id else {}
        items.append(Item("Tags", ", ".join(texts), "mono",
                          links=[(text, f"{base}?{urlencode({**where, 'tag': text})}") for text in texts]))
    _add(items, "DLC workspace", s.get("workspace_id"), "mono")
    return items


def _environment(s: dict) -> list[Item]:
    items: list[Item] = []
    _add(items, "Image type", catalog.IMAGE_TYPES.get(s.get("image_type"), s.get("image_type")))
    _add(items, "Image", s.get("image"), "mono")
    _add(items, "Registry username", s.get("registry_username"), "mono")
    if s.get("registry_password"):
        items.append(Item("Registry password", HIDDEN))
    datasets = [{**d, "kind": catalog.DATASET_KINDS.get(d.get("kind"), d.get("kind")),
                 "read_only": {True: "Read-only", False: "Read-write"}.get(d.get("read_only"), "")}
                for d in s.get("datasets") or []]
    table = _rows(datasets, [("kind", "Kind"), ("id", "Dataset"), ("version", "Version"),
                             ("read_only", "Access"), ("mount_path", "Mount path")])
    if table:
        table.label = "Datasets"
        items.append(table)
    storages = [{**d, "type": catalog.STORAGE_TYPES.get(d.get("type"), d.get("type"))}
                for d in s.get("storages") or []]
    table = _rows(storages, [("type", "Type"), ("uri", "Source"), ("mount_path", "Mount path"),
                             ("options", "Options")])
    if table:
        table.label = "Storage"
        items.append(table)
    _add(items, "Startup command", s.get("command"), "pre")
    envs = [{"key": e.get("key"), "value": HIDDEN if e.get("secret") or spec.looks_like_secret(e.get("key") or "")
             else e.get("value")} for e in s.get("envs") or []]
    table = _rows(envs, [("key", "Name"), ("value", "Value")])
    if table:
        table.label = "Environment variables"
        items.append(table)
    mode = s.get("libs_mode")
    if mode == "list":
        _add(items, "Third-party libraries", s.get("libs"), "pre")  # one requirement per line
    elif mode == "requirements":
        _add(items, "requirements.txt folder", s.get("requirements_dir"), "mono")
    code = s.get("code_mode")
    if code == "git":
        _add(items, "Code source", s.get("code_source_id"), "mono")
        _add(items, "Branch", s.get("code_branch"), "mono")
        _add(items, "Commit", s.get("code_commit"), "mono")
        _add(items, "Code mount path", s.get("code_mount_path"), "mono")
    elif code == "upload":
        _add(items, "Uploaded code", s.get("code_upload_uri"), "mono")
        _add(items, "Code mount path", s.get("code_mount_path"), "mono")
    return items


def _resources(s: dict) -> list[Item]:
    items: list[Item] = []
    _add(items, "Resource type", catalog.RESOURCE_TYPES.get(s.get("resource_type"), s.get("resource_type")))
    _add(items, "Source", catalog.SOURCES.get(s.get("source"), s.get("source")))
    _add(items, "Resource quota", s.get("quota_id"), "mono")
    _add(items, "Priority", s.get("priority"))
    _add(items, "Framework", s.get("framework"))
    table = _rows(list(s.get("roles") or []), [
        ("role", "Role"), ("count", "Nodes"), ("instance_type", "Instance type"), ("cpu", "CPU cores"),
        ("gpu", "GPUs"), ("memory_gib", "Memory (GiB)"), ("shared_memory_gib", "Shared memory (GiB)"),
        ("node_names", "Nodes"),
    ])
    if table:
        table.label = "Job resources"
        items.append(table)
    for key, label in [("node_scheduling", "Node-specific scheduling"), ("idle_resources", "Idle resources"),
                       ("cpu_affinity", "CPU affinity"), ("dsw", "Developer machine (DSW)")]:
        if s.get(key):
            items.append(Item(label, "On"))
    policy = s.get("scheduling_policy")
    _add(items, "Scheduling policy", (policy or "").capitalize() if isinstance(policy, str) else policy)
    if s.get("source") == "spot":
        _add(items, "Bid method", catalog.BID_METHODS.get(s.get("bid_method"), s.get("bid_method")))
        _add(items, "Maximum discount", f"{s['spot_discount']}%" if s.get("spot_discount") is not None else "")
        _add(items, "Maximum price", s.get("spot_price"))
    _add(items, "Maximum duration", _duration(s.get("max_duration"), s.get("max_duration_unit") or ""))
    _add(items, "Retention period", _duration(s.get("retention"), s.get("retention_unit") or ""))
    _add(items, "Advanced framework configuration", _advanced_shown(s.get("advanced")), "pre")
    return items


def _advanced_shown(value: Any) -> Any:
    """The advanced settings with each value named like a secret hidden (e.g. a WandbApiKey a job imported from
    DLC carries; RayRedisPassword, stripped before this, shows as hidden too)."""
    settings, _ = spec.parse_advanced(value)
    if not settings or not any(spec.looks_like_secret(k) for k in settings):
        return value
    return spec.format_advanced({k: HIDDEN if spec.looks_like_secret(k) and v not in (None, "") else v
                                 for k, v in settings.items()})


def _vpc(s: dict) -> list[Item]:
    if not s.get("vpc_id"):
        return []
    items: list[Item] = []
    _add(items, "VPC", s.get("vpc_id"), "mono")
    _add(items, "vSwitch", s.get("switch_id"), "mono")
    _add(items, "Security group", s.get("security_group_id"), "mono")
    cidrs = s.get("extended_cidrs") or []
    _add(items, "Extended CIDRs", ", ".join(cidrs) if isinstance(cidrs, list) else cidrs, "mono")
    _add(items, "Internet access gateway", catalog.GATEWAYS.get(s.get("gateway"), s.get("gateway")))
    return items


def _fault_tolerance(s: dict) -> list[Item]:
    items = [Item("Automatic fault tolerance", _on(s.get("enabled")))]
    _add(items, "Fault tolerance parameters", s.get("args"), "mono")
    items.append(Item("Sanity check", _on(s.get("sanity_check"))))
    _add(items, "Sanity check parameters", s.get("sanity_args"), "mono")
    return items


def _ram_role(s: dict) -> list[Item]:
    items = [Item("Instance RAM role", catalog.RAM_ROLE_MODES.get(s.get("mode"), s.get("mode")))]
    _add(items, "Role ARN", s.get("role_arn"), "mono")
    return items


_BUILDERS = {"basic": _basic, "environment": _environment, "resources": _resources, "vpc": _vpc,
             "fault_tolerance": _fault_tolerance, "ram_role": _ram_role}


def sections(job: Job) -> list[Section]:
    """The job's configuration, read-only, in the wizard's grouping. Secrets never leave this function:
    the body is stripped of them first, and what remains of them (a placeholder) is shown as hidden."""
    body = spec.strip_secrets(job.body or {})
    try:
        wizard = spec.inverse(body, job.hints or {})
    except Exception:  # noqa: BLE001 - an odd imported body still gets a page, just ungrouped
        return [Section("body", "CreateJob body", [Item("", json.dumps(body, indent=2, default=str), "pre")])]
    builders = {**_BUILDERS, "basic": partial(_basic, workspace_id=job.workspace_id)}
    return [Section(key, SECTION_TITLES[key], builders[key](wizard.get(key) or {})) for key in spec.SECTIONS]


# --- status timeline --------------------------------------------------------------------------------------


@dataclass
class Step:
    status: str
    start: datetime | None
    end: datetime | None
    reason: str = ""

    @property
    def label(self) -> str:
        return st.label(self.status)

    @property
    def tone(self) -> str:
        return st.tone(self.status)

    @property
    def duration(self) -> str:
        if not self.start:
            return ""
        return human_duration((self.end or timezone.now()) - self.start)


def human_duration(delta: timedelta) -> str:
    """A span as the console writes it everywhere (job page, job list): "3s", "5m 2s", "2h 5m", no zero parts."""
    seconds = max(0, int(delta.total_seconds()))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes else "",
             f"{seconds}s" if seconds or not (days or hours or minutes) else ""]
    return " ".join(p for p in parts if p)


def when(value: Any) -> datetime | None:
    """A DLC timestamp (ISO 8601 UTC string) as an aware datetime; None for blanks and garbage."""
    if isinstance(value, datetime):
        return value
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:  # well formed but no such time (2026-02-30, +25:00): parse_datetime raises
        return None
    if parsed and timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


@dataclass(frozen=True)
class Event:
    """One GetJobEvents line: its leading timestamp parsed (None when it has none) and the rest of the line."""
    at: datetime | None
    text: str

    @cached_property
    def _parts(self) -> tuple[str | None, str | None, str]:
        """(type, reason, message) of "[Type] Reason: message"; (None, None, the whole text) when not so written."""
        match = _EVENT_PARTS.match(self.text)
        return (match.group(1), match.group(2), match.group(3)) if match else (None, None, self.text)

    @property
    def kind(self) -> str | None:
        """The event's [Type] (Normal, Warning...), None when the text does not say one."""
        return self._parts[0]

    @property
    def reason(self) -> str | None:
        return self._parts[1]

    @property
    def message(self) -> str:
        """The text after its type and reason; all of it when it has none."""
        return self._parts[2]


# DLC writes each event as "<ISO 8601 UTC time> [Type] Reason: message".
_EVENT_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+(.*)$", re.S)
_EVENT_PARTS = re.compile(r"^\[(\w+)\]\s+(\w[^:\s]*):\s?(.*)$", re.S)


def events(lines: list[str]) -> list[Event]:
    """GetJobEvents' lines with their time split off, so the page shows it in the console's zone like every other
    time on it; a line without a (valid) leading time is kept whole."""
    out = []
    for line in lines:
        match = _EVENT_TIME.match(str(line))
        at = when(match.group(1)) if match else None
        out.append(Event(at, match.group(2)) if at else Event(None, str(line)))
    return out


def console_stop_reason(job: Job) -> str:
    """Why the console itself stopped the job, "" if it did not: the idle policy's reason (idle_detail["stopped"],
    jobs.idle) or a sweep trial's early stop (its stop_reason, jobs.early_stop). DLC then only says the user
    stopped it, so the page, the mail, the webhook and the API prefer this one; the job's fields stay DLC's, as
    the sync writes them."""
    if job.stop_requested_at is None or job.status not in ("Stopping", "Stopped"):
        return ""
    if (job.idle_detail or {}).get("stopped"):
        return str(job.idle_detail["stopped"])
    from jobs.models import SweepTrial

    own = SweepTrial.objects.filter(job=job).exclude(stop_reason="").values_list("stop_reason", flat=True).first()
    return own or ""


def status_reason(job: Job) -> str:
    """The reason the page shows under the job's status: the console's own stop reason, else DLC's (code:
    message)."""
    return console_stop_reason(job) or ": ".join(x for x in (job.reason_code, job.reason_message) if x)


def timeline(job: Job, released_at: datetime | None = None) -> list[Step]:
    """The console's own wait before DLC knew the job, then DLC's StatusHistory. A job that ran after another
    (jobs.dependencies) first waited for it: until `released_at`, when that upstream ended."""
    if job.status == st.WAITING:
        return [Step(st.WAITING, job.created_at, None)]
    if job.reason_code == dependencies.SKIPPED:
        return [Step(st.WAITING, job.created_at, job.finished_at),
                Step(job.status, job.finished_at, job.finished_at, job.reason_message)]
    history = [h for h in job.status_history or [] if isinstance(h, dict) and h.get("Status")]
    first_remote = when(history[0].get("StartTime")) if history else None
    waited_until = job.submitted_at or first_remote
    # Ended before DLC said anything (refused, or stopped before it was sent): the console's wait ends there.
    never_sent = job.status == st.SUBMIT_FAILED or (
        not history and job.submitted_at is None and st.is_terminal(job.status))
    if never_sent:
        waited_until = job.finished_at
    steps = [Step(st.SUBMITTING, job.created_at, waited_until)]
    if released_at and job.created_at < released_at and (waited_until is None or released_at <= waited_until):
        steps = [Step(st.WAITING, job.created_at, released_at), Step(st.SUBMITTING, released_at, waited_until)]
    elif never_sent and job.run_after_id and job.status == "Stopped":
        steps = [Step(st.WAITING, job.created_at, waited_until)]  # stopped while it waited for its upstream
    for h in history:
        reason = ": ".join(x for x in (h.get("ReasonCode"), h.get("ReasonMessage")) if x)
        steps.append(Step(h["Status"], when(h.get("StartTime")), when(h.get("EndTime")), reason))
    if job.status == st.SUBMIT_FAILED:
        code = (job.submit_error or {}).get("Code", "")
        steps.append(Step(st.SUBMIT_FAILED, job.finished_at, job.finished_at, code))
    elif never_sent:
        steps.append(Step(job.status, job.finished_at, job.finished_at, job.reason_message))
    # Only the last step may be open; a terminal one ends when it starts.
    for prev, nxt in zip(steps, steps[1:], strict=False):
        prev.end = prev.end or nxt.start
    if steps and st.is_terminal(steps[-1].status):
        steps[-1].end = steps[-1].end or steps[-1].start
    return steps


# --- pods ------------------------------------------------------------------------------------------------


@dataclass
class PodRow:
    pod_id: str
    role: str
    index: int
    status: str
    ip: str
    start: datetime | None
    end: datetime | None

    @property
    def live(self) -> bool:
        """Still producing output (or about to): its log is worth following."""
        return self.status not in {"Succeeded", "Failed", "Stopped"}

    @property
    def started(self) -> bool:
        """Has run or runs: a Pending pod, or one with neither a Running status nor a start time, has no log yet."""
        return self.status == "Running" or (self.status != "Pending" and self.start is not None)


_INDEX = re.compile(r"-(\d+)$")


def pods(job: Job) -> list[PodRow]:
    """Pods as last synced from DLC, ordered by role and index (the index is the pod name's suffix)."""
    rows: list[PodRow] = []
    seen: dict[str, int] = {}
    for pod in job.pods or []:
        if not isinstance(pod, dict) or not pod.get("PodId"):
            continue
        role = str(pod.get("Type") or "")
        match = _INDEX.search(str(pod["PodId"]))
        index = int(match.group(1)) if match else seen.get(role, 0)
        seen[role] = seen.get(role, 0) + 1
        rows.append(PodRow(str(pod["PodId"]), role, index, str(pod.get("Status") or ""),
                           str(pod.get("Ip") or ""), when(pod.get("GmtStartTime")), when(pod.get("GmtFinishTime"))))
    return sorted(rows, key=lambda p: (p.role, p.index))


def find_pod(job: Job, pod_id: str) -> PodRow | None:
    return next((p for p in pods(job) if p.pod_id == pod_id), None)


# --- waiting to submit -----------------------------------------------------------------------------------

SLOW_SUBMIT = timedelta(seconds=30)
# DLC's message as shown in the note; the whole answer is in the API's submit_error.
_NOTE_MESSAGE_CHARS = 300


def _last_submit_error(job: Job) -> dict:
    """What DLC (or the way to it) answered the latest failed attempt, when the row keeps it."""
    error = job.submit_error if isinstance(job.submit_error, dict) else {}
    return error if error.get("Code") else {}


def _next_attempt(job: Job, now: datetime) -> str:
    """When the retry after a transient error is due, in the console's time zone; "" when none is scheduled."""
    due = job.submit_next_attempt_at
    if due is None:
        return ""
    at = f"{timezone.localtime(due):%H:%M:%S} ({timezone.get_current_timezone_name()})"
    if due < now:  # a busy worker, or its task was lost and the sweep enqueues it again
        return f"The next attempt was due at {at} and starts as soon as a worker is free."
    return f"Next attempt at {at}."


def waiting_note(job: Job, now: datetime | None = None) -> str:
    """What is true about a job DLC does not know yet. The console cannot see whether a worker is up,
    so it says what it knows: that an attempt is on its way, what DLC answered the last one, how long,
    how many attempts, and that the job is kept."""
    if job.status != st.SUBMITTING:
        return ""
    now = now or timezone.now()
    attempts = job.submit_attempts
    in_flight = job.submit_unanswered_since
    error = _last_submit_error(job)
    kept = "The job is kept and is sent again automatically; there is no need to resubmit."
    if error:
        failed = attempts - 1 if in_flight else attempts
        status = f" (HTTP {error['Status']})" if error.get("Status") else ""
        message = str(error.get("Message") or "")[:_NOTE_MESSAGE_CHARS]
        said = f"DLC did not accept attempt {max(failed, 1)}: {error['Code']}{status}{': ' if message else ''}{message}"
        said = said if said.endswith(".") else f"{said}."
        if in_flight:
            return f"{said} Attempt {attempts} is being sent now. {kept}"
        return " ".join(x for x in (said, _next_attempt(job, now), kept) if x)
    if in_flight:
        unanswered = now - in_flight
        if attempts <= 1 and unanswered < SLOW_SUBMIT:
            return "Sending to DLC…"
        # Unanswered is not refused: it may still land, and the console looks it up before any re-send.
        return " ".join(x for x in (
            f"Attempt {attempts} was sent to DLC {human_duration(unanswered)} ago and has no answer yet. "
            "Before sending again the console checks whether DLC created it, so it is never created twice.",
            _next_attempt(job, now), kept) if x)
    # A job released by its upstream (jobs.dependencies) is due from then, not from when it was created.
    waited = now - (job.submit_next_attempt_at if attempts == 0 and job.submit_next_attempt_at else job.created_at)
    if attempts == 0 and waited < SLOW_SUBMIT:
        return "Sending to DLC…"
    if attempts == 0:
        return (f"Not yet sent to DLC after {human_duration(waited)}: no worker has picked it up yet. The job is "
                "kept and is sent automatically once the queue and a worker are available; there is no need to "
                "resubmit.")
    return " ".join(x for x in (
        f"Not yet accepted by DLC after {human_duration(waited)} ({attempts} attempt{'s' if attempts != 1 else ''} "
        "so far; the last one failed with a temporary error).", _next_attempt(job, now), kept) if x)


# --- the live part of the page ---------------------------------------------------------------------------


def live(job: Job, user) -> dict[str, Any]:
    """Everything the self-refreshing part of the job page shows, from the database only."""
    from jobs import costs
    from jobs import now as queue_now  # which builds on this module's human_duration

    prices = costs.history_for(job.workspace)  # each hour at the prices then in force
    visible = access.jobs_for(user)
    source = visible.filter(pk=job.cloned_from_id).only("id", "display_name").first() if job.cloned_from_id else None
    clones = list(visible.filter(cloned_from=job).only("id", "display_name", "status")[:50])
    deps = dependencies.page_facts(job, user)
    upstream = deps.upstream
    released = upstream.finished_at if upstream is not None and not upstream.is_active else None
    return {
        "job": job,
        "deps": deps,
        "timeline": timeline(job, released),
        "pods": pods(job),
        "waiting_note": waiting_note(job),
        "queue_position": queue_now.queue_position(job),
        "status_reason": status_reason(job),
        "idle": idle_note(job),
        # A failed job's likely cause: stored once its logs are archived; before, from DLC's reason (no DLC call).
        "diagnosis": diagnosis.for_job(job),
        # At the workspace's prices: so far while it runs; None without a price (said as "no price" once it ran).
        "cost": costs.job_cost(job, prices),
        "priced": prices.any,
        # A stop asked while the job waited to be submitted keeps its status until DLC has the job.
        "can_stop": job.is_stoppable and not (job.stop_requested_at and not job.stop_error)
        and access.can(user, "stop", workspace=job.workspace, job=job),
        "can_clone": access.can(user, "clone", workspace=job.workspace),
        # The rule template_save checks: a viewer is not offered a link that answers 403.
        "can_save_template": access.can(user, "create", workspace=job.workspace),
        # Said on the page, so the link is offered only when it gives a file (jobs.export says why not).
        "params_problem": export.params_file_problem(spec.strip_secrets(job.body or {})),
        "cloned_from": source,
        "clones": clones,
        # A refused job never ran, so every job made from it (edit and resubmit, or a clone) is a new attempt at it:
        # named next to Edit and resubmit, newest first, so a second click is not taken for the first.
        "resubmitted": clones if job.status == st.SUBMIT_FAILED else [],
    }


@dataclass(frozen=True)
class IdleNote:
    since: datetime
    text: str  # "CPU 0.3% of 4 cores over the last 30 min"
    stops_at: datetime | None
    due: bool = False  # stops_at has passed (the checks since could not tell): the next idle check stops it


def idle_note(job: Job) -> IdleNote | None:
    """The job page's idle line while the job runs idle (jobs.idle), with when the policy will stop it; one query
    (the workspace's policy) only for an idle job."""
    if job.idle_since is None or not job.is_active:
        return None
    from jobs import idle

    detail = job.idle_detail or {}
    stop_at = idle.stops_at(job, idle.policy_of(job))
    return IdleNote(job.idle_since, f"{detail.get('text', '')} over the last {detail.get('window_minutes', 0):g} min",
                    stop_at, idle.stop_due(stop_at))


# --- stop results ----------------------------------------------------------------------------------------

_STOP_TEXT = {
    "stopping": ("Stop requested", "success"),
    "stopped": ("Stopped", "success"),
    "already-finished": ("Already finished", "muted"),
    "not-permitted": ("Not permitted", "danger"),
    "not-found": ("Not found", "danger"),
    "not-submitted": ("Not on DLC yet: it cannot be stopped while waiting to submit", "warning"),
}


@dataclass
class StopOutcome:
    job_id: int
    name: str
    code: str
    text: str
    tone: str


def stop_outcome(result: str, job: Job | None, job_id: int) -> StopOutcome:
    """lifecycle's stop result ("stopping", "already-finished", "not-permitted", "failed: ...") in words."""
    name = job.display_name if job else f"Job {job_id}"
    if result.startswith("failed"):
        detail = result.partition(":")[2].strip()
        return StopOutcome(job_id, name, "failed", f"Failed: {detail}" if detail else "Failed", "danger")
    text, tone = _STOP_TEXT.get(result, (result, "muted"))
    return StopOutcome(job_id, name, result, text, tone)
