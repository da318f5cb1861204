"""Model of a job's training metrics parsed from its log (jobs.scalars): one row per metric name.

Imported at the bottom of jobs/models.py so Django registers them in the `jobs` app. A row per (job, name), not
columns on Job: the jobs table (large in production) stays as it is, and jobs without metrics cost nothing.
"""

from __future__ import annotations

from django.db import models


class JobScalar(models.Model):
    """One metric of a job as its chosen pod printed it: the curve (downsampled) and its summary.

    `points` is [[step, value], ...] by step, at most jobs.scalars.MAX_POINTS of them; the summary is of every
    point, not only those kept.
    """

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="scalars")
    pod_id = models.CharField(max_length=256)
    name = models.CharField(max_length=64)
    points = models.JSONField(default=list)
    last = models.FloatField()
    min = models.FloatField()
    max = models.FloatField()
    count = models.PositiveIntegerField()
    last_step = models.BigIntegerField()

    class Meta:
        ordering = ["job_id", "name"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="one_scalar_name_per_job")]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.name}"
