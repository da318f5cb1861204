"""The job page's Monitoring section in Chromium against the real stack: it loads when scrolled to, draws the
running pod's CPU as an SVG line, and a range link swaps the charts in place."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs import dlc
from tests.conftest import PASSWORD
from tests.support.browser import expect_focus, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_the_monitoring_section_draws_the_pods_cpu_and_switches_range(stack, member, page, submit_to_stack, gate):
    # Running until the test is done (the range's refresh is only a running job's): `sleep 20` could end first on a
    # loaded machine, the charts' first samples coming with the 10 s refresh.
    job = submit_to_stack(member, "sleeper", f"until [ -e {gate} ]; do sleep 0.1; done")
    job.refresh_from_db()
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    page.locator("#monitoring").scroll_into_view_if_needed()
    cpu = page.locator("#chart-CpuCoreUsage")
    # The pod is sampled right after it starts; the section refreshes every 10 s while the job is active.
    expect(cpu.locator("svg polyline")).to_have_count(1, timeout=30_000)
    expect(cpu).to_contain_text(f"{job.dlc_job_id}-worker-0")
    expect(page.locator("#chart-GpuCoreUsage")).to_contain_text("No GPU metrics for this job.")
    page.get_by_role("link", name="Last 15 min").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#metrics a.current")).to_have_text("Last 15 min")
    # The swap (as the 10 s refresh) keeps a keyboard user's focus on the range link: it has an id.
    expect_focus(page, "range-15m")
    expect(page.locator("#metrics")).to_have_attribute("hx-get", f"/jobs/{job.pk}/metrics?range=15m")
    expect(cpu.locator("svg polyline")).to_have_count(1)
    dlc.stop_job(job.workspace, job.dlc_job_id)
