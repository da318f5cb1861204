"""The schedule form in Chromium against the real stack: the cron field shows only for the kind "Cron expression",
and its preview of the next runs follows what is typed (htmx), with the rule's error when runs are too close; a
schedule edited from the Schedules page shows its new timing and next run; a schedule's job configuration edited
in the wizard is what its next run starts, its secret kept."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from tests import portal_fixtures as pf
from tests.conftest import PASSWORD
from tests.support.browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SHOTS = os.environ.get("DLC_SCREENSHOTS", "")  # a folder: the test saves its pages there at 1280 and 390 px


def nightly(workspace, member):
    """A member's daily 02:00 schedule, its next run 12 h away."""
    from datetime import UTC, datetime, time, timedelta

    from jobs.models import Schedule
    from tests.test_lifecycle import job_body

    return Schedule.objects.create(
        workspace=workspace, owner=member, name="nightly", body=job_body("echo nightly"), kind="daily",
        at=time(2, 0), next_run_at=datetime.now(UTC) + timedelta(hours=12))


def shoot(page, name: str) -> None:
    """Screenshots to look at (not compared)."""
    if not SHOTS:
        return
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=os.path.join(SHOTS, f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 720})


def test_the_cron_field_shows_for_its_kind_and_previews_the_next_runs_as_typed(stack, workspace, member, page):
    job = pf.make_job(workspace, member, "cron-source", status="Succeeded", pods=[])
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}/schedule")
    expect(page.locator("#field-cron")).to_be_hidden()
    expect(page.locator("#field-at")).to_be_visible()  # Daily, the initial kind
    expect(page.locator("#field-every_hours")).to_be_hidden()
    page.check("#id_kind input[value=cron]")
    expect(page.locator("#field-cron")).to_be_visible()
    for other in ("#field-every_hours", "#field-at", "#field-weekdays"):  # only the chosen kind's fields
        expect(page.locator(other)).to_be_hidden()
    page.fill("#id_cron", "0 9 * * MON-FRI")
    preview = page.locator("#cron-preview")
    expect(preview.locator("time")).to_have_count(3)
    expect(preview).to_contain_text("09:00")
    shoot(page, "schedule-cron")
    page.fill("#id_cron", "*/5 * * * *")
    expect(preview.locator(".error")).to_contain_text("minutes apart")
    expect(preview.locator("time")).to_have_count(0)
    page.click("#schedule-save")  # sent: the error once, at the field, and no preview
    expect(page.locator("#field-cron .error")).to_have_count(1)
    expect(page.locator("#field-cron")).not_to_contain_text("Next runs")
    shoot(page, "schedule-cron-error")
    page.check("#id_kind input[value=daily]")
    expect(page.locator("#field-cron")).to_be_hidden()
    expect(preview).to_be_hidden()


def test_editing_a_daily_schedule_to_weekly_shows_its_new_next_run(stack, workspace, member, page):
    from jobs import schedules

    schedule = nightly(workspace, member)
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/workspaces/{workspace.pk}/schedules")
    card = page.locator(f"#schedule-{schedule.pk}")
    expect(card.locator(".schedule-recurrence")).to_contain_text("Daily at 02:00")
    card.locator(".schedule-edit").click()
    expect(page.locator("#id_name")).to_have_value("nightly")
    expect(page.locator("#id_kind input[value=daily]")).to_be_checked()
    expect(page.locator("#field-weekdays")).to_be_hidden()
    page.check("#id_kind input[value=weekly]")
    expect(page.locator("#field-weekdays")).to_be_visible()
    page.check("#id_weekdays input[value=tue]")
    page.check("#id_weekdays input[value=sat]")
    page.fill("#id_at", "06:45")
    shoot(page, "schedule-edit")
    page.click("#schedule-save")
    expect(page.locator(".messages")).to_contain_text("Schedule nightly saved: Weekly on Tue, Sat at 06:45")
    schedule.refresh_from_db()
    local = schedule.next_run_at.astimezone(schedules.zone())
    assert (local.weekday() in (1, 5), local.hour, local.minute) == (True, 6, 45)
    card = page.locator(f"#schedule-{schedule.pk}")
    expect(card.locator(".schedule-recurrence")).to_contain_text("Weekly on Tue, Sat at 06:45")
    expect(card.locator(".schedule-next")).to_contain_text(local.strftime("%Y-%m-%d %H:%M"))
    shoot(page, "schedule-edited")


def test_edit_configuration_changes_the_command_the_next_run_starts_and_keeps_its_secret(stack, workspace, member,
                                                                                       page, settings):
    from datetime import UTC, datetime, timedelta

    from jobs import schedules, secretbox
    from jobs.models import Job, Schedule, ScheduledRun
    from tests.support.waiting import wait_for
    from tests.test_lifecycle import job_body

    # The stack's secret box key (a file in its data dir): what this process seals, its web server can unseal.
    settings.DATA_DIR = stack.data_dir
    chosen, errors = schedules.parse_settings("nightly", "daily", None, "02:00")
    body = {**job_body("echo old"), "SecretEnvs": {"WANDB_API_KEY": "wandb-browser-secret"}}
    schedule, errors = schedules.create(member, workspace, body, chosen)
    assert not errors, errors
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/workspaces/{workspace.pk}/schedules")
    page.locator(f"#schedule-{schedule.pk} .schedule-edit-config").click()
    expect(page.locator("h1")).to_contain_text("Edit the configuration of schedule nightly")
    expect(page.locator("#sweep-block")).to_have_count(0)
    expect(page.locator("#run-after-block")).to_have_count(0)
    expect(page.locator("#kept-secrets")).to_contain_text("WANDB_API_KEY")
    expect(page.locator("#id_environment-command")).to_have_value("echo old")
    page.fill("#id_environment-command", "echo new from the wizard")
    shoot(page, "schedule-config")
    page.click("#schedule-config-save")
    expect(page.locator(".messages")).to_contain_text("Schedule nightly: configuration saved")
    assert page.url.endswith(f"/workspaces/{workspace.pk}/schedules")
    assert Job.objects.count() == 0, "saving submits nothing"
    schedule.refresh_from_db()
    assert secretbox.unseal(schedule.sealed_secrets) == {"env:WANDB_API_KEY": "wandb-browser-secret"}, "kept"
    # The slot made due: the stack's beat (every 2 s) runs it, and its job is the new command with the secret.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    run = wait_for(lambda: ScheduledRun.objects.filter(schedule=schedule, job__isnull=False).first(), timeout=30,
                   what="the beat ran the schedule")
    assert run.job.body["UserCommand"] == "echo new from the wizard"
    assert run.job.body["Envs"] == {"WANDB_API_KEY": "********"}


def test_a_refused_save_puts_the_focus_on_the_first_field_to_fix(stack, workspace, member, page):
    """Without it the focus was on <body>: a keyboard user started again from the top of the page."""
    schedule = nightly(workspace, member)
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/workspaces/{workspace.pk}/schedules/{schedule.pk}/edit")
    page.fill("#id_name", "")
    page.check("#id_kind input[value=weekly]")
    page.click("#schedule-save")
    expect(page.locator("#field-name .error")).to_be_visible()
    expect(page.locator("#id_name")).to_be_focused()
    page.fill("#id_name", "nightly")
    page.click("#schedule-save")  # the name fixed: the weekdays are next
    expect(page.locator("#field-weekdays .error")).to_contain_text("Choose at least one weekday.")
    expect(page.locator("#id_weekdays input").first).to_be_focused()
    job = pf.make_job(workspace, member, "focus-source", status="Succeeded", pods=[])
    page.goto(f"{stack.url}/jobs/{job.pk}/schedule")
    page.check("#id_kind input[value=cron]")
    page.fill("#id_cron", "61 * * * *")
    page.click("#schedule-save")
    expect(page.locator("#field-cron .error")).to_have_count(1)
    expect(page.locator("#id_cron")).to_be_focused()
