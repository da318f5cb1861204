"""Per-user email notifications when their jobs end (jobs.notify_email)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0019_schedule_runs_kept"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="NotificationPrefs",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("email_on_failure", models.BooleanField(default=False, verbose_name="Email me when my job fails")),
                ("email_on_success", models.BooleanField(default=False, verbose_name="Email me when my job succeeds")),
                ("email_on_stop", models.BooleanField(default=False, verbose_name="Email me when my job is stopped")),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="notification_prefs", to=settings.AUTH_USER_MODEL)),
            ],
            options={"verbose_name_plural": "notification prefs"},
        ),
        migrations.CreateModel(
            name="EmailDelivery",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("status", models.CharField(max_length=32)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.CharField(blank=True, max_length=300)),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("sent_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                          to="jobs.job")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                           to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "indexes": [models.Index(fields=["next_attempt_at"], name="email_next_attempt")],
                "constraints": [models.UniqueConstraint(fields=("job", "user"), name="one_email_per_job_and_user")],
            },
        ),
    ]
