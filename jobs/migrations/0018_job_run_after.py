"""Job dependencies: a job that starts after another one ends (jobs.dependencies)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0017_schedules")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="run_after",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="dependents", to="jobs.job"),
        ),
        migrations.AddField(
            model_name="job",
            name="run_after_when",
            field=models.CharField(choices=[("succeeded", "succeeds"), ("ended", "ends (any outcome)")],
                                   default="succeeded", max_length=16),
        ),
    ]
