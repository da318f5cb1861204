"""A deleted schedule's runs are kept, so their jobs still say what started them."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def name_the_runs(apps, schema_editor):
    """Existing runs take their schedule's name (one UPDATE, however many runs)."""
    Schedule = apps.get_model("jobs", "Schedule")
    ScheduledRun = apps.get_model("jobs", "ScheduledRun")
    name = Schedule.objects.filter(pk=OuterRef("schedule_id")).values("name")[:1]
    ScheduledRun.objects.filter(schedule__isnull=False).update(schedule_name=Subquery(name))


def drop_orphan_runs(apps, schema_editor):
    """Going back: the schedule is required again, so runs of deleted schedules cannot stay."""
    apps.get_model("jobs", "ScheduledRun").objects.filter(schedule__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("jobs", "0018_job_run_after")]

    operations = [
        migrations.AddField(
            model_name="scheduledrun",
            name="schedule_name",
            field=models.CharField(blank=True, help_text="The schedule's name when it ran.", max_length=100),
        ),
        migrations.RunPython(name_the_runs, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="scheduledrun",
            name="schedule",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="runs", to="jobs.schedule"),
        ),
        migrations.RunPython(migrations.RunPython.noop, drop_orphan_runs),
    ]
