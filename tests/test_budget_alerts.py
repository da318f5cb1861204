"""jobs.budget_alerts: a workspace's month-to-date spend crossing 80% or 100% of its budget, recorded once per
(workspace, month, budget amount, threshold), mailed to the admins who opted in through jobs.notify_email's delivery
rows, and audited. Database tests on the portal team (no stack: the spend needs no backend); mail through Django's
locmem backend, and a real refused SMTP connection for the retry path.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs import budget_alerts, costs, notify, notify_email
from jobs.models import AuditEvent, Job, Membership, WorkspaceCost
from jobs.notify_models import BudgetAlert, EmailDelivery, NotificationPrefs, WebhookDelivery
from tests import portal_fixtures as pf
from tests.test_notify import fixture_receiver, make_webhook  # noqa: F401 - fixture_receiver registers "receiver"

NOW = datetime(2026, 12, 10, 12, tzinfo=UTC)
HOURLY = Decimal("24.8")  # two pods of ecs.gn6i-c4g1.xlarge at 12.4


@pytest.fixture(name="team")
def fixture_team(db, settings):
    settings.TIME_ZONE = "UTC"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    team = pf.make_team()
    Job.objects.all().delete()  # the fixture's jobs never started
    for name in ("admin", "member", "viewer"):
        user = team.users[name]
        user.email = f"{name}@example.com"
        user.save(update_fields=["email"])
        NotificationPrefs.objects.create(user=user, email_on_budget=True)
    return team


def set_budget(team, amount: str, refuse: bool = False) -> None:
    WorkspaceCost.objects.update_or_create(workspace=team.alpha, defaults={
        "instance_prices": {"ecs.gn6i-c4g1.xlarge": "12.4"}, "monthly_budget": amount, "refuse_when_spent": refuse})
    team.alpha.refresh_from_db()


def ran(team, name: str, hours: float, *, end: datetime = NOW) -> Job:
    """A job that ran `hours` up to `end`, costing HOURLY an hour."""
    return Job.objects.create(
        workspace=team.alpha, owner=team.users["member"], display_name=name, status="Succeeded",
        dlc_job_id=f"dlc-{name}", body={**pf.BODY, "DisplayName": name, "JobSpecs": [
            {"Type": "Worker", "PodCount": 2, "Image": "img", "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]},
        created_at=end - timedelta(hours=hours, minutes=1), started_at=end - timedelta(hours=hours), finished_at=end)


def check(team, now: datetime = NOW) -> list[BudgetAlert]:
    made = budget_alerts.check(team.alpha, now)
    for alert in made:
        notify_email.deliver_budget(alert.pk)
    return made


def test_no_alert_under_80_percent(team):
    set_budget(team, "100")
    ran(team, "small", 3)  # 74.40 of 100
    assert check(team) == [] and not BudgetAlert.objects.exists() and not mail.outbox


def test_80_percent_alerts_once_by_mail_audit_and_card(team):
    set_budget(team, "30", refuse=True)
    ran(team, "one", 1)  # 24.80 of 30: 82%
    [alert] = check(team)
    assert (alert.month, alert.threshold, alert.spent, alert.budget, alert.currency, alert.notified) == \
        ("2026-12", 80, HOURLY, Decimal(30), "CNY", True)
    [sent] = mail.outbox
    assert sent.to == ["admin@example.com"], "only the admin who opted in, not the member or viewer"
    assert "Alpha reached 80%" in sent.subject and "24.80 CNY of its monthly budget of 30.00 CNY" in sent.body
    assert "refuses new jobs" not in sent.body, "only at 100%"
    event = AuditEvent.objects.get(details__event="budget-threshold-crossed")
    assert event.actor is None and event.actor_name == "budget" and event.workspace == team.alpha
    assert event.action == AuditEvent.BUDGET, "a crossing is not a settings change"
    audit_page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/audit", {"action": "budget"})
    assert audit_page.status_code == 200 and [e.pk for e in audit_page.context["rows"]] == [event.pk]
    assert '<option value="budget"' in audit_page.content.decode()
    assert event.details["threshold_percent"] == 80 and event.details["spent"] == "24.80"
    assert check(team) == [] and len(mail.outbox) == 1, "a second run sends nothing"
    assert BudgetAlert.objects.count() == 1 and EmailDelivery.objects.get().sent_at is not None
    with pytest.raises(IntegrityError), transaction.atomic():  # two workers: the key lets one row in
        BudgetAlert.objects.create(workspace=team.alpha, month="2026-12", threshold=80, spent=1, budget=30,
                                   currency="CNY")
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/usage")
    assert page.status_code == 200
    assert "Alerted at 80% on 10 Dec 12:00" in page.content.decode()


def test_100_percent_after_80_then_a_raised_budget_alerts_again_when_crossed(team):
    set_budget(team, "30", refuse=True)
    ran(team, "one", 1)
    check(team)
    ran(team, "two", 0.5, end=NOW + timedelta(hours=1))  # 37.20 of 30
    [alert] = check(team, NOW + timedelta(hours=1))
    assert alert.threshold == 100 and len(mail.outbox) == 2
    assert "reached 100%" in mail.outbox[1].subject and "refuses new jobs" in mail.outbox[1].body
    set_budget(team, "45")  # 37.20 of 45: 82% of the new budget
    usage = f"/workspaces/{team.alpha.pk}/usage"
    page = pf.client_for(team.users["admin"]).get(usage).content.decode()
    assert "Alerted at" not in page, "the old budget's alerts do not describe the new one"
    [alert] = check(team, NOW + timedelta(hours=2))
    assert (alert.threshold, alert.budget, alert.notified) == (80, Decimal(45), True) and len(mail.outbox) == 3
    assert "reached 80%" in mail.outbox[2].subject
    assert "of its monthly budget of 45.00 CNY" in mail.outbox[2].body
    assert check(team, NOW + timedelta(hours=2)) == [], "the new budget's 80% is told once"
    ran(team, "three", 0.5, end=NOW + timedelta(hours=3))  # 49.60 of 45: the new budget overspent
    [alert] = check(team, NOW + timedelta(hours=3))
    assert (alert.threshold, alert.budget) == (100, Decimal(45)) and len(mail.outbox) == 4
    page = pf.client_for(team.users["admin"]).get(usage).content.decode()
    assert "Alerted at 80%" in page and "Alerted at 100%" in page and page.count("Alerted at") == 2


def test_a_lowered_budget_already_crossed_tells_its_highest_threshold_once(team):
    set_budget(team, "100")
    ran(team, "one", 1)  # 24.80 of 100
    assert check(team) == []
    set_budget(team, "30")  # 82%
    [alert] = check(team, NOW + timedelta(minutes=1))
    assert (alert.threshold, alert.notified) == (80, True)
    set_budget(team, "20")  # 124% of a budget lowered again: one alert, at 100, not both
    made = check(team, NOW + timedelta(minutes=2))
    assert [(a.threshold, a.notified) for a in made] == [(80, False), (100, True)]
    assert len(mail.outbox) == 2 and "reached 100%" in mail.outbox[1].subject
    set_budget(team, "30")  # back to an amount already told this month: not told twice
    assert check(team, NOW + timedelta(minutes=3)) == [] and len(mail.outbox) == 2


def test_crossing_both_at_once_sends_the_100_only_and_records_both(team):
    set_budget(team, "20")
    ran(team, "big", 1)  # 24.80 of 20
    made = check(team)
    assert [(a.threshold, a.notified) for a in made] == [(80, False), (100, True)]
    [sent] = mail.outbox
    assert "reached 100%" in sent.subject
    assert AuditEvent.objects.filter(details__event="budget-threshold-crossed").count() == 2
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/usage").content.decode()
    assert "Alerted at 100%" in page and "Alerted at 80%" not in page


def test_a_threshold_below_one_told_for_the_same_budget_is_recorded_silently(team):
    set_budget(team, "30")
    ran(team, "one", 1)  # 82%
    BudgetAlert.objects.create(workspace=team.alpha, month="2026-12", threshold=100, spent=31, budget=30,
                               currency="CNY")  # told when the spend was higher (a price since lowered)
    [alert] = check(team)
    assert (alert.threshold, alert.notified) == (80, False) and not mail.outbox


def test_the_next_month_alerts_again(team):
    set_budget(team, "30")
    ran(team, "dec", 1)
    check(team)
    january = datetime(2027, 1, 5, 12, tzinfo=UTC)
    assert check(team, january) == [], "January has spent nothing yet"
    ran(team, "jan", 1, end=january)
    [alert] = check(team, january)
    assert alert.month == "2027-01" and len(mail.outbox) == 2


def test_the_month_is_the_consoles_zone_across_dst(team, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    assert budget_alerts.month_of(datetime(2026, 2, 28, 23, 30, tzinfo=UTC)) == "2026-03", "00:30 CET on 1 March"
    assert budget_alerts.month_of(datetime(2026, 10, 31, 22, 30, tzinfo=UTC)) == "2026-10", "23:30 CET, after DST"
    assert budget_alerts.month_of(datetime(2026, 10, 31, 23, 0, tzinfo=UTC)) == "2026-11"
    set_budget(team, "30")
    first_of_march = datetime(2026, 2, 28, 23, 30, tzinfo=UTC)
    ran(team, "feb", 1, end=datetime(2026, 2, 28, 22, 30, tzinfo=UTC))  # 23:30 on 28 February in Berlin
    assert check(team, first_of_march) == [], "February's job is not March's spend"
    ran(team, "mar", 0.5, end=datetime(2026, 3, 1, 1, 0, tzinfo=UTC))
    ran(team, "mar2", 0.5, end=datetime(2026, 3, 1, 1, 30, tzinfo=UTC))
    [alert] = check(team, datetime(2026, 3, 1, 2, tzinfo=UTC))
    assert alert.month == "2026-03"


def test_opted_out_and_demoted_admins_and_members_get_no_mail(team):
    NotificationPrefs.objects.filter(user=team.users["admin"]).update(email_on_budget=False)
    promoted = team.users["viewer"]
    Membership.objects.filter(user=promoted, workspace=team.alpha).update(role=Membership.ADMIN)
    set_budget(team, "30")
    ran(team, "one", 1)
    [alert] = budget_alerts.check(team.alpha, NOW)
    assert list(alert.emails.values_list("user_id", flat=True)) == [promoted.pk]
    Membership.objects.filter(user=promoted, workspace=team.alpha).update(role=Membership.MEMBER)
    assert notify_email.deliver_budget(alert.pk) is None and not mail.outbox
    assert alert.emails.get().last_error == "no longer an admin of the workspace"


def test_a_refused_smtp_connection_is_retried_on_the_job_mails_path(team, settings):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once it is closed: a real "connection refused"
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 3
    set_budget(team, "30")
    ran(team, "one", 1)
    [alert] = budget_alerts.check(team.alpha, NOW)
    wait = notify_email.deliver_budget(alert.pk)
    delivery = alert.emails.get()
    assert delivery.attempts == 1 and delivery.sent_at is None and "ConnectionRefused" in delivery.last_error
    assert wait == pytest.approx(notify_email.RETRY_BASE_SECONDS, abs=1)
    assert notify_email.deliver_budget(alert.pk) is not None and alert.emails.get().attempts == 1, "not yet due"
    EmailDelivery.objects.update(next_attempt_at=delivery.created_at - timedelta(hours=1))
    assert notify_email.owed_budget_alerts(timedelta(seconds=30)) == [alert.pk], "the sweep finds a lost task"
    assert notify_email.owed_jobs(timedelta(seconds=30)) == [], "and the job mails' sweep leaves it alone"


def test_only_admins_are_offered_the_budget_checkbox(team):
    assert "email_on_budget" in pf.client_for(team.users["admin"]).get("/account/notifications").content.decode()
    assert "email_on_budget" not in pf.client_for(team.users["member"]).get("/account/notifications").content.decode()
    response = pf.client_for(team.users["admin"]).post("/account/notifications", {
        "email": "admin@example.com", "email_on_budget": ""})
    assert response.status_code == 302
    assert not NotificationPrefs.objects.get(user=team.users["admin"]).email_on_budget


def test_a_webhook_that_asked_for_budget_gets_one_signed_post(team, receiver, settings):
    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    receiver.script = {"/budget": [500, 200]}
    hook = make_webhook(team.alpha, receiver.url("/budget"), events=("Failed", "Budget"), secret="s3cret")
    make_webhook(team.alpha, receiver.url("/jobs"), events=("Failed",), name="jobs only")
    set_budget(team, "20", refuse=True)
    ran(team, "big", 1)
    made = budget_alerts.check(team.alpha, NOW)
    top = made[-1]
    assert WebhookDelivery.objects.get().budget_alert == top, "one delivery: the 100% one, to the Budget webhook"
    assert notify.notify_budget(top.pk) is not None, "a 500: retried"
    assert notify.notify_budget(top.pk) is None and notify.notify_budget(top.pk) is None, "delivered, then nothing"
    assert budget_alerts.check(team.alpha, NOW) == [] and WebhookDelivery.objects.count() == 1
    posts = receiver.posts("/budget")
    assert len(posts) == 2 and not receiver.posts("/jobs")
    headers, body = posts[-1]
    assert headers["X-DLC-Signature"] == "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    data = json.loads(body)
    delivery = WebhookDelivery.objects.get()
    assert data == {"event": "budget.threshold", "event_id": str(delivery.event_id), "workspace": "Alpha",
                    "month": "2026-12", "threshold_percent": 100, "spent": "24.80", "budget": "20.00",
                    "currency": "CNY", "refusing": True, "sent_at": data["sent_at"]}
    assert json.loads(posts[0][1])["event_id"] == data["event_id"], "the same event id on every try"
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/notifications/{hook.pk}/deliveries")
    assert page.status_code == 200 and "budget 100% of 2026-12" in page.content.decode()
    card = " ".join(pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/notifications")
                    .content.decode().split())
    assert "Events: Failed, Budget" in card and "Job ends:" not in card, "a budget alert is no job end"
    WebhookDelivery.objects.update(delivered_at=None, next_attempt_at=None)  # as if given up
    copy = notify.resend(hook, delivery.pk)
    assert (copy.budget_alert, copy.job, copy.event_id) == (top, None, delivery.event_id)
    assert notify.notify_budget(top.pk) is None and len(receiver.posts("/budget")) == 3


def test_a_job_end_checks_its_budgeted_workspace_once_committed(team, django_capture_on_commit_callbacks):
    from jobs import lifecycle

    job = ran(team, "one", 1)
    with django_capture_on_commit_callbacks() as without:
        lifecycle._enqueue_notify(team.alpha.pk, [job.pk])
    set_budget(team, "30")
    with django_capture_on_commit_callbacks() as budgeted:
        lifecycle._enqueue_notify(team.alpha.pk, [job.pk])
    assert len(budgeted) == len(without) + 1, "the check_budgets task, only for a workspace with a budget"


def test_the_budget_card_says_the_spend_once_and_colours_the_bar_at_80_and_100(team):
    usage = f"/workspaces/{team.alpha.pk}/usage"
    now = timezone.now()  # the page counts the real month: a job within it, however early in the month it is
    start, _after = costs.month_bounds(now)
    hours = min(1.0, (now - start).total_seconds() / 7200)
    set_budget(team, "1000")
    job = ran(team, "one", hours, end=now)
    spent = costs.job_cost(job).amount
    for share, refuse, bar, notice in [
            ("0.5", False, 'class="budget"', None),
            ("0.85", False, 'class="budget near"', "80% of the budget is spent."),
            ("1.2", True, 'class="budget spent"',
             "The budget is spent. New jobs are refused until next month or until an admin raises the budget.")]:
        set_budget(team, str((spent / Decimal(share)).quantize(Decimal("0.01"))), refuse=refuse)
        page = pf.client_for(team.users["admin"]).get(usage).content.decode()
        card = page[page.index('id="budget"'):]
        card = card[:card.index("</section>")]
        assert card.count(f"{costs.money(spent)} CNY") == 1, "the figures are said once, not again in the notice"
        assert f'<progress {bar}' in card and "style=" not in card
        if notice:
            assert notice in card
        else:
            assert "budget-notice" not in card
