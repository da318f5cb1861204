"""Models of the team portal: guardrail policies, the audit log, API tokens and job templates.

Imported at the bottom of jobs/models.py so Django registers them in the `jobs` app.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

# The start of a workspace's first price table: it prices every job that ran before it (jobs.costs).
PRICES_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class WorkspacePolicy(models.Model):
    """Guardrails of one workspace, enforced at submit by jobs.spec (see jobs.policies.context_for).

    Empty lists and blank numbers mean "no limit".
    """

    workspace = models.OneToOneField("jobs.Workspace", on_delete=models.CASCADE, related_name="policy")
    allowed_sources = models.JSONField(default=list, blank=True, help_text="Subset of catalog.SOURCES; empty: all.")
    max_nodes = models.PositiveIntegerField("maximum nodes per job", null=True, blank=True)
    max_gpus = models.PositiveIntegerField("maximum GPUs per job", null=True, blank=True)
    max_duration_minutes = models.PositiveIntegerField("cap on maximum duration (minutes)", null=True, blank=True)
    allowed_image_prefixes = models.JSONField(default=list, blank=True)
    required_tag_keys = models.JSONField(default=list, blank=True)
    default_tags = models.JSONField(default=dict, blank=True)
    # The idle policy (jobs.idle): a running job whose every pod stays under the threshold for
    # idle_after_minutes is flagged idle, and stopped once idle for idle_stop_after_minutes. Blank: off / never.
    idle_after_minutes = models.PositiveIntegerField("flag jobs idle after (minutes)", null=True, blank=True)
    idle_threshold_percent = models.PositiveSmallIntegerField("idle under (percent)", default=5)
    idle_stop_after_minutes = models.PositiveIntegerField("stop idle jobs after (minutes)", null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Policy of {self.workspace}"


class AppendOnlyQuerySet(models.QuerySet):
    # Bulk updates and deletes would bypass the model's guards; the audit log has neither. The one update
    # allowed is Django's own SET_NULL when a referenced job or user is deleted: the names stay in the row.
    _DETACHABLE = frozenset({"job", "source", "actor"})

    def update(self, **kwargs):
        if kwargs and set(kwargs) <= self._DETACHABLE and all(v is None for v in kwargs.values()):
            return super().update(**kwargs)
        raise ValidationError("Audit events are append-only.")

    def delete(self):
        raise ValidationError("Audit events are append-only.")


class AuditEvent(models.Model):
    """Who did what, when. Append-only: the model refuses updates and deletes, the admin is read-only."""

    CREATED = "created"
    CLONED = "cloned"
    STOPPED = "stopped"
    IMPORTED = "imported"
    CHANGED = "changed"
    TEMPLATE = "template"
    TOKEN = "token"
    BUDGET = "budget"
    ACTIONS = [
        (CREATED, "Created a job"),
        (CLONED, "Cloned a job"),
        (STOPPED, "Stopped a job"),
        (IMPORTED, "Imported a job"),
        (CHANGED, "Changed settings"),
        (TEMPLATE, "Template action"),
        (TOKEN, "API token action"),
        (BUDGET, "Budget alert"),
    ]

    created_at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    # Names are kept beside the foreign keys so the record still reads right after a user or job is gone.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=16, choices=ACTIONS, db_index=True)
    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.PROTECT, related_name="audit_events")
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    job_name = models.CharField(max_length=256, blank=True)
    source = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    details = models.JSONField(default=dict, blank=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="audit_ws_created")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ValidationError("Audit events are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("Audit events are append-only.")


class ApiToken(models.Model):
    """A personal API token. Only its SHA-256 is stored; the token itself is shown once at creation.

    Its scope narrows its user's rights, never widens them: one workspace (or all of the user's), read-only or
    not, and an expiry. jobs.access applies the scope to every API request (see access.TokenScope).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # CASCADE, not SET_NULL: a token scoped to a deleted workspace must not become an all-workspaces token.
    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, null=True, blank=True,
                                  related_name="+", help_text="The one workspace the token reaches; empty: all.")
    read_only = models.BooleanField(default=False, help_text="Reads only: no create, clone or stop.")
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class ApiIdempotencyKey(models.Model):
    """An `Idempotency-Key` an API create was sent with (jobs.idempotency), per user and endpoint, kept 24 h: a
    retry with the same key is answered with what the first request created instead of creating it again.

    `status` is null while the first request runs; a create that fails leaves no row. Nothing of the request is
    kept but a hash of it (it may hold secrets)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+",
                             db_index=False)  # one_idempotency_key's index starts with the user
    endpoint = models.CharField(max_length=40)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="HMAC-SHA-256 of the request's query and body.")
    created_at = models.DateTimeField(default=timezone.now)
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The answer's; empty: in progress.")
    object_id = models.BigIntegerField(null=True, blank=True)
    location = models.CharField(max_length=2000, blank=True)

    class Meta:
        constraints = [
            # What makes one create per key hold across web processes: a second request's insert fails.
            models.UniqueConstraint(fields=["user", "endpoint", "key"], name="one_idempotency_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_key_created")]  # the 24 h prune

    def __str__(self) -> str:
        return f"{self.endpoint} key {self.key!r} of user {self.user_id}"


class JobTemplate(models.Model):
    """A named job configuration shared in a workspace; its content lives in numbered versions."""

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, related_name="job_templates")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # The version the wizard starts from when none is named; None: the latest.
    default_version = models.PositiveIntegerField(null=True, blank=True)
    # Section field paths ("resources.max_duration", "environment.image") that admins locked: a job started
    # from any version of the template must keep that version's value. On the template, not on a version,
    # so picking an older version cannot escape a lock.
    locked = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="one_template_name_per_workspace"),
                       # Names differing only in case are one name (templates_lib.save's check): held here against
                       # races.
                       models.UniqueConstraint("workspace", Lower("name"), name="one_template_name_ignoring_case")]

    def __str__(self) -> str:
        return self.name


class JobTemplateVersion(models.Model):
    """One saved state of a template: the wizard's sections with secrets removed. Never changed once saved."""

    template = models.ForeignKey(JobTemplate, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    sections = models.JSONField(default=dict)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["template", "-number"]
        constraints = [models.UniqueConstraint(fields=["template", "number"], name="one_template_version_number")]

    def __str__(self) -> str:
        return f"{self.template} v{self.number}"


class WorkspaceCost(models.Model):
    """A workspace's price table and monthly budget, set by its admins (jobs.costs reads them; nothing else does).

    instance_prices: {instance type: price per hour as decimal text}, text so no float rounds a price. A blank
    rate is "no price" (never 0): jobs needing it show no cost rather than a guessed one.
    """

    workspace = models.OneToOneField("jobs.Workspace", on_delete=models.CASCADE, related_name="costs")
    currency = models.CharField(max_length=8, default="CNY")
    instance_prices = models.JSONField(default=dict, blank=True)
    gpu_hour_price = models.DecimalField("price per GPU-hour", max_digits=14, decimal_places=4, null=True,
                                         blank=True)
    cpu_core_hour_price = models.DecimalField("price per CPU core-hour", max_digits=14, decimal_places=4, null=True,
                                              blank=True)
    monthly_budget = models.DecimalField(max_digits=16, decimal_places=2, null=True, blank=True)
    refuse_when_spent = models.BooleanField("refuse new jobs once this month's budget is spent", default=False)
    # When these prices took effect and who saved them (jobs.costs.save_prices): hours run before prices_from are
    # costed at the tables kept in PastPrices. The epoch for a workspace's first prices: no table came before them.
    prices_from = models.DateTimeField(default=PRICES_EPOCH)
    prices_set_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Prices of {self.workspace}"


class PastPrices(models.Model):
    """A price table a change replaced, kept so that the change costs only the hours after it: in force from
    effective_from until the next table's start (a later PastPrices row's, else WorkspaceCost.prices_from).
    The currency and the budget are not kept: they are the workspace's, not a rate's."""

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, related_name="past_prices")
    instance_prices = models.JSONField(default=dict, blank=True)
    gpu_hour_price = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    cpu_core_hour_price = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    effective_from = models.DateTimeField()
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+")

    class Meta:
        ordering = ["workspace", "effective_from", "pk"]

    def __str__(self) -> str:
        return f"Prices of {self.workspace} from {self.effective_from:%Y-%m-%d %H:%M}"
