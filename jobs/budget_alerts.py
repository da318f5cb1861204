"""Budget alerts: telling a workspace's admins, once, when its month-to-date spend crosses 80% or 100% of its
monthly budget, without anyone opening a page (as cloud budget tools do).

Plain functions; jobs.tasks.check_budgets (the beat, and right after jobs end) and jobs.tasks.email_budget_alert
are the thin tasks. The spend is jobs.costs.budget's, the figure the list, wizard and guardrail show. A crossing is
a BudgetAlert row, unique per (workspace, month, budget amount, threshold): two workers or a retried task record it
once, and the mails (jobs.notify_email's EmailDelivery rows, sent and retried as job mails are) are made in the same
transaction, so what is owed survives a lost task. A changed budget starts afresh: an admin who raised it is warned
again when the new amount is crossed (a budget set back to an amount already alerted this month is not told twice).
"""

from __future__ import annotations

import logging
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from jobs import audit, costs, notify
from jobs.models import AuditEvent, Membership, Workspace, WorkspaceCost
from jobs.notify_models import BudgetAlert, EmailDelivery, NotificationPrefs

log = logging.getLogger(__name__)

THRESHOLDS = (80, 100)  # percent, lowest first
AUDIT_BY = "budget"


def month_of(now: datetime | None = None) -> str:
    """The calendar month `now` falls in, "YYYY-MM", in the console's zone (DLC_TIME_ZONE), as costs counts it."""
    start, _after = costs.month_bounds(now)
    return f"{start.astimezone(ZoneInfo(settings.TIME_ZONE)):%Y-%m}"


def crossed(status: costs.Budget) -> list[int]:
    """The thresholds the spend has reached, lowest first (costs.Budget.level's reading: a zero budget with no
    spend has crossed none)."""
    return [at for at in THRESHOLDS if status.level >= at]


def check(workspace: Workspace, now: datetime | None = None) -> list[BudgetAlert]:
    """Record the thresholds this workspace's spend newly crossed this month and owe their mails; the new rows.

    Of thresholds crossed at once (a big job ended, or a budget lowered below the spend), only the highest is told;
    the others are recorded as not notified. Only this budget amount's rows count: a changed budget alerts anew."""
    now = now or timezone.now()
    status = costs.budget(workspace, now, fresh=True)
    if status is None:
        return []
    reached = crossed(status)
    if not reached:
        return []
    month = month_of(now)
    known = set(BudgetAlert.objects.filter(workspace=workspace, month=month, budget=status.amount)
                .values_list("threshold", flat=True))
    new = [at for at in reached if at not in known]
    if not new:
        return []
    top = max(reached) if max(reached) not in known and max(reached) > max(known, default=0) else None
    made: list[BudgetAlert] = []
    for at in new:
        try:
            with transaction.atomic():
                alert = BudgetAlert.objects.create(
                    workspace=workspace, month=month, threshold=at, spent=status.spent, budget=status.amount,
                    currency=status.currency, notified=at == top, created_at=now)
                _tell(alert, status.refuse)
        except IntegrityError:
            continue  # another worker recorded it first: it tells, not this one
        made.append(alert)
    return made


def _tell(alert: BudgetAlert, refusing: bool) -> None:
    """The alert's audit event, a delivery owed to each webhook that asked for Budget and a mail to each admin who
    opted in (in the alert's transaction)."""
    audit.record(None, AuditEvent.BUDGET, workspace=alert.workspace, by=AUDIT_BY, event="budget-threshold-crossed",
                 month=alert.month, threshold_percent=alert.threshold, spent=costs.money(alert.spent),
                 budget=costs.money(alert.budget), currency=alert.currency, notified=alert.notified,
                 refusing=refusing)
    if not alert.notified:
        return
    notify.budget_deliveries(alert)
    EmailDelivery.objects.bulk_create([
        EmailDelivery(budget_alert=alert, user_id=user_id, status=f"Budget{alert.threshold}",
                      next_attempt_at=timezone.now())
        for user_id in recipients(alert.workspace)
    ])


def recipients(workspace: Workspace) -> list[int]:
    """The workspace's active admins who opted in to budget mails and have an address."""
    admins = Membership.objects.filter(workspace=workspace, role=Membership.ADMIN, user__is_active=True) \
        .exclude(user__email="").values_list("user_id", flat=True)
    return list(NotificationPrefs.objects.filter(user_id__in=admins, email_on_budget=True)
                .order_by("user_id").values_list("user_id", flat=True))


def budgeted_workspaces() -> list[int]:
    return list(WorkspaceCost.objects.filter(monthly_budget__isnull=False).order_by("workspace_id")
                .values_list("workspace_id", flat=True))


def has_budget(workspace_id: int) -> bool:
    return WorkspaceCost.objects.filter(workspace_id=workspace_id, monthly_budget__isnull=False).exists()


def check_all(now: datetime | None = None) -> list[int]:
    """Check every workspace with a budget; the ids of the alerts told (their mails and webhooks to enqueue)."""
    owed: list[int] = []
    for workspace in Workspace.objects.filter(pk__in=budgeted_workspaces()).select_related("costs"):
        owed += [alert.pk for alert in check(workspace, now) if alert.notified]
    return owed


def of_month(workspace: Workspace, now: datetime | None = None) -> list[BudgetAlert]:
    """This month's alerts told for the current budget, for the budget card ("Alerted at 80% on 12 Dec 14:02"):
    those of a budget since changed no longer describe it."""
    amount = costs.row(workspace).monthly_budget
    if amount is None:
        return []
    return list(BudgetAlert.objects.filter(workspace=workspace, month=month_of(now), budget=amount, notified=True))


# -- the mail ------------------------------------------------------------------------------------------------


def subject(alert: BudgetAlert) -> str:
    return (f"[DLC Console] {' '.join(alert.workspace.name.split())[:200]} reached {alert.threshold}% of its "
            f"budget for {alert.month}")


def body(alert: BudgetAlert) -> str:
    url = settings.DLC_BASE_URL + reverse("usage_report", args=[alert.workspace_id])
    refusing = costs.row(alert.workspace).refuse_when_spent
    lines = [
        f"The workspace {' '.join(alert.workspace.name.split())} has spent {costs.money(alert.spent)} "
        f"{alert.currency} of its monthly budget of {costs.money(alert.budget)} {alert.currency} for {alert.month} "
        f"({alert.threshold}% reached).",
        "",
        "Spent: jobs that ended this month plus running jobs so far, at the workspace's own prices (DLC's bill "
        "stays the authority).",
    ]
    if alert.threshold >= 100 and refusing:
        lines.append("The workspace refuses new jobs until next month or until an admin raises the budget.")
    lines += ["", f"Usage and budget: {url}", "",
              "You get this mail as an admin of the workspace who opted in on the console's Email notifications "
              "page."]
    return "\n".join(lines) + "\n"
