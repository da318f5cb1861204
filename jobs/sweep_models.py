"""Models of hyperparameter sweeps: a grid of trial jobs launched together from the wizard (jobs.sweeps).

Imported at the bottom of jobs/models.py so Django registers them in the `jobs` app. A trial is a link row to
its Job, so the jobs table (large in production) gets no column for sweeps.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone


class Sweep(models.Model):
    """The trials of one job: a grid or a random search (jobs.sweeps). `parameters` is [[name, [values]]] in the
    order typed (a random search's distribution has no values); `specs` is [[name, spec as typed]] ("0.01, 0.1",
    "loguniform(1e-5, 1e-1)"), and with `trials_asked` and `seed` reproduces a random search."""

    METHODS = [("grid", "Grid"), ("random", "Random search")]

    workspace = models.ForeignKey("jobs.Workspace", on_delete=models.PROTECT, related_name="sweeps")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="sweeps")
    name = models.CharField(max_length=256)
    parameters = models.JSONField(default=list)
    method = models.CharField(max_length=16, choices=METHODS, default="grid")
    specs = models.JSONField(default=list)
    trials_asked = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Median early stopping (jobs.early_stop), off while the metric is blank.
    early_stop_metric = models.CharField(max_length=64, blank=True, default="")
    early_stop_goal = models.CharField(max_length=3, blank=True, default="")
    early_stop_after = models.PositiveIntegerField(default=3)
    early_stop_step = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="sweep_ws_created")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("sweep_detail", args=[self.pk])

    @property
    def names(self) -> list[str]:
        return [str(p[0]) for p in self.parameters if isinstance(p, list | tuple) and p]

    @property
    def is_random(self) -> bool:
        return self.method == "random"

    @property
    def spec_lines(self) -> list[tuple[str, str]]:
        """(name, spec) of each parameter; a sweep saved before specs were stored shows its grid's values."""
        if self.specs:
            return [(str(p[0]), str(p[1])) for p in self.specs if isinstance(p, list | tuple) and len(p) == 2]
        return [(str(p[0]), ", ".join(str(v) for v in p[1])) for p in self.parameters
                if isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[1], list)]

    @property
    def early_stopping(self) -> bool:
        return bool(self.early_stop_metric)


class SweepTrial(models.Model):
    """One trial of a sweep: its job and the parameter values it runs with ({name: value})."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="trials")
    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, related_name="sweep_trial")
    number = models.PositiveIntegerField()
    values = models.JSONField(default=dict)
    # Median early stopping: when the rule last read this trial's metrics (the oldest are read first), and when
    # and why it stopped the trial ("Stopped early: best loss 0.52 at step 300, behind the median ...").
    early_checked_at = models.DateTimeField(null=True, blank=True)
    stopped_early_at = models.DateTimeField(null=True, blank=True)
    stop_reason = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["sweep", "number"]
        constraints = [models.UniqueConstraint(fields=["sweep", "number"], name="one_trial_number_per_sweep")]

    def __str__(self) -> str:
        return f"{self.sweep_id}/{self.number}"

    @property
    def stopped_early(self) -> str:
        """Why early stopping stopped it, "" if it did not or it ended on its own (jobs.early_stop.reason_of)."""
        from jobs import early_stop

        return early_stop.reason_of(self)

    @property
    def values_text(self) -> str:
        """`LR=0.01, BS=32` in the sweep's parameter order (PostgreSQL's jsonb does not keep the keys' order)."""
        values = self.values or {}
        names = [n for n in self.sweep.names if n in values] + [k for k in values if k not in self.sweep.names]
        return ", ".join(f"{k}={values[k]}" for k in names)
