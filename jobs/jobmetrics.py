"""The job page's monitoring: GetJobMetrics answers turned into what the page draws, one inline SVG line chart
per metric with a polyline per pod scaled to a fixed box, and each pod's min / max / last in the metric's unit.

Plain functions of the answers (no request, no DLC call), but `read`, which asks DLC for every metric at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from jobs import dlc
from jobs.models import Job

WIDTH, HEIGHT = 600, 140  # the SVG viewBox every chart is scaled to
# Hover areas across a chart, each with its values in an SVG <title>: a few, not one per point, so that a chart of
# hundreds of points (a section refreshed every 10 s) stays small.
HOVER_BANDS = 20
HOVER_PODS = 6  # pods named in a hover title; more are counted
# Polyline colours (CSS classes series-0..5), cycled when a job has more pods.
PALETTE = 6


@dataclass(frozen=True)
class Metric:
    type: str  # GetJobMetrics MetricType
    title: str
    unit: str  # cores | bytes | bytes/s | percent


METRICS = (
    Metric("CpuCoreUsage", "CPU", "cores"),
    Metric("MemoryUsage", "Memory", "bytes"),
    Metric("GpuCoreUsage", "GPU utilisation", "percent"),
    Metric("GpuMemoryUsage", "GPU memory", "percent"),
    Metric("NetworkInputRate", "Network in", "bytes/s"),
    Metric("NetworkOutputRate", "Network out", "bytes/s"),
    Metric("DiskReadRate", "Disk read", "bytes/s"),
    Metric("DiskWriteRate", "Disk write", "bytes/s"),
)


@dataclass(frozen=True)
class Range:
    key: str
    label: str
    seconds: int | None  # None: from the job's start to its end (or now)
    step: str  # the TimeStep asked for; "" = chosen from the job's length


RANGES = (
    Range("15m", "Last 15 min", 900, "15s"),
    Range("1h", "Last hour", 3600, "1m"),
    Range("6h", "Last 6 hours", 6 * 3600, "5m"),
    Range("24h", "Last 24 hours", 24 * 3600, "15m"),
    Range("job", "Whole job", None, ""),
)
# The whole job: its step follows its length, so a job in its first minutes is not one dot per chart.
DEFAULT_RANGE = "job"
# Steps for "whole job", shortest first: the first giving at most MAX_POINTS points per pod is used.
JOB_STEPS = ((15, "15s"), (60, "1m"), (300, "5m"), (900, "15m"), (3600, "1h"), (6 * 3600, "6h"), (86400, "1d"))
MAX_POINTS = 240
SHARED_SECONDS = 5  # one read of a job's charts serves every request this long (read_shared)


class BadRange(ValueError):
    pass


def parse_range(value: str | None) -> Range:
    """The range a request asks for (?range=), the default when absent; BadRange names the choices."""
    key = (value or DEFAULT_RANGE).strip()
    for choice in RANGES:
        if choice.key == key:
            return choice
    raise BadRange(f"Unknown time range {key[:40]!r}: choose one of {', '.join(r.key for r in RANGES)}.")


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    step: str


def window(job: Job, chosen: Range, now: datetime | None = None) -> Window:
    """The time span and TimeStep to ask for: the last N of a range up to now (or the job's end), or the whole
    job from its start."""
    now = now or timezone.now()
    end = min(job.finished_at or now, now)
    if chosen.seconds is not None:
        return Window(end - timedelta(seconds=chosen.seconds), end, chosen.step)
    start = job.started_at or job.submitted_at or job.created_at
    start = min(start, end - timedelta(minutes=1))
    span = (end - start).total_seconds()
    step = next((text for seconds, text in JOB_STEPS if span / seconds <= MAX_POINTS), JOB_STEPS[-1][1])
    return Window(start, end, step)


# --- values in their units --------------------------------------------------------------------------------


def _binary(value: float, suffix: str) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}{suffix}" if unit == "B" else f"{value:.1f} {unit}{suffix}"
        value /= 1024
    raise AssertionError("unreachable")


def fmt(value: float, unit: str) -> str:
    """A value as a person reads it: 0.52 cores, 150.0 MiB, 1.2 MiB/s, 45%."""
    if unit == "cores":
        return f"{value:.2f} cores" if value < 10 else f"{value:.1f} cores"
    if unit == "bytes":
        return _binary(value, "")
    if unit == "bytes/s":
        return _binary(value, "/s")
    return f"{value:.0f}%" if unit == "percent" else f"{value:g}"


# --- charts -------------------------------------------------------------------------------------------------


@dataclass
class Series:
    pod_id: str
    points: str  # the polyline's "x,y x,y ..." in the chart's box
    last_x: float
    last_y: float
    low: str
    high: str
    last: str
    colour: int


@dataclass(frozen=True)
class Band:
    """A vertical strip of a chart that shows, when hovered, the values of its points (the SVG <title>)."""

    x: float
    width: float
    text: str
    start: datetime | None = None  # a monitoring chart's: the times of the strip's first and last points
    end: datetime | None = None


@dataclass
class Chart:
    metric: Metric
    series: list[Series] = field(default_factory=list)
    top: str = ""  # the values at the top and the bottom of the box
    bottom: str = ""
    bands: list[Band] = field(default_factory=list)
    error: str = ""

    @property
    def empty(self) -> bool:
        return not self.series


def _top(peak: float, unit: str) -> float:
    """The value the box's top stands for: room above the peak; a whole core or 100% where that fits."""
    if unit == "percent":
        return 100.0
    if peak <= 0:
        return 1.0
    if unit == "cores" and peak <= 1:
        return 1.0
    return peak * 1.1


def chart(metric: Metric, pods: list[dict[str, Any]], start: datetime, end: datetime) -> Chart:
    """One metric's chart over [start, end]: time across, 0..top up; pods without points are left out."""
    t0, t1 = start.timestamp() * 1000, end.timestamp() * 1000
    span = max(t1 - t0, 1.0)
    series_points = []
    for pod in pods:
        points = sorted((float(p["Time"]), float(p["Value"])) for p in pod.get("Metrics") or []
                        if isinstance(p.get("Time"), int | float) and isinstance(p.get("Value"), int | float)
                        and math.isfinite(p["Value"]))
        points = [(t, v) for t, v in points if t0 <= t <= t1]
        if points:
            series_points.append((str(pod.get("PodId") or "?"), points))
    if not series_points:
        return Chart(metric)
    top = _top(max(v for _, points in series_points for _, v in points), metric.unit)
    result = Chart(metric, top=fmt(top, metric.unit), bottom=fmt(0.0, metric.unit))
    for n, (pod_id, points) in enumerate(series_points):
        line, last_x, last_y = polyline(points, t0, t0 + span, 0.0, top)
        values = [v for _, v in points]
        result.series.append(Series(
            pod_id=pod_id, points=line, last_x=last_x, last_y=last_y,
            low=fmt(min(values), metric.unit), high=fmt(max(values), metric.unit),
            last=fmt(values[-1], metric.unit), colour=n % PALETTE))

    def values_between(first: float, last: float) -> str:
        found = [f"{pod_id} {fmt(inside[-1], metric.unit)}" for pod_id, points in series_points
                 if (inside := [v for t, v in points if first <= t <= last])]
        more = len(found) - HOVER_PODS
        return " · ".join(found[:HOVER_PODS]) + (f" · {more} more pods" if more > 0 else "")

    def at(ms: float) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)

    times = [t for _, points in series_points for t, _ in points]
    result.bands = [Band(x, width, values_between(first, last), at(first), at(last))
                    for x, width, first, last in strips(times, t0, t0 + span)]
    return result


def strips(xs: Sequence[float], x0: float, x1: float, count: int = HOVER_BANDS) \
        -> list[tuple[float, float, float, float]]:
    """The chart cut across into at most `count` strips holding the points' distinct x values in equal shares:
    (left, width) in the box and the first and last x in the strip. Each strip reaches halfway to its neighbours'
    points, so together they cover the box without a gap and a hover anywhere names the nearest points."""
    distinct = sorted(set(xs))
    if not distinct:
        return []
    n = min(count, len(distinct))
    groups = [distinct[i * len(distinct) // n:(i + 1) * len(distinct) // n] for i in range(n)]
    xspan = (x1 - x0) or 1.0

    def box(x: float) -> float:
        return min(max((x - x0) / xspan, 0.0), 1.0) * WIDTH

    out = []
    for i, group in enumerate(groups):
        left = 0.0 if i == 0 else (box(groups[i - 1][-1]) + box(group[0])) / 2
        right = float(WIDTH) if i == n - 1 else (box(group[-1]) + box(groups[i + 1][0])) / 2
        out.append((round(left, 1), round(right - left, 1), group[0], group[-1]))
    return out


def polyline(points: list[tuple[float, float]], x0: float, x1: float, y0: float, y1: float) \
        -> tuple[str, float, float]:
    """(x, y) points drawn in the chart's box, x0..x1 across and y0..y1 up (a value outside is drawn at the
    edge): the SVG polyline's "x,y x,y ..." and where its last point is. The one drawing of every chart (the
    monitoring's and the training metrics' of jobs.scalars)."""
    xspan = (x1 - x0) or 1.0
    yspan = (y1 - y0) or 1.0
    xy = [(round((x - x0) / xspan * WIDTH, 1), round(HEIGHT - min(max((y - y0) / yspan, 0.0), 1.0) * HEIGHT, 1))
          for x, y in points]
    return " ".join(f"{x:g},{y:g}" for x, y in xy), xy[-1][0], xy[-1][1]


def read(job: Job, win: Window) -> list[Chart]:
    """Every metric's chart for the job, read from DLC side by side; a failed read is that chart's error. When
    the first read fails for a reason that is not about the request (credentials, endpoint, DLC down), the
    others would too: they are not sent, and every chart says so."""
    workspace = job.workspace  # read here: the pool's threads must not query the database

    def one(metric: Metric) -> tuple[Chart, dlc.DLCError | None]:
        try:
            pods = dlc.get_job_metrics(workspace, job.dlc_job_id, metric.type, win.start, win.end, win.step)
        except dlc.DLCError as err:
            return Chart(metric, error=dlc.reason(err)), err
        return chart(metric, pods, win.start, win.end), None

    first, err = one(METRICS[0])
    if err is not None and err.kind != "request":
        return [first] + [Chart(m, error=first.error) for m in METRICS[1:]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return [first] + [c for c, _ in pool.map(one, METRICS[1:])]


def read_shared(job: Job, chosen: Range) -> tuple[Window, list[Chart]]:
    """window() and read() of a range, shared by every request for SHARED_SECONDS: a page refreshing while the
    job runs costs len(METRICS) GetJobMetrics calls, and every viewer, tab (or loop) must not multiply them."""
    # With the row's creation time: a row id alone may be reused (a test database is reset, not renumbered).
    key = f"jobmetrics:{job.pk}:{job.dlc_job_id}:{job.created_at.timestamp()}:{chosen.key}"
    found = cache.get(key)
    if isinstance(found, tuple) and len(found) == 2:
        return found
    win = window(job, chosen)
    result = (win, read(job, win))
    cache.set(key, result, SHARED_SECONDS)
    return result


def failure(charts: list[Chart]) -> str:
    """The one error to show instead of the charts when every read failed the same way; "" otherwise."""
    errors = {c.error for c in charts}
    return errors.pop() if len(errors) == 1 and "" not in errors else ""
