"""The walking skeleton end to end: web form -> Job row -> Celery worker -> CreateJob on localdlc ->
beat sync -> the list row says Succeeded. Real Redis, worker, beat, web server and localdlc processes."""

import re

import pytest
import requests

from tests.conftest import PASSWORD
from tests.support.waiting import wait_for
from tests.support.wizard import form_data

pytestmark = pytest.mark.integration


def signed_in_session(base_url: str, username: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{base_url}/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(
        f"{base_url}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base_url}/accounts/login/"},
    )
    assert answer.url == f"{base_url}/", "sign-in failed"
    return session


def csrf(session: requests.Session, url: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', session.get(url).text).group(1)


def test_job_submitted_through_the_web_form_succeeds(stack, member):
    from jobs.models import Job

    web = signed_in_session(stack.url, member.username)
    create_url = f"{stack.url}/jobs/new"
    answer = web.post(
        create_url,
        # The create-job wizard's fields (section-field names), as the page posts them.
        data={
            **form_data(basic__name="skeleton-echo", environment__image="registry.example/pytorch:2.3",
                        resources__roles__0__instance_type="ecs.g6.large",
                        environment__command="echo hello; sleep 1"),
            "csrfmiddlewaretoken": csrf(web, create_url),
        },
        headers={"Referer": create_url},
    )
    assert answer.status_code == 200
    job = Job.objects.get(display_name="skeleton-echo")
    assert answer.url.endswith(job.get_absolute_url())

    def row():
        html = web.get(f"{stack.url}/jobs/{job.pk}/row").text
        return "Succeeded" in html and html

    html = wait_for(row, timeout=90)
    assert 'data-status="Succeeded"' in html
    assert "hx-trigger" not in html, "a finished row must stop polling"
    job.refresh_from_db()
    assert job.dlc_job_id and job.status == "Succeeded"
    assert any(h["Status"] == "Running" for h in job.status_history)
    logs = web.get(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs").text
    assert "hello" in logs


def test_invalid_form_is_refused_at_the_field_and_nothing_is_saved(stack, member):
    from jobs.models import Job

    web = signed_in_session(stack.url, member.username)
    create_url = f"{stack.url}/jobs/new"
    answer = web.post(
        create_url,
        data={**form_data(basic__name="bad name!", environment__image="x", resources__roles__0__count="0",
                           environment__command=""),
              "csrfmiddlewaretoken": csrf(web, create_url)},
        headers={"Referer": create_url},
    )
    assert answer.status_code == 200
    assert "may contain only ASCII letters (a-z, A-Z), digits" in answer.text
    assert "The number of nodes must be at least 1." in answer.text
    assert Job.objects.count() == 0


def test_healthz_reports_every_component_up(stack, workspace):
    answer = requests.get(f"{stack.url}/healthz", timeout=30)
    report = answer.json()
    assert answer.status_code == 200, report
    # Anonymous callers (load balancers) get the flags only: no workspace names, no error texts.
    assert report["checks"] == {name: {"ok": True} for name in
                                ("database", "redis", "worker", f"workspace:{workspace.pk}")}


def test_healthz_names_workspaces_and_errors_for_staff_only(stack, workspace):
    from django.contrib.auth import get_user_model

    from jobs.models import Workspace

    Workspace.objects.create(name="Unreachable", backend=Workspace.BACKEND_LOCAL, endpoint="127.0.0.1:9")
    get_user_model().objects.create_user("ops", password=PASSWORD, is_staff=True)
    anonymous = requests.get(f"{stack.url}/healthz", timeout=30)
    assert anonymous.status_code == 503
    assert "Unreachable" not in anonymous.text and "error" not in anonymous.text
    staff = signed_in_session(stack.url, "ops").get(f"{stack.url}/healthz", timeout=30)
    assert staff.status_code == 503
    failing = staff.json()["checks"]["workspace:Unreachable"]
    assert failing["ok"] is False and failing["error"]
    assert staff.json()["checks"]["workspace:Local"] == {"ok": True}
