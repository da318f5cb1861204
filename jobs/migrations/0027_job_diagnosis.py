"""Placeholder: filled in by the change that owns it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("jobs", "0026_job_notes")]

    operations = []
