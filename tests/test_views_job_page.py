"""The job page through the Django test client: permissions, the configuration in the wizard's sections
without secrets, submit errors, the truthful wait, timeline, pods, clone links, the self-refreshing part,
events, and logs (the archive numbered and searched whole; a live window of the last 1000 lines and a tail
that sends every later line once, by time cursor; search, download, bad cursors) against a real localdlc
through the real SDK."""

from __future__ import annotations

import re
import socket
import time
from datetime import timedelta
from html import unescape

import pytest
from django.utils import timezone

from jobs import dlc, jobpage, lifecycle, logarchive, podlogs
from jobs.models import Job

HTMX = {"HTTP_HX_REQUEST": "true"}


def make_job(ws, owner=None, *, name="job", status="Running", **fields) -> Job:
    return Job.objects.create(workspace=ws, owner=owner, display_name=name, status=status, job_type="PyTorchJob",
                              **fields)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def on_localdlc(ws, owner, command: str, *, until=("Succeeded",), name: str = "logs", min_lines: int = 0) -> Job:
    """A job really run by localdlc, its row synced the way the beat does it."""
    body = {"DisplayName": name, "JobType": "PyTorchJob", "UserCommand": command,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                          "EcsSpec": "ecs.g6.large"}]}
    job = make_job(ws, owner, name=name, status="Creating", body=body)
    job.dlc_job_id = dlc.create_job(ws, body)
    job.save()
    deadline = time.monotonic() + 30
    while True:
        item = dlc.get_job(ws, job.dlc_job_id)
        pods = item.get("Pods") or []
        printed = dlc.get_pod_logs(ws, job.dlc_job_id, pods[0]["PodId"]) if pods and min_lines else []
        if item["Status"] in until and len(printed) >= min_lines:
            break
        assert time.monotonic() < deadline, item["Status"]
        time.sleep(0.1)
    lifecycle.apply_remote(job, item)
    return job


def lines_of(html: str) -> list[tuple[int | None, str]]:
    """(line number, or None in a live window; text) of each log line."""
    return [(int(n) if n else None, unescape(re.sub(r"<[^>]+>", "", text)))
            for n, text in re.findall(r'<div class="ln"(?: data-n="(\d+)"><span class="no">\d+</span>|>)(.*?)</div>',
                                      html)]


def tail_of(html: str) -> str:
    return re.search(r'<div id="log-tail"[^>]*>', html).group(0)


# --- permissions ---------------------------------------------------------------------------------------------


def test_every_job_url_is_404_outside_the_users_workspaces(client, people, ws):
    job = make_job(ws, people["alice"], pods=[{"PodId": "p-worker-0", "Type": "Worker"}], dlc_job_id="dlc-x")
    client.force_login(people["olga"])
    for url in [f"/jobs/{job.pk}", f"/jobs/{job.pk}/row", f"/jobs/{job.pk}/events", f"/jobs/{job.pk}/logs",
                f"/jobs/{job.pk}/pods/p-worker-0/logs", f"/jobs/{job.pk}/pods/p-worker-0/logs/download"]:
        assert client.get(url).status_code == 404, url
    assert client.post(f"/jobs/{job.pk}/stop").status_code == 404
    client.logout()
    assert client.get(f"/jobs/{job.pk}").status_code == 302, "signed-out users go to the sign-in page"


def test_only_the_owner_and_admins_see_and_use_stop(client, people, ws):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-running")
    for name, may_stop, may_clone in [("alice", True, True), ("ada", True, True), ("bob", False, True),
                                      ("vic", False, False)]:
        client.force_login(people[name])
        html = client.get(f"/jobs/{job.pk}").content.decode()
        assert ('id="stop-job"' in html) == may_stop, name
        assert ('id="clone-job"' in html) == may_clone, name
        if not may_stop:
            assert client.post(f"/jobs/{job.pk}/stop", **HTMX).status_code == 403, name
    assert Job.objects.get(pk=job.pk).status == "Running"

    client.force_login(people["alice"])
    html = client.post(f"/jobs/{job.pk}/stop", **HTMX).content.decode()
    assert html.lstrip().startswith('{# ') is False and '<div id="job-live"' in html
    assert "Stop: Stop requested" in html and 'id="job-status">Stopping<' in html
    assert 'id="stop-job"' not in html, "a stopping job has no stop button"
    assert Job.objects.get(pk=job.pk).status == "Stopping"


def test_viewers_are_offered_no_action_they_may_not_take(client, people, ws):
    """QA: the job page offered viewers "Save as template", which answers 403. Every link and button of the page is
    offered by the access rule of the URL it leads to (jobs.access), tried here for each role."""
    job = make_job(ws, people["alice"], dlc_job_id="dlc-running", status="Succeeded")
    actions = {"save-template": f"/templates/save?job={job.pk}", "clone-job": f"/jobs/new?clone={job.pk}",
               "run-after-job": f"/jobs/new?clone={job.pk}&run_after={job.pk}",
               "schedule-job": f"/jobs/{job.pk}/schedule"}
    for name in ("vic", "bob"):
        client.force_login(people[name])
        html = client.get(f"/jobs/{job.pk}").content.decode()
        for element, url in actions.items():
            offered = f'id="{element}"' in html
            allowed = client.get(url).status_code != 403
            assert offered == allowed == (name == "bob"), (name, element)


def test_a_job_waiting_to_be_submitted_can_be_stopped(client, people, ws):
    never_sent = make_job(ws, people["alice"], name="never-sent", status="Submitting", dlc_job_id="")
    in_flight = make_job(ws, people["alice"], name="in-flight", status="Submitting", dlc_job_id="",
                         submit_attempts=1)
    client.force_login(people["alice"])

    html = client.post(f"/jobs/{never_sent.pk}/stop", **HTMX).content.decode()
    assert "Stop: Stopped" in html and 'id="stop-job"' not in html
    row = Job.objects.get(pk=never_sent.pk)
    assert row.status == "Stopped" and row.reason_code == "Console.CancelledBeforeSubmit"

    # Maybe already on its way to DLC: the submit stops it once created, so the row waits, without a button.
    html = client.post(f"/jobs/{in_flight.pk}/stop", **HTMX).content.decode()
    assert "Stop: Stop requested" in html and 'id="stop-job"' not in html
    row = Job.objects.get(pk=in_flight.pk)
    assert row.status == "Submitting" and row.stop_requested_at is not None
    assert 'id="stop-job"' not in client.get(f"/jobs/{in_flight.pk}").content.decode()


def test_stop_without_htmx_redirects_back_with_a_message(client, people, ws):
    job = make_job(ws, people["alice"], status="Succeeded")
    client.force_login(people["alice"])
    answer = client.post(f"/jobs/{job.pk}/stop", follow=True)
    assert answer.redirect_chain[-1][0] == f"/jobs/{job.pk}"
    assert "Stop: Already finished" in answer.content.decode()


# --- configuration -------------------------------------------------------------------------------------------

RICH_BODY = {
    "DisplayName": "rich", "Description": "trains things", "JobType": "PyTorchJob",
    "UserCommand": "python train.py --epochs 3",
    "Envs": {"API_TOKEN": "tok-very-secret", "EPOCHS": "3"},
    "JobSpecs": [{"Type": "Worker", "PodCount": 2, "Image": "registry.example/private/torch:2.3",
                  "EcsSpec": "ecs.g6.xlarge",
                  "ImageConfig": {"Username": "robot", "Password": "hunter2-registry"}}],
    "DataSources": [{"Uri": "oss://my-bucket/data/", "MountPath": "/mnt/data"}],
    "UserVpc": {"VpcId": "vpc-123", "SwitchId": "vsw-456", "SecurityGroupId": "sg-789",
                "ExtendedCIDRs": ["10.0.0.0/8"], "DefaultRoute": "eth1"},
    "Settings": {"Tags": {"team": "nlp"}, "EnableErrorMonitoringInAIMaster": True,
                 "ErrorMonitoringArgs": "--enable-log-hang-detection true",
                 "AdvancedSettings": {"RayRedisPassword": "redis-secret-pw"}},
    "CredentialConfig": {"EnableCredentialInject": True, "CredentialConfigItems": [
        {"Type": "Role", "Roles": [{"AssumeRoleFor": "iam", "RoleType": "custom",
                                    "RoleArn": "acs:ram::123456789:role/trainer"}]}]},
    "JobMaxRunningTimeMinutes": 2880,
}


def test_configuration_is_shown_in_the_wizards_sections_and_never_its_secrets(client, people, ws):
    job = make_job(ws, people["alice"], name="rich", body=RICH_BODY,
                   hints={"image_type": "address", "secrets": ["registry_password"]})
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    titles = re.findall(r'<section class="spec-section" id="section-(\w+)">\s*<h3>([^<]+)</h3>', html)
    assert [t for _, t in titles] == ["Basic information", "Environment", "Resources", "VPC",
                                      "Fault tolerance &amp; diagnosis", "RAM role"]
    for shown in ["trains things", "team=nlp", "registry.example/private/torch:2.3", "python train.py --epochs 3",
                  "oss://my-bucket/data/", "/mnt/data", "ecs.g6.xlarge", "vpc-123", "sg-789", "Private Gateway",
                  "--enable-log-hang-detection true", "acs:ram::123456789:role/trainer", "2 days", "EPOCHS"]:
        assert shown in html, shown
    for secret in ["hunter2-registry", "tok-very-secret", "redis-secret-pw"]:
        assert secret not in html, secret
    assert html.count(jobpage.HIDDEN) >= 2


def test_values_named_like_secrets_are_hidden_by_the_one_display_rule(client, people, ws):
    """The page hides what spec.looks_like_secret names: variables (ticked Secret or not; stored before the
    console sealed such names) and advanced settings (a WandbApiKey of a job imported from DLC)."""
    hidden = {"DB_PASS": "v-db-pass", "MY_AUTH": "v-my-auth", "SSH_KEY": "v-ssh-key", "AccessKeyId": "v-ak-id",
              "api_key": "v-api-key", "HFTOKEN": "v-hftoken"}
    shown = {"TOKENIZERS_PARALLELISM": "v-tokenizers", "KEYBOARD": "v-keyboard", "MONKEY_COUNT": "v-monkeys"}
    body = {"DisplayName": "masked", "JobType": "PyTorchJob", "UserCommand": "echo hi",
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}],
            "Envs": {**hidden, **shown},
            "Settings": {"AdvancedSettings": {"WandbApiKey": "v-wandb-adv", "ReleaseResourcePolicy": "pod-exit"}}}
    job = make_job(ws, people["alice"], body=body)
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    for name, value in hidden.items():
        assert name in html and value not in html, name
    for name, value in shown.items():
        assert value in html, name
    assert "v-wandb-adv" not in html and "ReleaseResourcePolicy=pod-exit" in html and "WandbApiKey" in html


def test_sections_left_empty_say_not_configured(client, people, ws):
    body = {"DisplayName": "plain", "JobType": "PyTorchJob", "UserCommand": "echo hi",
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}
    job = make_job(ws, people["alice"], body=body)
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    vpc = re.search(r'id="section-vpc">(.*?)</section>', html, re.S).group(1)
    assert "Not configured." in vpc
    ft = re.search(r'id="section-fault_tolerance">(.*?)</section>', html, re.S).group(1)
    assert re.search(r"Automatic fault tolerance</dt>\s*<dd>Off", ft)


# --- states read from the database ------------------------------------------------------------------------


def test_submit_failed_shows_dlc_code_message_request_id_and_edit_and_resubmit(client, people, ws):
    job = make_job(ws, people["alice"], status="SubmitFailed", finished_at=timezone.now(),
                   submit_error={"Code": "InvalidParameter", "Message": "PodCount must be >= 1",
                                 "RequestId": "RID-42", "Status": 400})
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    error = re.search(r'id="submit-error">(.*?)</div>', html, re.S).group(1)
    assert "InvalidParameter" in error and "PodCount must be &gt;= 1" in error and "RID-42" in error
    assert f'href="/jobs/new?edit={job.pk}"' in html and f'href="/jobs/new?clone={job.pk}"' in html
    assert "Submit failed" in html and 'id="stop-job"' not in html
    client.force_login(people["vic"])
    assert "Edit and resubmit" not in client.get(f"/jobs/{job.pk}").content.decode()


def test_a_resubmitted_job_links_its_resubmission_and_says_another_edit_makes_another_job(client, people, ws):
    """Edit and resubmit makes a new job (cloned_from the refused one); the refused job's page names it, so a second
    click is not taken for the first."""
    job = make_job(ws, people["alice"], name="refused", status="SubmitFailed", finished_at=timezone.now(),
                   submit_error={"Code": "InvalidParameter", "Message": "bad", "RequestId": "RID-1", "Status": 400})
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    assert 'id="resubmitted"' not in html
    assert re.search(r'<a class="button primary" id="edit-resubmit"[^>]*>Edit and resubmit</a>', html)
    again = make_job(ws, people["alice"], name="refused", status="Running", cloned_from=job)
    make_job(people["elsewhere"], people["olga"], name="foreign", cloned_from=job)  # not alice's to see
    html = client.get(f"/jobs/{job.pk}").content.decode()
    note = re.search(r'<div class="notice[^"]*" id="resubmitted">(.*?)</div>', html, re.S).group(1)
    assert f'Resubmitted as <a href="/jobs/{again.pk}">job {again.pk}</a>' in note and "Running" in note
    assert "foreign" not in note
    assert "Edit and resubmit again makes another job" in note
    button = re.search(r'<a class="button" id="edit-resubmit"[^>]*>(.*?)</a>', html).group(1)
    assert button == "Edit and resubmit again", "offered still, no longer the primary action"
    assert client.get(f"/jobs/{job.pk}", **HTMX).content.decode().count('id="resubmitted"') == 1, "the live part too"


def test_waiting_to_submit_is_said_truthfully(client, people, ws):
    now = timezone.now()
    fresh = make_job(ws, people["alice"], status="Submitting")
    sending = make_job(ws, people["alice"], status="Submitting", submit_attempts=1, submit_last_attempt_at=now,
                       submit_unanswered_since=now)
    unanswered = make_job(ws, people["alice"], status="Submitting", submit_attempts=1,
                          created_at=now - timedelta(minutes=2), submit_last_attempt_at=now - timedelta(seconds=95),
                          submit_unanswered_since=now - timedelta(seconds=95))
    stuck = make_job(ws, people["alice"], status="Submitting", submit_attempts=3,
                     created_at=now - timedelta(minutes=5))
    no_worker = make_job(ws, people["alice"], status="Submitting", created_at=now - timedelta(minutes=5))
    client.force_login(people["alice"])

    def note(job: Job) -> str:
        html = client.get(f"/jobs/{job.pk}").content.decode()
        return unescape(re.search(r'id="waiting-note">(.*?)</div>', html, re.S).group(1))

    html = client.get(f"/jobs/{fresh.pk}").content.decode()
    assert 'id="stop-job"' in html and "DLC does not know" not in html  # events are loaded lazily
    assert note(fresh) == "<strong>Waiting to submit.</strong> Sending to DLC…"
    assert note(sending).endswith("Sending to DLC…"), "the first attempt is on its way: nothing is wrong yet"
    assert re.search(r"Attempt 1 was sent to DLC 1m 3[5-7]s ago and has no answer yet", note(unanswered))
    assert re.search(r"Not yet accepted by DLC after 5m \d*s?\s*\(3 attempts so far; the last one failed with a "
                     r"temporary error\)", note(stuck))
    assert "no worker has picked it up yet" in note(no_worker) and "once the queue and a worker" in note(no_worker)
    for job in (unanswered, stuck, no_worker):
        assert "no need to resubmit" in note(job) and "Sending to DLC" not in note(job)


def test_waiting_to_submit_says_what_dlc_answered_the_last_attempt(client, people, ws):
    """The row keeps DLC's answer to a failed attempt in submit_error (the same dict as a final failure's)."""
    now = timezone.now()
    busy = {"Code": "ServiceUnavailable", "Message": "The service is <busy>", "RequestId": "RID-9", "Status": 503}
    retrying = make_job(ws, people["alice"], status="Submitting", submit_attempts=2, submit_error=busy,
                        created_at=now - timedelta(seconds=40), submit_last_attempt_at=now - timedelta(seconds=5))
    again = make_job(ws, people["alice"], status="Submitting", submit_attempts=3, submit_error=busy,
                     created_at=now - timedelta(seconds=40), submit_last_attempt_at=now, submit_unanswered_since=now)
    unreachable = make_job(ws, people["alice"], status="Submitting", submit_attempts=1,
                           submit_error={"Code": "Connection.ConnectionRefusedError", "Message": "", "Status": None})
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{retrying.pk}").content.decode()
    assert ("DLC did not accept attempt 2: ServiceUnavailable (HTTP 503): The service is &lt;busy&gt;. The job is "
            "kept and is sent again automatically; there is no need to resubmit.") in html
    assert 'id="submit-error"' not in html, "not a refusal: the job is still waiting"
    html = unescape(client.get(f"/jobs/{again.pk}").content.decode())
    assert "DLC did not accept attempt 2: ServiceUnavailable (HTTP 503)" in html
    assert "Attempt 3 is being sent now." in html
    html = client.get(f"/jobs/{unreachable.pk}").content.decode()
    assert "DLC did not accept attempt 1: Connection.ConnectionRefusedError. The job is kept" in html
    assert "Sending to DLC" not in html


def test_a_503_from_dlc_is_said_on_the_waiting_note(client, people, ws, localdlc):
    """A real CreateJob answered 503: the attempt is over, the job waits for its retry, and the page says so."""
    body = {"DisplayName": "busy", "JobType": "PyTorchJob", "UserCommand": "true",
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                          "EcsSpec": "ecs.g6.large"}]}
    job = make_job(ws, people["alice"], name="busy", status="Submitting", body=body)
    localdlc.set_faults({"action": "CreateJob", "mode": "503", "count": 1})
    try:
        with pytest.raises(dlc.DLCError) as busy:
            lifecycle.submit(job.pk)
    finally:
        localdlc.clear_faults()
    assert busy.value.transient and busy.value.status == 503
    client.force_login(people["alice"])
    html = unescape(client.get(f"/jobs/{job.pk}").content.decode())
    note = re.search(r'id="waiting-note">(.*?)</div>', html, re.S).group(1)
    assert "Sending to DLC" not in note and "no need to resubmit" in note
    # jobs.lifecycle keeps DLC's answer to a failed attempt on the row, and the note says it.
    assert Job.objects.get(pk=job.pk).submit_error == busy.value.as_dict()
    assert f"DLC did not accept attempt 1: {busy.value.code} (HTTP 503)" in note
    # In full, message included, as for a final refusal.
    note = unescape(client.get(f"/jobs/{job.pk}").content.decode())
    assert f"DLC did not accept attempt 1: {busy.value.code} (HTTP 503): {busy.value.message}" in note


def test_timeline_pods_and_clone_links_come_from_the_database(client, people, ws):
    source = make_job(ws, people["alice"], name="the-original", status="Succeeded")
    job = make_job(
        ws, people["alice"], name="the-clone", status="Running", cloned_from=source, dlc_job_id="dlc-t",
        submitted_at=timezone.now() - timedelta(minutes=3),
        status_history=[
            {"Status": "Creating", "StartTime": "2026-03-01T12:00:00Z", "EndTime": "2026-03-01T12:00:05Z"},
            {"Status": "EnvPreparing", "StartTime": "2026-03-01T12:00:05Z", "EndTime": "2026-03-01T12:01:05Z"},
            {"Status": "Running", "StartTime": "2026-03-01T12:01:05Z"},
        ],
        pods=[{"PodId": "dlc-t-worker-1", "Type": "Worker", "Status": "Running", "Ip": "10.1.0.8",
               "GmtStartTime": "2026-03-01T12:01:05Z"},
              {"PodId": "dlc-t-master-0", "Type": "Master", "Status": "Succeeded", "Ip": "10.1.0.7",
               "GmtStartTime": "2026-03-01T12:01:04Z", "GmtFinishTime": "2026-03-01T12:02:00Z"}],
    )
    make_job(ws, people["alice"], name="grandchild", cloned_from=job)
    make_job(people["elsewhere"], people["olga"], name="foreign-clone", cloned_from=job)
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    steps = re.findall(r'<li><span class="badge \w+">([^<]+)</span>', html)
    assert steps == ["Waiting to submit", "Creating", "Preparing environment", "Running"]
    assert "1m" in re.search(r"Preparing environment</span>(.*?)</li>", html, re.S).group(1)
    # Logs first (on a phone a last column starts off screen), named with its pod for a screen reader.
    pods = re.findall(r'<tr data-pod="([^"]+)">\s*<td><a id="pod-logs-\1" [^>]*>Logs<span class="visually-hidden"> '
                      r'of (\w+ \d+)</span></a></td>\s*<td>(\w+)</td><td>(\d+)</td><td>(\w+)</td>'
                      r'<td class="mono">([\d.]+)', html)
    assert pods == [("dlc-t-master-0", "Master 0", "Master", "0", "Succeeded", "10.1.0.7"),
                    ("dlc-t-worker-1", "Worker 1", "Worker", "1", "Running", "10.1.0.8")]
    assert "2026-03-01 12:02:00" in html
    assert f'<a href="/jobs/{source.pk}" id="cloned-from">the-original</a>' in html
    assert "grandchild" in html and "foreign-clone" not in html


def test_the_page_reads_only_the_database_and_refreshes_while_active(client, people, ws, localdlc):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-not-asked", pods=[{"PodId": "p-0", "Type": "Worker"}])
    client.force_login(people["alice"])
    before = localdlc.stats()["total"]
    page = client.get(f"/jobs/{job.pk}").content.decode()
    live = client.get(f"/jobs/{job.pk}", **HTMX).content.decode()
    assert localdlc.stats()["total"] == before, "logs and events load lazily, after the page"
    assert f'hx-get="/jobs/{job.pk}/events" hx-trigger="load"' in page
    assert f'hx-get="/jobs/{job.pk}/logs?pod=' in page
    assert live.lstrip().startswith("{#") is False and "<html" not in live
    assert re.search(rf'<div id="job-live" data-active="yes" hx-get="/jobs/{job.pk}" hx-trigger="every 2s"', live)
    job.status = "Succeeded"
    job.save()
    live = client.get(f"/jobs/{job.pk}", **HTMX).content.decode()
    assert re.search(r'<div id="job-live" data-active="no"[\s>]', live) and "hx-trigger" not in live.split(">")[0]


def test_a_refused_stop_is_shown_with_dlcs_error(client, people, ws):
    job = make_job(ws, people["alice"], status="Stopping", dlc_job_id="dlc-r")
    lifecycle.stop_failed(job.pk, dlc.DLCError("Forbidden.Stop", "Cannot stop now.", "RID-7"))
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}").content.decode()
    refused = re.search(r'id="stop-error">(.*?)</div>', html, re.S).group(1)
    assert "Forbidden.Stop" in refused and "Cannot stop now." in refused and "RID-7" in refused


def test_stop_results_in_words():
    assert jobpage.stop_outcome("failed: Throttling: slow down", None, 7).text == "Failed: Throttling: slow down"
    assert jobpage.stop_outcome("stopped", None, 7).text == "Stopped"
    assert jobpage.stop_outcome("stopping", None, 7).name == "Job 7"


# --- events ----------------------------------------------------------------------------------------------


def test_events_come_from_dlc_and_a_failure_is_shown_inline(client, people, ws, settings):
    job = on_localdlc(ws, people["alice"], "echo done")
    client.force_login(people["alice"])
    settings.TIME_ZONE = "Asia/Shanghai"
    html = client.get(f"/jobs/{job.pk}/events", **HTMX).content.decode()
    assert re.findall(r"<li>", html), html
    # DLC's UTC event times are shown in the console's zone, like every other time on the job page.
    assert re.search(r'<li><time datetime="[\d-]+T[\d:]+\+08:00">[\d-]+ [\d:]+</time> \[Normal\] Created', html), html
    assert not re.search(r"\d\dZ", html), html
    assert "hx-trigger" not in html, "a finished job's events are not polled"
    ws.endpoint = f"127.0.0.1:{closed_port()}"
    ws.save()
    started = time.monotonic()
    answer = client.get(f"/jobs/{job.pk}/events", **HTMX)
    assert answer.status_code == 200 and "Could not read events from DLC" in answer.content.decode()
    assert time.monotonic() - started < 10


def test_events_of_a_job_dlc_does_not_know_yet(client, people, ws):
    job = make_job(ws, people["alice"], status="Submitting")
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}/events", **HTMX).content.decode()
    assert "DLC does not know this job yet" in html and 'hx-trigger="every 5s"' in html


def test_without_javascript_the_events_open_as_a_page_of_their_own(client, people, ws):
    # QA: without JavaScript the Events card said "Loading events…" for ever (it loads by htmx).
    job = on_localdlc(ws, people["alice"], "echo done", name="evented")
    client.force_login(people["alice"])
    page = client.get(f"/jobs/{job.pk}").content.decode()
    assert f'<noscript><p><a id="events-page" href="/jobs/{job.pk}/events">Open the events</a>' in page
    html = client.get(f"/jobs/{job.pk}/events").content.decode()  # the link followed without JavaScript
    assert html.startswith("<!doctype html>") and "<title>Events · evented · DLC Console</title>" in html
    assert f'<a href="/jobs/{job.pk}#events-section">Back to evented</a>' in html
    assert re.search(r'<section class="card" id="events-section">\s*<div id="events">', html)
    assert re.search(r"<li><time [^>]*>[^<]+</time> \[Normal\] Created", html), html
    fragment = client.get(f"/jobs/{job.pk}/events", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="events"'), "htmx still gets the fragment"


# --- logs --------------------------------------------------------------------------------------------------

THIRTY = "for i in $(seq 1 30); do echo line-$i; done; echo '<script>alert(1)</script> & more'"


def texts_of(html: str) -> list[str]:
    return [text for _, text in lines_of(html)]


def since_of(tail: str) -> int:
    return int(re.search(r'data-since="(\d+)"', tail).group(1))


def pod_log_calls(localdlc) -> int:
    return localdlc.stats()["calls"].get("GetPodLogs", 0)


def wait_for_last_line(ws, job: Job, pod: str, last: str) -> None:
    """Until DLC's log ends with `last`, then until it has settled (the console reads SETTLE behind now)."""
    deadline = time.monotonic() + 30
    while dlc.get_pod_logs(ws, job.dlc_job_id, pod, max_lines=1) != [last]:
        assert time.monotonic() < deadline, f"the pod never printed {last!r}"
        time.sleep(0.1)
    time.sleep(podlogs.SETTLE.total_seconds() + 0.1)


def test_an_archived_log_is_numbered_escaped_and_searched_whole(client, people, ws):
    job = on_localdlc(ws, people["alice"], THIRTY)
    assert logarchive.archive(job.pk) == 1
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
    got = lines_of(panel)
    assert [n for n, _ in got] == list(range(1, 32))
    assert got[0] == (1, "line-1") and got[30] == (31, "<script>alert(1)</script> & more")
    assert "&lt;script&gt;" in panel and "<script>alert" not in panel
    assert 'data-following="no"' in tail_of(panel) and "hx-get" not in tail_of(panel)
    assert "End of log, 31 lines." in panel and 'id="log-note"' not in panel

    found = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?q=LINE-2", **HTMX).content.decode()
    assert [n for n, _ in lines_of(found)] == [2, *range(20, 30)], "the whole archive is searched"
    assert '<mark>line-2</mark>0' in found and 'value="LINE-2"' in found
    special = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?q=<script>", **HTMX).content.decode()
    assert "<mark>&lt;script&gt;</mark>alert(1)" in special
    # QA: a search that finds nothing showed an empty box and "End of log", as if the search had failed.
    nothing = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?q=<zzz>", **HTMX).content.decode()
    assert lines_of(nothing) == [] and "No line contains “&lt;zzz&gt;”." in nothing
    assert "No line contains" not in found


def test_the_log_search_is_in_the_url_and_a_url_with_one_opens_searched(client, people, ws):
    job = on_localdlc(ws, people["alice"], THIRTY, name="searched")
    assert logarchive.archive(job.pk) == 1
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])

    # The search form's answer sets the page's URL to one that says the pod and the search.
    form = re.search(r'<form class="logsearch" id="([^"]+)"', client.get(f"/jobs/{job.pk}/logs", **HTMX).text)
    searched = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"pod": pod, "q": " LINE-2 "}, **HTMX,
                          HTTP_HX_TRIGGER=form.group(1))
    url = searched["HX-Push-Url"]
    assert url == f"/jobs/{job.pk}?pod={pod}&q=LINE-2#logs"
    assert [n for n, _ in lines_of(searched.text)] == [2, *range(20, 30)]
    clear = re.search(r'<a [^>]*hx-push-url="([^"]+)">Clear search</a>', searched.text)
    assert unescape(clear.group(1)) == f"/jobs/{job.pk}?pod={pod}#logs", "clearing the search clears it in the URL"
    # The tail's and the pod tabs' requests leave the URL alone.
    assert "HX-Push-Url" not in client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"q": "LINE-2"}, **HTMX)

    # Reloading (or sharing) that URL opens the page with the same search applied and shown.
    page = client.get(url.split("#")[0]).text
    loader = unescape(re.search(r'<div id="log-panel" hx-get="([^"]+)"', page).group(1))
    panel = client.get(loader, **HTMX).text
    assert [n for n, _ in lines_of(panel)] == [2, *range(20, 30)] and 'value="LINE-2"' in panel
    assert "lines containing “LINE-2”" in panel

    # A term too long to search for: said at the search box, the log shown unsearched, never an error page.
    page = client.get(f"/jobs/{job.pk}", {"pod": pod, "q": "x" * 5000})
    assert page.status_code == 200
    loader = unescape(re.search(r'<div id="log-panel" hx-get="([^"]+)"', page.text).group(1))
    panel = client.get(loader, **HTMX)
    assert panel.status_code == 200
    error = re.search(r'<span class="error" id="log-search-error">([^<]+)</span>', panel.text).group(1)
    assert error == "A search term has at most 200 characters; this one has 5000. The log below is not searched."
    assert 'aria-invalid="true"' in panel.text and f'value="{"x" * 5000}"' in panel.text, "kept to be corrected"
    assert len(lines_of(panel.text)) == 31 and "lines containing" not in panel.text
    # A hand-made tail request with one is refused with the reason.
    since = podlogs.encode_cursor(timezone.now() - timedelta(seconds=5))
    tail = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"since": since, "q": "x" * 201}, **HTMX)
    assert tail.status_code == 400 and "at most 200 characters" in tail.text


def test_a_live_log_shows_its_last_1000_lines_then_every_later_line_once(client, people, ws, localdlc):
    """5,000 lines, then more while the page follows: the first view is the last 1000 (the rest is in the
    download); tail requests, each with the cursor the previous answer carried, give every later line once, in
    order, at one GetPodLogs call each; with the first view they are the end of the log archived at the end."""
    command = "seq 1 5000; sleep 2.5; for i in $(seq 5001 5040); do echo $i; sleep 0.05; done"
    job = on_localdlc(ws, people["alice"], command, until=("Running",))
    pod = job.pods[0]["PodId"]
    wait_for_last_line(ws, job, pod, "5000")
    client.force_login(people["alice"])
    calls = pod_log_calls(localdlc)
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
    assert pod_log_calls(localdlc) - calls == 1, "the first view is one GetPodLogs call"
    assert all(n is None for n, _ in lines_of(panel)), "a live window has no line numbers"
    shown = texts_of(panel)
    last = int(shown[-1])
    assert last >= 5000 and shown == [str(i) for i in range(last - 999, last + 1)]
    assert "Showing the last 1000 lines: “Load older lines” at the top shows earlier ones." in panel
    tail = tail_of(panel)
    assert 'data-following="yes"' in tail and 'hx-trigger="every 1s"' in tail
    assert 'hx-target="#log-lines"' in tail and 'hx-swap="beforeend' in tail
    cursor = since_of(tail)
    assert f'hx-get="/jobs/{job.pk}/pods/{pod}/logs?since={cursor}"' in tail

    per_request: list[int] = []
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, "the tail never stopped following"
        time.sleep(0.3)
        lifecycle.apply_remote(job, dlc.get_job(ws, job.dlc_job_id))  # what the beat's sync does
        calls = pod_log_calls(localdlc)
        answer = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={cursor}", **HTMX)
        per_request.append(pod_log_calls(localdlc) - calls)
        html = answer.content.decode()
        assert answer.status_code == 200 and "log-panel" not in html
        assert all(n is None for n, _ in lines_of(html))
        shown += texts_of(html)
        tail = tail_of(html)
        assert 'hx-swap-oob="true"' in tail and since_of(tail) > cursor
        cursor = since_of(tail)
        if 'data-following="no"' in tail:
            break
        assert f"?since={cursor}" in tail
    assert per_request == [1] * len(per_request), "one GetPodLogs call per refresh (no burst here)"
    assert shown[1000:] == [str(i) for i in range(last + 1, 5041)], "every later line once, in order"
    assert job.status == "Succeeded", "the tail followed the pod to its end, then stopped"

    assert logarchive.archive(job.pk) == 1
    archived = logarchive.read(job, pod)
    assert archived == [str(i) for i in range(1, 5041)]
    assert shown == archived[-len(shown):]


def test_a_burst_that_fills_a_tail_read_is_paged_and_the_tail_is_searched(client, people, ws, localdlc):
    job = on_localdlc(ws, people["alice"], "seq 1 5000; echo tick-1; echo tock; echo tick-2; sleep 60",
                      until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "tick-2")
        client.force_login(people["alice"])
        start, _ = logarchive.pod_range(job, job.pods[0])
        since = podlogs.encode_cursor(start)  # the earliest cursor there is: the whole log is new to it
        calls = pod_log_calls(localdlc)
        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={since}", **HTMX).content.decode()
        assert texts_of(html) == [*map(str, range(1, 5001)), "tick-1", "tock", "tick-2"], "no line lost"
        assert pod_log_calls(localdlc) - calls > 2, "5,003 lines do not fit one 2,000-line answer"
        assert 'data-following="yes"' in tail_of(html) and "skipped" not in html

        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={since}&q=TICK", **HTMX).content.decode()
        assert texts_of(html) == ["tick-1", "tick-2"] and html.count("<mark>tick</mark>-") == 2
        assert "q=TICK" in tail_of(html), "later tail requests keep the search"

        # A cursor exactly at a line's stamp (localdlc's own record of it): that line was the previous read's
        # last, so the next read starts after it.
        records = (localdlc.data_dir / "jobs" / job.dlc_job_id / "logs" / f"{pod}.log").read_text().splitlines()
        stamps = [(round(float(r.split("\t", 1)[0]) * 1_000_000), r.split("\t", 1)[1]) for r in records]
        at = dict((text, stamp) for stamp, text in stamps)["2500"]
        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={at}", **HTMX).content.decode()
        assert texts_of(html) == [text for stamp, text in stamps if stamp > at]
        assert texts_of(html)[0] in ("2501", "2502", "2503"), "lines stamped in the same microsecond go together"
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_a_tail_far_behind_reads_its_newest_lines_only(client, people, ws, localdlc, monkeypatch):
    """A tail whose cursor is far behind (a laptop asleep for a night) sends only the newest TAIL_MAX_LINES lines,
    and must read no more than those from DLC: paging the whole gap was one GetPodLogs call per page of it (a night
    of a chatty pod: thousands of calls in one request). Pages of 100 and a limit of 250 stand in for 2000/10000."""
    monkeypatch.setattr(podlogs, "TAIL_PAGE_LINES", 100)
    monkeypatch.setattr(podlogs, "TAIL_MAX_LINES", 250)
    printer = "import time\nfor i in range(1, 3001):\n    print(i, flush=True)\n    time.sleep(0.0003)\nprint('end')"
    job = on_localdlc(ws, people["alice"], f"python3 -c \"{printer}\"; sleep 60", until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "end")
        client.force_login(people["alice"])
        since = podlogs.encode_cursor(podlogs._floor(job, pod))
        calls = pod_log_calls(localdlc)
        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={since}", **HTMX).content.decode()
        calls = pod_log_calls(localdlc) - calls
        assert calls <= 40, f"{calls} GetPodLogs calls for the newest 250 of 3,001 lines"
        shown = texts_of(html)
        assert shown[-1] == "end" and shown == [*map(str, range(3002 - len(shown), 3001)), "end"]
        assert len(shown) == 250, "the newest TAIL_MAX_LINES lines"
        assert "Earlier lines were skipped here" in html and 'data-following="yes"' in tail_of(html)
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_a_live_search_covers_the_last_1000_lines_and_says_so(client, people, ws):
    job = on_localdlc(ws, people["alice"], "seq 1 1500; sleep 60", until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "1500")
        client.force_login(people["alice"])
        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?q=99", **HTMX).content.decode()
        assert texts_of(html) == [str(i) for i in range(501, 1501) if "99" in str(i)], "not 99 itself"
        assert "The search covers the last 1000 lines so far: “Search older lines” at the top searches further back." \
            in html
        assert "<mark>99</mark>9" in html and 'data-following="yes"' in tail_of(html)
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def older_link(html: str) -> str | None:
    found = re.search(r'<div id="log-older"[^>]*>.*?<button [^>]*hx-get="([^"]+)"', html)
    return unescape(found.group(1)) if found else None


def test_older_lines_of_a_running_log_come_page_by_page_each_once_at_a_bounded_cost(client, people, ws, localdlc,
                                                                                   monkeypatch):
    """GetPodLogs has no offset: each "Load older lines" reads back from where the last one read its range whole,
    so pages deep in the log cost no more calls than the first, and together with the first view they are the
    whole log, each line once, in order. Pages of 1,500 lines stand in for 5,000."""
    monkeypatch.setattr(podlogs, "OLDER_PAGE", 1500)
    printer = "import time\nfor i in range(1, 9001):\n    print(i, flush=True)\n    time.sleep(0.0002)\nprint('end')"
    job = on_localdlc(ws, people["alice"], f"python3 -c \"{printer}\"; sleep 60", until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "end")
        client.force_login(people["alice"])
        panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).text
        shown = texts_of(panel)
        assert shown == [*map(str, range(8002, 9001)), "end"]
        link = older_link(panel)
        assert link and "Load older lines</button>" in panel
        per_page, skips = [], []
        while link:
            assert len(per_page) < 20, "the older pages never reached the start"
            skips.append(int(re.search(r"skip=(\d+)", link).group(1)))
            calls = pod_log_calls(localdlc)
            answer = client.get(link, **HTMX)
            per_page.append(pod_log_calls(localdlc) - calls)
            assert answer.status_code == 200 and "log-panel" not in answer.text and "log-tail" not in answer.text
            assert answer.text.lstrip().startswith('<div id="log-older"'), "the bar first: the lines land before it"
            shown = texts_of(answer.text) + shown
            link = older_link(answer.text)
        assert shown == [*map(str, range(1, 9001)), "end"], "every line once, in order"
        assert "Start of the log." in answer.text and len(per_page) == 6
        # The time splits a page needs depend on how the lines fell in time (a loaded machine prints unevenly): the
        # last page once took 13 calls to the first's 9. What matters is that depth does not add to the cost.
        assert max(per_page) <= 2 * per_page[0], f"a page deep in the log costs like the first: {per_page}"
        assert max(skips) < 1500 + 2 * logarchive.PAGE_LINES, f"the next page goes on from a time, not a count: {skips}"
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_a_live_search_goes_back_on_demand_to_an_early_line(client, people, ws, localdlc):
    job = on_localdlc(ws, people["alice"], "echo 'Traceback (early)'; seq 1 3000; sleep 60", until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "3000")
        client.force_login(people["alice"])
        html = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"q": "traceback"}, **HTMX).text
        assert texts_of(html) == [] and "Search older lines</button>" in html
        link = older_link(html)
        assert "q=traceback" in link, "the search goes with the button"
        answer = client.get(link, **HTMX).text
        assert texts_of(answer) == ["Traceback (early)"] and "<mark>Traceback</mark> (early)" in answer
        assert "2001 earlier lines searched." in answer and "Start of the log." in answer
        assert older_link(answer) is None
        # The note above the box said "the last 1000 lines so far": the answer replaces it (out of band).
        assert "The search covers the last 1000 lines so far" in html
        assert '<div class="muted" id="log-note" hx-swap-oob="true">The search covers the whole log.</div>' in answer
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_older_lines_of_an_archived_log_keep_their_numbers(client, people, ws, localdlc):
    job = on_localdlc(ws, people["alice"], "seq 1 2500", name="archived-older")
    assert logarchive.archive(job.pk) == 1
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).text
    assert [n for n, _ in lines_of(panel)] == list(range(1501, 2501))
    assert "1500 earlier lines not shown here: “Load older lines” at the top shows them." in panel
    link = older_link(panel)
    assert link == f"/jobs/{job.pk}/pods/{pod}/logs?upto=1501"
    calls = pod_log_calls(localdlc)
    answer = client.get(link, **HTMX).text
    assert lines_of(answer) == [(i, str(i)) for i in range(1, 1501)] and "Start of the log." in answer
    assert pod_log_calls(localdlc) == calls, "the archive: no DLC call"
    searched = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"q": "99"}, **HTMX).text
    assert older_link(searched) is None, "every match of the archive is shown at once (fewer than 1000)"
    answer = client.get(f"{link}&q=99", **HTMX).text
    assert [n for n, _ in lines_of(answer)] == [i for i in range(1, 1501) if "99" in str(i)]
    assert "1500 earlier lines searched." in answer


def test_a_long_archived_log_opens_from_its_start_in_one_click_and_the_note_follows_each_load(client, people, ws):
    """QA: reaching line 1 of a 100k-line archive took ~20 "Load older lines" clicks, and after each the note still
    said what the first view had left out."""
    job = on_localdlc(ws, people["alice"], "seq 1 7000", name="archived-start")
    assert logarchive.archive(job.pk) == 1
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).text
    start = re.search(r'<a href="([^"]*from=start[^"]*)" hx-get="\1"[^>]*>Read from the start</a>', panel)
    assert start, "the note offers the start"
    first = client.get(unescape(start.group(1)), **HTMX).text
    assert lines_of(first) == [(i, str(i)) for i in range(1, 5001)]
    assert "Showing the first 5000 lines; 2000 later lines not shown: " in first and "Go to the end</a>" in first
    assert 'data-stick="no"' in first, "opened at its start, the box is not scrolled to its end"
    searched = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"from": "start", "q": "99"}, **HTMX).text
    assert [n for n, _ in lines_of(searched)] == [i for i in range(1, 7001) if "99" in str(i)]
    older = client.get(older_link(panel), **HTMX).text
    assert [n for n, _ in lines_of(older)] == list(range(1001, 6001))
    assert '<div class="muted" id="log-note" hx-swap-oob="true">' in older
    assert "1000 earlier lines not shown here: “Load older lines” at the top shows them." in older


def test_without_javascript_the_logs_open_as_a_page_whose_links_and_search_work(client, people, ws):
    """QA: without JavaScript the Logs card said "Loading logs…" for ever. The job page's <noscript> link opens the
    panel on a page of its own, where the search, the pod tabs, the download and "Read from the start" / "Go to
    the end" are plain requests that open that page again; "Load older lines" says it needs JavaScript."""
    job = on_localdlc(ws, people["alice"], "seq 1 7000", name="no-js-logs")
    assert logarchive.archive(job.pk) == 1
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    page = client.get(f"/jobs/{job.pk}", {"pod": pod, "q": "99"}).content.decode()
    link = re.search(r'<noscript><p><a id="logs-page" href="([^"]+)">Open the logs</a>', page)
    # The pod and the search kept; #log-end, at the end of the box, scrolls it to the newest lines (no JavaScript).
    assert link and unescape(link.group(1)) == f"/jobs/{job.pk}/logs?pod={pod}&q=99#log-end"

    html = client.get(f"/jobs/{job.pk}/logs", {"pod": pod}).content.decode()
    assert html.startswith("<!doctype html>") and "<title>Logs · no-js-logs · DLC Console</title>" in html
    assert f'<a href="/jobs/{job.pk}#logs">Back to no-js-logs</a>' in html
    assert [n for n, _ in lines_of(html)] == list(range(6001, 7001)) and '<span id="log-end"></span></div>' in html
    # The search form and its Clear link come back to this page, not to the job page that needs JavaScript.
    assert f'<form class="logsearch" id="log-search" method="get" action="/jobs/{job.pk}/logs#log-end"' in html
    assert f'id="log-download" href="/jobs/{job.pk}/pods/{pod}/logs/download" download>' in html
    searched = client.get(f"/jobs/{job.pk}/logs", {"pod": pod, "q": "699"}).content.decode()  # the form sent
    assert searched.startswith("<!doctype html>")
    assert [n for n, _ in lines_of(searched)] == [i for i in range(1, 7001) if "699" in str(i)]
    clear = re.search(r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#log-panel" [^>]*>Clear search</a>', searched)
    assert unescape(clear.group(1)) == f"/jobs/{job.pk}/logs?pod={pod}#log-end"
    # "Load older lines" does nothing without JavaScript: hidden then (.js-only), and a line says where they are.
    assert '<noscript><style>.js-only { display: none !important; }</style></noscript>' in html
    assert re.search(r'<button type="button" class="link js-only" id="log-older-load"', html)
    assert "Earlier lines load here with JavaScript; without it, “Download full log” has them all." in html
    # "Read from the start" and "Go to the end" are links: without JavaScript they open this page at that end.
    start = unescape(re.search(r'<a href="([^"]*from=start[^"]*)"[^>]*>Read from the start</a>', html).group(1))
    first = client.get(start).content.decode()
    assert first.startswith("<!doctype html>") and lines_of(first)[:2] == [(1, "1"), (2, "2")]
    end = unescape(re.search(r'<a href="([^"]+)"[^>]*>Go to the end</a>', first).group(1))
    assert end == f"/jobs/{job.pk}/pods/{pod}/logs#log-end"
    last = client.get(end).content.decode()
    assert last.startswith("<!doctype html>") and lines_of(last)[-1] == (7000, "7000")
    # The tabs go to this page from any of its addresses (a relative "?pod=" from ?from=start named the wrong pod).
    assert re.search(rf'<h1>Logs <small>job {job.pk}</small></h1>', last)

    # With JavaScript nothing changes: the job page's panel is a fragment whose plain links go to the job page.
    panel = client.get(f"/jobs/{job.pk}/logs", {"pod": pod}, **HTMX).content.decode()
    assert panel.lstrip().startswith('<div id="log-panel"') and "<!doctype" not in panel
    assert f'method="get" action="/jobs/{job.pk}#logs"' in panel


def two_worker_job(client, owner, ws, dlc_job_id: str) -> Job:
    """A running job of two worker pods (`<dlc_job_id>-worker-0` and `-1`) that localdlc does not know, its owner
    signed in on `client`."""
    client.force_login(owner)
    return make_job(ws, owner, dlc_job_id=dlc_job_id, created_at=timezone.now() - timedelta(minutes=5),
                    pods=[{"PodId": f"{dlc_job_id}-worker-{i}", "Type": "Worker", "Status": "Running"}
                          for i in (0, 1)])


def test_without_javascript_a_log_that_updates_itself_says_to_reload(client, people, ws):
    job = two_worker_job(client, people["alice"], ws, "dlc-nojs")
    html = client.get(f"/jobs/{job.pk}/pods/dlc-nojs-worker-1/logs").content.decode()
    # localdlc has no such job: "trying again", which only JavaScript does (as it follows a log that reads).
    assert html.startswith("<!doctype html>") and "; trying again." in html
    assert ('<noscript><span class="muted" id="log-tail-nojs">Without JavaScript this log does not update by '
            'itself: reload this page for newer lines.</span></noscript>') in html
    tabs = re.findall(r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#log-panel"[^>]*id="log-tab-', html)
    assert [unescape(t) for t in tabs] == [f"/jobs/{job.pk}/logs?pod=dlc-nojs-worker-{i}#log-end" for i in (0, 1)], \
        "a tab names its pod from any address of the page (a relative ?pod= on /pods/<pod>/logs kept that pod)"


def test_a_bad_older_lines_request_is_a_400_with_a_message(client, people, ws, localdlc):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-o", created_at=timezone.now() - timedelta(minutes=5),
                   pods=[{"PodId": "dlc-o-worker-0", "Type": "Worker", "Status": "Running"}])
    client.force_login(people["alice"])
    url = f"/jobs/{job.pk}/pods/dlc-o-worker-0/logs"
    now = podlogs.encode_cursor(timezone.now())
    future = podlogs.encode_cursor(timezone.now() + timedelta(hours=1))
    calls = pod_log_calls(localdlc)
    for query, says in [("upto=", "`upto` must be"), ("upto=0", "`upto` must be"), ("upto=x", "`upto` must be"),
                        (f"until={now}", "`skip` must be"), (f"until={now}&skip=-1", "`skip` must be"),
                        (f"until={now}&skip=99999999", "`skip` must be"), ("until=abc&skip=1", "`until` must be"),
                        (f"until={future}&skip=1", "`until` is in the future"),
                        (f"until={now}&skip=1&q={'x' * 201}", "at most 200 characters")]:
        answer = client.get(f"{url}?{query}", **HTMX)
        assert answer.status_code == 400, query
        assert says in answer.text and answer["Content-Type"].startswith("text/plain"), (query, answer.text)
    assert pod_log_calls(localdlc) == calls, "a refused request costs no DLC call"


def test_a_bad_tail_cursor_is_a_400_with_a_message(client, people, ws, localdlc):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-c", created_at=timezone.now() - timedelta(minutes=5),
                   pods=[{"PodId": "dlc-c-worker-0", "Type": "Worker", "Status": "Running"}])
    client.force_login(people["alice"])
    url = f"/jobs/{job.pk}/pods/dlc-c-worker-0/logs"
    future = podlogs.encode_cursor(timezone.now() + timedelta(hours=1))
    before = podlogs.encode_cursor(job.created_at - timedelta(hours=1))
    calls = pod_log_calls(localdlc)
    for query, says in [("since=", "microseconds since 1970"), ("since=yesterday", "microseconds since 1970"),
                        ("since=-1", "microseconds since 1970"), ("since=1e6", "microseconds since 1970"),
                        ("since=" + "9" * 40, "microseconds since 1970"), (f"since={future}", "in the future"),
                        (f"since={before}", "before this pod"), ("after=12", "out of date")]:
        answer = client.get(f"{url}?{query}", **HTMX)
        assert answer.status_code == 400, query
        assert says in answer.content.decode() and answer["Content-Type"].startswith("text/plain"), query
    assert pod_log_calls(localdlc) == calls, "a refused cursor costs no DLC call"


def test_download_streams_the_whole_log_as_text(client, people, ws):
    job = on_localdlc(ws, people["alice"], "seq 1 1500", name="big")
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    expected = "".join(f"{i}\n" for i in range(1, 1501))
    answer = client.get(f"/jobs/{job.pk}/pods/{pod}/logs/download")  # not archived yet: read whole from DLC
    assert answer.streaming and answer["Content-Type"] == "text/plain; charset=utf-8"
    assert answer["Content-Disposition"] == f'attachment; filename="big-{pod}.log"'
    assert b"".join(answer.streaming_content).decode() == expected
    panel = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", **HTMX).content.decode()
    assert lines_of(panel) == [(None, str(i)) for i in range(501, 1501)], "ended, not archived: DLC's window"
    assert "Showing the last 1000 lines" in panel and 'data-following="no"' in tail_of(panel)
    assert "hx-get" not in tail_of(panel), "an ended job's window reaches its end: no tail"

    assert logarchive.archive(job.pk) == 1
    panel = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", **HTMX).content.decode()
    assert [n for n, _ in lines_of(panel)] == list(range(501, 1501))
    assert "500 earlier lines not shown here" in panel and "End of log, 1500 lines." in panel
    answer = client.get(f"/jobs/{job.pk}/pods/{pod}/logs/download")
    assert b"".join(answer.streaming_content).decode() == expected


def test_archived_logs_are_read_once_the_job_ended_even_without_dlc(client, people, ws):
    # The pause keeps the lines clear of the last second before the archive runs (see the report on
    # logarchive.pod_range, which cuts its end to the whole second).
    job = on_localdlc(ws, people["alice"], "echo kept-1; echo kept-2; sleep 1.2")
    assert logarchive.archive(job.pk) == 1
    ws.endpoint = f"127.0.0.1:{closed_port()}"
    ws.save()
    pod = job.pods[0]["PodId"]
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
    assert lines_of(panel) == [(1, "kept-1"), (2, "kept-2")]
    download = client.get(f"/jobs/{job.pk}/pods/{pod}/logs/download")
    assert b"".join(download.streaming_content) == b"kept-1\nkept-2\n"


def test_unreadable_logs_are_an_inline_error_retried_and_a_502_download(client, people, ws):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-gone", pods=[{"PodId": "dlc-gone-worker-0", "Type": "Worker"}])
    ws.endpoint = f"127.0.0.1:{closed_port()}"
    ws.save()
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX)
    html = panel.content.decode()
    assert panel.status_code == 200 and "Could not read the log" in html and "trying again" in html
    assert re.search(rf'<div id="log-panel" class="logpanel" hx-get="/jobs/{job.pk}/pods/dlc-gone-worker-0/logs"'
                     r' hx-trigger="every 2s"', html), "without a cursor to tail from, the panel asks again"
    since = podlogs.encode_cursor(timezone.now() - timedelta(seconds=30))
    chunk = client.get(f"/jobs/{job.pk}/pods/dlc-gone-worker-0/logs?since={since}", **HTMX).content.decode()
    assert "Could not read the log" in chunk and 'data-following="yes"' in tail_of(chunk)
    assert since_of(tail_of(chunk)) == since, "the tail asks again from the same cursor"
    download = client.get(f"/jobs/{job.pk}/pods/dlc-gone-worker-0/logs/download")
    assert download.status_code == 502 and b"Could not read the log" in download.content
    assert client.get(f"/jobs/{job.pk}/pods/no-such-pod/logs").status_code == 404


def test_an_archive_refused_for_a_reason_other_than_a_gone_log_is_retried_not_marked_done(people, ws, settings,
                                                                                          tmp_path, local_creds):
    """Only a job or pod DLC no longer knows means its log is gone. A refused signature (a rotated key) or a missing
    permission was taken for that too: the job was marked archived, the sweep never asked again, and the log was
    lost once DLC's retention passed."""
    job = on_localdlc(ws, people["alice"], "echo one; echo two", name="archive-later")
    wrong = tmp_path / "wrong.ini"
    wrong.write_text(local_creds.read_text().replace("access_key_secret = ", "access_key_secret = x"))
    settings.LOCALDLC_CREDENTIALS_FILE = str(wrong)
    with pytest.raises(dlc.DLCError) as refused:
        logarchive.archive(job.pk)
    assert refused.value.code == "SignatureDoesNotMatch" and not refused.value.transient
    job.refresh_from_db()
    assert job.logs_archived_at is None and logarchive.read(job, job.pods[0]["PodId"]) is None
    settings.LOCALDLC_CREDENTIALS_FILE = str(local_creds)
    assert logarchive.archive(job.pk) == 1 and logarchive.read(job, job.pods[0]["PodId"]) == ["one", "two"]

    gone = make_job(ws, people["alice"], name="gone", status="Succeeded", dlc_job_id="dlc-no-such-job",
                    pods=[{"PodId": "dlc-no-such-job-worker-0", "Type": "Worker", "Status": "Succeeded"}])
    assert logarchive.archive(gone.pk) == 0
    gone.refresh_from_db()
    assert gone.logs_archived_at is not None, "a log DLC no longer has is not asked for again"


def test_a_job_without_pods_waits_for_them(client, people, ws):
    job = make_job(ws, people["alice"], status="Queuing", dlc_job_id="dlc-q")
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
    assert "Logs appear once a pod starts" in html and 'hx-trigger="every 2s"' in html
    page = client.get(f"/jobs/{job.pk}/logs").content.decode()  # without JavaScript: no asking every 2 s
    assert "<noscript> Without JavaScript, reload this page to see whether one has.</noscript>" in page


def test_times_dlc_sends_that_no_calendar_has_are_shown_as_unknown_not_a_500(client, people, ws):
    """parse_datetime raises for a well-formed impossible time (Feb 30th, month 13, +25:00) instead of returning
    None: the page, the log panel and its tail read DLC's pod and history times."""
    job = make_job(ws, people["alice"], dlc_job_id="dlc-odd", created_at=timezone.now() - timedelta(minutes=5),
                   status_history=[{"Status": "Running", "StartTime": "2026-13-01T00:00:00Z",
                                    "EndTime": "2026-01-01T00:00:00+25:00"}],
                   pods=[{"PodId": "dlc-odd-worker-0", "Type": "Worker", "Status": "Running",
                          "GmtCreateTime": "2026-02-30T00:00:00Z", "GmtStartTime": "2026-02-30T00:00:01Z"}])
    client.force_login(people["alice"])
    page = client.get(f"/jobs/{job.pk}")
    assert page.status_code == 200 and 'data-pod="dlc-odd-worker-0"' in page.content.decode()
    since = podlogs.encode_cursor(timezone.now() - timedelta(minutes=1))
    for url in (f"/jobs/{job.pk}/logs", f"/jobs/{job.pk}/pods/dlc-odd-worker-0/logs",
                f"/jobs/{job.pk}/pods/dlc-odd-worker-0/logs?since={since}"):
        answer = client.get(url, **HTMX)
        assert answer.status_code == 200, url
        assert "Could not read the log" in answer.content.decode(), "localdlc has no such job: said in place"
    assert jobpage.when("2026-02-30T00:00:00Z") is None and logarchive.pod_range(job, job.pods[0])[0] < job.created_at


def test_a_tail_whose_pod_left_the_job_stops_and_says_why(client, people, ws, localdlc):
    job = make_job(ws, people["alice"], dlc_job_id="dlc-v", created_at=timezone.now() - timedelta(minutes=5),
                   pods=[{"PodId": "dlc-v-worker-1", "Type": "Worker", "Status": "Running"}])
    client.force_login(people["alice"])
    since = podlogs.encode_cursor(timezone.now() - timedelta(minutes=1))
    calls = pod_log_calls(localdlc)
    answer = client.get(f"/jobs/{job.pk}/pods/dlc-v-worker-0/logs?since={since}", **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "no longer part of the job" in html
    assert 'id="log-tail"' in html and "hx-get" not in html and "hx-trigger" not in html  # the poll ends here
    assert pod_log_calls(localdlc) == calls
    assert client.get(f"/jobs/{job.pk}/pods/dlc-v-worker-0/logs").status_code == 404  # a panel still 404s


def head_of(html: str) -> str:
    return re.search(r'<div class="muted" id="log-head".*?</div>', html, re.S).group(0)


def whole_tail(html: str) -> str:
    return re.search(r'<div id="log-tail".*?</div>', html, re.S).group(0)


def test_the_tails_answer_refreshes_the_pods_status_and_says_when_the_pod_ended(client, people, ws):
    """The header named the pod's status as the panel opened and kept it ("Running" after the job ended): each
    tail answer now carries the header too. A pod that ended is read a few seconds more for its last lines; the
    tail says that, not "Following"."""
    job = on_localdlc(ws, people["alice"], "echo one; sleep 60", until=("Running",), min_lines=1)
    pod = job.pods[0]["PodId"]
    try:
        client.force_login(people["alice"])
        panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
        assert "Running" in head_of(panel) and 'hx-swap-oob' not in head_of(panel)
        assert "Following the log…" in whole_tail(panel)
        cursor = since_of(tail_of(panel))

        # DLC reports the pod finished (one pod of a job may end before the job): the next answer says so.
        finished = timezone.now().replace(microsecond=0)
        job.pods = [{**job.pods[0], "Status": "Succeeded", "GmtFinishTime": finished.strftime("%Y-%m-%dT%H:%M:%SZ")}]
        job.save(update_fields=["pods"])
        chunk = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={cursor}", **HTMX).content.decode()
        head = head_of(chunk)
        assert 'hx-swap-oob="true"' in head and '<span id="log-pod-status">Succeeded</span>' in head
        assert pod in head and "Running" not in head
        tail = whole_tail(chunk)
        assert 'data-following="yes"' in tail and "The pod has ended; reading its last lines…" in tail
        assert "Following the log" not in chunk
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_a_pod_not_started_yet_says_so_and_its_tail_keeps_asking(client, people, ws):
    """A Pending pod (no start time) has no log: the box says why it is empty, and the tail keeps asking, so the
    log appears, followed as usual, once the sync sees the pod run."""
    job = on_localdlc(ws, people["alice"], "echo started; sleep 60", until=("Running",), name="pending")
    running = job.pods[0]
    try:
        job.pods = [{**{k: v for k, v in running.items() if k != "GmtStartTime"}, "Status": "Pending"}]
        job.save(update_fields=["pods"])
        client.force_login(people["alice"])
        panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
        tail = whole_tail(panel)
        assert "This pod has not started yet; its log appears here once it runs." in tail
        assert 'data-following="yes"' in tail and 'hx-trigger="every 1s"' in tail and "Following" not in tail

        job.pods = [running]
        job.save(update_fields=["pods"])
        chunk = client.get(f"/jobs/{job.pk}/pods/{running['PodId']}/logs?since={since_of(tail_of(panel))}",
                           **HTMX).content.decode()
        assert "Following the log…" in whole_tail(chunk) and "not started" not in chunk
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


def test_pod_links_push_the_pods_url_and_the_page_opens_the_pod_it_names(client, people, ws):
    job = two_worker_job(client, people["alice"], ws, "dlc-two")
    page = client.get(f"/jobs/{job.pk}").content.decode()
    for pod in ("dlc-two-worker-0", "dlc-two-worker-1"):
        assert (f'hx-get="/jobs/{job.pk}/pods/{pod}/logs" hx-target="#log-panel" hx-swap="outerHTML" '
                f'hx-push-url="/jobs/{job.pk}?pod={pod}#logs">Logs<span class="visually-hidden"> of Worker {pod[-1]}'
                '</span></a>') in page
    panel = client.get(f"/jobs/{job.pk}/pods/dlc-two-worker-1/logs", **HTMX).content.decode()
    tabs = re.findall(rf'<a href="/jobs/{job.pk}\?pod=([^"#]+)#logs"[^>]*hx-push-url="([^"]+)"', panel)
    assert tabs == [(p, f"/jobs/{job.pk}?pod={p}#logs") for p in ("dlc-two-worker-0", "dlc-two-worker-1")]
    # Ids: htmx gives the keyboard focus back to the chosen tab after the panel is swapped.
    assert re.findall(r'id="log-tab-([^"]+)">', panel) == ["dlc-two-worker-0", "dlc-two-worker-1"]

    # A reload (or a shared link) of the pushed URL opens that pod's log.
    page = client.get(f"/jobs/{job.pk}?pod=dlc-two-worker-1").content.decode()
    loader = unescape(re.search(r'<div id="log-panel" hx-get="([^"]+)"', page).group(1))
    assert loader.startswith(f"/jobs/{job.pk}/logs?pod=dlc-two-worker-1&")
    panel = client.get(loader, **HTMX).content.decode()
    assert "dlc-two-worker-1" in head_of(panel)
    assert re.search(rf'href="/jobs/{job.pk}\?pod=dlc-two-worker-1#logs"[^>]*class="current" aria-current="true"',
                     panel)

    # A pod the job does not have (gone, mistyped, hostile): the default pod's log, never an error page.
    for wanted in ("no-such-pod", "<script>x</script>", "x" * 5000, ""):
        page = client.get(f"/jobs/{job.pk}", {"pod": wanted})
        assert page.status_code == 200 and "<script>x</script>" not in page.content.decode()
        loader = unescape(re.search(r'<div id="log-panel" hx-get="([^"]+)"', page.content.decode()).group(1))
        panel = client.get(loader, **HTMX)
        assert panel.status_code == 200 and "dlc-two-worker-0" in head_of(panel.content.decode()), wanted


def test_the_log_box_opens_at_its_end_and_follows_only_a_reader_at_the_end(client, people, ws):
    """The markup the scrolling rests on (the browser test checks the behaviour): the tail appends without
    htmx's own scroll (it scrolled the new lines, not the box), the box notes whether the reader is at its end,
    and the panel scrolls the box to its end on each load only then."""
    job = make_job(ws, people["alice"], dlc_job_id="dlc-s", pods=[{"PodId": "dlc-s-worker-0", "Type": "Worker"}])
    client.force_login(people["alice"])
    panel = client.get(f"/jobs/{job.pk}/logs", **HTMX).content.decode()
    opening = re.search(r'<div id="log-panel"[^>]*>', panel).group(0)
    assert "hx-on::load=" in opening and "box.dataset.stick !== 'no'" in opening and "box.scrollHeight" in opening
    box = re.search(r'<div class="log" id="log-lines"[^>]*>', panel).group(0)
    assert 'data-stick="yes"' in box and "hx-on:scroll=" in box
    since = podlogs.encode_cursor(timezone.now() - timedelta(seconds=30))
    chunk = client.get(f"/jobs/{job.pk}/pods/dlc-s-worker-0/logs?since={since}", **HTMX).content.decode()
    assert 'hx-swap="beforeend"' in tail_of(chunk) and "scroll:" not in chunk


@pytest.mark.integration
@pytest.mark.browser
def test_without_javascript_chromium_opens_the_logs_at_their_end_and_searches_them(stack, workspace, member, settings,
                                                                                   no_js_page):
    """The no-JavaScript path in Chromium (QA: "Loading logs…" for ever), at a laptop's and a phone's width."""
    from playwright.sync_api import expect

    from tests.conftest import PASSWORD
    from tests.support.browser import sign_in

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # as tests.support.pages.submit_to_stack
    job = on_localdlc(workspace, member, "seq 1 2500", name="no-js-chromium")
    assert logarchive.archive(job.pk) == 1
    page = no_js_page
    sign_in(page, stack.url, member.username, PASSWORD)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(f"{stack.url}/jobs/{job.pk}")
        expect(page.locator("#events-page")).to_be_visible()
        page.click("#logs-page")
        box = page.locator("#log-lines")
        expect(box.locator(".ln").last).to_have_text("25002500")  # its number, then its text
        # At its end without JavaScript (#log-end), the newest line in view; no dead button.
        assert box.evaluate("b => b.scrollHeight - b.scrollTop - b.clientHeight") < 2
        expect(page.locator("#log-older-load")).to_be_hidden()
        expect(page.locator("#log-older-nojs")).to_be_visible()
        page.fill("#log-q", "2499")
        page.click("#log-search button[type=submit]")
        expect(box.locator(".ln")).to_have_count(1)
        assert page.url.startswith(f"{stack.url}/jobs/{job.pk}/logs?")
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.click("text=Back to no-js-chromium")
        expect(page.locator("#logs-page")).to_be_visible()
