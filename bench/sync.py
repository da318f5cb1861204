"""Status sync: wall time and ListJobs calls of one cycle with N active jobs across 5 workspaces on localdlc.

    python -m bench.sync [--active 10000] [--workspaces 5]

A private localdlc with a small emulated capacity (4 CPUs) holds the jobs: two "blocker" jobs take the
whole capacity and every other job waits in Queuing, which is an active status, so 10k jobs cost localdlc no
processes. The jobs are created through the official SDK (CreateJob, 8 threads); the console's rows for them
are bulk-inserted as a submit would have left them. The cycle is jobs.tasks.sync_jobs run in this process,
exactly the code a worker runs; localdlc's /_localdlc/stats counts the calls it receives. Besides wall times
it prints the CPU seconds the sync process and localdlc spent in each cycle, which move far less than wall times
with whatever else the machine is running.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from bench.common import heading, peak_rss_kib, record, rss_kib, setup_django, vendor

TARGET_SECONDS = 5.0


def job_body(workspace_id: str, n: int, command: str = "sleep 3600") -> dict:
    return {
        "DisplayName": f"sync-{n}",
        "JobType": "PyTorchJob",
        "WorkspaceId": workspace_id,
        "UserCommand": command,
        "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                      "EcsSpec": "ecs.g6.large"}],
    }


def localdlc_stats(port: int, reset: bool = False) -> dict:
    path = "/_localdlc/stats/reset" if reset else "/_localdlc/stats"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST" if reset else "GET")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
        return json.loads(answer.read())


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_server() -> tuple[int, str] | None:
    """PostgreSQL: the pid of this connection's backend process (where the sync's writes and their index entries
    are made) and the WAL position; None on SQLite, whose work is the sync process's own."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), pg_current_wal_lsn()::text")
        return cursor.fetchone()


def wal_bytes_since(lsn: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", [lsn])
        return int(cursor.fetchone()[0])


def run(active: int, workspaces: int, stack, profile: bool = False) -> None:
    from django.db.models import Count
    from django.utils import timezone

    from jobs import dlc, lifecycle, tasks
    from jobs import status as st
    from jobs.models import Job, Workspace

    db = vendor()
    heading(f"status sync, {active:,} active jobs in {workspaces} workspaces, localdlc, {db}")
    spaces = [
        Workspace.objects.create(name=f"sync-{i}", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id=f"ws-sync-{i}",
                                 endpoint=f"127.0.0.1:{stack.localdlc_port}")
        for i in range(workspaces)
    ]
    # Two jobs that fill the 4-CPU capacity, so everything created after them queues.
    for n in range(2):
        dlc.create_job(spaces[0], job_body(spaces[0].dlc_workspace_id, -1 - n))

    def create(n: int) -> tuple[int, str]:
        space = spaces[n % workspaces]
        return n, dlc.create_job(space, job_body(space.dlc_workspace_id, n))

    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(create, range(active)))
    seconds = time.perf_counter() - started
    record("sync", "CreateJob on localdlc (8 threads)", active / seconds, "jobs/s", size=active, db=db,
           note=f"{seconds:.0f} s to set up")

    now = timezone.now()
    Job.objects.bulk_create(
        [Job(workspace=spaces[n % workspaces], display_name=f"sync-{n}", job_type="PyTorchJob",
             body=job_body(spaces[n % workspaces].dlc_workspace_id, n), dlc_job_id=remote, status="Creating",
             submitted_at=now, created_at=now - timedelta(seconds=active - n),
             status_history=[{"Status": "Creating", "StartTime": now.isoformat()}])
         for n, remote in created],
        batch_size=2000,
    )

    # Time spent inside ListJobs calls, to tell localdlc's share of a cycle from the console's.
    dlc_seconds: list[float] = []
    original_list_jobs = dlc.list_jobs

    def list_jobs(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original_list_jobs(*args, **kwargs)
        finally:
            dlc_seconds.append(time.perf_counter() - start)

    dlc.list_jobs = list_jobs
    # Let localdlc move every job out of Creating, so the first cycle has a change to write for each.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(dlc.list_jobs(w, Status="Creating", PageSize=1)[1] for w in spaces):
        time.sleep(1)
    for cycle in ("first cycle (every job changes)", "steady cycle (nothing changes)"):
        # The blockers count too once imported; the ceiling is taken over the jobs active at the start.
        running = Job.objects.exclude(dlc_job_id="").exclude(status__in=st.TERMINAL)
        now_active = running.count()
        ceiling = math.ceil(now_active / dlc.LIST_PAGE_SIZE) + workspaces
        planned = sum(lifecycle.pages(running.filter(workspace=w).count()) for w in spaces)
        dlc_seconds.clear()
        localdlc_stats(stack.localdlc_port, reset=True)
        profiler = cProfile.Profile() if profile else None
        localdlc_cpu = cpu_seconds(stack.procs["localdlc"].pid)
        server = database_server()
        server_cpu = cpu_seconds(server[0]) if server else 0.0
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        tasks.sync_jobs()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        localdlc_cpu = cpu_seconds(stack.procs["localdlc"].pid) - localdlc_cpu
        if server:
            server_cpu = cpu_seconds(server[0]) - server_cpu
            wal = wal_bytes_since(server[1])
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        calls = localdlc_stats(stack.localdlc_port)["calls"]
        list_calls = calls.get("ListJobs", 0)
        record("sync", f"{cycle}: wall time", wall, "s", size=active, db=db, target=f"<{TARGET_SECONDS:g} s",
               met=wall < TARGET_SECONDS)
        record("sync", f"{cycle}: ListJobs calls", list_calls, "", size=active, db=db,
               target=f"<={ceiling}", met=list_calls <= ceiling,
               note=f"ceil({now_active}/{dlc.LIST_PAGE_SIZE}) + {workspaces}; the code plans {planned}")
        record("sync", f"{cycle}: time in ListJobs calls", sum(dlc_seconds), "s", size=active, db=db,
               note="localdlc, HTTP and decoding the answer; the next page's call overlaps this page's "
                    "database work, so this is not a share of the wall time")
        # CPU seconds, unlike the wall time, hardly move with what else the machine is running.
        record("sync", f"{cycle}: CPU of the sync process", cpu, "s", size=active, db=db,
               note="the console's side: SDK, HTTP client, Django, the database driver")
        record("sync", f"{cycle}: CPU of localdlc", localdlc_cpu, "s", size=active, db=db,
               note="answering the ListJobs calls, plus its scheduler thread meanwhile")
        if server:
            record("sync", f"{cycle}: CPU of the PostgreSQL backend", server_cpu, "s", size=active, db=db,
                   note="the sync's connection: reading the rows, writing rows and index entries")
            record("sync", f"{cycle}: WAL written", wal / 2**20, "MiB", size=active, db=db,
                   note="row versions and index entries the cycle wrote (and any other writer's meanwhile)")
        other = {k: v for k, v in calls.items() if k != "ListJobs"}
        record("sync", f"{cycle}: other DLC calls", json.dumps(other) if other else "none", size=active, db=db)
    statuses = dict(Job.objects.values_list("status").annotate(n=Count("id")))
    record("sync", "console statuses after the cycles", json.dumps(statuses), size=active, db=db)
    record("sync", "sync process RSS after the cycles", rss_kib() // 1024, "MiB", size=active, db=db,
           note=f"peak {peak_rss_kib() // 1024} MiB; the cycle loads every active row")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sync", description=__doc__)
    parser.add_argument("--active", type=int, default=10_000)
    parser.add_argument("--workspaces", type=int, default=5)
    parser.add_argument("--profile", action="store_true",
                        help="print where each cycle spends its time (the main thread's: the ListJobs calls "
                             "run on a helper thread, see jobs.lifecycle.sync_active)")
    args = parser.parse_args(argv)

    from consoleapp.stack import Stack, free_port

    with tempfile.TemporaryDirectory(prefix="bench-sync-") as data_dir:
        stack = Stack(data_dir=Path(data_dir), web_port=free_port(), localdlc_port=free_port(), quiet=True,
                      extra_env={"LOCALDLC_CPU": "4", "LOCALDLC_MEMORY_GIB": "64"})
        os.environ["LOCALDLC_CREDENTIALS_FILE"] = str(stack.credentials_file)
        if not os.environ.get("DATABASE_URL"):
            os.environ["DATABASE_URL"] = f"sqlite:///{Path(data_dir) / 'console.sqlite3'}"
        setup_django(data_dir)
        stack.start_localdlc()
        try:
            run(args.active, args.workspaces, stack, args.profile)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
