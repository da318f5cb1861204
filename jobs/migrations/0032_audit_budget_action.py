"""The audit log's "budget" action: a month's spend crossing a threshold of the budget is not a settings change.
And a budget alert keyed by the budget amount too, so a raised (or lowered) budget is alerted again when crossed."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0031_budget_alerts")]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="action",
            field=models.CharField(
                choices=[("created", "Created a job"), ("cloned", "Cloned a job"), ("stopped", "Stopped a job"),
                         ("imported", "Imported a job"), ("changed", "Changed settings"),
                         ("template", "Template action"), ("token", "API token action"), ("budget", "Budget alert")],
                db_index=True, max_length=16),
        ),
        migrations.RemoveConstraint(model_name="budgetalert", name="one_budget_alert_per_month_and_threshold"),
        migrations.AddConstraint(
            model_name="budgetalert",
            constraint=models.UniqueConstraint(fields=("workspace", "month", "budget", "threshold"),
                                               name="one_budget_alert_per_month_budget_and_threshold"),
        ),
    ]
