"""The job page's monitoring partial through the Django test client, against the session's real localdlc through
the real SDK: SVG charts for a job that ran, nothing for one not started, bad ranges and failed reads in place."""

from __future__ import annotations

import re
import socket
import sys
import time

import pytest

from jobs import dlc, lifecycle
from jobs.models import Job

pytestmark = pytest.mark.integration

HTMX = {"HTTP_HX_REQUEST": "true"}
# 1.5 s of busy CPU, then 60 MiB held for 5 s in all: localdlc samples every 2 s, and on a busy machine its
# first sample can come before the interpreter has even started (a 1.5 s job once showed memory as 0 B).
BURN = (f"{sys.executable} -c 'import time; held = b\"x\" * (60 << 20); start = time.time()\n"
        "while time.time() < start + 1.5: pass\ntime.sleep(3.5)'")


BODY = {"DisplayName": "burn", "JobType": "PyTorchJob", "UserCommand": BURN,
        "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}


@pytest.fixture(scope="module")
def burned(localdlc, tmp_path_factory) -> str:
    """The DLC job id of a BURN job the session's localdlc ran to the end, once for the module: it takes 5 s, and
    the tests only read its metrics (each through a row of its own, so no test sees another's shared read)."""
    from django.test import override_settings

    from jobs.models import Workspace
    from tests.support.wizard import credentials_file

    creds = credentials_file(localdlc, tmp_path_factory.mktemp("burn"))
    unsaved = Workspace(name="Local", backend=Workspace.BACKEND_LOCAL, endpoint=localdlc.endpoint)
    with override_settings(LOCALDLC_CREDENTIALS_FILE=str(creds)):
        job_id = dlc.create_job(unsaved, BODY)
        deadline = time.monotonic() + 30
        while (item := dlc.get_job(unsaved, job_id))["Status"] != "Succeeded":
            assert time.monotonic() < deadline and item["Status"] not in ("Failed", "Stopped"), item["Status"]
            time.sleep(0.1)
    return job_id


@pytest.fixture
def ran(ws, people, burned) -> Job:
    """A job localdlc ran to the end, its row synced the way the beat does it."""
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="burn", status="Creating",
                             job_type="PyTorchJob", body=BODY, dlc_job_id=burned)
    lifecycle.apply_remote(job, dlc.get_job(ws, burned))
    return job


def test_every_request_within_a_few_seconds_shares_one_read(client, people, ran, localdlc):
    client.force_login(people["vic"])
    first = client.get(f"/jobs/{ran.pk}/metrics?range=1h", **HTMX).content.decode()
    reads = localdlc.stats()["calls"].get("GetJobMetrics", 0)
    client.force_login(people["alice"])  # another viewer, the same job and range
    assert client.get(f"/jobs/{ran.pk}/metrics?range=1h", **HTMX).content.decode() == first
    assert localdlc.stats()["calls"].get("GetJobMetrics", 0) == reads, "DLC was asked again"
    client.get(f"/jobs/{ran.pk}/metrics?range=6h", **HTMX)  # another range is another read
    assert localdlc.stats()["calls"].get("GetJobMetrics", 0) > reads


def test_a_job_that_ran_gets_svg_charts_of_its_pods_and_no_refresh(client, people, ran):
    client.force_login(people["vic"])  # a viewer may look
    html = client.get(f"/jobs/{ran.pk}/metrics?range=job", **HTMX).content.decode()
    cpu = re.search(r'<figure class="metric-chart" id="chart-CpuCoreUsage">(.*?)</figure>', html, re.S).group(1)
    assert re.search(r'<svg class="chart" viewBox="0 0 600 140"', cpu), cpu
    points = re.search(r'<polyline class="series series-0" points="([^"]+)"', cpu).group(1)
    assert all(0 <= float(x) <= 600 and 0 <= float(y) <= 140 for x, y in (p.split(",") for p in points.split()))
    assert f"{ran.dlc_job_id}-worker-0" in cpu and "cores" in cpu
    memory = re.search(r'id="chart-MemoryUsage">(.*?)</figure>', html, re.S).group(1)
    assert "<polyline" in memory and "MiB" in memory
    assert "No GPU metrics for this job." in re.search(r'id="chart-GpuCoreUsage">(.*?)</figure>', html, re.S).group(1)
    assert 'class="current" aria-current="true">Whole job<' in html
    assert "every 10s" not in html, "an ended job's charts are not refreshed"


def test_the_page_loads_the_section_lazily_and_an_active_job_refreshes(client, people, ws):
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="waiting", status="Submitting")
    client.force_login(people["alice"])
    page = client.get(f"/jobs/{job.pk}").content.decode()
    assert 'id="monitoring"' in page and f'hx-get="/jobs/{job.pk}/metrics" hx-trigger="revealed"' in page
    html = client.get(f"/jobs/{job.pk}/metrics?range=15m", **HTMX).content.decode()
    assert "Not started" in html and "<svg" not in html
    assert f'hx-get="/jobs/{job.pk}/metrics?range=15m" hx-trigger="every 10s"' in html


def test_without_javascript_the_section_opens_as_a_page_of_its_own(client, people, ran):
    client.force_login(people["alice"])
    page = client.get(f"/jobs/{ran.pk}").content.decode()
    link = re.search(r'<noscript><p><a id="metrics-page" href="([^"]+)"', page).group(1)
    html = client.get(link).content.decode()  # a plain GET, as a browser without JavaScript follows the link
    assert html.startswith("<!doctype html>") and f'<a href="/jobs/{ran.pk}#monitoring">Back to burn</a>' in html
    assert 'id="chart-CpuCoreUsage"' in html and "<polyline" in html
    # Its time ranges are links, which open the same page with that range.
    ranged = client.get(f"/jobs/{ran.pk}/metrics?range=1h").content.decode()
    assert ranged.startswith("<!doctype html>") and 'class="current" aria-current="true">Last hour<' in ranged
    assert not client.get(link, **HTMX).content.decode().lstrip().startswith("<!doctype"), "htmx gets the fragment"


def submitted(ws, people) -> Job:
    """A job row DLC is said to know (no call is made before the range is checked or the endpoint refuses)."""
    return Job.objects.create(workspace=ws, owner=people["alice"], display_name="row", status="Running",
                              dlc_job_id="dlc0000000000000")


def test_a_bad_range_is_said_in_place_not_a_500(client, people, ws, localdlc):
    job = submitted(ws, people)
    client.force_login(people["alice"])
    before = localdlc.stats()["calls"].get("GetJobMetrics", 0)
    answer = client.get(f"/jobs/{job.pk}/metrics?range=<script>", **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "Unknown time range" in html and "<script>" not in html
    assert "<svg" not in html and "Whole job" in html
    assert localdlc.stats()["calls"].get("GetJobMetrics", 0) == before


def test_a_failed_read_is_said_once_in_place(client, people, ws):
    job = submitted(ws, people)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ws.endpoint = f"127.0.0.1:{port}"
    ws.save()
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}/metrics", **HTMX).content.decode()
    assert html.count("Could not read metrics from DLC") == 1 and "<svg" not in html


def test_outside_the_users_workspaces_it_is_404(client, people, ws):
    job = submitted(ws, people)
    client.force_login(people["olga"])
    assert client.get(f"/jobs/{job.pk}/metrics", **HTMX).status_code == 404
