"""A person signs in, creates an `echo hello` job, watches it run and succeed without reloading,
and reads `hello` on its page. Playwright driving Debian's Chromium against the real stack."""

import pytest

from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_create_job_watch_it_succeed_and_read_its_log(stack, member, page, gate):
    # The pod ends once the list has shown it Running: with `sleep 5`, a slow submit and list on a loaded machine
    # could first show the row already Succeeded.
    sign_in(page, stack.url, member.username, PASSWORD)
    page.click("text=Create job >> nth=0")
    page.fill("#id_basic-name", "hello-from-browser")
    page.select_option("#id_environment-image", index=1)  # the first official image
    page.fill("#id_environment-command", f"echo hello; until [ -e {gate} ]; do sleep 0.1; done")
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_selector("h1:has-text('hello-from-browser')")

    page.goto(f"{stack.url}/")
    row = page.locator("tr", has_text="hello-from-browser")
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    row.locator(".badge", has_text="Running").wait_for(timeout=60_000)
    gate.touch()
    row.locator(".badge", has_text="Succeeded").wait_for(timeout=60_000)
    assert navigations == [], "the list must update in place, without reloading"

    row.locator("a", has_text="hello-from-browser").click()
    page.locator("#log-lines", has_text="hello").wait_for(timeout=30_000)  # the job page's log panel
