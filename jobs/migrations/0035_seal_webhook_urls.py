"""A webhook's URL is a secret (chat receivers put their credential in its path or query): the plain `url` column
gives way to `sealed_url` (jobs.secretbox) and what pages and the audit log show, `url_host` and `url_digest`.

Every row's URL is sealed by jobs.notify_models.url_fields, the function Webhook.set_url calls, instead of a frozen
copy: it only takes and returns strings (never a model class, so the historical model below is what is written),
and what is wanted is exactly what today's code would store. If that function is ever removed, this migration can
become a copy of it (a fresh database has no rows). The secret box key must be the console's (DLC_SECRET_BOX_KEY,
or the data dir's file): a URL sealed under another key does not open, and each of its POSTs would fail "the URL
cannot be unsealed" until an admin types the URL again.

Reversible: backwards, each URL is unsealed into the plain column again; a sealed URL that does not open (another
key) stops it before anything is written, since an empty URL would lose the webhook's destination unseen. Webhooks
are a few per workspace: one transaction does them all. Run it with the workers stopped, as every migration.
"""

from django.db import migrations, models


def seal(apps, schema_editor):
    from jobs.notify_models import url_fields

    Webhook = apps.get_model("jobs", "Webhook")
    webhooks = list(Webhook.objects.only("url"))
    for webhook in webhooks:
        for name, value in url_fields(webhook.url).items():
            setattr(webhook, name, value)
    Webhook.objects.bulk_update(webhooks, ["sealed_url", "url_host", "url_digest"])


def unseal(apps, schema_editor):
    from jobs.notify_models import unsealed_url

    Webhook = apps.get_model("jobs", "Webhook")
    webhooks = list(Webhook.objects.only("sealed_url"))
    for webhook in webhooks:
        webhook.url = unsealed_url(webhook.sealed_url)
        if not webhook.url:
            raise RuntimeError(f"The URL of webhook {webhook.pk} does not unseal: is DLC_SECRET_BOX_KEY the console's?")
    Webhook.objects.bulk_update(webhooks, ["url"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0034_reseal_secret_named_values"),
    ]

    operations = [
        migrations.AddField(model_name="webhook", name="sealed_url", field=models.TextField(default=""),
                            preserve_default=False),
        migrations.AddField(model_name="webhook", name="url_host",
                            field=models.CharField(default="", max_length=300, verbose_name="URL host"),
                            preserve_default=False),
        migrations.AddField(model_name="webhook", name="url_digest",
                            field=models.CharField(default="", max_length=12, verbose_name="URL fingerprint"),
                            preserve_default=False),
        migrations.RunPython(seal, unseal),
        # blank only so that, backwards, the column comes back filled with "" (not NULL, refused) for unseal to fill:
        # no change to the database either way.
        migrations.AlterField(model_name="webhook", name="url",
                              field=models.CharField(blank=True, max_length=2000, verbose_name="URL")),
        migrations.RemoveField(model_name="webhook", name="url"),
    ]
