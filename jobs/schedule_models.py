"""Models of scheduled (recurring) jobs: a Schedule and one ScheduledRun per due slot (jobs.schedules runs them).

Imported at the bottom of jobs/models.py so Django registers them in the `jobs` app.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone


class Schedule(models.Model):
    """A CreateJob body that a beat task (jobs.tasks.run_schedules) turns into a job at every slot of a recurrence.

    The body is kept without secrets (spec.strip_secrets); the secrets are sealed (jobs.secretbox) and never shown.
    """

    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    CRON = "cron"
    KINDS = [(HOURLY, "Every N hours"), (DAILY, "Daily"), (WEEKLY, "Weekly"), (CRON, "Cron expression")]

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.CASCADE, related_name="schedules")
    # SET_NULL: the schedule and its history stay for the admins; its runs are skipped with the reason.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                              related_name="job_schedules")
    name = models.CharField(max_length=100)
    body = models.JSONField(help_text="CreateJob body without secrets.")
    hints = models.JSONField(default=dict, blank=True)
    sealed_secrets = models.TextField(blank=True)
    kind = models.CharField(max_length=8, choices=KINDS)
    every_hours = models.PositiveSmallIntegerField(null=True, blank=True)
    at = models.TimeField(null=True, blank=True, help_text="Wall-clock time in the console's zone (daily, weekly).")
    weekdays = models.JSONField(default=list, blank=True, help_text="0 = Monday ... 6 = Sunday (weekly).")
    cron = models.CharField(max_length=100, blank=True,
                            help_text="minute hour day-of-month month day-of-week, in the console's zone (cron).")
    # Slots of "every N hours" are anchor + k x N hours: elapsed time, so they do not move with DST.
    anchor = models.DateTimeField(default=timezone.now)
    skip_if_active = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    source_job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="one_schedule_name_per_workspace"),
                       # Names differing only in case are one name (schedules._name_errors): held here against races.
                       models.UniqueConstraint("workspace", Lower("name"), name="one_schedule_name_ignoring_case")]
        indexes = [models.Index(fields=["enabled", "next_run_at"], name="schedule_due")]

    def __str__(self) -> str:
        return self.name

    @property
    def recurrence(self):
        from jobs.schedules import Recurrence

        return Recurrence(self.kind, every_hours=self.every_hours, at=self.at, weekdays=tuple(self.weekdays or ()),
                          anchor=self.anchor, cron=self.cron)


class ScheduledRun(models.Model):
    """One due slot of a schedule: the job it started, or why it was skipped.

    Unique per (schedule, due_at): a second beat, or a retried task, that reaches the same slot fails to insert
    it and starts nothing, so each slot starts at most one job. Runs are only ever created with their schedule
    (jobs.schedules.run_one); the schedule is NULL only once it was deleted, and NULLs never collide.
    """

    # SET_NULL: a deleted schedule's runs stay, so the jobs it started still say so (with schedule_name).
    schedule = models.ForeignKey(Schedule, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs")
    schedule_name = models.CharField(max_length=100, blank=True, help_text="The schedule's name when it ran.")
    due_at = models.DateTimeField()
    job = models.OneToOneField("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="scheduled_run")
    skipped_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-due_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["schedule", "due_at"], name="one_run_per_schedule_slot")]

    def __str__(self) -> str:
        return f"{self.schedule_id}@{self.due_at:%Y-%m-%d %H:%M}"
