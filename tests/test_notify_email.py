"""Per-user email notifications (jobs.notify_email): which ends are mailed to whom, once; the mail's content; the
settings page, its validation and its test button; and, with the real stack, a failed job's mail written by the
worker through Django's file-based backend.

Unit tests send through Django's own test backend (locmem: django.core.mail.outbox); SMTP failures are real ones,
a closed port on 127.0.0.1 or a real SMTP server in the test that refuses the login.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import uuid
import zlib
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests import portal_fixtures as pf

PAGE = "/account/notifications"
TEST_URL = "/account/notifications/test"


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


def opt_in(user, email: str | None = "me@example.com", **choices: bool):
    from jobs.notify_models import NotificationPrefs

    if email is not None:
        user.email = email
        user.save(update_fields=["email"])
    values = {"email_on_failure": True, "email_on_success": False, "email_on_stop": False, **choices}
    NotificationPrefs.objects.update_or_create(user=user, defaults=values)


def ended(workspace, owner, status: str = "Failed", **fields):
    """A job that just ended; its logs already archived (or it had none), so its mail does not wait for them."""
    name = fields.pop("name", f"job-{uuid.uuid4().hex[:8]}")
    values = {"finished_at": timezone.now(), "logs_archived_at": timezone.now(), **fields}
    return pf.make_job(workspace, owner, name, status=status, **values)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed: a real "connection refused"


def smtp_to(settings, port: int, password: str = "") -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 3
    settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = ("console", password) if password else ("", "")


# -- settings ---------------------------------------------------------------------------------------------


def email_settings(monkeypatch, **env: str) -> dict:
    """consoleapp/settings.py run afresh in this environment."""
    import runpy
    from pathlib import Path

    for name in ("EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS",
                 "EMAIL_USE_SSL", "DLC_EMAIL_FROM", "DLC_MAIL_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(Path(__file__).resolve().parents[1] / "consoleapp" / "settings.py"))


def test_smtp_with_email_host_else_files_under_the_stack_else_off(monkeypatch, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    from consoleapp.stack import Stack

    assert email_settings(monkeypatch)["EMAIL_BACKEND"].endswith("dummy.EmailBackend")
    mail_dir = Stack(data_dir=tmp_path).env()["DLC_MAIL_DIR"]
    assert mail_dir == str(tmp_path.resolve() / "mail")
    files = email_settings(monkeypatch, DLC_MAIL_DIR=mail_dir)
    assert files["EMAIL_BACKEND"].endswith("filebased.EmailBackend") and files["EMAIL_FILE_PATH"] == mail_dir
    smtp = email_settings(monkeypatch, DLC_MAIL_DIR=mail_dir, EMAIL_HOST="smtp.example.com", EMAIL_PORT="587",
                          EMAIL_USE_TLS="1", EMAIL_HOST_USER="console", EMAIL_HOST_PASSWORD="pw",
                          DLC_EMAIL_FROM="DLC <dlc@example.com>")
    assert smtp["EMAIL_BACKEND"].endswith("smtp.EmailBackend") and smtp["EMAIL_PORT"] == 587
    assert smtp["EMAIL_USE_TLS"] and not smtp["EMAIL_USE_SSL"] and smtp["DEFAULT_FROM_EMAIL"] == "DLC <dlc@example.com>"
    with pytest.raises(ImproperlyConfigured, match="not both"):
        email_settings(monkeypatch, EMAIL_HOST="smtp.example.com", EMAIL_USE_TLS="1", EMAIL_USE_SSL="1")


# -- who is mailed ----------------------------------------------------------------------------------------


def test_only_the_owners_opted_in_outcomes_with_an_address_are_owed_a_mail(team):
    from jobs import notify_email
    from jobs import status as st
    from jobs.notify_models import EmailDelivery

    member, admin, viewer = team.users["member"], team.users["admin"], team.users["viewer"]
    opt_in(member, email_on_failure=True, email_on_success=False, email_on_stop=True)
    opt_in(viewer, email_on_failure=True, email_on_success=True, email_on_stop=True)  # owns none of these jobs
    opt_in(admin, email="", email_on_failure=True)  # no address
    failed, refused = ended(team.alpha, member, "Failed"), ended(team.alpha, member, st.SUBMIT_FAILED)
    stopped = ended(team.alpha, member, "Stopped")
    succeeded = ended(team.alpha, member, "Succeeded")
    admins = ended(team.alpha, admin, "Failed")
    imported = ended(team.alpha, member, "Failed", imported=True)
    found = ended(team.alpha, member, "Failed")  # found by the import but submitted by the console: news
    owed = notify_email.owed([failed.pk, refused.pk, stopped.pk, succeeded.pk, admins.pk],
                             found=[imported.pk, found.pk])
    assert sorted(owed) == sorted([failed.pk, refused.pk, stopped.pk, found.pk])
    assert set(EmailDelivery.objects.values_list("job_id", "user_id", "status")) == {
        (failed.pk, member.pk, "Failed"), (refused.pk, member.pk, st.SUBMIT_FAILED),
        (stopped.pk, member.pk, "Stopped"), (found.pk, member.pk, "Failed")}
    assert notify_email.owed([failed.pk]) == [failed.pk] and EmailDelivery.objects.count() == 4  # made once


def test_finding_the_opted_in_owners_of_a_sync_batch_is_one_query(team):
    from jobs import lifecycle, notify_email
    from jobs.notify_models import EmailDelivery

    jobs = [ended(team.alpha, team.users["admin"], "Failed") for _ in range(30)]
    with CaptureQueriesContext(connection) as nobody:
        lifecycle._enqueue_notify(team.alpha.pk, [j.pk for j in jobs])
    ours = [q["sql"] for q in nobody.captured_queries if "notificationprefs" in q["sql"]]
    assert len(ours) == 1 and len(nobody.captured_queries) == 3, nobody.captured_queries  # + has_budget, has_webhooks
    opt_in(team.users["admin"])
    with CaptureQueriesContext(connection) as some:
        assert len(notify_email.owed([j.pk for j in jobs])) == 30
    assert len(some.captured_queries) == 2  # the look-up and one insert of the 30 deliveries
    assert EmailDelivery.objects.count() == 30


def test_a_task_run_twice_mails_once(team):
    from jobs import lifecycle, tasks
    from jobs.notify_models import EmailDelivery

    opt_in(team.users["member"], email_on_success=True)
    job = ended(team.alpha, team.users["member"], "Succeeded")
    lifecycle._enqueue_notify(team.alpha.pk, [job.pk])  # the end, as the sync reports it
    tasks.email_job.apply(args=[job.pk])
    tasks.email_job.apply(args=[job.pk])  # redelivered (acks_late) or re-enqueued by the sweep
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["me@example.com"]
    assert mail.outbox[0].subject == f"[DLC Console] {job.display_name} succeeded"
    delivery = EmailDelivery.objects.get(job=job)
    assert delivery.sent_at and delivery.attempts == 1 and delivery.next_attempt_at is None
    lifecycle._enqueue_notify(team.alpha.pk, [job.pk])  # the same end reported again
    tasks.email_job.apply(args=[job.pk])
    assert len(mail.outbox) == 1


def test_a_stop_by_the_owner_is_not_mailed_a_stop_by_someone_else_is(team):
    from jobs import lifecycle, notify_email
    from jobs.notify_models import EmailDelivery

    member = team.users["member"]
    opt_in(member, email_on_failure=False, email_on_stop=True)
    mine = pf.make_job(team.alpha, member, "mine", status="Submitting", dlc_job_id="", pods=[])
    theirs = pf.make_job(team.alpha, member, "theirs", status="Submitting", dlc_job_id="", pods=[])
    assert lifecycle.request_stop(member, mine) == "stopped"  # never reached DLC: Stopped at once
    assert lifecycle.request_stop(team.users["admin"], theirs) == "stopped"
    assert notify_email.deliver(mine.pk) is None and notify_email.deliver(theirs.pk) is None
    assert [m.subject for m in mail.outbox] == ["[DLC Console] theirs was stopped"]
    assert EmailDelivery.objects.get(job=mine).last_error == "stopped by its owner"
    # DLC's reason only says "by the user": the mail names who, from the audit log.
    type(theirs).objects.filter(pk=theirs.pk).update(reason_code="JobStoppedByUser",
                                                     reason_message="The job was stopped by the user")
    theirs.refresh_from_db()
    assert "Reason:     Stopped in the console by admin (DLC: JobStoppedByUser)\n" in notify_email.body(
        theirs, "Stopped")

    by_dlc = ended(team.alpha, member, "Stopped", reason_code="JobStoppedByUser",
                   reason_message="The job was stopped by the user")  # no stop asked here: DLC (or its console) did
    assert notify_email.owed([by_dlc.pk]) == [by_dlc.pk]
    notify_email.deliver(by_dlc.pk)
    assert len(mail.outbox) == 2
    assert "Reason:     JobStoppedByUser: The job was stopped by the user\n" in mail.outbox[1].body


def test_jobs_skipped_because_their_upstream_did_not_succeed_are_not_mailed(team):
    from jobs import dependencies, lifecycle, notify_email
    from jobs import status as st
    from jobs.models import Job
    from jobs.notify_models import EmailDelivery

    member = team.users["member"]
    opt_in(member, email_on_failure=True, email_on_success=True, email_on_stop=True)
    upstream = pf.make_job(team.alpha, member, "upstream", status="Submitting", dlc_job_id="", pods=[])
    first = pf.make_job(team.alpha, member, "waitMe1", status=st.WAITING, dlc_job_id="", pods=[], run_after=upstream)
    second = pf.make_job(team.alpha, member, "waitMe2", status=st.WAITING, dlc_job_id="", pods=[], run_after=first)
    assert lifecycle.request_stop(member, upstream) == "stopped"
    dependencies.release([upstream.pk])  # as the sync's hook does; idempotent if the stop released them already
    assert set(Job.objects.filter(pk__in=[first.pk, second.pk]).values_list("reason_code", flat=True)) == {
        dependencies.SKIPPED}
    assert not EmailDelivery.objects.filter(job__in=[first, second]).exists()
    assert notify_email.owed([first.pk, second.pk]) == []
    # A delivery made before this rule (or by any other path) is closed when its turn comes, not sent.
    EmailDelivery.objects.create(job=second, user=member, status="Stopped", next_attempt_at=timezone.now())
    for job in (upstream, first, second):
        notify_email.deliver(job.pk)
    assert mail.outbox == []  # the upstream was stopped by its owner: no mail for it either
    assert EmailDelivery.objects.get(job=second).last_error == "skipped: the job it ran after did not succeed"


def make_sweep(team, owner, statuses: list[str], name: str = "lr-sweep"):
    from jobs.models import Sweep, SweepTrial

    sweep = Sweep.objects.create(workspace=team.alpha, owner=owner, name=name, parameters=[["LR", ["0.1", "0.01"]]])
    jobs = []
    for number, status in enumerate(statuses, 1):
        job = (ended(team.alpha, owner, status, name=f"{name}-{number}") if status in ("Succeeded", "Failed", "Stopped")
               else pf.make_job(team.alpha, owner, f"{name}-{number}", status=status))
        SweepTrial.objects.create(sweep=sweep, job=job, number=number, values={"LR": f"0.{number}"})
        jobs.append(job)
    return sweep, jobs


def test_a_sweep_mails_once_when_its_last_trial_ends_with_a_summary(team, settings):
    from jobs import lifecycle, notify_email, tasks
    from jobs.models import Job
    from jobs.notify_models import EmailDelivery

    settings.DLC_BASE_URL = "https://console.example"
    member = team.users["member"]
    opt_in(member, email_on_failure=True, email_on_success=True, email_on_stop=True)
    sweep, jobs = make_sweep(team, member, ["Succeeded", "Failed", "Running", "Succeeded", "Running"])
    lifecycle._enqueue_notify(team.alpha.pk, [jobs[0].pk, jobs[1].pk, jobs[3].pk])  # trials' ends: no mail each
    assert not EmailDelivery.objects.exists()
    Job.objects.filter(pk=jobs[2].pk).update(status="Succeeded", finished_at=timezone.now())
    assert notify_email.owed([jobs[2].pk]) == []  # one trial still running
    Job.objects.filter(pk=jobs[4].pk).update(status="Succeeded", finished_at=timezone.now(),
                                             logs_archived_at=timezone.now())
    # The last end, seen twice (the sync and the beat's sweep, or two syncs): one delivery, one mail.
    assert notify_email.owed([jobs[4].pk]) == [jobs[0].pk]
    assert notify_email.owed([jobs[4].pk, jobs[2].pk]) == [jobs[0].pk]
    assert EmailDelivery.objects.get().status == "Failed"  # any trial failed: the failure opt-in covers it
    tasks.email_job.apply(args=[jobs[0].pk])
    tasks.email_job.apply(args=[jobs[0].pk])
    [sent] = mail.outbox
    assert sent.subject == "[DLC Console] sweep lr-sweep finished: 4 succeeded, 1 failed"
    assert f"https://console.example/sweeps/{sweep.pk}" in sent.body
    assert f"  lr-sweep-2 (LR=0.2): https://console.example/jobs/{jobs[1].pk}" in sent.body
    assert "lr-sweep-1 " not in sent.body and "lr-sweep-4" not in sent.body  # only the failed trials are named


@pytest.mark.parametrize(("statuses", "opt_ins", "mailed"), [
    (["Succeeded", "Failed"], {"email_on_failure": False, "email_on_success": True}, False),  # failed: not wanted
    (["Succeeded", "Stopped"], {"email_on_failure": False, "email_on_success": True}, True),
    (["Stopped", "Stopped"], {"email_on_failure": False, "email_on_stop": True}, True),
    (["Stopped", "Stopped"], {"email_on_failure": True, "email_on_success": True}, False),
])
def test_a_finished_sweep_is_mailed_under_its_outcomes_opt_in(team, statuses, opt_ins, mailed):
    from jobs import notify_email

    member = team.users["member"]
    opt_in(member, **{"email_on_failure": False, "email_on_success": False, "email_on_stop": False, **opt_ins})
    _, jobs = make_sweep(team, member, statuses)
    assert notify_email.owed([j.pk for j in jobs]) == ([jobs[0].pk] if mailed else [])


def test_a_sweep_its_owner_stopped_is_not_mailed(team):
    from jobs import lifecycle, notify_email
    from jobs.notify_models import EmailDelivery

    member = team.users["member"]
    opt_in(member, email_on_stop=True)
    _, jobs = make_sweep(team, member, ["Submitting", "Submitting"])
    for job in jobs:
        type(job).objects.filter(pk=job.pk).update(dlc_job_id="", pods=[])
        job.refresh_from_db()
        assert lifecycle.request_stop(member, job) == "stopped"
    for job in jobs:
        notify_email.deliver(job.pk)
    assert mail.outbox == []
    assert EmailDelivery.objects.get(job=jobs[0]).last_error == "stopped by its owner"  # the summary, closed


def test_opting_out_after_the_end_and_an_end_undone_send_nothing(team):
    from jobs import notify_email
    from jobs import status as st
    from jobs.notify_models import EmailDelivery, NotificationPrefs

    member = team.users["member"]
    opt_in(member)
    changed_mind = ended(team.alpha, member, "Failed")
    undone = ended(team.alpha, member, st.SUBMIT_FAILED, dlc_job_id="")
    notify_email.owed([changed_mind.pk, undone.pk])
    NotificationPrefs.objects.filter(user=member).update(email_on_failure=False)
    # CreateJob had landed after all: the import adopted DLC's job into the row (lifecycle.adopt).
    type(undone).objects.filter(pk=undone.pk).update(status="Running", dlc_job_id="dlc-late")
    notify_email.deliver(changed_mind.pk)
    notify_email.deliver(undone.pk)
    assert mail.outbox == []
    assert EmailDelivery.objects.get(job=changed_mind).last_error == "opted out"
    assert not EmailDelivery.objects.filter(job=undone).exists()  # its real end is owed a mail anew


def test_an_owner_removed_from_the_workspace_is_mailed_nothing_of_its_jobs(team):
    """QA: a member removed from the workspace (a contractor gone, a person moved to another team) still got the
    failure mail of a job they had started, with the last lines of its log and its likely cause, though every page
    and token of that workspace is closed to them. A viewer still reads the job: made viewer, they keep the mail."""
    from jobs import notify_email
    from jobs.models import Membership
    from jobs.notify_models import EmailDelivery

    member = team.users["member"]
    opt_in(member)
    removed = ended(team.alpha, member, "Failed")
    notify_email.owed([removed.pk])
    Membership.objects.filter(user=member, workspace=team.alpha).delete()
    notify_email.deliver(removed.pk)
    assert mail.outbox == []
    assert EmailDelivery.objects.get(job=removed).last_error == "no longer a member of the workspace"
    Membership.objects.create(user=member, workspace=team.alpha, role="viewer")
    demoted = ended(team.alpha, member, "Failed")
    notify_email.owed([demoted.pk])
    notify_email.deliver(demoted.pk)
    assert [m.to for m in mail.outbox] == [["me@example.com"]]


def test_a_failed_job_waits_for_its_log_archive_a_while(team, settings):
    from jobs import notify_email
    from jobs.notify_models import EmailDelivery

    settings.DLC_ARCHIVE_DELAY = 5
    opt_in(team.users["member"])
    job = ended(team.alpha, team.users["member"], "Failed", logs_archived_at=None)
    notify_email.owed([job.pk])
    wait = notify_email.deliver(job.pk)
    assert wait is not None and wait <= notify_email.LOG_POLL_SECONDS + 0.1 and mail.outbox == []
    EmailDelivery.objects.filter(job=job).update(next_attempt_at=timezone.now())
    type(job).objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(minutes=5))  # long past
    assert notify_email.deliver(job.pk) is None and len(mail.outbox) == 1  # sent without the tail


def test_smtp_failures_are_retried_with_backoff_then_given_up_never_showing_the_password(team, settings):
    from jobs import notify_email
    from jobs.notify_models import EmailDelivery

    smtp_to(settings, closed_port(), password="pw-" + uuid.uuid4().hex)
    opt_in(team.users["member"])
    job = ended(team.alpha, team.users["member"], "Failed")
    notify_email.owed([job.pk])
    waits = []
    for _ in range(notify_email.ATTEMPTS):
        EmailDelivery.objects.filter(job=job).update(next_attempt_at=timezone.now())  # due now
        waits.append(notify_email.deliver(job.pk))
    delivery = EmailDelivery.objects.get(job=job)
    assert waits[-1] is None and delivery.attempts == notify_email.ATTEMPTS and delivery.next_attempt_at is None
    assert [round(w) for w in waits[:3]] == [30, 120, 480]
    assert "Connection refused" in delivery.last_error and settings.EMAIL_HOST_PASSWORD not in delivery.last_error
    assert notify_email.owed_jobs(timedelta(0)) == []  # given up: the sweep does not ask again


def test_the_sweep_finds_mails_whose_task_was_lost(team):
    from jobs import notify_email
    from jobs.notify_models import EmailDelivery

    opt_in(team.users["member"])
    job = ended(team.alpha, team.users["member"], "Failed")
    notify_email.owed([job.pk])
    assert notify_email.owed_jobs(timedelta(minutes=2)) == []  # just owed: its task is on its way
    EmailDelivery.objects.filter(job=job).update(next_attempt_at=timezone.now() - timedelta(minutes=3))
    assert notify_email.owed_jobs(timedelta(minutes=2)) == [job.pk]


def test_no_mail_setup_owes_nothing(team, settings):
    from jobs import notify_email

    settings.EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
    opt_in(team.users["member"])
    assert notify_email.mode() == "off" and notify_email.owed([ended(team.alpha, team.users["member"]).pk]) == []


# -- what is sent -----------------------------------------------------------------------------------------


def test_the_mail_says_what_ended_how_and_where_with_the_log_tail_and_no_secret(team, settings):
    from jobs import logmask, notify_email, secretbox, spec
    from jobs.models import PodLog

    settings.DLC_BASE_URL = "https://console.example"
    settings.TIME_ZONE = "Asia/Shanghai"
    body = {**pf.BODY, "Envs": {"PLAIN_VAR": "plain-value-7731", "API_TOKEN": spec.SECRET_PLACEHOLDER}}
    body["JobSpecs"] = [{**body["JobSpecs"][0], "ImageConfig": {"UserName": "robot"}}]
    sealed = secretbox.seal({"registry_password": "registry-pass-5521",
                             spec.SECRET_ENV_PREFIX + "API_TOKEN": "env-secret-9913"})
    started = timezone.now() - timedelta(hours=1, minutes=2, seconds=3)
    marks = logmask.marks_for(["log-secret-4471", "hf-value-123456", "abc"])
    job = ended(team.alpha, team.users["member"], "Failed", name="train-x", sealed_secrets=sealed, secret_marks=marks,
                reason_code="JobFailed", reason_message="Pod exited with code 1. password=hunter2-secret",
                started_at=started, finished_at=started + timedelta(hours=1, minutes=2, seconds=3),
                pods=[{"PodId": "train-x-master-0", "Type": "Master", "Status": "Succeeded"},
                      {"PodId": "train-x-worker-0", "Type": "Worker", "Status": "Failed"}])
    type(job).objects.filter(pk=job.pk).update(body=body)
    json_line = '\x1b[31m{"HF_TOKEN": "hf-value-123456", "SHORT_SECRET": "abc"}\x1b[0m'
    lines = [f"step {i}" for i in range(1, 31)] + ["echo PLAIN_VAR=$PLAIN_VAR", "token=log-secret-4471",
                                                    json_line, "Traceback: boom", ""]
    for pod_id, text in (("train-x-master-0", "master fine"), ("train-x-worker-0", "\n".join(lines))):
        PodLog.objects.create(job=job, pod_id=pod_id, content=zlib.compress(text.encode()),
                              lines=text.count("\n") + 1)
    opt_in(team.users["member"])
    notify_email.owed([job.pk])
    notify_email.deliver(job.pk)
    [sent] = mail.outbox
    text = sent.body
    assert sent.subject == "[DLC Console] train-x failed" and sent.to == ["me@example.com"]
    assert f"https://console.example/jobs/{job.pk}" in text and "Alpha" in text and f"#{job.pk}" in text
    assert "JobFailed: Pod exited with code 1." in text and "hunter2-secret" not in text
    local = timezone.localtime(job.finished_at, timezone.get_fixed_timezone(8 * 60))
    assert f"{local:%Y-%m-%d %H:%M:%S} (Asia/Shanghai)" in text and "1h 02m 03s" in text
    assert "log of pod train-x-worker-0" in text and "master fine" not in text  # the failed pod's
    assert "  step 15" in text and "  step 14\n" not in text and "  Traceback: boom" in text  # its last 20 lines
    # The job's secret values are masked as on the page (jobs.logmask), quotes kept, colours dropped; a value too
    # short to fingerprint shows, as it does on the page (one rule: not dlc.redact's guess by the name).
    assert "  token=********\n" in text and "log-secret-4471" not in text
    assert '  {"HF_TOKEN": "********", "SHORT_SECRET": "abc"}\n' in text
    assert logmask.mask([json_line], marks) == ['\x1b[31m{"HF_TOKEN": "********", "SHORT_SECRET": "abc"}\x1b[0m']
    for secret in ("plain-value-7731", "env-secret-9913", "registry-pass-5521", "robot", sealed[:20]):
        assert secret not in text and secret not in sent.subject, secret
    assert "https://console.example/account/notifications" in text


def test_a_job_refused_by_dlc_is_mailed_with_dlcs_reason(team):
    from jobs import notify_email
    from jobs import status as st

    job = ended(team.alpha, team.users["member"], st.SUBMIT_FAILED, dlc_job_id="", pods=[], name="bad\nname",
                submit_error={"Code": "InvalidParameter", "Message": "PodCount must be positive"})
    assert notify_email.subject(job, job.status) == "[DLC Console] bad name failed: DLC refused it"
    text = notify_email.body(job, job.status)
    assert "InvalidParameter: PodCount must be positive" in text and "did not run" in text


# -- the page ---------------------------------------------------------------------------------------------


def test_the_page_saves_the_address_and_choices_all_off_by_default_and_audits_changes(team):
    from jobs.models import AuditEvent
    from jobs.notify_models import NotificationPrefs

    member = team.users["member"]
    client = pf.client_for(member)
    page = client.get(PAGE).content.decode()
    assert 'name="email_on_failure"' in page and "checked" not in page  # opt-in: nothing ticked
    assert "not configured" not in page
    response = client.post(PAGE, {"email": "alice@example.com", "email_on_failure": "on", "email_on_stop": "on"})
    assert response.status_code == 302
    member.refresh_from_db()
    prefs = NotificationPrefs.objects.get(user=member)
    assert member.email == "alice@example.com" and (prefs.email_on_failure, prefs.email_on_success,
                                                    prefs.email_on_stop) == (True, False, True)
    [event] = AuditEvent.objects.filter(details__event="email-notifications-changed")
    assert event.workspace == team.alpha and event.actor == member
    assert event.details["changes"]["email_on_failure"] == {"from": False, "to": True}
    audit_page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/audit").content.decode()
    assert "email-notifications-changed" in audit_page and "alice@example.com" not in audit_page, "personal"
    assert event.details["changes"]["email"] == {"from": "none", "to": "set"}
    client.post(PAGE, {"email": "alice@example.com", "email_on_failure": "on", "email_on_stop": "on"})
    assert AuditEvent.objects.filter(details__event="email-notifications-changed").count() == 1  # no change
    assert "checked" in client.get(PAGE).content.decode()


@pytest.mark.parametrize(("data", "message"), [
    ({"email": "not-an-address"}, "Enter a valid email address."),
    ({"email": "a@" + "b" * 260 + ".com"}, "at most 254"),
    ({"email": "", "email_on_failure": "on"}, "Enter the address to send to"),
    ({"email": "   ", "email_on_success": "on"}, "Enter the address to send to"),
])
def test_bad_input_is_an_error_at_the_address_field(team, data, message):
    from jobs.notify_models import NotificationPrefs

    response = pf.client_for(team.users["member"]).post(PAGE, data)
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["email"] and message in " ".join(errors["email"]), errors
    assert 'id="field-email"' in response.content.decode()
    assert not NotificationPrefs.objects.exists()


def test_without_a_mail_setup_the_page_says_so_and_nothing_can_be_ticked(team, settings):
    from jobs.notify_models import NotificationPrefs

    settings.EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
    client = pf.client_for(team.users["member"])
    page = client.get(PAGE).content.decode()
    assert "Email is not configured" in page and page.count("disabled") >= 3 and "Send a test email" not in page
    client.post(PAGE, {"email": "alice@example.com", "email_on_failure": "on"})
    assert not NotificationPrefs.objects.get(user=team.users["member"]).email_on_failure


def test_under_make_run_the_page_says_where_the_mail_files_go(team, settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    staff = team.users["member"]
    staff.is_staff = True  # only staff see the server's path; others: tests/test_account_views.py
    staff.save(update_fields=["is_staff"])
    page = pf.client_for(staff).get(PAGE).content.decode()
    assert str(tmp_path / "mail") in page and "as a file" in page


def test_the_pages_link_to_it(team):
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert f'href="{PAGE}"' in page and "Your own email notifications" in page
    assert f'href="{PAGE}">Email</a>' in pf.client_for(team.users["viewer"]).get("/account/api").content.decode()


def test_the_page_says_which_ends_are_not_mailed_on_their_own(team):
    page = pf.client_for(team.users["member"]).get(PAGE).content.decode()
    assert "sends no mail: that job's own end is the news" in " ".join(page.split())
    assert "A sweep's trials send one mail together, when the last of them ends" in " ".join(page.split())


def test_the_test_button_sends_and_answers_in_place(team):
    member = team.users["member"]
    client = pf.client_for(member)
    answer = client.post(TEST_URL, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-ok="false"' in answer and "Save your email address first" in answer and "<html" not in answer
    opt_in(member, email="alice@example.com")
    answer = client.post(TEST_URL, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-ok="true"' in answer and "alice@example.com" in answer
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]


def test_the_test_button_shows_a_refused_connection_in_place(team, settings):
    smtp_to(settings, closed_port(), password="pw-" + uuid.uuid4().hex)
    opt_in(team.users["member"])
    response = pf.client_for(team.users["member"]).post(TEST_URL, HTTP_HX_REQUEST="true")
    text = response.content.decode()
    assert response.status_code == 200 and 'data-ok="false"' in text and "Connection refused" in text
    assert settings.EMAIL_HOST_PASSWORD not in text


class _RefusingSMTP(socketserver.StreamRequestHandler):
    """A real SMTP server that refuses every login and, carelessly, quotes the credentials in its answer."""

    def reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        import base64

        self.reply("220 refusing.example ESMTP")
        for raw in self.rfile:
            command = raw.decode(errors="replace").strip()
            verb = command.split(" ")[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250-refusing.example")
                self.reply("250 AUTH PLAIN")
            elif verb == "AUTH":
                said = base64.b64decode(command.split(" ")[-1]).replace(b"\0", b" ").decode()
                self.reply(f"535 5.7.8 Authentication failed for{said}")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not here")


def test_an_smtp_answer_quoting_the_password_is_shown_without_it(team, settings):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _RefusingSMTP)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        password = "pw-" + uuid.uuid4().hex
        smtp_to(settings, server.server_address[1], password=password)
        opt_in(team.users["member"])
        text = pf.client_for(team.users["member"]).post(TEST_URL, HTTP_HX_REQUEST="true").content.decode()
    finally:
        server.shutdown()
        server.server_close()
    assert "SMTPAuthenticationError" in text and "535" in text and "console ***" in text
    assert password not in text


# -- with the real stack ----------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_a_job_that_exits_1_mails_its_opted_in_owner_through_the_mail_files(stack, member, workspace):
    from email import message_from_bytes, policy

    from jobs.notify_models import EmailDelivery
    from tests.test_lifecycle import wait_for
    from tests.test_sync import status_of, submit_through_the_stack

    opt_in(member, email="alice@example.com")
    mail_dir = stack.data_dir / "mail"  # the stack's processes write mails there: no EMAIL_HOST (consoleapp.stack)
    name = f"mailed-{uuid.uuid4().hex[:6]}"
    job = submit_through_the_stack(stack, workspace, member, "echo about to break; exit 1", name=name)
    wait_for(lambda: status_of(job) == "Failed", timeout=60, what="job failed")

    def mails() -> list:
        found = [message_from_bytes(p.read_bytes(), policy=policy.default) for p in mail_dir.glob("*.log")]
        return [m for m in found if name in str(m["Subject"])]

    # A failed job's mail waits for its log archive (DLC_ARCHIVE_DELAY after the end), to quote the log's end.
    wait_for(lambda: mails() and EmailDelivery.objects.get(job=job).sent_at, timeout=45, what="mail written")
    [sent] = mails()
    assert sent["Subject"] == f"[DLC Console] {name} failed" and sent["To"] == "alice@example.com"
    text = sent.get_content()
    assert f"{stack.url}/jobs/{job.pk}" in text and "about to break" in text
