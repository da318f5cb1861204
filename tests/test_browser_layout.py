"""The base layout in Chromium against the real stack. Long names: a 256-character job or sweep name and a
100-character workspace name with no break character in them wrap (or, in the switcher, are cut) inside the page at
1280 and 390 px, while an ordinary hyphenated name stays whole on a phone's job list. A request that hx-sync
replaces (aborts) prints no error in the browser's console. The keyboard finds a skip link first and a visible
focus ring, and a refused form puts the focus on the field to fix."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs import costs, dependencies, spec
from jobs.models import Job, JobTemplate, JobTemplateVersion, Membership, Sweep, SweepTrial, Webhook, WebhookDelivery
from tests import portal_fixtures as pf
from tests.conftest import PASSWORD
from tests.support.browser import expect_focus, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WIDTHS = (1280, 390)
# The longest name the wizard accepts, with no hyphen, dot or space to break at, in a letter as wide as most (a
# narrow "j" x 256 fits in 1280 px and hid the overflow QA found with "x" x 250).
LONG_JOB = "x" * 256
LONG_SWEEP = "s" * 256
LONG_WORKSPACE = "w" * 100
LONG_TEMPLATE = "t" * 100  # the longest template name


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


def lines(locator) -> int:
    """How many lines of text an element's box holds."""
    return locator.evaluate("e => Math.round(e.getBoundingClientRect().height"
                            " / parseFloat(getComputedStyle(e).lineHeight))")


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
        # A name that fits is not cut at its hyphens; a long one wraps, cut at two lines, whole in its title.
        assert lines(page.locator(f"#job-{short.pk} td.name a")) == 1, f"'lr-search-22' broken at {width} px"
        long_link = page.locator(f"#job-{long_job.pk} td.name a")
        assert lines(long_link) == 2, f"the long name takes {lines(long_link)} lines at {width} px"
        assert long_link.get_attribute("title") == LONG_JOB



def test_stop_selecteds_answer_about_a_long_name_stays_inside_the_page_at_1280_and_390(stack, member, workspace,
                                                                                       page):
    """QA: Stop selected's answer (a card beside the buttons, naming each job) could not shrink: a long name's
    answer went 147 px past a 390 px window."""
    long_job = Job.objects.create(workspace=workspace, owner=member, display_name=LONG_JOB, status="Succeeded",
                                  job_type="PyTorchJob")
    sign_in(page, stack.url, member.username, PASSWORD)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{stack.url}/")
        page.check(f"#job-{long_job.pk} input[name=job]")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#stop-selected")
        expect(page.locator(f"#bulk-result [data-job='{long_job.pk}']")).to_contain_text("Already finished")
        assert overflow(page) == 0, f"{overflow(page)} px wider than {width} px: {too_wide(page)}"
        answer, form = page.locator("#bulk-result").bounding_box(), page.locator("#bulk-form").bounding_box()
        assert answer["x"] + answer["width"] <= form["x"] + form["width"] + 1, "inside the list's width"

def test_a_dependent_job_the_clone_wizard_and_webhook_deliveries_of_a_long_name_stay_inside_the_page(
        stack, member, workspace, page):
    """The long name inside other text (a timeline reason, a clone note) and in a table as wide as its columns
    (webhook deliveries): the text wraps and the table scrolls inside its own box, not the page."""
    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    upstream = pf.make_job(workspace, member, LONG_JOB, status="Failed", finished_at=timezone.now(),
                           dlc_job_id="dlc1q2w3e4r5t6y7")
    dependent = Job.objects.create(workspace=workspace, owner=member, display_name="after-long", status="Stopped",
                                   job_type="PyTorchJob", run_after=upstream, reason_code=dependencies.SKIPPED,
                                   reason_message=dependencies.never_message(upstream), finished_at=timezone.now())
    # A long URL has nothing to break at either (QA: 2299 px at 1280): only its host is shown, so a long host.
    webhook = Webhook(workspace=workspace, name="relay", events=["Failed"])
    webhook.set_url("https://" + ".".join(["u" * 60] * 4) + "/hook/" + "u" * 300)
    webhook.save()
    WebhookDelivery.objects.create(webhook=webhook, job=upstream, status="Failed", attempts=3,
                                   last_error="connection refused " + "e" * 80)
    # A template's name in the wizard's "Started from the template ..." notice and its own pages (QA: 862 px at 390),
    # beside the workspace's name (the wizard's "Shared with everyone in ...").
    workspace.name = LONG_WORKSPACE
    workspace.save(update_fields=["name"])
    template = JobTemplate.objects.create(workspace=workspace, name=LONG_TEMPLATE, created_by=member)
    JobTemplateVersion.objects.create(template=template, number=1, sections=spec.inverse(pf.BODY), created_by=member)
    sign_in(page, stack.url, member.username, PASSWORD)
    pages = {"dependent job": dependent.get_absolute_url(), "clone wizard": f"/jobs/new?clone={upstream.pk}",
             "notifications": f"/workspaces/{workspace.pk}/notifications",
             "deliveries": f"/workspaces/{workspace.pk}/notifications/{webhook.pk}/deliveries",
             "template wizard": f"/jobs/new?template={template.pk}", "templates": "/templates",
             "template": f"/templates/{template.pk}"}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        wide = []
        for label, url in pages.items():
            page.goto(f"{stack.url}{url}")
            if overflow(page):
                wide.append(f"the {label} page is {overflow(page)} px wider than {width} px: {too_wide(page)}")
        assert wide == []
        page.goto(f"{stack.url}/")
        assert overflow(page) == 0, too_wide(page)


def test_a_request_replaced_by_hx_sync_prints_no_console_error(stack, member, workspace, page):
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    held = []
    # The network holds the section's answers (a slow server), so the first is still in flight when the second
    # starts and hx-sync="this:replace" aborts it, as typing on does.
    page.route("**/jobs/new/section/**", lambda route: held.append(route))

    def until_held(count: int) -> None:
        # Route handlers run while Playwright waits; until the browser's request reaches it (1 s was short under load).
        deadline = time.monotonic() + 15
        while len(held) < count and time.monotonic() < deadline:
            page.wait_for_timeout(50)

    page.evaluate("htmx.trigger('#sec-basic', 'focusout')")
    until_held(1)
    assert len(held) == 1, "the first validation request is in flight"
    aborted = page.evaluate("""() => new Promise(done => {
        document.body.addEventListener('htmx:sendAbort', () => done(true), {once: true});
        htmx.trigger('#sec-basic', 'focusout');
    })""")
    assert aborted, "the first request was aborted (its htmx:sendAbort event still goes out)"
    until_held(2)
    page.evaluate("""() => { window.sectionSettled = new Promise(done =>
        document.body.addEventListener('htmx:afterSettle', e => e.target.id === 'sec-basic' && done(true))); }""")
    held[1].continue_()
    assert page.evaluate("window.sectionSettled"), "the second answer was swapped in"
    assert errors == [], errors


def test_the_keyboard_starts_at_a_skip_link_sees_its_focus_and_lands_on_a_refused_field(stack, member, workspace,
                                                                                       page):
    """A11y QA: no skip link, no visible focus ring, and after a refused Prices save the focus was on <body>."""
    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    sign_in(page, stack.url, member.username, PASSWORD)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{stack.url}/workspaces/{workspace.pk}/prices")
        skip = page.locator("a.skip-link")
        assert skip.bounding_box()["y"] < 0, "off screen until focused"
        page.keyboard.press("Tab")
        expect(skip).to_be_focused()
        box = skip.bounding_box()
        assert box["y"] >= 0 and box["x"] + box["width"] <= width, box
        assert skip.evaluate("e => getComputedStyle(e).outlineStyle") == "solid", "a focus ring shows"
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        assert page.evaluate("!!document.activeElement.closest('main')"), "the next Tab stays in the content"

    page.fill("#id_gpu_hour_price", "ten")
    page.locator("#prices-form button[type=submit]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#field-gpu_hour_price .error")).to_contain_text("not a number")
    expect_focus(page, "id_gpu_hour_price")


def test_at_400_percent_zoom_the_main_pages_fit_320_px_and_the_chosen_status_is_not_told_by_colour_alone(
        stack, member, workspace, page):
    """A11y QA: at 320 px (1280 px at 400% zoom) the workspace settings' credentials help, long environment
    variable names in <code>, went 19 px past the window; the chosen status count differed by its colour only."""
    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    job = pf.make_job(workspace, member, "zoomed", status="Failed", finished_at=timezone.now())
    sign_in(page, stack.url, member.username, PASSWORD)
    page.set_viewport_size({"width": 320, "height": 800})
    pages = {"list": "/", "job": job.get_absolute_url(), "wizard": "/jobs/new",
             "settings": f"/workspaces/{workspace.pk}/settings", "members": f"/workspaces/{workspace.pk}/members"}
    wide = []
    for label, url in pages.items():
        page.goto(f"{stack.url}{url}")
        if overflow(page):
            wide.append(f"the {label} page is {overflow(page)} px wider than 320 px: {too_wide(page)}")
    assert wide == []

    page.goto(f"{stack.url}/?status=Failed")
    chosen, other = page.locator("#count-failed"), page.locator("#count-all")
    expect(chosen).to_have_attribute("aria-current", "true")
    expect(other).not_to_have_attribute("aria-current", "true")
    weight = "e => getComputedStyle(e).fontWeight"
    assert int(chosen.evaluate(weight)) >= 600 > int(other.evaluate(weight)), "bold, not only another colour"


def test_the_usage_and_prices_pages_with_a_spot_jobs_at_most_fit_390_and_320_px(stack, member, workspace, page):
    """QA: the usage tables' "at most" for screen readers (visually hidden, so positioned absolutely) sat in the cost
    column, far right of a table that scrolls inside its own box on a phone: it escaped that box and widened the
    page by 346 px at 390 px. The prices page's earlier tables stay inside the page too."""
    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    costs.save_prices(workspace, {"currency": "CNY", "instance_prices": {"ecs.gn6i-c4g1.xlarge": "12.4"},
                                  "gpu_hour_price": None, "cpu_core_hour_price": None, "monthly_budget": None,
                                  "refuse_when_spent": False}, member)
    costs.save_prices(workspace, {"currency": "CNY", "instance_prices": {"ecs.gn6i-c4g1.xlarge": "24.8"},
                                  "gpu_hour_price": None, "cpu_core_hour_price": None, "monthly_budget": None,
                                  "refuse_when_spent": False}, member)
    now = timezone.now()
    spot = {"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.gn6i-c4g1.xlarge",
            "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit", "SpotDiscountLimit": 0.4}}
    Job.objects.create(workspace=workspace, owner=member, display_name="spot-run", job_type="PyTorchJob",
                       status="Succeeded", body={**pf.BODY, "DisplayName": "spot-run", "JobSpecs": [spot]},
                       started_at=now - timedelta(hours=2), finished_at=now - timedelta(hours=1))
    sign_in(page, stack.url, member.username, PASSWORD)
    pages = {"usage": f"/workspaces/{workspace.pk}/usage?days=1", "prices": f"/workspaces/{workspace.pk}/prices"}
    page.goto(f"{stack.url}{pages['usage']}")
    expect(page.locator("#usage-cost")).to_contain_text("at most")
    wide = []
    for width in (390, 320):
        page.set_viewport_size({"width": width, "height": 800})
        for label, url in pages.items():
            page.goto(f"{stack.url}{url}")
            if overflow(page):
                wide.append(f"the {label} page is {overflow(page)} px wider than {width} px: {too_wide(page)}")
    assert wide == []
