"""Playwright driving Debian's Chromium (never a browser downloaded by Playwright)."""

from __future__ import annotations

import os
import tempfile

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Without these, Chromium keeps trying to reach Google's hosts, which this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def playwright_driver():
    """The one Playwright driver of the session (its sync API cannot be started twice in a thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_driver):
    with tempfile.TemporaryDirectory() as profile:
        context = playwright_driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield context
        context.close()


@pytest.fixture
def bfcache_page(playwright_driver):
    """A page of a Chromium with its back/forward cache on, as users have it (Playwright turns it off by default):
    for tests of what Back shows. Its own short-lived browser, so the session's keeps Playwright's defaults."""
    with tempfile.TemporaryDirectory() as profile:
        context = playwright_driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            ignore_default_args=["--disable-back-forward-cache"],
        )
        page = context.new_page()
        page.set_default_timeout(15_000)
        yield page
        context.close()


@pytest.fixture
def no_js_page(playwright_driver):
    """A page of a Chromium with JavaScript off: for the paths that must work without it. Its own short-lived
    browser, as bfcache_page's."""
    with tempfile.TemporaryDirectory() as profile:
        context = playwright_driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, java_script_enabled=False,
        )
        page = context.new_page()
        page.set_default_timeout(15_000)
        yield page
        context.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    page.set_default_timeout(15_000)
    yield page
    page.close()
    browser.clear_cookies()


def sign_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def settle(page) -> None:
    """Wait until no htmx request is in flight (a section re-render, a validation)."""
    page.wait_for_function("!document.querySelector('.htmx-request')")


IMAGE = "registry.example.com/team/pytorch:2.3"


def start_job(page, base_url: str, name: str, command: str) -> None:
    """Open a blank Create job page and fill what every job needs first: a name, an image address, a command."""
    page.goto(f"{base_url}/jobs/new")
    page.fill("#id_basic-name", name)
    page.check("input[name=environment-image_type][value=address]")
    settle(page)
    page.fill("#id_environment-image", IMAGE)
    page.fill("#id_environment-command", command)


def expect_focus(page, element_id: str, timeout: float = 10_000) -> None:
    """Until the keyboard focus is on the element with this id (an htmx swap settles 20 ms after it lands)."""
    try:
        page.wait_for_function("id => document.activeElement && document.activeElement.id === id", arg=element_id,
                               timeout=timeout)
    except Exception:  # noqa: BLE001 - Playwright's timeout says nothing of where the focus went
        where = page.evaluate("() => { const e = document.activeElement; return e ? e.tagName + '#' + e.id : null; }")
        raise AssertionError(f"the focus is on {where}, not #{element_id}") from None
