"""Polling for the integration tests: the processes under test work in the background."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.2,
             what: str = "condition") -> Any:
    """Poll predicate until it returns something truthy (returned); fail the test once timeout has passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        time.sleep(interval)
