"""Run after in Chromium against the real stack: from a running job's page, "Run a job after this…" opens its clone
with the Run after box filled; a job id nobody can see is refused at the box; the id typed, the job is saved
Waiting and its page says what it waits for, and the upstream's page lists it."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from jobs import lifecycle
from jobs import status as st
from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import sign_in
from tests.test_lifecycle import job_body, use_broker

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SHOTS = os.environ.get("DLC_SCREENSHOTS", "")  # a folder: the test saves its pages there at 1280 and 390 px


def shoot(page, name: str, part: str = "") -> None:
    """Screenshots to look at (not compared): the whole page, or one part of it (a CSS selector)."""
    if not SHOTS:
        return
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        path = os.path.join(SHOTS, f"{name}-{width}.png")
        page.locator(part).screenshot(path=path) if part else page.screenshot(path=path, full_page=True)
    page.set_viewport_size({"width": 1280, "height": 720})


def test_run_a_job_after_a_running_one_from_its_page(stack, workspace, member, page, gate):
    from jobs.views import save_and_enqueue

    # Running until the test is done (stopped in `finally`): after `sleep 60` on a loaded machine, the dependent
    # would have been released, no longer Waiting.
    with use_broker(stack.redis_url):
        prep = save_and_enqueue(workspace=workspace, owner=member,
                                body=job_body(f"echo prep; until [ -e {gate} ]; do sleep 0.1; done",
                                              name="browser-prep"))
    try:
        sign_in(page, stack.url, member.username, PASSWORD)
        page.goto(f"{stack.url}{prep.get_absolute_url()}")
        page.click("#run-after-job")
        expect(page.locator("#id_run_after")).to_have_value(str(prep.pk))
        expect(page.locator(f'#run-after-jobs option[value="{prep.pk}"]')).to_have_count(1)
        page.fill("#id_basic-name", "browser-train")
        page.fill("#id_run_after", "987654")
        page.click("#wizard-form .actions button[type=submit]")
        expect(page.locator("#f-run_after .error")).to_have_text("There is no job 987654 that you can see.")
        expect(page.locator("#id_run_after")).to_have_attribute("aria-invalid", "true")
        expect(page.locator('#error-summary a[href="#id_run_after"]')).to_have_text("Run after")
        expect(page.locator("#id_basic-name")).to_have_value("browser-train")
        shoot(page, "run-after-wizard-error", "#run-after-block")
        shoot(page, "run-after-error-summary", "#error-summary")
        assert not Job.objects.filter(display_name="browser-train").exists()

        page.fill("#id_run_after", str(prep.pk))
        page.select_option("#id_run_after_when", "ended")
        page.click("#wizard-form .actions button[type=submit]")
        train = Job.objects.get(display_name="browser-train")
        expect(page).to_have_url(f"{stack.url}{train.get_absolute_url()}")
        expect(page.locator("#job-status")).to_have_text("Waiting for upstream job")
        expect(page.locator("#upstream-note")).to_contain_text("Waiting for browser-prep")
        expect(page.locator("#upstream-note")).to_contain_text("to end.")
        expect(page.locator("#runs-after a")).to_have_text("browser-prep")
        shoot(page, "run-after-waiting-page", "#job-live")
        assert (train.status, train.run_after_id, train.run_after_when) == (st.WAITING, prep.pk, "ended")

        page.click("#runs-after a")
        expect(page.locator("#dependents")).to_contain_text("browser-train")
        expect(page.locator("#dependents")).to_contain_text("Waiting for upstream job")
    finally:
        # Leave the session stack idle: the dependent cancelled unsent (first: it would run once prep ends), then prep.
        with use_broker(stack.redis_url):
            for job in Job.objects.filter(display_name="browser-train"):
                lifecycle.request_stop(member, job)
            lifecycle.request_stop(member, Job.objects.get(pk=prep.pk))
    assert Job.objects.get(display_name="browser-train").dlc_job_id == "", "never sent"
