"""A workspace whose DLC calls keep failing: its sync backs off (and only for failures a retry will not fix), says
so in one log line when it starts and stops failing, records the error for the admins' settings page and the
staff's /healthz, and the wizard shows members a short reason instead of the credential chain's text.

Every failure here is real: localdlc refusing a wrong secret, a closed port, a PAI-DLC workspace with no
credentials anywhere (tests/conftest.py keeps the default chain away from the ECS metadata service).
"""

from __future__ import annotations

import logging
import re
import time

import pytest
from django.utils import timezone

from consoleapp.stack import free_port
from tests import portal_fixtures as pf
from tests.test_lifecycle import (  # noqa: F401 - fixture_* register the fixtures used here by name
    fixture_backend,
    fixture_quiet_stack,
    fixture_ws,
)
from tests.test_portal import settings_data, superuser_client

pytestmark = pytest.mark.integration

CHAIN_DETAILS = ("/root/", ".aliyun/", "config.json", "credentials.ini", "100.100.100.200", "CredentialsProvider",
                 "unable to load credentials")


def sync_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name in ("jobs.syncstate", "jobs.tasks", "jobs.lifecycle")]


def test_refused_credentials_back_off_log_one_line_each_way_and_recover(ws, backend, settings, tmp_path, caplog):
    from jobs import tasks
    from jobs.models import WorkspaceSync

    good = settings.LOCALDLC_CREDENTIALS_FILE
    wrong = tmp_path / "wrong.ini"
    wrong.write_text(f"[localdlc]\ntype = access_key\naccess_key_id = {backend.access_key_id}\n"
                     "access_key_secret = not-the-secret\n")
    settings.LOCALDLC_CREDENTIALS_FILE = str(wrong)
    caplog.set_level(logging.INFO)

    def tick() -> WorkspaceSync:
        """What a beat tick does: the real task, in-process."""
        tasks.sync_jobs.apply().get()
        return WorkspaceSync.objects.get(workspace=ws)

    def list_calls() -> int:
        return backend.stats()["calls"].get("ListJobs", 0)

    state = tick()
    assert state.failing and state.failures == 1 and state.last_error_at and state.last_success_at is None
    assert "SignatureDoesNotMatch" in state.last_error and "not-the-secret" not in state.last_error
    assert state.last_reason == "DLC credentials are not working for this workspace (SignatureDoesNotMatch)"
    first_wait = (state.next_attempt_at - state.last_error_at).total_seconds()
    assert settings.DLC_SYNC_INTERVAL <= first_wait <= 2 * settings.DLC_SYNC_INTERVAL
    assert state.lease_until is None

    calls = list_calls()
    for _ in range(3):  # beat ticks during the back-off: no call to DLC, nothing logged
        assert tick().failures == 1
    assert list_calls() == calls

    WorkspaceSync.objects.filter(workspace=ws).update(next_attempt_at=timezone.now())  # the wait is over
    state = tick()
    assert state.failures == 2 and list_calls() == calls + 1
    assert (state.next_attempt_at - state.last_error_at).total_seconds() >= first_wait, "the wait grows"

    lines = sync_records(caplog)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno == logging.WARNING and not lines[0].exc_info
    assert f"workspace {ws.pk} ({ws.name}) is failing: SignatureDoesNotMatch" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "no traceback anywhere"
    assert "not-the-secret" not in caplog.text

    settings.LOCALDLC_CREDENTIALS_FILE = good  # the operator fixed the credentials; the back-off runs out
    WorkspaceSync.objects.filter(workspace=ws).update(next_attempt_at=timezone.now())
    state = tick()
    assert not state.failing and state.failures == 0 and state.next_attempt_at is None
    assert state.last_error == "" and state.last_success_at >= state.last_error_at
    lines = sync_records(caplog)
    assert len(lines) == 2 and "works again" in lines[1].getMessage()
    tick()
    assert len(sync_records(caplog)) == 2, "a steady state says nothing"


def test_transient_failures_keep_retrying_every_tick(ws, backend):
    from jobs import dlc, lifecycle
    from jobs.models import WorkspaceSync

    backend.set_faults({"action": "ListJobs", "mode": "503", "count": 2})
    for failures in (1, 2):
        with pytest.raises(dlc.DLCError):
            lifecycle.sync_workspace(ws)
        state = WorkspaceSync.objects.get(workspace=ws)
        assert state.failures == failures and state.next_attempt_at is None, "no back-off for a 503"
        assert state.last_reason == "DLC is busy or failing (ServiceUnavailable)"
    assert lifecycle.sync_workspace(ws) == []
    assert not WorkspaceSync.objects.get(workspace=ws).failing


@pytest.fixture
def pai_dlc(db, settings, tmp_path):
    """PAI-DLC workspaces (not localdlc): one with a profile pointed at a closed port, one with no credentials."""
    from jobs.models import Workspace

    profile = tmp_path / "credentials.ini"
    profile.write_text("[team]\ntype = access_key\naccess_key_id = LTAIexample\naccess_key_secret = s3cr3t-value\n")
    settings.DLC_CREDENTIALS_FILE = str(profile)
    closed = Workspace.objects.create(name="Closed", backend=Workspace.BACKEND_DLC, credential_profile="team",
                                      endpoint=f"127.0.0.1:{free_port()}")
    bare = Workspace.objects.create(name="Bare", backend=Workspace.BACKEND_DLC)
    return closed, bare


def test_a_pai_dlc_workspace_without_credentials_or_endpoint_backs_off(pai_dlc):
    from alibabacloud_credentials.utils import auth_util

    from jobs import dlc, lifecycle
    from jobs.models import WorkspaceSync

    assert auth_util.environment_ecs_metadata_disabled == "true", "tests/conftest.py sets it before the import"
    closed, bare = pai_dlc
    for workspace, reason in [
        (closed, "the workspace's DLC endpoint cannot be reached as configured"),
        (bare, "DLC credentials are not working for this workspace (Console.Credentials)"),
    ]:
        with pytest.raises(dlc.DLCError):
            lifecycle.sync_workspace(workspace)
        state = WorkspaceSync.objects.get(workspace=workspace)
        assert state.last_reason.startswith(reason) and state.next_attempt_at > timezone.now()
        assert lifecycle.sync_workspace(workspace) is None, "backing off: the next tick skips it"
        assert "s3cr3t-value" not in state.last_error
    bare_error = WorkspaceSync.objects.get(workspace=bare).last_error
    assert "EcsRamRole" not in bare_error, "the default chain did not ask the ECS metadata service"


def test_the_credentials_librarys_tracebacks_are_dropped(capfd, caplog):
    """The library logs a failed refresh with a traceback, through its own handler too: a real failing provider
    (a credentials URI on a closed port) leaves no traceback on stderr and no record in our logs."""
    from alibabacloud_credentials.provider import URLCredentialsProvider

    import jobs.dlc  # noqa: F401 - installs the filter

    caplog.set_level(logging.DEBUG)
    provider = URLCredentialsProvider(uri=f"http://127.0.0.1:{free_port()}/credentials")
    with pytest.raises(Exception, match="(?i)refused|connect"):
        provider.get_credentials()
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.name == "credentials" and (r.exc_info or r.levelno >= logging.WARNING)]


def test_one_credentials_client_per_profile_until_its_file_changes(db, settings, tmp_path):
    import os

    from jobs import dlc
    from jobs.models import Workspace

    profile = tmp_path / "credentials.ini"
    profile.write_text("[team]\ntype = access_key\naccess_key_id = LTAIone\naccess_key_secret = x\n")
    settings.DLC_CREDENTIALS_FILE = str(profile)
    one = Workspace(name="One", backend=Workspace.BACKEND_DLC, credential_profile="team")
    two = Workspace(name="Two", backend=Workspace.BACKEND_DLC, credential_profile="team", region="cn-shanghai")
    first = dlc.credentials_for(one)
    assert dlc.credentials_for(two) is first and first.get_credential().access_key_id == "LTAIone"
    profile.write_text("[team]\ntype = access_key\naccess_key_id = LTAItwo\naccess_key_secret = x\n")
    os.utime(profile, ns=(time.time_ns(), time.time_ns() + 10**9))
    rotated = dlc.credentials_for(one)
    assert rotated is not first and rotated.get_credential().access_key_id == "LTAItwo"
    other = Workspace(name="Three", backend=Workspace.BACKEND_DLC, credential_profile="other")
    assert dlc.credentials_for(other) is not rotated


def test_members_see_a_short_reason_for_the_instance_types_and_admins_the_details(db, caplog):
    from django.core.cache import cache

    from jobs import lifecycle
    from jobs.models import Membership, Workspace

    cache.clear()
    bare = Workspace.objects.create(name="Bare", backend=Workspace.BACKEND_DLC)
    team = pf.make_team()
    Membership.objects.create(user=team.users["member"], workspace=bare, role=Membership.MEMBER)
    Membership.objects.create(user=team.users["admin"], workspace=bare, role=Membership.ADMIN)
    member = pf.client_for(team.users["member"])
    caplog.set_level(logging.INFO)

    member.post("/workspace", {"workspace": bare.pk})  # the workspace switcher
    html = member.get("/jobs/new").content.decode()
    note = re.search(r'id="catalog-error">(.*?)</div>', html, re.S).group(1)
    assert note.startswith("Could not list instance types: DLC credentials are not working for this workspace "
                           "(ask an admin); you can still type an instance type.")
    leaks = [html[max(0, i - 80):i + 80] for word in CHAIN_DETAILS for i in [html.find(word)] if i >= 0]
    assert not leaks, leaks
    lines = [r for r in caplog.records if "ListEcsSpecs" in r.getMessage()]
    assert len(lines) == 1 and not lines[0].exc_info and "ProfileCredentialsProvider" in lines[0].getMessage()

    with pytest.raises(Exception):  # noqa: B017 - the sync records the same failure for the admins
        lifecycle.sync_workspace(bare)
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{bare.pk}/settings").content.decode()
    assert re.search(r"Last sync failed at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [^:]*:</strong> DLC credentials are not "
                     r"working for this workspace \(Console.Credentials\)", page)
    detail = re.search(r'id="sync-error">(.*?)</pre>', page, re.S).group(1)
    assert "ProfileCredentialsProvider" in detail and "credentials.ini" not in detail  # what failed, not where



def test_saving_the_settings_ends_the_back_off_and_the_page_says_when_it_last_synced(db, localdlc, local_creds):
    from jobs import dlc, lifecycle
    from jobs.models import WorkspaceSync

    team = pf.make_team()  # Alpha's endpoint is a closed port
    with pytest.raises(dlc.DLCError):
        lifecycle.sync_workspace(team.alpha)
    admin = superuser_client(team)
    page = admin.get(f"/workspaces/{team.alpha.pk}/settings").content.decode()
    assert 'data-failing="true"' in page and "Backing off: next try after" in page
    assert "Last sync failed at" in page and "endpoint cannot be reached as configured" in page
    assert "Connection refused" in re.search(r'id="sync-error">(.*?)</pre>', page, re.S).group(1)

    answer = admin.post(f"/workspaces/{team.alpha.pk}/settings",
                        settings_data(team.alpha, endpoint=localdlc.endpoint))
    assert answer.status_code == 302
    assert WorkspaceSync.objects.get(workspace=team.alpha).next_attempt_at is None, "the next tick tries again"
    team.alpha.refresh_from_db()
    assert lifecycle.sync_workspace(team.alpha) is not None
    page = admin.get(f"/workspaces/{team.alpha.pk}/settings").content.decode()
    assert 'data-failing="false"' in page and "Last sync failed" not in page
    assert re.search(r"Last synced at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", page)


def test_a_workspace_never_synced_says_so(db):
    team = pf.make_team()
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/settings").content.decode()
    assert 'id="sync-status"' in page and "Not synced yet." in page
