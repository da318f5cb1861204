"""Cost: the workspace's price table and monthly budget (jobs.costs)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0028_idle_resources")]

    operations = [
        migrations.CreateModel(
            name="WorkspaceCost",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("currency", models.CharField(default="CNY", max_length=8)),
                ("instance_prices", models.JSONField(blank=True, default=dict)),
                ("gpu_hour_price", models.DecimalField(blank=True, decimal_places=4, max_digits=14, null=True,
                                                       verbose_name="price per GPU-hour")),
                ("cpu_core_hour_price", models.DecimalField(blank=True, decimal_places=4, max_digits=14, null=True,
                                                            verbose_name="price per CPU core-hour")),
                ("monthly_budget", models.DecimalField(blank=True, decimal_places=2, max_digits=16, null=True)),
                ("refuse_when_spent", models.BooleanField(
                    default=False, verbose_name="refuse new jobs once this month's budget is spent")),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("workspace", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="costs",
                                                   to="jobs.workspace")),
            ],
        ),
    ]
