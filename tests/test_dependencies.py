"""Job dependencies ("Run after", jobs.dependencies): a job held Waiting in the console until its upstream ends, then
submitted, or skipped (Stopped, never sent) when its condition can no longer hold, down the chain.

Unit tests on the database (release, skip, cascade, idempotency, stop, the safety net, the API's and the form's
checks); on-commit callbacks are captured, so nothing reaches a broker unless a test runs them. The wizard's box
against a real localdlc (ListEcsSpecs), the whole chain on the real stack, and concurrent releases (the stack's beat
paused: it shares the test database) are marked integration.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from jobs import dependencies, lifecycle, listing
from jobs import status as st
from jobs.models import AuditEvent, Job, Membership
from tests import portal_fixtures as pf
from tests.support import beat
from tests.support.api import Api
from tests.support.threads import all_at_once
from tests.support.waiting import wait_for
from tests.support.wizard import form_data, local_workspace

SKIPPED = dependencies.SKIPPED


@pytest.fixture
def teammate(team):
    return team.users["member"]


def waiting(team, upstream, name: str, when: str = "succeeded", **fields) -> Job:
    """A job as save_and_enqueue leaves it when its upstream is active: Waiting, never sent."""
    return pf.make_job(team.alpha, team.users["member"], name, status=st.WAITING, dlc_job_id="", pods=[],
                       run_after=upstream, run_after_when=when, **fields)


def end(job: Job, status: str) -> None:
    job.status = status
    job.save(update_fields=["status"])


def reload(*jobs: Job) -> list[Job]:
    for job in jobs:
        job.refresh_from_db()
    return list(jobs)


# --- the status -------------------------------------------------------------------------------------------


def test_waiting_is_an_active_stoppable_console_status_the_list_counts_and_filters(team):
    assert st.WAITING in st.ALL and st.is_active(st.WAITING) and st.is_stoppable(st.WAITING)
    assert (st.label(st.WAITING), st.tone(st.WAITING)) == ("Waiting for upstream job", "pending")
    held = waiting(team, team.job, "held")
    rows = Job.objects.filter(workspace=team.alpha)
    counts = listing.counts(rows)
    assert {s: (label, str(n)) for s, label, n in counts.chips()}[st.WAITING] == ("Waiting for upstream job", "1")
    assert str(counts.active) == "3"  # two Running jobs and the Waiting one
    assert list(listing.filter_status(rows, st.WAITING)) == [held]
    assert held in listing.filter_status(rows, listing.ACTIVE)


def test_a_waiting_row_of_the_list_says_which_job_it_waits_for(team, client):
    held = waiting(team, team.job, "held")
    ended = pf.make_job(team.alpha, team.users["member"], "ran-after", status="Succeeded", run_after=team.job)
    client.force_login(team.users["member"])
    html = client.get(f"/?workspace={team.alpha.pk}", follow=True).content.decode()
    row = re.search(rf'<tr id="job-{held.pk}".*?</tr>', html, re.S).group(0)
    assert f'after <a href="/jobs/{team.job.pk}">job {team.job.pk}</a>' in row
    done = re.search(rf'<tr id="job-{ended.pk}".*?</tr>', html, re.S).group(0)
    assert "after <a" not in done, "only a job still waiting says so"


# --- creating a job with an upstream (the API) ------------------------------------------------------------


def test_an_active_upstream_holds_the_new_job_waiting_and_enqueues_nothing(team, teammate,
                                                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as enqueued:
        answer = Api(teammate).post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                                  {**pf.BODY, "DisplayName": "train", "run_after": team.job.pk})
    assert answer.status_code == 201, answer.json()
    data = answer.json()
    job = Job.objects.get(pk=data["id"])
    assert (job.status, job.run_after, job.run_after_when) == (st.WAITING, team.job, "succeeded")
    assert enqueued == [], "a Waiting job is never handed to a worker"
    assert (data["status"], data["status_label"], data["run_after"], data["run_after_when"]) == (
        "Waiting", "Waiting for upstream job", team.job.pk, "succeeded")
    assert "run_after" not in job.body, "never part of the CreateJob body"
    event = AuditEvent.objects.get(job=job)
    assert event.action == "created" and event.details["run_after"] == team.job.pk


@pytest.mark.parametrize(("status", "when"), [("Succeeded", "succeeded"), ("Failed", "ended"),
                                               ("Stopped", "ended"), (st.SUBMIT_FAILED, "ended")])
def test_an_upstream_whose_condition_already_holds_submits_at_once(team, teammate, status, when,
                                                                   django_capture_on_commit_callbacks):
    end(team.job, status)
    with django_capture_on_commit_callbacks() as enqueued:
        answer = Api(teammate).post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                                  {**pf.BODY, "DisplayName": "train", "run_after": team.job.pk,
                                   "run_after_when": when})
    assert answer.status_code == 201, answer.json()
    assert Job.objects.get(pk=answer.json()["id"]).status == st.SUBMITTING
    assert len(enqueued) == 1


@pytest.mark.parametrize(("status", "words"), [("Failed", "failed"), ("Stopped", "was stopped"),
                                                (st.SUBMIT_FAILED, "could not be submitted")])
def test_an_upstream_that_ended_otherwise_is_refused_at_the_field_and_nothing_is_saved(team, teammate, status, words):
    end(team.job, status)
    before = Job.objects.count()
    answer = Api(teammate).post(f"/api/v1/jobs?workspace={team.alpha.pk}",
                              {**pf.BODY, "DisplayName": "train", "run_after": team.job.pk})
    assert answer.status_code == 400
    assert answer.json()["errors"]["run_after"] == [
        f"Job {team.job.pk} (train-a) {words}; it will never succeed. Choose another job, or run after it ends "
        "whatever the outcome."]
    assert Job.objects.count() == before


def test_an_upstream_must_be_a_visible_job_of_the_same_workspace(team, teammate):
    api = Api(teammate)
    url = f"/api/v1/jobs?workspace={team.alpha.pk}"
    invisible = api.post(url, {**pf.BODY, "run_after": team.other_job.pk}).json()["errors"]
    assert invisible == {"run_after": [f"There is no job {team.other_job.pk} that you can see."]}
    missing = api.post(url, {**pf.BODY, "run_after": 987654}).json()["errors"]
    assert missing == {"run_after": ["There is no job 987654 that you can see."]}
    # Seen, but in another workspace: said so, since the caller may see it.
    Membership.objects.create(user=teammate, workspace=team.beta, role=Membership.VIEWER)
    elsewhere = api.post(url, {**pf.BODY, "run_after": team.other_job.pk}).json()["errors"]["run_after"][0]
    assert elsewhere.startswith(f"Job {team.other_job.pk} is in workspace Beta: a job can only run after a job")
    for bad in (-3, 0):
        errors = api.post(url, {**pf.BODY, "run_after": bad}).json()["errors"]
        assert list(errors) == ["run_after"] and "console id" in errors["run_after"][0], bad
    wrong_when = api.post(url, {**pf.BODY, "run_after": team.job.pk, "run_after_when": "sometimes"}).json()
    assert wrong_when["errors"] == {"run_after_when": ["Choose one of: succeeded, ended."]}
    # Problems of the body and of run_after come in one answer; nothing was saved.
    both = api.post(url, {**pf.BODY, "JobType": "Nope", "run_after": team.other_job.pk}).json()["errors"]
    assert "run_after" in both and "JobType" in both
    assert not Job.objects.filter(display_name="train-a", owner=teammate).exclude(pk=team.job.pk).exists()


@pytest.mark.parametrize("endpoint", ["/api/v1/jobs", "/api/v1/jobs/validate"])
def test_run_after_is_held_to_the_documents_types(team, teammate, endpoint):
    """QA: run_after "1" was taken (the document says integer), and run_after_when null or without run_after was
    silently dropped. Strict as documented: run_after an integer or null (nullable: as if not sent); run_after_when
    one of its enum (not nullable), and only with a run_after."""
    api = Api(teammate)
    url = f"{endpoint}?workspace={team.alpha.pk}"
    before = Job.objects.count()
    not_integer = ["Must be an integer: a job id (the number on its page), or null for none."]
    for bad in (str(team.job.pk), "", "#1", 1.0, True, {"id": 1}, [team.job.pk]):
        answer = api.post(url, {**pf.BODY, "run_after": bad})
        assert answer.status_code == 400 and answer.json()["errors"] == {"run_after": not_integer}, bad
    alone = ["Only with run_after: send the job to run after, or leave run_after_when out."]
    for extra in ({"run_after_when": "ended"}, {"run_after_when": None},
                  {"run_after": None, "run_after_when": "ended"}):
        answer = api.post(url, {**pf.BODY, **extra})
        assert answer.status_code == 400 and answer.json()["errors"] == {"run_after_when": alone}, extra
    for when in (None, "", "Ended", 1):
        answer = api.post(url, {**pf.BODY, "run_after": team.job.pk, "run_after_when": when})
        assert answer.status_code == 400, when
        assert answer.json()["errors"] == {"run_after_when": ["Choose one of: succeeded, ended."]}, when
    assert Job.objects.count() == before, "nothing saved"
    # Null is "not sent", as the document's nullable says: a job without an upstream.
    made = api.post(url, {**pf.BODY, "run_after": None})
    assert made.status_code == (200 if endpoint.endswith("validate") else 201), made.json()
    if not endpoint.endswith("validate"):
        assert made.json()["run_after"] is None and made.json()["status"] != st.WAITING


def test_the_validate_endpoint_and_a_sweep_check_run_after_too(team, teammate):
    api = Api(teammate)
    end(team.job, "Failed")
    checked = api.post(f"/api/v1/jobs/validate?workspace={team.alpha.pk}", {**pf.BODY, "run_after": team.job.pk})
    assert checked.status_code == 400 and "will never succeed" in checked.json()["errors"]["run_after"][0]
    sweep = api.post(f"/api/v1/sweeps?workspace={team.alpha.pk}",
                     {"Job": {**pf.BODY, "run_after": team.other_job.pk}, "Parameters": {"LR": ["0.1", "0.2"]}})
    assert sweep.status_code == 400 and "Job.run_after" in sweep.json()["errors"]


def test_a_sweeps_trials_all_wait_on_the_same_upstream(team, teammate, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as enqueued:
        answer = Api(teammate).post(f"/api/v1/sweeps?workspace={team.alpha.pk}", {
            "Job": {**pf.BODY, "DisplayName": "grid", "run_after": team.job.pk},
            "Parameters": {"LR": ["0.1", "0.2"]}})
    assert answer.status_code == 201, answer.json()
    trials = Job.objects.filter(display_name__startswith="grid-")
    assert {(j.status, j.run_after_id) for j in trials} == {(st.WAITING, team.job.pk)} and trials.count() == 2
    assert enqueued == []


def test_an_upstream_that_failed_after_the_check_skips_the_new_job_at_once(team, teammate,
                                                                           django_capture_on_commit_callbacks):
    from jobs.views import save_and_enqueue

    end(team.job, "Failed")  # between the form's check and the save
    with django_capture_on_commit_callbacks() as enqueued:
        job = save_and_enqueue(workspace=team.alpha, owner=teammate, body={**pf.BODY, "DisplayName": "late"},
                               run_after=team.job)
    job.refresh_from_db()
    assert (job.status, job.reason_code, enqueued) == ("Stopped", SKIPPED, [])


def test_the_api_describes_run_after(team, teammate):
    from jobs.api_jobs import API_VERSION, openapi_document

    document = openapi_document("http://testserver")
    assert API_VERSION == "1.16.0" and document["info"]["version"] == "1.16.0"
    body = document["components"]["schemas"]["CreateJobBody"]["properties"]
    assert body["run_after_when"]["enum"] == ["succeeded", "ended"] and body["run_after"]["type"] == "integer"
    assert {"run_after", "run_after_when"} <= set(document["components"]["schemas"]["Job"]["properties"])


# --- release --------------------------------------------------------------------------------------------------


def test_an_upstream_that_succeeds_releases_its_dependents_once(team, django_capture_on_commit_callbacks):
    upstream = team.job
    train = waiting(team, upstream, "train")
    cleanup = waiting(team, upstream, "cleanup", when="ended")
    evaluate = waiting(team, train, "evaluate")
    assert not dependencies.release([upstream.pk]), "an active upstream releases nothing"
    end(upstream, "Succeeded")
    with django_capture_on_commit_callbacks() as enqueued:
        done = dependencies.release([upstream.pk])
    assert sorted(done.submitted) == sorted([train.pk, cleanup.pk]) and done.skipped == []
    assert len(enqueued) == 2
    train, cleanup, evaluate = reload(train, cleanup, evaluate)
    assert (train.status, cleanup.status, evaluate.status) == (st.SUBMITTING, st.SUBMITTING, st.WAITING)
    assert train.submit_next_attempt_at is not None, "due from its release, for the job page's note"
    with django_capture_on_commit_callbacks() as again:
        assert not dependencies.release([upstream.pk]), "run twice: nothing more"
    assert again == []


def test_a_failed_upstream_skips_succeeded_dependents_down_the_chain(team, django_capture_on_commit_callbacks):
    upstream = team.job
    train = waiting(team, upstream, "train")
    cleanup = waiting(team, upstream, "cleanup", when="ended")
    evaluate = waiting(team, train, "evaluate")
    report = waiting(team, evaluate, "report", when="ended")
    end(upstream, "Failed")
    with django_capture_on_commit_callbacks() as enqueued:
        done = dependencies.release([upstream.pk])
    assert done.submitted == [cleanup.pk] and len(enqueued) == 1
    assert done.skipped == [train.pk, evaluate.pk, report.pk]
    train, cleanup, evaluate, report = reload(train, cleanup, evaluate, report)
    assert cleanup.status == st.SUBMITTING
    for job in (train, evaluate, report):
        assert (job.status, job.reason_code, job.dlc_job_id) == ("Stopped", SKIPPED, "")
        assert job.finished_at is not None and job.sealed_secrets == ""
    assert train.reason_message == (f"Upstream job {upstream.pk} (train-a) failed; this job was never submitted.")
    # A job that never ran has no outcome to run after: "ended" below a skipped job is skipped too.
    assert evaluate.reason_message.startswith(f"Upstream job {train.pk} (train) was skipped")
    events = AuditEvent.objects.filter(job__in=[train, evaluate, report], action="stopped")
    assert events.count() == 3 and {e.actor_name for e in events} == {"system"}
    assert not dependencies.release([upstream.pk, train.pk, evaluate.pk]), "run twice: nothing more"


@pytest.mark.parametrize("change", ["removed", "made viewer", "deactivated"])
def test_a_dependent_whose_owner_may_no_longer_create_jobs_is_not_submitted_when_released(
        team, change, django_capture_on_commit_callbacks):
    """Checked when it was made, a Waiting job may wait for hours: an owner removed from the workspace (or made a
    viewer, or deactivated) since must not have it sent, as a schedule's run is not. It ends Submit failed, saying
    why; its dependents are decided as after any submit failure (another owner's "ended" one is submitted)."""
    member = team.users["member"]
    train = waiting(team, team.job, "train")
    evaluate = waiting(team, train, "evaluate")
    cleanup = pf.make_job(team.alpha, team.users["admin"], "cleanup", status=st.WAITING, dlc_job_id="", pods=[],
                          run_after=train, run_after_when="ended")
    if change == "removed":
        Membership.objects.filter(user=member, workspace=team.alpha).delete()
        said = "The owner, member, may no longer create jobs in this workspace."
    elif change == "made viewer":
        Membership.objects.filter(user=member, workspace=team.alpha).update(role=Membership.VIEWER)
        said = "The owner, member, may no longer create jobs in this workspace."
    else:
        member.is_active = False
        member.save(update_fields=["is_active"])
        said = "The owner, member, is deactivated."
    end(team.job, "Succeeded")
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        done = dependencies.release([team.job.pk])
    assert (done.refused, done.skipped, done.submitted) == ([train.pk], [evaluate.pk], [cleanup.pk])
    train, evaluate, cleanup = reload(train, evaluate, cleanup)
    assert (train.status, train.dlc_job_id, train.sealed_secrets) == (st.SUBMIT_FAILED, "", "")
    assert train.submit_error == {"Code": dependencies.NOT_RELEASED, "Message": (
        f"Not submitted when upstream job {team.job.pk} (train-a) ended: {said}")}
    assert train.finished_at is not None
    assert (evaluate.status, evaluate.reason_code) == ("Stopped", SKIPPED)
    assert cleanup.status == st.SUBMITTING
    assert len(enqueued) == 1, "the cleanup's submit, nothing for the refused job"
    event = AuditEvent.objects.get(job=train, action="stopped")
    assert event.details["result"] == "refused, never submitted" and event.details["reason"] == said
    assert not dependencies.release([team.job.pk, train.pk]), "run twice: nothing more"


def test_a_dependent_released_after_the_budget_is_spent_is_not_submitted(team, django_capture_on_commit_callbacks):
    from tests.test_costs import ran, set_prices

    train = waiting(team, team.job, "train")
    set_prices(team, monthly_budget="0", refuse_when_spent=True)
    ran(team, "spent", started=timezone.now() - timedelta(hours=1))
    end(team.job, "Succeeded")
    with django_capture_on_commit_callbacks(execute=False):
        done = dependencies.release([team.job.pk])
    assert done.refused == [train.pk] and not done.submitted
    (train,) = reload(train)
    assert train.status == st.SUBMIT_FAILED and "budget for" in train.submit_error["Message"]
    page = " ".join(pf.client_for(team.users["member"]).get(f"/jobs/{train.pk}").content.decode().split())
    assert "The console could not send this job to DLC." in page and dependencies.NOT_RELEASED in page
    assert "Once that is settled, edit it and submit it again." in page, "the likely cause's advice"


@pytest.fixture
def beat_paused(stack):
    """The session stack with its beat paused for one test. The stack shares the test database, and its sweep
    (release_owed, every few seconds) and sync hook release Waiting jobs too: behind a test's back, a dependent
    skipped by them is in none of the test's own Released (seen on PostgreSQL, about one full run in ten)."""
    with beat.paused(stack):
        yield stack


@pytest.mark.integration
def test_concurrent_releases_settle_each_dependent_once(transactional_db, beat_paused):
    team = pf.make_team()
    upstream = team.job
    held = [waiting(team, upstream, f"held-{i}") for i in range(6)]
    # ... and down the chain: each releaser that skips a held job follows it, and only that one.
    below = [waiting(team, held[i], f"below-{i}", when="ended") for i in range(3)]
    end(upstream, "Failed")  # skipped: nothing is enqueued, so no broker is involved
    results = all_at_once(lambda: dependencies.release([upstream.pk]))
    skipped = [pk for r in results for pk in r.skipped]
    expected = sorted(j.pk for j in held + below)
    stopped = set(Job.objects.filter(pk__in=expected, status="Stopped", reason_code=SKIPPED)
                  .values_list("pk", flat=True))
    events = Counter(AuditEvent.objects.filter(job__in=expected, action="stopped").values_list("job", flat=True))
    by_others = sorted(stopped - set(skipped))
    assert not by_others, (f"jobs {by_others} were skipped, but by none of the three releases: by another process on "
                           "the test database (a sweep or sync of the stack's?)")
    assert len(results) == 3 and sorted(skipped) == expected, "each exactly once"
    assert sorted(stopped) == expected and events == dict.fromkeys(expected, 1), "one skip, one audit event each"


def test_the_sync_hook_costs_one_query_when_nothing_waits(team, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert not dependencies.after_ended(team.alpha.pk, list(range(1, 5001)))
    with django_assert_num_queries(0):
        assert not dependencies.after_ended(team.alpha.pk, [])


def test_the_sync_hook_releases_the_dependents_of_jobs_that_ended(team, django_capture_on_commit_callbacks):
    train = waiting(team, team.job, "train")
    end(team.job, "Succeeded")
    with django_capture_on_commit_callbacks():
        done = dependencies.after_ended(team.alpha.pk, [team.admin_job.pk, team.job.pk])
    assert done.submitted == [train.pk]


def test_the_sweep_releases_what_a_missed_hook_left_and_skips_jobs_whose_upstream_was_deleted(
        team, django_capture_on_commit_callbacks):
    train = waiting(team, team.job, "train")
    orphan_upstream = pf.make_job(team.alpha, team.users["member"], "gone", status="Running")
    orphan = waiting(team, orphan_upstream, "orphan")
    below = waiting(team, orphan, "below", when="ended")
    still = waiting(team, team.admin_job, "still")  # its upstream still runs
    end(team.job, "Succeeded")  # ... and the hook never ran (a worker died between commit and release)
    orphan_upstream.delete()
    with django_capture_on_commit_callbacks() as enqueued:
        done = dependencies.release_owed()
    assert done.submitted == [train.pk] and len(enqueued) == 1
    assert done.skipped == [orphan.pk, below.pk]
    train, orphan, below, still = reload(train, orphan, below, still)
    assert (train.status, still.status) == (st.SUBMITTING, st.WAITING)
    assert (orphan.status, orphan.reason_code, orphan.run_after_id) == ("Stopped", SKIPPED, None)
    assert "deleted" in orphan.reason_message
    assert not dependencies.release_owed()


def test_the_beat_sweep_task_runs_the_safety_net(team, django_capture_on_commit_callbacks):
    from jobs import tasks

    orphan_upstream = pf.make_job(team.alpha, team.users["member"], "gone", status="Running")
    orphan = waiting(team, orphan_upstream, "orphan")
    orphan_upstream.delete()
    with django_capture_on_commit_callbacks():
        assert tasks.sweep_stuck() >= 1
    assert reload(orphan)[0].reason_code == SKIPPED


# --- jobs that end without DLC ----------------------------------------------------------------------------


def test_stopping_a_waiting_job_cancels_it_unsent_and_skips_its_dependents(team, teammate,
                                                                          django_capture_on_commit_callbacks):
    train = waiting(team, team.job, "train")
    evaluate = waiting(team, train, "evaluate", when="ended")
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.request_stop(teammate, train) == "stopped"
    train, evaluate = reload(train, evaluate)
    assert (train.status, train.reason_code, train.dlc_job_id) == ("Stopped", "Console.CancelledBeforeSubmit", "")
    assert train.finished_at and train.stop_requested_at
    assert (evaluate.status, evaluate.reason_code) == ("Stopped", SKIPPED)
    assert "was stopped" in evaluate.reason_message
    assert lifecycle.submit(train.pk) == "already-submitted", "a stray submit task sends nothing"


def test_bulk_and_api_stop_cancel_waiting_jobs_too(team, teammate, django_capture_on_commit_callbacks):
    first, second = waiting(team, team.job, "first"), waiting(team, team.job, "second")
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.bulk_stop(teammate, [first]) == {first.pk: "stopped"}
        answer = Api(teammate).post(f"/api/v1/jobs/{second.pk}/stop")
    assert answer.status_code == 202 and answer.json()["result"] == "stopped"
    assert [j.status for j in reload(first, second)] == ["Stopped", "Stopped"]


def test_a_submit_that_fails_for_good_skips_its_dependents(team, django_capture_on_commit_callbacks):
    from jobs import dlc

    upstream = pf.make_job(team.alpha, team.users["member"], "prep", status=st.SUBMITTING, dlc_job_id="", pods=[])
    train = waiting(team, upstream, "train")
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.give_up_submit(upstream.pk, dlc.DLCError("ServiceUnavailable", "down", transient=True))
    train = reload(train)[0]
    assert (train.status, train.reason_code) == ("Stopped", SKIPPED)
    assert "could not be submitted" in train.reason_message


def test_a_submit_task_never_sends_a_waiting_job(team):
    train = waiting(team, team.job, "train")
    assert lifecycle.submit(train.pk) == "already-submitted"
    assert train.pk not in lifecycle.stuck_jobs(older_than=__import__("datetime").timedelta(0))
    assert reload(train)[0].status == st.WAITING


# --- the job page and the clone policy ---------------------------------------------------------------------


def test_the_job_page_says_what_a_job_waits_for_and_what_waits_for_it(team, teammate):
    train = waiting(team, team.job, "train")
    skipped = waiting(team, train, "evaluate")
    web = pf.client_for()
    web.force_login(teammate)
    page = web.get(train.get_absolute_url()).content.decode()
    note = re.search(r'<div class="notice pending" id="upstream-note">.*?</div>', page, re.S).group(0)
    assert f'href="{team.job.get_absolute_url()}">train-a</a> (Running) to succeed.' in note
    assert 'hx-trigger="every 2s"' in page, "Waiting is active: the panel refreshes itself"
    assert 'id="stop-job"' in page
    upstream_page = web.get(team.job.get_absolute_url()).content.decode()
    dependents = re.search(r'<dd id="dependents">.*?</dd>', upstream_page, re.S).group(0)
    assert "train" in dependents and "Waiting for upstream job" in dependents
    assert f'?clone={team.job.pk}&amp;run_after={team.job.pk}' in upstream_page

    end(team.job, "Failed")
    dependencies.release([team.job.pk])
    page = web.get(skipped.get_absolute_url()).content.decode()
    assert 'id="skipped-note"' in page and "was skipped" in page
    assert 'hx-trigger="every 2s"' not in page


def test_the_timeline_and_the_waiting_note_count_from_the_release_not_from_creation(team,
                                                                                     django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from jobs import jobpage

    long_ago = timezone.now() - timedelta(hours=2)
    train = waiting(team, team.job, "train", created_at=long_ago)
    assert [s.status for s in jobpage.timeline(train)] == [st.WAITING]
    Job.objects.filter(pk=team.job.pk).update(status="Succeeded", finished_at=timezone.now() - timedelta(seconds=5))
    with django_capture_on_commit_callbacks():
        dependencies.release([team.job.pk])
    train = reload(train)[0]
    assert jobpage.waiting_note(train) == "Sending to DLC…", "not 'not yet sent after 2h': it was released just now"
    upstream = reload(team.job)[0]
    steps = jobpage.timeline(train, upstream.finished_at)
    assert [(s.status, s.start, s.end) for s in steps] == [
        (st.WAITING, long_ago, upstream.finished_at), (st.SUBMITTING, upstream.finished_at, None)]


def test_a_clone_does_not_inherit_run_after(team):
    from jobs import clone

    assert clone.policy("job.run_after") == clone.RESET
    train = waiting(team, team.job, "train")
    prefill = clone.prefill(train)
    assert ("Run after", f"job {team.job.pk}", clone.POLICY["job.run_after"][1]) in prefill.resets
    assert "run_after" not in str(prefill.sections)


# --- the wizard's box (a real localdlc answers the wizard's ListEcsSpecs) -------------------------------------


@pytest.fixture
def ws(db, localdlc, tmp_path, settings):
    return local_workspace(localdlc, tmp_path, settings)


@pytest.fixture
def wizard_user(ws):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("chainer", password="pw-not-used-here")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    return user


@pytest.mark.integration
def test_the_wizard_box_holds_the_job_refuses_at_the_field_and_prefills(client, ws, wizard_user,
                                                                       django_capture_on_commit_callbacks):
    client.force_login(wizard_user)
    prep = pf.make_job(ws, wizard_user, "prep", status="Running")
    page = client.get(f"/jobs/new?clone={prep.pk}&run_after={prep.pk}").content.decode()
    assert re.search(rf'<input type="text" name="run_after" id="id_run_after" value="{prep.pk}"', page)
    assert f'<option value="{prep.pk}" label="{prep.pk} — prep (Running)">' in page
    assert 'id="run-after-block"' in page and "Run after (optional)" in page

    end(prep, "Failed")
    answer = client.post("/jobs/new", {**form_data(basic__name="train"), "run_after": str(prep.pk)})
    html = answer.content.decode()
    assert answer.status_code == 200 and not Job.objects.filter(display_name="train").exists()
    assert f"Job {prep.pk} (prep) failed; it will never succeed." in html
    assert 'href="#id_run_after">Run after</a>' in html, "the error summary links to the field"
    assert re.search(r'id="id_run_after"[^>]*aria-invalid="true"', html, re.S)

    end(prep, "Running")
    with django_capture_on_commit_callbacks() as enqueued:
        answer = client.post("/jobs/new", {**form_data(basic__name="train"), "run_after": f"{prep.pk} — prep",
                                           "run_after_when": "ended"})
    job = Job.objects.get(display_name="train")
    assert answer.status_code == 302 and answer["Location"] == job.get_absolute_url()
    assert (job.status, job.run_after, job.run_after_when, enqueued) == (st.WAITING, prep, "ended", [])

    # A sweep from the wizard: every trial waits on the same upstream.
    with django_capture_on_commit_callbacks() as enqueued:
        answer = client.post("/jobs/new", {**form_data(basic__name="grid", environment__command="echo $LR"),
                                           "sweep": "LR = 0.1, 0.2", "run_after": str(prep.pk)})
    assert answer.status_code == 302 and enqueued == []
    trials = Job.objects.filter(display_name__startswith="grid-")
    assert trials.count() == 2 and {(j.status, j.run_after_id) for j in trials} == {(st.WAITING, prep.pk)}


# --- the words (QA Q2.3, Q2.4, Q2.6) ---------------------------------------------------------------------------

ENDED_WORDS = "ends, whatever the outcome (not if it never ran)"


def test_ended_says_a_job_that_never_ran_does_not_count_in_the_wizard_the_api_and_the_job_page(team, teammate):
    from jobs.api_jobs import openapi_document

    assert dependencies.WHEN[dependencies.ENDED] == ENDED_WORDS
    described = openapi_document("http://testserver")["components"]["schemas"]["CreateJobBody"]["properties"]
    assert "not if it never ran" in described["run_after_when"]["description"]
    web = pf.client_for()
    web.force_login(teammate)
    wizard = web.get(f"/jobs/new?workspace={team.alpha.pk}").content.decode()
    assert f'<option value="ended">{ENDED_WORDS}</option>' in wizard
    after = waiting(team, team.job, "after-any", when="ended")
    row = re.search(r'<dd id="runs-after">.*?</dd>', web.get(after.get_absolute_url()).content.decode(), re.S)
    assert f"when it {ENDED_WORDS}" in row.group(0)


def test_the_stop_confirmation_says_what_stopping_does_for_the_jobs_status(team, teammate):
    web = pf.client_for()
    web.force_login(teammate)

    def confirm(job: Job) -> str:
        page = web.get(job.get_absolute_url()).content.decode()
        return re.search(r'hx-confirm="(Stop job [^"]*)"', page).group(1)

    assert confirm(waiting(team, team.job, "held")).endswith("? It will not be sent to DLC.")
    unsent = pf.make_job(team.alpha, teammate, "queued", status=st.SUBMITTING, dlc_job_id="", pods=[])
    assert confirm(unsent).endswith("? It will not be sent to DLC.")
    assert "stopped there" in confirm(pf.make_job(team.alpha, teammate, "in-flight", status=st.SUBMITTING,
                                                  dlc_job_id="", pods=[], submit_attempts=1))
    assert confirm(team.job).endswith("? Its pods are terminated.")


def test_the_api_panel_says_run_after_goes_to_the_consoles_api_not_to_dlc(team, teammate):
    from jobs.forms import wizard as glue

    web = pf.client_for()
    web.force_login(teammate)
    data = {**glue.sections_to_data(spec_sections()), "_workspace": team.alpha.pk}
    plain = web.post("/jobs/new/preview", data).content.decode()
    assert 'id="api-run-after"' not in plain and "run_after" not in plain
    chained = web.post("/jobs/new/preview", {**data, "run_after": str(team.job.pk)}).content.decode()
    note = re.search(r'<p class="notice" id="api-run-after">(.*?)</p>', chained, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", "", note).split()) == (
        f"Run after job {team.job.pk} is the console's: send run_after / run_after_when to the console's API "
        "(/api/v1/jobs), not to DLC.")


def spec_sections() -> dict:
    from jobs import spec

    return spec.inverse(pf.BODY)


# --- the whole chain on the real stack ------------------------------------------------------------------------


def _create(web, stack, name: str, command: str, after: Job | None = None) -> Job:
    from tests.test_skeleton_flow import csrf

    url = f"{stack.url}/jobs/new"
    data = {**form_data(basic__name=name, environment__command=command), "csrfmiddlewaretoken": csrf(web, url)}
    if after is not None:
        data["run_after"] = str(after.pk)
    answer = web.post(url, data=data, headers={"Referer": url})
    assert answer.status_code == 200
    return Job.objects.get(display_name=name)


def _creates(stack) -> int:
    stats = requests.get(f"http://127.0.0.1:{stack.localdlc_port}/_localdlc/stats", timeout=5).json()
    return stats["calls"].get("CreateJob", 0)


def _status(job: Job, *statuses: str):
    job.refresh_from_db()
    return job.status in statuses and job


@pytest.mark.integration
def test_a_job_runs_after_its_upstream_succeeds_and_not_before(stack, member, gate):
    from jobs.models import WorkspaceSync
    from tests.test_skeleton_flow import signed_in_session

    def cycles() -> int:
        return WorkspaceSync.objects.filter(workspace=prep.workspace).values_list("cycles", flat=True).first() or 0

    web = signed_in_session(stack.url, member.username)
    before = _creates(stack)
    # The upstream runs until the dependent has been seen held through sync cycles (the gate): with `sleep 5`, a
    # loaded machine's late sync could see it Running only near its end, and the dependent be sent meanwhile.
    prep = _create(web, stack, "chain-prep", f"echo prep; until [ -e {gate} ]; do sleep 0.1; done")
    train = _create(web, stack, "chain-train", "echo train", after=prep)
    assert train.status == st.WAITING
    wait_for(lambda: _status(prep, "Running"), timeout=60, what="the upstream running")
    seen = cycles()
    wait_for(lambda: cycles() >= seen + 2, timeout=30, what="two sync cycles while the upstream runs")
    assert _status(train, st.WAITING) and _creates(stack) == before + 1, "localdlc never saw the dependent"
    gate.touch()
    wait_for(lambda: _status(prep, "Succeeded"), timeout=60, what="the upstream succeeding")
    wait_for(lambda: _status(train, "Succeeded"), timeout=90, what="the dependent running after it")
    assert _creates(stack) == before + 2
    assert train.submitted_at >= prep.finished_at


@pytest.mark.integration
def test_a_failed_upstream_skips_the_chain_below_it_without_sending_anything(stack, member, gate):
    from tests.test_skeleton_flow import signed_in_session

    web = signed_in_session(stack.url, member.username)
    before = _creates(stack)
    # The upstream fails once the dependents are created (the gate), while it is still active: with `sleep 1`, four
    # slow requests on a loaded machine made them after it had failed, and the form refuses a job that never runs.
    prep = _create(web, stack, "chain-bad-prep", f"echo failing; until [ -e {gate} ]; do sleep 0.1; done; exit 1")
    train = _create(web, stack, "chain-bad-train", "echo train", after=prep)
    evaluate = _create(web, stack, "chain-bad-eval", "echo eval", after=train)
    gate.touch()
    wait_for(lambda: _status(prep, "Failed"), timeout=90, what="the upstream failing")
    wait_for(lambda: _status(evaluate, "Stopped"), timeout=30, what="the chain skipped")
    for job in reload(train, evaluate):
        assert (job.status, job.reason_code, job.dlc_job_id) == ("Stopped", SKIPPED, "")
    assert "failed; this job was never submitted" in train.reason_message
    assert _creates(stack) == before + 1, "only the upstream reached DLC"
    page = web.get(f"{stack.url}{evaluate.get_absolute_url()}").text
    assert 'id="skipped-note"' in page and "was skipped" in page
