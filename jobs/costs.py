"""What jobs cost: a workspace's price table (per instance type, or per GPU-hour and CPU core-hour for quota jobs),
its monthly budget and the one computation of a job's cost from its size and run time.

The one source of truth for rates: the wizard's estimate, the job page, the usage report, the API and the budget
guardrail all ask this module. Sizes and run times are jobs.usage's (resources, size_of, hours_within); a price
is never guessed: a role whose instance type (or quota resource) has no price makes the whole job "no price", and
totals say how many jobs that left out. DLC's bill stays the authority; these are the team's own rates.

Prices are kept by date (History): a change applies from when it is saved, the table it replaces is kept
(PastPrices), and each hour a job ran is costed at the table in force then, so last month's figures and the
budget never move after the fact. A spot role is costed at its bid's ceiling (DLC charges the market price, which
the console cannot know, up to the bid), and such a cost says it is "at most" (`ceiling`).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from jobs import usage
from jobs.catalog import SPOT_STRATEGY
from jobs.models import Job, PastPrices, Workspace, WorkspaceCost
from jobs.portal_models import PRICES_EPOCH

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
PRICE_FIELDS = ("instance_prices", "gpu_hour_price", "cpu_core_hour_price")  # a table; currency and budget are not
BID_CURRENCY = "CNY"  # SpotPriceLimit is CNY a minute [SDK]: a bid by price counts only in a table in CNY
PAST_SHOWN = 10  # past tables the Prices page lists


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
            if _spot(role):
                price = _bid_ceiling(price, role["SpotSpec"], self.currency)
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


def _spot(role: Any) -> bool:
    """A role on spot (preemptible) instances: an instance-type role with a SpotSpec, as jobs.spec reads a body (a
    quota role's resources are the quota's: a SpotSpec there is no bid)."""
    if not isinstance(role, Mapping) or not isinstance(role.get("SpotSpec"), Mapping):
        return False
    size = usage.resources([role], None)
    return size.cpu is None or size.gpu is None


def _bid_ceiling(price: Decimal | None, bid: Mapping, currency: str) -> Decimal | None:
    """The most a spot pod-hour can cost: DLC charges the market price, up to the bid, and never more than the
    pay-as-you-go price (here, the table's price of the instance type). The bid is the list price x
    SpotDiscountLimit (0.4: 40% of it), or SpotPriceLimit (CNY a minute: only in a table in CNY, the console converts
    no currency); it takes effect only with SpotStrategy SpotWithPriceLimit (docs/spec-notes.md D33)."""
    ceilings = [] if price is None else [price]
    if bid.get("SpotStrategy") == SPOT_STRATEGY:
        discount, limit = _decimal(bid.get("SpotDiscountLimit")), _decimal(bid.get("SpotPriceLimit"))
        if price is not None and discount is not None and 0 < discount <= 1:
            ceilings.append(price * discount)
        if limit is not None and limit > 0 and currency.strip().upper() == BID_CURRENCY:
            ceilings.append(limit * 60)
    return min(ceilings) if ceilings else None


def ceiling(job_specs: Any) -> bool:
    """Whether a cost of these JobSpecs is a ceiling ("at most"): a role is on spot instances."""
    return any(_spot(role) for role in (job_specs if isinstance(job_specs, list) else []))


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


def prices_of(stored: WorkspaceCost | PastPrices, currency: str | None = None) -> Prices:
    """A stored table as Prices (a past one in the workspace's `currency`)."""
    instance = {str(k): d for k, v in (stored.instance_prices or {}).items() if (d := _decimal(v)) is not None}
    currency = currency if currency is not None else stored.currency
    return Prices(currency=currency or DEFAULT_CURRENCY, instance=instance,
                  gpu_hour=_decimal(stored.gpu_hour_price), cpu_core_hour=_decimal(stored.cpu_core_hour_price))


def prices_for(workspace: Workspace) -> Prices:
    """The prices in force now (the wizard's estimate)."""
    return prices_of(row(workspace))


# --- prices by date -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    """A workspace's price tables one after the other, oldest first: (from, prices), each in force until the next
    one's start, the last one now. The first also prices whatever ran before its start (no table came before)."""

    tables: tuple[tuple[datetime, Prices], ...]

    @property
    def current(self) -> Prices:
        return self.tables[-1][1]

    @property
    def currency(self) -> str:
        return self.current.currency

    @property
    def any(self) -> bool:
        return any(prices.any for _since, prices in self.tables)

    def pieces(self, started: datetime, finished: datetime | None, start: datetime,
               end: datetime) -> list[tuple[int, float]]:
        """(table index, hours) of a run [started, finished or end) within [start, end), in each table it ran under:
        jobs.usage.hours_within cut at the changes. A run of no length is 0 hours of the table in force when it
        started (which says whether it has a price)."""
        begin, stop = max(started, start), min(finished or end, end)
        first = max(bisect_right(self.tables, begin, key=lambda table: table[0]) - 1, 0)
        out = []
        for index in range(first, len(self.tables)):
            since = self.tables[index][0]
            if index > first and since >= stop:
                break
            until = self.tables[index + 1][0] if index + 1 < len(self.tables) else end
            hours = usage.hours_within(started, finished, start if index == 0 else max(start, since), min(end, until))
            if hours > 0 or index == first:
                out.append((index, hours))
        return out


def history(prices: Prices | History) -> History:
    """Prices given alone (a test's, an estimate's) are in force at every date."""
    return prices if isinstance(prices, History) else History(((PRICES_EPOCH, prices),))


def history_of(stored: WorkspaceCost) -> History:
    """The stored tables as a History: one query for the past ones (none for a workspace never saved)."""
    current = prices_of(stored)
    past = [] if stored.pk is None else PastPrices.objects.filter(workspace_id=stored.workspace_id).order_by(
        "effective_from", "pk")
    tables = [(old.effective_from, prices_of(old, current.currency)) for old in past]
    return History((*tables, (stored.prices_from or PRICES_EPOCH, current)))


def history_for(workspace: Workspace) -> History:
    return history_of(row(workspace))


def _rates_of(table: Any) -> tuple:
    """What makes a table, whatever its spelling ("12.40" and 12.4 are one price)."""
    prices = prices_of(table, "")
    return dict(prices.instance), prices.gpu_hour, prices.cpu_core_hour


def save_prices(workspace: Workspace, values: Mapping[str, Any], user: Any, now: datetime | None = None
                ) -> WorkspaceCost:
    """Store the Prices page's values (CostForm.cost_values). A changed table applies from `now`: the one it
    replaces is kept as PastPrices. The first prices (nothing priced before, nothing kept) apply from the start:
    no job had a cost to keep. The currency and the budget are not part of a table."""
    with transaction.atomic():
        WorkspaceCost.objects.get_or_create(workspace=workspace)
        stored = WorkspaceCost.objects.select_for_update().get(workspace=workspace)  # one change at a time
        wanted = WorkspaceCost(**{name: values[name] for name in PRICE_FIELDS})
        if _rates_of(stored) != _rates_of(wanted):
            if prices_of(stored).any or PastPrices.objects.filter(workspace=workspace).exists():
                PastPrices.objects.create(workspace=workspace, effective_from=stored.prices_from,
                                          set_by_id=stored.prices_set_by_id,
                                          **{name: getattr(stored, name) for name in PRICE_FIELDS})
                stored.prices_from = now or timezone.now()
            stored.prices_set_by = user if getattr(user, "is_authenticated", False) else None
        for name, value in values.items():
            setattr(stored, name, value)
        stored.save()
    return stored


@dataclass(frozen=True)
class Table:
    """One price table as the Prices page lists it."""

    since: datetime | None  # None: from the start
    until: datetime | None  # None: in force now
    set_by: str  # "" when not known (the first prices, or a deleted user)
    prices: Prices

    @property
    def summary(self) -> str:
        """"ecs.g6.large 1.5; GPU-hour 10; CPU core-hour 0.25", or "no prices"."""
        parts = [", ".join(f"{name} {plain(price)}" for name, price in sorted(self.prices.instance.items()))]
        parts += [f"{label} {plain(rate)}" for label, rate in (("GPU-hour", self.prices.gpu_hour),
                                                               ("CPU core-hour", self.prices.cpu_core_hour))
                  if rate is not None]
        return "; ".join(part for part in parts if part) or "no prices"


def tables_shown(stored: WorkspaceCost, limit: int = PAST_SHOWN) -> tuple[Table, list[Table], int]:
    """The table in force, the last `limit` it replaced (newest first) and how many were replaced in all."""
    current = Table(None if stored.prices_from <= PRICES_EPOCH else stored.prices_from, None,
                    stored.prices_set_by.get_username() if stored.prices_set_by else "", prices_of(stored))
    if stored.pk is None:
        return current, [], 0
    past_rows = PastPrices.objects.filter(workspace_id=stored.workspace_id).select_related("set_by")
    count = past_rows.count()
    newest = list(past_rows.order_by("-effective_from", "-pk")[:limit])
    ends = [stored.prices_from, *(old.effective_from for old in newest)]
    past = [Table(None if old.effective_from <= PRICES_EPOCH else old.effective_from, until,
                  old.set_by.get_username() if old.set_by else "", prices_of(old, current.prices.currency))
            for old, until in zip(newest, ends, strict=False)]
    return current, past, count


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
    """Per-hour rates by JobSpecs text and table, each shape priced once per table (a workspace's many jobs share
    few shapes, and its prices change seldom)."""

    def __init__(self, prices: Prices | History) -> None:
        self.history = history(prices)
        self._seen: dict[tuple[str | None, int], Decimal | None] = {}
        self._ceiling: dict[str | None, bool] = {}

    def __call__(self, specs_json: str | None, index: int = -1) -> Decimal | None:
        index = index % len(self.history.tables)
        if (specs_json, index) not in self._seen:
            self._seen[specs_json, index] = specs_text_rate(self.history.tables[index][1], specs_json)
        return self._seen[specs_json, index]

    def cost(self, specs_json: str | None, started: datetime, finished: datetime | None, start: datetime,
             end: datetime) -> Decimal | None:
        """What a run cost within [start, end): each piece at the rate of its table; None if one has no price."""
        total = Decimal(0)
        for index, hours in self.history.pieces(started, finished, start, end):
            amount = cost(self(specs_json, index), hours)
            if amount is None:
                return None
            total += amount
        return total

    def ceiling(self, specs_json: str | None) -> bool:
        if specs_json not in self._ceiling:
            try:
                self._ceiling[specs_json] = ceiling(json.loads(specs_json) if specs_json else None)
            except ValueError:
                self._ceiling[specs_json] = False
        return self._ceiling[specs_json]


# --- one job ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCost:
    amount: Decimal
    currency: str
    running: bool
    ceiling: bool = False  # a spot job's: at most this (the market price, up to the bid, is unknown)

    def as_json(self) -> dict[str, Any]:
        return {"amount": money(self.amount), "currency": self.currency, "running": self.running,
                "ceiling": self.ceiling}


def job_cost(job: Job, prices: Prices | History | None = None, now: datetime | None = None) -> JobCost | None:
    """What the job cost (ended) or has cost so far (running), each hour at the prices in force then; None: it
    never ran, ended without DLC saying when, or has no price."""
    from jobs import status as st

    if job.started_at is None or (job.status in st.TERMINAL and job.finished_at is None):
        return None
    tables = history(prices) if prices is not None else history_for(job.workspace)
    end = now or timezone.now()
    job_specs = (job.body or {}).get("JobSpecs")
    total = Decimal(0)
    for index, hours in tables.pieces(job.started_at, job.finished_at, job.started_at, end):
        amount = cost(tables.tables[index][1].hourly(job_specs), hours)
        if amount is None:
            return None
        total += amount
    return JobCost(total, tables.currency, job.status not in st.TERMINAL, ceiling(job_specs))


# --- estimates ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    per_hour: Decimal
    currency: str
    at_most: Decimal | None = None  # with a maximum duration
    trials: int = 1
    ceiling: bool = False  # spot: the rate is the bid's ceiling

    @property
    def text(self) -> str:
        each = "" if self.trials == 1 else f" for each of {self.trials} trials ({money(self.per_hour * self.trials)} " \
                                           f"{self.currency} per hour in all)"
        most = "at most " if self.ceiling else ""
        out = f"Estimated {most}{money(self.per_hour)} {self.currency} per hour{each}"
        if self.at_most is not None:
            out += f", at most {money(self.at_most * self.trials)} {self.currency}"
            out += " in all" if self.trials > 1 else ""
        if self.ceiling:
            out += " (spot: at the bid's ceiling; DLC charges the market price, which may be lower)"
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
    return Estimate(rate, prices.currency, at_most, max(int(trials or 1), 1), ceiling(job_specs))


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
    ceiling: int = 0  # jobs in `amount` at their spot bid's ceiling: when > 0, `amount` is at most that


def spend(workspace: Workspace, start: datetime, end: datetime, prices: Prices | History) -> Spend:
    """What the workspace's jobs cost within [start, end): one pass over the rows jobs.usage reads (one query
    per index); hours are summed per job shape and table and each priced once, so 10k jobs cost a few Decimal
    sums. A job with no price in any table it ran under is left out whole."""
    from jobs import status as st

    rates = Rates(prices)
    hours: dict[tuple[str | None, int], float] = {}
    jobs = missing = spot = 0
    for _pk, _name, _owner, _type, status, started, finished, specs_json in usage.rows(workspace, start, end):
        if status in st.TERMINAL and finished is None:
            continue  # ended without DLC saying when: no run time (as in the usage report)
        jobs += 1
        pieces = rates.history.pieces(started, finished, start, end)
        if any(rates(specs_json, index) is None for index, _hours in pieces):
            missing += 1
            continue
        spot += rates.ceiling(specs_json)
        for index, piece in pieces:
            hours[specs_json, index] = hours.get((specs_json, index), 0.0) + piece
    total = sum((cost(rates(shape, index), piece) for (shape, index), piece in hours.items()), Decimal(0))
    return Spend(total, jobs, missing, spot)


@dataclass(frozen=True)
class Budget:
    amount: Decimal
    spent: Decimal
    currency: str
    no_price: int
    refuse: bool
    month: str  # "December 2026"
    ceiling: int = 0  # spot jobs in `spent` at their bid's ceiling: it is at most that (usage's "at most")

    @property
    def at_most(self) -> str:
        """"at most " before the spend when it counts a spot job at its bid's ceiling, as the usage report says."""
        return "at most " if self.ceiling else ""

    @property
    def ceiling_note(self) -> str:
        """": 1 spot job at its bid's ceiling" after a figure that is at most, "" otherwise."""
        if not self.ceiling:
            return ""
        return (": 1 spot job at its bid's ceiling" if self.ceiling == 1
                else f": {self.ceiling} spot jobs at their bids' ceilings")

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
        said = (f"{self.month}: {self.at_most}{money(self.spent)} {self.currency} spent of this workspace's budget "
                f"of {money(self.amount)} {self.currency} ({self.percent}%{self.ceiling_note}).")
        if self.exhausted and self.refuse:
            said += " New jobs are refused until next month or until an admin raises the budget."
        return said

    def as_json(self) -> dict[str, Any]:
        return {"amount": money(self.amount), "spent": money(self.spent), "currency": self.currency,
                "percent": self.percent, "no_price_jobs": self.no_price, "ceiling_jobs": self.ceiling,
                "refuse_when_spent": self.refuse, "month": self.month}


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
        found = spend(workspace, start, now, history_of(stored))
        if stored.pk is not None:
            cache.set(key, found, SPEND_TTL)
    return Budget(amount, found.amount, prices.currency, found.no_price, stored.refuse_when_spent,
                  f"{start.astimezone(ZoneInfo(settings.TIME_ZONE)):%B %Y}", found.ceiling)


def refusal(workspace: Workspace) -> str | None:
    """The guardrail's message when the workspace refuses new jobs because this month's budget is spent."""
    stored = row(workspace)
    if not stored.refuse_when_spent or stored.monthly_budget is None:
        return None
    status = budget(workspace, stored=stored)
    if status is None or not status.exhausted:
        return None
    return (f"This workspace's budget for {status.month} is spent ({status.at_most}{money(status.spent)} of "
            f"{money(status.amount)} {status.currency}{status.ceiling_note}): new jobs are refused until next month "
            "or until an admin raises the budget.")


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


def unoffered(workspace: Workspace, table: Mapping[str, Any], offered: Mapping[str, Any] | None,
              stored: Mapping[str, Any]) -> list[str]:
    """Why instance types of a price table as typed cannot be priced: types ListEcsSpecs does not offer (`offered`,
    None when the backend could not be asked: then nothing is refused), unless already priced (`stored`) or named by
    a job of the workspace (a type retired since keeps its price for the hours run on it). A typo such as
    ecs.gn6i-c4g1.xlarg would otherwise be saved, and every job on the real type be "no price" without a word,
    as the wizard refuses a type ListEcsSpecs does not offer."""
    if offered is None:
        return []
    from django.db.models.fields.json import KeyTextTransform

    unknown = [name for name in table if name not in offered and name not in stored]
    specs = Job.objects.filter(workspace=workspace).annotate(specs=KeyTextTransform("JobSpecs", "body"))
    # One query per unknown name (a table has few typos); the quotes make it the whole name, not a prefix.
    return [f"{name} is not an instance type ListEcsSpecs offers in this workspace's region, and no job here ran "
            "on it: check its spelling." for name in unknown if not specs.filter(specs__contains=f'"{name}"').exists()]


def table_text(prices: Mapping[str, Any]) -> str:
    return "\n".join(f"{name} {plain(price)}" for name, price in sorted(prices.items()))

