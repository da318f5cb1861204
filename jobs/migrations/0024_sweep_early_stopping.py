"""Median early stopping of a sweep's trials (jobs.early_stop): the sweep's settings, each trial's last check and
why it was stopped."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0023_schedule_cron")]

    operations = [
        migrations.AddField(model_name="sweep", name="early_stop_metric",
                            field=models.CharField(blank=True, default="", max_length=64)),
        migrations.AddField(model_name="sweep", name="early_stop_goal",
                            field=models.CharField(blank=True, default="", max_length=3)),
        migrations.AddField(model_name="sweep", name="early_stop_after", field=models.PositiveIntegerField(default=3)),
        migrations.AddField(model_name="sweep", name="early_stop_step",
                            field=models.PositiveBigIntegerField(default=0)),
        migrations.AddField(model_name="sweeptrial", name="early_checked_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="sweeptrial", name="stopped_early_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="sweeptrial", name="stop_reason",
                            field=models.CharField(blank=True, default="", max_length=300)),
    ]
