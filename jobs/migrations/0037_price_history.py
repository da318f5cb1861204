"""Prices kept by date (jobs.costs): a change applies from when it is saved, the table it replaces is kept in
PastPrices, and each hour a job ran is costed at the table in force then.

The prices stored today become the first table, in force from the epoch (`prices_from`'s default for every
existing row), so no job's cost changes. Reversible: backwards, the kept tables are dropped and the current prices
price every hour again, as before this migration.
"""

import datetime

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0035_seal_webhook_urls"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="workspacecost",
            name="prices_from",
            field=models.DateTimeField(default=datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.UTC)),
        ),
        migrations.AddField(
            model_name="workspacecost",
            name="prices_set_by",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="+", to=settings.AUTH_USER_MODEL),
        ),
        migrations.CreateModel(
            name="PastPrices",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("instance_prices", models.JSONField(blank=True, default=dict)),
                ("gpu_hour_price", models.DecimalField(blank=True, decimal_places=4, max_digits=14, null=True)),
                ("cpu_core_hour_price", models.DecimalField(blank=True, decimal_places=4, max_digits=14, null=True)),
                ("effective_from", models.DateTimeField()),
                ("set_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                             related_name="+", to=settings.AUTH_USER_MODEL)),
                ("workspace", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                related_name="past_prices", to="jobs.workspace")),
            ],
            options={"ordering": ["workspace", "effective_from", "pk"]},
        ),
    ]
