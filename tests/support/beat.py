"""Pausing the session stack's Celery beat for tests whose rows its periodic tasks would act on behind their back
(the stack shares the test database: its sync, sweep, schedules and idle checks see every committed row)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.waiting import wait_for


def periodic_tasks() -> set[str]:
    """The names of the tasks the beat sends (settings.CELERY_BEAT_SCHEDULE)."""
    from django.conf import settings

    return {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}


def beat_tasks_in_flight(stack) -> set[str] | None:
    """Beat-sent tasks still queued in the stack's Redis, reserved by its worker or running there; None when the
    worker did not answer (busy: ask again). Looked at in the order a message moves (queue, reserved, active), so one
    on its way is seen in one of them unless it has finished."""
    import redis
    from celery import Celery

    queued = redis.Redis.from_url(stack.redis_url).lrange("celery", 0, -1)
    names = {json.loads(message).get("headers", {}).get("task") for message in queued}
    # An app of its own on the stack's Redis, never the current one (shared tasks send through that).
    app = Celery(broker=stack.redis_url, set_as_current=False)
    try:
        # limit=1: the stack runs one worker, and without it each question waits out its whole timeout.
        inspect = app.control.inspect(timeout=1.0, limit=1)
        reserved = inspect.reserved()
        active = inspect.active()
    finally:
        app.close()
    if reserved is None or active is None:
        return None
    names |= {task["name"] for tasks in [*reserved.values(), *active.values()] for task in tasks}
    return names & periodic_tasks()


@contextmanager
def paused(stack) -> Iterator[None]:
    """The stack with its beat stopped and no task it sent still queued or running (a sync, sweep or look at
    schedules already under way could otherwise act on the rows the test makes next); started again afterwards."""
    running = "beat" in stack.procs
    stack.stop_service("beat")
    try:
        wait_for(lambda: beat_tasks_in_flight(stack) == set(), timeout=60, interval=0.2,
                 what="the beat's tasks already sent finished")
        yield
    finally:
        if running:
            stack.start_beat()
