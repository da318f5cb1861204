"""The schedule form in Chromium against the real stack: the cron field shows only for the kind "Cron expression",
and its preview of the next runs follows what is typed (htmx), with the rule's error when runs are too close."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from tests import portal_fixtures as pf
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SHOTS = os.environ.get("DLC_SCREENSHOTS", "")  # a folder: the test saves its pages there at 1280 and 390 px


def shoot(page, name: str) -> None:
    """Screenshots to look at (not compared)."""
    if not SHOTS:
        return
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=os.path.join(SHOTS, f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 720})


def test_the_cron_field_shows_for_its_kind_and_previews_the_next_runs_as_typed(stack, workspace, member, page):
    job = pf.make_job(workspace, member, "cron-source", status="Succeeded", pods=[])
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}/schedule")
    expect(page.locator("#field-cron")).to_be_hidden()
    expect(page.locator("#field-at")).to_be_visible()  # Daily, the initial kind
    expect(page.locator("#field-every_hours")).to_be_hidden()
    page.check("#id_kind input[value=cron]")
    expect(page.locator("#field-cron")).to_be_visible()
    for other in ("#field-every_hours", "#field-at", "#field-weekdays"):  # only the chosen kind's fields
        expect(page.locator(other)).to_be_hidden()
    page.fill("#id_cron", "0 9 * * MON-FRI")
    preview = page.locator("#cron-preview")
    expect(preview.locator("time")).to_have_count(3)
    expect(preview).to_contain_text("09:00")
    shoot(page, "schedule-cron")
    page.fill("#id_cron", "*/5 * * * *")
    expect(preview.locator(".error")).to_contain_text("minutes apart")
    expect(preview.locator("time")).to_have_count(0)
    page.click("#schedule-save")  # sent: the error once, at the field, and no preview
    expect(page.locator("#field-cron .error")).to_have_count(1)
    expect(page.locator("#field-cron")).not_to_contain_text("Next runs")
    shoot(page, "schedule-cron-error")
    page.check("#id_kind input[value=daily]")
    expect(page.locator("#field-cron")).to_be_hidden()
    expect(preview).to_be_hidden()
