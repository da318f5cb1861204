"""Scheduled (recurring) jobs: recurrences and their next run, creating a schedule, and running the due ones.

Plain functions, testable without a request or a worker; jobs.tasks.run_schedules (beat) calls run_due().

A recurrence is every N hours (1..168, elapsed time from the schedule's anchor), daily at HH:MM or weekly on
chosen weekdays at HH:MM, wall-clock in the console's zone (settings.TIME_ZONE). On a DST change day a time the
clocks skip (02:30 in Berlin in spring) runs at the same offset as before the change (03:30); a time that occurs
twice (autumn) runs once, at its first occurrence.

A cron recurrence is a 5-field expression evaluated by cronsim in the console's zone, as Debian's cron does: an
expression with a fixed minute and hour ("30 2 * * *") follows the wall clock, a skipped time running at the first
minute that exists after it (03:00) and a repeated time once; one whose minute or hour starts with "*" ("*/15 * * *
*", "0 * * * *") counts real time, so it also runs in both passes of a repeated hour. Its runs must be at least
DLC_SCHEDULE_MIN_MINUTES apart.

Missed slots (the console was down) are not replayed one by one: the next beat starts one run for the earliest
missed slot, then the schedule moves on to the next future slot.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from django.utils import timezone

from jobs import access, audit, secretbox, spec, templates_lib
from jobs import catalog as C
from jobs.models import AuditEvent, Job, Membership, Schedule, ScheduledRun, Workspace

log = logging.getLogger(__name__)

MAX_EVERY_HOURS = 168
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAY_LABELS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS_RULE = ("Weekdays are day names (mon ... sun or monday ... sunday, any case) or numbers as cron counts "
                 "them: 0 or 7 = Sunday, 1 = Monday ... 6 = Saturday.")
# The recurrence fields each kind uses; the API refuses the others rather than dropping them unsaid.
KIND_FIELDS = {"hourly": ("every_hours",), "daily": ("at",), "weekly": ("weekdays", "at"), "cron": ("cron",)}
# The values each cron field can take, for the step rule (cron_problem).
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # day-of-week 7 is Sunday again, as 0
NAME_MAX = 100
_TIME_RE = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")
STAMP = "-%Y%m%d-%H%M"
RUNS_SHOWN = 5
JOB = "job"  # the key of the CreateJob body in the API, and of its errors
CRON_MAX = 100
CRON_FIELDS = "minute hour day-of-month month day-of-week"
# cronsim takes 5 fields only; these are the usual cron shorthands for them.
CRON_ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
                "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
GAP_SLOTS = 50  # the min-gap rule looks at this many next runs
PREVIEW_RUNS = 3


def zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


@dataclass(frozen=True)
class Recurrence:
    kind: str  # Schedule.HOURLY, DAILY, WEEKLY
    every_hours: int | None = None
    at: time | None = None
    weekdays: tuple[int, ...] = ()  # 0 = Monday (Python's weekday(); the API also takes cron's numbers)
    anchor: datetime | None = None  # hourly: slots are anchor + k x every_hours
    cron: str = ""  # cron: the expression (jobs.schedules.cron_problem accepted it)


def next_run(recurrence: Recurrence, after: datetime, tz: ZoneInfo | None = None) -> datetime:
    """The first slot of the recurrence strictly after `after` (aware), as an aware UTC datetime."""
    tz = tz or zone()
    after = after.astimezone(ZoneInfo("UTC"))
    if recurrence.kind == Schedule.CRON:
        slot = next(cron_slots(recurrence.cron, after, tz), None)
        if slot is None:
            raise ValueError(f"the cron expression {recurrence.cron!r} has no run in the next 50 years")
        return slot
    if recurrence.kind == Schedule.HOURLY:
        step = timedelta(hours=recurrence.every_hours or 1)
        anchor = (recurrence.anchor or after).astimezone(ZoneInfo("UTC"))
        if anchor > after:
            return anchor
        return anchor + step * ((after - anchor) // step + 1)
    at = recurrence.at or time(0, 0)
    days = set(recurrence.weekdays) if recurrence.kind == Schedule.WEEKLY else set(range(7))
    if not days:
        raise ValueError("a weekly recurrence needs at least one weekday")
    start = after.astimezone(tz).date()
    for offset in range(9):  # a week and a bit covers every weekday set, whatever `after` is
        day = start + timedelta(days=offset)
        if day.weekday() not in days:
            continue
        # fold=0: of a time that occurs twice, the first; of one the clocks skip, the pre-change offset.
        slot = datetime.combine(day, at, tzinfo=tz).astimezone(ZoneInfo("UTC"))
        if slot > after:
            return slot
    raise AssertionError("unreachable: some day of the next 9 is a chosen weekday")


def _cron_sim(expression: str, start: datetime) -> CronSim:
    text = " ".join(expression.split())
    return CronSim(CRON_ALIASES.get(text.lower(), text), start)


def cron_slots(expression: str, after: datetime, tz: ZoneInfo | None = None) -> Iterator[datetime]:
    """The runs of a cron expression strictly after `after`, ascending, as aware UTC datetimes (none after 50
    years without one). Raises CronSimError for an expression cron_problem refuses."""
    tz = tz or zone()
    last = after.astimezone(ZoneInfo("UTC"))
    for found in _cron_sim(expression, last.astimezone(tz)):
        slot = found.astimezone(ZoneInfo("UTC"))
        # Started inside a repeated hour, cronsim's wall-clock mode can answer a time of that hour's first pass,
        # already gone: never a slot at or before the last one, so a schedule never goes back.
        if slot > last:
            last = slot
            yield slot


def cron_problem(expression: Any, now: datetime | None = None) -> str | None:
    """Why a cron expression is refused (it does not parse, never runs, or runs too often), or None."""
    if not isinstance(expression, str) or not expression.strip():
        return f"Enter a cron expression ({CRON_FIELDS}), e.g. */30 * * * *."
    if len(expression) > CRON_MAX:
        return f"At most {CRON_MAX} characters."
    text = " ".join(expression.split())
    if len(CRON_ALIASES.get(text.lower(), text).split()) != 5:
        return f"Give 5 fields: {CRON_FIELDS}, e.g. 30 2 * * MON-FRI (no seconds field), or @daily, @hourly, ..."
    problem = _step_problem(CRON_ALIASES.get(text.lower(), text))
    if problem:
        return problem
    tz = zone()
    now = now or timezone.now()
    try:
        slots = [now, *(slot for slot, _ in zip(cron_slots(text, now, tz), range(GAP_SLOTS), strict=False))]
    except CronSimError as error:
        never = str(error) == "Bad day-of-month" and _date_never_occurs(CRON_ALIASES.get(text.lower(), text))
        return never or f"{error} ({CRON_FIELDS})."
    if len(slots) == 1:
        return "This expression never runs."
    least = settings.DLC_SCHEDULE_MIN_MINUTES
    for before, slot in zip(slots[1:], slots[2:], strict=False):
        if slot - before < timedelta(minutes=least):
            apart = int((slot - before).total_seconds() // 60)
            return (f"Runs must be at least {least} minutes apart: this expression runs at "
                    f"{before.astimezone(tz):%Y-%m-%d %H:%M} and {apart} minute{'s' if apart != 1 else ''} later "
                    f"({tz.key}).")
    return None


def _date_never_occurs(expression: str) -> str | None:
    """cronsim says "Bad day-of-month" both of a day no month has (32) and of one none of the chosen months has
    (31 April, 30 February): the second is a date that never comes, said as such."""
    _, _, day, month, weekday = expression.split()
    if not weekday.startswith("*") and not day.startswith("*"):
        return None  # either day field matches (cron's "or"): cronsim accepts it
    try:
        CronSim(f"0 0 {day} * *", datetime(2000, 1, 1))
    except CronSimError:
        return None  # the day itself is wrong: cronsim's words say so
    return (f"That date never occurs: day-of-month {day} is past the last day of each month of the month field "
            f"({month}), so this expression would never run. Choose a day those months have, or L for each month's "
            "last day.")


def _step_problem(expression: str) -> str | None:
    """A step larger than its field's whole range ("*/999", "1-59/999") hits one value at most; cron
    implementations differ on it (some refuse it, others, cronsim too, run once at the range's start), so it is
    refused with the way to say that one value."""
    for (low, high), name, field in zip(CRON_RANGES, CRON_FIELDS.split(), expression.split(), strict=False):
        for term in field.split(","):
            base, _, step = term.partition("/")
            if step.isascii() and step.isdigit() and (len(step.lstrip("0")) > 3 or int(step) > high - low):
                start = base.split("-")[0]
                start = str(low) if start == "*" else start
                return (f"The step /{step} of the {name} field is larger than its range ({low}-{high}), so it "
                        f"would run at one {name} only; cron implementations differ on such steps: write that "
                        f"{name} itself (e.g. {start}).")
    return None


def cron_preview(expression: Any, count: int = PREVIEW_RUNS, now: datetime | None = None) \
        -> tuple[list[datetime], str | None]:
    """(the next `count` runs in the console's zone, None) or ([], why the expression is refused): the form's
    preview, with the same rule as saving."""
    problem = cron_problem(expression, now)
    if problem:
        return [], problem
    tz = zone()
    runs = cron_slots(expression, now or timezone.now(), tz)
    return [slot.astimezone(tz) for slot, _ in zip(runs, range(count), strict=False)], None


def describe(recurrence: Recurrence) -> str:
    """The recurrence in words, e.g. "Every 6 hours (from 2026-12-01 22:40 UTC+01:00)", "Daily at 02:00", "Weekly
    on Mon, Thu at 02:00", "At 02:30 on Monday through Friday (cron 30 2 * * 1-5)". Every N hours counts elapsed
    time from its anchor, whatever the clocks do, so its words name no zone (zoned_words): the anchor carries its
    UTC offset."""
    if recurrence.kind == Schedule.CRON:
        text = " ".join(recurrence.cron.split())
        try:
            words = _cron_sim(text, timezone.now()).explain()
        except Exception:  # the explanation is a nicety: the expression itself is what runs
            return f"Cron {text}"
        fields = CRON_ALIASES.get(text.lower(), text).split()
        if len(fields) == 5 and not fields[2].startswith("*") and not fields[4].startswith("*"):
            # Both day fields restricted: cron runs on either (cronsim too), its explanation says "and".
            head, sep, tail = words.rpartition(" and on ")
            words = f"{head} or on {tail}" if sep else words
        return f"{words} (cron {text})"
    if recurrence.kind == Schedule.HOURLY:
        n = recurrence.every_hours or 1
        every = "Every hour" if n == 1 else f"Every {n} hours"
        return f"{every} (from {_instant(recurrence.anchor)})" if recurrence.anchor else every
    at = (recurrence.at or time(0, 0)).strftime("%H:%M")
    if recurrence.kind == Schedule.DAILY:
        return f"Daily at {at}"
    return f"Weekly on {', '.join(WEEKDAY_LABELS[d] for d in sorted(recurrence.weekdays))} at {at}"


def zoned_words(recurrence: Recurrence) -> str:
    """describe's words followed by the console's zone, "Daily at 02:00 (Europe/Berlin)", for the kinds whose times
    are its wall clock (daily, weekly, cron); every N hours alone: a zone would claim its runs keep their clock
    times, which they do not across a DST change (each is N elapsed hours after the last)."""
    words = describe(recurrence)
    return words if recurrence.kind == Schedule.HOURLY else f"{words} ({zone().key})"


def _instant(when: datetime) -> str:
    """A moment in the console's zone with its UTC offset, e.g. "2026-12-01 22:40 UTC+01:00" ("... UTC" at +00:00):
    true whatever the zone does later, unlike the zone's name, which reads as its wall clock."""
    local = when.astimezone(zone())
    offset = local.strftime("%z")  # +0100
    shown = "UTC" if offset in ("+0000", "") else f"UTC{offset[:3]}:{offset[3:]}"
    return f"{local:%Y-%m-%d %H:%M} {shown}"


def parse_recurrence(kind: Any, every_hours: Any = None, at: Any = None, weekdays: Any = None, cron: Any = None,
                     *, anchor: datetime | None = None, from_json: bool = False) \
        -> tuple[Recurrence | None, dict[str, list[str]]]:
    """(recurrence, errors keyed kind / every_hours / at / weekdays / cron) from a form's or the API's values.

    from_json (the API): every_hours must be a JSON whole number, as the jobs API takes numbers (the form's text
    box gives digits), and a field of another kind is refused rather than dropped (the form shows them all).
    """
    errors: dict[str, list[str]] = {}
    kinds = [k for k, _ in Schedule.KINDS]
    if kind not in kinds:
        return None, {"kind": [f"Choose one of: {', '.join(kinds)}."]}
    if from_json:
        given = {"every_hours": every_hours, "at": at, "weekdays": weekdays, "cron": cron}
        for field, value in given.items():
            if field not in KIND_FIELDS[kind] and value not in (None, [], ""):
                users = [k for k, fields in KIND_FIELDS.items() if field in fields]
                errors[field] = [f"{field} is only used when kind is {' or '.join(users)}."]
    hours, clock, days, expression = None, None, (), ""
    if kind == Schedule.CRON:
        problem = cron_problem(cron)
        if problem:
            errors["cron"] = [problem]
        else:
            expression = " ".join(cron.split())
    elif kind == Schedule.HOURLY:
        hours = _whole_hours(every_hours, from_json)
        if hours is None:
            errors["every_hours"] = [f"Enter a whole number of hours from 1 to {MAX_EVERY_HOURS}"
                                     + (", as a JSON number (e.g. 6)." if from_json else ".")]
    else:
        if isinstance(at, time):
            clock = at.replace(second=0, microsecond=0)
        else:
            found = _TIME_RE.fullmatch(at.strip()) if isinstance(at, str) else None
            if not found:
                errors["at"] = ["Enter a time as HH:MM (24-hour), e.g. 02:30."]
            else:
                clock = time(int(found.group(1)), int(found.group(2)))
    if kind == Schedule.WEEKLY:
        if weekdays is not None and not isinstance(weekdays, list | tuple):
            # "mon,thu" as one string: say the shape, not "choose at least one weekday" to someone who did.
            errors["weekdays"] = ['Give the weekdays as a list, e.g. ["mon", "thu"].']
        chosen, bad = _weekdays(weekdays if isinstance(weekdays, list | tuple) else [])
        if bad:
            errors["weekdays"] = [f"{WEEKDAYS_RULE} Not a weekday: {', '.join(bad)}."]
        elif not chosen and "weekdays" not in errors:
            errors["weekdays"] = ["Choose at least one weekday."]
        days = tuple(sorted(chosen))
    if errors:
        return None, errors
    return Recurrence(kind, every_hours=hours, at=clock, weekdays=days, anchor=anchor, cron=expression), {}


def _whole_hours(value: Any, from_json: bool) -> int | None:
    """1..MAX_EVERY_HOURS from a JSON integer, or (the form) from its text; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1 <= value <= MAX_EVERY_HOURS else None
    if from_json or not isinstance(value, str):
        return None  # "6" and 6.0 in JSON: refused as the jobs API refuses them for its whole numbers
    text = value.strip()
    # The length first: int() of a text of more than 4,300 digits raises ValueError (a 500).
    ok = text.isascii() and text.isdigit() and len(text) <= 4 and 1 <= int(text) <= MAX_EVERY_HOURS
    return int(text) if ok else None


def _weekdays(values: list | tuple) -> tuple[set[int], list[str]]:
    """({0 = Monday ...}, the values that are no weekday) of day names or cron's numbers (0 or 7 = Sunday)."""
    chosen: set[int] = set()
    bad: list[str] = []
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 7:
            chosen.add((value - 1) % 7)  # cron: 1 = Monday ... 6 = Saturday, 0 and 7 = Sunday
        elif isinstance(value, str) and value.strip().lower() in WEEKDAYS:
            chosen.add(WEEKDAYS.index(value.strip().lower()))
        elif isinstance(value, str) and value.strip().lower() in WEEKDAY_NAMES:
            chosen.add(WEEKDAY_NAMES.index(value.strip().lower()))
        else:
            bad.append(repr(value)[:40] if isinstance(value, str) else str(value)[:40])
    return chosen, bad


def name_problem(name: Any) -> str | None:
    if not isinstance(name, str):  # the API's JSON: "Enter a name" misled when one was sent, as a number
        return 'Enter the name as a JSON string, e.g. "nightly".'
    if not name.strip():
        return "Enter a name."
    if len(name) > NAME_MAX:
        return f"At most {NAME_MAX} characters."
    if not spec.JOB_NAME_RE.fullmatch(name):  # the schedule name starts every job name
        return (f"Only {spec.JOB_NAME_CHARSET}: the name starts the name of every job the schedule "
                "starts.")
    return None


def job_name(schedule_name: str, due_at: datetime) -> str:
    """`<schedule name>-YYYYMMDD-HHMM` (the slot, in the console's zone), within the job name's length."""
    stamp = due_at.astimezone(zone()).strftime(STAMP)
    return schedule_name[:C.MAX_NAME_LENGTH - len(stamp)] + stamp


# --- secrets of the stored body ---------------------------------------------------------------------------


def body_for_check(body: dict[str, Any], secrets: dict[str, str]) -> dict[str, Any]:
    """The stored body with its secrets back, as api_jobs.check_body takes it (secret envs in SecretEnvs)."""
    from jobs.api_jobs import SECRET_ENVS, put_ray_password, put_registry_password

    out = dict(body)
    if secrets.get("registry_password"):
        put_registry_password(out, secrets["registry_password"])
    if secrets.get("RayRedisPassword"):
        put_ray_password(out, secrets["RayRedisPassword"])
    named = {k[len(spec.SECRET_ENV_PREFIX):]: v for k, v in secrets.items() if k.startswith(spec.SECRET_ENV_PREFIX)}
    if named:
        out[SECRET_ENVS] = named
    return out


# --- creating, changing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    name: str
    recurrence: Recurrence
    skip_if_active: bool = True
    enabled: bool = True


def parse_settings(name: Any, kind: Any, every_hours: Any = None, at: Any = None, weekdays: Any = None,
                   skip_if_active: Any = True, enabled: Any = True, cron: Any = None, *, from_json: bool = False) \
        -> tuple[Settings | None, dict[str, list[str]]]:
    """(settings, errors keyed name / kind / every_hours / at / weekdays / cron / skip_if_active / enabled)."""
    errors: dict[str, list[str]] = {}
    problem = name_problem(name)
    if problem:
        errors["name"] = [problem]
    recurrence, found = parse_recurrence(kind, every_hours, at, weekdays, cron, from_json=from_json)
    errors.update(found)
    for key, value in (("skip_if_active", skip_if_active), ("enabled", enabled)):
        if not isinstance(value, bool):
            errors[key] = ["Must be true or false."]
    if errors or recurrence is None:
        return None, errors
    return Settings(name, recurrence, skip_if_active, enabled), {}


NAME_TAKEN = "A schedule of this workspace has this name already."
# A run skipped for this reason is skipped again every time: the page links Edit configuration (Row.refused_by_rules).
RULES_SKIP = "The job no longer passes the workspace's rules"


def _name_errors(workspace: Workspace, name: str, *, other_than: Schedule | None = None) -> dict[str, list[str]]:
    """{"name": [why]} when another schedule of the workspace has the name (or its case twin), else {}."""
    from jobs.templates_lib import name_twin

    others = Schedule.objects.filter(workspace=workspace)
    if other_than is not None:
        others = others.exclude(pk=other_than.pk)
    twin = name_twin(others, name)
    if twin == name:
        return {"name": [NAME_TAKEN]}
    if twin is not None:  # its jobs' names would differ from the other's only in case too
        return {"name": [f"A schedule of this workspace is named '{twin}': names may not differ only in case."]}
    return {}


def create(user, workspace: Workspace, body: Any, chosen: Settings, *, source_job: Job | None = None) \
        -> tuple[Schedule | None, dict[str, list[str]]]:
    """Validate the body as POST /api/v1/jobs does (guardrails, SecretEnvs, secrets sealed) and save a schedule.

    Errors are keyed `name`, or `job.<the body's field path>` (`job` for the body as a whole). The body's
    DisplayName is replaced by the first job's name, so its length is checked as the jobs will have it.
    """
    from jobs.api_jobs import check_body, take_secrets

    errors = _name_errors(workspace, chosen.name)
    now = timezone.now()
    recurrence = replace(chosen.recurrence, anchor=now)  # every N hours: the first run N hours from now
    first = next_run(recurrence, now)
    if isinstance(body, dict):
        body = {**body, "DisplayName": job_name(chosen.name, first)}
    checked, problems = check_body(workspace, body)
    errors.update({f"{JOB}.{path}" if path else JOB: messages for path, messages in problems.items()})
    if checked is None or errors:
        return None, errors
    clean, secrets = take_secrets(checked.wire)
    secrets.update(checked.secret_envs)
    # A job started from a template binds its schedule to the same locks (edit_config holds its changes to them).
    link = templates_lib.link(*found) if source_job is not None and (found := templates_lib.linked(source_job)) \
        else {}
    try:
        # A savepoint: the caller's transaction (a view's, a test's) stays usable after the IntegrityError.
        with transaction.atomic():
            schedule = Schedule.objects.create(
                workspace=workspace, owner=user, name=chosen.name, body=clean, hints={**checked.hints, **link},
                sealed_secrets=secretbox.seal(secrets), kind=recurrence.kind, every_hours=recurrence.every_hours,
                at=recurrence.at, weekdays=list(recurrence.weekdays), cron=recurrence.cron, anchor=now,
                skip_if_active=chosen.skip_if_active, enabled=chosen.enabled,
                next_run_at=first if chosen.enabled else None, source_job=source_job,
            )
            audit.record(user, AuditEvent.CHANGED, workspace=workspace, job=source_job, event="schedule-added",
                         schedule=schedule.name, recurrence=describe(schedule.recurrence))
    except IntegrityError:
        # The same name (or one differing only in case) sent twice at once passes the check above twice: the unique
        # constraints decide, and the loser hears what the check says now. (The name is the row's one unique field
        # besides its id.)
        return None, _name_errors(workspace, chosen.name) or {"name": [NAME_TAKEN]}
    return schedule, {}


def can_change(user, schedule: Schedule) -> bool:
    """Admins of the workspace, and the owner while they may create jobs there."""
    return access.can(user, "manage", workspace=schedule.workspace) or (
        schedule.owner_id == user.pk and access.can(user, "create", workspace=schedule.workspace))


def can_stop(user, schedule: Schedule) -> bool:
    """Disable or delete it (not enable, not edit): who may change it, and its owner while still a member of the
    workspace in any role, so that an owner demoted to viewer can stop runs the beat now skips. Never a read-only
    API token (access.can says no to its every change)."""
    if can_change(user, schedule):
        return True
    scope = access.scope_of(user)
    return (schedule.owner_id is not None and schedule.owner_id == user.pk
            and not (scope is not None and scope.read_only)
            and access.role_in(user, schedule.workspace) is not None)


STOP_ONLY = ("As the schedule's owner you may only disable or delete it here: enabling or editing it needs the "
             "right to create jobs in this workspace (a member's or an admin's).")


def change_refusal(user, schedule: Schedule, *, stopping: bool) -> str | None:
    """Why the user may not change the schedule (None: they may). stopping: a disable or a delete, can_stop's rule;
    anything else can_change's. One wording for the pages and the API."""
    if can_change(user, schedule) or (stopping and can_stop(user, schedule)):
        return None
    if can_stop(user, schedule):
        return STOP_ONLY
    scope = access.scope_of(user)
    if scope is not None and scope.read_only and access.role_in(user, schedule.workspace) is not None:
        return access.refusal(user, "manage", workspace=schedule.workspace)  # the read-only token's words
    return "Only the workspace's admins and the schedule's owner may change it."


def _timing(recurrence: Recurrence) -> tuple:
    """What decides a recurrence's slots, but the anchor: its kind and that kind's fields."""
    return recurrence.kind, *(getattr(recurrence, field) for field in KIND_FIELDS[recurrence.kind])


def _edit_shown(schedule: Schedule) -> dict[str, Any]:
    return {"name": schedule.name, "recurrence": describe(schedule.recurrence),
            "skip_if_active": schedule.skip_if_active, "enabled": schedule.enabled}


def edit(user, schedule: Schedule, chosen: Settings, *, enabled: bool | None = None) -> dict[str, list[str]]:
    """Change a schedule's name, recurrence and skip-if-active ({} or errors keyed `name`); its job configuration
    and sealed secrets stay. enabled=None keeps the schedule's enabled state (the page); the API may set it too.

    The next run is computed from now, after the row is locked, as creation computes the first: a slot that passed
    while the user was editing does not run, the next one is the new timing's. Every N hours counts from now when
    the timing changes; an edit that keeps the timing (a rename) keeps its slots. Against the beat (run_one): the
    row lock (PostgreSQL; SQLite serializes writing transactions) orders the two, run_one re-reads the schedule and
    runs only while next_run_at has come, and the unique ScheduledRun is one run per slot whatever the order.
    """
    # Only a new name is checked: case twins saved before the rule stay editable under their own names.
    errors = _name_errors(schedule.workspace, chosen.name, other_than=schedule) if chosen.name != schedule.name else {}
    if errors:
        return errors
    try:
        with transaction.atomic():
            # Fresh, locked: the page's copy may be old (a toggle since, a slot the beat ran meanwhile).
            row = get_object_or_404(Schedule.objects.select_for_update(), pk=schedule.pk)  # deleted meanwhile
            before = _edit_shown(row)
            now = timezone.now()  # after the lock: a slot passed while waiting for it is not run either
            keep = _timing(chosen.recurrence) == _timing(row.recurrence)
            recurrence = replace(chosen.recurrence, anchor=row.anchor if keep else now)
            row.enabled = row.enabled if enabled is None else enabled
            row.name, row.skip_if_active = chosen.name, chosen.skip_if_active
            row.kind, row.every_hours, row.at = recurrence.kind, recurrence.every_hours, recurrence.at
            row.weekdays, row.cron, row.anchor = list(recurrence.weekdays), recurrence.cron, recurrence.anchor
            row.next_run_at = next_run(recurrence, now) if row.enabled else None
            if row.name != before["name"]:  # the stored body's name is a run's, as create and edit_config store it
                row.body = {**row.body, "DisplayName": job_name(row.name, row.next_run_at or now)}
            row.save()
            audit.record(user, AuditEvent.CHANGED, workspace=schedule.workspace, event="schedule-edited",
                         schedule=row.name, changes=audit.changes(before, _edit_shown(row)))
    except IntegrityError:
        # A rename racing another schedule's create or rename to the name (or its case twin): the unique constraints
        # decide, and the loser hears what the check says now.
        return _name_errors(schedule.workspace, chosen.name, other_than=schedule) or {"name": [NAME_TAKEN]}
    for field in Schedule._meta.concrete_fields:  # the caller's copy shows what was saved
        setattr(schedule, field.attname, getattr(row, field.attname))
    return {}


CONFIG_EDITED = "schedule-config-edited"
# The audit details key of the wizard's one-time submission token (jobs.wizard), so a form posted again saves nothing.
SUBMISSION = "submission"


def template_of(schedule: Schedule):
    """(template, version) whose locks bind the schedule's job: its own link (kept by create and edit_config), else,
    for a schedule made before they kept it, the link of the job it was made from; None without one."""
    return templates_lib.linked(schedule) or (
        templates_lib.linked(schedule.source_job) if schedule.source_job_id else None)


def config_saved(schedule: Schedule, token: Any) -> bool:
    """Whether a configuration edit of the schedule was already saved with this submission token."""
    return bool(token) and AuditEvent.objects.filter(
        workspace_id=schedule.workspace_id, details__event=CONFIG_EDITED, details__schedule_id=schedule.pk,
        **{f"details__{SUBMISSION}": str(token)}).exists()


def _changed_sections(before: Schedule, body: dict, hints: dict, secrets: dict[str, str]) -> list[str]:
    """The wizard sections (basic, environment, resources, ...) in which the new configuration differs from the
    schedule's, and "secrets" when a sealed value changed: names only, for the audit entry."""
    def sections(wire: dict, known: dict) -> dict:
        # Neither is the user's: the name is each run's, the workspace the schedule's.
        return spec.inverse({k: v for k, v in wire.items() if k not in ("DisplayName", "WorkspaceId")}, known)

    old, new = sections(before.body or {}, before.hints or {}), sections(body, hints)
    changed = [name for name in new if old.get(name) != new[name]]
    if (secretbox.unseal(before.sealed_secrets) if before.sealed_secrets else {}) != secrets:
        changed.append("secrets")
    return changed


def _still_needed(body: dict) -> set[str]:
    """The sealed passwords (take_secrets' names) a body still uses: a registry login, a Ray job's Redis."""
    roles = body.get("JobSpecs") if isinstance(body.get("JobSpecs"), list) else []
    needed = set()
    if any(isinstance(role, dict) and isinstance(role.get("ImageConfig"), dict)
           and role["ImageConfig"].get("Username") for role in roles):
        needed.add("registry_password")
    if body.get("JobType") == "RayJob":
        needed.add("RayRedisPassword")
    return needed


def keeps_sealed(user, schedule: Schedule) -> bool:
    """Whether a change of the schedule's job configuration by `user` may keep its sealed values (secret variables,
    the registry and Ray Redis passwords): its owner's only, as a failed job's are kept for its owner's edit only.
    Anyone else could otherwise run the owner's API key with a command of their own and read it from the pod's log,
    so they type each secret again; a take-over (take_over) drops them for the same reason."""
    return schedule.owner_id is not None and schedule.owner_id == user.pk


def sealed_kept_for(user, schedule: Schedule) -> dict[str, str]:
    """The sealed values (take_secrets' names) that `user`'s change of the schedule may keep (keeps_sealed)."""
    return secretbox.unseal(schedule.sealed_secrets) if schedule.sealed_secrets and keeps_sealed(user, schedule) \
        else {}


def kept_passwords(schedule: Schedule) -> list[str]:
    """The sealed passwords (registry_password, RayRedisPassword) an edit of the schedule's job configuration by its
    owner keeps when it gives none (edit_config): those its body still uses."""
    sealed = secretbox.unseal(schedule.sealed_secrets) if schedule.sealed_secrets else {}
    return sorted(key for key in _still_needed(schedule.body or {}) if sealed.get(key))


def edit_config(user, schedule: Schedule, body: Any, secrets: dict[str, str], *, hints: dict | None = None,
                token: Any = None) -> dict[str, list[str]]:
    """Replace the schedule's job configuration: its body, hints and sealed secrets ({} or errors keyed as create's,
    `job.<the body's field path>`). Its name, timing, runs and enabled state stay; nothing is sent to DLC.

    Validated as create validates (check_body: the workspace's guardrails, SecretEnvs) and held to the locks of the
    template its job came from (template_of). `body` is the CreateJob body without secrets (a secret variable as
    spec.SECRET_PLACEHOLDER in Envs), `secrets` the values to seal as take_secrets and the wizard name them
    (registry_password, RayRedisPassword, env:NAME). A secret variable the schedule has sealed, that the body still
    holds as a secret and that `secrets` does not give again, keeps its sealed value: secrets are never sent to a
    page, so an edit that did not retype one must not lose it. `token`: the wizard's submission token, recorded in
    the audit entry; a token already recorded saves nothing (the same form posted twice).
    """
    from jobs.api_jobs import check_body, take_secrets

    prefix = spec.SECRET_ENV_PREFIX
    old = sealed_kept_for(user, schedule)  # anyone but its owner types each secret again
    given = dict(body) if isinstance(body, dict) else body
    if isinstance(given, dict):
        # A placeholder left without a value (neither kept nor typed) is check_body's error at Envs.<NAME>.
        envs = given.get("Envs") if isinstance(given.get("Envs"), dict) else {}
        hidden = {name for name, value in envs.items() if value == spec.SECRET_PLACEHOLDER}
        kept = {key: value for key, value in old.items() if key.startswith(prefix) and key[len(prefix):] in hidden}
        # Nor the passwords the body still needs (GET never shows them): an API client sending GET's body back
        # changed would otherwise lose the registry's, and the runs fail to pull.
        kept |= {key: old[key] for key in _still_needed(given) if key in old}
        # A value given empty (a password field left blank) keeps the sealed one: it does not clear it.
        secrets = {**kept, **{key: value for key, value in secrets.items() if value or key not in kept}}
        # Checked as the next run's job will be: its name (the length), its secrets back in place.
        slot = schedule.next_run_at or timezone.now()
        given = body_for_check({**given, "DisplayName": job_name(schedule.name, slot)}, secrets)
    locks = template_of(schedule)
    # The template link in `hints` (the wizard's) is not the caller's to choose: template_of says it.
    known = {key: value for key, value in (hints or {}).items() if key != templates_lib.LINK} or None
    checked, problems = check_body(schedule.workspace, given, hints=known, locks=locks)
    if checked is None:
        return {f"{JOB}.{path}" if path else JOB: messages for path, messages in problems.items()}
    clean, sealed = take_secrets(checked.wire)
    sealed.update(checked.secret_envs)
    link = templates_lib.link(*locks) if locks else {}
    with transaction.atomic():
        # Locked: two saves at once (the same form twice) are ordered, and the second finds the first's token.
        row = get_object_or_404(Schedule.objects.select_for_update(), pk=schedule.pk)  # deleted meanwhile
        if config_saved(row, token):
            return {}
        changed = _changed_sections(row, clean, checked.hints, sealed)
        row.body, row.hints, row.sealed_secrets = clean, {**checked.hints, **link}, secretbox.seal(sealed)
        row.save(update_fields=["body", "hints", "sealed_secrets", "updated_at"])
        audit.record(user, AuditEvent.CHANGED, workspace=row.workspace, event=CONFIG_EDITED, schedule=row.name,
                     schedule_id=row.pk, changed=changed, **({SUBMISSION: str(token)} if token else {}))
    schedule.body, schedule.hints, schedule.sealed_secrets = row.body, row.hints, row.sealed_secrets
    return {}


def set_enabled(user, schedule: Schedule, enabled: bool) -> str | None:
    """Enabling starts from the next future slot: the slots missed while disabled are not run. Enabling a schedule
    whose job needs a value it no longer holds is refused: the refusal (enable_refusal) is returned, nothing saved."""
    with transaction.atomic():
        # Locked and fresh: a take-over that just dropped the sealed values (and disabled it) is seen.
        row = get_object_or_404(Schedule.objects.select_for_update(), pk=schedule.pk)  # deleted meanwhile
        if enabled and (refused := enable_refusal(row)):
            return refused
        row.enabled = enabled
        row.next_run_at = next_run(row.recurrence, timezone.now()) if enabled else None
        row.save(update_fields=["enabled", "next_run_at", "updated_at"])
        audit.record(user, AuditEvent.CHANGED, workspace=schedule.workspace,
                     event="schedule-enabled" if enabled else "schedule-disabled", schedule=row.name)
    schedule.enabled, schedule.next_run_at = row.enabled, row.next_run_at
    return None


# --- sealed values a schedule lacks, taking one over ---------------------------------------------------------


# Where each sealed value (take_secrets' names; a secret variable's is env:NAME) is typed again: in words (the
# pages), and as its place in the CreateJob body the API takes (PATCH's job).
_SEALED_WORDS = {"registry_password": "the registry password", "RayRedisPassword": "the Ray Redis password"}
_SEALED_PATHS = {"registry_password": "JobSpecs[*].ImageConfig.Password",
                 "RayRedisPassword": "Settings.AdvancedSettings.RayRedisPassword"}


def sealed_words(keys: Sequence[str]) -> str:
    """Sealed values named for a page, e.g. "the secret variable WANDB_API_KEY and the registry password"."""
    prefix = spec.SECRET_ENV_PREFIX
    words = [f"the secret variable {key[len(prefix):]}" if key.startswith(prefix) else _SEALED_WORDS.get(key, key)
             for key in keys]
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def sealed_paths(keys: Sequence[str]) -> list[str]:
    """Sealed values named as the API takes them: SecretEnvs.NAME, JobSpecs[*].ImageConfig.Password, ..."""
    prefix = spec.SECRET_ENV_PREFIX
    return [f"SecretEnvs.{key[len(prefix):]}" if key.startswith(prefix) else _SEALED_PATHS.get(key, key)
            for key in keys]


def required_values(schedule: Schedule) -> set[str]:
    """The sealed values (take_secrets' names) without which its job is refused: its secret variables and the
    password of its registry username. Not a Ray job's Redis password: the job runs without one."""
    body = schedule.body or {}
    envs = body.get("Envs") if isinstance(body.get("Envs"), dict) else {}
    needed = {spec.SECRET_ENV_PREFIX + name for name, value in envs.items() if value == spec.SECRET_PLACEHOLDER}
    return needed | (_still_needed(body) - {"RayRedisPassword"})


def missing_values(schedule: Schedule) -> list[str]:
    """The sealed values its job needs and the schedule does not hold (take_secrets' names): a secret variable its
    Envs keeps as the placeholder, the password of its registry username. A run's check (check_body) refuses the
    job without them, so every run would be skipped; a take-over drops them. A Ray job's Redis password is optional
    (the job runs without one): never missing."""
    needed = required_values(schedule)
    if not needed:  # most schedules: nothing to unseal
        return []
    sealed = secretbox.unseal(schedule.sealed_secrets) if schedule.sealed_secrets else {}
    return sorted(key for key in needed if not sealed.get(key))


def enable_refusal(schedule: Schedule) -> str | None:
    """Why the schedule may not be enabled (None: it may): its job needs values it no longer holds. One wording
    for the pages and the API."""
    missing = missing_values(schedule)
    if not missing:
        return None
    one = len(missing) == 1
    return (f"It cannot be enabled yet: its job needs {sealed_words(missing)}, which {'is' if one else 'are'} no "
            f"longer sealed with it. Type {'it' if one else 'them'} again in Edit configuration (in the API: PATCH "
            f"its job with {', '.join(sealed_paths(missing))}), then enable it.")


TAKEN_OVER = "schedule-taken-over"
TAKE_OVER_REFUSED = "Only the workspace's admins may take over a schedule."


def take_over_refusal(user, schedule: Schedule) -> str | None:
    """Why the user may not take the schedule over (None: they may): the workspace's admins (and the superuser)
    only, never with a read-only API token. One wording for the pages and the API."""
    if access.can(user, "manage", workspace=schedule.workspace):
        return None
    scope = access.scope_of(user)
    if scope is not None and scope.read_only and access.role_in(user, schedule.workspace) is not None:
        return access.refusal(user, "manage", workspace=schedule.workspace)  # the read-only token's words
    return TAKE_OVER_REFUSED


class OwnerChanged(Exception):
    """The schedule's owner is no longer the one the take-over was confirmed against (take_over's from_owner)."""


ANY_OWNER = object()  # take_over's from_owner when the caller confirmed no owner (the API)


def take_over(user, schedule: Schedule, *, from_owner: int | None | object = ANY_OWNER) -> list[str]:
    """Make `user` (take_over_refusal allowed them) the schedule's owner, so that its runs start as them, and
    return the sealed values dropped (take_secrets' names). Those were the previous owner's: they are kept only as
    an edit by `user` would keep them (sealed_kept_for, before the change: none), and when any is dropped the
    schedule is disabled (its runs would fail their check, or log in without a password) until they are typed again
    in Edit configuration; else its enabled state stays. The schedule's own owner taking it over changes nothing.

    from_owner: the owner's id (None: a deleted user) that the confirm page showed. If the schedule changed hands
    since, OwnerChanged is raised and nothing is saved: a stale page would otherwise take it from another admin,
    dropping the values they had just typed again, and disable it, without anyone having confirmed that.

    Locked: a second take-over at the same time (a double click, two admins) waits, then finds the first's owner
    and nothing left to drop; the last one's admin owns it (the pages' second admin is told: OwnerChanged)."""
    with transaction.atomic():
        # No select_related: FOR UPDATE may not lock the nullable side of the owner's outer join (PostgreSQL).
        row = get_object_or_404(Schedule.objects.select_for_update(), pk=schedule.pk)
        if keeps_sealed(user, row):
            return []
        if from_owner is not ANY_OWNER and row.owner_id != from_owner:
            raise OwnerChanged
        sealed = secretbox.unseal(row.sealed_secrets) if row.sealed_secrets else {}
        kept = sealed_kept_for(user, row)
        dropped = sorted(key for key in sealed if key not in kept)
        previous = row.owner.get_username() if row.owner else None
        row.owner, row.sealed_secrets = user, secretbox.seal(kept)
        if dropped:
            row.enabled, row.next_run_at = False, None
        row.save(update_fields=["owner", "sealed_secrets", "enabled", "next_run_at", "updated_at"])
        audit.record(user, AuditEvent.CHANGED, workspace=row.workspace, event=TAKEN_OVER, schedule=row.name,
                     schedule_id=row.pk, previous_owner=previous, dropped=sealed_paths(dropped),
                     disabled=bool(dropped))
    for field in Schedule._meta.concrete_fields:  # the caller's copy shows what was saved
        setattr(schedule, field.attname, getattr(row, field.attname))
    schedule.owner = user
    return dropped


def delete(user, schedule: Schedule) -> None:
    """The jobs it started stay, and so do their runs (the schedule set to NULL), so a job's page still says which
    schedule started it. Skipped runs go: nothing shows a deleted schedule's history but its jobs' pages."""
    with transaction.atomic():
        name = schedule.name
        schedule.runs.filter(job__isnull=True).delete()
        schedule.delete()
        audit.record(user, AuditEvent.CHANGED, workspace=schedule.workspace, event="schedule-deleted", schedule=name)


# --- running ----------------------------------------------------------------------------------------------


def due(now: datetime | None = None) -> list[int]:
    now = now or timezone.now()
    return list(Schedule.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at")
                .values_list("pk", flat=True))


def run_due(now: datetime | None = None) -> dict[int, str]:
    """Run every due schedule once: {schedule id: "started" | "skipped" | "done-already"}."""
    outcomes = {}
    for pk in due(now):
        try:
            outcome = run_one(pk, now)
        except Exception:
            # One broken schedule must not keep the others from running; it stays due and is tried next beat.
            log.exception("schedule %s failed to run", pk)
            continue
        if outcome:
            outcomes[pk] = outcome
    return outcomes


def run_one(schedule_id: int, now: datetime | None = None) -> str | None:
    """Start (or skip, with the reason) the job of the schedule's due slot, exactly once per slot, and move the
    schedule to its next future slot. None when the schedule is not due (any more)."""
    from jobs.views import save_and_enqueue

    now = now or timezone.now()
    with transaction.atomic():
        # The lock makes a second beat wait, then see the slot moved on (PostgreSQL); the unique run is the
        # guarantee. No select_related: FOR UPDATE may not lock the nullable side of the owner's outer join.
        schedule = Schedule.objects.select_for_update().filter(pk=schedule_id, enabled=True,
                                                               next_run_at__lte=now).first()
        if schedule is None:
            return None
        due_at = schedule.next_run_at
        try:
            with transaction.atomic():
                run = ScheduledRun.objects.create(schedule=schedule, schedule_name=schedule.name, due_at=due_at)
        except IntegrityError:
            # Another beat (or this task's earlier try) has the slot: only move on.
            outcome = "done-already"
        else:
            job, reason = None, skip_reason(schedule)
            if not reason:
                job, reason = _start(schedule, due_at, save_and_enqueue)
            run.job, run.skipped_reason = job, reason
            run.save(update_fields=["job", "skipped_reason"])
            outcome = "skipped" if reason else "started"
        # One run for however many slots were missed, then the next future slot.
        schedule.next_run_at = next_run(schedule.recurrence, max(now, due_at))
        schedule.save(update_fields=["next_run_at", "updated_at"])
    return outcome


def owner_refusal(owner, workspace: Workspace) -> str:
    """Why every run of a schedule `owner` owns in `workspace` is skipped ("" if their runs may start): the beat's
    rule (skip_reason), which the schedules and members pages also tell before any run."""
    if owner is None:
        return "The schedule's owner no longer has an account."
    if not owner.is_active:
        return f"The owner, {owner.get_username()}, is deactivated."
    if not access.can(owner, "create", workspace=workspace):
        return f"The owner, {owner.get_username()}, may no longer create jobs in this workspace."
    return ""


def _seen_with_role(workspace: Workspace, user_id: int | None, role: str | None) -> Workspace:
    """A copy of the workspace that tells access.role_in the user's role there (None: not a member) without a
    query: the role just set (members page), or all owners' roles read at once (the schedules page)."""
    seen = copy.copy(workspace)
    seen.role_of = (user_id, role)
    return seen


def stranded(owner, workspace: Workspace, role: str | None) -> list[str]:
    """The names of the owner's enabled schedules in the workspace whose runs the beat skips once the owner's role
    there is `role` (None: removed)."""
    if not owner_refusal(owner, _seen_with_role(workspace, owner.pk, role)):
        return []
    return list(Schedule.objects.filter(workspace=workspace, owner=owner, enabled=True)
                .order_by("name").values_list("name", flat=True))


def skip_reason(schedule: Schedule) -> str:
    reason = owner_refusal(schedule.owner, schedule.workspace)
    if reason:
        return reason
    if schedule.skip_if_active:
        last = schedule.runs.filter(job__isnull=False).select_related("job").order_by("-due_at").first()
        if last is not None and last.job.is_active:
            return f"The previous run, job {last.job.display_name}, was still {last.job.status_label.lower()}."
    return ""


def _start(schedule: Schedule, due_at: datetime, save_and_enqueue) -> tuple[Job | None, str]:
    """(the job, "") or (None, why not): the body is checked against the workspace's guardrails of today."""
    from jobs.api_jobs import check_body, take_secrets

    secrets = secretbox.unseal(schedule.sealed_secrets)
    body = body_for_check({**schedule.body, "DisplayName": job_name(schedule.name, due_at)}, secrets)
    checked, errors = check_body(schedule.workspace, body)
    if checked is None:
        said = "; ".join(f"{path}: {' '.join(messages)}" if path else " ".join(messages)
                         for path, messages in errors.items())
        return None, f"{RULES_SKIP}: {said}"
    clean, found = take_secrets(checked.wire)
    # The run's job keeps the template link the schedule is bound by (template_of), so its clones and edits are held
    # to the same locks as the schedule's configuration edits.
    locks = template_of(schedule)
    link = templates_lib.link(*locks) if locks else {}
    job = save_and_enqueue(workspace=schedule.workspace, owner=schedule.owner, body=clean,
                           hints={**checked.hints, **link},
                           sealed_secrets=secretbox.seal({**found, **checked.secret_envs}),
                           audit_details={"schedule": schedule.name, "due_at": due_at.isoformat()})
    return job, ""


# --- the page -----------------------------------------------------------------------------------------------


@dataclass
class Row:
    schedule: Schedule
    words: str
    runs: list[ScheduledRun]
    can_change: bool
    owner_refusal: str = ""  # why its runs will be skipped, told before any run
    can_stop: bool = False  # disable or delete it: can_change, or its owner in any role (can_stop)
    can_take_over: bool = False  # an admin's, of a schedule someone else owns (take_over_refusal)
    missing: tuple[str, ...] = ()  # the sealed values its job needs and lacks (missing_values)

    @property
    def missing_words(self) -> str:
        return sealed_words(self.missing)

    @property
    def refused_by_rules(self) -> bool:
        """Its latest run was skipped for the workspace's rules: so will every next one until its job configuration
        is changed (edit_config); the page links the way to change it."""
        latest = self.runs[0] if self.runs else None
        return latest is not None and latest.job_id is None and latest.skipped_reason.startswith(RULES_SKIP)


def recent_runs() -> Prefetch:
    """Each schedule's last RUNS_SHOWN runs, as `schedule.recent`, in one (windowed) query for all of them."""
    return Prefetch("runs", queryset=ScheduledRun.objects.select_related("job")[:RUNS_SHOWN], to_attr="recent")


def rows(user, workspace: Workspace) -> list[Row]:
    """The page's rows in a fixed number of queries, however many schedules."""
    if getattr(workspace, "role_of", None) is None:
        workspace.role_of = (user.pk, access.role_in(user, workspace))  # can_change asks it of every schedule
    schedules = list(Schedule.objects.filter(workspace=workspace).select_related("owner", "source_job")
                     .prefetch_related(recent_runs()))
    for schedule in schedules:
        schedule.workspace = workspace
    # The owners' roles in one query, not one per schedule: owner_refusal reads them from a copy of the workspace.
    owners = {s.owner_id for s in schedules if s.owner_id is not None}
    roles = dict(Membership.objects.filter(workspace=workspace, user_id__in=owners).values_list("user_id", "role")
                 if owners else ())
    return [Row(s, zoned_words(s.recurrence), s.recent, can_change(user, s),
                owner_refusal(s.owner, _seen_with_role(workspace, s.owner_id, roles.get(s.owner_id))),
                can_stop(user, s), not keeps_sealed(user, s) and take_over_refusal(user, s) is None,
                tuple(missing_values(s)))
            for s in schedules]
