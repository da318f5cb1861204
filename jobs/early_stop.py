"""Median early stopping of a sweep's trials, as Katib's "medianstop": a running trial whose best value so far is
worse than the median of the succeeded trials' running averages at its step is stopped, so the sweep's budget goes
to the trials that may still win.

Opt-in per sweep (Sweep.early_stop_*): the metric (as METRIC lines name it, jobs.scalars), its goal (min | max),
after how many succeeded trials the rule starts (N, default 3, or trials - 1 on a smaller sweep) and the first step
it looks at (S, default 0).

The rule, for a running trial whose last reported step s is at least S: over the succeeded trials that reported the
metric at or before step s (at least N of them, else nothing is decided), the median of each one's running average
(the mean of its points with step <= s); the trial is stopped when its best value so far is worse than that median
(above it for min, below it for max; equal is not worse). A succeeded trial's points are its stored JobScalar
points, downsampled to jobs.scalars.MAX_POINTS for a long run, so its average is of those.

`parse` checks the settings for the wizard's Sweep box and the API alike; `decide` is the rule, a plain function;
`check` (the beat task's) reads the running trials' metrics from DLC and stops through jobs.lifecycle, once DLC
confirms the trial still runs (the row may be a sync behind). `reason_of` is what says a trial was stopped early.

A running trial's points are its whole log's, not a window of its newest lines (a trial that printed its METRIC
lines and then thousands of other lines would be judged without them): each cycle reads its pods on from where the
last one stopped, forward, at most READ_LINES lines a pod (logarchive.fetch_oldest), and adds the metric's points to
what the earlier cycles found (`Reading`, kept in the cache per trial; lost, the log is read again from its start).
A trial printing faster than that is judged a cycle or more late, at the last step read: the rule at that step, on
its points up to it, as it would have been then.
"""

from __future__ import annotations

import dataclasses
import logging
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from jobs import sweeps

log = logging.getLogger(__name__)

# The wizard's fields (the Sweep box) and the API's keys of "EarlyStopping", in the same order.
METRIC_FIELD, GOAL_FIELD, AFTER_FIELD, STEP_FIELD = "sweep_stop_metric", "sweep_stop_goal", "sweep_stop_after", \
    "sweep_stop_step"
FIELDS = (METRIC_FIELD, GOAL_FIELD, AFTER_FIELD, STEP_FIELD)
API_KEYS = {"Metric": METRIC_FIELD, "Goal": GOAL_FIELD, "AfterSucceeded": AFTER_FIELD, "NotBeforeStep": STEP_FIELD}
DEFAULT_AFTER = 3
DEFAULT_STEP = 0
RUNNING = "Running"  # only a running trial prints new metrics worth a read
READ_LINES = 5000  # a pod's lines one cycle reads (about), on from the last cycle's: a live chart's read, in size
READING_KEEP = timedelta(days=7)  # a trial's Reading outlives many cycles; a trial left unread this long starts over


def max_checks() -> int:
    """Running trials whose metrics one cycle reads: each read is GetPodLogs calls (up to jobs.scalars.LIVE_PODS
    pods, each about READ_LINES lines on from the last cycle's), so a workspace's API quota bounds it, not the
    number of running trials nor the length of their logs. The oldest checked go first, so every trial is read in
    turn."""
    return int(getattr(django_settings, "DLC_EARLY_STOP_MAX_CHECKS", 20))


@dataclass(frozen=True)
class Settings:
    metric: str
    goal: str  # min | max
    after: int = DEFAULT_AFTER  # succeeded trials that reported the metric before the rule stops any
    step: int = DEFAULT_STEP  # no trial is stopped before it reports this step

    def fields(self) -> dict[str, Any]:
        """The Sweep row's fields."""
        return {"early_stop_metric": self.metric, "early_stop_goal": self.goal, "early_stop_after": self.after,
                "early_stop_step": self.step}


def settings_of(sweep) -> Settings | None:
    """A sweep's settings, None when early stopping is off."""
    if not sweep.early_stop_metric:
        return None
    return Settings(sweep.early_stop_metric, sweep.early_stop_goal or sweeps.default_goal(sweep.early_stop_metric),
                    sweep.early_stop_after, sweep.early_stop_step)


def as_json(sweep) -> dict[str, Any] | None:
    """The API's view of a sweep's early stopping (its EarlyStopping keys), None when off."""
    found = settings_of(sweep)
    if found is None:
        return None
    return {"Metric": found.metric, "Goal": found.goal, "AfterSucceeded": found.after, "NotBeforeStep": found.step}


def _whole(value: Any, low: int, high: int, what: str, typed: bool = False) -> tuple[int | None, str | None]:
    """(number, None) of a whole number low..high given as text (a form) or a JSON integer, or (None, why not).
    `typed` (JSON): a JSON integer only, as the API's document says: "3" would hide a client's type error."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None, f"{what} must be a whole number from {low:,} to {high:,}."
    if typed and isinstance(value, str):
        return None, f"{what} must be a JSON integer from {low:,} to {high:,}, not the string {value[:24]!r}."
    text = str(value).strip()
    if not (text.isascii() and text.lstrip("+").isdigit()) or len(text) > 20:  # int("²") raises
        return None, f"{what} must be a whole number from {low:,} to {high:,}, not {text[:24]!r}."
    number = int(text)
    if not low <= number <= high:
        return None, f"{what} must be from {low:,} to {high:,}; {number:,} is out of range."
    return number, None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def parse(given: Mapping[str, Any], *, trials: int | None = None,
          typed: bool = False) -> tuple[Settings | None, dict[str, list[str]]]:
    """(settings, errors keyed by FIELDS) of the early-stopping fields (the wizard's names; the API maps its keys
    to them). A blank metric with N and S blank too is no early stopping; N or S without a metric is an error at
    the metric (the numbers would be ignored without a word). A blank goal is the metric's default (min for a loss
    or an error, as the ranking's); blank N and S their defaults. `trials`: the sweep's number of trials when known
    (grid size or Trials): an N the sweep can never reach is an error, and a blank N on a sweep too small for the
    default is the largest that can fire (trials - 1). `typed`: the API's JSON, whose numbers must be JSON integers."""
    from jobs import scalars

    metric = given.get(METRIC_FIELD)
    metric = metric.strip() if isinstance(metric, str) else metric
    if metric in (None, ""):
        if _blank(given.get(AFTER_FIELD)) and _blank(given.get(STEP_FIELD)):
            return None, {}
        return None, {METRIC_FIELD: ["Name the metric, or clear these: without a metric, After N succeeded trials "
                                     "and Not before step are ignored and no trial is ever stopped early."]}
    errors: dict[str, list[str]] = {}
    if not isinstance(metric, str) or not scalars.NAME_RE.fullmatch(metric) or metric == "step":
        shown = repr(metric[:64]) if isinstance(metric, str) else "this"
        errors[METRIC_FIELD] = [f"{shown} is not a metric name as METRIC lines print it: letters, digits and _ . / -, "
                                "starting with a letter or _, at most 64 characters (and not step, the x-axis)."]
    goal = given.get(GOAL_FIELD)
    goal = goal.strip() if isinstance(goal, str) else goal
    if goal in (None, ""):
        goal = sweeps.default_goal(metric) if METRIC_FIELD not in errors else "min"
    elif goal not in sweeps.GOALS:
        errors[GOAL_FIELD] = [f"The goal is min (lower is better) or max (higher is better), not {str(goal)[:20]!r}."]
    numbers = {}
    for field, default, low, high, what in (
            (AFTER_FIELD, DEFAULT_AFTER, 1, sweeps.max_trials(), "After N succeeded trials"),
            (STEP_FIELD, DEFAULT_STEP, 0, scalars.MAX_STEP - 1, "Not before step")):
        raw = given.get(field)
        if _blank(raw) and not (typed and raw is not None):  # in JSON, "" is a string where a number belongs
            # A blank N on a sweep of 2-3 trials could never fire at 3: it becomes the most that can (trials - 1).
            small = field == AFTER_FIELD and trials is not None and 1 < trials <= default
            numbers[field] = trials - 1 if small else default
            continue
        numbers[field], problem = _whole(raw, low, high, what, typed)
        if problem:
            errors[field] = [problem]
        elif field == AFTER_FIELD and trials is not None and numbers[field] > trials - 1:
            # The rule stops a running trial once N others succeeded: with N >= trials there is none left to stop.
            errors[field] = [f"After N succeeded trials is {numbers[field]:,}, but the sweep has {trials:,} "
                             f"trial{'s' if trials != 1 else ''}: the rule needs that many succeeded and one "
                             f"still running, so it could never stop one. "
                             + (f"Use at most {trials - 1:,}." if trials > 1 else "Clear early stopping.")]
    if errors:
        return None, errors
    return Settings(metric, goal, numbers[AFTER_FIELD], numbers[STEP_FIELD]), {}


def form_input(params: Mapping[str, Any]) -> dict[str, str]:
    """The fields as typed (a request's GET or POST)."""
    return {name: str(params.get(name, ""))[:100] for name in FIELDS}


# --- the rule ------------------------------------------------------------------------------------------------------

Points = list[tuple[int, float]]


def running_average(points: Iterable[tuple[int, float]], step: int) -> float | None:
    """The mean of the points at or before `step`; None if there are none."""
    values = [v for s, v in points if s <= step]
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Decision:
    stop: bool
    step: int  # the running trial's last step, where the succeeded trials are compared
    best: float  # its best value so far
    median: float  # of the succeeded trials' running averages at `step`
    count: int  # succeeded trials in the median

    def reason(self, metric: str) -> str:
        """What the trials table, the job page and the audit log say of a stop."""
        from jobs.scalars import fmt

        return (f"Stopped early: best {metric} {fmt(self.best)} at step {self.step}, behind the median "
                f"{fmt(self.median)} of {self.count} succeeded trial{'s' if self.count != 1 else ''}")


def decide(points: Points, succeeded: Iterable[Points], found: Settings) -> Decision | None:
    """The median stopping rule for one running trial's points of the metric (by step) against the succeeded
    trials' points; None when it cannot be applied yet (no points, its last step before S, fewer than N succeeded
    trials with points at or before that step)."""
    if not points:
        return None
    step = points[-1][0]
    if step < found.step:
        return None
    averages = [a for a in (running_average(p, step) for p in succeeded) if a is not None]
    if len(averages) < max(1, found.after):
        return None
    median = statistics.median(averages)
    values = [v for _, v in points]
    best = min(values) if found.goal == "min" else max(values)
    worse = best > median if found.goal == "min" else best < median
    return Decision(worse, step, best, median, len(averages))


# --- the beat task's work ------------------------------------------------------------------------------------------


def succeeded_points(sweep_id: int, metric: str) -> list[Points]:
    """The stored points of the metric of the sweep's succeeded trials (their logs archived), in one query."""
    from jobs.models import JobScalar

    rows = JobScalar.objects.filter(job__sweep_trial__sweep_id=sweep_id, job__status="Succeeded",
                                    name=metric).values_list("points", flat=True)
    return [[(int(p[0]), float(p[1])) for p in points if isinstance(p, list) and len(p) == 2] for points in rows]


@dataclass
class Reading:
    """How far a running trial's pods were read, and the metric's points found: every line of pod P stamped up to
    upto[P] was read once, its metric lines counted in lines[P] (the x of a line without a step), its points of the
    metric in points[P] (downsampled to jobs.scalars.MAX_POINTS, which keeps the first, the last, the lowest and
    the highest: what the rule looks at)."""

    upto: dict[str, datetime] = dataclasses.field(default_factory=dict)
    lines: dict[str, int] = dataclasses.field(default_factory=dict)
    points: dict[str, Points] = dataclasses.field(default_factory=dict)


def _reading_key(trial, metric: str) -> str:
    return f"early_stop:reading:{trial.job_id}:{trial.job.dlc_job_id}:{metric}"


def trial_points(trial, metric: str, now: datetime | None = None) -> Points:
    """The running trial's points of the metric so far: of the first of its pods (in the job page's order, as
    jobs.scalars chooses) that printed it, read on from the last cycle's Reading, up to READ_LINES lines a pod, up
    to the instant whose lines DLC surely holds (podlogs.settled). Raises dlc.DLCError; what was read before the
    error is kept."""
    from jobs import jobpage, logarchive, podlogs, scalars

    job, key = trial.job, _reading_key(trial, metric)
    found = cache.get(key)
    reading = found if isinstance(found, Reading) else Reading()
    by_id = {p.get("PodId"): p for p in job.pods or [] if isinstance(p, dict)}
    until = podlogs.settled(now)
    try:
        for row in [p for p in jobpage.pods(job) if p.started and p.pod_id in by_id][:scalars.LIVE_PODS]:
            pod = row.pod_id
            done = reading.upto.get(pod)
            start = done + timedelta(microseconds=1) if done else logarchive.pod_range(job, by_id[pod])[0]
            if start <= until:
                lines, upto = logarchive.fetch_oldest(job.workspace, job.dlc_job_id, pod, start, until,
                                                      limit=READ_LINES)
                metrics = {metric: reading.points.get(pod, [])}
                reading.lines[pod] = scalars.extend(metrics, lines, reading.lines.get(pod, 0), only=metric)
                reading.points[pod], reading.upto[pod] = scalars.downsample(metrics[metric]), upto
            if reading.points.get(pod):
                return reading.points[pod]  # the later pods are not read: DDP ranks print the same metrics
        return []
    finally:
        cache.set(key, reading, int(READING_KEEP.total_seconds()))


def candidates():
    """The running trials of sweeps with early stopping on, not stopped yet, the least recently checked first."""
    from jobs.models import SweepTrial

    return (SweepTrial.objects.filter(sweep__early_stop_metric__gt="", stopped_early_at__isnull=True,
                                      job__status=RUNNING, job__stop_requested_at__isnull=True)
            .exclude(job__dlc_job_id="").select_related("sweep", "job", "job__workspace")
            .order_by(F("early_checked_at").asc(nulls_first=True), "pk"))


# The one rule of what says a trial was stopped early (the sweep page, the job page, the API, and through
# jobs.jobpage.console_stop_reason the mail and the webhook): its mark, while its job is being stopped or was. A
# trial that ended on its own before the StopJob reached it (DLC said Succeeded or Failed) keeps the mark as the
# record of what the console asked, but nothing says it was stopped early.
STOPPED = ("Stopping", "Stopped")


def reason_of(trial) -> str:
    """Why early stopping stopped the trial, "" if it did not (or the trial ended on its own meanwhile)."""
    return trial.stop_reason if trial.stop_reason and trial.job.status in STOPPED else ""


def still_running(trial) -> bool:
    """Whether DLC says the trial's job still runs, asked just before a stop: the row may be a sync behind, and a
    trial that already succeeded must not be stopped (audited, its StopJob refused) on what the row says. One
    GetJob, only for a trial the rule would stop; a failed call is a no for this cycle."""
    from jobs import dlc

    try:
        item = dlc.get_job(trial.job.workspace, trial.job.dlc_job_id)
    except dlc.DLCError as err:
        log.info("early stopping could not confirm trial %s of sweep %s runs: %s", trial.number, trial.sweep_id, err)
        return False
    return item.get("Status") == RUNNING


def stop_trial(trial, reason: str, now: datetime | None = None) -> bool:
    """Stop a trial through the console's stop path (jobs.lifecycle.request_stop, audited with the reason), and
    record the reason on it. Idempotent: a trial already stopped early, or whose job ended, is left alone."""
    from jobs import lifecycle
    from jobs.models import SweepTrial

    with transaction.atomic():
        claimed = SweepTrial.objects.filter(pk=trial.pk, stopped_early_at__isnull=True).update(
            stopped_early_at=now or timezone.now(), stop_reason=reason[:300])
        if not claimed:
            return False
        if lifecycle.request_stop(None, trial.job, reason=reason) not in ("stopping", "stopped"):
            transaction.set_rollback(True)  # it ended meanwhile: not stopped early after all
            return False
    return True


def check(limit: int | None = None) -> list[int]:
    """One cycle: read the metrics of at most `limit` (max_checks()) running trials from DLC and stop those the
    rule says are behind. Returns the stopped trials' job ids. Safe to run twice or at once: a stop is claimed on
    the trial's row first."""
    from jobs import dlc

    limit = max_checks() if limit is None else limit
    series: dict[int, list[Points]] = {}
    stopped: list[int] = []
    read = 0
    for trial in candidates():
        if read >= limit:
            break
        found = settings_of(trial.sweep)
        if trial.sweep_id not in series:
            series[trial.sweep_id] = succeeded_points(trial.sweep_id, found.metric)
        if len(series[trial.sweep_id]) < found.after:
            continue  # the rule cannot stop it yet: no DLC read spent on it
        read += 1
        trial.early_checked_at = timezone.now()
        type(trial).objects.filter(pk=trial.pk).update(early_checked_at=trial.early_checked_at)
        try:
            points = trial_points(trial, found.metric)
        except dlc.DLCError as err:
            log.info("early stopping could not read trial %s of sweep %s: %s", trial.number, trial.sweep_id, err)
            continue
        decision = decide(points, series[trial.sweep_id], found)
        if decision is not None and decision.stop and still_running(trial) \
                and stop_trial(trial, decision.reason(found.metric)):
            stopped.append(trial.job_id)
    return stopped
