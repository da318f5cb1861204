import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0032_audit_budget_action"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiIdempotencyKey",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("endpoint", models.CharField(max_length=40)),
                ("key", models.CharField(max_length=255)),
                ("fingerprint", models.CharField(help_text="HMAC-SHA-256 of the request's query and body.",
                                                 max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("status", models.PositiveSmallIntegerField(blank=True, help_text="The answer's; empty: in progress.",
                                                            null=True)),
                ("object_id", models.BigIntegerField(blank=True, null=True)),
                ("location", models.CharField(blank=True, max_length=2000)),
                ("user", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                           related_name="+", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "indexes": [models.Index(fields=["created_at"], name="idempotency_key_created")],
                "constraints": [models.UniqueConstraint(fields=("user", "endpoint", "key"),
                                                        name="one_idempotency_key")],
            },
        ),
    ]
