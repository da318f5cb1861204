"""jobs.jobpage's pure parts, on unsaved Job rows (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jobs import dependencies, jobpage
from jobs import status as st
from jobs.models import Job

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def steps(job: Job, released_at: datetime | None = None) -> list[tuple]:
    return [(s.status, s.start, s.end) for s in jobpage.timeline(job, released_at)]


def test_a_job_stopped_before_it_was_sent_has_a_closed_wait_then_its_stop():
    job = Job(status="Stopped", reason_code=dependencies.CANCELLED, reason_message="Stopped before it was submitted.",
              created_at=T0, finished_at=T0 + timedelta(minutes=3))
    assert steps(job) == [(st.SUBMITTING, T0, T0 + timedelta(minutes=3)),
                          ("Stopped", T0 + timedelta(minutes=3), T0 + timedelta(minutes=3))]


def test_a_job_stopped_while_it_waited_for_its_upstream_shows_that_wait():
    job = Job(status="Stopped", reason_code=dependencies.CANCELLED, created_at=T0, run_after_id=7,
              finished_at=T0 + timedelta(minutes=1))
    assert steps(job) == [(st.WAITING, T0, T0 + timedelta(minutes=1)),
                          ("Stopped", T0 + timedelta(minutes=1), T0 + timedelta(minutes=1))]
    # Released when its upstream ended, then stopped before the worker sent it.
    released = T0 + timedelta(seconds=30)
    assert steps(job, released) == [(st.WAITING, T0, released), (st.SUBMITTING, released, T0 + timedelta(minutes=1)),
                                    ("Stopped", T0 + timedelta(minutes=1), T0 + timedelta(minutes=1))]


def test_a_refused_job_ends_its_wait_at_the_refusal():
    job = Job(status=st.SUBMIT_FAILED, submit_error={"Code": "InvalidParameter"}, created_at=T0,
              finished_at=T0 + timedelta(seconds=4))
    assert [(s.status, s.end, s.reason) for s in jobpage.timeline(job)] == [
        (st.SUBMITTING, T0 + timedelta(seconds=4), ""),
        (st.SUBMIT_FAILED, T0 + timedelta(seconds=4), "InvalidParameter")]


def test_a_job_dlc_knows_keeps_its_history_and_an_open_last_step():
    job = Job(status="Running", created_at=T0, submitted_at=T0 + timedelta(seconds=2),
              status_history=[{"Status": "Queuing", "StartTime": "2026-12-01T08:00:05Z"},
                              {"Status": "Running", "StartTime": "2026-12-01T08:01:00Z"}])
    assert steps(job) == [(st.SUBMITTING, T0, T0 + timedelta(seconds=2)),
                          ("Queuing", T0 + timedelta(seconds=5), T0 + timedelta(minutes=1)),
                          ("Running", T0 + timedelta(minutes=1), None)]


def test_event_times_are_split_off_and_shown_in_the_consoles_zone():
    from django.template.loader import render_to_string
    from django.utils import timezone

    lines = ["2026-12-01T01:59:05Z [Normal] Created: Job dlc1 created", "no time here",
             "2026-02-30T01:00:00Z [Warning] impossible date"]
    parsed = jobpage.events(lines)
    assert parsed[0] == jobpage.Event(datetime(2026, 12, 1, 1, 59, 5, tzinfo=UTC), "[Normal] Created: Job dlc1 created")
    assert parsed[1:] == [jobpage.Event(None, "no time here"), jobpage.Event(None, lines[2])]
    job = Job(pk=3, status="Succeeded", dlc_job_id="dlc1")
    with timezone.override("Asia/Shanghai"):
        html = render_to_string("jobs/_events.html", {"job": job, "events": parsed})
    assert '<time datetime="2026-12-01T09:59:05+08:00">2026-12-01 09:59:05</time> [Normal] Created' in html
    assert "01:59:05" not in html and "<li>no time here</li>" in html
