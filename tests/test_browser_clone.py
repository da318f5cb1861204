"""Clone in Chromium against the real stack: from a finished job's page, Clone opens the wizard with every
section prefilled and no secret; the registry password has to be typed again; the diff shows what the user
changed; the clone is submitted, runs on localdlc, and the two jobs link to each other."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs import spec
from jobs.forms import wizard as glue
from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import settle, sign_in
from tests.support.wizard import comparable, form_data, page_form_data
from tests.test_browser_wizard import wait_for_status

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SECRET = "pw-source-registry-0xFEED"


@pytest.fixture
def source(workspace, member):
    """A finished job created through the wizard's form layer, with a registry password (sealed, then
    erased as the worker does) and something set in every section."""
    data = form_data(
        basic__name="clone-source", basic__description="the original",
        basic__tags__0__key="team", basic__tags__0__value="vision",
        environment__registry_username="robot", environment__registry_password=SECRET,
        environment__datasets__0__kind="custom", environment__datasets__0__id="d-src",
        environment__datasets__0__version="v1", environment__datasets__0__read_only="true",
        environment__datasets__0__mount_path="/mnt/data",
        environment__command='echo "clone run $WANDB_MODE"', environment__envs__0__key="WANDB_MODE",
        environment__envs__0__value="offline", resources__scheduling_policy="spread",
        resources__max_duration="3", resources__max_duration_unit="hours",
        resources__advanced="ReleaseResourcePolicy=pod-exit",
        vpc__vpc_id="vpc-src", vpc__switch_id="vsw-src", vpc__security_group_id="sg-src",
        fault_tolerance__enabled="on", fault_tolerance__args="--enable-log-hang-detection true",
        ram_role__mode="default",
    )
    wizard = glue.Wizard(data, context=glue.context_for(workspace))
    assert wizard.is_valid, wizard.errors()
    return Job.objects.create(workspace=workspace, owner=member, display_name="clone-source",
                              job_type="PyTorchJob", body=wizard.body(workspace.dlc_workspace_id),
                              hints=wizard.hints(), status="Succeeded")


def test_clone_prefills_every_section_keeps_no_secret_and_runs(stack, member, page, source):
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{source.pk}")
    page.click("#clone-job")
    page.wait_for_url(f"{stack.url}/jobs/new?clone={source.pk}")

    # Every section is prefilled with the source's values; the name is reset; no secret is on the page.
    shown = page_form_data(page.content())
    expected = glue.sections_to_data(spec.inverse(source.body, source.hints))
    skip = {glue.PASSWORD, "fault_tolerance-sanity_args", "basic-name"}
    assert comparable(shown, skip) == comparable(expected, skip)
    expect(page.locator("#id_basic-name")).to_have_value("clone-source-copy")
    expect(page.locator("#id_environment-registry_password")).to_have_value("")
    expect(page.locator("#reprompt-list")).to_contain_text("Registry password")
    assert SECRET not in page.content()
    expect(page.locator("#clone-diff")).to_contain_text("Nothing changed yet")

    # Submitting without the password is refused at its field.
    page.click("#wizard-form .actions button[type=submit]")
    expect(page.locator("#f-environment-registry_password .error")).to_contain_text("Enter the registry password")
    expect(page.locator("#error-summary a[href='#id_environment-registry_password']")).to_have_count(1)
    assert SECRET not in page.content()

    # Type it again, change the command; the diff shows exactly that change.
    page.fill("#id_environment-registry_password", "typed-again")
    # Two lines: the browser posts them with CRLF, and the job must get LF only (a CR breaks shell lines).
    page.fill("#id_environment-command", 'echo "cloned run $WANDB_MODE"\necho second line')
    page.click("#id_vpc-vpc_id")  # leave the section
    settle(page)
    rows = page.locator("#clone-diff tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Startup command")
    expect(rows.first).to_contain_text('echo "cloned run $WANDB_MODE"')
    page.set_viewport_size({"width": 390, "height": 844})  # on a phone the diff wraps inside the page
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(f"{stack.url}/jobs/*")
    expect(page.locator("#cloned-from")).to_have_text("clone-source")

    clone = Job.objects.get(display_name="clone-source-copy")
    assert clone.cloned_from == source and clone.idempotency_tag != source.idempotency_tag
    assert "typed-again" not in str(clone.body) and SECRET not in str(clone.body)
    expected_body = {**source.body, "DisplayName": "clone-source-copy",
                     "UserCommand": 'echo "cloned run $WANDB_MODE"\necho second line'}
    assert clone.body == expected_body
    wait_for_status(clone, "Succeeded")
    page.goto(f"{stack.url}/jobs/{source.pk}")
    expect(page.locator("#clones")).to_contain_text("clone-source-copy")
