"""The job list in Chromium against the real stack: filters and pages change the URL and the back button
brings the earlier list back; a row turns from Running to Succeeded in place while the others stay put, keeping a
tick the user changed while the poll was in flight."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import expect_focus, sign_in
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture
def submit(submit_to_stack):
    return submit_to_stack


def rows(page):
    return page.locator("#job-rows tr[id^=job-]")


def test_filters_and_pages_change_the_url_and_back_brings_the_list_back(stack, member, workspace, page):
    now = timezone.now()
    for i in range(12):
        for family, status in [("bert", "Failed"), ("gpt", "Succeeded")]:
            Job.objects.create(workspace=workspace, owner=member, display_name=f"{family}-{i:02d}", status=status,
                               job_type="PyTorchJob", created_at=now - timedelta(minutes=i))
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/?size=10")
    expect(rows(page)).to_have_count(10)
    expect(page.locator("#status-counts")).to_contain_text("Failed 12")

    page.fill("#f-q", "bert")
    page.wait_for_url(re.compile(r"[?&]q=bert"))
    expect(rows(page).filter(has_text="gpt")).to_have_count(0)
    expect(rows(page)).to_have_count(10)
    expect(rows(page).first).to_contain_text("bert-00")
    expect_focus(page, "f-q")  # a filter change leaves the focus where the user types

    # By keyboard, a page link (gone or moved once the page changes) hands the focus to the table.
    page.locator("a[rel=next]").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=bert.*after="))
    expect(rows(page)).to_have_count(2)
    expect_focus(page, "job-table")
    expect(rows(page).first).to_contain_text("bert-10")
    expect(rows(page).last).to_contain_text("bert-11")

    page.go_back()
    page.wait_for_url(re.compile(r"q=bert(?!.*after=)"))
    expect(rows(page)).to_have_count(10)
    expect(rows(page).first).to_contain_text("bert-00")
    expect(page.locator("#f-q")).to_have_value("bert")

    page.go_back()
    page.wait_for_url(f"{stack.url}/?size=10")
    expect(page.locator("#f-q")).to_have_value("")
    expect(rows(page).filter(has_text="gpt")).not_to_have_count(0)

    page.select_option("#f-status", "Succeeded")
    page.wait_for_url(re.compile(r"status=Succeeded"))
    expect(rows(page).filter(has_text="bert")).to_have_count(0)

    # Search syntax of the name index (quotes, OR, a parenthesis) is only text: no match, no error.
    page.fill("#f-q", '"gpt" OR (')
    page.wait_for_url(re.compile(r"q=%22gpt"))
    expect(page.locator("#job-rows .empty")).to_contain_text("No jobs match")
    page.fill("#f-q", "GPT-0")
    page.wait_for_url(re.compile(r"q=GPT-0"))
    expect(rows(page)).to_have_count(10)
    page.fill("#f-q", "")
    page.wait_for_url(lambda url: "status=Succeeded" in url and not re.search(r"[?&]q=[^&]", url))

    # A shared link opens the same list in a fresh page.
    shared = page.url
    other = page.context.new_page()
    other.goto(shared)
    expect(other.locator("#job-rows tr[id^=job-]")).to_have_count(10)
    expect(other.locator("#f-status")).to_have_value("Succeeded")
    other.close()

    # A tag being typed outlives the answer to another change that lands meanwhile (QA: it was emptied).
    page.fill("#f-q", "gpt")
    page.fill("#f-tag", "team=x")
    page.wait_for_url(re.compile(r"q=gpt"))
    expect(page.locator("#f-tag")).to_have_value("team=x")
    page.fill("#f-q", "")
    page.wait_for_url(lambda url: not re.search(r"[?&]q=[^&]", url))

    # An applied tag lives in its chip only: the box empties, and the next change sends the tag once (QA).
    page.press("#f-tag", "Enter")
    page.wait_for_url(re.compile(r"tag=team%3Dx"))
    page.select_option("#f-status", "")
    page.wait_for_url(lambda url: "status=Succeeded" not in url and url.count("tag=team%3Dx") == 1)  # twice: a timeout
    expect(page.locator("#f-tag")).to_have_value("")


def test_a_row_turns_from_running_to_succeeded_in_place(stack, member, workspace, page, submit, gate):
    finished = Job.objects.create(workspace=workspace, owner=member, display_name="already-done",
                                  status="Succeeded", job_type="PyTorchJob")
    # The pod ends once the rows are marked and the poller runs: with `sleep 5`, a slow sign-in on a loaded machine
    # could see the row already Succeeded (no Running to wait for), or mark the node the poll had just replaced.
    job = submit(member, "row-flip", f"until [ -e {gate} ]; do sleep 0.1; done")
    sign_in(page, stack.url, member.username, PASSWORD)
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    row = page.locator(f"#job-{job.pk}")
    expect(row.locator(".badge")).to_have_text("Running", timeout=60_000)
    # Mark both rows' DOM nodes: a re-rendered row is a new node without the mark.
    page.evaluate(f"""() => {{ document.getElementById('job-{job.pk}').dataset.mark = 'old';
                               document.getElementById('job-{finished.pk}').dataset.mark = 'old'; }}""")
    expect(page.locator("#row-poller")).to_have_attribute("data-polling", "yes")
    page.focus(f"#sel-{job.pk}")  # QA: the replaced row's checkbox lost keyboard focus
    gate.touch()
    expect(row.locator(".badge")).to_have_text("Succeeded", timeout=60_000)
    assert page.evaluate("document.activeElement.id") == f"sel-{job.pk}", "focus is back on the new row's checkbox"
    assert navigations == [], "the list must update in place, without reloading"
    assert page.get_attribute(f"#job-{job.pk}", "data-mark") is None, "the moved row was re-rendered"
    assert page.get_attribute(f"#job-{finished.pk}", "data-mark") == "old", "a finished row is left alone"
    expect(page.locator("#row-poller")).to_have_attribute("data-polling", "no")
    expect(page.locator("#status-counts")).to_contain_text("Succeeded 2")


def test_a_box_ticked_or_unticked_while_a_poll_is_in_flight_keeps_what_the_user_did(stack, member, workspace, page,
                                                                                     submit, gate):
    """QA race: a poll sends the ticked boxes and the answer re-renders a moved row with those ticks, so a box the
    user ticked (or unticked) after the poll went out flipped back when the row came, and the bulk bar, counted at
    the click, no longer matched the boxes. The network holds the poll's answer while the user changes the boxes."""
    finished = [Job.objects.create(workspace=workspace, owner=member, display_name=f"done-{i}", status="Succeeded",
                                   job_type="PyTorchJob") for i in range(6)]
    waiting = f"until [ -e {gate} ]; do sleep 0.1; done"
    ticked_late, unticked_late = submit(member, "ticked-late", waiting), submit(member, "unticked-late", waiting)
    sign_in(page, stack.url, member.username, PASSWORD)
    for job in (ticked_late, unticked_late):
        expect(page.locator(f"#job-{job.pk} .badge")).to_have_text("Running", timeout=60_000)
    expect(page.locator("#row-poller")).to_have_attribute("data-polling", "yes")
    for job in [*finished, unticked_late]:
        page.check(f"#sel-{job.pk}")
    limit = page.locator("#compare-limit")
    expect(limit).to_contain_text("7 are ticked")  # one past what Compare takes: the bar says so

    held = []
    page.route(re.compile(r"/jobs/rows\?"), lambda route: route.continue_() if held else held.append(route))
    deadline = time.monotonic() + 15  # route handlers run while Playwright waits: until the next poll reaches it
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "a poll is in flight"
    sent = parse_qs(urlsplit(held[0].request.url).query)["job"]
    assert str(unticked_late.pk) in sent and str(ticked_late.pk) not in sent, sent

    page.check(f"#sel-{ticked_late.pk}")
    page.uncheck(f"#sel-{unticked_late.pk}")  # the focus stays here
    expect(limit).to_contain_text("7 are ticked")
    gate.touch()
    for job in (ticked_late, unticked_late):
        wait_for(lambda job=job: Job.objects.get(pk=job.pk).status == "Succeeded", timeout=60, what=f"{job} ended")
    held[0].continue_()  # the answer re-renders both rows, with the ticks the poll was sent with

    for job in (ticked_late, unticked_late):
        expect(page.locator(f"#job-{job.pk} .badge")).to_have_text("Succeeded")
    expect(page.locator(f"#sel-{ticked_late.pk}")).to_be_checked()
    expect(page.locator(f"#sel-{unticked_late.pk}")).not_to_be_checked()
    expect_focus(page, f"sel-{unticked_late.pk}")
    expect(page.locator("#bulk-form input[name=job]:checked")).to_have_count(7)
    expect(limit).to_contain_text("7 are ticked")
    expect(page.locator("#compare-selected")).to_be_disabled()
    # The bar takes the late tick and not the late untick: Compare, once within its limit, compares those.
    page.uncheck(f"#sel-{finished[0].pk}")
    expect(limit).to_be_hidden()
    page.click("#compare-selected")
    page.wait_for_url(re.compile(r"/jobs/compare\?"))
    compared = set(parse_qs(urlsplit(page.url).query)["ids"])
    assert compared == {str(job.pk) for job in [*finished[1:], ticked_late]}, compared


def test_stop_selected_asks_then_reports_per_job_and_stops_the_running_one(stack, member, workspace, page, submit):
    done = Job.objects.create(workspace=workspace, owner=member, display_name="done-before", status="Succeeded",
                              job_type="PyTorchJob")
    running = submit(member, "bulk-sleeper", "sleep 300")
    sign_in(page, stack.url, member.username, PASSWORD)
    expect(page.locator(f"#job-{running.pk} .badge")).to_have_text("Running", timeout=60_000)
    page.check(f"#job-{running.pk} input[name=job]")
    page.check(f"#job-{done.pk} input[name=job]")
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#stop-selected")
    result = page.locator("#bulk-result")
    expect(result.locator(f"[data-job='{running.pk}']")).to_contain_text("Stop requested")
    expect(result.locator(f"[data-job='{done.pk}']")).to_contain_text("Already finished")
    assert asked and "Stop the selected jobs?" in asked[0]
    expect(page.locator(f"#job-{running.pk} .badge")).to_have_text("Stopped", timeout=60_000)
    expect(page.locator(f"#job-{done.pk} .badge")).to_have_text("Succeeded")


def test_a_viewer_is_offered_nothing_it_may_not_do_and_stop_asks_only_with_jobs_ticked(stack, member, workspace,
                                                                                        page):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    viewer = get_user_model().objects.create_user("vic", password=PASSWORD)
    Membership.objects.create(user=viewer, workspace=workspace, role=Membership.VIEWER)
    job = Job.objects.create(workspace=workspace, owner=member, display_name="finished", status="Succeeded",
                             job_type="PyTorchJob")
    sign_in(page, stack.url, viewer.username, PASSWORD)
    expect(rows(page)).to_have_count(1)
    expect(page.locator("header nav a")).to_have_text(
        ["Jobs", "Sweeps", "Templates", "Usage", "Schedules", "API", "Email"])
    expect(page.locator("main").get_by_text("Create job")).to_have_count(0)
    expect(page.locator("#stop-selected")).to_have_count(0)
    # Ticks only to compare: the row's box and select-all, and Compare selected, never Stop selected.
    expect(page.locator("input[type=checkbox]:not([name=idle])")).to_have_count(2)
    page.check(f"#job-{job.pk} input[name=job]")
    expect(page.locator("#compare-selected")).to_be_enabled()

    page.context.clear_cookies()
    sign_in(page, stack.url, member.username, PASSWORD)
    expect(page.locator("header nav a")).to_have_text(
        ["Jobs", "Sweeps", "Create job", "Templates", "Usage", "Schedules", "Import", "API", "Email"])
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#stop-selected")
    expect(page.locator("#bulk-result")).to_contain_text("Select the jobs to stop first")
    assert asked == [], "nothing ticked: nothing to confirm"
    page.check(f"#job-{job.pk} input[name=job]")
    with page.expect_event("dialog"):
        page.click("#stop-selected")
    assert len(asked) == 1 and "Stop the selected jobs?" in asked[0]


def test_select_all_follows_the_rows_boxes_through_a_poll_that_replaces_a_row(stack, member, workspace, page, submit,
                                                                              gate):
    """QA: with every box ticked by "Select all", unticking a row left "Select all" ticked. It is ticked when all
    rows are, mixed (indeterminate) when some are, and still says so after the poll replaced a row."""
    done = [Job.objects.create(workspace=workspace, owner=member, display_name=f"done-{i}", status="Succeeded",
                               job_type="PyTorchJob") for i in range(2)]
    running = submit(member, "select-all-poll", f"until [ -e {gate} ]; do sleep 0.1; done")
    script_errors = []
    page.on("pageerror", lambda error: script_errors.append(error))
    sign_in(page, stack.url, member.username, PASSWORD)
    expect(page.locator(f"#job-{running.pk} .badge")).to_have_text("Running", timeout=60_000)
    select_all = page.locator("#select-all")

    select_all.check()
    expect(page.locator("#bulk-form input[name=job]:checked")).to_have_count(3)
    page.uncheck(f"#sel-{done[0].pk}")
    expect(select_all).not_to_be_checked()
    expect(select_all).to_have_js_property("indeterminate", True)
    page.check(f"#sel-{done[0].pk}")
    expect(select_all).to_be_checked()
    expect(select_all).to_have_js_property("indeterminate", False)

    page.uncheck(f"#sel-{running.pk}")
    expect(select_all).to_have_js_property("indeterminate", True)
    page.evaluate(f"document.getElementById('job-{running.pk}').dataset.mark = 'old'")
    gate.touch()
    expect(page.locator(f"#job-{running.pk} .badge")).to_have_text("Succeeded", timeout=60_000)
    assert page.get_attribute(f"#job-{running.pk}", "data-mark") is None, "the poll replaced the row"
    expect(page.locator(f"#sel-{running.pk}")).not_to_be_checked()
    expect(select_all).not_to_be_checked()
    expect(select_all).to_have_js_property("indeterminate", True)
    page.check(f"#sel-{running.pk}")  # the swapped-in row's box counts like the others
    expect(select_all).to_be_checked()
    expect(select_all).to_have_js_property("indeterminate", False)
    select_all.uncheck()
    expect(page.locator("#bulk-form input[name=job]:checked")).to_have_count(0)
    expect(select_all).to_have_js_property("indeterminate", False)
    assert script_errors == []


def test_the_pager_links_are_named_without_their_arrows_and_a_refused_tag_is_announced_at_its_box(stack, member,
                                                                                                   workspace, page):
    """QA with a screen reader: the pager's arrows were read out ("left-pointing double angle quotation mark
    First"), and a refused tag's error appeared without a word while the focus stayed in the Tag box."""
    for i in range(12):
        Job.objects.create(workspace=workspace, owner=member, display_name=f"paged-{i:02d}", status="Succeeded",
                           job_type="PyTorchJob")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/?size=10")
    pager = page.locator("nav.pager")
    expect(pager).to_match_aria_snapshot('- navigation "Pages":\n  - link "Next page"')
    page.get_by_role("link", name="Next page", exact=True).click()
    page.wait_for_url(re.compile(r"after="))
    expect(rows(page)).to_have_count(2)
    expect(pager).to_match_aria_snapshot(
        '- navigation "Pages":\n  - link "First page"\n  - link "Previous page"')
    expect(pager).to_contain_text("Previous")  # the visible words stay, the arrows beside them

    page.fill("#f-tag", "team vision")
    page.press("#f-tag", "Enter")
    message = "'team vision' is not a tag"
    expect(page.get_by_role("alert")).to_contain_text(message)
    expect(page.locator("#f-tag")).to_have_accessible_description(re.compile(re.escape(message)))
    expect_focus(page, "f-tag")
    # A tag taken empties the error (the alert goes quiet) and the box.
    page.fill("#f-tag", "team=vision")
    page.press("#f-tag", "Enter")
    page.wait_for_url(re.compile(r"tag=team%3Dvision"))
    expect(page.locator("#err-tag")).to_have_text("")
    expect(page.locator("#f-tag")).to_have_value("")
