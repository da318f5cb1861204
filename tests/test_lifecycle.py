"""jobs.lifecycle against a real localdlc through the real SDK, called in-process (no worker): backoff, the
tag look-up and adoption, the permanent-error path, import mapping, stop requests.

Also holds the helpers the other lifecycle/sync/fault test modules import.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from alibabacloud_pai_dlc20201203 import models as sdk

from tests.conftest import PASSWORD
from tests.support import beat
from tests.support.waiting import wait_for
from tests.support.wizard import credentials_file

pytestmark = pytest.mark.integration


# -- helpers shared by test_lifecycle*, test_sync*, test_faults* --------------------------------------------


def job_body(command: str, name: str | None = None, **extra: Any) -> dict[str, Any]:
    """A small CreateJob body localdlc runs: one PyTorch worker on 2 emulated cores."""
    return {
        "DisplayName": name or f"lc-{uuid.uuid4().hex[:8]}",
        "JobType": "PyTorchJob",
        "JobSpecs": [{"Type": "Worker", "Image": "registry.example/pytorch:2.3", "PodCount": 1,
                      "EcsSpec": "ecs.g6.large"}],
        "UserCommand": command,
        "WorkspaceId": "local",
        **extra,
    }


def make_workspace(endpoint: str, name: str | None = None):
    from jobs.models import Workspace

    return Workspace.objects.create(
        name=name or f"ws-{uuid.uuid4().hex[:6]}", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local",
        endpoint=endpoint,
    )


def make_user(workspace, username: str = "alice", role: str = "member"):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    user = get_user_model().objects.create_user(username, password=PASSWORD)
    Membership.objects.create(user=user, workspace=workspace, role=role)
    return user


def make_job(workspace, owner=None, command: str = "echo hi", **body_extra: Any):
    """A Job row as the create page saves it, without enqueueing (the test drives lifecycle itself)."""
    from jobs.models import Job

    body = job_body(command, **body_extra)
    return Job.objects.create(workspace=workspace, owner=owner, display_name=body["DisplayName"],
                              job_type=body["JobType"], body=body)


def tagged(client, tag: str) -> list[Any]:
    """Every job localdlc holds with this idempotency tag (not only the last 7 days' first page)."""
    from jobs.dlc import IDEMPOTENCY_TAG_KEY

    body = client.list_jobs(sdk.ListJobsRequest(tags={IDEMPOTENCY_TAG_KEY: tag}, page_size=100,
                                                start_time="2000-01-01T00:00:00Z")).body
    return body.jobs or []


def all_jobs(client) -> list[Any]:
    return client.list_jobs(sdk.ListJobsRequest(page_size=100, start_time="2000-01-01T00:00:00Z")).body.jobs or []


@contextmanager
def use_broker(url: str) -> Iterator[None]:
    """Point this test process's Celery producer at a stack's Redis (its URL is only known at run time)."""
    from consoleapp.celery import app

    def reset() -> None:
        # What Celery itself does after a fork: drop the pooled connections so the next send reconnects.
        app._pool = None
        app.amqp._producer_pool = None

    saved = app.conf.broker_url
    app.conf.broker_url = url
    reset()
    # Shared tasks send through the *current* app: any other Celery() made in this process must not be it.
    app.set_current()
    try:
        yield
    finally:
        app.conf.broker_url = saved
        reset()


@pytest.fixture(name="quiet_stack", scope="module")
def fixture_quiet_stack(stack):
    """The session stack with its beat paused: the test database is shared, and its sync and sweep would
    otherwise act on this test's workspaces (which point at other localdlc instances) behind its back."""
    with beat.paused(stack):
        yield stack


@pytest.fixture(name="backend")
def fixture_backend(localdlc_factory):
    return localdlc_factory(creating_seconds=0.05, env_preparing_seconds=0.05)


@pytest.fixture(name="ws")
def fixture_ws(transactional_db, quiet_stack, backend, settings, tmp_path):
    """A console workspace bound to a private localdlc, with in-process settings that reach it."""
    settings.LOCALDLC_CREDENTIALS_FILE = str(
        credentials_file(backend, tmp_path, "creds.ini")
    )
    # Short timeouts keep the "may still be in flight" window (connect + read + 2 s) short.
    settings.DLC_CONNECT_TIMEOUT_MS = 500
    settings.DLC_READ_TIMEOUT_MS = 1500
    return make_workspace(backend.endpoint)


# -- backoff and error classes ------------------------------------------------------------------------------


def test_backoff_grows_exponentially_with_jitter_and_a_cap(settings):
    from jobs import lifecycle

    settings.DLC_RETRY_BASE_SECONDS = 1.0
    settings.DLC_RETRY_CAP_SECONDS = 30.0
    random.seed(7)
    for retries in range(10):
        ceiling = min(30.0, 2.0**retries)
        samples = [lifecycle.backoff(retries) for _ in range(200)]
        assert all(ceiling / 2 <= s <= ceiling for s in samples), (retries, min(samples), max(samples))
        assert len({round(s, 6) for s in samples}) > 150, "no jitter: workers would retry in step"
    assert lifecycle.backoff(50) <= 30.0


def test_retry_delay_honours_what_the_backend_asks_for(settings):
    from jobs import dlc, lifecycle

    settings.DLC_RETRY_BASE_SECONDS = 1.0
    throttled = dlc.DLCError("Throttling.User", "slow down", status=429, transient=True, retry_after=4.0)
    assert 4.0 <= lifecycle.retry_delay(throttled, 0) <= 4.1
    plain = dlc.DLCError("ServiceUnavailable", "busy", status=503, transient=True)
    assert 2.0 <= lifecycle.retry_delay(plain, 2) <= 4.0


def test_refused_connection_is_transient_but_a_read_timeout_is_ambiguous(localdlc_factory):
    """Refused: the request never left, re-sending is safe. Timed out: it may have been created."""
    from alibabacloud_pai_dlc20201203.client import Client

    from jobs import dlc

    server = localdlc_factory()
    closed = Client(server.config(endpoint="127.0.0.1:1"))
    with pytest.raises(Exception) as refused:  # noqa: B017 - whatever the SDK's transport raises
        closed.list_jobs_with_options(sdk.ListJobsRequest(), {}, dlc._runtime())
    err = dlc.classify(refused.value)
    assert (err.transient, err.ambiguous) == (True, False)

    server.set_faults({"action": "CreateJob", "mode": "delay", "delay": 1.0, "count": 1})
    slow = Client(server.config(read_timeout=300))
    with pytest.raises(Exception) as timed_out:  # noqa: B017
        slow.create_job_with_options(sdk.CreateJobRequest().from_map(job_body("true")), {}, dlc._runtime())
    err = dlc.classify(timed_out.value)
    assert (err.transient, err.ambiguous) == (True, True)

    server.set_faults({"action": "ListJobs", "mode": "throttle", "status": 429, "retry_after": 1500, "count": 1})
    with pytest.raises(Exception) as throttled:  # noqa: B017
        server.client().list_jobs_with_options(sdk.ListJobsRequest(), {}, dlc._runtime())
    err = dlc.classify(throttled.value)
    assert err.transient and not err.ambiguous and err.retry_after == 1.5


# -- submission ---------------------------------------------------------------------------------------------


def test_submit_creates_once_and_a_second_run_changes_nothing(ws, backend):
    from jobs import lifecycle

    job = make_job(ws, command="echo once")
    assert lifecycle.submit(job.pk) == "created"
    assert lifecycle.submit(job.pk) == "already-submitted"
    job.refresh_from_db()
    remote = tagged(backend.client(), job.tag)
    assert [r.job_id for r in remote] == [job.dlc_job_id]
    assert job.status == "Creating" and job.submit_attempts == 1 and job.submit_unanswered_since is None
    assert backend.stats()["calls"]["CreateJob"] == 1


def test_permanent_error_marks_submit_failed_with_code_message_and_request_id(ws, backend):
    from jobs import lifecycle
    from jobs import status as st

    job = make_job(ws)
    job.body["JobSpecs"][0]["PodCount"] = 0
    job.save()
    assert lifecycle.submit(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == st.SUBMIT_FAILED and job.finished_at and not job.dlc_job_id
    assert job.submit_error["Code"].startswith("InvalidParameter")
    assert "PodCount" in job.submit_error["Message"]
    assert len(job.submit_error["RequestId"]) >= 32 and job.submit_error["Status"] == 400
    assert all_jobs(backend.client()) == []
    assert lifecycle.submit(job.pk) == "already-submitted"  # a failed job is not retried by a stray task
    assert backend.stats()["calls"]["CreateJob"] == 1


def test_lost_response_is_looked_up_and_adopted_not_sent_again(ws, backend, settings):
    """CreateJob runs but its answer is lost: the retry must wait until that call can no longer land, then
    find the job by its tag and adopt it."""
    from jobs import dlc, lifecycle

    job = make_job(ws, command="echo adopted")
    backend.set_faults({"action": "CreateJob", "mode": "lost_response", "count": 1})
    with pytest.raises(dlc.DLCError) as first:
        lifecycle.submit(job.pk)
    assert first.value.transient and first.value.ambiguous
    assert len(tagged(backend.client(), job.tag)) == 1  # it was created, the worker just does not know

    with pytest.raises(dlc.DLCError) as early:
        lifecycle.submit(job.pk)
    assert early.value.code == lifecycle.IN_FLIGHT
    assert 0 < early.value.retry_after <= dlc.in_flight_window()

    time.sleep(early.value.retry_after + 0.05)
    assert lifecycle.submit(job.pk) == "adopted"
    job.refresh_from_db()
    remote = tagged(backend.client(), job.tag)
    assert [r.job_id for r in remote] == [job.dlc_job_id]
    assert backend.stats()["calls"]["CreateJob"] == 1
    assert job.submit_attempts == 2 and job.status == "Creating" and job.submit_unanswered_since is None


def test_answered_transient_error_is_looked_up_then_sent_again_without_waiting(ws, backend):
    from jobs import dlc, lifecycle

    job = make_job(ws)
    backend.set_faults({"action": "CreateJob", "mode": "503", "count": 1})
    with pytest.raises(dlc.DLCError) as first:
        lifecycle.submit(job.pk)
    assert first.value.status == 503 and first.value.transient and not first.value.ambiguous
    before = backend.stats()["calls"].get("ListJobs", 0)
    assert lifecycle.submit(job.pk) == "created"
    assert backend.stats()["calls"].get("ListJobs", 0) > before, "a re-send must look the tag up first"
    assert len(tagged(backend.client(), job.tag)) == 1


def test_a_scheduled_retry_is_noted_on_the_row_and_cleared_once_dlc_accepts(ws, backend):
    """What the submit task does on a transient error: schedule_retry returns the countdown and notes when it is
    due, the job page says so; the attempt itself and DLC's acceptance clear it."""
    from django.utils import timezone

    from jobs import dlc, jobpage, lifecycle

    job = make_job(ws)
    backend.set_faults({"action": "CreateJob", "mode": "throttle", "status": 429, "retry_after": 30000, "count": 1})
    with pytest.raises(dlc.DLCError) as first:
        lifecycle.submit(job.pk)
    before = timezone.now()
    delay = lifecycle.schedule_retry(job.pk, first.value, 0)
    job.refresh_from_db()
    assert 30 <= delay <= 30.1, "the backend's Retry-After is the countdown"
    assert before + timedelta(seconds=29.9) <= job.submit_next_attempt_at <= timezone.now() + timedelta(seconds=30.1)
    due = f"{timezone.localtime(job.submit_next_attempt_at):%H:%M:%S} ({timezone.get_current_timezone_name()})"
    note = jobpage.waiting_note(job)
    assert "Throttling" in note and f"Next attempt at {due}." in note
    late = jobpage.waiting_note(job, now=job.submit_next_attempt_at + timedelta(seconds=1))
    assert f"The next attempt was due at {due}" in late and "Next attempt at" not in late

    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    assert job.submit_next_attempt_at is None and job.submit_error == {} and job.dlc_job_id
    # A retry scheduled by a task that lost the race with DLC's acceptance notes nothing on the accepted job.
    lifecycle.schedule_retry(job.pk, first.value, 1)
    job.refresh_from_db()
    assert job.submit_next_attempt_at is None and jobpage.waiting_note(job) == ""


def test_a_scheduled_retry_is_cleared_when_the_submit_finally_fails(ws, backend):
    from jobs import dlc, lifecycle
    from jobs import status as st

    job = make_job(ws)
    backend.set_faults({"action": "CreateJob", "mode": "503", "count": 1})
    with pytest.raises(dlc.DLCError) as first:
        lifecycle.submit(job.pk)
    lifecycle.schedule_retry(job.pk, first.value, 0)
    job.refresh_from_db()
    assert job.submit_next_attempt_at is not None
    lifecycle.give_up_submit(job.pk, first.value)
    job.refresh_from_db()
    assert job.status == st.SUBMIT_FAILED and job.submit_next_attempt_at is None


def test_concurrent_attempts_send_one_create_job(ws, backend):
    """A sweep re-enqueues a job whose first attempt is still in the air: the second attempt backs off."""
    from jobs import dlc, lifecycle

    job = make_job(ws)
    backend.set_faults({"action": "CreateJob", "mode": "delay", "delay": 1.0, "count": 1})
    results: list[str] = []
    first = threading.Thread(target=lambda: results.append(lifecycle.submit(job.pk)))
    first.start()
    wait_for(lambda: backend.stats()["calls"].get("CreateJob"), timeout=5, interval=0.02)
    with pytest.raises(dlc.DLCError) as second:
        lifecycle.submit(job.pk)
    assert second.value.code == lifecycle.IN_FLIGHT
    first.join(10)
    assert results == ["created"]
    assert lifecycle.submit(job.pk) == "already-submitted"
    assert backend.stats()["calls"]["CreateJob"] == 1
    assert len(tagged(backend.client(), job.tag)) == 1


def test_tag_lookup_trusts_only_items_that_show_the_tag(ws, backend):
    from jobs import dlc

    client = backend.client()
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    name = f"same-name-{uuid.uuid4().hex[:6]}"
    request = sdk.CreateJobRequest().from_map(
        job_body("true", name, Settings={"Tags": {dlc.IDEMPOTENCY_TAG_KEY: other}})
    )
    client.create_job(request)
    assert dlc.find_by_tag(ws, mine, display_name=name) is None

    request = sdk.CreateJobRequest().from_map(
        job_body("true", name, Settings={"Tags": {dlc.IDEMPOTENCY_TAG_KEY: mine}})
    )
    created = client.create_job(request).body.job_id
    assert dlc.find_by_tag(ws, mine, display_name=name) == created

    # Pure: among several matches the oldest wins; items without the tag (a backend ignoring the filter)
    # are never taken for ours.
    ours = {"Tags": {dlc.IDEMPOTENCY_TAG_KEY: mine}}
    items = [
        {"JobId": "dlcnew", "GmtCreateTime": "2026-01-02T00:00:00Z", "Settings": ours},
        {"JobId": "dlcold", "GmtCreateTime": "2026-01-01T00:00:00Z", "Settings": ours},
        {"JobId": "dlcx", "GmtCreateTime": "2025-01-01T00:00:00Z", "Settings": {"Tags": {"other": mine}}},
    ]
    assert dlc.pick_tagged(items, mine) == "dlcold"
    assert dlc.pick_tagged(items[2:], mine) is None


def test_tag_lookup_reaches_past_the_seven_day_window(ws, backend):
    """A job stuck for over a week (a long outage) is still found: the look-up asks from its creation."""
    from datetime import timedelta

    from django.utils import timezone

    from jobs import dlc

    tag = str(uuid.uuid4())
    request = sdk.CreateJobRequest().from_map(job_body("true", Settings={"Tags": {dlc.IDEMPOTENCY_TAG_KEY: tag}}))
    created = backend.client().create_job(request).body.job_id
    # localdlc's default window is the last 7 days as of now; a `since` 8 days back must widen it, not narrow.
    assert dlc.find_by_tag(ws, tag, since=timezone.now() - timedelta(days=8)) == created
    assert dlc.find_by_tag(ws, tag) == created


# -- import ---------------------------------------------------------------------------------------------------


def test_import_body_keeps_create_job_fields_only_and_no_secret_or_tag_of_ours():
    from jobs import dlc, lifecycle

    item = {
        "JobId": "dlc123", "Status": "Running", "DisplayName": "train", "JobType": "PyTorchJob",
        "WorkspaceId": "ws1", "UserCommand": "python train.py", "Priority": 3, "ResourceId": "quota1",
        "JobMaxRunningTimeMinutes": 0, "Envs": {"A": "1", "EMPTY": "", "WANDB_API_KEY": "w-secret"},
        "GmtCreateTime": "2026-01-01T00:00:00Z",
        "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 2, "EcsSpec": "ecs.g6.large",
                      "ImageConfig": {"Username": "u", "Password": "hunter2"}, "ElasticSpotSpecs": [],
                      "ResourceConfig": {"CPU": "4", "Memory": "8Gi"}}],
        "Settings": {"Tags": {dlc.IDEMPOTENCY_TAG_KEY: "x", "team": "nlp"}, "EnableDSWDev": False,
                     "BusinessUserId": "123",
                     "AdvancedSettings": {"WandbApiKey": "w-secret", "EnableRDMA": True, "RayRedisPassword": "r"}},
        "UserVpc": {"VpcId": "vpc-1", "ExtendedCidrs": ["10.0.0.0/8"]},
        "DataSources": [{"DataSourceId": "d-1", "MountPath": "/mnt/data"}],
        "Pods": [{"PodId": "p"}], "StatusHistory": [], "RequestCPU": 4,
    }
    assert lifecycle.import_body(item) == {
        "DisplayName": "train", "JobType": "PyTorchJob", "WorkspaceId": "ws1", "UserCommand": "python train.py",
        "Priority": 3, "ResourceId": "quota1", "Envs": {"A": "1", "EMPTY": "", "WANDB_API_KEY": "********"},
        "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 2, "EcsSpec": "ecs.g6.large",
                      "ImageConfig": {"Username": "u"}, "ResourceConfig": {"CPU": "4", "Memory": "8Gi"}}],
        "Settings": {"Tags": {"team": "nlp"}, "EnableDSWDev": False,
                     "AdvancedSettings": {"WandbApiKey": "********", "EnableRDMA": True}},
        "UserVpc": {"VpcId": "vpc-1", "ExtendedCIDRs": ["10.0.0.0/8"]},
        "DataSources": [{"DataSourceId": "d-1", "MountPath": "/mnt/data"}],
    }


def test_wire_body_puts_sealed_secret_envs_back_and_leaves_the_stored_body_alone():
    from jobs import lifecycle
    from jobs.models import Job, Workspace

    job = Job(workspace=Workspace(name="w", dlc_workspace_id=""),
              body={"Envs": {"WANDB_API_KEY": "********", "A": "1"}})
    wire = lifecycle.wire_body(job, {"env:WANDB_API_KEY": "w-real", "env:OTHER": "x"})
    assert wire["Envs"] == {"WANDB_API_KEY": "w-real", "A": "1"}
    assert job.body["Envs"] == {"WANDB_API_KEY": "********", "A": "1"}


def test_foreign_job_is_imported_once_and_our_tagged_job_is_adopted_not_imported(ws, backend):
    from jobs import dlc, lifecycle, spec
    from jobs.models import Job

    client = backend.client()
    foreign_body = job_body("echo from-the-cloud-console", "made-elsewhere",
                            Envs={"LR": "0.1"}, Settings={"Tags": {"team": "vision"}})
    foreign = client.create_job(sdk.CreateJobRequest().from_map(foreign_body)).body.job_id
    # Our row whose CreateJob landed but whose worker never heard back (and has not retried yet).
    row = make_job(ws, command="echo ours")
    client.create_job(sdk.CreateJobRequest().from_map(lifecycle.wire_body(row)))

    assert lifecycle.sync_workspace(ws) is not None
    imported = Job.objects.get(dlc_job_id=foreign)
    assert imported.imported and imported.owner is None and imported.workspace == ws
    assert imported.display_name == "made-elsewhere" and imported.job_type == "PyTorchJob"
    assert imported.body == foreign_body
    assert imported.status in {"Creating", "Queuing", "EnvPreparing", "Running", "Succeeded"}
    assert not spec.validate(imported.body), "an imported body must be clonable through jobs.spec"
    row.refresh_from_db()
    assert row.dlc_job_id and not row.imported and row.status != "Submitting"
    assert dlc.tag_of({"Settings": {"Tags": {dlc.IDEMPOTENCY_TAG_KEY: row.tag}}}) == row.tag

    for _ in range(3):
        lifecycle.sync_workspace(ws)
    assert Job.objects.filter(workspace=ws).count() == 2
    assert Job.objects.filter(dlc_job_id=foreign).count() == 1
    wait_for(lambda: lifecycle.sync_workspace(ws) is not None and Job.objects.get(pk=row.pk).status == "Succeeded",
             timeout=20, what="adopted job synced to Succeeded")


def test_submit_after_the_import_adopted_its_job_changes_nothing(ws, backend):
    """The import wins the race with the submit's own answer: one row, one DLC job."""
    from jobs import lifecycle
    from jobs.models import Job

    row = make_job(ws)
    remote = backend.client().create_job(sdk.CreateJobRequest().from_map(lifecycle.wire_body(row))).body.job_id
    lifecycle.sync_workspace(ws)
    row.refresh_from_db()
    assert row.dlc_job_id == remote
    assert lifecycle.adopt(row, remote) is False
    assert lifecycle.submit(row.pk) == "already-submitted"
    assert Job.objects.filter(workspace=ws).count() == 1

# -- an imported job's secrets in its log ---------------------------------------------------------------------


def test_the_secret_values_an_import_hides_get_the_jobs_log_masks_and_never_its_row(db, settings):
    """What an imported job's page hides (an env or advanced setting named like a secret, a registry password, a
    custom env DLC itself hides) is masked in its log too: the row gets the values' fingerprints, not the values.
    The adopted row of our own job gets those of the values DLC echoes besides its sealed ones."""
    from django.utils import timezone

    from jobs import dlc, lifecycle, logmask
    from jobs.models import Job, Workspace

    settings.DLC_SECRET_BOX_KEY = "test-box-key"
    ws = Workspace.objects.create(name="secrets", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")
    hidden = {"API_TOKEN": "eve-plain-secret-xyz", "registry": "reg-pw-77aa-q", "WandbApiKey": "wandb-adv-key-1234",
              "RayRedisPassword": "ray-redis-pw-9", "SEED": "custom-hidden-5", "CUSTOM_TOKEN": "custom-token-66",
              # Once only the page's wider rule hid it, and the row kept it in plain text: one rule now.
              "HFTOKEN": "hf-run-together-8"}
    item = {"JobId": "dlc-secrets", "Status": "Running", "DisplayName": "from-dlc", "JobType": "PyTorchJob",
            "GmtCreateTime": timezone.now().isoformat(),
            "Envs": {"API_TOKEN": hidden["API_TOKEN"], "HFTOKEN": hidden["HFTOKEN"],
                     "RUN_NAME": "ordinary-run-name", "EMPTY_TOKEN": ""},
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 1, "EcsSpec": "ecs.g6.large",
                          "ImageConfig": {"Username": "robot-user", "Password": hidden["registry"]}}],
            "Settings": {"AdvancedSettings": {"WandbApiKey": hidden["WandbApiKey"],
                                              "RayRedisPassword": hidden["RayRedisPassword"]}},
            "CustomEnvs": [{"Key": "SEED", "Value": hidden["SEED"], "Visible": "false"},
                           {"Key": "CUSTOM_TOKEN", "Value": hidden["CUSTOM_TOKEN"]},
                           {"Key": "SHOWN", "Value": "shown-value-1", "Visible": "true"}]}
    job = lifecycle.import_or_adopt(ws, item)
    assert job is not None and job.imported
    secret = hidden
    ordinary = ["RUN_NAME=ordinary-run-name", "SHOWN shown-value-1", "user robot-user"]
    lines = [f"{name}={value}" for name, value in secret.items()] + ordinary
    assert logmask.mask(lines, Job.objects.get(pk=job.pk).secret_marks) == \
        [f"{name}=********" for name in secret] + ordinary
    row = str(Job.objects.filter(pk=job.pk).values().get())
    assert [value for value in hidden.values() if value in row] == []

    # Our own job, found by its tag before its submit heard back: its sealed secret's marks stay, DLC's echo adds
    # the values named like secrets the console did not seal (a job saved before it sealed such names).
    ours = make_job(ws)
    ours.secret_marks = logmask.marks_for(["sealed-secret-abc"])
    ours.save()
    echo = {"JobId": "dlc-ours", "Status": "Running", "GmtCreateTime": timezone.now().isoformat(),
            "Settings": {"Tags": {dlc.IDEMPOTENCY_TAG_KEY: ours.tag}},
            "Envs": {"WANDB_API_KEY": "sealed-secret-abc", "HFTOKEN": "hf-unsealed-xyz", "LR": "0.1"}}
    assert lifecycle.import_or_adopt(ws, echo).pk == ours.pk
    ours.refresh_from_db()
    assert ours.dlc_job_id == "dlc-ours"
    assert logmask.mask(["sealed-secret-abc hf-unsealed-xyz LR=0.1"], ours.secret_marks) == ["******** ******** LR=0.1"]


def test_a_job_saved_before_its_secret_names_were_sealed_gets_their_marks_at_submit(db, backend, settings, tmp_path):
    """A row whose body still holds HFTOKEN in plain text (saved, e.g. waiting on an upstream job, before the one
    secret-name rule sealed such names) sends it as it is: the submit fingerprints it with the sealed ones."""
    from jobs import lifecycle, logmask, secretbox, spec

    settings.DLC_SECRET_BOX_KEY = "test-box-key"
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(backend, tmp_path, "creds.ini"))
    ws = make_workspace(backend.endpoint)
    job = make_job(ws, Envs={"HFTOKEN": "abc123-saved-plain", "WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "LR": "0.125"})
    job.sealed_secrets = secretbox.seal({"env:WANDB_API_KEY": "sealed-wandb-77"})
    job.save()
    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    line = "HFTOKEN=abc123-saved-plain wandb sealed-wandb-77 LR=0.125"
    assert logmask.mask([line], job.secret_marks) == ["HFTOKEN=******** wandb ******** LR=0.125"]


def test_a_job_made_in_dlc_that_prints_its_secret_env_shows_it_masked_everywhere(db, backend, settings, tmp_path,
                                                                                 client):
    """The QA case: a job created in DLC (the SDK on localdlc) with API_TOKEN in its Envs, whose command echoes it
    and fails. DLC's log holds the value (the control); once imported, the job page's log panel, its search, the
    download, the archive, the failure mail's log tail and the diagnosis never do."""
    from jobs import diagnosis, dlc, lifecycle, logarchive, notify_email, podlogs
    from jobs.models import Job, PodLog, WorkspaceSync

    settings.DLC_SECRET_BOX_KEY = "test-box-key"
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(backend, tmp_path, "creds.ini"))
    ws = make_workspace(backend.endpoint)
    user = make_user(ws, role="viewer")
    token = f"eve-plain-secret-{uuid.uuid4().hex[:12]}"
    command = ('echo "API_TOKEN=$API_TOKEN"; echo "{\\"token\\": \\"$API_TOKEN\\"}"; '
               'echo "RuntimeError: login refused for $API_TOKEN" >&2; exit 1')
    remote = backend.client().create_job(sdk.CreateJobRequest().from_map(
        job_body(command, "made-in-dlc", Envs={"API_TOKEN": token, "LR": "0.1"}))).body.job_id
    backend.wait_for_status(remote, timeout=30)

    lifecycle.import_new(ws, WorkspaceSync(workspace=ws))
    job = Job.objects.get(workspace=ws, dlc_job_id=remote)
    assert job.imported and job.status == "Failed" and job.pods
    assert job.body["Envs"] == {"API_TOKEN": "********", "LR": "0.1"} and token not in repr(job.secret_marks)
    pod = job.pods[0]["PodId"]
    assert any(token in line for line in dlc.get_pod_logs(ws, remote, pod)), "the control: DLC's log holds it"
    client.force_login(user)
    htmx = {"HTTP_HX_REQUEST": "true"}

    def texts() -> list[str]:
        panel = client.get(f"/jobs/{job.pk}/logs", **htmx).content.decode()
        found = [client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"q": q}, **htmx).content.decode()
                 for q in ("API_TOKEN", token[:20])]
        download = b"".join(client.get(f"/jobs/{job.pk}/pods/{pod}/logs/download").streaming_content).decode()
        return [panel, *found, download]

    live = texts()
    assert "API_TOKEN=********" in live[0] and '{"token": "********"}' in live[-1], "the lines are there, masked"
    assert "<mark>API_TOKEN</mark>=********" in live[1] and "<mark>" not in live[2]
    for text in live[:2] + live[3:]:  # the second search's page echoes what was typed
        assert token not in text and token[:20] not in text

    assert logarchive.archive(job.pk) == 1
    job.refresh_from_db()
    stored = zlib.decompress(bytes(PodLog.objects.get(job=job, pod_id=pod).content)).decode()
    assert "API_TOKEN=********" in stored and token not in stored
    assert token not in str(Job.objects.filter(pk=job.pk).values().get()), "nor the stored diagnosis"
    assert token not in str(notify_email.log_tail(job)) and token not in str(diagnosis.for_job(job))
    assert token not in podlogs.filename(job, pod)
    for text in texts()[:2]:
        assert token not in text


# -- stop requests --------------------------------------------------------------------------------------------


def test_request_stop_permissions_and_results(ws, backend):
    from jobs import lifecycle
    from jobs import status as st
    from jobs.models import Job

    alice = make_user(ws, "alice", "member")
    bob = make_user(ws, "bob", "member")
    viewer = make_user(ws, "vera", "viewer")
    admin = make_user(ws, "ada", "admin")

    unsent = make_job(ws, alice)
    running = make_job(ws, alice, command="sleep 30")
    assert lifecycle.submit(running.pk) == "created"
    running.refresh_from_db()
    failed = make_job(ws, alice)
    Job.objects.filter(pk=failed.pk).update(status=st.SUBMIT_FAILED)
    bobs = make_job(ws, bob, command="sleep 30")
    lifecycle.submit(bobs.pk)

    assert lifecycle.request_stop(viewer, running) == "not-permitted"
    assert lifecycle.request_stop(bob, running) == "not-permitted"
    results = lifecycle.bulk_stop(alice, list(Job.objects.filter(pk__in=[unsent.pk, running.pk, failed.pk, bobs.pk])))
    assert results == {unsent.pk: "stopped", running.pk: "stopping", failed.pk: "already-finished",
                       bobs.pk: "not-permitted"}
    unsent.refresh_from_db()
    assert unsent.status == "Stopped" and unsent.reason_code == "Console.CancelledBeforeSubmit"
    assert lifecycle.submit(unsent.pk) == "already-submitted"  # a stray submit task sends nothing
    running.refresh_from_db()
    assert running.status == "Stopping" and running.stop_requested_at and running.status_label == "Stopping"
    assert lifecycle.request_stop(alice, running) == "stopping"  # asking twice is fine
    assert lifecycle.request_stop(admin, bobs) == "stopping"

    # The task's half: StopJob, and the row stays "Stopping" through syncs until DLC says it ended.
    assert lifecycle.stop(running.pk) == "stopping"
    seen = set()

    def stopped() -> bool:
        lifecycle.sync_workspace(ws)
        status = Job.objects.get(pk=running.pk).status
        seen.add(status)
        return status == "Stopped"

    wait_for(stopped, timeout=20, what="stop confirmed by DLC")
    assert seen <= {"Stopping", "Stopped"}, seen
    assert backend.stats()["calls"]["StopJob"] == 1
    assert lifecycle.request_stop(alice, Job.objects.get(pk=running.pk)) == "already-finished"


def test_stop_asked_while_the_submit_is_in_flight_stops_the_job_once_created(ws, backend):
    from jobs import dlc, lifecycle
    from jobs.models import Job

    alice = make_user(ws)
    job = make_job(ws, alice, command="sleep 30")
    backend.set_faults({"action": "CreateJob", "mode": "lost_response", "count": 1})
    with pytest.raises(dlc.DLCError):
        lifecycle.submit(job.pk)
    assert lifecycle.request_stop(alice, Job.objects.get(pk=job.pk)) == "stopping"
    assert Job.objects.get(pk=job.pk).status == "Submitting"
    time.sleep(dlc.in_flight_window())
    assert lifecycle.submit(job.pk) == "adopted"
    job.refresh_from_db()
    assert job.status == "Stopping"  # and a stop task was enqueued; the task's body:
    assert lifecycle.stop(job.pk) == "stopping"
    assert backend.wait_for_status(job.dlc_job_id, ["Stopped"], timeout=15).status == "Stopped"


def test_registry_password_is_sent_to_dlc_but_kept_nowhere(ws, backend):
    from jobs import lifecycle, secretbox
    from jobs.models import Job

    job = make_job(ws)
    job.body["JobSpecs"][0]["ImageConfig"] = {"Username": "robot"}
    job.sealed_secrets = secretbox.seal({"registry_password": "pa55-w0rd-xyz"})
    job.save()
    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    sent = backend.client().get_job(job.dlc_job_id, sdk.GetJobRequest()).body.job_specs[0].image_config
    assert sent.username == "robot" and sent.password == "pa55-w0rd-xyz"  # it did reach DLC
    assert job.sealed_secrets == "" and "pa55" not in str(job.body)
    lifecycle.sync_workspace(ws)
    job.refresh_from_db()
    row = Job.objects.filter(pk=job.pk).values().get()
    assert "pa55-w0rd-xyz" not in str(row)


def test_the_sweep_archives_imported_jobs_too_but_not_while_their_archive_is_due(db):
    """A job imported already ended has an old finished_at (DLC's) but its archive was enqueued by the import,
    when the sync wrote the row (synced_at): the sweep asks again only once that task should have run."""
    from django.utils import timezone

    from jobs import lifecycle
    from jobs.models import Job, Workspace

    ws = Workspace.objects.create(name="imports", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")
    now = timezone.now()
    age = timedelta(seconds=60)
    ended = {"status": "Succeeded", "finished_at": now - timedelta(hours=1), "pods": [{"PodId": "p"}], "imported": True}
    just_imported = Job.objects.create(workspace=ws, display_name="a", dlc_job_id="dlc-a", synced_at=now, **ended)
    lost = Job.objects.create(workspace=ws, display_name="b", dlc_job_id="dlc-b",
                              synced_at=now - timedelta(minutes=5), **ended)
    Job.objects.create(workspace=ws, display_name="c", dlc_job_id="dlc-c", synced_at=now - timedelta(minutes=5),
                       logs_archived_at=now, **ended)
    assert lifecycle.unarchived_jobs(age) == [lost.pk]
    assert just_imported.pk in lifecycle.unarchived_jobs(timedelta(seconds=-1))  # only its sync time kept it out


def test_an_over_long_text_from_dlc_is_cut_to_its_column_not_a_stuck_sync(db):
    """SubStatus/ReasonCode/Status longer than their columns: PostgreSQL would refuse the page's one batched
    write, and the workspace's sync would fail every cycle while DLC answers the same (SQLite does not check
    lengths, so the values are compared too). The answer is made up: localdlc sends no such code."""
    from jobs import lifecycle
    from jobs.models import Job, Workspace

    ws = Workspace.objects.create(name="long", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")
    page = [Job.objects.create(workspace=ws, display_name=n, dlc_job_id=f"dlc-{n}", status="Queuing") for n in "ab"]
    items = [{"JobId": "dlc-a", "Status": "Failed", "ReasonCode": "E" * 200, "SubStatus": "S" * 100},
             {"JobId": "dlc-b", "Status": "Running"}]
    lifecycle._apply_page(page, items)
    assert dict(Job.objects.values_list("dlc_job_id", "status")) == {"dlc-a": "Failed", "dlc-b": "Running"}
    a = Job.objects.get(dlc_job_id="dlc-a")
    assert (a.reason_code, a.sub_status) == ("E" * 128, "S" * 64)
    assert lifecycle.take_remote(a, items[0]) == []  # the cut value is what is kept: no change every cycle
