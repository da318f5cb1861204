"""Fixtures shared by the list and job-page view tests: a workspace on the test's localdlc and its people."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from jobs import lifecycle
from jobs.models import Job, Membership, Workspace
from tests.support.wizard import credentials_file


@pytest.fixture
def local_creds(localdlc, tmp_path, settings):
    """The console's credentials for the test's localdlc, in the INI profile the console reads."""
    path = credentials_file(localdlc, tmp_path)
    settings.LOCALDLC_CREDENTIALS_FILE = str(path)
    return path


@pytest.fixture
def ws(db, localdlc, local_creds):
    return Workspace.objects.create(name="Local", backend=Workspace.BACKEND_LOCAL, endpoint=localdlc.endpoint)


@pytest.fixture
def people(ws):
    """alice and bob (members), vic (viewer), ada (admin), and olga, a member of another workspace."""
    make = get_user_model().objects.create_user
    people = {name: make(name) for name in ("alice", "bob", "vic", "ada", "olga")}
    for name, role in [("alice", "member"), ("bob", "member"), ("vic", "viewer"), ("ada", "admin")]:
        Membership.objects.create(user=people[name], workspace=ws, role=role)
    elsewhere = Workspace.objects.create(name="Elsewhere", backend=Workspace.BACKEND_LOCAL)
    Membership.objects.create(user=people["olga"], workspace=elsewhere, role="member")
    people["elsewhere"] = elsewhere
    return people


@pytest.fixture
def submit_to_stack(stack, workspace, settings):
    """Submit a job the way the worker does (jobs.lifecycle.submit) to the stack's localdlc; the stack's
    beat then syncs it like any other."""
    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)

    def run(owner, name: str, command: str) -> Job:
        body = {"DisplayName": name, "JobType": "PyTorchJob", "UserCommand": command,
                "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                              "EcsSpec": "ecs.g6.large"}]}
        job = Job.objects.create(workspace=workspace, owner=owner, display_name=name, job_type="PyTorchJob",
                                 body=body)
        assert lifecycle.submit(job.pk) == "created"
        return job

    return run
