"""Celery tasks: thin, idempotent wrappers over jobs.lifecycle, jobs.logarchive and jobs.notify, safe to retry and
to run twice. Every task acks late, so a worker killed mid-task leaves it for redelivery (and the sweep)."""

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from jobs import (
    budget_alerts,
    dependencies,
    dlc,
    early_stop,
    idempotency,
    idle,
    lifecycle,
    logarchive,
    notify,
    notify_email,
    schedules,
)
from jobs.models import Job, Workspace

log = logging.getLogger(__name__)

# Kept for callers of the old name; the policy lives in lifecycle.
backoff = lifecycle.backoff


@shared_task(bind=True, acks_late=True, max_retries=None)
def submit_job(self, job_id: int) -> str:
    try:
        return lifecycle.submit(job_id)
    except Job.DoesNotExist:
        return "gone"
    except dlc.DLCError as err:
        # Waiting for an earlier attempt to settle is not a failure and does not use up the budget.
        if err.code != lifecycle.IN_FLIGHT and self.request.retries >= settings.DLC_SUBMIT_RETRIES:
            lifecycle.give_up_submit(job_id, err)
            return "gave-up"
        raise self.retry(exc=err, countdown=lifecycle.schedule_retry(job_id, err, self.request.retries)) from err


@shared_task(acks_late=True, ignore_result=True)
def sync_jobs() -> int:
    ended = 0
    for workspace in Workspace.objects.all():
        try:
            done = lifecycle.sync_workspace(workspace)
        except dlc.DLCError:
            continue  # on its WorkspaceSync, and logged once when it started failing (jobs.syncstate)
        except Exception:
            # A bug or a database error in one workspace must not keep the others from syncing; its cycles back
            # off like any other failure's, so this traceback does not come every beat tick.
            log.exception("sync of workspace %s failed", workspace.pk)
            continue
        ended += len(done or [])
    return ended


@shared_task(bind=True, acks_late=True, max_retries=None)
def stop_job(self, job_id: int) -> str:
    try:
        return lifecycle.stop(job_id)
    except Job.DoesNotExist:
        return "gone"
    except dlc.DLCError as err:
        if self.request.retries >= settings.DLC_SUBMIT_RETRIES:
            lifecycle.stop_failed(job_id, err)
            return f"failed: {err}"
        raise self.retry(exc=err, countdown=lifecycle.retry_delay(err, self.request.retries)) from err


@shared_task(bind=True, acks_late=True, max_retries=5, ignore_result=True)
def archive_logs(self, job_id: int) -> int:
    try:
        return logarchive.archive(job_id)
    except Job.DoesNotExist:
        return 0
    except dlc.DLCError as err:
        # Out of retries: the sweep asks again later, while DLC still keeps the logs.
        raise self.retry(exc=err, countdown=lifecycle.retry_delay(err, self.request.retries)) from err


@shared_task(bind=True, acks_late=True, max_retries=None, ignore_result=True)
def notify_job(self, job_id: int) -> None:
    """A job's end to its workspace's webhooks; retried while a delivery is owed (each has its own attempt
    budget, settings.DLC_WEBHOOK_ATTEMPTS, so this ends)."""
    try:
        wait = notify.notify_job(job_id)
    except Job.DoesNotExist:
        return
    if wait is not None:
        raise self.retry(countdown=wait)


@shared_task(bind=True, acks_late=True, max_retries=None, ignore_result=True)
def email_job(self, job_id: int) -> None:
    """A job's end mailed to its owner, if they opted in; retried with backoff while the mail is owed (its attempt
    budget, notify_email.ATTEMPTS, ends that), never sent twice (its EmailDelivery)."""
    try:
        wait = notify_email.deliver(job_id)
    except Job.DoesNotExist:
        return
    if wait is not None:
        raise self.retry(countdown=wait)


@shared_task(acks_late=True, ignore_result=True)
def sweep_stuck() -> int:
    """Re-enqueue what is owed but whose task was lost: submissions, stops, log archives, webhook deliveries, mails;
    and release jobs still waiting for an upstream that has ended (jobs.dependencies: a missed hook). Also deletes
    the API's Idempotency-Keys past their 24 h (jobs.idempotency): housekeeping this periodic task already does."""
    age = timedelta(seconds=settings.DLC_SWEEP_AGE)
    idempotency.prune()
    released = dependencies.release_owed()
    owed = len(released.submitted) + len(released.skipped) + len(released.refused)
    for task, job_ids in [
        (submit_job, lifecycle.stuck_jobs(age)),
        (stop_job, lifecycle.unsent_stops(age)),
        (archive_logs, lifecycle.unarchived_jobs(age)),
        (notify_job, notify.owed_jobs(age)),
        (email_job, notify_email.owed_jobs(age)),
        (email_budget_alert, notify_email.owed_budget_alerts(age)),
        (notify_budget_alert, notify.owed_budget_alerts(age)),
    ]:
        for job_id in job_ids:
            task.delay(job_id)
        owed += len(job_ids)
    return owed


@shared_task(acks_late=True, ignore_result=True)
def run_schedules() -> int:
    """Start the jobs of due schedules. Safe to run twice or at once on two beats: each slot is one ScheduledRun
    row (unique), so a repeat finds its slot taken and starts nothing."""
    return len(schedules.run_due())


@shared_task(acks_late=True, ignore_result=True)
def stop_trials_early() -> int:
    """Median early stopping of sweeps' running trials (jobs.early_stop.check): at most DLC_EARLY_STOP_MAX_CHECKS
    trials' logs read per run. Safe to run twice or at once: each stop is claimed on its trial's row."""
    return len(early_stop.check())


@shared_task(acks_late=True, ignore_result=True)
def check_idle() -> int:
    """The idle policy's look at running jobs (jobs.idle.check): at most DLC_IDLE_MAX_CHECKS jobs' metrics read per
    run, the least recently checked first. Safe to run twice or at once: its writes are conditional, and a stop
    goes through request_stop, which stops a job once."""
    return len(idle.check())


@shared_task(acks_late=True, ignore_result=True)
def check_budgets(workspace_id: int | None = None) -> int:
    """Workspaces' spend against their monthly budgets (one, right after its jobs ended; all, from the beat): a
    threshold newly crossed is recorded once (jobs.budget_alerts) and its mails and webhook POSTs enqueued. Run
    twice, it finds the rows and tells nothing again; a lost task is the sweep's (the rows say what is owed)."""
    if workspace_id is None:
        owed = budget_alerts.check_all()
    else:
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        owed = [a.pk for a in budget_alerts.check(workspace) if a.notified] if workspace else []
    for alert_id in owed:
        email_budget_alert.delay(alert_id)
        notify_budget_alert.delay(alert_id)
    return len(owed)


@shared_task(bind=True, acks_late=True, max_retries=None, ignore_result=True)
def email_budget_alert(self, alert_id: int) -> None:
    """A budget alert mailed to the admins who opted in; retried with backoff while owed, never sent twice (its
    EmailDelivery rows, as email_job)."""
    wait = notify_email.deliver_budget(alert_id)
    if wait is not None:
        raise self.retry(countdown=wait)


@shared_task(bind=True, acks_late=True, max_retries=None, ignore_result=True)
def notify_budget_alert(self, alert_id: int) -> None:
    """A budget alert to its workspace's webhooks that asked for Budget; retried while a delivery is owed (as
    notify_job)."""
    wait = notify.notify_budget(alert_id)
    if wait is not None:
        raise self.retry(countdown=wait)
