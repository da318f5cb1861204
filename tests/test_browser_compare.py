"""Compare in Chromium against the real stack: tick two jobs on the list, "Compare selected" opens the compare
page (not the stop question) with both jobs and the differing row marked; on a phone the table scrolls inside
its box, not the page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import compare
from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def make_job(workspace, owner, name: str, command: str) -> Job:
    body = {"DisplayName": name, "JobType": "PyTorchJob", "UserCommand": command, "Envs": {"EPOCHS": "3"},
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                          "EcsSpec": "ecs.g6.large"}]}
    return Job.objects.create(workspace=workspace, owner=owner, display_name=name, status="Succeeded",
                              job_type="PyTorchJob", body=body)


def test_compare_selected_opens_both_jobs_with_the_difference_marked(stack, member, workspace, page):
    a = make_job(workspace, member, "sweep-lr-0.1", "python train.py --lr 0.1")
    b = make_job(workspace, member, "sweep-lr-0.01", "python train.py --lr 0.01")
    for n in range(compare.MAX_JOBS - 1):
        make_job(workspace, member, f"not-ticked-{n}", "python train.py --lr 1")
    sign_in(page, stack.url, member.username, PASSWORD)
    # QA: the list let one tick 7 jobs and the compare page then said "Up to 6". Past 6 ticks, Compare is disabled
    # and says why (Stop selected still takes them all).
    page.check("th.check input")
    expect(page.locator("#compare-selected")).to_be_disabled()
    expect(page.locator("#compare-limit")).to_have_text(
        "Compare takes up to 6 jobs: 7 are ticked. Untick 1 to compare.")
    expect(page.locator("#stop-selected")).to_be_enabled()
    page.uncheck(f"#job-{a.pk} input[name=job]")
    expect(page.locator("#compare-selected")).to_be_enabled()
    expect(page.locator("#compare-limit")).to_be_hidden()
    # Select all is mixed now (some ticked): a click ticks all, the next unticks all, as a browser's mixed box does.
    expect(page.locator("th.check input")).to_have_js_property("indeterminate", True)
    page.check("th.check input")
    page.uncheck("th.check input")
    expect(page.locator("input[name=job]:checked")).to_have_count(0)
    page.check(f"#job-{a.pk} input[name=job]")
    page.check(f"#job-{b.pk} input[name=job]")
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#compare-selected")
    page.wait_for_url(f"{stack.url}{compare.compare_url([b.pk, a.pk])}")  # the list's order: newest first
    assert asked == [], "comparing must not ask the stop question"

    heads = page.locator("#compare-table thead th[data-job]")
    expect(heads).to_have_count(2)
    expect(heads.nth(0)).to_contain_text("sweep-lr-0.01")
    expect(heads.nth(1)).to_contain_text("sweep-lr-0.1")
    marked = page.locator("#compare-table tr.differs")
    expect(marked).to_have_count(1)
    expect(marked.locator("th")).to_contain_text("≠ Startup command")
    expect(marked.locator("td.changed")).to_have_text("python train.py --lr 0.1")

    page.click("#show-all")
    page.wait_for_url(re.compile(r"all=1"))
    expect(page.locator("#compare-table tr", has_text="Variable EPOCHS")).to_have_count(1)
    expect(page.locator("#compare-table tr.differs")).to_have_count(1)

    # On a phone the table scrolls sideways inside its box; the page itself does not widen.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    box = page.locator(".compare-scroll")
    assert box.evaluate("el => el.scrollWidth > el.clientWidth"), "two job columns need more than 390 px"
    assert box.evaluate("el => getComputedStyle(el).overflowX") == "auto"
