"""localdlc's scheduler with a long queue: the CPU it spends while nothing can change, and per job it admits.

    python -m bench.localdlc_idle [--queued 10000] [--seconds 10] [--drain 100]

A private localdlc with 4 emulated CPUs (as in bench.sync): two "blocker" jobs of 2 CPUs each hold the whole
capacity, then `--drain` short jobs (`true`) and `--queued` long ones (`sleep 3600`) are created through the
official SDK and wait in Queuing, the short ones first. Figures:

  idle    localdlc's CPU seconds over `--seconds` with every job queued or blocked: nothing can change, so
          anything above zero is the scheduler looking at jobs that cannot move (and its own wake-ups).
  drain   the blockers are stopped; the short jobs then run two at a time, each admission picking the head of a
          queue of `--queued` jobs. localdlc's CPU per short job (spawning a pod process included) and the wall
          time until the last one succeeded.

CPU time comes from /proc, like bench.sync's "CPU of localdlc", and moves far less with the machine's other work
than wall time does. The console and its database play no part.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import heading, record, rss_kib
from bench.sync import cpu_seconds


def job_request(n: int, command: str):
    from alibabacloud_pai_dlc20201203 import models

    return models.CreateJobRequest(
        display_name=f"idle-{n}", job_type="PyTorchJob", workspace_id="ws-idle", user_command=command,
        job_specs=[models.JobSpec(type="Worker", pod_count=1, image="registry.example/pytorch:2.3",
                                  ecs_spec="ecs.g6.large")])


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


def run(stack, queued: int, seconds: float, drain: int) -> None:
    from alibabacloud_pai_dlc20201203 import models
    from alibabacloud_pai_dlc20201203.client import Client
    from alibabacloud_tea_openapi.models import Config

    client = Client(Config(access_key_id=stack.access_key_id, access_key_secret=stack.access_key_secret,
                           endpoint=f"127.0.0.1:{stack.localdlc_port}", protocol="http", region_id="cn-hangzhou"))

    def status(job_id: str) -> str:
        return client.get_job(job_id, models.GetJobRequest()).body.status

    heading(f"localdlc scheduler, {queued:,} queued jobs behind 2 blockers, {drain} short jobs first in line")
    blockers = [client.create_job(job_request(-1 - n, "sleep 3600")).body.job_id for n in range(2)]
    wait_for(lambda: all(status(b) == "Running" for b in blockers), 30, "the blockers to run")
    # One at a time, so the short jobs are first in line in this order.
    short = [client.create_job(job_request(n, "true")).body.job_id for n in range(drain)]
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: client.create_job(job_request(n, "sleep 3600")), range(drain, drain + queued)))
    setup = time.perf_counter() - started
    record("localdlc", "CreateJob (8 threads)", queued / setup, "jobs/s", size=queued)
    wait_for(lambda: not client.list_jobs(models.ListJobsRequest(status="Creating", page_size=1)).body.total_count,
             120, "every job to leave Creating", interval=1)

    pid = stack.procs["localdlc"].pid
    time.sleep(1)
    before = cpu_seconds(pid)
    time.sleep(seconds)
    idle = cpu_seconds(pid) - before
    record("localdlc", f"idle: CPU over {seconds:g} s", idle, "s", size=queued,
           note=f"{100 * idle / seconds:.1f}% of a core; every job queued or blocked")

    before, started = cpu_seconds(pid), time.perf_counter()
    for b in blockers:
        client.stop_job(b)
    wait_for(lambda: status(short[-1]) in ("Succeeded", "Failed", "Stopped"), 300, "the short jobs", interval=0.2)
    wall, cpu = time.perf_counter() - started, cpu_seconds(pid) - before
    outcomes = {status(j) for j in short}
    record("localdlc", f"drain: {drain} short jobs, wall", wall, "s", size=queued,
           note=f"two at a time; outcomes {sorted(outcomes)}")
    record("localdlc", "drain: CPU per short job", cpu / drain * 1000, "ms", size=queued,
           note="admitting it from the queue, its pod process, its status changes")
    record("localdlc", "localdlc RSS", rss_kib(pid) // 1024, "MiB", size=queued)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.localdlc_idle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--drain", type=int, default=100)
    args = parser.parse_args(argv)

    from consoleapp.stack import Stack, free_port

    with tempfile.TemporaryDirectory(prefix="bench-localdlc-") as data_dir:
        # Creating and EnvPreparing short, so the drain measures the scheduler more than its emulated delays.
        stack = Stack(data_dir=Path(data_dir), web_port=free_port(), localdlc_port=free_port(), quiet=True,
                      extra_env={"LOCALDLC_CPU": "4", "LOCALDLC_MEMORY_GIB": "64",
                                 "LOCALDLC_CREATING_SECONDS": "0.05", "LOCALDLC_ENV_PREPARING_SECONDS": "0.05"})
        stack.start_localdlc()
        try:
            run(stack, args.queued, args.seconds, args.drain)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
