"""Pod resource samples for GetJobMetrics: CPU, memory and disk I/O of each pod's process tree, read from /proc.

A pod is ``sh -c <command>`` started in a session of its own, so its process tree is every live process whose
session id is the shell's pid (children that start a session of their own escape it, as they would a cgroup
no better). The scheduler thread calls `Sampler.sample` while pods run, at most every `interval` seconds;
nothing is read while no pod runs.

Counters are summed over the live processes of the session, counting each process's reaped children
(cutime/cstime, and /proc/<pid>/io, which the kernel folds into the parent at wait()): a child that exits
between two samples still shows up in its parent's totals. A process that dies unreaped outside the session
makes a total drop; a drop reads as 0, never as a negative rate.

Samples are kept in memory only, per pod in two rings: every sample for the last hour, and one-minute averages
for the last 24 hours. A restart of localdlc loses them (documented in README.md); at most `MAX_PODS` pods keep
their samples, the least recently sampled going first.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

# Sample fields after the time, in this order.
FIELDS = ("CpuCoreUsage", "MemoryUsage", "DiskReadRate", "DiskWriteRate")
# Types the API knows that localdlc has nothing to measure for: no GPUs, and a process has no network counters
# of its own (/proc/<pid>/net/dev is the whole host's). Answered with empty Metrics.
UNMEASURED = ("GpuCoreUsage", "GpuMemoryUsage", "NetworkInputRate", "NetworkOutputRate")
METRIC_TYPES = FIELDS + UNMEASURED
FINE_SECONDS = 3600
COARSE_STEP = 60
COARSE_KEEP = 24 * 60
MAX_PODS = 256
MAX_POINTS = 11000  # what one answer may hold (Prometheus' query_range refuses more, too)
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STEP = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_step(text: str | None, default: float = 300.0) -> float:
    """A TimeStep such as "30s", "5m", "1h", "1d" or bare seconds; ValueError when it is none of those."""
    if text in (None, ""):
        return default
    match = _STEP.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a duration such as 30s, 5m or 1h")
    seconds = float(match[1]) * _UNIT_SECONDS[match[2].lower()]
    if seconds < 1:
        raise ValueError("must be at least 1s")
    return seconds


@dataclass
class _Series:
    fine: deque = field(default_factory=deque)
    coarse: deque = field(default_factory=lambda: deque(maxlen=COARSE_KEEP))
    # The open one-minute bucket: its start and the sums of each field.
    minute: float | None = None
    sums: list[float] = field(default_factory=lambda: [0.0] * len(FIELDS))
    count: int = 0
    # Counters at the previous sample: (wall time, CPU ticks, read bytes, written bytes).
    last: tuple[float, float, float, float] | None = None


def _read_tree(sessions: set[int]) -> dict[int, list[float]]:
    """{session: [cpu ticks, rss bytes, read bytes, written bytes]} summed over each session's live processes."""
    totals: dict[int, list[float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                rest = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        session = int(rest[3])
        if session not in sessions or rest[0] == b"Z":
            continue
        total = totals.setdefault(session, [0.0, 0.0, 0.0, 0.0])
        # utime, stime, cutime, cstime (fields 14-17), rss in pages (field 24)
        total[0] += sum(int(v) for v in rest[11:15])
        total[1] += int(rest[21]) * _PAGE
        try:
            with open(f"/proc/{entry}/io", "rb") as fh:
                for line in fh:
                    if line.startswith(b"read_bytes:"):
                        total[2] += int(line.split()[1])
                    elif line.startswith(b"write_bytes:"):
                        total[3] += int(line.split()[1])
        except OSError:  # another user's process, or gone meanwhile: its I/O is not counted
            pass
    return totals


class Sampler:
    """Per-pod samples; `sample` runs on the scheduler thread, `query` on the HTTP threads."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self._fine_keep = max(1, math.ceil(FINE_SECONDS / max(interval, 0.01)))
        self._series: OrderedDict[str, _Series] = OrderedDict()
        self._lock = threading.Lock()
        self._due = 0.0

    def due(self, now: float) -> bool:
        return now >= self._due

    def soon(self) -> None:
        """Sample at the next tick: a pod just started, and a short one could end before the next interval."""
        self._due = 0.0

    def sample(self, pods: dict[str, tuple[int, float]], now: float, monotonic_now: float) -> None:
        """Take one sample of each pod: {pod id: (session id = the pod shell's pid, its start wall time)}."""
        self._due = monotonic_now + self.interval
        totals = _read_tree({session for session, _ in pods.values()})
        with self._lock:
            for pod_id, (session, started) in pods.items():
                counters = totals.get(session)
                if counters is None:
                    continue  # exited since the scheduler looked
                series = self._series.get(pod_id)
                if series is None:
                    series = self._series[pod_id] = _Series(fine=deque(maxlen=self._fine_keep))
                    # A new session starts from zero: the first rate is over the pod's whole life so far.
                    series.last = (started, 0.0, 0.0, 0.0)
                self._series.move_to_end(pod_id)
                then, ticks, read, written = series.last
                wall = max(now - then, 1e-3)
                values = (max(0.0, (counters[0] - ticks) / _CLK_TCK / wall), counters[1],
                          max(0.0, (counters[2] - read) / wall), max(0.0, (counters[3] - written) / wall))
                series.last = (now, counters[0], counters[2], counters[3])
                series.fine.append((now, *values))
                self._roll_minute(series, now, values)
            while len(self._series) > MAX_PODS:
                self._series.popitem(last=False)

    @staticmethod
    def _roll_minute(series: _Series, now: float, values: tuple[float, ...]) -> None:
        minute = now - now % COARSE_STEP
        if series.minute is not None and minute != series.minute and series.count:
            series.coarse.append((series.minute, *(s / series.count for s in series.sums)))
            series.sums, series.count = [0.0] * len(FIELDS), 0
        series.minute = minute
        series.sums = [s + v for s, v in zip(series.sums, values, strict=True)]
        series.count += 1

    def query(self, pod_id: str, metric: str, start: float, end: float, step: float) -> list[dict[str, float]]:
        """[{Time (ms), Value}] of one pod: the samples in [start, end] averaged per step, oldest first."""
        if metric not in FIELDS:
            return []
        index = FIELDS.index(metric) + 1
        with self._lock:
            series = self._series.get(pod_id)
            if series is None:
                return []
            fine = list(series.fine)
            oldest_fine = fine[0][0] if fine else math.inf
            points = [(s[0], s[index]) for s in series.coarse if s[0] + COARSE_STEP <= oldest_fine]
        points += [(s[0], s[index]) for s in fine]
        buckets: dict[int, list[float]] = {}
        for when, value in points:
            if start <= when <= end:
                bucket = buckets.setdefault(int((when - start) // step), [0.0, 0])
                bucket[0] += value
                bucket[1] += 1
        return [{"Time": int(round((start + n * step) * 1000)), "Value": round(total / count, 6)}
                for n, (total, count) in sorted(buckets.items())]
