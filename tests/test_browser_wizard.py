"""The create-job wizard in Chromium against the real stack (web, Redis, Celery worker and beat, localdlc):
fill every section, watch dependent fields appear and disappear, see an inline error and fix it, copy the
API request, submit, and the job runs on localdlc until it succeeds."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import settle, sign_in, start_job

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def add_dataset(page, dataset_id: str, mount_path: str) -> None:
    """The wizard's first dataset row, added by its button and filled."""
    page.click("button[name=_add][value=datasets]")
    settle(page)
    page.fill("#id_environment-datasets-0-id", dataset_id)
    page.fill("#id_environment-datasets-0-mount_path", mount_path)


def wait_for_status(job: Job, wanted: str, timeout: float = 90) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status == wanted:
            return job
        time.sleep(0.5)
    raise AssertionError(f"{job.display_name} is {job.status}, not {wanted}, after {timeout}s ({job.submit_error})")


def test_fill_every_section_fix_an_error_copy_the_request_submit_and_it_runs(stack, member, page, browser):
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=stack.url)
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    expect(page.locator(".wizard-index a")).to_have_text(
        ["Basic information", "Environment", "Resources", "VPC", "Fault tolerance and diagnosis", "RAM role"])

    # Basic information: a bad name is flagged when the user leaves the section, and the flag goes once fixed.
    page.fill("#id_basic-name", "bad name!")
    page.click("#id_environment-command")
    error = page.locator("#f-basic-name .error")
    expect(error).to_contain_text("may contain only ASCII letters (a-z, A-Z), digits")
    expect(page.locator("#id_basic-name")).to_have_attribute("aria-invalid", "true")
    page.fill("#id_basic-name", "wizard-e2e")
    page.click("#id_environment-command")
    expect(error).to_have_count(0)
    page.click("button[name=_add][value=tags]")
    settle(page)
    page.fill("#id_basic-tags-0-key", "team")
    page.fill("#id_basic-tags-0-value", "vision")
    page.fill("#id_basic-description", "end-to-end wizard test")

    # Environment: the image type decides the image field and the credentials. (Fields the choices hide keep
    # their value in a hidden input, so switching back restores it; they never reach the request.)
    expect(page.locator("#id_environment-registry_username")).to_be_hidden()
    page.check("input[name=environment-image_type][value=address]")
    settle(page)
    expect(page.locator("#id_environment-registry_username")).to_be_visible()
    page.fill("#id_environment-image", "registry.example.com/team/pytorch:2.3")
    page.fill("#id_environment-registry_username", "robot")
    page.fill("#id_environment-registry_password", "pw-in-the-browser")
    add_dataset(page, "d-e2e", "/mnt/data")
    page.fill("#id_environment-command", 'echo "hello from $JOB_NAME mode=$WANDB_MODE"; sleep 1')
    page.click("#sec-environment details.more > summary")
    page.click("button[name=_add][value=envs]")
    settle(page)
    page.fill("#id_environment-envs-0-key", "WANDB_MODE")
    page.fill("#id_environment-envs-0-value", "offline")
    # The password typed before the section re-rendered (rows added) is still there, never from the server.
    expect(page.locator("#id_environment-registry_password")).to_have_value("pw-in-the-browser")

    # Resources: the source decides between quota fields and the instance type chooser.
    page.check("input[name=resources-source][value=quota]")
    settle(page)
    expect(page.locator("#id_resources-quota_id")).to_be_visible()
    expect(page.locator("#id_resources-priority")).to_be_visible()
    expect(page.locator("#id_resources-roles-0-cpu")).to_be_visible()
    expect(page.locator("#id_resources-roles-0-instance_type")).to_be_hidden()
    page.check("input[name=resources-source][value=spot]")
    settle(page)
    expect(page.locator("input[name=resources-bid_method][value=discount]")).to_be_visible()
    expect(page.locator("#id_resources-quota_id")).to_be_hidden()
    page.check("input[name=resources-source][value=public]")
    settle(page)
    expect(page.locator("#id_resources-quota_id")).to_be_hidden()
    # The framework decides the roles: TensorFlow offers PS, Chief, Evaluator; back to PyTorch for the run.
    page.select_option("#id_resources-framework", "TensorFlow")
    settle(page)
    expect(page.locator("#id_resources-roles-0-role option[value=PS]")).to_have_count(1)
    page.select_option("#id_resources-framework", "PyTorch")
    settle(page)
    expect(page.locator("#id_resources-roles-0-role option[value=PS]")).to_have_count(0)
    # ListEcsSpecs feeds the chooser, with CPU, memory and GPU in each option.
    expect(page.locator("#id_resources-roles-0-instance_type option[value='ecs.g6.large']")).to_have_text(
        "ecs.g6.large · 2 vCPU · 8 GiB · no GPU")
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    settle(page)
    page.check("input[name=resources-scheduling_policy][value=spread]")
    settle(page)
    page.click("#sec-resources details.more > summary")
    page.fill("#id_resources-max_duration", "2")
    page.select_option("#id_resources-max_duration_unit", "hours")
    settle(page)

    # VPC.
    page.fill("#id_vpc-vpc_id", "vpc-e2e")
    page.fill("#id_vpc-switch_id", "vsw-e2e")
    page.fill("#id_vpc-security_group_id", "sg-e2e")
    # Fault tolerance: turning it on brings its parameters and the AIMaster note.
    expect(page.locator("#id_fault_tolerance-args")).to_be_hidden()
    page.check("#id_fault_tolerance-enabled")
    settle(page)
    expect(page.locator("#id_fault_tolerance-args")).to_be_visible()
    expect(page.locator("#f-fault_tolerance-enabled .note")).to_contain_text("AIMaster instance")
    page.fill("#id_fault_tolerance-args", "--enable-log-hang-detection true")
    # RAM role.
    page.check("input[name=ram_role-mode][value=default]")
    settle(page)

    # The API request panel follows the form; copy it.
    api = page.locator("#api-json")
    # The panel refreshes 300 ms after the last change (debounced, so settle() may return before it starts); on a
    # loaded machine its POST can take seconds.
    expect(api).to_contain_text('"EnableCredentialInject": true', timeout=20_000)
    expect(api).to_contain_text('"ErrorMonitoringArgs": "--enable-log-hang-detection true"')
    expect(api).to_contain_text('"Password": "********"')
    assert "pw-in-the-browser" not in page.content()
    page.click("button[data-copy='#api-json']")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.evaluate("window.wizardCopied") == api.text_content()
    request = json.loads(copied)
    assert request["DisplayName"] == "wizard-e2e" and request["Envs"] == {"WANDB_MODE": "offline"}

    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(f"{stack.url}/jobs/*")
    job = Job.objects.get(display_name="wizard-e2e")
    for role in request["JobSpecs"]:
        role["ImageConfig"].pop("Password")
    assert job.body == request, "what was copied is what was submitted (the password travels sealed)"
    assert job.body["JobSpecs"][0]["ImageConfig"] == {"Username": "robot"}
    assert job.body["UserVpc"]["VpcId"] == "vpc-e2e" and job.body["JobMaxRunningTimeMinutes"] == 120
    job = wait_for_status(job, "Succeeded")
    assert job.sealed_secrets == "", "the sealed password is erased once CreateJob has been answered"


def test_a_template_with_locked_roles_shows_no_row_buttons_and_says_locked(stack, workspace, member, page):
    from jobs import spec
    from jobs.models import JobTemplate, JobTemplateVersion, WorkspaceCost

    body = {"DisplayName": "from-template", "JobType": "PyTorchJob", "UserCommand": "echo hi",
            "JobSpecs": [{"Type": "Master", "Image": "registry.example/pytorch:2.3", "PodCount": 1,
                          "EcsSpec": "ecs.g6.large"},
                         {"Type": "Worker", "Image": "registry.example/pytorch:2.3", "PodCount": 2,
                          "EcsSpec": "ecs.g6.large"}]}
    # Locks are set by workspace admins (templates_lib.set_locks); the data is made here directly.
    template = JobTemplate.objects.create(workspace=workspace, name="locked-roles", created_by=member,
                                          locked=["resources.roles", "environment.command"])
    JobTemplateVersion.objects.create(template=template, number=1, sections=spec.inverse(body), created_by=member)
    WorkspaceCost.objects.create(workspace=workspace, instance_prices={"ecs.g6.large": "1.5"})
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new?template={template.pk}")
    # The workspace's prices (jobs.costs): 3 pods of ecs.g6.large at 1.5 an hour.
    expect(page.locator("#cost-estimate")).to_contain_text("Estimated 4.50 CNY per hour")

    roles = page.locator("#list-roles")
    expect(roles.locator(".row")).to_have_count(2)
    expect(roles.locator("button")).to_have_count(0)
    expect(page.locator("#add-roles")).to_have_count(0)
    badge = page.locator("#lock-list-roles")
    expect(badge).to_be_visible()
    expect(badge).to_have_text("Locked by the template")
    expect(roles.locator(".lock-note")).to_have_count(1)  # once for the list, not per row or field
    expect(page.locator("#id_resources-roles-1-count")).to_have_accessible_description(
        re.compile("Locked by the template"))
    expect(page.locator("#id_resources-roles-1-count")).to_have_value("2")
    command = page.locator("#lock-environment-command")
    expect(command).to_be_visible()
    expect(page.locator("#id_environment-command")).to_have_accessible_description("Locked by the template")
    # Lists the template leaves open keep their buttons.
    expect(page.locator("#add-tags")).to_be_visible()
    expect(page.locator("#add-datasets")).to_be_visible()
    expect(page.locator("#lock-list-tags")).to_have_count(0)
    # The estimate follows a field outside Resources too (QA: it changed only when focus left that section).
    page.fill("#id_sweep", "LR = 0.1, 0.2")
    expect(page.locator("#cost-estimate")).to_contain_text("for each of 2 trials (9.00 CNY per hour in all)")


def test_the_wizard_offers_only_what_the_server_takes_for_lingjun_spot_and_a_public_dataset(stack, member, page):
    """Audit: Lingjun spot offered the bid "By price", the vSwitch help said "Optional" where it is required, and a
    public dataset stayed on Access "Dataset default": all three refused by the server only at Submit."""
    sign_in(page, stack.url, member.username, PASSWORD)
    start_job(page, stack.url, "public-dataset-e2e", "echo hi")
    switch_help = page.locator("#f-vpc-switch_id .help")
    expect(switch_help).to_have_text("Empty lets the system pick one by inventory. Lingjun preemptible resources "
                                     "require one.")
    page.check("input[name=resources-source][value=spot]")
    settle(page)
    expect(page.locator("input[name=resources-bid_method]")).to_have_count(2)
    page.check("input[name=resources-resource_type][value=lingjun]")
    settle(page)
    expect(page.locator("input[name=resources-bid_method]")).to_have_count(1)
    expect(page.locator("input[name=resources-bid_method][value=price]")).to_have_count(0)
    expect(switch_help).to_have_text("Required for Lingjun preemptible resources.")
    page.check("input[name=resources-source][value=public]")  # the VPC section follows the source too
    settle(page)
    expect(switch_help).to_contain_text("Empty lets the system pick one")
    page.check("input[name=resources-resource_type][value=general]")
    settle(page)

    add_dataset(page, "d-public", "/mnt/public")
    access = page.locator("#id_environment-datasets-0-read_only")
    expect(access).to_have_value("")
    page.select_option("#id_environment-datasets-0-kind", "public")
    settle(page)
    expect(access).to_have_value("true")
    expect(access.locator("option")).to_have_count(1)
    expect(page.locator("#id_environment-datasets-0-id")).to_have_value("d-public")
    expect(page.locator("#api-json")).to_contain_text('"MountAccess": "RO"', timeout=20_000)
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    settle(page)
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job = Job.objects.get(display_name="public-dataset-e2e")
    assert job.body["DataSources"] == [{"DataSourceId": "d-public", "MountPath": "/mnt/public", "MountAccess": "RO"}]



def test_a_choice_that_no_longer_offers_a_kept_value_says_so_at_it_and_the_message_goes_when_it_applies_again(
        stack, member, page):
    """QA: after a Submit that found problems (a new page: nothing counts as touched), choosing Lingjun showed the
    bid by price still chosen without a word, and a dataset switched to public stayed read-write without one, until
    their section was checked again. The message is at the kept value at once and goes when a switch lifts it."""
    sign_in(page, stack.url, member.username, PASSWORD)
    start_job(page, stack.url, "kept-values", "echo hi")
    add_dataset(page, "d-kept", "/mnt/kept")
    page.select_option("#id_environment-datasets-0-read_only", "false")
    page.check("input[name=resources-source][value=spot]")
    settle(page)
    page.check("input[name=resources-bid_method][value=price]")
    settle(page)
    page.fill("#id_resources-spot_price", "0.5")
    page.click("#wizard-form .actions button[type=submit]")  # no instance type: refused, the page comes back
    expect(page.locator("#error-summary")).to_contain_text("Choose an instance type")
    bid_error, access_error = page.locator("#err-resources-bid_method"), page.locator(
        "#err-environment-datasets-0-read_only")
    expect(bid_error).to_have_count(0)
    expect(access_error).to_have_count(0)

    page.check("input[name=resources-resource_type][value=lingjun]")
    settle(page)
    expect(page.locator("input[name=resources-bid_method][value=price]")).to_be_checked()
    expect(bid_error).to_have_text("Lingjun preemptible resources only support bidding by discount.")
    expect(page.locator("input[name=resources-bid_method][value=price]")).to_have_attribute("aria-invalid", "true")
    page.check("input[name=resources-resource_type][value=general]")
    settle(page)
    expect(bid_error).to_have_count(0)

    page.select_option("#id_environment-datasets-0-kind", "public")
    settle(page)
    expect(page.locator("#id_environment-datasets-0-read_only")).to_have_value("false")
    expect(access_error).to_have_text("Public datasets can only be mounted read-only.")
    page.select_option("#id_environment-datasets-0-kind", "custom")
    settle(page)
    expect(access_error).to_have_count(0)


def test_remove_by_keyboard_keeps_the_focus_in_the_list(stack, member, page):
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    add = page.locator("#add-tags")
    for _ in range(3):
        add.focus()
        page.keyboard.press("Enter")
        settle(page)
    expect(page.locator("#list-tags .row")).to_have_count(3)
    for i in range(3):
        page.fill(f"#id_basic-tags-{i}-key", f"k{i}")

    page.locator("#remove-tags-1").focus()
    page.keyboard.press("Enter")
    settle(page)
    expect(page.locator("#list-tags .row")).to_have_count(2)
    expect(page.locator("#id_basic-tags-1-key")).to_have_value("k2")
    expect(page.locator("#remove-tags-1")).to_be_focused()  # the row that took the removed one's place

    page.keyboard.press("Enter")  # the last row now: the focus goes to Add
    settle(page)
    expect(page.locator("#list-tags .row")).to_have_count(1)
    expect(page.locator("#add-tags")).to_be_focused()


def test_errors_quoting_a_long_value_wrap_inside_a_phone_wide_page(stack, member, page):
    """QA at 390 px: a refused form whose messages quote what was typed without a break in it ("The tag key 'kkk…'
    is used twice", 128 characters) made the page 1118 px wide, the whole wizard with it."""
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    for _ in range(2):
        page.click("#add-tags")
        settle(page)
    key = "k" * 128  # the longest tag key, twice
    page.fill("#id_basic-tags-0-key", key)
    page.fill("#id_basic-tags-1-key", key)
    page.click("#wizard-form .actions button[type=submit]")
    settle(page)
    expect(page.locator("#f-basic-tags-1-key .error")).to_contain_text(f"The tag key '{key}' is used twice.")
    expect(page.locator(".error-summary")).to_contain_text(key)
    wider = page.evaluate("Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")
    assert wider == 0, f"the refused wizard is {wider} px wider than 390 px"


def test_a_secret_variable_turns_into_a_password_field_survives_row_changes_and_reaches_the_pod(stack, member, page):
    import hashlib

    secret = "wandb-browser-" + hashlib.sha256(b"secret-env").hexdigest()[:16]
    sign_in(page, stack.url, member.username, PASSWORD)
    start_job(page, stack.url, "secret-env-e2e", 'echo "sha=$(printf %s "$WANDB_API_KEY" | sha256sum)"')
    page.click("#sec-environment details.more > summary")
    page.click("button[name=_add][value=envs]")
    settle(page)
    page.fill("#id_environment-envs-0-key", "WANDB_API_KEY")
    # Ticking Secret re-renders the section: the value becomes a password field.
    page.check("#id_environment-envs-0-secret")
    settle(page)
    value = page.locator("input[name=environment-envs-0-value]")
    expect(value).to_have_attribute("type", "password")
    value.fill(secret)
    # Another row re-renders the section again: the typed secret stays in the browser, never from the server.
    page.click("button[name=_add][value=envs]")
    settle(page)
    expect(page.locator("input[name=environment-envs-0-value]")).to_have_value(secret)
    page.fill("#id_environment-envs-1-key", "HF_TOKEN")
    page.fill("#id_environment-envs-1-value", "x")
    page.click("#row-envs-1 button[name=_remove]")
    settle(page)
    expect(page.locator("input[name=environment-envs-0-value]")).to_have_value(secret)
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    settle(page)
    expect(page.locator("#api-json")).to_contain_text('"WANDB_API_KEY": "********"')
    assert secret not in page.content()
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job = wait_for_status(Job.objects.get(display_name="secret-env-e2e"), "Succeeded")
    assert job.body["Envs"] == {"WANDB_API_KEY": "********"} and job.sealed_secrets == ""
    page.goto(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs")
    expect(page.locator("body")).to_contain_text(f"sha={hashlib.sha256(secret.encode()).hexdigest()}")



def submit_a_clone_go_back_and_submit_again(stack, workspace, member, page) -> tuple[Job, str]:
    """Clone a failed job, fix its command, Submit, Back, Submit again: (the clone, the command Back showed)."""
    from jobs.forms import wizard as glue
    from tests.support.wizard import form_data

    wizard = glue.Wizard(form_data(basic__name="back-source", environment__command="python broken.py"),
                         context=glue.context_for(workspace))
    source = Job.objects.create(workspace=workspace, owner=member, display_name="back-source", job_type="PyTorchJob",
                                body=wizard.body(workspace.dlc_workspace_id), hints=wizard.hints(), status="Failed")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new?clone={source.pk}")
    page.fill("#id_environment-command", "python fixed.py")
    settle(page)
    page.click(".actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    # By its source, not "every other job": a stray row of another test must not be read as a duplicate.
    clone = Job.objects.filter(cloned_from=source).get()
    assert clone.body["UserCommand"] == "python fixed.py"
    page.go_back(wait_until="commit")  # a page restored from the back/forward cache fires no "load"
    assert re.search(r"/jobs/new\?clone=\d+$", page.url)
    page.wait_for_selector("#wizard-form .actions button[type=submit]")
    shown = page.input_value("#id_environment-command")
    page.click(".actions button[type=submit]")
    page.wait_for_url(f"{stack.url}{clone.get_absolute_url()}")
    expect(page.locator(".messages")).to_contain_text("This form was already submitted: here is its job.")
    assert Job.objects.filter(cloned_from=source).count() == 1, "no second job"
    return clone, shown


def test_back_after_submitting_a_clone_shows_the_edit_and_submitting_again_makes_no_second_job(
        stack, workspace, member, bfcache_page):
    """QA: Back after Submit, then Submit again, made a second job, with the source's command. The wizard page may
    be kept by the browser (no `Cache-Control: no-store`): Chromium's back/forward cache shows the edited form, and
    its one-time token sends the second Submit to the job the first one made."""
    _clone, shown = submit_a_clone_go_back_and_submit_again(stack, workspace, member, bfcache_page)
    assert shown == "python fixed.py"


def test_back_without_the_back_forward_cache_still_makes_no_second_job(stack, workspace, member, page):
    """Without the back/forward cache (Playwright's default), Back re-creates the page from the HTTP cache's copy:
    the source's command (the edit lived in a control an HTMX re-render replaced, which the browser's form restore
    skips) but the same token, so Submit again still lands on the job the first Submit made."""
    _clone, shown = submit_a_clone_go_back_and_submit_again(stack, workspace, member, page)
    assert shown in ("python broken.py", "python fixed.py")


def test_without_javascript_back_after_submit_then_submit_again_makes_no_second_job(stack, member, no_js_page):
    """QA: without JavaScript and the back/forward cache, Back after Submit asked the server for /jobs/new again (the
    form posted to that URL, and a browser drops its cached copy of a URL a form posts to), so the page came back
    with a new token and its Submit made a second job. The form now posts elsewhere: Back shows the cached page."""
    page = no_js_page
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    page.fill("#id_basic-name", "no-js-back")
    page.select_option("#id_environment-image", index=1)  # the first official image: no Apply needed
    page.fill("#id_environment-command", "echo once")
    page.select_option("#id_resources-roles-0-instance_type", "ecs.g6.large")
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job = Job.objects.get(display_name="no-js-back")
    page.go_back()
    page.click("#wizard-form .actions button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    assert page.url == f"{stack.url}{job.get_absolute_url()}", "sent to the job the first Submit made"
    expect(page.locator(".messages")).to_contain_text("This form was already submitted: here is its job.")
    assert Job.objects.filter(display_name="no-js-back").count() == 1, "no second job"
