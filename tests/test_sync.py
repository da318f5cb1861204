"""Status sync, stop and log archive with the real session stack (Redis, Celery worker and beat, localdlc), and
the sync's call budget on 500 active jobs (ListJobs calls counted by localdlc itself)."""

from __future__ import annotations

import math
import threading

import pytest
import requests
from alibabacloud_pai_dlc20201203 import models as sdk

from tests.support.wizard import credentials_file
from tests.test_lifecycle import (  # noqa: F401 - fixture_* register the fixtures used here by name
    fixture_backend,
    fixture_quiet_stack,
    fixture_ws,
    job_body,
    make_job,
    make_workspace,
    use_broker,
    wait_for,
)
from tests.test_skeleton_flow import signed_in_session

pytestmark = pytest.mark.integration


def stack_client(stack):
    from alibabacloud_pai_dlc20201203.client import Client
    from alibabacloud_tea_openapi.models import Config

    return Client(Config(access_key_id=stack.access_key_id, access_key_secret=stack.access_key_secret,
                         endpoint=f"127.0.0.1:{stack.localdlc_port}", protocol="http", region_id="cn-hangzhou"))


def stack_stats(stack) -> dict:
    url = f"http://127.0.0.1:{stack.localdlc_port}/_localdlc/stats"
    return requests.get(url, timeout=5).json()["calls"]


def submit_through_the_stack(stack, workspace, owner, command: str, name: str | None = None):
    """What the create page does: save the row and enqueue the submit on the stack's Redis."""
    from jobs.views import save_and_enqueue

    with use_broker(stack.redis_url):
        return save_and_enqueue(workspace=workspace, owner=owner, body=job_body(command, name))


def status_of(job) -> str:
    job.refresh_from_db()
    return job.status


def test_stop_goes_through_celery_and_the_row_says_stopping_until_dlc_confirms(stack, member, workspace):
    from jobs import lifecycle

    # The pod ignores SIGTERM, so DLC takes its grace period (3 s) to stop it: "Stopping" lasts a while.
    job = submit_through_the_stack(stack, workspace, member, "trap '' TERM; echo started; sleep 60")
    web = signed_in_session(stack.url, member.username)
    wait_for(lambda: status_of(job) == "Running", timeout=60, what="job running")
    stops_before = stack_stats(stack).get("StopJob", 0)

    with use_broker(stack.redis_url):
        assert lifecycle.request_stop(member, job) == "stopping"
    assert status_of(job) == "Stopping"
    assert "Stopping" in web.get(f"{stack.url}/jobs/{job.pk}/row").text

    seen = []

    def stopped() -> bool:
        seen.append(status_of(job))
        return seen[-1] == "Stopped"

    wait_for(stopped, timeout=30, interval=0.1, what="stop confirmed")
    assert set(seen) <= {"Stopping", "Stopped"}, f"the row must not flick back while stopping: {seen}"
    assert stack_stats(stack).get("StopJob", 0) == stops_before + 1
    job.refresh_from_db()
    assert job.stop_sent_at and job.finished_at and job.status_history[-1]["Status"] == "Stopped"
    assert "Stopped" in web.get(f"{stack.url}/jobs/{job.pk}/row").text


def test_logs_are_archived_when_the_job_ends_and_outlive_it_on_dlc(stack, member, workspace, settings):
    """2500 lines (more than one GetPodLogs page) archived by the worker once sync sees the job end."""
    from jobs import dlc, logarchive
    from jobs.models import Job, PodLog

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # for this process's own DLC calls

    job = submit_through_the_stack(stack, workspace, member, "seq 1 1500; sleep 0.5; seq 1501 2500; echo done >&2")
    wait_for(lambda: status_of(job) == "Succeeded", timeout=60, what="job succeeded")
    pod_id = job.pods[0]["PodId"]
    # The job is marked archived last, after its pods' logs are written and its metrics and diagnosis read from them
    # (logarchive.archive): waiting for the PodLog row, then reading logs_archived_at, could look in between.
    wait_for(lambda: Job.objects.filter(pk=job.pk, logs_archived_at__isnull=False).exists(), timeout=30,
             what="log archived")
    expected = [str(n) for n in range(1, 2501)] + ["done"]
    assert logarchive.read(job, pod_id) == expected
    archived = PodLog.objects.get(job=job, pod_id=pod_id)
    assert archived.lines == 2501 and len(bytes(archived.content)) < len("\n".join(expected)) / 2

    stack_client(stack).delete_job(job.dlc_job_id)  # DLC forgets the job and its logs
    with pytest.raises(dlc.DLCError) as gone:
        dlc.get_pod_logs(job.workspace, job.dlc_job_id, pod_id)
    assert gone.value.status == 404
    assert logarchive.read(job, pod_id) == expected
    assert logarchive.read(job, "no-such-pod") is None


def test_fetch_lines_pages_through_a_log_longer_than_a_page(ws, backend):
    """The bisection itself, with a 100-line page on 1000 lines printed in bursts of 50: every line, in order."""
    from jobs import lifecycle, logarchive
    from jobs.models import Job

    job = make_job(ws, command="for b in $(seq 1 20); do seq $((b*50-49)) $((b*50)); sleep 0.05; done")
    assert lifecycle.submit(job.pk) == "created"
    job.refresh_from_db()
    backend.wait_for_status(job.dlc_job_id, ["Succeeded"], timeout=20)
    lifecycle.sync_workspace(ws)
    job = Job.objects.get(pk=job.pk)
    pod = job.pods[0]
    calls = backend.stats()["calls"].get("GetPodLogs", 0)
    start, end = logarchive.pod_range(job, pod)
    lines = logarchive.fetch_lines(ws, job.dlc_job_id, pod["PodId"], start, end, page_lines=100)
    assert lines == [str(n) for n in range(1, 1001)]
    assert backend.stats()["calls"]["GetPodLogs"] - calls >= 10, "a 100-line page cannot carry 1000 lines"

    assert logarchive.archive(job.pk, page_lines=100) == 1
    assert logarchive.archive(job.pk, page_lines=100) == 0  # idempotent
    assert logarchive.read(job, pod["PodId"]) == lines


def test_sync_of_500_active_jobs_uses_a_list_jobs_call_per_page_plus_one(transactional_db, quiet_stack,
                                                                        localdlc_factory, settings, tmp_path):
    """500 active jobs: each cycle costs at most ceil(500 / page size) + 1 ListJobs calls and no GetJob,
    counted by localdlc; jobs created elsewhere meanwhile are imported by that "+1" call."""
    from django.utils import timezone

    from jobs import dlc, tasks
    from jobs.models import Job

    # 2 emulated cores: one job runs, the other 499 queue (active, yet no 500 processes on the test machine).
    big = localdlc_factory(cpu=2, memory_gib=16, creating_seconds=0.05, env_preparing_seconds=0.05)
    settings.LOCALDLC_CREDENTIALS_FILE = str(
        credentials_file(big, tmp_path, "big.ini")
    )
    ws = make_workspace(big.endpoint)

    ids: list[str] = []
    lock = threading.Lock()

    def create(names: range) -> None:
        client = big.client()
        for i in names:
            body = job_body("sleep 60", f"bulk-{i}")
            remote = client.create_job(sdk.CreateJobRequest().from_map(body)).body.job_id
            with lock:
                ids.append(remote)

    threads = [threading.Thread(target=create, args=(range(t, 500, 8),)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(ids) == 500
    now = timezone.now()
    Job.objects.bulk_create(
        Job(workspace=ws, display_name=f"bulk-{n}", job_type="PyTorchJob", body=job_body("sleep 60"),
            dlc_job_id=remote, status="Creating", created_at=now, submitted_at=now)
        for n, remote in enumerate(ids)
    )
    budget = math.ceil(500 / dlc.LIST_PAGE_SIZE) + 1

    def cycle() -> dict:
        before = big.stats()["calls"]
        tasks.sync_jobs()  # the beat's task, run here so that each cycle is counted on its own
        after = big.stats()["calls"]
        return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}

    first = cycle()
    assert 1 <= first.get("ListJobs", 0) <= budget and not first.get("GetJob"), first
    assert Job.objects.filter(workspace=ws, synced_at__isnull=True).count() == 0
    assert set(Job.objects.filter(workspace=ws).values_list("status", flat=True)) <= {"Queuing", "Running"}
    assert Job.objects.filter(workspace=ws, status="Queuing").count() >= 495

    # Jobs created elsewhere (another console, the CLI) show up through the import, within the same budget.
    client = big.client()
    foreign = [client.create_job(sdk.CreateJobRequest().from_map(job_body("sleep 60", f"cli-{n}"))).body.job_id
               for n in range(3)]
    for _ in range(8):
        active = Job.objects.filter(workspace=ws).exclude(status__in=["Succeeded", "Failed", "Stopped"]).count()
        counts = cycle()
        # The budget is the active jobs' pages plus one: an import page that ends between the three new jobs
        # leaves a cycle with 501 or 502 active jobs, which takes a sixth page.
        assert counts.get("ListJobs", 0) <= math.ceil(active / dlc.LIST_PAGE_SIZE) + 1, (active, counts)
        assert not counts.get("GetJob"), counts
        if Job.objects.filter(dlc_job_id__in=foreign).count() == 3:
            break
    assert Job.objects.filter(dlc_job_id__in=foreign, imported=True, owner=None).count() == 3
    assert Job.objects.filter(workspace=ws).count() == 503

    # A change on DLC's side shows after one cycle (now 503 active jobs: one page more).
    client.stop_job(ids[-1])
    wait_for(lambda: client.get_job(ids[-1], sdk.GetJobRequest()).body.status == "Stopped", timeout=10)
    counts = cycle()
    assert counts.get("ListJobs", 0) <= math.ceil(503 / dlc.LIST_PAGE_SIZE) + 1 and not counts.get("GetJob")
    assert Job.objects.get(dlc_job_id=ids[-1]).status == "Stopped"


@pytest.fixture(name="small")
def fixture_small(transactional_db, quiet_stack, localdlc_factory, settings, tmp_path):
    """A private localdlc with room for two running jobs (2 emulated cores each): the rest queue."""
    backend = localdlc_factory(cpu=4, memory_gib=16, creating_seconds=0.05, env_preparing_seconds=0.05)
    settings.LOCALDLC_CREDENTIALS_FILE = str(
        credentials_file(backend, tmp_path, "small.ini")
    )
    return backend, make_workspace(backend.endpoint)


def test_a_page_of_mixed_changes_is_written_in_a_batch_exactly(small):
    """One ListJobs page where rows change in different sets of fields, written by the batched write: each row
    read back holds exactly what DLC said (or its own values where nothing changed), and a field the cycle
    had no change for is not written even when someone else changed it meanwhile."""
    from django.utils import timezone

    from jobs import dlc, lifecycle
    from jobs.models import Job

    backend, ws = small
    remote = {}
    for name, command in [("ender", "true"), ("runner", "sleep 60"), ("stopper", "sleep 60"), ("quiet", "sleep 60"),
                          ("status-only", "sleep 60"), ("queued-a", "sleep 60"), ("queued-b", "sleep 60")]:
        remote[name] = dlc.create_job(ws, job_body(command, name))
        if name in ("ender", "runner"):  # in this order: the ender frees its cores before the others arrive
            backend.wait_for_status(remote[name], ["Succeeded"] if name == "ender" else ["Running"], timeout=20)
    backend.wait_for_status(remote["stopper"], ["Running"], timeout=20)
    for name in ("quiet", "status-only", "queued-a", "queued-b"):
        backend.wait_for_status(remote[name], ["Queuing"], timeout=20)

    submitted = timezone.now()
    rows = {name: Job.objects.create(
        workspace=ws, display_name=name, job_type="PyTorchJob", body=job_body("sleep 60", name), dlc_job_id=job_id,
        status="Creating", submitted_at=submitted, status_history=[{"Status": "Creating", "StartTime": "then"}],
    ) for name, job_id in remote.items()}
    items = {i["JobId"]: i for i in dlc.list_jobs(ws, JobIds=",".join(remote.values()), PageSize=100)[0]}
    # "quiet" is already up to date; "status-only" differs from DLC in its status alone.
    for name in ("quiet", "status-only"):
        lifecycle.take_remote(rows[name], items[remote[name]])
        rows[name].save()
    Job.objects.filter(pk=rows["status-only"].pk).update(status="Creating")
    asked = timezone.now()
    Job.objects.filter(pk=rows["stopper"].pk).update(stop_requested_at=asked)
    # Rows the cycle must not touch: an ended job of this workspace, and an active one of another workspace.
    done = Job.objects.create(workspace=ws, display_name="done", dlc_job_id="dlc-gone", status="Failed",
                              reason_message="it's 100% \"done\"", pods=[{"PodId": "p"}])
    elsewhere = Job.objects.create(workspace=make_workspace(backend.endpoint), display_name="elsewhere",
                                   dlc_job_id=remote["quiet"], status="Creating")
    before = {r.pk: r for r in Job.objects.filter(pk__in=[done.pk, elsewhere.pk])}

    # The page's ListJobs answers late; meanwhile someone else edits a field "status-only" has no change for.
    backend.set_faults({"action": "ListJobs", "mode": "delay", "delay": 1.0, "count": 1})
    calls = backend.stats()["calls"].get("ListJobs", 0)
    result: dict = {}

    def cycle() -> None:
        from django.db import connection

        try:
            result["ended"] = lifecycle.sync_active(ws)
        finally:
            connection.close()

    thread = threading.Thread(target=cycle)
    thread.start()
    wait_for(lambda: backend.stats()["calls"].get("ListJobs", 0) > calls, timeout=10, what="the page asked")
    Job.objects.filter(pk=rows["status-only"].pk).update(reason_message="edited meanwhile")
    # A user stops "runner" after the cycle read it (what lifecycle.request_stop writes for a job on DLC).
    late = timezone.now()
    Job.objects.filter(pk=rows["runner"].pk).update(stop_requested_at=late, status="Stopping")
    thread.join(30)
    assert result["ended"] == [rows["ender"].pk]

    after = {r.display_name: r for r in Job.objects.filter(workspace=ws).exclude(pk=done.pk)}
    stamps = {r.synced_at for r in after.values()}
    assert len(stamps) == 1 and None not in stamps, "one synced_at stamp for the page, on every row it saw"
    for name, row in after.items():
        item = items[remote[name]]
        pods = [{k: v for k, v in p.items() if k != "Duration"} for p in item["Pods"]]
        assert (row.sub_status, row.status_history, row.pods) == (item.get("SubStatus") or "", item["StatusHistory"],
                                                                   pods), name
        assert row.reason_code == item["ReasonCode"], name
        assert row.started_at == (lifecycle._dt(item["GmtRunningTime"]) if name in ("ender", "runner", "stopper")
                                  else None), name
    assert after["ender"].status == "Succeeded"
    assert after["ender"].finished_at == lifecycle._dt(items[remote["ender"]]["GmtFinishTime"])
    assert after["runner"].status == "Stopping", "a stop asked during the cycle is not overwritten by its write"
    assert after["runner"].finished_at is None and after["runner"].stop_requested_at == late
    assert after["stopper"].status == "Stopping" and after["stopper"].stop_requested_at == asked
    for name in ("quiet", "status-only", "queued-a", "queued-b"):
        assert after[name].status == "Queuing" and after[name].finished_at is None, name
    assert after["quiet"].reason_message == items[remote["quiet"]]["ReasonMessage"]
    assert after["status-only"].reason_message == "edited meanwhile", "a field with no change was written"
    assert after["queued-a"].reason_message == items[remote["queued-a"]]["ReasonMessage"] != ""
    for name, row in after.items():  # what the sync never writes
        assert (row.display_name, row.body, row.submitted_at) == (name, job_body("sleep 60", name), submitted)
    for row in Job.objects.filter(pk__in=before):
        old = before[row.pk]
        assert [getattr(row, f.attname) for f in Job._meta.concrete_fields] == [
            getattr(old, f.attname) for f in Job._meta.concrete_fields], row.display_name


def test_list_jobs_answers_the_same_whether_localdlc_pages_in_sql_or_in_python(small):
    """localdlc cuts a ListJobs page in SQL when no filter looks inside the jobs; a filter every job passes
    (Accessibility=PRIVATE) takes the other path. Both must answer the same, for every order, page and window."""
    from jobs import dlc

    backend, ws = small
    ids = [dlc.create_job(ws, job_body("sleep 60", f"page-{n}")) for n in range(12)]
    ids += [dlc.create_job(ws, job_body("sleep 60", f"other-{n}", WorkspaceId="other")) for n in range(3)]
    client = backend.client()

    def answer(**query) -> tuple[list, int]:
        body = client.list_jobs(sdk.ListJobsRequest().from_map(query)).body
        jobs = [{k: v for k, v in j.to_map().items() if k != "Duration"} for j in body.jobs or []]
        return jobs, body.total_count

    def settled() -> bool:  # two jobs running, the others queued: no answer changes between two calls
        statuses = [(j["Status"], [p["Status"] for p in j.get("Pods", [])]) for j in answer(PageSize=100)[0]]
        return sorted(statuses).count(("Running", ["Running"])) == 2 and statuses.count(("Queuing", ["Pending"])) == 13

    wait_for(settled, timeout=20, what="two jobs running, the rest queued")
    created = sorted(j["GmtCreateTime"] for j in answer(PageSize=100)[0])
    queries = [
        {}, {"PageSize": 5}, {"PageSize": 5, "PageNumber": 3}, {"PageSize": 4, "PageNumber": 2, "Order": "asc"},
        {"WorkspaceId": "local", "PageSize": 100}, {"WorkspaceId": "other", "Order": "asc"},
        {"StartTime": created[4], "PageSize": 100, "Order": "asc"}, {"EndTime": created[9], "StartTime": created[0]},
        {"JobIds": ",".join(ids[2:9]), "PageSize": 3, "PageNumber": 2},
        {"JobIds": ",".join(ids[::2]), "WorkspaceId": "local", "PageSize": 100, "Order": "asc"},
        {"JobId": ids[-1]}, {"PageSize": 10, "PageNumber": 9},
    ]
    answered = 0
    for query in queries:
        fast = answer(**query)
        assert fast == answer(**query, Accessibility="PRIVATE"), query
        answered += bool(fast[0])
    assert answered >= len(queries) - 2, "most of these pages hold jobs, or the comparison proves little"
    assert answer(PageSize=100)[1] == 15
    assert [j["JobId"] for j in answer(PageSize=100, Order="asc")[0]] == ids  # oldest first, as created


def test_the_batched_write_stores_values_as_save_would(transactional_db):
    """Values that trip up hand-made SQL (quotes, %, backslashes, non-ASCII, JSON of every kind, microseconds,
    NULL) come back as they went in; rows and fields not named are left alone; and a value save() refuses is
    refused too (an over-long status on PostgreSQL)."""
    from datetime import UTC, datetime

    from django.db import DatabaseError, transaction

    from jobs import batchwrite
    from jobs.models import Job, Workspace

    ws = Workspace.objects.create(name="bw", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")
    jobs = [Job.objects.create(workspace=ws, display_name=name, dlc_job_id=f"dlc-{name}", status="Queuing",
                               reason_message="kept", finished_at=datetime(2026, 1, 1, tzinfo=UTC)) for name in "abcd"]
    a, b, c, untouched = jobs
    tricky = {"Message": "it's 100% \"done\" %s %(x)s \\ ünïcode ✓", "n": [1, 2.5, None, True, {"k": []}]}
    a.status, a.status_history, a.finished_at = "Running", [tricky], None
    b.reason_message, b.started_at = "%(x)s and %s and '' and \\", datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    c.pods, c.reason_message = [tricky, "a plain string"], "not named, so not written"
    a.reason_message = "not named either"
    assert batchwrite.update_changed([(a, ["status", "status_history", "finished_at"]),
                                      (b, ["reason_message", "started_at"]), (c, ["pods"]), (untouched, [])]) == 3

    def row(job) -> list:
        fresh = Job.objects.get(pk=job.pk)
        return [getattr(fresh, f.attname) for f in Job._meta.concrete_fields]

    a.reason_message = c.reason_message = "kept"
    for job in jobs:
        assert row(job) == [getattr(job, f.attname) for f in Job._meta.concrete_fields], job.display_name

    with pytest.raises(TypeError):
        batchwrite.update_changed([(a, ["status"]), (ws, ["name"])])
    with pytest.raises(ValueError, match="no_such_field"):
        batchwrite.update_changed([(a, ["no_such_field"])])

    a.status = "x" * 33  # the column is varchar(32): PostgreSQL refuses it, SQLite does not check
    refused = []
    for write in (lambda: a.save(update_fields=["status"]), lambda: batchwrite.update_changed([(a, ["status"])])):
        try:
            with transaction.atomic():
                write()
            refused.append(False)
        except DatabaseError:
            refused.append(True)
    assert refused[0] == refused[1], f"save() refused: {refused[0]}, the batched write: {refused[1]}"


def test_job_rows_leave_room_for_the_syncs_updates_on_postgresql(db):
    """Migration 0009: the sync's updates of unindexed columns can stay on the row's page (heap-only tuples)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL storage parameter")
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'jobs_job'")
        assert "fillfactor=80" in (cursor.fetchone()[0] or [])
