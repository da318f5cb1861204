"""Budget alerts: one record per workspace, month and threshold crossed (jobs.budget_alerts)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0030_job_tags")]

    operations = [
        migrations.AddField(
            model_name="notificationprefs",
            name="email_on_budget",
            field=models.BooleanField(
                default=False,
                verbose_name="Email me when a workspace I administer crosses 80% or 100% of its monthly budget"),
        ),
        migrations.CreateModel(
            name="BudgetAlert",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("month", models.CharField(max_length=7)),
                ("threshold", models.PositiveSmallIntegerField()),
                ("spent", models.DecimalField(decimal_places=4, max_digits=20)),
                ("budget", models.DecimalField(decimal_places=4, max_digits=20)),
                ("currency", models.CharField(max_length=8)),
                ("notified", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("workspace", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                related_name="budget_alerts", to="jobs.workspace")),
            ],
            options={"ordering": ["month", "threshold"]},
        ),
        migrations.AddConstraint(
            model_name="budgetalert",
            constraint=models.UniqueConstraint(fields=("workspace", "month", "threshold"),
                                               name="one_budget_alert_per_month_and_threshold"),
        ),
        # A budget alert's mail rides on the job mails' delivery rows (jobs.notify_email): job or alert, one each.
        migrations.AlterField(
            model_name="emaildelivery",
            name="job",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="+", to="jobs.job"),
        ),
        migrations.AddField(
            model_name="emaildelivery",
            name="budget_alert",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="emails", to="jobs.budgetalert"),
        ),
        migrations.AddConstraint(
            model_name="emaildelivery",
            constraint=models.UniqueConstraint(condition=models.Q(("budget_alert__isnull", False)),
                                               fields=("budget_alert", "user"),
                                               name="one_email_per_budget_alert_and_user"),
        ),
        migrations.AddConstraint(
            model_name="emaildelivery",
            constraint=models.CheckConstraint(
                condition=models.Q(models.Q(("budget_alert__isnull", True), ("job__isnull", False)),
                                   models.Q(("budget_alert__isnull", False), ("job__isnull", True)), _connector="OR"),
                name="email_of_a_job_or_a_budget_alert"),
        ),
        # A budget alert's webhook event rides on the job events' delivery rows (jobs.notify): job or alert, one each;
        # each alert once per webhook, as each job end is (resends aside).
        migrations.AlterField(
            model_name="webhookdelivery",
            name="job",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="+", to="jobs.job"),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="budget_alert",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="webhook_deliveries", to="jobs.budgetalert"),
        ),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.UniqueConstraint(
                condition=models.Q(("budget_alert__isnull", False), ("resend_of__isnull", True)),
                fields=("webhook", "budget_alert"), name="one_delivery_per_budget_alert"),
        ),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.CheckConstraint(
                condition=models.Q(models.Q(("budget_alert__isnull", True), ("job__isnull", False)),
                                   models.Q(("budget_alert__isnull", False), ("job__isnull", True)), _connector="OR"),
                name="delivery_of_a_job_or_a_budget_alert"),
        ),
    ]
