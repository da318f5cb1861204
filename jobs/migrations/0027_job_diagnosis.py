"""A failed job's likely cause (jobs.diagnosis), stored once computed from its logs."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0026_job_notes")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="diagnosis",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
