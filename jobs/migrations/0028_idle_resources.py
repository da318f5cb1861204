"""Idle resources: the workspace's idle policy and each running job's idle state (jobs.idle)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0027_job_diagnosis")]

    operations = [
        migrations.AddField(
            model_name="job", name="idle_since", field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job", name="idle_checked_at", field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job", name="idle_detail", field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(condition=models.Q(status="Running"), fields=["idle_checked_at", "id"],
                               name="job_running_idle_check"),
        ),
        migrations.AddField(
            model_name="workspacepolicy", name="idle_after_minutes",
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name="flag jobs idle after (minutes)"),
        ),
        migrations.AddField(
            model_name="workspacepolicy", name="idle_threshold_percent",
            field=models.PositiveSmallIntegerField(default=5, verbose_name="idle under (percent)"),
        ),
        migrations.AddField(
            model_name="workspacepolicy", name="idle_stop_after_minutes",
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name="stop idle jobs after (minutes)"),
        ),
        migrations.AddField(
            model_name="notificationprefs", name="email_on_idle",
            field=models.BooleanField(default=False, verbose_name="Email me when my running job is idle"),
        ),
        migrations.RemoveConstraint(model_name="emaildelivery", name="one_email_per_job_and_user"),
        migrations.AddConstraint(
            model_name="emaildelivery",
            constraint=models.UniqueConstraint(condition=models.Q(("status__startswith", "Idle"), _negated=True),
                                               fields=("job", "user"), name="one_email_per_job_and_user"),
        ),
        migrations.AddConstraint(
            model_name="emaildelivery",
            constraint=models.UniqueConstraint(condition=models.Q(("status__startswith", "Idle")),
                                               fields=("job", "user", "status"), name="one_email_per_idle_spell"),
        ),
    ]
