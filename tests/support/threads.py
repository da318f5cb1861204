"""Run one function in several threads at once, for the tests of races between processes (each thread has its own
database connection, as each web or worker process does)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def all_at_once(target: Callable[[], T], times: int = 3, timeout: float = 30) -> list[T]:
    """`target`'s results from `times` threads released together by a barrier. A thread's exception is only printed
    by threading, so it is raised here; a thread still running after `timeout` fails the test (a lock never freed)."""
    results: list[T] = []
    errors: list[BaseException] = []
    start = threading.Barrier(times, timeout=timeout)

    def run() -> None:
        try:
            start.wait()
            results.append(target())
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's own thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(times)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), f"a thread still runs after {timeout} s (waiting on a lock?)"
    if errors:
        raise errors[0]
    return results
