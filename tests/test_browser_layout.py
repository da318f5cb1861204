"""The base layout in Chromium against the real stack. Long names: a 256-character job or sweep name and a
100-character workspace name with no break character in them wrap (or, in the switcher, are cut) inside the page at
1280 and 390 px, while an ordinary hyphenated name stays whole on a phone's job list. A request that hx-sync
replaces (aborts) prints no error in the browser's console."""

from __future__ import annotations

import pytest

from jobs.models import Job, Sweep, SweepTrial
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WIDTHS = (1280, 390)
LONG_JOB = "j" * 256  # the longest name the wizard accepts, and no hyphen, dot or space to break at
LONG_SWEEP = "s" * 256
LONG_WORKSPACE = "w" * 100


def overflow(page) -> int:
    """How many CSS pixels the page is wider than the window (0 when it fits)."""
    return page.evaluate("Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")


def too_wide(page) -> list[str]:
    """The innermost elements that reach past the window's right edge, to say what overflows."""
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > window.innerWidth + 1))
        .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className + ' in ' + e.parentElement.tagName + '.'
                         + e.parentElement.className)""")


def test_long_names_wrap_inside_the_page_at_1280_and_390_and_short_ones_stay_whole(stack, member, workspace,
                                                                                    page):
    workspace.name = LONG_WORKSPACE
    workspace.save(update_fields=["name"])
    long_job = Job.objects.create(workspace=workspace, owner=member, display_name=LONG_JOB, status="Succeeded",
                                  job_type="PyTorchJob")
    short = Job.objects.create(workspace=workspace, owner=member, display_name="lr-search-22", status="Succeeded",
                               job_type="PyTorchJob")
    sweep = Sweep.objects.create(workspace=workspace, owner=member, name=LONG_SWEEP, parameters=[["LR", [0.1]]])
    SweepTrial.objects.create(sweep=sweep, job=long_job, number=1, values={"LR": 0.1})
    sign_in(page, stack.url, member.username, PASSWORD)
    pages = {"list": "/", "job": long_job.get_absolute_url(), "sweeps": "/sweeps/",
             "sweep": sweep.get_absolute_url()}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        for label, url in pages.items():
            page.goto(f"{stack.url}{url}")
            assert overflow(page) == 0, (
                f"the {label} page is {overflow(page)} px wider than {width} px: {too_wide(page)}")
            switcher = page.locator("#workspace-switcher").bounding_box()
            assert switcher["x"] + switcher["width"] <= width, f"the switcher leaves the {label} page at {width}"
        page.goto(f"{stack.url}/")
        # One box per line an inline element spans: a name that fits is not cut at its hyphens.
        link = page.locator(f"#job-{short.pk} td.name a")
        assert link.evaluate("a => a.getClientRects().length") == 1, f"'lr-search-22' broken at {width} px"
        assert page.locator(f"#job-{long_job.pk} td.name a").evaluate("a => a.getClientRects().length") > 1


def test_a_request_replaced_by_hx_sync_prints_no_console_error(stack, member, workspace, page):
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    held = []
    # The network holds the section's answers (a slow server), so the first is still in flight when the second
    # starts and hx-sync="this:replace" aborts it, as typing on does.
    page.route("**/jobs/new/section/**", lambda route: held.append(route))
    page.evaluate("htmx.trigger('#sec-basic', 'focusout')")
    for _ in range(20):
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1, "the first validation request is in flight"
    aborted = page.evaluate("""() => new Promise(done => {
        document.body.addEventListener('htmx:sendAbort', () => done(true), {once: true});
        htmx.trigger('#sec-basic', 'focusout');
    })""")
    assert aborted, "the first request was aborted (its htmx:sendAbort event still goes out)"
    for _ in range(20):
        if len(held) == 2:
            break
        page.wait_for_timeout(50)
    held[1].continue_()
    page.wait_for_selector("#sec-basic")
    page.wait_for_timeout(300)
    assert errors == [], errors
