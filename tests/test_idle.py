"""jobs.idle: the rule on GetJobMetrics-shaped answers (idle, busy, one busy pod of two, GPU jobs with and without
GPU samples, too little coverage, the threshold's edge), each pod's requested size, the policy form's errors and
the API's `idle`; then, on the real stack, a sleeping pod and a busy one measured through the real SDK over a few
seconds, and the idle one stopped through the console's stop path with the reason on the page and in the audit log.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import pytest

from jobs import catalog, idle
from jobs.idle import Request
from jobs.models import Job, WorkspacePolicy
from jobs.portal_forms import PolicyForm

END = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
START = END - WINDOW
STEP = 60.0


def pod(pod_id: str, values: list[float] | float, *, first: int = 0, count: int = 30) -> dict:
    """A pod's GetJobMetrics entry: one point per minute from `first` minutes into the window."""
    series = values if isinstance(values, list) else [values] * count
    return {"PodId": pod_id, "Metrics": [{"Time": int((START + timedelta(minutes=first + n)).timestamp() * 1000),
                                          "Value": v} for n, v in enumerate(series)]}


CPU4 = {"j-worker-0": Request(4.0, 0.0), "j-worker-1": Request(4.0, 0.0)}
GPU = {"j-worker-0": Request(8.0, 1.0)}


def decide(cpu, requests=CPU4, gpu=(), *, threshold=5.0, ran_since=START - timedelta(minutes=1)):
    return idle.decide(list(gpu), cpu, requests, start=START, end=END, step=STEP, threshold=threshold,
                       ran_since=ran_since)


def test_a_pod_using_almost_none_of_its_cores_is_idle_with_what_was_measured():
    verdict = decide([pod("j-worker-0", 0.016)])
    assert verdict.state == idle.IDLE
    assert verdict.text == "CPU 0.4% of 4 cores"
    assert verdict.detail() == {"metric": "CPU", "value": 0.4, "threshold_percent": 5.0, "window_minutes": 30.0,
                                "cores": 4.0, "text": "CPU 0.4% of 4 cores"}


def test_a_busy_pod_is_busy_and_so_is_a_job_with_one_busy_pod_of_two():
    assert decide([pod("j-worker-0", 2.0)]).state == idle.BUSY
    verdict = decide([pod("j-worker-0", 0.0), pod("j-worker-1", 3.0)])
    assert (verdict.state, verdict.value, verdict.cores) == (idle.BUSY, 75.0, 8.0)
    # Busy for a short while at the end of an otherwise quiet window: its average is what counts.
    assert decide([pod("j-worker-0", [0.0] * 27 + [4.0] * 3)]).state == idle.BUSY


def test_a_gpu_job_is_judged_by_its_gpus_when_dlc_has_gpu_samples_else_by_its_cpus():
    busy_cpu = [pod("j-worker-0", 6.0)]  # a data loader spinning while the GPU waits: still idle GPUs
    verdict = decide(busy_cpu, GPU, gpu=[pod("j-worker-0", 1.0)])
    assert (verdict.state, verdict.text) == (idle.IDLE, "GPU 1.0% of 1 GPU")
    assert decide([pod("j-worker-0", 0.0)], GPU, gpu=[pod("j-worker-0", 60.0)]).state == idle.BUSY
    # No GPU samples at all (the backend gives none): the CPU share decides, of the pod's 8 cores.
    no_samples = [{"PodId": "j-worker-0", "Metrics": []}]
    assert decide(busy_cpu, GPU, gpu=no_samples).state == idle.BUSY
    assert decide([pod("j-worker-0", 0.08)], GPU, gpu=no_samples).text == "CPU 1.0% of 8 cores"


def test_missing_data_is_unknown_never_idle():
    quiet = [pod("j-worker-0", 0.0)]
    assert decide(quiet, ran_since=START + timedelta(minutes=5)).why == "running for less than the window"
    assert decide(quiet, ran_since=None).state == idle.UNKNOWN
    # Samples of the last 10 minutes only: the first 20 may have been busy.
    late = decide([pod("j-worker-0", 0.0, first=20, count=10)])
    assert (late.state, late.why) == (idle.UNKNOWN, "CPU samples cover too little of the window")
    # One pod without samples, one of a size the console cannot tell, no pods at all.
    assert decide(quiet + [{"PodId": "j-worker-1", "Metrics": []}]).state == idle.UNKNOWN
    assert decide(quiet, {"j-worker-0": Request(None, None)}).state == idle.UNKNOWN
    assert decide([]).state == idle.UNKNOWN
    # Most of the window (a minute or two of monitoring lag) is enough.
    assert decide([pod("j-worker-0", 0.0, first=2, count=28)]).state == idle.IDLE


def test_the_threshold_is_strict():
    at = decide([pod("j-worker-0", 2.0)], threshold=50)  # 2 of 4 cores: 50% exactly
    assert (at.value, at.state) == (50.0, idle.BUSY), "at the threshold is not under it"
    assert decide([pod("j-worker-0", 1.996)], threshold=50).state == idle.IDLE
    assert decide([pod("j-worker-0", 2.0)], threshold=51).state == idle.IDLE


def test_each_pod_gets_its_roles_size_from_its_resource_config_or_instance_type():
    job = Job(body={"JobSpecs": [
        {"Type": "Master", "PodCount": 1, "ResourceConfig": {"CPU": "4", "GPU": "0", "Memory": "8Gi"}},
        {"Type": "Worker", "PodCount": 2, "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]},
        pods=[{"PodId": "dlc1-master-0", "Type": "Master"}])
    specs = {"ecs.gn6i-c4g1.xlarge": {"InstanceType": "ecs.gn6i-c4g1.xlarge", "Cpu": 4, "Gpu": 1}}
    found = idle.pod_requests(job, ["dlc1-master-0", "dlc1-worker-1", "other"], specs)
    assert found == {"dlc1-master-0": Request(4.0, 0.0), "dlc1-worker-1": Request(4.0, 1.0)}
    assert idle.pod_requests(job, ["dlc1-worker-0"], None) == {"dlc1-worker-0": Request(None, None)}


def test_the_api_shape_and_when_the_policy_stops_it():
    since = END - timedelta(minutes=30)
    verdict = decide([pod("j-worker-0", 0.016)])
    job = Job(status="Running", idle_since=since, idle_detail=verdict.detail())
    policy = WorkspacePolicy(idle_after_minutes=30, idle_threshold_percent=5, idle_stop_after_minutes=60)
    assert idle.as_json(job, policy) == {
        "since": "2026-12-01T10:00:00+00:00", "metric": "CPU", "value": 0.4, "threshold_percent": 5.0,
        "window_minutes": 30.0, "stops_at": "2026-12-01T11:00:00+00:00"}
    policy.idle_stop_after_minutes = None
    assert idle.as_json(job, policy)["stops_at"] is None
    assert idle.as_json(Job(status="Running"), policy) is None
    # QA: a job that was idle kept `idle` in the API after it ended (the list and the page no longer showed it).
    for ended in ("Stopped", "Succeeded", "Failed"):
        assert idle.as_json(Job(status=ended, idle_since=since, idle_detail=verdict.detail()), policy) is None
    assert idle.stop_reason(verdict, timedelta(minutes=60)) == \
        "Stopped by the idle policy: CPU 0.4% of 4 cores, under 5% for 60 min"


def policy_form(**idle_fields):
    data = {"allowed_sources": list(catalog.SOURCES), "max_duration_unit": "days", **idle_fields}
    return PolicyForm(data)


def test_the_policy_forms_idle_fields_have_their_errors_at_the_field():
    form = policy_form(idle_after_minutes="5")
    assert not form.is_valid() and "at least 10" in form.errors["idle_after_minutes"][0].lower()
    form = policy_form(idle_after_minutes="60", idle_stop_after_minutes="30")
    assert not form.is_valid()
    assert form.errors["idle_stop_after_minutes"] == [
        "Must be longer than 60 minutes, the time after which a job is flagged idle, so the owner is told before the "
        "job is stopped."]
    # QA: equal, the job was flagged and stopped in the same check, its owner never told first.
    form = policy_form(idle_after_minutes="60", idle_stop_after_minutes="60")
    assert not form.is_valid() and form.errors["idle_stop_after_minutes"][0].startswith("Must be longer than 60")
    assert "idle_stop_after_minutes" in policy_form(idle_stop_after_minutes="60").errors
    for bad in ("0", "101", "x"):
        assert "idle_threshold_percent" in policy_form(idle_threshold_percent=bad).errors
    form = policy_form(idle_after_minutes="30", idle_threshold_percent="", idle_stop_after_minutes="31")
    assert form.is_valid(), form.errors
    values = form.policy_values()
    assert (values["idle_after_minutes"], values["idle_threshold_percent"], values["idle_stop_after_minutes"]) == \
        (30, 5, 31)
    off = policy_form()
    assert off.is_valid() and off.policy_values()["idle_after_minutes"] is None


@pytest.mark.django_db
def test_a_spell_is_recorded_once_told_once_per_webhook_and_mail_and_ended_by_busy(settings):
    """The row's state through record(), the beat's candidates in order, and the news of each spell made once."""
    from django.contrib.auth import get_user_model

    from jobs import notify, notify_email
    from jobs.models import Webhook, WebhookDelivery, Workspace
    from jobs.notify_models import EmailDelivery, NotificationPrefs

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    owner = get_user_model().objects.create_user("ann", email="ann@example.com")
    NotificationPrefs.objects.create(user=owner, email_on_idle=True)
    ws = Workspace.objects.create(name="idle-ws", dlc_workspace_id="x")
    WorkspacePolicy.objects.create(workspace=ws, idle_after_minutes=30)
    hook = Webhook(workspace=ws, name="idle", events=["Idle"])
    hook.set_url("https://hooks.example.com/i")
    hook.save()
    ends = Webhook(workspace=ws, name="ends", events=["Failed"])
    ends.set_url("https://hooks.example.com/e")
    ends.save()
    jobs = [Job.objects.create(workspace=ws, owner=owner, display_name=f"j{n}", status="Running",
                               dlc_job_id=f"dlc-{n}") for n in range(3)]
    Job.objects.create(workspace=Workspace.objects.create(name="no-policy"), display_name="x", status="Running",
                       dlc_job_id="dlc-x")
    job = jobs[1]
    quiet = decide([pod("j-worker-0", 0.016)])
    assert idle.record(job, quiet, END, WINDOW) is True and job.idle_since == START
    assert idle.record(job, quiet, END + timedelta(minutes=5), WINDOW) is False, "the same spell"
    assert [j.pk for j in idle.candidates(10)] == [jobs[0].pk, jobs[2].pk, job.pk]  # never checked first
    assert [j.pk for j in idle.candidates(1)] == [jobs[0].pk]

    status = idle.spell_status(job.idle_since)
    for _ in range(2):  # a check run twice makes the news once
        assert [d.webhook_id for d in notify.idle_deliveries(job, status)] == [hook.pk]
        assert notify_email.idle_owed(job, status)
    assert WebhookDelivery.objects.filter(job=job).count() == 1 and EmailDelivery.objects.filter(job=job).count() == 1
    data = notify.delivery_payload(WebhookDelivery.objects.get(job=job), job)
    assert data["event"] == "job.idle" and data["job"]["idle"]["since"] == START.isoformat()
    mail = notify_email.message(job, status, "ann@example.com")
    assert mail.subject == "[DLC Console] j1 is idle" and "CPU 0.4% of 4 cores over the last 30 min" in mail.body

    assert idle.record(job, decide([pod("j-worker-0", 3.0)]), END + timedelta(minutes=10), WINDOW) is False
    job.refresh_from_db()
    assert (job.idle_since, job.idle_detail) == (None, {})
    assert idle.record(job, decide([]), END + timedelta(minutes=15), WINDOW) is False, "unknown starts nothing"
    assert idle.record(job, quiet, END + timedelta(minutes=40), WINDOW) is True, "a new spell"
    assert idle.spell_status(job.idle_since) != status
    notify.idle_deliveries(job, idle.spell_status(job.idle_since))
    assert WebhookDelivery.objects.filter(job=job).count() == 2


@pytest.mark.django_db
def test_turning_the_policy_off_unflags_running_jobs_and_a_cycle_heals_one_turned_off_elsewhere():
    """QA: cleared "Flag jobs idle after" left jobs flagged Idle for ever (the beat skips such workspaces)."""
    from tests import portal_fixtures as pf

    team = pf.make_team()
    since = END - WINDOW
    for ws in (team.alpha, team.beta):
        WorkspacePolicy.objects.create(workspace=ws, idle_after_minutes=30, idle_stop_after_minutes=60)
    flagged = {"idle_since": since, "idle_detail": {"text": "CPU 0.4% of 4 cores"}}
    running = pf.make_job(team.alpha, team.users["member"], "idle-a", **flagged)
    stopped = pf.make_job(team.alpha, team.users["member"], "idle-stopped", status="Stopped", idle_since=since,
                          idle_detail={"stopped": "Stopped by the idle policy: ..."})
    other = pf.make_job(team.beta, None, "idle-b", **flagged)
    answer = pf.client_for(team.users["admin"]).post(f"/workspaces/{team.alpha.pk}/policy", {
        "allowed_sources": list(catalog.SOURCES), "max_duration_unit": "days", "idle_after_minutes": ""})
    assert answer.status_code == 302
    running.refresh_from_db()
    assert (running.idle_since, running.idle_detail) == (None, {})
    assert Job.objects.get(pk=stopped.pk).idle_detail["stopped"], "an ended job's stop reason stays"
    assert Job.objects.get(pk=other.pk).idle_since == since, "another workspace's policy is still on"

    WorkspacePolicy.objects.filter(workspace=team.beta).update(idle_after_minutes=None)  # as the admin site would
    assert idle.check(limit=0) == []
    assert Job.objects.get(pk=other.pk).idle_since is None


@pytest.mark.django_db
def test_the_console_stop_reason_is_what_the_mail_webhook_api_and_page_say():
    """QA: the idle policy's stop reached only the page and the audit log; mail, `job.stopped` webhook and API said
    DLC's "JobStoppedByUser: The job was stopped by the user." An early-stopped trial had the same gap."""
    from jobs import jobpage, notify, notify_email
    from jobs.models import SweepTrial
    from tests import portal_fixtures as pf
    from tests.support.api import Api
    from tests.test_early_stop import _sweep

    team = pf.make_team()
    job = pf.make_job(team.alpha, team.users["member"], "sleeper", idle_since=START,
                      idle_detail=decide([pod("j-worker-0", 0.016)]).detail())
    verdict = decide([pod("j-worker-0", 0.016)])
    assert idle.stop(job, verdict, timedelta(minutes=60)) is True
    reason = "Stopped by the idle policy: CPU 0.4% of 4 cores, under 5% for 60 min"
    assert _sweep(team, {"Metric": "loss"}).status_code == 201
    trial = SweepTrial.objects.select_related("job").get(number=2)
    Job.objects.filter(pk=trial.job_id).update(status="Running", dlc_job_id="dlc-es-2")
    trial.job.refresh_from_db()
    early = "Stopped early: best loss 0.9 at step 3, behind the median 0.4 of 3 succeeded trials"
    from jobs import early_stop

    assert early_stop.stop_trial(trial, early) is True
    api = Api(team.users["member"])
    for pk, said in ((job.pk, reason), (trial.job_id, early)):
        # As the sync writes DLC's end.
        Job.objects.filter(pk=pk).update(status="Stopped", reason_code="JobStoppedByUser",
                                         reason_message="The job was stopped by the user.", finished_at=END)
        row = Job.objects.select_related("workspace", "owner").get(pk=pk)
        assert jobpage.status_reason(row) == said
        sent = notify.payload(row)["job"]
        assert (sent["reason_code"], sent["reason_message"]) == ("JobStoppedByUser", said)
        assert f"Reason:     {said} (DLC: JobStoppedByUser)\n" in notify_email.body(row, "Stopped")
        got = api.get(f"/api/v1/jobs/{pk}").json()
        assert got["reason"] == {"code": "JobStoppedByUser", "message": said}
        assert got["idle"] is None
    # A job the user stopped keeps DLC's own words everywhere.
    user_stopped = pf.make_job(team.alpha, team.users["member"], "by-hand", status="Stopped",
                               stop_requested_at=END, reason_code="JobStoppedByUser",
                               reason_message="The job was stopped by the user.", finished_at=END)
    assert notify.payload(user_stopped)["job"]["reason_message"] == "The job was stopped by the user."
    assert "Reason:     JobStoppedByUser: The job was stopped by the user.\n" in notify_email.body(user_stopped,
                                                                                                  "Stopped")
    assert api.get(f"/api/v1/jobs/{user_stopped.pk}").json()["reason"]["message"] == \
        "The job was stopped by the user."


@pytest.mark.django_db
def test_a_stop_past_due_reads_as_due_at_the_next_check_not_as_a_future_time():
    """QA: while DLC is unreachable the checks are unknown, so a flagged job outlives its stop time; the page kept
    announcing that time as if to come."""
    from django.utils import timezone

    from jobs import jobpage
    from tests import portal_fixtures as pf

    team = pf.make_team()
    WorkspacePolicy.objects.create(workspace=team.alpha, idle_after_minutes=30, idle_stop_after_minutes=60)
    now = timezone.now()
    detail = {"text": "CPU 0.4% of 4 cores", "window_minutes": 30}
    soon = pf.make_job(team.alpha, team.users["member"], "soon", idle_since=now - timedelta(minutes=40),
                       idle_detail=detail)
    late = pf.make_job(team.alpha, team.users["member"], "late", idle_since=now - timedelta(minutes=90),
                       idle_detail=detail)
    assert jobpage.idle_note(soon).due is False and jobpage.idle_note(late).due is True
    client = pf.client_for(team.users["member"])
    local = timezone.localtime
    page = client.get(soon.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    at = local(soon.idle_since + timedelta(minutes=60)).strftime("%H:%M")
    assert f"The workspace's idle policy stops it at {at}</strong>" in page
    page = client.get(late.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    due = local(late.idle_since + timedelta(minutes=60)).strftime("%H:%M")
    assert f"The workspace's idle policy stops it at the next check (it was due at {due})</strong>" in page


# --- on the stack -------------------------------------------------------------------------------------------------

BUSY = f"{sys.executable} -c 'while True: pass'"


@pytest.mark.integration
def test_a_sleeping_pod_is_idle_a_busy_one_is_not_and_the_policy_stops_the_idle_job(stack, workspace, member,
                                                                                      settings):
    """Two jobs on localdlc, measured through the real SDK over a window of a few seconds (the policy's ten-minute
    floor is the form's rule); the idle one is stopped by the stack's worker and the sync sees it end."""
    from django.utils import timezone

    from jobs import dlc, jobpage, lifecycle
    from jobs.models import AuditEvent
    from tests.support.waiting import wait_for
    from tests.test_lifecycle import job_body, use_broker

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # this process reads the metrics too
    window = timedelta(seconds=10)
    policy = WorkspacePolicy.objects.create(workspace=workspace, idle_after_minutes=10, idle_threshold_percent=5,
                                            idle_stop_after_minutes=10)
    jobs = {}
    for name, command in (("sleeper", "sleep 120"), ("spinner", BUSY)):
        body = job_body(command, name=name)
        job = Job.objects.create(workspace=workspace, owner=member, display_name=name, body=body)
        assert lifecycle.submit(job.pk) == "created"  # as the worker does: the sync adopts it by its tag
        jobs[name] = job
    try:
        def ran_long_enough() -> bool:
            rows = [Job.objects.get(pk=j.pk) for j in jobs.values()]
            return all(r.status == "Running" and r.started_at and timezone.now() - r.started_at > window * 1.2
                       for r in rows)

        wait_for(ran_long_enough, timeout=30, interval=0.3, what="both jobs running for the window")
        spinner = Job.objects.select_related("workspace").get(pk=jobs["spinner"].pk)
        verdict = idle.check_job(spinner, policy, window=window, stop_after=window)
        assert verdict.state == idle.BUSY and verdict.value > 5, verdict
        sleeper = Job.objects.select_related("workspace").get(pk=jobs["sleeper"].pk)
        with use_broker(stack.redis_url):  # the StopJob task goes to the stack's worker
            verdict = idle.check_job(sleeper, policy, window=window, stop_after=window)
            assert verdict.state == idle.IDLE, verdict
            # QA: a stop no longer than the window stopped the job in the check that flagged it, before any news.
            first = Job.objects.get(pk=sleeper.pk)
            assert (first.idle_since, first.stop_requested_at, first.status) == (sleeper.idle_since, None, "Running")
            # The next check (at the first's time again, so the reason's "for 10 s" is exact) stops it.
            verdict = idle.check_job(sleeper, policy, first.idle_checked_at, window=window, stop_after=window)
        assert verdict.state == idle.IDLE, verdict
        assert verdict.text.startswith("CPU ") and verdict.text.endswith("% of 2 cores"), verdict.text
        wait_for(lambda: Job.objects.get(pk=sleeper.pk).status == "Stopped", timeout=20, what="the idle job stopped")
        sleeper.refresh_from_db()
        reason = f"Stopped by the idle policy: {verdict.text}, under 5% for 10 s"
        assert sleeper.idle_detail["stopped"] == reason and jobpage.status_reason(sleeper) == reason
        event = AuditEvent.objects.get(job=sleeper, action=AuditEvent.STOPPED)
        assert (event.actor, event.actor_name, event.details["reason"]) == (None, idle.ACTOR, reason)
        assert Job.objects.get(pk=spinner.pk).idle_since is None
        assert Job.objects.get(pk=spinner.pk).status == "Running"
    finally:
        for job in jobs.values():
            row = Job.objects.get(pk=job.pk)
            if row.dlc_job_id and row.status != "Stopped":
                dlc.stop_job(workspace, row.dlc_job_id)
