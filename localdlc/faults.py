"""Fault injection and call statistics for the console's fault-tolerance tests (off unless configured).

A rule is a JSON object:
    {"action": "CreateJob" | "*", "mode": "503" | "500" | "throttle" | "delay" | "reset" | "lost_response",
     "count": N  (next N matching calls)  or  "seconds": S (for S seconds from now)  -- neither: until cleared,
     "delay": secs (mode "delay"; also allowed with other modes to wait before answering),
     "status": HTTP status override (e.g. 429 for "throttle"),
     "retry_after": milliseconds, sent as the x-acs-retry-after header (the SDK then raises
                    ThrottlingException with retry_after instead of ClientException)}

Modes:
    503           HTTP 503 ServiceUnavailable, before the action runs.
    500           HTTP 500 InternalError, before the action runs.
    throttle      HTTP 400 Throttling.User "Request was denied due to user flow control." (status overridable).
    delay         sleep `delay` seconds, then run the action normally (drives client read timeouts).
    reset         close the connection without an answer; the action does not run.
    lost_response run the action (e.g. a job IS created), then close the connection without an answer:
                  the ambiguous outcome an idempotent submitter must handle.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MODES = ("503", "500", "throttle", "delay", "reset", "lost_response")


@dataclass
class Rule:
    action: str
    mode: str
    remaining: int | None = None
    until: float | None = None
    delay: float = 0.0
    status: int | None = None
    retry_after: int | None = None
    hits: int = field(default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "mode": self.mode,
            "remaining": self.remaining,
            "seconds_left": None if self.until is None else max(0.0, round(self.until - time.time(), 3)),
            "delay": self.delay,
            "status": self.status,
            "retry_after": self.retry_after,
            "hits": self.hits,
        }


def parse_rule(obj: Any) -> Rule:
    """Validate one rule object; raise ValueError with a readable message."""
    if not isinstance(obj, dict):
        raise ValueError("a fault rule must be a JSON object")
    mode = str(obj.get("mode", ""))
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    action = str(obj.get("action", "*")) or "*"
    count = obj.get("count")
    seconds = obj.get("seconds")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise ValueError("count must be a positive integer")
    if seconds is not None and (not isinstance(seconds, int | float) or seconds <= 0):
        raise ValueError("seconds must be a positive number")
    delay = obj.get("delay", 0)
    if not isinstance(delay, int | float) or delay < 0:
        raise ValueError("delay must be a non-negative number")
    status = obj.get("status")
    if status is not None and (not isinstance(status, int) or not 400 <= status <= 599):
        raise ValueError("status must be an HTTP error status (400-599)")
    retry_after = obj.get("retry_after")
    if retry_after is not None and (not isinstance(retry_after, int) or retry_after <= 0):
        raise ValueError("retry_after must be a positive integer (milliseconds)")
    return Rule(action=action, mode=mode, remaining=count,
                until=None if seconds is None else time.time() + float(seconds),
                delay=float(delay), status=status, retry_after=retry_after)


class Faults:
    """Thread-safe rule list plus per-action counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._calls: Counter[str] = Counter()
        self._faulted: Counter[str] = Counter()

    # -- rules ---------------------------------------------------------------------------------------------
    def add(self, payload: Any) -> list[Rule]:
        items = payload if isinstance(payload, list) else [payload]
        rules = [parse_rule(item) for item in items]
        with self._lock:
            self._rules.extend(rules)
        return rules

    def replace(self, payload: Any) -> list[Rule]:
        items = payload if isinstance(payload, list) else [payload]
        rules = [parse_rule(item) for item in items]
        with self._lock:
            self._rules = rules
        return rules

    def clear(self) -> None:
        with self._lock:
            self._rules = []

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            self._expire()
            return [r.to_json() for r in self._rules]

    def take(self, action: str) -> Rule | None:
        """The first live rule matching action, consuming one use of it."""
        with self._lock:
            self._expire()
            for rule in self._rules:
                if rule.action in ("*", action):
                    rule.hits += 1
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    self._faulted[action] += 1
                    self._expire()
                    return rule
        return None

    def _expire(self) -> None:
        now = time.time()
        self._rules = [r for r in self._rules
                       if (r.remaining is None or r.remaining > 0) and (r.until is None or r.until > now)]

    # -- stats ---------------------------------------------------------------------------------------------
    def count(self, action: str) -> None:
        with self._lock:
            self._calls[action] += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": dict(self._calls), "faulted": dict(self._faulted),
                    "total": sum(self._calls.values())}

    def reset_stats(self) -> None:
        with self._lock:
            self._calls.clear()
            self._faulted.clear()
