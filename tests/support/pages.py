"""Fixtures shared by the list and job-page view tests: a workspace on the test's localdlc and its people."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from jobs.models import Membership, Workspace


@pytest.fixture
def local_creds(localdlc, tmp_path, settings):
    """The console's credentials for the test's localdlc, in the INI profile the console reads."""
    path = tmp_path / "localdlc-credentials.ini"
    path.write_text(f"[localdlc]\ntype = access_key\naccess_key_id = {localdlc.access_key_id}\n"
                    f"access_key_secret = {localdlc.access_key_secret}\n")
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
