"""GET /healthz (jobs.health): only GET and HEAD, and its DLC checks kept briefly so open requests cannot flood DLC.
What it reports with the whole stack up is in tests/test_skeleton_flow.py."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import Client

from tests.support.wizard import credentials_file


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_healthz_answers_only_get_and_head_in_json_without_a_csrf_page(db, method):
    """QA: POST /healthz was the HTML page of a CSRF failure (403)."""
    response = getattr(Client(enforce_csrf_checks=True), method)("/healthz")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json" and response["Allow"] == "GET, HEAD"
    assert "GET and HEAD" in json.loads(response.content)["error"]


@pytest.fixture
def local_workspace(db, localdlc, settings, tmp_path):
    from jobs import health
    from jobs.models import Workspace

    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(localdlc, tmp_path))
    health._dlc_results.clear()  # noqa: SLF001 - another test's kept results must not answer for this one
    yield Workspace.objects.create(name=f"health-{uuid.uuid4().hex[:6]}", backend=Workspace.BACKEND_LOCAL,
                                   endpoint=localdlc.endpoint, dlc_workspace_id="local")
    localdlc.clear_faults()
    health._dlc_results.clear()  # noqa: SLF001


def list_calls(localdlc) -> int:
    return localdlc.stats()["calls"].get("ListEcsSpecs", 0)


@pytest.mark.integration
def test_healthz_calls_dlc_once_per_period_and_reports_the_same(local_workspace, localdlc, settings, client):
    """QA: every anonymous GET /healthz called DLC once per workspace (3.1 s each while DLC failed)."""
    before = list_calls(localdlc)
    first, second = client.get("/healthz").json(), client.get("/healthz").json()
    assert list_calls(localdlc) == before + 1
    assert first == second and first["checks"][f"workspace:{local_workspace.pk}"] == {"ok": True}

    # An edited endpoint is checked afresh at once; the failure is reported, then kept like a success.
    local_workspace.endpoint = "127.0.0.1:9"
    local_workspace.save()
    failing = client.get("/healthz")
    assert failing.status_code == 503 and failing.json()["checks"][f"workspace:{local_workspace.pk}"] == {"ok": False}

    local_workspace.endpoint = localdlc.endpoint
    local_workspace.save()
    assert client.get("/healthz").json() == first  # the first answer, still fresh
    assert list_calls(localdlc) == before + 1

    settings.DLC_HEALTH_CACHE_SECONDS = 0  # kept no time: every request calls DLC again
    local_workspace.dlc_workspace_id = "local-2"
    local_workspace.save()
    client.get("/healthz")
    client.get("/healthz")
    assert list_calls(localdlc) == before + 3


@pytest.mark.integration
def test_a_flood_of_parallel_requests_waits_for_one_round_of_dlc_calls(local_workspace, localdlc):
    from jobs import health

    localdlc.set_faults({"action": "ListEcsSpecs", "mode": "delay", "delay": 0.5})
    before = list_calls(localdlc)
    start = threading.Barrier(6)

    def one_request() -> dict:
        start.wait()
        with ThreadPoolExecutor(max_workers=2) as pool:
            return health._dlc_checks([local_workspace], pool)  # noqa: SLF001 - the view's part that calls DLC

    with ThreadPoolExecutor(max_workers=6) as requests:
        answers = list(requests.map(lambda _: one_request(), range(6)))
    assert list_calls(localdlc) == before + 1
    assert answers == [{local_workspace.pk: {"ok": True}}] * 6
