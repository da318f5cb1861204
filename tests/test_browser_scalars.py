"""The job page's Training metrics section in Chromium against the real stack: it loads when scrolled to and
draws a running job's METRIC lines as an SVG line per metric, with the last value; a metric's longest name stays
inside a phone's width."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs import dlc, scalars
from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

PRINTS = "for s in $(seq 0 19); do echo METRIC step=$s loss=0.$((99 - s)); done"


def test_the_training_metrics_section_charts_a_running_jobs_metric_lines(stack, member, page, submit_to_stack, gate):
    # Then it runs until the test is done (the 15 s refresh is only a running job's): `sleep 20` could end first on a
    # loaded machine when the section's first look came before the beat had synced the pod.
    job = submit_to_stack(member, "printer", f"{PRINTS}; until [ -e {gate} ]; do sleep 0.1; done")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    page.locator("#training-metrics").scroll_into_view_if_needed()
    # Until the beat has synced the pod, the section says there are no metric lines yet; it refreshes every 15 s.
    loss = page.locator('#scalars figure[data-name="loss"]')
    expect(loss.locator("svg polyline")).to_have_count(1, timeout=40_000)
    expect(loss.locator(".scalar-last")).to_have_text("0.8")
    expect(page.locator("#scalars")).to_have_attribute("hx-trigger", "every 15s")
    job.refresh_from_db()
    dlc.stop_job(job.workspace, job.dlc_job_id)


def test_a_64_character_metric_name_wraps_inside_a_phones_width(stack, member, workspace, page):
    # The longest name a METRIC line may print, nothing to break at: it widened the page at 390 px (QA).
    name = "m" * 64
    job = Job.objects.create(workspace=workspace, owner=member, display_name="long-metric", status="Succeeded",
                             job_type="PyTorchJob", dlc_job_id="dlc-long-metric", finished_at=timezone.now(),
                             logs_archived_at=timezone.now())
    scalars.store(job, ("dlc-long-metric-worker-0", {name: [(1, 1.5), (2, 0.5)]}))  # the rows an archive leaves
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    page.locator("#training-metrics").scroll_into_view_if_needed()
    expect(page.locator(f'#scalars figure[data-name="{name}"] svg polyline')).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

