"""Job tags as rows (jobs.tags), so the list and the API can filter by tag at any size."""

import django.db.models.deletion
from django.db import migrations, models


def fill_tags(apps, schema_editor):
    from jobs import tags

    # Historical models: the fill reads bodies and writes rows as this migration's schema has them.
    tags.fill(apps.get_model("jobs", "Job"), apps.get_model("jobs", "JobTag"))


class Migration(migrations.Migration):
    dependencies = [("jobs", "0029_cost_budgets")]

    operations = [
        migrations.CreateModel(
            name="JobTag",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=128)),
                ("value", models.CharField(blank=True, max_length=256)),
                ("job", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                          related_name="tags", to="jobs.job")),
                ("workspace", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                                related_name="+", to="jobs.workspace")),
            ],
            options={
                "indexes": [models.Index(fields=["workspace", "key", "value", "job"], name="jobtag_ws_key_value")],
                "constraints": [models.UniqueConstraint(fields=("job", "key"), name="one_jobtag_per_key")],
            },
        ),
        migrations.RunPython(fill_tags, migrations.RunPython.noop, elidable=True),
    ]
