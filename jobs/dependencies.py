"""Job dependencies ("Run after"): a job that names one upstream job of its workspace and a condition, held in the
console with status Waiting (never sent to DLC) until the upstream ends.

No pipeline engine: one plain function, release(), decides the Waiting dependents of jobs that just ended. It is
called where a job's end is noticed (the sync cycle, a submit that failed for good, an unsent job cancelled) and,
as a safety net for a hook that was missed (a worker killed between commit and release), by the beat sweep
(release_owed). It changes a row only with a conditional UPDATE ... WHERE status = 'Waiting', so running it twice,
or twice at once, releases each dependent once.

A dependent whose condition can no longer hold is "skipped": it ends Stopped without ever being sent, with
reason SKIPPED, and so are its own dependents, down the chain. A job that never ran (skipped, or stopped by a user
before it was sent) has no outcome to run after: its dependents are skipped whatever their condition.

Should the upstream be deleted from the console's database (run_after SET NULL), a Waiting job is skipped too: the
console cannot know how that job ended, and a training run on top of an unknown preprocessing is the worse surprise.

A dependent is submitted only if it may still be created when it is released (release_refusal): its owner may still
create jobs in the workspace and the workspace's budget is not spent, as a schedule's run is checked when it starts.
Otherwise it ends "Submit failed" (NOT_RELEASED) without being sent, and can be edited and submitted again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs import access, audit
from jobs import status as st
from jobs.models import Job, Workspace

log = logging.getLogger(__name__)

SUCCEEDED, ENDED = Job.RUN_AFTER_SUCCEEDED, Job.RUN_AFTER_ENDED
# The labels shown (wizard, API, job page), not the model's choices: a choices label lives in the migrations. A job
# that never ran (stopped while Waiting, skipped) has no outcome, so "ends" says it.
WHEN = {SUCCEEDED: "succeeds", ENDED: "ends, whatever the outcome (not if it never ran)"}
assert WHEN.keys() == dict(Job.RUN_AFTER_CHOICES).keys()
SKIPPED = "Console.UpstreamNotSucceeded"
CANCELLED = "Console.CancelledBeforeSubmit"  # jobs.lifecycle._cancel_unsent
NEVER_RAN = frozenset({SKIPPED, CANCELLED})
NOT_RELEASED = "Console.NotReleased"  # submit_error's Code of a dependent that could no longer be created
# The form's and the API's field names.
FIELD, WHEN_FIELD = "run_after", "run_after_when"
WAIT, GO, NEVER = "wait", "go", "never"
# Upstream ids per dependents query: the IN list stays small, each query one walk of the run_after index.
CHUNK = 100
CHOICES_SHOWN = 50  # the wizard's datalist of recent jobs


def decide(upstream: Job | None, when: str) -> str:
    """WAIT while the upstream is active, GO once the condition holds, NEVER when it no longer can."""
    if upstream is None:
        return NEVER  # deleted from the console (SET_NULL): how it ended is unknown (see the module's doc)
    if st.is_active(upstream.status):
        return WAIT
    if upstream.reason_code in NEVER_RAN and upstream.status == "Stopped":
        return NEVER  # it never ran: the chain below it is skipped too
    if when == ENDED or upstream.status == "Succeeded":
        return GO
    return NEVER


def _words(upstream: Job) -> str:
    """How an ended upstream ended, for messages: "failed", "was stopped", "was skipped", ..."""
    if upstream.reason_code == SKIPPED:
        return "was skipped (its own upstream did not succeed)"
    if upstream.reason_code == CANCELLED:
        return "was stopped before it was submitted"
    return {"Failed": "failed", "Stopped": "was stopped", st.SUBMIT_FAILED: "could not be submitted"}.get(
        upstream.status, f"ended {st.label(upstream.status)}")


def never_message(upstream: Job | None) -> str:
    if upstream is None:
        return "The upstream job was deleted from the console: how it ended is unknown, so this job never ran."
    return f"Upstream job {upstream.pk} ({upstream.display_name}) {_words(upstream)}; this job was never submitted."


# --- the choice, in the wizard and the API -----------------------------------------------------------------

_REF = re.compile(r"\s*#?(\d{1,18})(?:\s*[—–-].*)?\s*", re.S)


@dataclass
class Choice:
    """A create request's "Run after": the upstream (None: none chosen), the condition, and errors by field."""

    upstream: Job | None = None
    when: str = SUCCEEDED
    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def waits(self) -> bool:
        return self.upstream is not None and decide(self.upstream, self.when) == WAIT


def parse_ref(value: Any) -> int | None:
    """A job id as the API sends it (a number) or the form does ("12", "#12", or a datalist entry "12 — name")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    match = _REF.fullmatch(value) if isinstance(value, str) else None
    return int(match[1]) if match else None


WHEN_PROBLEM = f"Choose one of: {', '.join(WHEN)}."  # a run_after_when not in WHEN, in the form and the API


def check(user, workspace: Workspace, value: Any, when: Any = None) -> Choice:
    """Validate a "Run after" choice for a new job of `workspace`. Blank value: no upstream, no error."""
    choice = Choice()
    when = SUCCEEDED if when in (None, "") else when
    if not isinstance(when, str) or when not in WHEN:
        choice.errors[WHEN_FIELD] = [WHEN_PROBLEM]
    else:
        choice.when = when
    if value in (None, ""):
        return choice
    pk = parse_ref(value)
    if pk is None:
        choice.errors[FIELD] = ["Enter the console id of a job of this workspace (the number on its page), or "
                                "leave it empty."]
        return choice
    upstream = access.jobs_for(user).filter(pk=pk).select_related("workspace").first()
    if upstream is None:
        choice.errors[FIELD] = [f"There is no job {pk} that you can see."]
        return choice
    if upstream.workspace_id != workspace.pk:
        choice.errors[FIELD] = [f"Job {pk} is in workspace {upstream.workspace.name}: a job can only run after a "
                                f"job of its own workspace ({workspace.name})."]
        return choice
    choice.upstream = upstream
    if WHEN_FIELD not in choice.errors and decide(upstream, choice.when) == NEVER:
        choice.errors[FIELD] = [f"Job {pk} ({upstream.display_name}) {_words(upstream)}; it will never succeed. "
                                "Choose another job, or run after it ends whatever the outcome."
                                if upstream.reason_code not in NEVER_RAN else
                                f"Job {pk} ({upstream.display_name}) {_words(upstream)}; it will never run."]
    return choice


def check_json(user, workspace: Workspace, payload: dict[str, Any]) -> Choice:
    """check() of a JSON request's run_after / run_after_when, held to the API's document: run_after an integer or
    null (not sent), run_after_when one of WHEN and only with a run_after. The form's text ("12", "#12 — name", "")
    is the wizard's: in JSON, "1" would hide a client's type error, and a condition without a job would be dropped
    unsaid."""
    value, when = payload.get(FIELD), payload.get(WHEN_FIELD)
    errors: dict[str, list[str]] = {}
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        errors[FIELD] = ["Must be an integer: a job id (the number on its page), or null for none."]
    if WHEN_FIELD in payload:
        if value is None:
            errors[WHEN_FIELD] = [f"Only with {FIELD}: send the job to run after, or leave {WHEN_FIELD} out."]
        elif not isinstance(when, str) or when not in WHEN:  # null and "" too: not in the document's enum
            errors[WHEN_FIELD] = [WHEN_PROBLEM]
    if errors:
        return Choice(errors=errors)
    return check(user, workspace, value, when)


def recent_choices(workspace: Workspace) -> list[tuple[int, str]]:
    """(id, "id — name (status)") of the workspace's newest jobs worth waiting for: active or succeeded. For a page
    whose viewer may create jobs in the workspace, so may see all of them."""
    rows = (Job.objects.filter(workspace=workspace).exclude(status__in=st.TERMINAL - {"Succeeded"})
            .order_by("-created_at", "-id").values_list("pk", "display_name", "status")[:CHOICES_SHOWN])
    return [(pk, f"{pk} — {name} ({st.label(status)})") for pk, name, status in rows]


# --- creation ---------------------------------------------------------------------------------------------


def initial_status(upstream: Job | None, when: str) -> str:
    """The status a new job starts with, read under a lock on the upstream row (in the caller's transaction): a
    sync that ends the upstream meanwhile either committed before (we see its end) or waits for us (its release
    then sees our Waiting row). NEVER (the upstream ended badly since the form was checked) starts Waiting too,
    and the caller releases it at once (skipped)."""
    if upstream is None:
        return st.SUBMITTING
    locked = Job.objects.select_for_update().filter(pk=upstream.pk).only("id", "status", "reason_code").first()
    return st.SUBMITTING if decide(locked, when) == GO else st.WAITING


# --- release ----------------------------------------------------------------------------------------------


@dataclass
class Released:
    submitted: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)  # not submitted: release_refusal

    def __bool__(self) -> bool:
        return bool(self.submitted or self.skipped or self.refused)


_UPSTREAM_FIELDS = ("run_after__id", "run_after__status", "run_after__reason_code", "run_after__display_name")
_FIELDS = ("id", "workspace_id", "owner_id", "display_name", "status", "run_after_id", "run_after_when")


def release(upstream_ids: Iterable[int]) -> Released:
    """Decide the Waiting dependents of these jobs (those of them that ended): submit, skip (and on down the chain),
    or leave waiting. Idempotent, and safe concurrently: a row changes only while it is still Waiting."""
    done = Released()
    pending = list(dict.fromkeys(upstream_ids))
    while pending:
        chunk, pending = pending[:CHUNK], pending[CHUNK:]
        # Read whole before any row is written (no cursor left open across the writes). No cycles to guard
        # against: an upstream exists before its dependent, so each chain ends.
        waiting = list(Job.objects.filter(run_after_id__in=chunk, status=st.WAITING).select_related("run_after")
                       .only(*_FIELDS, *_UPSTREAM_FIELDS).order_by("pk"))
        for job in waiting:
            if _settle(job, job.run_after, done):
                pending.append(job.pk)
    return done


def _settle(job: Job, upstream: Job | None, done: Released) -> bool:
    """Release one Waiting job by its upstream's state; True when it ended unsent (its dependents are next)."""
    verdict = decide(upstream, job.run_after_when)
    if verdict == GO:
        if why := release_refusal(job):
            if _refuse(job, upstream, why):
                done.refused.append(job.pk)
                return True
        elif _start(job):
            done.submitted.append(job.pk)
    elif verdict == NEVER and _skip(job, upstream):
        done.skipped.append(job.pk)
        return True
    return False


def release_refusal(job: Job) -> str:
    """Why a Waiting job whose condition now holds may not be submitted ("": it may). It was checked when it was
    made, but may wait for hours: its owner may since have been removed from the workspace or made a viewer, or
    the workspace's budget spent. A create would be refused then, and so is this job, as a schedule's run is."""
    from jobs import costs
    from jobs.schedules import owner_refusal

    owner = get_user_model().objects.filter(pk=job.owner_id).first() if job.owner_id else None
    workspace = Workspace.objects.get(pk=job.workspace_id)
    if owner is None:
        return "The job's owner no longer has an account."
    return owner_refusal(owner, workspace) or costs.refusal(workspace) or ""


def _refuse(job: Job, upstream: Job, why: str) -> bool:
    from jobs import lifecycle

    message = f"Not submitted when upstream job {upstream.pk} ({upstream.display_name}) ended: {why}"
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=st.WAITING).update(
                status=st.SUBMIT_FAILED, submit_error={"Code": NOT_RELEASED, "Message": message},
                sealed_secrets="", finished_at=timezone.now()):
            return False  # released (or stopped) by someone else meanwhile
        workspace = Workspace.objects.get(pk=job.workspace_id)
        audit.record(None, "stopped", workspace=workspace, job=job, result="refused, never submitted",
                     upstream=upstream.pk, reason=why)
        lifecycle.enqueue_notify(job.workspace_id, [job.pk])
    return True


def _start(job: Job) -> bool:
    from jobs import lifecycle

    now = timezone.now()
    with transaction.atomic():
        # submit_next_attempt_at: its first attempt is due now (the job page says so, not "waiting since created").
        if not Job.objects.filter(pk=job.pk, status=st.WAITING).update(status=st.SUBMITTING,
                                                                       submit_next_attempt_at=now):
            return False  # released (or stopped) by someone else meanwhile
        transaction.on_commit(lambda: lifecycle.enqueue_submit(job.pk))
    return True


def _skip(job: Job, upstream: Job | None) -> bool:
    from jobs import lifecycle

    message = never_message(upstream)
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=st.WAITING).update(
                status="Stopped", reason_code=SKIPPED, reason_message=message, sealed_secrets="",
                finished_at=timezone.now()):
            return False
        workspace = Workspace.objects.get(pk=job.workspace_id)
        audit.record(None, "stopped", workspace=workspace, job=job, result="skipped, never submitted",
                     upstream=upstream.pk if upstream else None,
                     upstream_status=upstream.status if upstream else "deleted")
        lifecycle.enqueue_notify(job.workspace_id, [job.pk])
    return True


def after_ended(workspace_id: int, ended: list[int]) -> Released:
    """The sync's hook, for the ids of the workspace's jobs that just ended. One query on the (workspace, status)
    index whatever the number of ends: Waiting jobs are few, and most cycles find none at all."""
    if not ended:
        return Released()
    waiting_on = set(Job.objects.filter(workspace_id=workspace_id, status=st.WAITING).order_by()
                     .values_list("run_after_id", flat=True))
    upstream = [pk for pk in ended if pk in waiting_on]
    return release(upstream) if upstream else Released()


def release_owed() -> Released:
    """The beat sweep's safety net: Waiting jobs whose upstream has ended (a hook was missed) or was deleted."""
    done = Released()
    owed = list(Job.objects.filter(status=st.WAITING)
                .filter(Q(run_after__isnull=True) | Q(run_after__status__in=st.TERMINAL))
                .select_related("run_after").only(*_FIELDS, *_UPSTREAM_FIELDS).order_by("pk")[:500])
    ended = [job.pk for job in owed if _settle(job, job.run_after, done)]
    if ended:
        more = release(ended)
        done.submitted += more.submitted
        done.skipped += more.skipped
        done.refused += more.refused
    return done


def cancelled(job_id: int) -> None:
    """A job ended without DLC (submit failed for good, or stopped before it was sent): its dependents next, once
    that end is committed. A dependent created meanwhile locked this row first (initial_status), so it is either
    seen here or sees the end itself."""
    if Job.objects.filter(run_after_id=job_id, status=st.WAITING).exists():
        transaction.on_commit(lambda: _release_quietly([job_id]))


def _release_quietly(job_ids: list[int]) -> None:
    # After the end is committed, so the release reads it; a failure here is left to the sweep's safety net.
    try:
        release(job_ids)
    except Exception:  # noqa: BLE001
        log.exception("release of the dependents of %s failed; the sweep will", job_ids)


# --- the job page ------------------------------------------------------------------------------------------


@dataclass
class PageFacts:
    upstream: Job | None  # visible to the viewer; None when none, deleted, or out of sight
    waiting_text: str  # "to succeed" / "to end", for a Waiting job
    dependents: list[Job]
    when_label: str = ""  # WHEN's label of the job's own condition


def page_facts(job: Job, user) -> PageFacts:
    """What the job page says about the job's dependencies: two small queries, only when it has any."""
    visible = access.jobs_for(user)
    upstream = None
    if job.run_after_id:
        upstream = (visible.filter(pk=job.run_after_id)
                    .only("id", "display_name", "status", "reason_code", "finished_at").first())
    dependents = list(visible.filter(run_after=job).only("id", "display_name", "status", "run_after_when")
                      .order_by("pk")[:50])
    text = "to succeed" if job.run_after_when == SUCCEEDED else "to end"
    return PageFacts(upstream, text, dependents, WHEN.get(job.run_after_when, ""))
