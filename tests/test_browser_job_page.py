"""The job page in Chromium against the real stack: the log tail shows lines as the pod prints them, the log box
opens at its end and stays there for a reader at the end (not for one who scrolled up), a pod's log and a search
in it have their own URL, and Stop asks for confirmation, then stops the running job on localdlc."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from jobs import dlc, podlogs
from tests.conftest import PASSWORD
from tests.support.browser import expect_focus, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture
def submit(submit_to_stack):
    return submit_to_stack


def test_the_log_tail_shows_lines_as_the_pod_prints_them(stack, member, page, submit):
    job = submit(member, "ticker", "for i in $(seq 1 24); do echo tick-$i; sleep 0.35; done")
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
    # Without the line number (read from its start, the running log's lines are numbered, the tail's too).
    without_number = "els => els.map(e => e.textContent.slice((e.querySelector('.no')?.textContent ?? '').length))"
    texts = lines.evaluate_all(without_number)
    assert texts == [f"tick-{i}" for i in range(1, 25)], "each line once, in order"
    assert lines.evaluate_all("els => els.map(e => e.dataset.n)") == [str(i) for i in range(1, 25)]
    assert page.get_attribute("#log-lines .ln", "data-mark") == "first", "new lines were appended"
    expect(page.locator("#job-status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#log-tail")).to_have_attribute("data-following", "no")
    expect(page.locator("#log-pod-status")).to_have_text("Succeeded")

    # The search goes into the URL, and a reload of that URL shows the same search; clearing it clears the URL.
    # By keyboard, the search box keeps the focus across the panel's swap, and gets it back from Clear search.
    found = [f"tick-{i}" for i in (2, 20, 21, 22, 23, 24)]
    page.locator('#log-search input[name="q"]').fill("TICK-2")
    page.locator('#log-search input[name="q"]').press("Enter")
    page.wait_for_url(re.compile(rf"/jobs/{job.pk}\?pod=[^&#]+&q=TICK-2#logs$"))
    expect(lines).to_have_count(6)
    assert lines.evaluate_all(without_number) == found
    expect_focus(page, "log-q")
    page.reload()
    expect(lines).to_have_count(6, timeout=30_000)
    assert lines.evaluate_all(without_number) == found
    expect(page.locator('#log-search input[name="q"]')).to_have_value("TICK-2")
    page.get_by_role("link", name="Clear search").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/jobs/{job.pk}\?pod=[^&#]+#logs$"))
    expect(lines).to_have_count(24)
    expect_focus(page, "log-q")
    # The focus ring shows in the dark log box too (the browser's own is all but invisible on #11151c).
    page.locator("#log-lines").focus()
    ring = page.locator("#log-lines").evaluate("e => [getComputedStyle(e).outlineStyle, "
                                               "getComputedStyle(e).outlineColor]")
    assert ring == ["solid", "rgb(245, 215, 110)"], ring


# Pixels between the box's visible bottom and its content's end.
GAP = "() => { const b = document.querySelector('#log-lines'); return b.scrollHeight - b.clientHeight - b.scrollTop; }"
# The same, read only once the last answer has settled: htmx inserts a tail answer's lines at once but scrolls the box
# to the end at its settle, 20 ms later (50+ on a loaded machine), so a read in between sees a following box short of
# its end. A tail poll lands every second: a read 200 ms after one wait (the old way) met the next under load.
SETTLED_GAP = """() => { const b = document.querySelector('#log-lines');
    if (b.closest('.htmx-settling') || b.querySelector('.htmx-added')) return null;
    return {gap: b.scrollHeight - b.clientHeight - b.scrollTop}; }"""


def settled_gap(page) -> float:
    return page.wait_for_function(SETTLED_GAP).json_value()["gap"]


def printed(workspace, job, count: int, timeout: float = 60) -> str:
    """Until the job's pod has printed `count` lines; its pod id."""
    deadline = time.monotonic() + timeout
    while True:
        pods = dlc.get_job(workspace, job.dlc_job_id).get("Pods") or []
        if pods and len(dlc.get_pod_logs(workspace, job.dlc_job_id, pods[0]["PodId"], max_lines=count)) >= count:
            return pods[0]["PodId"]
        assert time.monotonic() < deadline, f"the pod never printed {count} lines"
        time.sleep(0.2)


def more_lines(page, than: int, by: int = 5) -> int:
    page.wait_for_function(f"() => document.querySelectorAll('#log-lines .ln').length >= {than + by}",
                           timeout=30_000)
    return page.locator("#log-lines .ln").count()


# Until the box's scroll position has held for 10 frames: a wheel's scroll, smooth in some builds, has come to rest.
SCROLL_AT_REST = """() => new Promise(done => { const b = document.querySelector('#log-lines');
    let last = b.scrollTop, still = 0;
    const frame = () => { still = b.scrollTop === last ? still + 1 : 0; last = b.scrollTop;
                          if (still >= 10) done(last); else requestAnimationFrame(frame); };
    requestAnimationFrame(frame); })"""


def test_the_log_box_opens_at_its_end_and_keeps_a_reader_who_scrolled_up_where_they_are(
        stack, member, workspace, page, submit):
    job = submit(member, "scroller", "seq 1 300; for i in $(seq 301 500); do echo $i; sleep 0.15; done")
    job.refresh_from_db()
    pod = printed(workspace, job, 300)
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    lines = page.locator("#log-lines .ln")
    page.wait_for_function("() => document.querySelectorAll('#log-lines .ln').length >= 250", timeout=60_000)
    assert settled_gap(page) <= 2, "the box opens at the log's end, where it is followed"
    height = page.evaluate("() => document.querySelector('#log-lines').scrollHeight")
    assert height > 3 * page.evaluate("() => document.querySelector('#log-lines').clientHeight"), "a long log"

    count = more_lines(page, lines.count())
    assert settled_gap(page) <= 2, "new lines keep a reader at the end at the end"

    page.locator("#log-lines").hover()
    page.mouse.wheel(0, -1500)
    page.wait_for_function("() => document.querySelector('#log-lines').dataset.stick === 'no'")
    top = page.evaluate(SCROLL_AT_REST)
    count = more_lines(page, lines.count())
    assert abs(page.evaluate("() => document.querySelector('#log-lines').scrollTop") - top) <= 1, \
        "a reader who scrolled up stays where they are while lines arrive"
    assert page.evaluate(GAP) > 500

    page.mouse.wheel(0, 100_000)
    page.wait_for_function("() => document.querySelector('#log-lines').dataset.stick === 'yes'")
    more_lines(page, lines.count())
    assert settled_gap(page) <= 2, "back at the end, the box follows again"

    # The pod's log has its own URL: the pods table's Logs link pushes it, and a reload opens that pod.
    page.locator(f'#pods tr[data-pod="{pod}"] a', has_text="Logs").click()
    page.wait_for_url(f"{stack.url}/jobs/{job.pk}?pod={pod}#logs")
    page.reload()
    expect(page.locator("#log-head")).to_contain_text(pod)
    expect(lines.first).to_be_visible(timeout=30_000)
    assert count > 300


def test_stop_asks_for_confirmation_then_stops_the_running_job(stack, member, workspace, page, submit):
    """By keyboard (a11y QA): Stop hands the focus to the status once its button is gone, and the new status is
    announced once, not at every 2 s refresh; a note's Edit puts the focus in its box, Escape gives it back."""
    job = submit(member, "long-sleeper", "sleep 300")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    expect(page.locator("#job-status")).to_have_text("Running", timeout=60_000)
    # Count what the announcer says from now on; the mark shows the refreshes keep its node (hx-preserve).
    page.evaluate("""() => { const said = document.getElementById('job-status-said'); said.kept = true;
        window.announced = []; new MutationObserver(() => announced.push(said.textContent))
            .observe(said, {childList: true, characterData: true, subtree: true}); }""")

    page.fill("#note-text", "diverged: LR too high")
    page.click("#note-submit")
    edit = page.locator("a.note-edit")
    edit_id = edit.get_attribute("id")
    # htmx binds the new card's controls as it settles (20 ms after the swap; Chromium's own autofocus can come
    # first): faster than any hand, a key pressed before finds a plain link, a box without its Escape.
    settled = "!document.querySelector('#notes.htmx-settling, #notes .htmx-added')"
    page.wait_for_function(settled)
    edit.focus()
    page.keyboard.press("Enter")
    expect_focus(page, edit_id.replace("note-edit-", "note-text-"))
    page.wait_for_function(settled)
    page.keyboard.press("Escape")
    expect_focus(page, edit_id)

    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#stop-job")
    page.wait_for_timeout(2500)  # a refresh or two of the live part
    assert asked and "Stop job" in asked[0] and "long-sleeper" in asked[0]
    job.refresh_from_db()
    assert job.stop_requested_at is None and job.status == "Running", "dismissing the dialog changes nothing"
    assert page.evaluate("window.announced") == [], "an unchanged status is not announced again"

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#stop-job").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#stop-notice")).to_have_text("Stop: Stop requested")
    expect(page.locator("#job-status")).to_have_text("Stopped", timeout=60_000)
    expect(page.locator("#stop-job")).to_have_count(0)
    expect_focus(page, "job-status")
    expect(page.locator("#job-status-said")).to_have_text("Status: Stopped")
    assert page.evaluate("document.getElementById('job-status-said').kept") is True
    said = page.evaluate("window.announced")
    assert said[-1] == "Status: Stopped" and len(said) == len(set(said)), said
    assert dlc.get_job(workspace, job.dlc_job_id)["Status"] == "Stopped"
    expect(page.locator("#job-live")).to_have_attribute("data-active", "no")


# Where the line marked first is in the log box, in pixels from the box's top.
MARKED_TOP = ("() => document.querySelector('#log-lines .ln[data-mark=\"first\"]').getBoundingClientRect().top"
              " - document.querySelector('#log-lines').getBoundingClientRect().top")


def test_older_lines_are_prepended_on_demand_and_lines_show_as_in_a_terminal(stack, member, workspace, page, submit,
                                                                             tmp_path, gate):
    """A running job's log longer than the first view: "Load older lines" at the top of the box puts the lines
    before those shown in front of them (those shown stay, the reader stays on them), down to the start; a
    coloured line shows in its colour without its escape codes, a tqdm line as its last update. At 1280 and 390 px."""
    # Running until the test is done (both widths): `sleep 60` could end on a loaded machine, and an ended job's log
    # is another view (no tail, the archive's).
    job = submit(member, "older", "printf '\\033[31mready\\033[0m\\n'; printf ' 0%%|\\r 50%%|\\r100%%| done\\n'; "
                                  f"seq 1 1500; until [ -e {gate} ]; do sleep 0.1; done")
    job.refresh_from_db()
    try:
        printed(workspace, job, 1502)
        time.sleep(podlogs.SETTLE.total_seconds() + 0.5)  # the first view reads up to a settled instant
        sign_in(page, stack.url, member.username, PASSWORD)
        for width, height in ((1280, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{stack.url}/jobs/{job.pk}")
            lines = page.locator("#log-lines .ln")
            expect(lines.first).to_have_text("501", timeout=60_000)
            expect(page.locator("#log-note")).to_contain_text("Showing the last 1000 lines")
            page.evaluate("() => { document.querySelector('#log-lines .ln').dataset.mark = 'first'; }")
            button = page.locator("#log-older button")
            expect(button).to_have_text("Load older lines")
            # The page keeps the reader's place itself (static/js/logpanel.js): the browser's scroll anchoring, which
            # mostly does it too, is off here so that the test shows the page's.
            page.locator("#log-lines").evaluate("box => { box.style.overflowAnchor = 'none'; box.scrollTop = 0; }")
            page.locator("#log-panel").screenshot(path=str(tmp_path / f"log-older-{width}.png"))
            before = page.evaluate(MARKED_TOP)
            # The older lines' answer is held past a live-tail poll (every 1 s), whose swap in between used to take
            # the place the page had noted at the request, leaving the reader thrown to the start (a CI run).
            page.route("**/logs?until=**", lambda route: (time.sleep(2.5), route.continue_()))
            button.focus()
            page.keyboard.press("Enter")  # by keyboard: at the start of the log the focus goes to the bar
            expect(page.locator("#log-older")).to_have_text("Start of the log.", timeout=30_000)
            page.unroute("**/logs?until=**")
            expect_focus(page, "log-older")
            expect(lines).to_have_count(1502)
            expect(page.locator("#log-note")).to_have_text("The whole log is shown.")  # no longer "the last 1000"
            # Without the line numbers: the older page that reached the start is numbered from 1 (its position is
            # known); the first view's 1000 lines, read from the end, are not.
            without_number = ("els => els.map(e => e.textContent.slice("
                              "(e.querySelector('.no')?.textContent ?? '').length))")
            texts = lines.evaluate_all(without_number)
            assert texts == ["ready", "100%| done", *map(str, range(1, 1501))], texts[:4]
            numbers = lines.evaluate_all("els => els.map(e => e.dataset.n || '')")
            assert numbers == [*map(str, range(1, 503)), *[""] * 1000], (numbers[:3], numbers[500:504])
            red = page.locator("#log-lines .ln").first.locator("span.ansi-red")
            expect(red).to_have_text("ready")
            expect(red).to_have_css("color", "rgb(255, 123, 114)")  # the palette's red: 7:1 on the log box
            assert page.get_attribute('#log-lines .ln[data-mark="first"]', "data-mark") == "first", \
                "the lines shown stay: the older ones come before them"
            assert abs(page.evaluate(MARKED_TOP) - before) < 30, \
                "the reader stays on the lines they were reading, not thrown to the start"
            page.locator("#log-panel").screenshot(path=str(tmp_path / f"log-older-after-{width}.png"))
    finally:
        dlc.stop_job(workspace, job.dlc_job_id)


def test_an_expired_session_sends_the_page_to_sign_in_and_back_after_sign_out_shows_no_private_page(
        stack, member, workspace, bfcache_page, submit):
    """QA: with the session gone, the job page's polls swapped the sign-in page into their targets (13 sign-in
    forms in one page); after Sign out, Back showed the private page again from the back/forward cache; the list's
    poll sent the CSRF token in its URL."""
    page = bfcache_page
    job = submit(member, "session-sleeper", "sleep 300")
    try:
        polls: list[str] = []
        page.on("request", lambda request: polls.append(request.url) if "/jobs/rows" in request.url else None)
        sign_in(page, stack.url, member.username, PASSWORD)
        expect(page.locator("#row-poller")).to_have_attribute("data-polling", "yes", timeout=30_000)
        # Ticked once its row shows Running, which it keeps: a poll sent before the tick and answering a status that
        # moved (a loaded machine's late sync) re-renders the row, its box unticked, and no later poll says job=.
        expect(page.locator(f"#job-{job.pk} .badge")).to_have_text("Running", timeout=60_000)
        page.locator(f"#bulk-form input[name=job][value='{job.pk}']").check()
        page.wait_for_function("n => window.performance.getEntriesByType('resource').filter("
                               "e => e.name.includes('/jobs/rows') && e.name.includes('job=')).length >= n", arg=1,
                               timeout=15_000)
        assert polls and not [url for url in polls if "csrfmiddlewaretoken" in url], polls

        page.goto(f"{stack.url}/jobs/{job.pk}")
        expect(page.locator("#job-status")).to_have_text("Running", timeout=60_000)
        page.context.clear_cookies()
        page.wait_for_url(f"**/accounts/login/?next=/jobs/{job.pk}", timeout=20_000)
        expect(page.locator("#id_username")).to_have_count(1)
        expect(page.locator("#job-status")).to_have_count(0)

        page.fill("#id_username", member.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{stack.url}/jobs/{job.pk}")
        expect(page.locator("#job-status")).to_have_text("Running")
        # A page that polls nothing (a polling one never enters the back/forward cache), then Sign out and Back.
        page.goto(f"{stack.url}/account/notifications")
        page.click("header button:has-text('Sign out')")
        page.wait_for_url("**/accounts/login/")
        page.go_back(wait_until="commit")  # a page restored from the back/forward cache fires no load event
        expect(page).to_have_url(re.compile(r".*/accounts/login/\?next=/account/notifications$"))
        expect(page.locator("#id_username")).to_have_count(1)
        expect(page.locator("header button:has-text('Sign out')")).to_have_count(0)
    finally:
        job.refresh_from_db()
        dlc.stop_job(workspace, job.dlc_job_id)


def test_a_flood_of_lines_keeps_the_newest_5000_in_the_page_and_is_not_read_out_line_by_line(
        stack, member, workspace, page, submit, gate):
    """QA: the live tail kept every line (30,002 nodes after a flood; a 100k-line run would hold 100k+), and role=log
    (polite) announced ~2,000 lines/s. The box keeps the newest 5000, its older lines one click away again; it is
    aria-live=off, and a status line says how many new lines came, at most every few seconds."""
    # The flood waits for the page's tail to be following (the gate): with `sleep 6` a loaded CI machine opened the
    # page after the flood, whose last 1000 lines were then the first view (read from the end, unnumbered).
    job = submit(member, "flood", f"seq 1 3000; until [ -e {gate} ]; do sleep 0.1; done; seq 3001 9000; sleep 60")
    job.refresh_from_db()
    try:
        printed(workspace, job, 3000)
        sign_in(page, stack.url, member.username, PASSWORD)
        page.goto(f"{stack.url}/jobs/{job.pk}")
        lines = page.locator("#log-lines .ln")
        expect(lines.last).to_have_text(re.compile(r"3000$"), timeout=30_000)  # "3000", after its number if any
        expect(page.locator("#log-tail")).to_have_attribute("data-following", "yes")
        gate.touch()
        # Numbered or not: the first view is numbered only when it holds the log from its start, which depends on how
        # long the page took to open after the first 3000 lines (a CI run's were not), and the tail numbers on from it.
        expect(lines.last).to_have_text(re.compile(r"9000$"), timeout=60_000)
        page.wait_for_timeout(1500)  # a later tail answer would still trim
        text = "els => els.map(e => e.textContent.slice((e.querySelector('.no')?.textContent ?? '').length))"
        assert lines.evaluate_all(text) == [str(i) for i in range(4001, 9001)]
        assert page.get_attribute("#log-lines", "aria-live") == "off"
        expect(page.locator("#log-news")).to_have_text(re.compile(r"^\d+ new lines$"))
        page.locator("#log-older button").click()
        expect(lines).to_have_count(9000, timeout=30_000)
        # A CI run read the box after the next 2 s tail poll, which brought no line and trimmed the loaded ones.
        page.wait_for_timeout(4500)
        assert lines.evaluate_all(text) == [str(i) for i in range(1, 9001)], "the dropped lines came back, in order"
    finally:
        dlc.stop_job(workspace, job.dlc_job_id)
