"""Fingerprints of a job's secret values, so its logs can be masked without keeping the values."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0020_notification_prefs")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="secret_marks",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
