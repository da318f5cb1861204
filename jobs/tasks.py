"""Celery tasks: thin, idempotent wrappers over jobs.lifecycle, safe to retry and to run twice."""

import logging
import random
from datetime import timedelta

from celery import shared_task

from jobs import dlc, lifecycle
from jobs.models import Workspace

log = logging.getLogger(__name__)


def backoff(retries: int, cap: float = 60.0) -> float:
    """Exponential backoff with full jitter, so many retrying workers do not hit DLC in step."""
    return random.uniform(0.5, min(cap, 2.0**retries))


@shared_task(bind=True, acks_late=True, max_retries=8)
def submit_job(self, job_id: int) -> str:
    try:
        return lifecycle.submit(job_id)
    except dlc.DLCError as err:
        if self.request.retries >= self.max_retries:
            lifecycle.give_up_submit(job_id, err)
            return "gave-up"
        raise self.retry(exc=err, countdown=backoff(self.request.retries)) from err


@shared_task(acks_late=True, ignore_result=True)
def sync_jobs() -> int:
    ended = 0
    for workspace in Workspace.objects.all():
        try:
            done = lifecycle.sync_workspace(workspace)
        except dlc.DLCError as err:
            log.warning("sync of workspace %s failed: %s", workspace.pk, err)
            continue
        ended += len(done)
    return ended


@shared_task(bind=True, acks_late=True, max_retries=5)
def stop_job(self, job_id: int) -> str:
    try:
        return lifecycle.stop(job_id)
    except dlc.DLCError as err:
        if err.transient and self.request.retries < self.max_retries:
            raise self.retry(exc=err, countdown=backoff(self.request.retries)) from err
        raise


@shared_task(acks_late=True, ignore_result=True)
def sweep_stuck() -> int:
    stuck = lifecycle.stuck_jobs(timedelta(seconds=60))
    for job_id in stuck:
        submit_job.delay(job_id)
    return len(stuck)
