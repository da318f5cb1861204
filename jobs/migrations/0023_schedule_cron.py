"""Schedules by cron expression (jobs.schedules)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0022_webhook_pause")]

    operations = [
        migrations.AddField(
            model_name="schedule",
            name="cron",
            field=models.CharField(
                blank=True, max_length=100,
                help_text="minute hour day-of-month month day-of-week, in the console's zone (cron)."),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="kind",
            field=models.CharField(choices=[("hourly", "Every N hours"), ("daily", "Daily"), ("weekly", "Weekly"),
                                            ("cron", "Cron expression")], max_length=8),
        ),
    ]
