"""The wizard's suggestions (jobs.suggestions) in Chromium: the free-text inputs resolve their list= to a datalist of
what the workspace's jobs used, also after HTMX re-renders a section."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.conftest import PASSWORD
from tests.support.browser import settle, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.browser]

OPTIONS = "(selector) => [...document.querySelector(selector).list.options].map(o => o.value)"


def test_free_text_fields_offer_what_the_workspaces_jobs_used(stack, workspace, member, page):
    Job.objects.create(workspace=workspace, owner=member, display_name="used", status="Succeeded", body={
        "DisplayName": "used", "JobType": "PyTorchJob", "UserCommand": "true",
        "JobSpecs": [{"Type": "Worker", "Image": "reg.example/team/train:7", "PodCount": 1, "EcsSpec": "ecs.g6.large"}],
        "DataSources": [{"DataSourceId": "d-team", "MountPath": "/mnt/team-data"}],
        "UserVpc": {"VpcId": "vpc-team", "SwitchId": "vsw-team", "SecurityGroupId": "sg-team"}})
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/new")
    # In, not equal: jobs other tests left in the session stack's workspace are suggestions too.
    assert "vpc-team" in page.evaluate(OPTIONS, "#id_vpc-vpc_id")
    page.check("input[name=environment-image_type][value=custom]")  # a typed image instead of the official list
    settle(page)
    page.click("button[name=_add][value=datasets]")
    settle(page)
    assert "reg.example/team/train:7" in page.evaluate(OPTIONS, "#id_environment-image")
    assert "d-team" in page.evaluate(OPTIONS, "#id_environment-datasets-0-id")
    assert "/mnt/team-data" in page.evaluate(OPTIONS, "#id_environment-datasets-0-mount_path")
    assert page.evaluate("document.querySelectorAll('datalist[id^=suggest-]').length") == \
        page.evaluate("new Set([...document.querySelectorAll('datalist[id^=suggest-]')].map(d => d.id)).size")
    page.fill("#id_environment-datasets-0-id", "d-t")
    expect(page.locator("#id_environment-datasets-0-id")).to_have_attribute("autocomplete", "off")
