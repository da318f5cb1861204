"""A workspace's resource usage over a period: GPU-, CPU core- and node-hours per owner, per job type and per job.

Computed from what the console already holds: each job's CreateJob body (pod counts and, per role, either a
quota's ResourceConfig or an instance type whose CPUs and GPUs ListEcsSpecs gives) and its run time (started to
finished, or to now while it runs), cut to the period. DLC's bill is the authority on cost; this is the team's
view of who used what, which the cloud console does not give per person. Costs, at the workspace's own prices
in force when each hour ran, are jobs.costs' (a job without a price counts in `no_price`, never at a guessed rate;
a spot job's is its bid's ceiling, counted in `ceiling`).

A job counts in a period if it ran during it. Jobs are read through the (workspace, created) index from
LOOKBACK before the period plus every active job, so a job that ran longer than LOOKBACK before the period and
has ended is the only one missed (its JobMaxRunningTimeMinutes would have to exceed LOOKBACK).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from jobs import status as st
from jobs.models import Job, Workspace

if TYPE_CHECKING:
    from jobs.costs import History, Prices

PERIODS: dict[int, str] = {1: "24 hours", 7: "7 days", 30: "30 days", 90: "90 days"}
DEFAULT_DAYS = 30
LOOKBACK = timedelta(days=90)
TOP_JOBS = 20


@dataclass(frozen=True)
class Resources:
    """A job's size while it runs. cpu/gpu None: an instance type the catalog does not know (or no catalog)."""

    nodes: int
    cpu: float | None
    gpu: float | None


def _number(value: Any) -> float | None:
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return float(number) if number.is_finite() and number >= 0 else None


def _spec_value(info: Mapping, name: str) -> float | None:
    # ListEcsSpecs answers PascalCase (Cpu, Gpu); registered catalogs in tests may use lower case.
    return _number(info.get(name.capitalize(), info.get(name)))


def resources(job_specs: Any, specs: Mapping[str, Mapping] | None) -> Resources:
    """A CreateJob body's JobSpecs summed over roles: PodCount x (ResourceConfig, or the instance type's size)."""
    nodes, cpu, gpu = 0, 0.0, 0.0
    unknown = False
    for role in job_specs if isinstance(job_specs, list) else []:
        if not isinstance(role, Mapping):
            continue
        count = _number(role.get("PodCount"))
        count = int(count) if count else 0
        nodes += count
        config = role.get("ResourceConfig")
        if isinstance(config, Mapping) and (config.get("CPU") or config.get("GPU")):
            role_cpu, role_gpu = _number(config.get("CPU") or 0), _number(config.get("GPU") or 0)
        else:
            info = (specs or {}).get(str(role.get("EcsSpec") or ""))
            role_cpu = _spec_value(info, "cpu") if isinstance(info, Mapping) else None
            role_gpu = _spec_value(info, "gpu") if isinstance(info, Mapping) else None
        if role_cpu is None or role_gpu is None:
            unknown = True
            continue
        cpu += count * role_cpu
        gpu += count * role_gpu
    return Resources(nodes, None if unknown else cpu, None if unknown else gpu)


def hours_within(started: datetime | None, finished: datetime | None, start: datetime, end: datetime) -> float:
    """Hours of [started, finished) inside [start, end); a job still running runs until end."""
    if started is None:
        return 0.0
    stop = min(finished or end, end)
    begin = max(started, start)
    return max((stop - begin).total_seconds(), 0.0) / 3600


@dataclass
class Line:
    """One row of a usage table. Hours are None-free: jobs of unknown size count in `unknown` instead."""

    key: str
    jobs: int = 0
    running: int = 0
    hours: float = 0.0
    node_hours: float = 0.0
    cpu_hours: float = 0.0
    gpu_hours: float = 0.0
    unknown: int = 0
    cost: Decimal = Decimal(0)
    no_price: int = 0  # jobs left out of `cost` (jobs.costs: an instance type or quota rate without a price)
    ceiling: int = 0  # jobs in `cost` at their spot bid's ceiling: when > 0, `cost` is at most that

    def add(self, job: JobUsage) -> None:
        self.jobs += 1
        if job.cost is None:
            self.no_price += 1
        else:
            self.cost += job.cost
            self.ceiling += job.ceiling
        self.running += job.running
        self.hours += job.hours
        self.node_hours += job.hours * job.size.nodes
        if job.size.cpu is None or job.size.gpu is None:
            self.unknown += 1
            return
        self.cpu_hours += job.hours * job.size.cpu
        self.gpu_hours += job.hours * job.size.gpu


@dataclass(frozen=True)
class JobUsage:
    pk: int
    name: str
    owner: str
    job_type: str
    running: bool
    hours: float
    size: Resources
    cost: Decimal | None = None  # in the period, at the workspace's prices (None: no price)
    ceiling: bool = False  # `cost` is a spot bid's ceiling: at most that

    @property
    def cost_is_ceiling(self) -> bool:
        return self.cost is not None and self.ceiling

    @property
    def gpu_hours(self) -> float | None:
        return None if self.size.gpu is None else self.hours * self.size.gpu

    @property
    def cpu_hours(self) -> float | None:
        return None if self.size.cpu is None else self.hours * self.size.cpu


@dataclass
class Report:
    start: datetime
    end: datetime
    days: int
    total: Line = field(default_factory=lambda: Line("All"))
    by_owner: list[Line] = field(default_factory=list)
    by_type: list[Line] = field(default_factory=list)
    top_jobs: list[JobUsage] = field(default_factory=list)
    jobs: list[JobUsage] = field(default_factory=list)
    catalog_missing: bool = False
    currency: str = ""
    priced: bool = False  # the workspace has a price table at all


_COLUMNS = ("pk", "display_name", "owner__username", "job_type", "status", "started_at", "finished_at", "specs_json")


def _rows(workspace: Workspace, start: datetime, end: datetime) -> Iterable[tuple]:
    # Two index walks, not one OR that neither index serves: jobs created since LOOKBACK before the period
    # (workspace, created) and jobs still active (workspace, status).
    base = (Job.objects.filter(workspace=workspace, started_at__isnull=False, started_at__lt=end)
            .filter(Q(finished_at__isnull=True) | Q(finished_at__gt=start)).order_by()
            # As text, so that the many jobs of one shape are decoded and sized once (see report()).
            .annotate(specs_json=KeyTextTransform("JobSpecs", "body")))
    recent = base.filter(created_at__gte=start - LOOKBACK).values_list(*_COLUMNS)
    seen: set[int] = set()
    for row in recent.iterator(chunk_size=2000):
        seen.add(row[0])
        yield row
    active = base.filter(created_at__lt=start - LOOKBACK).exclude(status__in=st.TERMINAL).values_list(*_COLUMNS)
    for row in active:
        if row[0] not in seen:
            yield row


# jobs.costs reads the same rows for a month's spend.
rows = _rows


def report(workspace: Workspace, days: int = DEFAULT_DAYS, *, specs: Mapping[str, Mapping] | None = None,
           now: datetime | None = None, prices: Prices | History | None = None) -> Report:
    """Usage of the workspace's jobs in the `days` before now. `specs`: ListEcsSpecs by instance type (None:
    jobs on instance types count as of unknown size). `prices`: the workspace's tables by date (jobs.costs), read
    when None (two queries, whatever the number of jobs and tables)."""
    from jobs import costs

    end = now or timezone.now()
    start = end - timedelta(days=days)
    rates = costs.Rates(prices if prices is not None else costs.history_for(workspace))
    result = Report(start=start, end=end, days=days, catalog_missing=specs is None,
                    currency=rates.history.currency, priced=rates.history.any)
    owners: dict[str, Line] = {}
    types: dict[str, Line] = {}
    sizes: dict[str | None, Resources] = {}
    for pk, name, owner, job_type, status, started, finished, specs_json in _rows(workspace, start, end):
        if status in st.TERMINAL and finished is None:
            continue  # ended without DLC saying when: no run time to count
        # A job that ran for under a second (DLC's times are whole seconds) ran all the same: it is a line of its
        # own, with 0 hours, as the CSV's "one line per job" says.
        hours = hours_within(started, finished, start, end)
        job = JobUsage(pk, name, owner or "(deleted user)", job_type or "(unknown)", status not in st.TERMINAL,
                       hours, sizes.get(specs_json) or sizes.setdefault(specs_json, size_of(specs_json, specs)),
                       rates.cost(specs_json, started, finished, start, end), rates.ceiling(specs_json))
        result.jobs.append(job)
        for table, key in ((owners, job.owner), (types, job.job_type)):
            table.setdefault(key, Line(key)).add(job)
        result.total.add(job)
    def order(line: Line) -> tuple:
        return -line.gpu_hours, -line.cpu_hours, -line.hours, line.key

    result.by_owner = sorted(owners.values(), key=order)
    result.by_type = sorted(types.values(), key=order)
    result.top_jobs = sorted(result.jobs, key=lambda j: (-(j.gpu_hours or 0), -(j.cpu_hours or 0), -j.hours,
                                                         j.pk))[:TOP_JOBS]
    return result


def size_of(specs_json: str | None, specs: Mapping[str, Mapping] | None) -> Resources:
    """A job's size from its body's JobSpecs as JSON text (as _rows reads it): the one size computation, which
    jobs.now uses too."""
    try:
        return resources(json.loads(specs_json) if specs_json else None, specs)
    except ValueError:
        return resources(None, specs)


def to_csv(result: Report) -> str:
    """One line per job (a spreadsheet can pivot it any way); hours to 0.01, unknown sizes and costs without a
    price left empty. cost_is_ceiling: "yes" for a spot job's cost (at most that), "" without a cost."""
    from jobs.costs import money

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["job_id", "name", "owner", "job_type", "running", "hours_in_period", "nodes", "cpus", "gpus",
                     "node_hours", "cpu_core_hours", "gpu_hours", "cost", "currency", "cost_is_ceiling"])

    def num(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    for job in sorted(result.jobs, key=lambda j: j.pk):
        writer.writerow([job.pk, _cell(job.name), _cell(job.owner), _cell(job.job_type), "yes" if job.running else "no",
                         num(job.hours), job.size.nodes, num(job.size.cpu), num(job.size.gpu),
                         num(job.hours * job.size.nodes), num(job.cpu_hours), num(job.gpu_hours), money(job.cost),
                         _cell(result.currency) if job.cost is not None else "",
                         "" if job.cost is None else ("yes" if job.ceiling else "no")])
    return out.getvalue()


def _cell(text: str) -> str:
    # A cell starting with = + - @ is a formula to a spreadsheet (CSV injection): make it text.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
