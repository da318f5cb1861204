"""The job page in Chromium against the real stack: the log tail shows lines as the pod prints them, and
Stop asks for confirmation, then stops the running job on localdlc."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from jobs import dlc
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture
def submit(submit_to_stack):
    return submit_to_stack


def test_the_log_tail_shows_lines_as_the_pod_prints_them(stack, member, page, submit):
    job = submit(member, "ticker", "for i in $(seq 1 24); do echo tick-$i; sleep 0.5; done")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    lines = page.locator("#log-lines .ln")
    expect(lines.first).to_contain_text("tick-", timeout=60_000)
    # Mark the first line's node: if the tail replaced the log instead of appending, the mark would go.
    page.evaluate("() => { document.querySelector('#log-lines .ln').dataset.mark = 'first'; }")

    seen_while_running: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = page.locator("#job-status").inner_text()
        count = lines.count()
        if status == "Running":
            seen_while_running.append(count)
        if page.get_attribute("#log-tail", "data-following") == "no":
            break
        page.wait_for_timeout(200)
    distinct = sorted(set(seen_while_running))
    assert len(distinct) >= 4, f"lines must arrive a few at a time while the pod runs, saw counts {distinct}"
    assert distinct == sorted(distinct) and all(0 < n < 24 for n in distinct[:-1])

    expect(lines).to_have_count(24, timeout=30_000)
    texts = lines.evaluate_all("els => els.map(e => e.textContent)")
    assert texts == [f"tick-{i}" for i in range(1, 25)], "each line once, in order"
    assert page.get_attribute("#log-lines .ln", "data-mark") == "first", "new lines were appended"
    expect(page.locator("#job-status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#log-tail")).to_have_attribute("data-following", "no")


def test_stop_asks_for_confirmation_then_stops_the_running_job(stack, member, workspace, page, submit):
    job = submit(member, "long-sleeper", "sleep 300")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    expect(page.locator("#job-status")).to_have_text("Running", timeout=60_000)

    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#stop-job")
    page.wait_for_timeout(1500)
    assert asked and "Stop job" in asked[0] and "long-sleeper" in asked[0]
    job.refresh_from_db()
    assert job.stop_requested_at is None and job.status == "Running", "dismissing the dialog changes nothing"

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#stop-job")
    expect(page.locator("#stop-notice")).to_have_text("Stop: Stop requested")
    expect(page.locator("#job-status")).to_have_text("Stopped", timeout=60_000)
    expect(page.locator("#stop-job")).to_have_count(0)
    assert dlc.get_job(workspace, job.dlc_job_id)["Status"] == "Stopped"
    expect(page.locator("#job-live")).to_have_attribute("data-active", "no")
