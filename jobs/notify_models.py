"""Models of job notifications: a workspace's webhooks and their deliveries (jobs.notify sends them), and each
user's own email notifications and their deliveries (jobs.notify_email).

Imported at the bottom of jobs/models.py so Django registers them in the `jobs` app.
"""

from __future__ import annotations

import hashlib
import uuid
from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from jobs import secretbox
from jobs import status as st

# A job that ended Stopped without ever running because the job it was to run after did not succeed
# (jobs.dependencies.SKIPPED): an end of its own for webhooks ("job.skipped"), so that receivers can tell it from a
# real stop. A delivery's `status` holds it in place of the job's status.
SKIPPED = "Skipped"
# A delivery's `status` for a sweep's one summary ("sweep.ended"), keyed on the sweep's first trial's job.
SWEEP_ENDED = "SweepEnded"

# A delivery's `status` for an idle spell of a running job is "Idle:<the spell's start, epoch seconds>" (jobs.idle):
# one per spell, the next spell news again.
IDLE = "Idle"


def is_idle(status: str) -> bool:
    return status == IDLE or status.startswith(IDLE + ":")


# A budget alert of the workspace (jobs.budget_alerts), "budget.threshold": not a job's end, and no delivery's job.
BUDGET = "Budget"

# The job ends a webhook may be told about: the terminal statuses (jobs.status.TERMINAL) and Skipped, in page order.
EVENTS = [
    ("Succeeded", "Succeeded"),
    ("Failed", "Failed"),
    ("Stopped", "Stopped"),
    (st.SUBMIT_FAILED, st.label(st.SUBMIT_FAILED)),
    (SKIPPED, "Skipped (the job it was to run after did not succeed)"),
    # Not an end: a running job the workspace's idle policy flagged (jobs.idle), "job.idle" once per idle spell.
    (IDLE, "Idle (still running; flagged by the workspace's idle policy)"),
    # Not a job's: the workspace's month-to-date spend crossed 80% or 100% of its monthly budget, once each.
    (BUDGET, "Budget (this month's spend crossed 80% or 100% of the budget)"),
]
PER_TRIAL, PER_SWEEP = "trial", "sweep"
SWEEP_CHOICES = [(PER_TRIAL, "An event per trial"), (PER_SWEEP, "One event when the sweep ends")]


# -- a webhook URL: sealed, shown only as host and fingerprint -------------------------------------------------
# Chat receivers (Slack, Teams, Discord, any ?token=) put their credential in the URL's path or query: the URL is a
# secret, sealed like the signing secret. Pure functions here, so that migration 0035 seals old rows exactly as
# Webhook.set_url seals new ones.


def host_of(url: str) -> str:
    """The URL's scheme, host and port only: for pages, the audit log and errors (a webhook URL's path may be its
    secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def url_digest(url: str) -> str:
    """The fingerprint of a full URL (sha256, 12 hex): the audit log's url_digest and the pages' "#…", so that an
    admin can match an audit line to a webhook and tell two webhooks of one host apart."""
    return hashlib.sha256(url.encode()).hexdigest()[:12]


def url_fields(url: str) -> dict[str, str]:
    """A webhook's stored URL fields for `url`: the only place that writes them."""
    return {"sealed_url": secretbox.seal({"url": url}), "url_host": host_of(url), "url_digest": url_digest(url)}


def unsealed_url(sealed: str) -> str:
    """The URL in a sealed_url; "" when it does not open (another DLC_SECRET_BOX_KEY)."""
    return str(secretbox.unseal(sealed).get("url") or "")


class Webhook(models.Model):
    """A URL that gets a JSON POST when a job of the workspace ends with one of `events`.

    The URL and the signing secret are sealed (jobs.secretbox, key outside the database) and never shown again once
    saved: the URL only as its scheme, host and port and a fingerprint (url_shown).
    """

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=100)
    # Written together by set_url (url_fields), read by real_url: the URL is never stored in plain text.
    sealed_url = models.TextField()
    url_host = models.CharField("URL host", max_length=300)  # scheme://host[:port]: nothing secret
    url_digest = models.CharField("URL fingerprint", max_length=12)  # url_digest of the full URL
    events = models.JSONField(default=list, help_text="Job statuses that notify (EVENTS).")
    enabled = models.BooleanField(default=True)
    sealed_secret = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # Deliveries given up in a row (a delivered one starts it over). At DLC_WEBHOOK_PAUSE_AFTER the webhook is
    # paused: disabled with `paused_reason`, until an admin enables it again (jobs.notify.note_outcome).
    failures_in_a_row = models.PositiveIntegerField(default=0)
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=300, blank=True)
    # A sweep's trials: each trial's end, or one "sweep.ended" once the last trial ended (jobs.notify). Rows made
    # before this choice existed keep PER_TRIAL (migration 0025): their receivers expect those events.
    sweeps = models.CharField("Sweeps", max_length=8, choices=SWEEP_CHOICES, default=PER_SWEEP)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="one_webhook_name_per_workspace"),
                       # Names differing only in case are one name (WebhookForm's check): held here against races.
                       models.UniqueConstraint("workspace", Lower("name"), name="one_webhook_name_ignoring_case")]

    def __str__(self) -> str:
        return self.name

    @property
    def event_labels(self) -> list[str]:
        return [label for value, label in EVENTS if value in (self.events or [])]

    def real_url(self) -> str:
        """The full URL, for the POST only (jobs.notify); "" when it does not unseal (DLC_SECRET_BOX_KEY changed)."""
        return unsealed_url(self.sealed_url)

    # A template asking for {{ webhook.real_url }} gets nothing: no page may show the URL whole.
    real_url.alters_data = True

    def set_url(self, url: str) -> None:
        for name, value in url_fields(url).items():
            setattr(self, name, value)

    @property
    def url_shown(self) -> str:
        """What pages show of the URL: "https://hooks.slack.com/… #3fa2b1c4d5e6" (host and fingerprint)."""
        return f"{self.url_host}/… #{self.url_digest}"

    @property
    def has_secret(self) -> bool:
        return bool(self.sealed_secret)

    def secret(self) -> str:
        return str(secretbox.unseal(self.sealed_secret).get("secret") or "")

    def set_secret(self, value: str) -> None:
        self.sealed_secret = secretbox.seal({"secret": value}) if value else ""

    @property
    def hears(self) -> bool:
        """Whether a job end makes it a delivery: enabled, or paused after failures (its deliveries are made held
        and go on when an admin enables it), but not disabled by hand: that is what an admin's Disable means."""
        return self.enabled or self.paused_at is not None

    def resume(self) -> None:
        """Enabled again by an admin: the failures that paused it are forgiven (the caller saves)."""
        self.enabled = True
        self.failures_in_a_row = 0
        self.paused_at = None
        self.paused_reason = ""


class WebhookDelivery(models.Model):
    """One job end (or a sweep's end) told to one webhook: made at most once (the unique key), tried until a 2xx or
    out of attempts.

    `next_attempt_at` is when the next try is due; None once delivered, given up or held. A try in progress holds
    it a little ahead (jobs.notify.attempt's claim), so two workers never POST the same delivery at once. `held_at`:
    its webhook was paused or disabled when its turn came; enabling the webhook sends it on (jobs.notify.resume).
    A given-up delivery can be resent by an admin: a new row (`resend_of` it) with the same `event_id`, so that a
    receiver that got it after all can tell the copy; `resent_at` on the original lets that happen once.
    """

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # A job's (or its sweep's) event, or (job None) a budget alert's: exactly one of the two.
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    budget_alert = models.ForeignKey("jobs.BudgetAlert", on_delete=models.CASCADE, related_name="webhook_deliveries",
                                     null=True, blank=True)
    status = models.CharField(max_length=32)
    attempts = models.PositiveIntegerField(default=0)
    last_code = models.PositiveSmallIntegerField("last HTTP status", null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)  # redacted; never the URL or a secret
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    event_id = models.UUIDField(default=uuid.uuid4, editable=False)
    held_at = models.DateTimeField(null=True, blank=True)
    resend_of = models.OneToOneField("self", on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="resent_as")
    resent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # Resends are copies of an end already made: the end itself is made once.
            models.UniqueConstraint(fields=["webhook", "job", "status"], condition=models.Q(resend_of__isnull=True),
                                    name="one_delivery_per_job_end"),
            models.UniqueConstraint(fields=["webhook", "budget_alert"],
                                    condition=models.Q(resend_of__isnull=True, budget_alert__isnull=False),
                                    name="one_delivery_per_budget_alert"),
            models.CheckConstraint(condition=models.Q(job__isnull=False, budget_alert__isnull=True)
                                   | models.Q(job__isnull=True, budget_alert__isnull=False),
                                   name="delivery_of_a_job_or_a_budget_alert"),
        ]
        indexes = [
            # The sweep's "owed and overdue" range: delivered and given-up rows hold NULL there.
            models.Index(fields=["next_attempt_at"], name="delivery_next_attempt"),
            # A webhook's latest deliveries on the settings page.
            models.Index(fields=["webhook", "-id"], name="delivery_webhook_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.webhook_id}/{self.job_id or 'budget-' + str(self.budget_alert_id)}/{self.status}"

    @property
    def state(self) -> str:
        """delivered, pending, retrying, paused (owed, its webhook not enabled: nothing is sent meanwhile), or
        failed (given up: out of attempts, or dropped)."""
        if self.delivered_at:
            return "delivered"
        if self.held_at:
            return "paused"
        if self.next_attempt_at:
            if not self.webhook.enabled:
                return "paused"
            return "retrying" if self.attempts else "pending"
        return "failed"

    @property
    def resendable(self) -> bool:
        return self.state == "failed" and self.resent_at is None

    @property
    def is_sweep(self) -> bool:
        return self.status == SWEEP_ENDED


class NotificationPrefs(models.Model):
    """Which of a user's own job ends are mailed to them (jobs.notify_email): opt-in, all off until ticked.

    The address is the user's own (User.email), not kept here twice.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_prefs")
    email_on_failure = models.BooleanField("Email me when my job fails", default=False)
    email_on_success = models.BooleanField("Email me when my job succeeds", default=False)
    email_on_stop = models.BooleanField("Email me when my job is stopped", default=False)
    email_on_idle = models.BooleanField("Email me when my running job is idle", default=False)
    email_on_budget = models.BooleanField(
        "Email me when a workspace I administer crosses 80% or 100% of its monthly budget", default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "notification prefs"

    def __str__(self) -> str:
        return f"notification prefs of {self.user_id}"


class EmailDelivery(models.Model):
    """One job end mailed to its owner: made at most once per job and user (the unique key), so a task run twice
    or retried never mails twice. `next_attempt_at` as on WebhookDelivery: when the next try is due, held a
    little ahead by a try under way (jobs.notify_email's claim), None once sent or given up."""

    # A job's mail, or (job None) a budget alert's (jobs.budget_alerts): exactly one of the two.
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    budget_alert = models.ForeignKey("jobs.BudgetAlert", on_delete=models.CASCADE, related_name="emails",
                                     null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=32)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)  # redacted; never the SMTP password
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "user"], condition=~models.Q(status__startswith=IDLE),
                                    name="one_email_per_job_and_user"),
            # An idle spell's mail (status "Idle:<start>", jobs.idle): one per spell, beside the end's one.
            models.UniqueConstraint(fields=["job", "user", "status"], condition=models.Q(status__startswith=IDLE),
                                    name="one_email_per_idle_spell"),
            models.UniqueConstraint(fields=["budget_alert", "user"], condition=models.Q(budget_alert__isnull=False),
                                    name="one_email_per_budget_alert_and_user"),
            models.CheckConstraint(condition=models.Q(job__isnull=False, budget_alert__isnull=True)
                                   | models.Q(job__isnull=True, budget_alert__isnull=False),
                                   name="email_of_a_job_or_a_budget_alert"),
        ]
        # The sweep's "owed and overdue" range (sent and given-up rows hold NULL there).
        indexes = [models.Index(fields=["next_attempt_at"], name="email_next_attempt")]

    def __str__(self) -> str:
        return f"{self.job_id or 'budget-' + str(self.budget_alert_id)}/{self.user_id}/{self.status}"


class BudgetAlert(models.Model):
    """A workspace's month-to-date spend crossing a share of its monthly budget (jobs.budget_alerts): recorded once
    per workspace, month, budget amount and threshold (the unique key), so two workers or a retried task alert once
    and a changed budget alerts anew. `notified`: this one was told (mail, audit); crossing 80% and 100% at once
    records both but tells only the 100%."""

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, related_name="budget_alerts")
    month = models.CharField(max_length=7)  # "2026-12", in DLC_TIME_ZONE
    threshold = models.PositiveSmallIntegerField()  # percent: 80 or 100
    spent = models.DecimalField(max_digits=20, decimal_places=4)
    budget = models.DecimalField(max_digits=20, decimal_places=4)
    currency = models.CharField(max_length=8)
    notified = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["month", "threshold"]
        # Keyed by the budget too: a changed budget starts afresh, its crossings told again.
        constraints = [models.UniqueConstraint(fields=["workspace", "month", "budget", "threshold"],
                                               name="one_budget_alert_per_month_budget_and_threshold")]

    def __str__(self) -> str:
        return f"{self.workspace_id}/{self.month}/{self.threshold}%"
