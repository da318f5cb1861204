"""No secret in any page, export, API answer, clone, template, database column or log line.

Known secret values are planted through the real flows against the real stack (web, worker, beat, Redis,
localdlc): registry passwords typed into the wizard, sent to the API, sent again for a clone and pasted into
an import; a RayRedisPassword; an API token; a wrong password typed at sign-in; and the localdlc AccessKey
secret the console signs its calls with. The jobs run to the end (so the worker has unsealed and erased
what it carried); and a webhook whose URL carries its receiver's token (as Slack's and Discord's do), told of
those ends by the worker. Then every page reachable from the console's links and every known URL is fetched,
every table and column is dumped (sessions decoded, archived logs decompressed), and every log file of the
stack is read: none may contain any of the values.
"""

from __future__ import annotations

import json
import re
import secrets
import zlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
import requests

from tests.conftest import PASSWORD
from tests.support.waiting import wait_for
from tests.test_notify import fixture_receiver  # noqa: F401 - registers the fixture by name

pytestmark = pytest.mark.integration

MARK = secrets.token_hex(4)
REGISTRY_WIZARD = f"RegWizard-{MARK}-pw"
REGISTRY_API = f"RegApi-{MARK}-pw"
REGISTRY_CLONE = f"RegClone-{MARK}-pw"
REGISTRY_IMPORT = f"RegImport-{MARK}-pw"
RAY_REDIS = f"RayRedis-{MARK}-pw"
RAY_REDIS_WIZARD = f"RayWizard-{MARK}-pw"
LOGIN_TYPO = f"LoginTypo-{MARK}-pw"
WEBHOOK_TOKEN = f"HookToken-{MARK}-tk"


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "hx-get", "src") and value:
                self.found.append(value)


def csrf_of(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def sign_in(base: str, username: str) -> requests.Session:
    web = requests.Session()
    web.headers["Referer"] = f"{base}/"
    token = csrf_of(web.get(f"{base}/accounts/login/").text)
    web.post(f"{base}/accounts/login/", data={"username": username, "password": LOGIN_TYPO,
                                              "csrfmiddlewaretoken": token})
    token = csrf_of(web.get(f"{base}/accounts/login/").text)
    answer = web.post(f"{base}/accounts/login/", data={"username": username, "password": PASSWORD,
                                                       "csrfmiddlewaretoken": token})
    assert answer.url == f"{base}/", "sign-in failed"
    return web


def post_form(web: requests.Session, url: str, data: dict, page_url: str | None = None, **kwargs):
    token = csrf_of(web.get(page_url or url).text)
    return web.post(url, data={**data, "csrfmiddlewaretoken": token}, **kwargs)


def private_body(name: str, password: str) -> dict:
    return {"DisplayName": name, "JobType": "PyTorchJob", "UserCommand": "echo ok; sleep 1",
            "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/team/train:1.0", "PodCount": 1,
                          "EcsSpec": "ecs.g6.large",
                          "ImageConfig": {"Username": "robot", "Password": password}}]}


def test_planted_secrets_appear_nowhere(stack, member, workspace, receiver):
    from django.db import connection

    from jobs import spec
    from jobs.forms import wizard as glue
    from jobs.models import Job, Membership

    Membership.objects.filter(user=member).update(role="admin")
    base = stack.url
    web = sign_in(base, member.username)

    # An API token, created on its page and shown once by the page the create redirects to (the session carried
    # it there; the database dump below decodes the sessions too).
    page = post_form(web, f"{base}/account/api", {"name": "ci"})
    assert [r.status_code for r in page.history] == [302], "Post/Redirect/Get"
    api_token = re.search(r'id="token-value">(dlcc_[A-Za-z0-9_-]+)<', page.text).group(1)
    bearer = {"Authorization": f"Bearer {api_token}"}

    # A webhook whose URL holds its receiver's token, told of every job's success below; typed first into a form
    # refused for another field (the page sent back must not echo it), then saved, then saved again unchanged.
    hook_path = f"/services/T0/B0/{WEBHOOK_TOKEN}"
    notifications = f"{base}/workspaces/{workspace.pk}/notifications"
    hook = {"name": "chat", "url": receiver.url(hook_path), "events": ["Succeeded"], "enabled": "on"}
    refused = post_form(web, notifications, {**hook, "events": []})
    assert refused.status_code == 200
    assert post_form(web, notifications, hook).status_code == 200
    from jobs.models import Webhook

    hook_edit = f"{notifications}/{Webhook.objects.get(workspace=workspace, name='chat').pk}"
    assert post_form(web, hook_edit, {**hook, "url": ""}).status_code == 200

    # The wizard, with a registry password.
    s = spec.inverse(private_body("wizard-private", "x"))
    s["environment"]["registry_password"] = ""
    data = {**glue.sections_to_data(s), glue.PASSWORD: REGISTRY_WIZARD, "_workspace": workspace.pk}
    answer = post_form(web, f"{base}/jobs/new", data)
    assert answer.status_code == 200 and "/jobs/" in answer.url, answer.text[:2000]
    wizard_job = Job.objects.get(display_name="wizard-private")
    # ... and "Save as template" from the same wizard content.
    post_form(web, f"{base}/templates/from-wizard", {**data, "_template_name": "private-tpl"},
              page_url=f"{base}/jobs/new")

    # The wizard again: a Ray job whose advanced configuration carries a RayRedisPassword.
    ray_sections = spec.inverse({"DisplayName": "ray-wizard", "JobType": "RayJob", "UserCommand": "echo ok",
                                 "JobSpecs": [{"Type": "Head", "Image": "registry.example.com/ray:2", "PodCount": 1,
                                               "EcsSpec": "ecs.g6.large"}]})
    ray_sections["resources"]["advanced"] = f"RayRedisPassword={RAY_REDIS_WIZARD}"
    answer = post_form(web, f"{base}/jobs/new", {**glue.sections_to_data(ray_sections), "_workspace": workspace.pk})
    assert answer.status_code == 200 and "/jobs/" in answer.url, answer.text[:2000]

    # The API, with a registry password, and a Ray job with a RayRedisPassword.
    api_job = requests.post(f"{base}/api/v1/jobs?workspace={workspace.pk}", headers=bearer, timeout=30,
                            json=private_body("api-private", REGISTRY_API)).json()
    ray = {"DisplayName": "ray-private", "JobType": "RayJob", "UserCommand": "echo ok; sleep 1",
           "JobSpecs": [{"Type": "Head", "Image": "registry.example.com/ray:2", "PodCount": 1,
                         "EcsSpec": "ecs.g6.large"}],
           "Settings": {"AdvancedSettings": {"RayRedisPassword": RAY_REDIS}}}
    ray_answer = requests.post(f"{base}/api/v1/jobs?workspace={workspace.pk}", headers=bearer, json=ray, timeout=30)
    assert ray_answer.status_code == 201, ray_answer.text
    # A clone, which must be given the password again; and the clone page of the wizard.
    clone = requests.post(f"{base}/api/v1/jobs/{api_job['id']}/clone", headers=bearer, timeout=30,
                          json={"registry_password": REGISTRY_CLONE})
    assert clone.status_code == 201, clone.text
    # An import with a password in the pasted JSON.
    post_form(web, f"{base}/jobs/import", {"format": "auto", "job_type": "TFJob",
                                           "text": json.dumps(private_body("imported-private", REGISTRY_IMPORT))})
    # A template saved from a job's page.
    post_form(web, f"{base}/templates/save?job={wizard_job.pk}", {"name": "from-job", "job": wizard_job.pk})

    def all_done():
        jobs = list(Job.objects.filter(workspace=workspace))
        return len(jobs) >= 5 and all(j.status in ("Succeeded", "Failed", "Stopped", "SubmitFailed") for j in jobs)

    wait_for(all_done, timeout=120, what="every job done")
    jobs = list(Job.objects.filter(workspace=workspace))
    assert {j.status for j in jobs} == {"Succeeded"}, [(j.display_name, j.status, j.submit_error) for j in jobs]
    # The worker told the webhook (its code and logs are searched below with the POST behind them).
    wait_for(lambda: receiver.posts(hook_path), timeout=60, what="a POST to the webhook's whole URL")

    planted = [REGISTRY_WIZARD, REGISTRY_API, REGISTRY_CLONE, REGISTRY_IMPORT, RAY_REDIS, RAY_REDIS_WIZARD,
               LOGIN_TYPO, api_token, stack.access_key_secret, WEBHOOK_TOKEN]
    found: list[str] = []

    def search(where: str, text: str) -> None:
        for value in planted:
            if value in text:
                found.append(f"{where} contains {value[:12]}…")

    search("the refused webhook form", refused.text)

    # Pages: every known URL plus everything linked from them, as the signed-in admin.
    start = ["/", "/workspaces", "/templates", "/account/api", "/jobs/import", "/api/v1/jobs", "/api/v1/workspaces",
             "/api/v1/openapi.json", "/healthz", f"/workspaces/{workspace.pk}/settings",
             f"/workspaces/{workspace.pk}/members", f"/workspaces/{workspace.pk}/policy",
             f"/workspaces/{workspace.pk}/audit", "/jobs/new", notifications, hook_edit]
    for job in jobs:
        start += [f"/jobs/{job.pk}", f"/jobs/{job.pk}/logs", f"/jobs/{job.pk}/events", f"/jobs/{job.pk}/row",
                  f"/api/v1/jobs/{job.pk}", f"/jobs/new?clone={job.pk}"]
        start += [f"/jobs/{job.pk}/export/{fmt}" for fmt in ("json", "python", "params")]
        for pod in job.pods:
            start += [f"/jobs/{job.pk}/pods/{pod['PodId']}/logs",
                      f"/jobs/{job.pk}/pods/{pod['PodId']}/logs/download"]
    queue, seen = [urljoin(base, u) for u in start], set()
    while queue and len(seen) < 400:
        url = queue.pop(0)
        if url in seen or urlparse(url).netloc != urlparse(base).netloc or "logout" in url:
            continue
        seen.add(url)
        answer = web.get(url, timeout=30)
        search(f"page {url}", answer.text)
        if "html" in answer.headers.get("Content-Type", ""):
            links = Links()
            links.feed(answer.text)
            queue += [urljoin(url, link).split("#")[0] for link in links.found if not link.startswith("#")]
    assert len(seen) > 60, f"the crawl reached only {len(seen)} pages"
    for url in ("/api/v1/jobs", f"/api/v1/jobs/{api_job['id']}"):
        search(f"API {url}", requests.get(f"{base}{url}", headers=bearer, timeout=30).text)

    # The database: every table, every column (sessions decoded, compressed logs expanded).
    from django.contrib.sessions.backends.db import SessionStore

    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        assert {"jobs_job", "jobs_auditevent", "jobs_apitoken", "jobs_jobtemplateversion",
                "django_session"} <= set(tables)
        for table in tables:
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - names from the introspection
            columns = [c[0] for c in cursor.description]
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, bytes | memoryview):
                        raw = bytes(value)
                        try:
                            raw = zlib.decompress(raw)
                        except zlib.error:
                            pass
                        value = raw.decode("utf-8", errors="replace")
                    text = str(value)
                    if table == "django_session" and column == "session_data":
                        text += json.dumps(SessionStore().decode(text), default=str)
                    search(f"database {table}.{column}", text)

    # The stack's log files (web server, worker, beat, Redis, localdlc's process log).
    logs = [p for p in Path(stack.data_dir).rglob("*.log") if p.is_file()]
    assert any(p.name == "worker.log" for p in logs) and any(p.name == "web.log" for p in logs)
    for path in logs:
        search(f"log {path.relative_to(stack.data_dir)}", path.read_text(errors="replace"))

    assert not found, "\n".join(found)
    # The control: the secrets really went through to the backend (localdlc keeps what CreateJob got, as
    # PAI-DLC would), so the search above looked for values that were in play.
    import sqlite3

    with sqlite3.connect(Path(stack.data_dir) / "localdlc" / "localdlc.sqlite3") as backend:
        backend_docs = " ".join(doc for (doc,) in backend.execute("SELECT doc FROM jobs"))
    for value in (REGISTRY_WIZARD, REGISTRY_API, REGISTRY_CLONE, RAY_REDIS, RAY_REDIS_WIZARD):
        assert value in backend_docs, f"{value} never reached the backend"
