"""Changing the priority of a job that waits in a resource quota's queue (DLC UpdateJob), as the PAI-DLC console
allows. Plain functions: the job page, its htmx form and the JSON API all call change_priority().

The call is synchronous (the user waits for an answer to show) with a short timeout. UpdateJob with the same
Priority is idempotent, so a user who saw a timeout may simply try again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from jobs import access, audit, catalog, dlc
from jobs import status as st
from jobs.models import AuditEvent, Job

LOW, HIGH = catalog.PRIORITY_RANGE
CHOICES = list(range(LOW, HIGH + 1))
# What DLC applies when CreateJob had no Priority: the lowest [SDK].
DEFAULT = LOW
# Still waiting for the quota's resources, where priority decides the order. From EnvPreparing on, the job has
# been admitted (its resources are reserved), so a new priority would change nothing: it is refused.
WAITING = frozenset({"Creating", "Queuing"})
# DLC's own message is shown for a refused request (it says why, e.g. the job already started), cut to this.
_MESSAGE_CHARS = 300


class PriorityError(Exception):
    """Why a priority was not changed, in words for the user. `kind`: invalid (the value), forbidden (the user
    or token may not), conflict (the job is not on a quota or no longer waits), dlc (DLC refused or did not
    answer)."""

    STATUS = {"invalid": 400, "forbidden": 403, "conflict": 409, "dlc": 502}

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def http_status(self) -> int:
        return self.STATUS[self.kind]


@dataclass(frozen=True)
class Change:
    old: int
    new: int

    @property
    def changed(self) -> bool:
        return self.old != self.new


def parse(value: Any, *, typed: bool = False) -> int:
    """A priority: a whole number from 1 to 9. From a form (text) the digits of one; from JSON (`typed`) a JSON
    integer only, as a CreateJob body's Priority must be: neither "7" nor 5.0, or the API would take here what
    POST /api/v1/jobs refuses."""
    if not typed and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) <= 2:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not LOW <= value <= HIGH:
        raise PriorityError("invalid", f"Priority must be a whole number from {LOW} (lowest) to {HIGH} (highest).")
    return value


def on_quota(job: Job) -> bool:
    # The wizard's source: a body with a ResourceId runs on that resource quota (spec.from_body reads it so).
    return bool((job.body or {}).get("ResourceId"))


def current(job: Job) -> int:
    value = (job.body or {}).get("Priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT


def refusal(user, job: Job) -> PriorityError | None:
    """Why this user may not change this job's priority now; None when they may. Permission is stop's rule
    (members their own jobs, admins any; never a viewer or a read-only token)."""
    said = access.refusal(user, "priority", workspace=job.workspace, job=job)
    if said is not None:
        return PriorityError("forbidden", said)
    if not on_quota(job):
        return PriorityError("conflict", "Priority can only be changed for a job on a resource quota.")
    if job.status not in WAITING or not job.dlc_job_id:
        return PriorityError("conflict", f"The job is {st.label(job.status)}: its priority can only be changed "
                                         "while it waits in the quota's queue (Creating or Queuing).")
    return None


def may_change(user, job: Job) -> bool:
    return refusal(user, job) is None


def _dlc_message(err: dlc.DLCError) -> str:
    if err.ambiguous:
        return ("DLC did not answer in time, so the priority may or may not have changed. Try again: setting the "
                "same priority twice is harmless.")
    said = f": {err.message[:_MESSAGE_CHARS]}" if err.kind == "request" and err.message else ""
    return f"The priority was not changed: {dlc.reason(err)}{said}"


def change_priority(user, job: Job, value: Any, *, typed: bool = False) -> Change:
    """Set a queued quota job's priority on DLC, then in its stored body (so the page and a clone show it), and
    audit it. Raises PriorityError with a message for the user; nothing is stored unless DLC accepted.
    `typed`: the value comes from JSON (parse's rule)."""
    problem = refusal(user, job)
    if problem is not None and problem.kind == "forbidden":
        raise problem  # who may ask comes first: a stranger learns nothing of the value's rule
    # The value before the job's state: a request that can never be right (priority -1) is a 400 at the field,
    # whether or not the job still waits; only a valid value hears that the job cannot change now (409).
    new = parse(value, typed=typed)
    if problem is not None:
        raise problem
    try:
        dlc.update_job(job.workspace, job.dlc_job_id, priority=new)
    except dlc.DLCError as err:
        raise PriorityError("dlc", _dlc_message(err)) from err
    # No lock across the DLC call (it may take seconds); the row is locked only to write the body, and only the
    # body is saved, so a sync writing the status meanwhile is not undone.
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job.pk)
        change = Change(current(row), new)
        row.body = {**(row.body or {}), "Priority": new}
        row.save(update_fields=["body"])
        if change.changed:
            audit.record(user, AuditEvent.CHANGED, workspace=job.workspace, job=row, event="priority",
                         changes=audit.changes({"priority": change.old}, {"priority": change.new}))
    job.body = row.body
    return change


def control(user, job: Job) -> dict[str, Any] | None:
    """What the job page shows for the priority of a job on a resource quota (None for other jobs): the value,
    whether it was set or is DLC's default, and whether this user may change it now."""
    if not on_quota(job):
        return None
    value = (job.body or {}).get("Priority")
    return {"job": job, "value": current(job), "explicit": value is not None, "editable": may_change(user, job),
            "choices": CHOICES}
