"""How a workspace's status sync is going: what a cycle's outcome writes on its WorkspaceSync row, the back-off
after failures that retrying will not fix, and one log line when a workspace starts or stops failing.

Plain functions over the row's values; jobs.lifecycle.sync_workspace applies them with its lease release.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from jobs import dlc
from jobs.models import Workspace, WorkspaceSync

log = logging.getLogger(__name__)

# The longest wait between two cycles of a workspace whose sync keeps failing (credentials, permission, an
# endpoint that refuses): about 5-10 minutes with the jitter, instead of every beat tick.
BACKOFF_CAP_SECONDS = 600.0
ERROR_TEXT_LIMIT = 2000


def backoff_seconds(failures: int) -> float:
    """The wait after the n-th failed cycle in a row: doubling from the beat's interval, jittered, capped."""
    ceiling = min(BACKOFF_CAP_SECONDS, settings.DLC_SYNC_INTERVAL * 2.0 ** max(1, failures))
    return random.uniform(ceiling / 2, ceiling)


def after_cycle(workspace: Workspace, state: WorkspaceSync, failure: dlc.DLCError | None,
                now: datetime) -> dict[str, Any]:
    """The WorkspaceSync fields a cycle's outcome sets, given the row as the cycle found it. Logs one line when
    the workspace starts failing or works again; a failure that persists is only recorded."""
    if failure is None:
        if state.failing:
            log.warning("sync of workspace %s (%s) works again, after failing since %s", workspace.pk,
                        workspace.name, state.failing_since.isoformat(timespec="seconds"))
        return {"last_error": "", "last_reason": "", "failing_since": None, "failures": 0, "next_attempt_at": None,
                "last_success_at": now}
    failures = state.failures + 1
    wait = backoff_seconds(failures) if failure.persistent else 0.0
    text = dlc.redact(str(failure))[:ERROR_TEXT_LIMIT]
    if not state.failing:
        then = f"; next try in {wait:.0f} s, backing off up to {BACKOFF_CAP_SECONDS:.0f} s" if wait else ""
        log.warning("sync of workspace %s (%s) is failing: %s%s", workspace.pk, workspace.name,
                    text[:500].replace("\n", " "), then)
    return {
        "last_error": text,
        "last_reason": dlc.reason(failure)[:255],
        "last_error_at": now,
        "failing_since": state.failing_since or now,
        "failures": failures,
        "next_attempt_at": now + timedelta(seconds=wait) if wait else None,
    }


def retry_soon(workspace: Workspace) -> None:
    """End a back-off, e.g. after an admin saved the workspace's settings: the next beat tick tries again."""
    WorkspaceSync.objects.filter(workspace=workspace).update(next_attempt_at=None)


def failing_count() -> int:
    return WorkspaceSync.objects.filter(failing_since__isnull=False).count()
