"""Secret environment variables in Chromium against the real stack: the order people actually type in (name,
value, and only then the Secret tick), untick and tick again, a renamed variable and other fields of the section
asking the server for a new rendering. The value must stay in the browser's input throughout, never come back
from the server, and reach the pod."""

from __future__ import annotations

import hashlib
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import settle, sign_in, start_job
from tests.test_browser_wizard import wait_for_status

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_a_value_typed_before_ticking_secret_is_kept_hidden_sent_sealed_and_reaches_the_pod(stack, member, page):
    secret = "wandb-late-" + hashlib.sha256(b"late-tick").hexdigest()[:16]
    answers: list[str] = []  # every text the server sent the browser, to prove the secret never was one of them

    def keep(response) -> None:
        if response.url.startswith(stack.url) and "text" in (response.headers.get("content-type") or ""):
            try:
                answers.append(response.text())
            except Exception:  # noqa: BLE001 - a redirect has no body to read
                pass

    page.on("response", keep)
    sign_in(page, stack.url, member.username, PASSWORD)
    start_job(page, stack.url, "secret-late-e2e", 'echo "sha=$(printf %s "$WANDB_API_KEY" | sha256sum)"')
    page.click("#sec-environment details.more > summary")
    page.click("button[name=_add][value=envs]")
    settle(page)
    value = page.locator("input[name=environment-envs-0-value]")
    page.fill("#id_environment-envs-0-key", "WANDB_KEY")  # renamed below, after the tick
    value.fill(secret)
    expect(value).to_have_attribute("type", "text")

    # The tick comes last: the value stays, now hidden as a password.
    page.check("#id_environment-envs-0-secret")
    settle(page)
    expect(value).to_have_attribute("type", "password")
    expect(value).to_have_value(secret)
    # Unticking shows it again, ticking hides it again: the same input all along.
    page.uncheck("#id_environment-envs-0-secret")
    settle(page)
    expect(value).to_have_attribute("type", "text")
    expect(value).to_have_value(secret)
    page.check("#id_environment-envs-0-secret")
    settle(page)
    expect(value).to_have_attribute("type", "password")

    # Other fields of the section make the server render it again: a new row, then leaving the section (its
    # validation), after renaming the secret variable and naming the new one.
    page.click("button[name=_add][value=envs]")
    settle(page)
    expect(value).to_have_value(secret)
    page.fill("#id_environment-envs-0-key", "WANDB_API_KEY")
    page.fill("#id_environment-envs-1-key", "EPOCHS")
    page.fill("#id_environment-envs-1-value", "3")
    page.click("#id_basic-name")  # the focus leaves the environment section: it is validated
    settle(page)
    expect(page.locator("#sec-environment input[type=hidden][name=_checked-environment]")).to_have_count(1)
    expect(value).to_have_value(secret)
    expect(value).to_have_attribute("type", "password")
    # The server cannot tell a kept value from a lost one and says "type it again"; the page hides that for a kept one.
    expect(page.locator("#sec-environment [id^=reprompt-]")).to_be_hidden()
    page.check("input[name=environment-libs_mode][value=list]")  # a choice that re-renders the section
    settle(page)
    expect(value).to_have_value(secret)
    page.check("input[name=environment-libs_mode][value=none]")
    settle(page)

    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    settle(page)
    expect(page.locator("#api-json")).to_contain_text('"WANDB_API_KEY": "********"')
    assert secret not in page.content()
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    assert answers and not [a for a in answers if secret in a], "a page or partial carried the secret"
    job = wait_for_status(Job.objects.get(display_name="secret-late-e2e"), "Succeeded")
    assert job.body["Envs"] == {"WANDB_API_KEY": "********", "EPOCHS": "3"} and job.sealed_secrets == ""
    page.goto(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs")
    expect(page.locator("body")).to_contain_text(f"sha={hashlib.sha256(secret.encode()).hexdigest()}")
