import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils import timezone

from jobs import status as st


class Workspace(models.Model):
    """A console workspace: one DLC backend (region, endpoint, DLC workspace id) and how to get credentials.

    Credentials themselves never live here: `credential_profile` names a profile of
    alibabacloud_credentials' credentials file (blank: the default chain), `role_arn` a RAM role to assume.
    """

    BACKEND_DLC = "dlc"
    BACKEND_LOCAL = "localdlc"
    BACKENDS = [(BACKEND_DLC, "PAI-DLC"), (BACKEND_LOCAL, "localdlc (local development backend)")]

    name = models.CharField(max_length=100, unique=True)
    backend = models.CharField(max_length=16, choices=BACKENDS, default=BACKEND_DLC)
    region = models.CharField(max_length=64, default="cn-hangzhou")
    endpoint = models.CharField(max_length=255, blank=True, help_text="Blank: the official regional endpoint.")
    dlc_workspace_id = models.CharField("DLC workspace ID", max_length=64, blank=True)
    credential_profile = models.CharField(
        max_length=64, blank=True, help_text="Profile in the alibabacloud_credentials file; blank: default chain."
    )
    role_arn = models.CharField("RAM role ARN to assume", max_length=255, blank=True)
    # The resource quotas jobs may use: [{"id", "name", "resource_type": "general"|"lingjun",
    # "general_computing_2_0": bool}]. DLC's API cannot list them, and several rules depend on a quota's kind.
    quotas = models.JSONField(default=list, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="workspaces")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        # Names that differ only in case are one name (the form's check, portal_forms.name_twin): the database holds
        # the rule too, so two posts at once cannot both pass the check and both save (migration 0040).
        constraints = [models.UniqueConstraint(Lower("name"), name="one_workspace_name_ignoring_case",
                                               violation_error_message="Another workspace has this name (names may "
                                                                       "not differ only in case).")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_local(self) -> bool:
        return self.backend == self.BACKEND_LOCAL


class Membership(models.Model):
    VIEWER = "viewer"
    MEMBER = "member"
    ADMIN = "admin"
    ROLES = [(VIEWER, "Viewer"), (MEMBER, "Member"), (ADMIN, "Admin")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=ROLES, default=MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="one_membership_per_workspace")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class Job(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="jobs")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs"
    )
    display_name = models.CharField(max_length=256)
    job_type = models.CharField(max_length=32, blank=True)
    # The CreateJob body exactly as sent, without secrets; `hints` keeps the console-only choices
    # (image kind, resource type, ...) that the wire body does not carry, for clone and edit.
    body = models.JSONField(default=dict)
    hints = models.JSONField(default=dict, blank=True)
    # Registry password and other secrets on their way to the worker, encrypted with a key from settings;
    # erased once CreateJob has been answered.
    sealed_secrets = models.TextField(blank=True)
    # Keyed fingerprints and lengths of those secrets' values (jobs.logmask), kept to mask them in the job's logs.
    secret_marks = models.JSONField(default=dict, blank=True)
    idempotency_tag = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)

    # No db_index: on PostgreSQL it also builds a varchar_pattern_ops "_like" index for LIKE 'prefix%', which
    # nothing here asks, and which every status change of the sync had to write. Their indexes: Meta below.
    dlc_job_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32, default=st.SUBMITTING)
    sub_status = models.CharField(max_length=64, blank=True)
    reason_code = models.CharField(max_length=128, blank=True)
    reason_message = models.TextField(blank=True)
    status_history = models.JSONField(default=list, blank=True)
    pods = models.JSONField(default=list, blank=True)
    submit_error = models.JSONField(default=dict, blank=True)
    submit_attempts = models.PositiveIntegerField(default=0)
    imported = models.BooleanField(default=False)
    cloned_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="clones"
    )
    # "Run after" (jobs.dependencies): the upstream job this one waits for, held in the console with status
    # Waiting (never sent to DLC) until the upstream ends. The FK's own index serves the dependents look-up.
    RUN_AFTER_SUCCEEDED = "succeeded"
    RUN_AFTER_ENDED = "ended"
    RUN_AFTER_CHOICES = [(RUN_AFTER_SUCCEEDED, "succeeds"), (RUN_AFTER_ENDED, "ends (any outcome)")]
    run_after = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="dependents"
    )
    run_after_when = models.CharField(max_length=16, choices=RUN_AFTER_CHOICES, default=RUN_AFTER_SUCCEEDED)

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    # Submission bookkeeping (jobs.lifecycle): when the latest CreateJob attempt began, and since when an
    # attempt is unanswered (it may still land, so nobody re-sends before it has settled).
    submit_last_attempt_at = models.DateTimeField(null=True, blank=True)
    submit_unanswered_since = models.DateTimeField(null=True, blank=True)
    # When the retry after a transient error is due (the Celery countdown is not visible anywhere else), for the
    # job page's waiting note; cleared when an attempt starts, and when DLC accepts the job or it finally fails.
    submit_next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Stop bookkeeping: asked by a user, StopJob accepted by DLC, or why DLC refused it.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stop_sent_at = models.DateTimeField(null=True, blank=True)
    stop_error = models.JSONField(default=dict, blank=True)
    # Set once the pods' logs were copied into PodLog (or found gone), so the sweep stops asking.
    logs_archived_at = models.DateTimeField(null=True, blank=True)
    # A failed job's likely cause (jobs.diagnosis), computed once from its logs: {} until then.
    diagnosis = models.JSONField(default=dict, blank=True)
    # Idle resources (jobs.idle), while the job runs in a workspace with an idle policy: since when every pod has
    # been under the threshold (null: busy, or not known to be idle), the last check, and what it measured
    # ({metric, value, threshold_percent, window_minutes, cores, text}; "stopped": the reason, once the policy
    # stopped the job).
    idle_since = models.DateTimeField(null=True, blank=True)
    idle_checked_at = models.DateTimeField(null=True, blank=True)
    idle_detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at", "-id"], name="job_ws_created"),
            # The job list's filters and sorts (jobs.listing), each ending in the page order so a filtered
            # page is an index walk, not a sort of every match. (workspace, status) alone is the prefix of
            # job_ws_status_created: a separate index only cost every status write of the sync. Name search
            # on PostgreSQL also has a trigram index (migration list_indexes); on SQLite it scans the
            # (workspace, created) index.
            models.Index(fields=["workspace", "status", "-created_at", "-id"], name="job_ws_status_created"),
            models.Index(fields=["workspace", "owner", "-created_at", "-id"], name="job_ws_owner_created"),
            models.Index(fields=["workspace", "job_type", "-created_at", "-id"], name="job_ws_type_created"),
            models.Index(fields=["workspace", "display_name", "id"], name="job_ws_name"),
            # Status across workspaces: the stuck-submit sweep (jobs.lifecycle.stuck_jobs) and an unscoped job
            # list's count of unknown statuses (jobs.listing). Lookups by dlc_job_id need no index of their own:
            # they all name the workspace and seek one_row_per_dlc_job below (SQLite uses that partial index
            # only when the query repeats its condition, which jobs.lifecycle's lookups do). EXPLAIN of both on
            # both databases: tests/test_job_indexes.py.
            models.Index(fields=["status"], name="job_status"),
            # The idle check's candidates (jobs.idle.candidates): running jobs, the least recently checked first.
            # Partial, so only running rows pay for the check's write of idle_checked_at.
            models.Index(fields=["idle_checked_at", "id"], name="job_running_idle_check",
                         condition=models.Q(status="Running")),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "dlc_job_id"],
                condition=~models.Q(dlc_job_id=""),
                name="one_row_per_dlc_job",
            )
        ]

    def __str__(self) -> str:
        return self.display_name

    def save(self, *args, **kwargs) -> None:
        adding = self._state.adding
        super().save(*args, **kwargs)
        if adding:
            # The one place every job is made (wizard, API, clone, sweeps, schedules, import, resubmit): its tag rows
            # (jobs.tags) go in with it, in the caller's transaction. No query for a job without tags.
            from jobs import tags

            tags.write(self, new=True)

    def get_absolute_url(self) -> str:
        return reverse("job_detail", args=[self.pk])

    @property
    def status_label(self) -> str:
        return st.label(self.status)

    @property
    def status_tone(self) -> str:
        return st.tone(self.status)

    @property
    def is_active(self) -> bool:
        return st.is_active(self.status)

    @property
    def is_stoppable(self) -> bool:
        return st.is_stoppable(self.status)

    @property
    def tag(self) -> str:
        """The value sent in Settings.Tags so an ambiguous CreateJob can be found again."""
        return str(self.idempotency_tag)


class WorkspaceSync(models.Model):
    """Status-sync bookkeeping per workspace: a lease so one cycle runs at a time, the import cursor, and how the
    cycles go (jobs.syncstate): the last failure, and a back-off while it is one that retrying will not fix."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="sync_state")
    lease_until = models.DateTimeField(null=True, blank=True)
    # The next import ListJobs asks for jobs created from `import_from`, page `import_page` (oldest first).
    import_from = models.DateTimeField(null=True, blank=True)
    import_page = models.PositiveIntegerField(default=1)
    cycles = models.PositiveBigIntegerField(default=0)
    last_cycle_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)  # the failing cycle's full error, redacted: for admins and logs
    last_reason = models.CharField(max_length=255, blank=True)  # its short account (jobs.dlc.reason)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)  # null while cycles succeed
    failures = models.PositiveIntegerField(default=0)  # consecutive failed cycles
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # backing off: no cycle before this

    def __str__(self) -> str:
        return f"sync of {self.workspace_id}"

    @property
    def failing(self) -> bool:
        return self.failing_since is not None


class PodLog(models.Model):
    """A pod's log archived by the console when the job ends, so it outlives DLC's retention."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="archived_logs")
    pod_id = models.CharField(max_length=128)
    role = models.CharField(max_length=64, blank=True)
    content = models.BinaryField()  # zlib-compressed UTF-8
    lines = models.PositiveIntegerField(default=0)
    archived_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "pod_id"], name="one_archive_per_pod")]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.pod_id}"


# The team portal's models (policies, audit log, API tokens, job templates) and the webhooks of job
# notifications (jobs.notify) live in their own modules.
from jobs.notify_models import BudgetAlert, Webhook, WebhookDelivery  # noqa: E402,F401
from jobs.portal_models import (  # noqa: E402,F401
    ApiIdempotencyKey,
    ApiToken,
    AuditEvent,
    JobTemplate,
    JobTemplateVersion,
    PastPrices,
    WorkspaceCost,
    WorkspacePolicy,
)
from jobs.scalar_models import JobScalar  # noqa: E402,F401
from jobs.schedule_models import Schedule, ScheduledRun  # noqa: E402,F401
from jobs.sweep_models import Sweep, SweepTrial  # noqa: E402,F401


class JobNote(models.Model):
    """A comment on a job ("diverged: LR too high"), console-side only: never sent to DLC, never cloned or exported.
    The rules (who writes, edits, deletes; the text's limits) are in jobs.notes and jobs.access."""

    # No index of its own: job_note_order below starts with the job, and serves the job page's thread and the job
    # list's count per row (jobs.listing) alike.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="notes", db_index=False)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["job", "created_at", "id"], name="job_note_order")]

    def __str__(self) -> str:
        return f"note {self.pk} on job {self.job_id}"


class JobTag(models.Model):
    """One user tag of a job (its body's Settings.Tags, never the console's idempotency tag) as a row, so the job
    list filters by tag on an index instead of reading every job's JSON. Written by jobs.tags wherever a job's body
    is set; `workspace` and `created_at` are the job's, copied so the index can start with the one and read the
    tagged jobs in the list's order by the other (a job's creation time never changes)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tags", db_index=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=128)
    value = models.CharField(max_length=256, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            # "The jobs of this workspace with key=value" (or key alone: a prefix) as an index range of job ids: the
            # list counts them, and joins them when they are few (jobs.listing.filter_tags).
            models.Index(fields=["workspace", "key", "value", "job"], name="jobtag_ws_key_value"),
            # The same range newest first, as the job list: a page of a common key=value tag is read from it in the
            # list's order (jobs.listing.TagWalk). Not instead of the other: SQLite, which plans without
            # statistics, joins a rare tag's jobs through the other one only (the plan test in tests/test_tags.py).
            models.Index(fields=["workspace", "key", "value", "-created_at", "-job"], name="jobtag_ws_kv_created"),
        ]
        constraints = [
            # A job's tags are a map: one value per key. Its index, starting with the job, serves the list's check of
            # a common tag row by row, the deletes that rewrite a job's tags and the cascade from Job.
            models.UniqueConstraint(fields=["job", "key"], name="one_jobtag_per_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key}={self.value} on job {self.job_id}"
