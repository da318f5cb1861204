from django.db import migrations, models


class Migration(migrations.Migration):
    """A nullable column with no default: SQLite adds it with ALTER TABLE, without rebuilding the jobs table."""

    dependencies = [
        ("jobs", "0011_workspacesync_health"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="submit_next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
