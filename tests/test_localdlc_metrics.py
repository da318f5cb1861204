"""localdlc's GetJobMetrics through the console's SDK call (jobs.dlc): a pod that burns CPU and holds memory is
measured from /proc; bad parameters are 400s and an unknown job a 404, as the other actions answer them."""

from __future__ import annotations

import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import dlc
from jobs.models import Workspace
from tests.support.wizard import credentials_file

pytestmark = pytest.mark.integration

MIB = 1 << 20
# Holds 150 MiB (b"x" * n writes every page) and spins for 2 s of wall time.
BURN = (f"{sys.executable} -c 'import time; held = b\"x\" * (150 << 20); end = time.time() + 2\n"
        "while time.time() < end: pass'")


@pytest.fixture(scope="module")
def sampled(localdlc_module):
    """A private localdlc sampling every 0.2 s, and one finished job of one pod that ran BURN."""
    instance = localdlc_module
    client = instance.client()
    from alibabacloud_pai_dlc20201203 import models

    started = timezone.now()
    job_id = client.create_job(models.CreateJobRequest(
        display_name="metrics", job_type="PyTorchJob", user_command=BURN,
        job_specs=[models.JobSpec(type="Worker", pod_count=1, image="img",
                                  resource_config=models.ResourceConfig(cpu="1", memory="1Gi"))])).body.job_id
    assert instance.wait_for_status(job_id, timeout=30, client=client).status == "Succeeded"
    return instance, job_id, started


@pytest.fixture(scope="module")
def localdlc_module(tmp_path_factory):
    from tests.support.localdlc import LocalDLC

    instance = LocalDLC(creating_seconds=0.05, env_preparing_seconds=0.05, metrics_seconds=0.2)
    try:
        yield instance
    finally:
        instance.cleanup()


@pytest.fixture
def ws(db, sampled, tmp_path, settings):
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(sampled[0], tmp_path))
    return Workspace.objects.create(name="Metrics", backend=Workspace.BACKEND_LOCAL, endpoint=sampled[0].endpoint)


def values(pods: list[dict]) -> list[float]:
    return [point["Value"] for pod in pods for point in pod.get("Metrics") or []]


def test_a_busy_pod_shows_its_cpu_and_memory_per_time_step(ws, sampled):
    _, job_id, started = sampled
    since = started - timedelta(seconds=5)
    cpu = dlc.get_job_metrics(ws, job_id, "CpuCoreUsage", since, timezone.now(), "1s")
    assert [pod["PodId"] for pod in cpu] == [f"{job_id}-worker-0"]
    times = [point["Time"] for point in cpu[0]["Metrics"]]
    assert len(times) >= 2 and times == sorted(times) and all(isinstance(t, int) for t in times)
    assert all((t - times[0]) % 1000 == 0 for t in times), "one point per 1 s step"
    assert since.timestamp() * 1000 - 1 <= times[0] <= time.time() * 1000
    assert max(values(cpu)) > 0.3, cpu
    memory = dlc.get_job_metrics(ws, job_id, "MemoryUsage", since, timezone.now(), "1s")
    assert max(values(memory)) > 150 * MIB, memory
    # A bucket as wide as the run averages all the samples into one point.
    whole = dlc.get_job_metrics(ws, job_id, "CpuCoreUsage", since, timezone.now(), "1h")
    assert len(whole[0]["Metrics"]) == 1 and 0 < whole[0]["Metrics"][0]["Value"] <= max(values(cpu))


def test_defaults_cover_the_last_hour_and_gpus_answer_empty(ws, sampled):
    _, job_id, _ = sampled
    assert values(dlc.get_job_metrics(ws, job_id, "MemoryUsage")), "StartTime defaults to an hour ago"
    for metric in ("GpuCoreUsage", "GpuMemoryUsage", "NetworkInputRate"):
        assert dlc.get_job_metrics(ws, job_id, metric) == [{"PodId": f"{job_id}-worker-0", "Metrics": []}]
    disk = dlc.get_job_metrics(ws, job_id, "DiskWriteRate")
    assert values(disk) and min(values(disk)) >= 0
    # A range before the job ran has no samples.
    early = timezone.now() - timedelta(days=1)
    assert values(dlc.get_job_metrics(ws, job_id, "CpuCoreUsage", early, early + timedelta(hours=1))) == []


@pytest.mark.parametrize("metric, step, start, field", [
    ("CpuUsage", None, None, "MetricType"),
    ("", None, None, "MetricType"),
    ("CpuCoreUsage", "five minutes", None, "TimeStep"),
    ("CpuCoreUsage", "0s", None, "TimeStep"),
    ("CpuCoreUsage", "1s", timedelta(days=1), "TimeStep"),  # 86,400 points: too many
    ("CpuCoreUsage", None, timedelta(seconds=-60), "StartTime"),  # after EndTime
])
def test_bad_parameters_are_400_invalid_parameter_naming_the_field(ws, sampled, metric, step, start, field):
    _, job_id, _ = sampled
    now = timezone.now()
    with pytest.raises(dlc.DLCError) as caught:
        dlc.get_job_metrics(ws, job_id, metric, now - start if start else None, now if start else None, step)
    assert (caught.value.status, caught.value.code) == (400, "InvalidParameter")
    assert caught.value.message.startswith(f"{field}:")


def test_an_unknown_job_is_404_like_get_job(ws, sampled):
    with pytest.raises(dlc.DLCError) as caught:
        dlc.get_job_metrics(ws, "dlcnosuchjob0000", "CpuCoreUsage")
    assert (caught.value.status, caught.value.code) == (404, "JobNotFound")
