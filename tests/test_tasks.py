"""The Celery tasks' own logic, run in-process (Celery's eager apply re-runs a retried task on the spot): the
submit's retry budget and give-up, the sweep's choice of what is owed, the sync lease."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.test_lifecycle import (  # noqa: F401 - fixture_* register the fixtures used here by name
    fixture_backend,
    fixture_quiet_stack,
    fixture_ws,
    make_job,
    tagged,
)

pytestmark = pytest.mark.integration


def test_submit_task_retries_transient_errors_then_gives_up_and_says_why(ws, backend, settings):
    from jobs import status as st
    from jobs import tasks

    settings.DLC_SUBMIT_RETRIES = 2
    job = make_job(ws)
    backend.set_faults({"action": "CreateJob", "mode": "503"})  # until cleared
    assert tasks.submit_job.apply(args=[job.pk]).get() == "gave-up"
    job.refresh_from_db()
    assert job.status == st.SUBMIT_FAILED and job.submit_error["Code"] == "ServiceUnavailable"
    assert job.submit_error["RequestId"] and job.submit_attempts == 3
    assert backend.stats()["calls"]["CreateJob"] == 3
    assert backend.stats()["calls"]["ListJobs"] >= 2, "every re-send looked the tag up first"
    assert tagged(backend.client(), job.tag) == []


def test_submit_task_on_a_deleted_row_does_nothing(ws, backend):
    from jobs import tasks

    job = make_job(ws)
    job.delete()
    assert tasks.submit_job.apply(args=[job.pk]).get() == "gone"
    assert backend.stats()["calls"].get("CreateJob", 0) == 0


def test_sweep_picks_only_what_is_owed(ws, backend, settings):
    from jobs import dlc, lifecycle
    from jobs.models import Job

    old = timezone.now() - timedelta(minutes=10)
    age = timedelta(seconds=60)

    lost = make_job(ws)  # accepted 10 minutes ago, no attempt since: its task was lost
    fresh = make_job(ws)  # just accepted: its task is probably on its way
    retrying = make_job(ws)  # attempted a moment ago: its task is alive
    in_the_air = make_job(ws)  # an unanswered attempt that may still land
    settled = make_job(ws)  # an unanswered attempt long ago: its worker died
    Job.objects.filter(pk__in=[lost.pk, retrying.pk, in_the_air.pk, settled.pk]).update(created_at=old)
    Job.objects.filter(pk=retrying.pk).update(submit_last_attempt_at=timezone.now(), submit_attempts=1)
    window = timedelta(seconds=dlc.in_flight_window())
    Job.objects.filter(pk=in_the_air.pk).update(
        submit_last_attempt_at=old, submit_unanswered_since=timezone.now() - window / 2, submit_attempts=1)
    Job.objects.filter(pk=settled.pk).update(submit_last_attempt_at=old, submit_unanswered_since=old,
                                             submit_attempts=1)
    assert sorted(lifecycle.stuck_jobs(age)) == sorted([lost.pk, settled.pk])
    assert fresh.pk in lifecycle.stuck_jobs(timedelta(seconds=-1))  # only its age kept it out

    unsent = make_job(ws)
    sent = make_job(ws)
    refused = make_job(ws)
    for job in (unsent, sent, refused):
        Job.objects.filter(pk=job.pk).update(dlc_job_id=f"dlc-{job.pk}", status="Stopping", stop_requested_at=old)
    Job.objects.filter(pk=sent.pk).update(stop_sent_at=timezone.now())
    Job.objects.filter(pk=refused.pk).update(stop_error={"Code": "InvalidJobStatus"})
    assert lifecycle.unsent_stops(age) == [unsent.pk]

    ended = make_job(ws)
    archived = make_job(ws)
    just_ended = make_job(ws)
    for job, finished in [(ended, old), (archived, old), (just_ended, timezone.now())]:
        Job.objects.filter(pk=job.pk).update(dlc_job_id=f"dlc-{job.pk}", status="Succeeded", finished_at=finished,
                                             pods=[{"PodId": "p"}])
    Job.objects.filter(pk=archived.pk).update(logs_archived_at=timezone.now())
    assert lifecycle.unarchived_jobs(age) == [ended.pk]


def test_a_cycle_under_way_keeps_a_second_one_out(ws, backend):
    """Two workers running the beat's sync at once: the second skips the workspace without calling DLC."""
    from jobs import lifecycle
    from jobs.models import WorkspaceSync

    assert lifecycle.sync_workspace(ws) == []
    state = WorkspaceSync.objects.get(workspace=ws)
    assert state.cycles == 1 and state.lease_until is None and state.last_error == ""
    WorkspaceSync.objects.filter(pk=state.pk).update(lease_until=timezone.now() + timedelta(minutes=1))
    calls = backend.stats()["calls"].get("ListJobs", 0)
    assert lifecycle.sync_workspace(ws) is None
    assert backend.stats()["calls"].get("ListJobs", 0) == calls
    WorkspaceSync.objects.filter(pk=state.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert lifecycle.sync_workspace(ws) == []  # an expired lease (its worker died) is taken over


def test_a_long_cycle_renews_its_lease_once_half_of_it_has_passed(ws, monkeypatch):
    """The lease is short (a worker killed mid-cycle blocks its workspace only that long), so a cycle of many
    pages keeps it: renewed when half of it has passed, not on every page."""
    from jobs import lifecycle
    from jobs.models import WorkspaceSync

    monkeypatch.setattr(lifecycle, "SYNC_LEASE", timedelta(seconds=0.4))
    taken = timezone.now() + timedelta(seconds=0.4)
    state = WorkspaceSync.objects.create(workspace=ws, lease_until=taken)
    lease = lifecycle.Lease(ws)
    lease.renew()
    state.refresh_from_db()
    assert state.lease_until == taken  # too soon: no write
    time.sleep(0.25)
    lease.renew()
    state.refresh_from_db()
    assert state.lease_until > taken + timedelta(seconds=0.2)


def test_sync_records_a_failed_cycle_and_frees_the_lease(ws, backend):
    from jobs import dlc, lifecycle
    from jobs.models import WorkspaceSync

    backend.set_faults({"action": "ListJobs", "mode": "500", "count": 1})
    with pytest.raises(dlc.DLCError):
        lifecycle.sync_workspace(ws)
    state = WorkspaceSync.objects.get(workspace=ws)
    assert "InternalError" in state.last_error and state.lease_until is None
    assert lifecycle.sync_workspace(ws) == []
