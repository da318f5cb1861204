"""XSS payloads in a job's name, tag, description and command, in the log lines its pod prints, and in a
template name and the audit log are shown as text in Chromium: no dialog opens and no injected code runs.

The job with the payload in its command really runs on localdlc (submitted through the JSON API), so the
log lines come back from the backend; the name payload, which the console's own name rule refuses, comes in
as DLC jobs created elsewhere do: as an imported row.
"""

from __future__ import annotations

import json
import time

import pytest
import requests

from tests.conftest import PASSWORD
from tests.support.browser import sign_in
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]

IMG = '<img src=x onerror="window.__xss=1;alert(1)">'
SCRIPT = "<script>window.__xss=2;alert(2)</script>"
SVG = "<svg onload=alert(3)>"


def test_payloads_render_as_text_everywhere(stack, member, workspace, page):
    from jobs import apitokens, templates_lib
    from jobs.models import Job, Membership
    from tests.portal_fixtures import BODY

    Membership.objects.filter(user=member).update(role="admin")
    _, token = apitokens.create_token(member, "xss")
    body = {
        **BODY, "DisplayName": "xss-job", "Description": f"desc {IMG}",
        "Settings": {"Tags": {"note": SCRIPT}},
        "UserCommand": f"echo 'log {IMG}'; echo 'log {SCRIPT}'; echo 'log {SVG}'",
    }
    answer = requests.post(f"{stack.url}/api/v1/jobs?workspace={workspace.pk}", json=body,
                           headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 201, answer.text
    job = Job.objects.get(pk=answer.json()["id"])
    imported = Job.objects.create(workspace=workspace, display_name=f"name {SVG}", imported=True, body={},
                                  status="Succeeded", dlc_job_id="dlc-elsewhere")
    templates_lib.save(workspace, member, f"tpl {SCRIPT}", {"basic": {"description": IMG}})

    def finished():
        job.refresh_from_db()
        return job.status == "Succeeded" and job.pods

    wait_for(finished, timeout=90, what="the jobs finish")

    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    # The control: the same payload, rendered as markup, does run and is seen by these checks.
    page.set_content(f"<body>{IMG}</body>")
    wait_for(lambda: dialogs, timeout=10)
    assert page.evaluate("window.__xss") == 1
    dialogs.clear()
    sign_in(page, stack.url, member.username, PASSWORD)

    def no_execution(where):
        assert dialogs == [], f"{where}: a dialog opened: {dialogs}"
        assert page.evaluate("window.__xss") is None, f"{where}: injected code ran"
        assert page.locator("img[src='x'], svg[onload]").count() == 0, f"{where}: injected markup exists"

    page.goto(f"{stack.url}/")
    page.get_by_text(f"name {SVG}", exact=True).wait_for()
    no_execution("job list")

    page.goto(f"{stack.url}/jobs/{job.pk}")
    page.get_by_text(f"desc {IMG}").first.wait_for()
    page.get_by_text(SCRIPT).first.wait_for()
    page.locator(".log", has_text=f"log {IMG}").first.wait_for(timeout=30_000)
    page.locator(".log", has_text=f"log {SVG}").first.wait_for()
    time.sleep(1)  # a live-tail poll or two
    no_execution("job page")

    page.goto(f"{stack.url}/jobs/{imported.pk}")
    page.locator("h1", has_text=f"name {SVG}").wait_for()
    no_execution("imported job page")

    page.goto(f"{stack.url}/templates")
    page.get_by_text(f"tpl {SCRIPT}").wait_for()
    page.get_by_text(f"tpl {SCRIPT}").click()
    page.locator("h1", has_text=f"tpl {SCRIPT}").wait_for()
    no_execution("templates")

    page.goto(f"{stack.url}/workspaces/{workspace.pk}/audit")
    page.get_by_text("xss-job").first.wait_for()
    page.get_by_text(f"tpl {SCRIPT}").first.wait_for()
    no_execution("audit log")

    page.goto(f"{stack.url}/api/v1/jobs/{job.pk}")
    assert json.loads(page.locator("pre").first.inner_text())["body"]["Description"] == f"desc {IMG}"
    no_execution("API answer")
