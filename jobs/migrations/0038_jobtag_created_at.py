"""A job's creation time copied into its tag rows, indexed after the tag: the job list reads a common tag's page
from the tag index in its own order (newest first), instead of checking jobs along the job index or joining every
tagged job and sorting them (jobs.listing.TagWalk)."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_created_at(apps, schema_editor):
    job, tag = apps.get_model("jobs", "Job"), apps.get_model("jobs", "JobTag")
    # One UPDATE with a correlated subquery: both databases run it on the job's primary key, row by row.
    tag.objects.update(created_at=Subquery(job.objects.filter(pk=OuterRef("job_id")).values("created_at")[:1]))


class Migration(migrations.Migration):
    dependencies = [("jobs", "0037_price_history")]

    operations = [
        migrations.AddField(model_name="jobtag", name="created_at", field=models.DateTimeField(null=True)),
        migrations.RunPython(copy_created_at, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(model_name="jobtag", name="created_at", field=models.DateTimeField()),
        migrations.AddIndex(
            model_name="jobtag",
            index=models.Index(fields=["workspace", "key", "value", "-created_at", "-job"],
                               name="jobtag_ws_kv_created"),
        ),
    ]
