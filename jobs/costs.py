"""What jobs cost: a workspace's price table (per instance type, or per GPU-hour and CPU core-hour for quota jobs),
its monthly budget and the one computation of a job's cost from its size and run time.

The one source of truth for rates: the wizard's estimate, the job page, the usage report, the API and the budget
guardrail all ask this module. Sizes and run times are jobs.usage's (resources, size_of, hours_within); a price
is never guessed: a role whose instance type (or quota resource) has no price makes the whole job "no price", and
totals say how many jobs that left out. DLC's bill stays the authority; these are the team's own rates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from jobs import usage
from jobs.models import Job, Workspace, WorkspaceCost

DEFAULT_CURRENCY = "CNY"
CURRENCY_MAX = 8
PLACES = 4  # prices carry at most 4 decimals
MAX_PRICE = Decimal("1000000000")
CENT = Decimal("0.01")
_EXACT = Decimal("0.0001")
WARN_AT = (100, 80)  # the budget notice's thresholds, in percent, highest first
INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9]*(\.[A-Za-z0-9_-]+){1,4}$")  # ecs.gn6i-c4g1.xlarge, ml.gu7i.c16m60
INSTANCE_TYPE_MAX = 64  # DLC's longest instance type names are about 30 characters
TABLE_MAX_LINES = 500
COMMA = "Use a dot for decimals (1.5), and no thousands separators."
# Plain decimal notation in ASCII digits: Decimal() also takes "1e3", "1_000" and other scripts' digits ("١٢").
_PLAIN_NUMBER = re.compile(r"[+-]?(?P<whole>[0-9]*)(?:\.(?P<fraction>[0-9]*))?")
_SEPARATOR = re.compile(r"\s*[\s=,]\s*")
SPEND_TTL = 60  # seconds a month-to-date figure is reused (the guardrail may let a job through for that long)


@dataclass(frozen=True)
class Prices:
    """A workspace's price table. A rate that is None is "no price": jobs needing it have no cost."""

    currency: str = DEFAULT_CURRENCY
    instance: Mapping[str, Decimal] = field(default_factory=dict)
    gpu_hour: Decimal | None = None
    cpu_core_hour: Decimal | None = None

    @property
    def any(self) -> bool:
        return bool(self.instance) or self.gpu_hour is not None or self.cpu_core_hour is not None

    def role_rate(self, role: Any) -> Decimal | None:
        """Per hour of one JobSpecs role: PodCount x the instance type's price, or x its GPUs and cores at the
        quota rates (a rate left blank for a resource the role uses: no price)."""
        if not isinstance(role, Mapping):
            return None
        pods = _pods(role)
        if pods is None:
            return None
        size = usage.resources([role], None)  # sized from ResourceConfig; an instance type stays unknown here
        if size.cpu is None or size.gpu is None:
            price = self.instance.get(str(role.get("EcsSpec") or ""))
            return None if price is None else price * pods
        total = Decimal(0)
        for amount, rate in ((size.gpu, self.gpu_hour), (size.cpu, self.cpu_core_hour)):
            if amount:
                if rate is None:
                    return None
                total += rate * Decimal(str(amount))
        return total

    def hourly(self, job_specs: Any) -> Decimal | None:
        """Per hour of a CreateJob body's JobSpecs; None when any role has no price (or there are no roles)."""
        roles = job_specs if isinstance(job_specs, list) else []
        rates = [self.role_rate(role) for role in roles]
        if not rates or any(rate is None for rate in rates):
            return None
        return sum(rates, Decimal(0))


def _pods(role: Mapping) -> int | None:
    """A role's PodCount, None unless a whole number >= 1: jobs.spec and DLC require one (no default to assume), and
    pricing a missing count as 0 pods would make the job free."""
    count = role.get("PodCount")
    if isinstance(count, str) and count.isascii() and count.isdigit() and len(count) <= 9:
        count = int(count)
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 1 else None


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def row(workspace: Workspace) -> WorkspaceCost:
    """The workspace's stored prices and budget (an unsaved empty row when never saved)."""
    try:
        return workspace.costs
    except WorkspaceCost.DoesNotExist:
        return WorkspaceCost(workspace=workspace)


def prices_of(stored: WorkspaceCost) -> Prices:
    instance = {str(k): d for k, v in (stored.instance_prices or {}).items() if (d := _decimal(v)) is not None}
    return Prices(currency=stored.currency or DEFAULT_CURRENCY, instance=instance,
                  gpu_hour=_decimal(stored.gpu_hour_price), cpu_core_hour=_decimal(stored.cpu_core_hour_price))


def prices_for(workspace: Workspace) -> Prices:
    return prices_of(row(workspace))


def cost(rate: Decimal | None, hours: float) -> Decimal | None:
    """rate x hours to 4 decimals (sums stay exact enough; money() rounds for display)."""
    if rate is None:
        return None
    return (rate * Decimal(repr(hours))).quantize(_EXACT, rounding=ROUND_HALF_UP)


def plain(value: Any) -> str | None:
    """A stored or typed amount as its shortest decimal text ("12.4" for 12.4000), for the form and the audit."""
    number = _decimal(value)
    if number is None:
        return None
    return format(number.normalize() if number else Decimal(0), "f")  # "-0" and "0.00" read "0"


def money(amount: Decimal | None) -> str:
    """An amount to the cent, half up ("24.80"); "" for None."""
    return "" if amount is None else f"{amount.quantize(CENT, rounding=ROUND_HALF_UP)}"


def specs_text_rate(prices: Prices, specs_json: str | None) -> Decimal | None:
    """Per hour of JobSpecs given as JSON text, as jobs.usage reads it."""
    try:
        return prices.hourly(json.loads(specs_json) if specs_json else None)
    except ValueError:
        return None


class Rates:
    """Per-hour rates by JobSpecs text, each shape priced once (a workspace's many jobs share few shapes)."""

    def __init__(self, prices: Prices) -> None:
        self.prices = prices
        self._seen: dict[str | None, Decimal | None] = {}

    def __call__(self, specs_json: str | None) -> Decimal | None:
        if specs_json not in self._seen:
            self._seen[specs_json] = specs_text_rate(self.prices, specs_json)
        return self._seen[specs_json]


# --- one job ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCost:
    amount: Decimal
    currency: str
    running: bool

    def as_json(self) -> dict[str, Any]:
        return {"amount": money(self.amount), "currency": self.currency, "running": self.running}


def job_cost(job: Job, prices: Prices | None = None, now: datetime | None = None) -> JobCost | None:
    """What the job cost (ended) or has cost so far (running); None: it never ran, ended without DLC saying when,
    or has no price."""
    from jobs import status as st

    if job.started_at is None or (job.status in st.TERMINAL and job.finished_at is None):
        return None
    prices = prices if prices is not None else prices_for(job.workspace)
    end = now or timezone.now()
    hours = usage.hours_within(job.started_at, job.finished_at, job.started_at, end)
    amount = cost(prices.hourly((job.body or {}).get("JobSpecs")), hours)
    if amount is None:
        return None
    return JobCost(amount, prices.currency, job.status not in st.TERMINAL)


# --- estimates ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    per_hour: Decimal
    currency: str
    at_most: Decimal | None = None  # with a maximum duration
    trials: int = 1

    @property
    def text(self) -> str:
        each = "" if self.trials == 1 else f" for each of {self.trials} trials ({money(self.per_hour * self.trials)} " \
                                           f"{self.currency} per hour in all)"
        out = f"Estimated {money(self.per_hour)} {self.currency} per hour{each}"
        if self.at_most is not None:
            out += f", at most {money(self.at_most * self.trials)} {self.currency}"
            out += " in all" if self.trials > 1 else ""
        return out + "."


@dataclass(frozen=True)
class Unpriced:
    """In place of an estimate when the workspace has prices but not for this job (so a changed instance type
    does not leave the last figure standing)."""

    text: str = ("No estimate: the workspace's price table has no price for an instance type (or quota resource) "
                 "of this job.")


def sized(job_specs: Any) -> bool:
    """Whether every role has an instance type or quota resources (and there is a role): only then can a missing
    estimate be blamed on the price table (Unpriced), not on a job still being filled in."""
    roles = job_specs if isinstance(job_specs, list) else []
    for role in roles:
        if not isinstance(role, Mapping):
            return False
        size = usage.resources([role], None)
        if not str(role.get("EcsSpec") or "").strip() and (size.cpu is None or size.gpu is None):
            return False
    return bool(roles)


def estimate(prices: Prices, job_specs: Any, max_minutes: int | None = None, trials: int = 1) -> Estimate | None:
    """The estimate of a job about to be created (None: no price for one of its roles)."""
    rate = prices.hourly(job_specs)
    if rate is None:
        return None
    at_most = None if not max_minutes else (rate * Decimal(max_minutes) / 60)
    return Estimate(rate, prices.currency, at_most, max(int(trials or 1), 1))


# --- the month and the budget -------------------------------------------------------------------------------


def month_bounds(now: datetime | None = None) -> tuple[datetime, datetime]:
    """[first instant of this calendar month, first of the next) in the console's zone (DLC_TIME_ZONE), as
    aware datetimes: a month's length in hours follows DST, its bounds are local midnights."""
    zone = ZoneInfo(settings.TIME_ZONE)
    local = (now or timezone.now()).astimezone(zone)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    after = (start + timedelta(days=32)).replace(day=1)
    # Each bound gets its own offset from the zone, then UTC: datetimes of one zone subtract as wall-clock times,
    # which would make a DST month an hour off.
    return start.replace(tzinfo=zone).astimezone(UTC), after.replace(tzinfo=zone).astimezone(UTC)


@dataclass(frozen=True)
class Spend:
    amount: Decimal
    jobs: int
    no_price: int


def spend(workspace: Workspace, start: datetime, end: datetime, prices: Prices) -> Spend:
    """What the workspace's jobs cost within [start, end): one pass over the rows jobs.usage reads (one query
    per index); hours are summed per job shape and each shape priced once, so 10k jobs cost a few Decimal sums."""
    from jobs import status as st

    hours: dict[str | None, float] = {}
    counts: dict[str | None, int] = {}
    for _pk, _name, _owner, _type, status, started, finished, specs_json in usage.rows(workspace, start, end):
        if status in st.TERMINAL and finished is None:
            continue  # ended without DLC saying when: no run time (as in the usage report)
        hours[specs_json] = hours.get(specs_json, 0.0) + usage.hours_within(started, finished, start, end)
        counts[specs_json] = counts.get(specs_json, 0) + 1
    total, missing = Decimal(0), 0
    for shape, shape_hours in hours.items():
        amount = cost(specs_text_rate(prices, shape), shape_hours)
        if amount is None:
            missing += counts[shape]
        else:
            total += amount
    return Spend(total, sum(counts.values()), missing)


@dataclass(frozen=True)
class Budget:
    amount: Decimal
    spent: Decimal
    currency: str
    no_price: int
    refuse: bool
    month: str  # "December 2026"

    @property
    def percent(self) -> int:
        """Of the spend as shown, to the cent: "0.80 of 1.00" is 80% (and warns), "1.00 of 1.00" is spent, never
        79% or 99% of an exact 0.7996 or 0.9951 the page does not show."""
        shown = self.spent.quantize(CENT, rounding=ROUND_HALF_UP)
        if not self.amount:
            return 100 if shown > 0 else 0
        return int(shown * 100 / self.amount)

    @property
    def level(self) -> int:
        """100 or 80 when the spend reached that share of the budget, else 0."""
        if self.amount == 0 and self.spent == 0:
            return 0
        return next((at for at in WARN_AT if self.percent >= at), 0)

    @property
    def exhausted(self) -> bool:
        return self.level >= 100

    @property
    def notice(self) -> str:
        if not self.level:
            return ""
        said = (f"{self.month}: {money(self.spent)} {self.currency} spent of this workspace's budget of "
                f"{money(self.amount)} {self.currency} ({self.percent}%).")
        if self.exhausted and self.refuse:
            said += " New jobs are refused until next month or until an admin raises the budget."
        return said

    def as_json(self) -> dict[str, Any]:
        return {"amount": money(self.amount), "spent": money(self.spent), "currency": self.currency,
                "percent": self.percent, "no_price_jobs": self.no_price, "refuse_when_spent": self.refuse,
                "month": self.month}


def budget(workspace: Workspace, now: datetime | None = None, *, stored: WorkspaceCost | None = None,
           fresh: bool = False) -> Budget | None:
    """This month's spend against the budget; None without a budget. The figure is reused for SPEND_TTL seconds
    (keyed by the table's last change, so a changed price or budget counts at once) unless `fresh`."""
    stored = stored if stored is not None else row(workspace)
    amount = _decimal(stored.monthly_budget)
    if amount is None:
        return None
    prices = prices_of(stored)
    now = now or timezone.now()
    start, _after = month_bounds(now)
    stamp = stored.updated_at.timestamp() if stored.updated_at else 0
    key = f"costs:month:{workspace.pk}:{stamp}:{start.date().isoformat()}"
    found = None if fresh or stored.pk is None else cache.get(key)
    if found is None:
        found = spend(workspace, start, now, prices)
        if stored.pk is not None:
            cache.set(key, found, SPEND_TTL)
    return Budget(amount, found.amount, prices.currency, found.no_price, stored.refuse_when_spent,
                  f"{start.astimezone(ZoneInfo(settings.TIME_ZONE)):%B %Y}")


def refusal(workspace: Workspace) -> str | None:
    """The guardrail's message when the workspace refuses new jobs because this month's budget is spent."""
    stored = row(workspace)
    if not stored.refuse_when_spent or stored.monthly_budget is None:
        return None
    status = budget(workspace, stored=stored)
    if status is None or not status.exhausted:
        return None
    return (f"This workspace's budget for {status.month} is spent ({money(status.spent)} of "
            f"{money(status.amount)} {status.currency}): new jobs are refused until next month or until an admin "
            "raises the budget.")


def notice(workspace: Workspace) -> str:
    """The job list's and the wizard's budget notice ("" below 80%, or without a budget)."""
    if not getattr(workspace, "pk", None):
        return ""
    status = budget(workspace)
    return status.notice if status else ""


# --- the price table as text --------------------------------------------------------------------------------


def _shown(text: str, limit: int = 40) -> str:
    """Typed text quoted in a message, cut short: a pasted page must not come back as the error."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def parse_price(text: Any, places: int = PLACES) -> tuple[Decimal | None, str]:
    """(price, "") or (None, why not) for one price as typed: a number >= 0 in ASCII digits with a dot and at most
    `places` decimals (trailing zeros aside). A comma is refused, never dropped: "1,5" would otherwise be 15."""
    value = str(text or "").strip()
    if not value:
        return None, "Enter a price."
    if "," in value:
        return None, COMMA
    found = _PLAIN_NUMBER.fullmatch(value)
    if found is None or not (found["whole"] or found["fraction"]):
        if not value.isascii():  # "١٢", "１２.５": digits to Decimal(), not to the rest of the console
            return None, f"{_shown(value)} is not a number: use the digits 0-9 and a dot (e.g. 12.5)."
        return None, f"{_shown(value)} is not a number (e.g. 12.5)."
    number = Decimal(value)
    if number.is_zero():
        number = Decimal(0)  # "-0" is 0, not a negative price or a "-0" in the audit
    if number < 0:
        return None, f"{value if len(value) <= 40 else _shown(value)} is negative: a price is 0 or more."
    if number >= MAX_PRICE:
        return None, f"{_shown(value)} is too large (less than {MAX_PRICE:,})."
    if len((found["fraction"] or "").rstrip("0")) > places:
        return None, f"{_shown(value)} has more than {places} decimals."
    return number, ""


def parse_table(text: str) -> tuple[dict[str, str], list[str]]:
    """Instance prices typed one per line as `<instance type> <price>` (or `=`, `,` or a tab between): the table
    as {type: price text} and a message per bad line. At most TABLE_MAX_LINES lines and INSTANCE_TYPE_MAX characters
    a name: the table is copied into every audit entry of a change."""
    table: dict[str, str] = {}
    problems: list[str] = []
    lines = str(text or "").splitlines()
    if len(lines) > TABLE_MAX_LINES:
        return table, [f"The table has {len(lines):,} lines: at most {TABLE_MAX_LINES} (one instance type each)."]
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        # The first separator splits: a comma after it is the price's ("1,5"), refused by parse_price.
        if len(parts) != 2 or not parts[0] or not parts[1] or re.search(r"[\s=]", parts[1]):
            problems.append(f"Line {number}: expected `<instance type> <price per hour>`, e.g. "
                            f"`ecs.gn6i-c4g1.xlarge 12.5`; got {_shown(line, 80)}.")
            continue
        name, given = parts
        if len(name) > INSTANCE_TYPE_MAX:
            problems.append(f"Line {number}: an instance type name has at most {INSTANCE_TYPE_MAX} characters "
                            f"(this one has {len(name):,}).")
            continue
        if not INSTANCE_TYPE_RE.match(name):
            problems.append(f"Line {number}: {name!r} is not an instance type (e.g. ecs.gn6i-c4g1.xlarge).")
            continue
        price, problem = parse_price(given)
        if price is None:
            problems.append(f"Line {number} ({name}): {problem}")
            continue
        if name in table:
            problems.append(f"Line {number}: {name} has a price already (an instance type is listed once).")
            continue
        table[name] = plain(price)
    return table, problems


def table_text(prices: Mapping[str, Any]) -> str:
    return "\n".join(f"{name} {plain(price)}" for name, price in sorted(prices.items()))

