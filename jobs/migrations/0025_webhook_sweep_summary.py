"""Webhooks: one event per sweep or per trial, skipped dependents as their own end, deliveries held while their
webhook is paused, and resends of a given-up delivery under the same event id."""

import uuid

import django.db.models.deletion
from django.db import migrations, models


def keep_old_behaviour(apps, schema_editor):
    """Webhooks made before: told of skipped dependents as they were (they were Stopped ends), now as "Skipped";
    each delivery its own event id."""
    Webhook = apps.get_model("jobs", "Webhook")
    for webhook in Webhook.objects.all():
        if "Stopped" in (webhook.events or []) and "Skipped" not in webhook.events:
            webhook.events = [*webhook.events, "Skipped"]
            webhook.save(update_fields=["events"])
    WebhookDelivery = apps.get_model("jobs", "WebhookDelivery")
    for pk in WebhookDelivery.objects.filter(event_id__isnull=True).values_list("pk", flat=True).iterator():
        WebhookDelivery.objects.filter(pk=pk).update(event_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [("jobs", "0024_sweep_early_stopping")]

    operations = [
        # Existing webhooks keep an event per trial (what their receivers get now); new ones default to per sweep.
        migrations.AddField(
            model_name="webhook", name="sweeps",
            field=models.CharField("Sweeps", max_length=8, default="trial",
                                   choices=[("trial", "An event per trial"),
                                            ("sweep", "One event when the sweep ends")]),
        ),
        migrations.AlterField(
            model_name="webhook", name="sweeps",
            field=models.CharField("Sweeps", max_length=8, default="sweep",
                                   choices=[("trial", "An event per trial"),
                                            ("sweep", "One event when the sweep ends")]),
        ),
        migrations.AddField(model_name="webhookdelivery", name="event_id", field=models.UUIDField(null=True)),
        migrations.AddField(model_name="webhookdelivery", name="held_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="webhookdelivery", name="resent_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(
            model_name="webhookdelivery", name="resend_of",
            field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                       related_name="resent_as", to="jobs.webhookdelivery"),
        ),
        migrations.RunPython(keep_old_behaviour, migrations.RunPython.noop),
        migrations.AlterField(model_name="webhookdelivery", name="event_id",
                              field=models.UUIDField(default=uuid.uuid4, editable=False)),
        migrations.RemoveConstraint(model_name="webhookdelivery", name="one_delivery_per_job_end"),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.UniqueConstraint(condition=models.Q(resend_of__isnull=True),
                                               fields=("webhook", "job", "status"), name="one_delivery_per_job_end"),
        ),
    ]
