"""Training metrics ("scalars") a job prints in its log, charted on the job page and ranking a sweep's trials.

The format: a log line whose text starts (after optional whitespace) with `METRIC ` and then either `name=value`
pairs separated by spaces or commas (`METRIC step=100 loss=0.3142 acc=0.81`) or a JSON object
(`METRIC {"step": 100, "loss": 0.31}`). An explicit marker, unlike Katib's bare `name=value`, so an ordinary log
line never makes a metric. The text a terminal shows counts (after the last carriage return, or after a tqdm bar
on the same line), and of torchrun's rank-prefixed lines (`[default1]:METRIC ...`) only rank 0's. Names are
`[A-Za-z_][A-Za-z0-9_./-]{0,63}`, values finite numbers. `step` (a whole number >= 0) is the x-axis; a line without
one takes its index among the metric lines. Anything malformed (a bad pair, a bad value, a bad JSON object, a bad
step) is left out without a word: a log is not a form.

A step printed again or going back (a restart from a checkpoint) drops the points from that step on, as
TensorBoard purges the orphaned steps of a restarted run: the curve is the run that went on.

One pod's metrics: the first, in the job page's pod order, whose log has metric lines (DDP ranks print the same
metrics). When a job ends, jobs.logarchive.archive calls `compute`, which reads the archived logs and replaces
the job's JobScalar rows. Jobs archived before this existed get theirs the first time their page asks (`stored`,
from PodLog, no DLC call). While a job runs, the page parses the newest LIVE_LINES lines of its pod from DLC.

A running job's last values (a sweep's trials table) are those of the latest live read, kept in the cache: every
live read leaves them there, and `sampled` reads in turn, a few per call, those not read for SAMPLE_SECONDS.

Plain functions: only `store`, `compute`, `stored`, `last_values`, `live`, `sampled` and `section` touch the
database, the cache or DLC.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs import dlc, jobmetrics, jobpage, logarchive, logmask
from jobs.models import Job, JobScalar, PodLog

log = logging.getLogger(__name__)

MARKER = "METRIC"
FORMAT_EXAMPLES = ('METRIC step=100 loss=0.3142 acc=0.81', 'METRIC {"step": 100, "loss": 0.31}')
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,63}")
MAX_POINTS = 500  # points kept per metric (the chart is 600 units wide)
MAX_NAMES = 50  # metrics kept per job: a JSON line with thousands of keys does not make thousands of rows
LIVE_LINES = 5000  # a running job's chart is of its pod's newest lines
LIVE_PODS = 8  # pods a running job's page looks through for metric lines, in pod order
LIVE_CACHE_SECONDS = 5  # one DLC read of a running job's metrics serves every request this long
# A running job's last values as last read (`sampled`): read again from DLC after SAMPLE_SECONDS, kept this long.
SAMPLE_SECONDS = 30
SAMPLE_KEEP_SECONDS = 3600
# Steps beyond this are not whole numbers any more once they go through JSON (a float64).
MAX_STEP = 2**53
# A line longer than this is not a metric line someone printed on purpose; not worth a regex.
MAX_LINE_CHARS = 65536
# The pods of a job archived before this module existed are read once, not at every page view, when none has
# metric lines (most jobs): the page's lazy computation is remembered this long.
SCANNED_FOR = timedelta(days=7)

# An optional RFC 3339 time stamp before the text (Kubernetes' `--timestamps` form), torchrun's rank prefix
# (`[default3]:` with --tee, `[rank3]:`), a tqdm bar the line was printed after (logging to stderr while the bar
# is drawn puts both on one line), then the marker.
_LINE = re.compile(r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s)?\s*"
                   r"(?:\[(?:default|rank)(\d+)\]:)?"
                   r"(?:[^|\n]{0,200}?\d{1,3}%\|[^|\n]{0,200}\|[^\[\n]{0,200}\[[^\]\n]{0,400}\])?"
                   r"\s*METRIC\s+(.*)", re.S)
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PAIR = re.compile(rf"([A-Za-z_][A-Za-z0-9_./-]{{0,63}})=({_NUMBER})")
_SEPARATORS = re.compile(r"[\s,]+")
_INDEX = re.compile(r"-(\d+)$")

Points = list[tuple[int, float]]


# --- parsing --------------------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A finite float from a JSON value (not a bool, which Python counts as an int), else None."""
    if type(value) not in (int, float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _step(value: float | None) -> int | None:
    if value is None or value < 0 or value >= MAX_STEP or not value.is_integer():
        return None
    return int(value)


def parse_line(text: str) -> tuple[int | None, dict[str, float]] | None:
    """(step or None, {name: value}) of one log line; None when it is not a metric line or nothing in it is
    well formed (a line with a bad step is left out whole: its values would be drawn at the wrong place)."""
    if MARKER not in text or len(text) > MAX_LINE_CHARS:
        return None
    # A carriage return sends the cursor back: what follows the last one is the line a terminal shows (tqdm).
    match = _LINE.match(logmask.after_carriage_return(text))
    if match is None or match.group(1) not in (None, "0"):
        return None  # other ranks print the same metrics: rank 0's are the curve, as the first pod's are the job's
    rest = match.group(2).strip()
    values: dict[str, float] = {}
    if rest.startswith("{"):
        try:
            found = json.loads(rest)
        except (ValueError, RecursionError):
            return None
        if not isinstance(found, dict):
            return None
        for name, raw in found.items():
            number = _number(raw)
            if number is not None and isinstance(name, str) and NAME_RE.fullmatch(name):
                values[name] = number
        has_step = "step" in found
    else:
        tokens = _SEPARATORS.split(rest)
        for token in tokens:
            pair = _PAIR.fullmatch(token)
            if pair is not None:
                number = float(pair.group(2))
                if math.isfinite(number):  # 1e999 is well formed but infinite
                    values[pair.group(1)] = number
        has_step = any(token.startswith("step=") for token in tokens)
    step = None
    if has_step:
        step = _step(values.pop("step", None))
        if step is None:
            return None
    return (step, values) if values else None


def parse(lines: Iterable[str]) -> dict[str, Points]:
    """Every metric of the lines: {name: [(step, value)]}, by step, each step once (see the module's doc on
    steps going back); names in the order first printed, at most MAX_NAMES."""
    out: dict[str, Points] = {}
    extend(out, lines)
    return out


def extend(out: dict[str, Points], lines: Iterable[str], index: int = 0, only: str | None = None) -> int:
    """parse's work going on from the log's lines before these (read earlier): `out` holds their metrics, `index`
    how many metric lines they had (the x of a line without a step). Adds these lines' points to `out` and returns
    the count of metric lines so far. `only`: that metric alone (early stopping reads one, jobs.early_stop)."""
    for text in lines:
        found = parse_line(text)
        if found is None:
            continue
        step, values = found
        x = index if step is None else step
        index += 1
        for name, value in values.items():
            if only is not None and name != only:
                continue
            points = out.get(name)
            if points is None:
                if len(out) >= MAX_NAMES:
                    continue
                points = out[name] = []
            while points and points[-1][0] >= x:  # a restart: its steps replace the run's later ones
                points.pop()
            points.append((x, value))
    return index


def downsample(points: Points, max_points: int = MAX_POINTS) -> Points:
    """At most max_points of the points (by step), keeping the curve's shape: the first and the last, and of
    each of equal-sized buckets in between its lowest and its highest point (in step order), so a spike or a
    divergence stays visible where averaging would flatten it."""
    if len(points) <= max_points:
        return list(points)
    if max_points < 4:
        return [points[0], points[-1]][:max(max_points, 0)]
    inner = points[1:-1]
    buckets = (max_points - 2) // 2
    out = [points[0]]
    for n in range(buckets):
        bucket = inner[n * len(inner) // buckets:(n + 1) * len(inner) // buckets]
        if not bucket:
            continue
        low = min(range(len(bucket)), key=lambda i: bucket[i][1])
        high = max(range(len(bucket)), key=lambda i: bucket[i][1])
        out += [bucket[i] for i in sorted({low, high})]
    out.append(points[-1])
    return out


@dataclass(frozen=True)
class Summary:
    last: float
    min: float
    max: float
    count: int
    last_step: int


def summarize(points: Points) -> Summary:
    """Of every point (not only those a chart keeps); `points` is not empty."""
    values = [v for _, v in points]
    return Summary(values[-1], min(values), max(values), len(points), points[-1][0])


def order_key(role: str, pod_id: str) -> tuple[str, int, str]:
    """The job page's pod order (jobs.jobpage.pods: by role, then the index that ends the pod's name)."""
    match = _INDEX.search(pod_id)
    return role, int(match.group(1)) if match else 0, pod_id


def choose(logs: Iterable[tuple[str, list[str]]]) -> tuple[str, dict[str, Points]] | None:
    """(pod id, metrics) of the first log, in the order given, with metric lines; None if none has. Pass a
    generator: the logs after the chosen one are not read."""
    for pod_id, lines in logs:
        found = parse(lines)
        if found:
            return pod_id, found
    return None


def fmt(value: float) -> str:
    """A metric value as a person reads it: 6 significant digits (0.314159, 12345, 1.23457e+06)."""
    return f"{value:.6g}"


# --- the stored rows --------------------------------------------------------------------------------------------


def store(job: Job, chosen: tuple[str, dict[str, Points]] | None) -> int:
    """Replace the job's JobScalar rows with these metrics (none: no rows), in one transaction. Returns how many
    rows were written."""
    rows = []
    if chosen is not None:
        pod_id, metrics = chosen
        for name, points in metrics.items():
            summary = summarize(points)
            rows.append(JobScalar(job=job, pod_id=pod_id[:256], name=name,
                                  points=[[s, v] for s, v in downsample(points)], last=summary.last,
                                  min=summary.min, max=summary.max, count=summary.count,
                                  last_step=summary.last_step))
    try:
        with transaction.atomic():
            JobScalar.objects.filter(job=job).delete()
            JobScalar.objects.bulk_create(rows)
    except IntegrityError:
        # Another process stored the job's rows between our delete and insert (a page's lazy computation and
        # the archive task at once); both read the same archive, so theirs are ours.
        log.info("scalars of job %s were stored concurrently", job.pk)
    return len(rows)


def _archived_logs(job: Job) -> Iterator[tuple[str, list[str]]]:
    pods = sorted(PodLog.objects.filter(job=job).values_list("role", "pod_id"), key=lambda p: order_key(*p))
    for _role, pod_id in pods:
        yield pod_id, logarchive.read(job, pod_id) or []


def compute(job: Job) -> int:
    """The job's metrics from its archived pod logs (PodLog, no DLC call) into JobScalar. Idempotent: the rows
    are replaced. Returns how many metrics were found."""
    return store(job, choose(_archived_logs(job)))


def stored(job: Job) -> list[JobScalar]:
    """An ended job's metric rows, by name. A job archived before metrics were parsed at the end gets them
    computed now, once (its archive is read again after SCANNED_FOR at most, if it has none)."""
    rows = list(JobScalar.objects.filter(job=job).order_by("name"))
    if rows or job.logs_archived_at is None:
        return rows
    key = f"jobs.scalars:scanned:{job.pk}:{job.logs_archived_at.timestamp()}"
    if cache.get(key):
        return []
    compute(job)
    cache.set(key, True, int(SCANNED_FOR.total_seconds()))
    return list(JobScalar.objects.filter(job=job).order_by("name"))


def last_values(job_ids: Iterable[int]) -> dict[int, dict[str, JobScalar]]:
    """{job id: {name: row}} of these jobs' metrics, in one query (the points, the large part, left out)."""
    out: dict[int, dict[str, JobScalar]] = {}
    rows = JobScalar.objects.filter(job_id__in=list(job_ids)).defer("points").order_by("job_id", "name")
    for row in rows:
        out.setdefault(row.job_id, {})[row.name] = row
    return out


def common_names(per_job: Iterable[dict[str, Any]], limit: int | None = None) -> list[str]:
    """Metric names of several jobs, those most jobs have first (then by name), at most `limit`."""
    counts: dict[str, int] = {}
    for names in per_job:
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    ordered = sorted(counts, key=lambda n: (-counts[n], n))
    return ordered if limit is None else ordered[:limit]


# --- the job page ------------------------------------------------------------------------------------------------


@dataclass
class Chart:
    name: str
    points: str  # the polyline's "x,y x,y ..." in jobmetrics' box
    last_x: float
    last_y: float
    last: str
    low: str
    high: str
    count: int
    first_step: int
    last_step: int
    top: str  # the values at the box's top and bottom
    bottom: str
    bands: list[jobmetrics.Band] = field(default_factory=list)  # hover strips, each with its steps' values


def chart(name: str, points: Points, summary: Summary) -> Chart:
    """One metric's chart: steps across (first to last), its values up, with a little room above and below."""
    pad = (summary.max - summary.min) * 0.05 or abs(summary.max) * 0.05 or 1.0
    low, high = summary.min - pad, summary.max + pad
    first_step = points[0][0]
    # The steps across; a metric printed at one step only (a final test score) is drawn in the middle, not at the
    # left edge, where the box cut its dot in half and the chart looked empty.
    x0, x1 = (first_step, points[-1][0]) if points[-1][0] > first_step else (first_step - 1, first_step + 1)
    line, last_x, last_y = jobmetrics.polyline([(float(s), v) for s, v in points], x0, x1, low, high)
    bands = [jobmetrics.Band(x, width, _hover_text(points, int(first), int(last)))
             for x, width, first, last in jobmetrics.strips([float(s) for s, _ in points], x0, x1)]
    return Chart(name, line, last_x, last_y, fmt(summary.last), fmt(summary.min), fmt(summary.max), summary.count,
                 first_step, summary.last_step, fmt(high), fmt(low), bands)


def _hover_text(points: Points, first: int, last: int) -> str:
    """What hovering the steps first..last of a chart says: the value at a step, or the last, min and max of a few."""
    values = [v for s, v in points if first <= s <= last]
    if first == last:
        return f"step {first}: {fmt(values[-1])}"
    return f"steps {first}–{last}: last {fmt(values[-1])}, min {fmt(min(values))}, max {fmt(max(values))}"


def chart_of_row(row: JobScalar) -> Chart | None:
    points = [(int(p[0]), float(p[1])) for p in row.points or [] if isinstance(p, list) and len(p) == 2]
    if not points:
        return None
    return chart(row.name, points, Summary(row.last, row.min, row.max, row.count, row.last_step))


@dataclass
class Section:
    """What the job page's "Training metrics" section shows."""

    charts: list[Chart] = field(default_factory=list)
    pod_id: str = ""
    source: str = ""  # "archive" (JobScalar rows) | "live" (parsed from DLC now) | "" (not started)
    cut: bool = False  # live: the pod's log has lines before the LIVE_LINES read
    error: str = ""
    refresh: bool = False  # the section asks for itself again (the job runs, or its log is not archived yet)


def live(job: Job, prefer: str = "") -> tuple[str, dict[str, Points], bool]:
    """(pod id, metrics, cut) from the newest LIVE_LINES lines of the job's pods in DLC: the first pod in the
    page's order (`prefer`, the pod chosen by the last refresh, first) with metric lines; ("", {}, False) if none.
    Raises dlc.DLCError."""
    by_id = {p.get("PodId"): p for p in job.pods or [] if isinstance(p, dict)}
    rows = [p for p in jobpage.pods(job) if p.started and p.pod_id in by_id]
    rows.sort(key=lambda p: p.pod_id != prefer)  # stable: the others keep the page's order
    now = timezone.now()
    for row in rows[:LIVE_PODS]:
        start, _ = logarchive.pod_range(job, by_id[row.pod_id])
        lines, cut = logarchive.fetch_newest(job.workspace, job.dlc_job_id, row.pod_id, start, now,
                                             limit=LIVE_LINES)
        if len(lines) > LIVE_LINES:
            lines, cut = lines[-LIVE_LINES:], True
        found = parse(lines)
        if found:
            _remember(job, found)
            return row.pod_id, found, cut
    _remember(job, {})
    return "", {}, False


# --- a running job's last values (the sweep page) --------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    values: dict[str, Summary]  # of the points read (the newest LIVE_LINES lines: min and max are of those)
    read_at: datetime


def _sample_key(job: Job) -> str:
    return f"scalars:sample:{job.pk}:{job.dlc_job_id}"


def _remember(job: Job, found: dict[str, Points]) -> Sample:
    # Every live read (the job page's, the sweep page's) leaves its summary for the sweep page.
    sample = Sample({name: summarize(points) for name, points in found.items()}, timezone.now())
    cache.set(_sample_key(job), sample, SAMPLE_KEEP_SECONDS)
    return sample


def sample_reads() -> int:
    """Running trials whose logs one view of a sweep page reads from DLC at most (each up to LIVE_PODS GetPodLogs
    calls): the page stays quick, and its 5-second poll reads the others in turn."""
    return int(getattr(settings, "DLC_SWEEP_LIVE_READS", 3))


def sampled(jobs: Iterable[Job], reads: int | None = None) -> dict[int, dict[str, Summary]]:
    """{job id: {name: Summary}} of the running jobs' metrics as last read from DLC (by the job page or this),
    from the cache in one round trip. Of the jobs not read for SAMPLE_SECONDS, at most `reads`
    (sample_reads()) are read now, the longest unread first, each claimed for SAMPLE_SECONDS so that viewers and
    polls at once read a job once: DLC sees at most one read per running job per SAMPLE_SECONDS, however many
    look. A failed read keeps the older values (and is tried again after SAMPLE_SECONDS)."""
    running = {_sample_key(j): j for j in jobs if j.dlc_job_id and j.is_active and j.started_at}
    if not running:
        return {}
    found = cache.get_many(list(running))
    out: dict[int, dict[str, Summary]] = {}
    stale: list[tuple[float, Job]] = []
    now = timezone.now()
    for key, job in running.items():
        sample = found.get(key)
        if isinstance(sample, Sample):
            out[job.pk] = sample.values
            if (now - sample.read_at).total_seconds() < SAMPLE_SECONDS:
                continue
        stale.append((sample.read_at.timestamp() if isinstance(sample, Sample) else 0.0, job))
    budget = sample_reads() if reads is None else reads
    for _, job in sorted(stale, key=lambda s: (s[0], s[1].pk)):
        if budget <= 0:
            break
        if not cache.add(f"{_sample_key(job)}:reading", True, SAMPLE_SECONDS):
            continue  # another view reads it now, or read it a moment ago and failed
        budget -= 1
        try:
            _pod, metrics, _cut = live(job)
        except dlc.DLCError as err:
            log.info("could not read the metrics of running job %s: %s", job.pk, err)
            continue
        out[job.pk] = {name: summarize(points) for name, points in metrics.items()}
    return {pk: values for pk, values in out.items() if values}


def section(job: Job, prefer: str = "") -> Section:
    """The section of an ended, archived job from its rows (no DLC call); of any other started job from DLC now,
    refreshed. A failed DLC read is the section's error, never an exception."""
    if not job.dlc_job_id:
        return Section(refresh=job.is_active)  # waiting to submit: asks again until DLC knows the job
    if not job.is_active and job.logs_archived_at is not None:
        rows = stored(job)
        charts = [c for c in (chart_of_row(r) for r in rows) if c is not None]
        return Section(charts, rows[0].pod_id if rows else "", "archive")
    # Each read is up to LIVE_PODS x LIVE_LINES lines from DLC: every viewer and tab of a running job (and anyone
    # asking in a loop) shares one read per LIVE_CACHE_SECONDS, so the page cannot eat the workspace's API quota.
    known = {p.get("PodId") for p in job.pods or [] if isinstance(p, dict)}
    prefer = prefer if prefer in known else ""  # ?pod= is the client's: a made-up one must not make a new key
    key = f"scalars:live:{job.pk}:{job.dlc_job_id}:{job.created_at.timestamp()}:{prefer}"
    cached = cache.get(key)
    if isinstance(cached, Section):
        return cached
    result = Section(source="live", refresh=True)
    try:
        pod_id, found, cut = live(job, prefer)
    except dlc.DLCError as err:
        result.error = dlc.reason(err)
        return result
    result.pod_id, result.cut = pod_id, cut
    result.charts = [chart(name, downsample(points), summarize(points)) for name, points in sorted(found.items())]
    cache.set(key, result, LIVE_CACHE_SECONDS)
    return result
