"""The beat and the worker of the session stack syncing a workspace whose backend refuses every connection: the
worker logs one line for it, not a line (or a traceback) a cycle, its cycles back off, and staff see it counted
on /healthz. Its own module: tests/test_sync_failures.py pauses the beat for its in-process tests."""

from __future__ import annotations

import pytest
import requests

from consoleapp.stack import free_port
from tests.conftest import PASSWORD
from tests.support.waiting import wait_for
from tests.test_skeleton_flow import signed_in_session

pytestmark = pytest.mark.integration


def test_the_worker_logs_a_failing_workspace_once_backs_off_and_healthz_counts_it(stack, transactional_db):
    from django.contrib.auth import get_user_model

    from jobs.models import Workspace, WorkspaceSync

    worker_log = stack.data_dir / "worker.log"
    start = worker_log.stat().st_size
    refusing = Workspace.objects.create(name="Refusing", backend=Workspace.BACKEND_LOCAL,
                                        endpoint=f"127.0.0.1:{free_port()}")
    wait_for(lambda: WorkspaceSync.objects.filter(workspace=refusing, failures__gte=3).exists(), timeout=40,
             what="three failed cycles")
    state = WorkspaceSync.objects.get(workspace=refusing)
    # Beat ticks every second; backing off from 1-2 s and doubling, the third cycle comes 3-7 s after the first.
    elapsed = (state.last_error_at - state.failing_since).total_seconds()
    assert elapsed >= 3.0 and state.cycles == state.failures, (elapsed, state.cycles)
    assert state.next_attempt_at > state.last_error_at

    text = worker_log.read_bytes()[start:].decode(errors="replace")
    assert text.count(f"workspace {refusing.pk} (Refusing) is failing") == 1, text[-3000:]
    assert "Traceback" not in text

    anonymous = requests.get(f"{stack.url}/healthz", timeout=30).json()
    assert "failing_syncs" not in anonymous
    get_user_model().objects.create_user("ops", password=PASSWORD, is_staff=True)
    staff = signed_in_session(stack.url, "ops").get(f"{stack.url}/healthz", timeout=30).json()
    assert staff["failing_syncs"] == 1
