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


def second_while_first_saves(first: Callable[[], T], second: Callable[[], T], model: type, *,
                             when: Callable[[object], bool] = lambda instance: True, chance: float = 2,
                             timeout: float = 60) -> tuple[T, T]:
    """For a race a row lock orders: run `first` in a thread until it is about to save a `model` row (its first
    pre_save for which `when(instance)`), then `second` in another thread while `first` waits there for it to end
    (at most `chance` s: with the lock, `second` cannot end before `first` commits; without it, `second`'s write lands
    inside `first`'s read-to-save window, which is what the test shows). Both results; a thread's exception is
    raised here, and a thread still running after `timeout` fails the test."""
    from django.db.models.signals import pre_save

    inside, second_done = threading.Event(), threading.Event()
    results: dict[str, T] = {}
    errors: list[BaseException] = []

    def hold(sender, instance, **kwargs) -> None:
        if threading.current_thread().name == "first" and not inside.is_set() and when(instance):
            inside.set()
            second_done.wait(chance)

    def run(name: str, target: Callable[[], T]) -> None:
        try:
            results[name] = target()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's own thread
            errors.append(exc)
        finally:
            if name == "second":
                second_done.set()
            connection.close()

    pre_save.connect(hold, sender=model)
    threads = {name: threading.Thread(target=run, args=(name, target), name=name)
               for name, target in (("first", first), ("second", second))}
    try:
        threads["first"].start()
        assert inside.wait(timeout) or errors, "the first thread did not reach its save"
        threads["second"].start()
        for thread in threads.values():
            thread.join(timeout)
    finally:
        second_done.set()
        pre_save.disconnect(hold, sender=model)
    assert not any(t.is_alive() for t in threads.values()), f"a thread still runs after {timeout} s"
    if errors:
        raise errors[0]
    return results["first"], results["second"]
