"""Per-user email notifications: a mail to a job's owner when their job ends, for the outcomes they opted in to.

Plain functions; jobs.tasks.email_job is the thin Celery task over deliver(). A job's end makes at most one
EmailDelivery per owner (its unique key), made with the end itself (lifecycle._enqueue_notify calls owed()) so a
task lost with the broker is swept like a webhook's; it is tried until sent or out of attempts, never twice.

Two kinds of end are not news of their own: a job skipped because the job it ran after did not succeed
(dependencies.SKIPPED: that job's own end is the news), and a sweep's trial. A sweep is mailed once, when its
last trial ends: one summary, its delivery keyed on the sweep's first trial's job (the same row whichever end
is seen last, so two syncs seeing the sweep finish make one mail), its status the sweep's outcome for the
opt-ins: Failed if any trial failed, else Succeeded if any succeeded, else Stopped.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends import filebased
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from jobs import access, audit, dependencies, diagnosis, dlc, logarchive, logmask
from jobs import status as st
from jobs.models import AuditEvent, Job, PodLog
from jobs.notify import SWEEP_WINDOW, Answer, job_url, next_try_in, overdue_jobs
from jobs.notify_models import EmailDelivery, NotificationPrefs, is_idle
from jobs.sweep_models import Sweep, SweepTrial

log = logging.getLogger(__name__)

# Which opt-in covers which end. A job DLC refused (SubmitFailed) failed as far as its owner is concerned.
PREF_OF_STATUS = {
    "Failed": "email_on_failure",
    st.SUBMIT_FAILED: "email_on_failure",
    "Succeeded": "email_on_success",
    "Stopped": "email_on_stop",
}
PREF_FIELDS = ("email_on_failure", "email_on_success", "email_on_stop", "email_on_idle", "email_on_budget")
BUDGET_PREF = "email_on_budget"  # a budget alert of a workspace the user administers (jobs.budget_alerts)
IDLE_PREF = "email_on_idle"  # an idle spell's mail (status "Idle:<start>", jobs.idle): the job is still running
SUBJECT_VERBS = {
    "Failed": "failed",
    st.SUBMIT_FAILED: "failed: DLC refused it",
    "Succeeded": "succeeded",
    "Stopped": "was stopped",
}
ATTEMPTS = 5
RETRY_BASE_SECONDS = 30.0  # then 2 min, 8 min, 32 min: an SMTP server down for a while still gets the mail
# A try holds its delivery this long ahead (the claim): longer than an SMTP exchange can take.
CLAIM = timedelta(seconds=60)
EARLY = timedelta(milliseconds=200)  # Celery's countdown may fire a hair before the time on the row
LOG_LINES = 20
LOG_LINE_CHARS = 500
# A failed job's pod logs are archived DLC_ARCHIVE_DELAY after its end: its mail waits for them, polling, up to
# this long past the end (then goes without the log's tail).
LOG_POLL_SECONDS = 2.0
LOG_WAIT_EXTRA = timedelta(seconds=60)


# -- configuration ---------------------------------------------------------------------------------------


def mode() -> str:
    """"smtp", "files" (the embedded setup's mail directory) or "off" (no EMAIL_HOST in production)."""
    backend = settings.EMAIL_BACKEND
    if backend.endswith("dummy.EmailBackend"):
        return "off"
    if backend.endswith("filebased.EmailBackend"):
        return "files"
    return "smtp"


def configured() -> bool:
    return mode() != "off"


class MailFiles(filebased.EmailBackend):
    """Django's file backend with one file per mail. Django's names a connection's file by the second and the
    backend object's id(), and appends: a backend allocated where the last one was freed, in the same second,
    appended its mail to the last one's file (seen under make run), and several mails over one connection share
    a file. Here each mail gets a file of its own, under a random name."""

    def send_messages(self, email_messages: Any) -> int:
        sent = 0
        for mail in email_messages:
            self.close()
            self._fname = None
            sent += super().send_messages([mail])
        self.close()
        return sent

    def _get_filename(self) -> str:
        if self._fname is None:
            self._fname = os.path.join(self.file_path, f"{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex}.log")
        return self._fname


def mail_connection() -> Any:
    """The connection a mail goes out over: EMAIL_BACKEND's, but a file of its own per mail in "files" mode."""
    return get_connection(f"{MailFiles.__module__}.MailFiles" if mode() == "files" else None)


def error_text(err: BaseException) -> str:
    """An SMTP failure as shown on the page and kept on the delivery: one line, the password masked."""
    text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    password = settings.EMAIL_HOST_PASSWORD
    if password:
        text = text.replace(password, "***")
    return dlc.redact(" ".join(text.split()))[:300]


# -- preferences -----------------------------------------------------------------------------------------


def prefs_for(user) -> NotificationPrefs:
    """The user's preferences; unsaved, all off, for a user who never saved any."""
    return NotificationPrefs.objects.filter(user=user).first() or NotificationPrefs(user=user)


def _summary(user, prefs: NotificationPrefs) -> dict[str, Any]:
    return {"email": user.email, **{name: getattr(prefs, name) for name in PREF_FIELDS}}


def save_prefs(user, email: str, choices: dict[str, bool]) -> dict[str, dict[str, Any]]:
    """Store the user's address and opt-ins; the changes, audited (like API token events) in each of the user's
    workspaces, the audit log being per workspace. The address itself stays out of the audit: it is personal, and
    the workspace's admins need to know only that it changed (where its budget mails go), not what it is."""
    prefs = prefs_for(user)
    before = _summary(user, prefs)
    with transaction.atomic():
        if user.email != email:
            user.email = email
            user.save(update_fields=["email"])
        for name in PREF_FIELDS:
            setattr(prefs, name, bool(choices.get(name)))
        prefs.save()
        changed = audit.changes(before, _summary(user, prefs))
        if changed:
            for workspace in access.workspaces_for(user):
                audit.record(user, AuditEvent.CHANGED, workspace=workspace, event="email-notifications-changed",
                             changes=_without_address(changed))
    return changed


def _without_address(changed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if "email" not in changed:
        return changed
    was, now = changed["email"]["from"], changed["email"]["to"]
    said = ("changed" if was else "set") if now else "none"
    return {**changed, "email": {"from": "set" if was else "none", "to": said}}


# -- what is sent ----------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def sweep_of(job: Job) -> Sweep | None:
    """The sweep the job is a trial of, or None."""
    trial = SweepTrial.objects.filter(job=job).select_related("sweep").first()
    return trial.sweep if trial else None


def sweep_outcome(statuses: list[str]) -> str:
    """The status a finished sweep is mailed under (which opt-in covers it): Failed if any trial failed (or DLC
    refused it), else Succeeded if any succeeded, else Stopped."""
    if any(PREF_OF_STATUS.get(s) == "email_on_failure" for s in statuses):
        return "Failed"
    return "Succeeded" if "Succeeded" in statuses else "Stopped"


def _sweep_counts(trials: list[SweepTrial]) -> str:
    counts: dict[str, int] = {}
    for trial in trials:
        word = {st.SUBMIT_FAILED: "failed"}.get(trial.job.status, trial.job.status.lower())
        counts[word] = counts.get(word, 0) + 1
    order = ["succeeded", "failed", "stopped"]
    words = sorted(counts, key=lambda w: (order.index(w) if w in order else len(order), w))
    return ", ".join(f"{counts[w]} {w}" for w in words)


def sweep_subject(sweep: Sweep, trials: list[SweepTrial]) -> str:
    return f"[DLC Console] sweep {_one_line(sweep.name)[:200]} finished: {_sweep_counts(trials)}"


def sweep_body(sweep: Sweep, trials: list[SweepTrial]) -> str:
    """The summary of a finished sweep: counts per status, its page, the failed trials by name. Like a job's mail,
    nothing of the trials' specs or environments."""
    failed = [t for t in trials if PREF_OF_STATUS.get(t.job.status) == "email_on_failure"]
    lines = [
        f"Your sweep {_one_line(sweep.name)} finished: {_sweep_counts(trials)}.",
        "",
        f"Sweep:      {_one_line(sweep.name)} ({len(trials)} trials)",
        f"Workspace:  {sweep.workspace.name}",
        f"Sweep page: {settings.DLC_BASE_URL}{sweep.get_absolute_url()}",
    ]
    if failed:
        lines += ["", "Failed trials:", *[f"  {_one_line(t.job.display_name)} ({t.values_text}): "
                                          f"{job_url(t.job)}" for t in failed]]
    lines += ["", "--", "You get this mail because you asked for it. Change what you get at",
              settings.DLC_BASE_URL + reverse("email_notifications")]
    return "\n".join(lines) + "\n"


def _trials(sweep: Sweep) -> list[SweepTrial]:
    return list(SweepTrial.objects.filter(sweep=sweep).select_related("job").order_by("number"))


def subject(job: Job, status: str) -> str:
    # One line whatever the name holds: a header with a line break is refused (BadHeaderError).
    return f"[DLC Console] {_one_line(job.display_name)[:200]} {SUBJECT_VERBS.get(status, status.lower())}"


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return f"{timezone.localtime(value):%Y-%m-%d %H:%M:%S} ({settings.TIME_ZONE})"


def _duration(job: Job) -> str:
    if not (job.started_at and job.finished_at):
        return "did not run"
    seconds = max(0, int((job.finished_at - job.started_at).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h {rest // 60:02d}m {rest % 60:02d}s" if hours else f"{rest // 60}m {rest % 60:02d}s"


def _reason(job: Job, status: str) -> str:
    if status == st.SUBMIT_FAILED:
        error = job.submit_error if isinstance(job.submit_error, dict) else {}
        code, message = error.get("Code") or "", error.get("Message") or ""
    else:
        code, message = job.reason_code, job.reason_message
        from jobs.jobpage import console_stop_reason

        # The console stopped it (idle policy, early stopping): DLC's own reason only says "by the user".
        own = (console_stop_reason(job) or _stopped_by(job)) if status == "Stopped" else ""
        if own:
            return f"{_one_line(own)}{f' (DLC: {code})' if code else ''}"
    text = ": ".join(part for part in (str(code), dlc.redact(_one_line(message))[:1000]) if part)
    return text or "-"


def _stopped_by(job: Job) -> str:
    """Who stopped the job in the console ("Stopped in the console by <user>", from the audit log's latest stop
    by a user): DLC only knows its caller, the console, and says "by the user". "" when no user here stopped it."""
    if not job.stop_requested_at:
        return ""
    name = (AuditEvent.objects.filter(job=job, action=AuditEvent.STOPPED, actor__isnull=False)
            .order_by("-created_at", "-id").values_list("actor_name", flat=True).first())
    return f"Stopped in the console by {name}" if name else ""


def log_tail(job: Job, count: int = LOG_LINES) -> tuple[str, list[str]] | None:
    """(pod id, its last `count` lines) of the job's first failed pod whose log the console archived; else of its
    first archived pod; None when none is archived. Masked as the job page masks them (jobs.logmask, one rule for
    the page, search, download and this mail), shown as a terminal would (plain text: no escape codes).

    Not dlc.redact, which is for error texts: the page shows the log without it, so the mail would hide nothing
    its reader cannot see there, and it would mangle lines the page shows (`"HF_TOKEN": ***`, quotes lost)."""
    archived = set(PodLog.objects.filter(job=job).values_list("pod_id", flat=True))
    if not archived:
        return None
    pods = [p for p in (job.pods or []) if isinstance(p, dict) and p.get("PodId") in archived]
    failed = [p for p in pods if p.get("Status") == "Failed"]
    pod_id = (failed or pods or [{"PodId": sorted(archived)[0]}])[0]["PodId"]
    lines = logarchive.read(job, pod_id) or []
    while lines and not lines[-1].strip():
        lines.pop()
    return pod_id, [logmask.shown(line)[:LOG_LINE_CHARS] for line in logmask.mask(lines[-count:], job.secret_marks)]


def _likely_cause(job: Job, status: str) -> list[str]:
    """The one "Likely cause" line of a failure's mail (jobs.diagnosis, as the job page says it), or none."""
    found = diagnosis.for_job(job) if status in diagnosis.DIAGNOSED else None
    return [f"Likely cause: {_one_line(found.summary)}"] if found is not None else []


def body(job: Job, status: str) -> str:
    """The mail's plain text. Only what the job page shows of the job's end: never its spec, environment
    variables (secret or not) or anything sealed."""
    lines = [
        f"Your job {_one_line(job.display_name)} {SUBJECT_VERBS.get(status, status.lower())}.",
        "",
        f"Job:        {_one_line(job.display_name)} (#{job.pk}{', DLC ' + job.dlc_job_id if job.dlc_job_id else ''})",
        f"Workspace:  {job.workspace.name}",
        f"Status:     {st.label(status)}",
        f"Reason:     {_reason(job, status)}",
        *_likely_cause(job, status),
        f"Created:    {_when(job.created_at)}",
        f"Started:    {_when(job.started_at)}",
        f"Finished:   {_when(job.finished_at)}",
        f"Duration:   {_duration(job)}",
        f"Job page:   {job_url(job)}",
    ]
    tail = log_tail(job) if status == "Failed" else None
    if tail:
        pod_id, pod_lines = tail
        lines += ["", f"Last {len(pod_lines)} lines of the log of pod {pod_id}:", "", *[f"  {x}" for x in pod_lines]]
    lines += ["", "--", "You get this mail because you asked for it. Change what you get at",
              settings.DLC_BASE_URL + reverse("email_notifications")]
    return "\n".join(lines) + "\n"


def message(job: Job, status: str, to: str) -> EmailMessage:
    """The mail of a delivery: a job's end, or (a delivery keyed on a sweep's trial) the sweep's summary."""
    if is_idle(status):
        return EmailMessage(subject=f"[DLC Console] {_one_line(job.display_name)[:200]} is idle",
                            body=idle_body(job), to=[to])
    sweep = sweep_of(job)
    if sweep is not None:
        trials = _trials(sweep)
        return EmailMessage(subject=sweep_subject(sweep, trials), body=sweep_body(sweep, trials), to=[to])
    return EmailMessage(subject=subject(job, status), body=body(job, status), to=[to])


def idle_body(job: Job) -> str:
    """An idle spell's mail: what was measured, and when the policy will stop the job (if it will)."""
    from jobs import idle

    detail = job.idle_detail or {}
    stop = idle.stops_at(job, idle.policy_of(job))
    lines = [
        f"Your job {_one_line(job.display_name)} is running but idle: {detail.get('text', '')} over the last "
        f"{detail.get('window_minutes', 0):g} min (under {detail.get('threshold_percent', 0):g}%).",
        "",
        f"Job:        {_one_line(job.display_name)} (#{job.pk}{', DLC ' + job.dlc_job_id if job.dlc_job_id else ''})",
        f"Workspace:  {job.workspace.name}",
        f"Idle since: {_when(job.idle_since)}",
        f"Stops at:   {_when(stop) if stop else 'never: the workspace policy does not stop idle jobs'}",
        f"Job page:   {job_url(job)}",
        "", "--", "You get this mail because you asked for it. Change what you get at",
        settings.DLC_BASE_URL + reverse("email_notifications"),
    ]
    return "\n".join(lines) + "\n"


def send_test(user) -> Answer:
    """The settings page's "Send a test email": sent now, to the user's saved address; never raises."""
    if not configured():
        return Answer(False, None, "Email is not configured on this console.")
    if not user.email:
        return Answer(False, None, "Save your email address first.")
    mail = EmailMessage(
        subject="[DLC Console] Test email",
        body=f"This is a test from the DLC Console at {settings.DLC_BASE_URL}: email notifications reach you.\n",
        to=[user.email],
        connection=mail_connection(),
    )
    try:
        mail.send(fail_silently=False)
    except Exception as err:  # noqa: BLE001 - whatever the mail server (or smtplib) raises is shown, never a 500
        return Answer(False, None, error_text(err))
    return Answer(True, None, "")


# -- deliveries ------------------------------------------------------------------------------------------


def owed(job_ids: list[int], found: list[int] | None = None) -> list[int]:
    """The jobs among these ends whose owner opted in for that end and has an address: their deliveries are made
    now, with the end. `found`: ends the import found, news only for rows the console submitted.

    One query (primary key, then the owner's row and their preferences' unique user key) for a whole sync
    batch, and a write only when someone opted in.
    """
    if not (job_ids or found) or not configured():
        return []
    wanted = Q()
    for status, pref in PREF_OF_STATUS.items():
        wanted |= Q(status=status, **{f"owner__notification_prefs__{pref}": True})
    ended = Q(pk__in=job_ids)
    if found:
        ended |= Q(pk__in=found, imported=False)
    # A trial's own end is no mail, but it may finish its sweep: trials are picked whatever their status.
    found_jobs = (Job.objects.filter(ended, wanted | Q(sweep_trial__isnull=False), owner__email__gt="")
                  .exclude(reason_code=dependencies.SKIPPED, sweep_trial__isnull=True).order_by())
    rows = []
    sweep_ids = set()
    for pk, owner, status, sweep_id in found_jobs.values_list("pk", "owner_id", "status", "sweep_trial__sweep_id"):
        if sweep_id is None:
            rows.append((pk, owner, status))
        else:
            sweep_ids.add(sweep_id)
    if sweep_ids:
        rows += _sweeps_finished(sweep_ids)
    if not rows:
        return []
    now = timezone.now()
    EmailDelivery.objects.bulk_create(
        [EmailDelivery(job_id=pk, user_id=owner, status=status, next_attempt_at=now) for pk, owner, status in rows],
        ignore_conflicts=True,  # this end (or an earlier one of the job) was mailed already: never twice
    )
    return [pk for pk, _, _ in rows]


def idle_owed(job: Job, status: str) -> bool:
    """An idle spell's mail to the job's owner, made once for the spell (its unique key), if they opted in and
    have an address; True when one is owed now (the caller enqueues the job's email task)."""
    owner = job.owner
    if owner is None or not owner.email or not configured() or not getattr(prefs_for(owner), IDLE_PREF):
        return False
    EmailDelivery.objects.bulk_create([EmailDelivery(job=job, user=owner, status=status,
                                                     next_attempt_at=timezone.now())], ignore_conflicts=True)
    return EmailDelivery.objects.filter(job=job, user=owner, status=status, sent_at__isnull=True,
                                        next_attempt_at__isnull=False).exists()


@dataclass(frozen=True)
class SweepEnd:
    """A sweep whose trials have all ended: its one summary (mail, webhook) is keyed on `first_job_id`, the same
    row whichever trial's end is seen last, so two syncs seeing the sweep finish make one."""

    sweep_id: int
    first_job_id: int
    owner_id: int | None
    statuses: list[str]


def finished_sweeps(sweep_ids: set[int]) -> list[SweepEnd]:
    """Those of these sweeps whose last trial has ended (every trial in a terminal status); one query. Shared by
    the mails and the webhooks (jobs.notify): one rule for "the sweep ended"."""
    by_sweep: dict[int, list[tuple[int, int, int | None, str]]] = {}
    for sweep_id, number, job_id, owner, status in (
            SweepTrial.objects.filter(sweep_id__in=sweep_ids).order_by()
            .values_list("sweep_id", "number", "job_id", "job__owner_id", "job__status")):
        by_sweep.setdefault(sweep_id, []).append((number, job_id, owner, status))
    ended = []
    for sweep_id, trials in by_sweep.items():
        statuses = [status for _, _, _, status in trials]
        if all(status in st.TERMINAL for status in statuses):
            _, job_id, owner, _ = min(trials)
            ended.append(SweepEnd(sweep_id, job_id, owner, statuses))
    return ended


def _sweeps_finished(sweep_ids: set[int]) -> list[tuple[int, int, str]]:
    """(first trial's job, owner, outcome) of those sweeps whose trials have all ended, for an owner who opted in
    to that outcome."""
    finished = [(end.first_job_id, end.owner_id, sweep_outcome(end.statuses)) for end in finished_sweeps(sweep_ids)]
    owners = {owner for _, owner, _ in finished if owner is not None}
    prefs = {p.user_id: p for p in NotificationPrefs.objects.filter(user_id__in=owners, user__email__gt="")}
    return [(job_id, owner, outcome) for job_id, owner, outcome in finished
            if owner in prefs and getattr(prefs[owner], PREF_OF_STATUS[outcome])]


def stopped_by_owner(job: Job, user_id: int) -> bool:
    """Whether the job's stop was the owner's own (the audit log's latest stop of it), which needs no mail."""
    if not job.stop_requested_at:
        return False  # DLC (or someone outside the console) stopped it
    actor = (AuditEvent.objects.filter(job=job, action=AuditEvent.STOPPED).order_by("-created_at", "-id")
             .values_list("actor_id", flat=True).first())
    return actor == user_id


def _logs_pending(job: Job, now: datetime) -> bool:
    if job.logs_archived_at or not job.dlc_job_id or not job.pods or not job.finished_at:
        return False
    return now - job.finished_at < timedelta(seconds=settings.DLC_ARCHIVE_DELAY) + LOG_WAIT_EXTRA


def _unmailable(user) -> str:
    """Why no mail can reach this user at all (job mails and budget alerts alike), or ""."""
    if not configured():
        return "email is not configured"
    if not user.is_active:
        return "the user is inactive"
    if not user.email:
        return "no address"
    return ""


def _why_not(delivery: EmailDelivery, job: Job) -> str:
    """Why an owed mail is not to be sent after all (checked when sending: the user may have changed their mind
    since the end), or ""."""
    user = delivery.user
    prefs = NotificationPrefs.objects.filter(user=user).first()
    if why := _unmailable(user):
        return why
    # Its log tail and likely cause are the workspace's: an owner removed from it since no longer reads them.
    if not access.can(user, "view", workspace=job.workspace):
        return "no longer a member of the workspace"
    pref = IDLE_PREF if is_idle(delivery.status) else PREF_OF_STATUS.get(delivery.status, "")
    if prefs is None or not getattr(prefs, pref, False):
        return "opted out"
    if is_idle(delivery.status):
        return "" if job.is_active and job.idle_since is not None else "no longer idle"
    sweep = sweep_of(job)
    if sweep is not None:
        stopped = [t.job for t in _trials(sweep) if t.job.status == "Stopped"]
        if delivery.status == "Stopped" and all(stopped_by_owner(j, user.pk) for j in stopped):
            return "stopped by its owner"
        return ""
    if job.reason_code == dependencies.SKIPPED:
        return "skipped: the job it ran after did not succeed"
    if delivery.status == "Stopped" and stopped_by_owner(job, user.pk):
        return "stopped by its owner"
    return ""


def retry_wait(attempts: int) -> float:
    return RETRY_BASE_SECONDS * 4 ** max(0, attempts - 1)


def attempt(delivery: EmailDelivery, job: Job) -> str:
    """One try of a delivery that is due: "sent", "retry", "failed" (out of attempts), "closed" (not to be sent
    after all), "waiting" (for the failed job's log archive) or "skipped" (not due, done, or under way elsewhere)."""
    now = timezone.now()
    if not _claim(delivery):
        return "skipped"
    rows = EmailDelivery.objects.filter(pk=delivery.pk)
    if (job.is_active and not is_idle(delivery.status)) or (delivery.status == st.SUBMIT_FAILED and job.dlc_job_id):
        # The end was undone (a SubmitFailed job whose CreateJob had landed after all was adopted): no mail now;
        # its real end makes a delivery anew (the unique key is free again).
        rows.filter(sent_at__isnull=True).delete()
        return "skipped"
    delivery.refresh_from_db(fields=["attempts"])  # another worker may have tried since it was read
    reason = _why_not(delivery, job)
    if reason:
        rows.update(next_attempt_at=None, last_error=reason)
        return "closed"
    if delivery.status == "Failed" and _logs_pending(job, now) and not SweepTrial.objects.filter(job=job).exists():
        rows.update(next_attempt_at=now + timedelta(seconds=LOG_POLL_SECONDS))
        return "waiting"
    return _send(delivery, message(job, delivery.status, delivery.user.email))


def _send(delivery: EmailDelivery, mail: EmailMessage) -> str:
    """Send a claimed delivery's mail and record the try: "sent", "retry" or "failed" (out of attempts). The one
    sending and retry path of job mails and budget alerts."""
    rows = EmailDelivery.objects.filter(pk=delivery.pk)
    attempts = delivery.attempts + 1
    try:
        mail_connection().send_messages([mail])
    except Exception as err:  # noqa: BLE001 - any failure to send is an attempt used, retried or given up
        error = error_text(err)
        log.warning("email %s to user %s failed (attempt %s): %s", delivery, delivery.user_id, attempts, error)
        done = timezone.now()
        last = attempts >= ATTEMPTS
        rows.update(attempts=attempts, last_error=error,
                    next_attempt_at=None if last else done + timedelta(seconds=retry_wait(attempts)))
        return "failed" if last else "retry"
    rows.update(attempts=attempts, last_error="", sent_at=timezone.now(), next_attempt_at=None)
    return "sent"


def _claim(delivery: EmailDelivery) -> bool:
    """Hold a due, unsent delivery for this try (CLAIM ahead), so two workers never send it at once."""
    now = timezone.now()
    return bool(EmailDelivery.objects.filter(
        pk=delivery.pk, sent_at__isnull=True, next_attempt_at__lte=now + EARLY
    ).update(next_attempt_at=now + CLAIM))


def deliver(job_id: int) -> float | None:
    """Try the job's owed mail if due. Seconds until its next try, or None once nothing is owed. Idempotent: a
    sent (or given-up) delivery is never tried again, and a try under way elsewhere is left alone."""
    job = Job.objects.select_related("workspace").get(pk=job_id)
    owed_rows = EmailDelivery.objects.filter(job_id=job_id, sent_at__isnull=True, next_attempt_at__isnull=False)
    for delivery in owed_rows.select_related("user").order_by("pk"):
        attempt(delivery, job)
    return next_try_in(owed_rows)


def owed_jobs(older_than: timedelta) -> list[int]:
    return overdue_jobs(EmailDelivery.objects.filter(sent_at__isnull=True, job__isnull=False), older_than)


# -- budget alerts (jobs.budget_alerts makes the rows) ------------------------------------------------------


def _why_not_budget(delivery: EmailDelivery) -> str:
    """Why a budget alert's owed mail is not to be sent after all, checked when sending, or ""."""
    from jobs.models import Membership

    user = delivery.user
    if why := _unmailable(user):
        return why
    if not NotificationPrefs.objects.filter(user=user, email_on_budget=True).exists():
        return "opted out"
    if not Membership.objects.filter(user=user, workspace_id=delivery.budget_alert.workspace_id,
                                     role=Membership.ADMIN).exists():
        return "no longer an admin of the workspace"
    return ""


def attempt_budget(delivery: EmailDelivery) -> str:
    """One try of a budget alert's mail that is due; the outcomes of attempt()."""
    from jobs import budget_alerts

    if not _claim(delivery):
        return "skipped"
    delivery.refresh_from_db(fields=["attempts"])  # another worker may have tried since it was read
    reason = _why_not_budget(delivery)
    if reason:
        EmailDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None, last_error=reason)
        return "closed"
    alert = delivery.budget_alert
    mail = EmailMessage(subject=budget_alerts.subject(alert), body=budget_alerts.body(alert),
                        to=[delivery.user.email])
    return _send(delivery, mail)


def deliver_budget(alert_id: int) -> float | None:
    """Try the alert's owed mails if due. Seconds until the next try, or None once nothing is owed (idempotent,
    as deliver())."""
    owed_rows = EmailDelivery.objects.filter(budget_alert_id=alert_id, sent_at__isnull=True,
                                             next_attempt_at__isnull=False)
    for delivery in owed_rows.select_related("user", "budget_alert__workspace").order_by("pk"):
        attempt_budget(delivery)
    return next_try_in(owed_rows)


def owed_budget_alerts(older_than: timedelta) -> list[int]:
    """Budget alerts with a mail owed whose task was lost (the sweep's, as owed_jobs)."""
    now = timezone.now()
    owed = EmailDelivery.objects.filter(sent_at__isnull=True, budget_alert__isnull=False,
                                        next_attempt_at__lt=now - older_than, created_at__gt=now - SWEEP_WINDOW)
    return list(owed.order_by().values_list("budget_alert_id", flat=True).distinct()[:100])
