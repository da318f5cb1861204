"""A webhook that keeps failing is paused."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0021_job_secret_marks")]

    operations = [
        migrations.AddField(
            model_name="webhook",
            name="failures_in_a_row",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="webhook",
            name="paused_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="webhook",
            name="paused_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
