"""A sweep in Chromium against the real stack: fill the wizard and its Sweep box, see a bad grid refused at the
box, fix it, submit, land on the sweep page and watch its trials table refresh in place until all succeed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Sweep
from tests.conftest import PASSWORD
from tests.support.browser import settle, sign_in, start_job

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_fill_the_sweep_box_submit_and_watch_the_trials_on_the_sweep_page(stack, member, page):
    sign_in(page, stack.url, member.username, PASSWORD)
    start_job(page, stack.url, "browser-grid", 'echo "lr=$LR bs=$BS"')
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    settle(page)
    # The box sits below the six sections, before the submit button; one value makes one trial: refused there.
    expect(page.locator("#sweep-block h2")).to_have_text("Sweep (optional)")
    page.fill("#id_sweep", "LR = 0.01")
    page.click("#wizard-form .actions button[type=submit]")
    expect(page.locator("#f-sweep .error")).to_contain_text("A sweep needs at least 2 trials")
    expect(page.locator("#id_sweep")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#id_basic-name")).to_have_value("browser-grid")
    assert not Sweep.objects.filter(name="browser-grid").exists()

    page.fill("#id_sweep", "LR = 0.01, 0.1\nBS = 32, 64")
    page.click("#wizard-form .actions button[type=submit]")
    sweep = Sweep.objects.get(name="browser-grid")
    expect(page).to_have_url(f"{stack.url}{sweep.get_absolute_url()}")
    expect(page.locator("h1")).to_contain_text("browser-grid")
    rows = page.locator("#trials tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.nth(2).locator("td").nth(1)).to_have_text("0.1")
    expect(rows.nth(2).locator("td").nth(2)).to_have_text("32")
    expect(rows.nth(2).locator("a")).to_have_text("browser-grid-03")
    # No reload: the table asks for itself every 5 s while a trial is active, and stops once all have ended.
    expect(page.locator("#sweep-tally")).to_contain_text("4 Succeeded", timeout=120_000)
    # ... once their logs are archived too (their metrics read), a poll or two later
    expect(page.locator("#sweep-trials")).to_have_attribute("data-polling", "no", timeout=30_000)
    page.click("#trials tbody tr:nth-child(2) a")
    expect(page.locator("#sweep-trial")).to_contain_text("Trial 2 of 4 in sweep browser-grid")
    expect(page.locator("#sweep-trial")).to_contain_text("LR=0.01, BS=64")
