"""Registered resource quotas: the workspace says what kind each quota is, so the rules that depend on it
(Lingjun-only options, General Computing 2.0) hold in the API as in the wizard."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from jobs import policies
from jobs.models import Membership, Workspace
from tests.portal_fixtures import DEAD_ENDPOINT

LINGJUN_SANITY = {
    "DisplayName": "lj", "JobType": "PyTorchJob", "UserCommand": "echo hi", "ResourceId": "quotalj1",
    "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                  "ResourceConfig": {"CPU": "8", "GPU": "8", "Memory": "64Gi"}}],
    "Settings": {"EnableSanityCheck": True},
}


@pytest.fixture
def admin_client(db):
    ws = Workspace.objects.create(name="Q", backend=Workspace.BACKEND_LOCAL, endpoint=DEAD_ENDPOINT,
                                  region="cn-wulanchabu")
    user = get_user_model().objects.create_user("qa")
    Membership.objects.create(user=user, workspace=ws, role=Membership.ADMIN)
    client = Client()
    client.force_login(user)
    return client, ws


def settings_post(client, ws, quotas: str):
    data = {"name": ws.name, "region": ws.region, "endpoint": ws.endpoint, "dlc_workspace_id": "",
            "credential_profile": "", "role_arn": "", "quotas": quotas}
    return client.post(f"/workspaces/{ws.pk}/settings", data)


def test_quota_lines_are_saved_and_shown_back(admin_client):
    client, ws = admin_client
    answer = settings_post(client, ws, "quotalj1, lingjun, Lingjun pool\nquota2, general-2.0, GC2\nquota3, general")
    assert answer.status_code == 302
    ws.refresh_from_db()
    assert ws.quotas == [
        {"id": "quotalj1", "name": "Lingjun pool", "resource_type": "lingjun", "general_computing_2_0": False},
        {"id": "quota2", "name": "GC2", "resource_type": "general", "general_computing_2_0": True},
        {"id": "quota3", "name": "", "resource_type": "general", "general_computing_2_0": False},
    ]
    page = client.get(f"/workspaces/{ws.pk}/settings").content.decode()
    assert "quotalj1, lingjun, Lingjun pool" in page and "quota2, general-2.0, GC2" in page


@pytest.mark.parametrize(("text", "message"), [
    ("quota1", "expected"),
    ("quota1, gpu", "the type must be one of"),
    ("quota1, general\nquota1, lingjun", "listed twice"),
    ("bad id!, general", "expected"),
])
def test_bad_quota_lines_are_refused_at_the_field(admin_client, text, message):
    client, ws = admin_client
    answer = settings_post(client, ws, text)
    assert answer.status_code == 200
    assert message in answer.content.decode()
    ws.refresh_from_db()
    assert ws.quotas == []


def test_the_help_and_the_error_show_a_line_with_its_commas(admin_client):
    """QA: `quota123 general Team GPU pool` (spaces, as the help's "quota ID, type (...), name" read to some) got
    only "expected '<quota id>, <type>, <name>'": the help and the error now show an example line."""
    client, ws = admin_client
    example = "separated by commas, e.g. quota12345, general, Team GPUs."
    assert example in client.get(f"/workspaces/{ws.pk}/settings").content.decode()
    refused = settings_post(client, ws, "quota123 general Team GPU pool").content.decode()
    assert "Line 1: expected &#x27;&lt;quota id&gt;, &lt;type&gt;, &lt;name&gt;&#x27; with commas between them, e.g. " \
           "quota12345, general, Team GPUs." in refused


def test_a_registered_lingjun_quota_makes_its_rules_apply_through_the_api(admin_client):
    client, ws = admin_client
    client.handler.enforce_csrf_checks = False
    validate = lambda body: client.post(f"/api/v1/jobs/validate?workspace={ws.pk}", json.dumps(body),  # noqa: E731
                                        content_type="application/json")
    unknown = validate(LINGJUN_SANITY)
    assert unknown.status_code == 400 and "sanity check" in json.dumps(unknown.json()).lower()

    ws.quotas = [{"id": "quotalj1", "name": "", "resource_type": "lingjun", "general_computing_2_0": False}]
    ws.save()
    answer = validate(LINGJUN_SANITY).json()
    assert answer == {"valid": True, "can_create": True, "notes": answer["notes"]}

    jumbo = {**LINGJUN_SANITY, "ResourceId": "quota2", "Settings": {"AdvancedSettings": {"EnableJumboFrame": True}}}
    ws.quotas.append({"id": "quota2", "name": "", "resource_type": "general", "general_computing_2_0": False})
    ws.save()
    assert validate(jumbo).status_code == 400
    ws.quotas[1]["general_computing_2_0"] = True
    ws.save()
    assert validate(jumbo).status_code == 200


def test_context_carries_the_quotas(admin_client):
    _, ws = admin_client
    ws.quotas = [{"id": "q", "name": "n", "resource_type": "lingjun", "general_computing_2_0": False}]
    assert policies.context_for(ws, with_specs=False).quotas == {
        "q": {"resource_type": "lingjun", "general_computing_2_0": False, "name": "n"}}
