"""Rows saved before one rule (spec.looks_like_secret) decided what is sealed may hold values that only the wider
rule calls secrets (HFTOKEN, DB_PASS, SSH_KEY...) in plain text: jobs.reseal takes them out (see its docstring
for what each model keeps).

It calls the code's rule and helpers instead of a frozen copy, which is safe here because they only read and
return plain dicts and strings (never a model class, so the historical models below are what is written), and
what is wanted is exactly what today's code would store for the row: a copy would be a second rule, the thing
336117b removed. A fresh database has no rows, so if those helpers are ever removed this migration can become a
no-op. The secret box key must be the console's (DLC_SECRET_BOX_KEY, or the data dir's file): a row whose sealed
secrets do not open stops the migration before anything of it is written (jobs.reseal.KeyMismatch).

Not atomic: each batch of BATCH rows, read in primary-key order (keyset, so it runs on millions of jobs and
SQLite is never written while a cursor is open on the table), is committed on its own; a rerun after a failure
skips what is done, since a row without plain secret-named values is left alone. Run it with the workers
stopped, as every migration: a job being submitted meanwhile could be sent from the body read before.
"""

from django.db import migrations, transaction

BATCH = 1000


def _rows(model, fields):
    last = 0
    while True:
        batch = list(model.objects.filter(pk__gt=last).order_by("pk").only(*fields)[:BATCH])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def reseal(apps, schema_editor):
    from jobs import reseal as r

    Job = apps.get_model("jobs", "Job")
    for batch in _rows(Job, ["body", "sealed_secrets", "secret_marks", "status", "dlc_job_id"]):
        changed = []
        for job in batch:
            new = r.job_row(job.body, job.sealed_secrets, job.secret_marks, status=job.status,
                            dlc_job_id=job.dlc_job_id, what=f"job {job.pk}")
            if new is not None:
                job.body, job.sealed_secrets, job.secret_marks = new
                changed.append(job)
        with transaction.atomic():
            Job.objects.bulk_update(changed, ["body", "sealed_secrets", "secret_marks"])

    Schedule = apps.get_model("jobs", "Schedule")
    for batch in _rows(Schedule, ["body", "sealed_secrets"]):
        changed = []
        for schedule in batch:
            new = r.schedule_row(schedule.body, schedule.sealed_secrets, what=f"schedule {schedule.pk}")
            if new is not None:
                schedule.body, schedule.sealed_secrets = new
                changed.append(schedule)
        with transaction.atomic():
            Schedule.objects.bulk_update(changed, ["body", "sealed_secrets"])

    Version = apps.get_model("jobs", "JobTemplateVersion")
    for batch in _rows(Version, ["sections"]):
        changed = []
        for version in batch:
            sections = r.template_sections(version.sections)
            if sections is not None:
                version.sections = sections
                changed.append(version)
        with transaction.atomic():
            Version.objects.bulk_update(changed, ["sections"])

    Sweep = apps.get_model("jobs", "Sweep")
    for batch in _rows(Sweep, ["parameters", "specs"]):
        changed = []
        for sweep in batch:
            new = r.sweep_row(sweep.parameters, sweep.specs)
            if new is not None:
                sweep.parameters, sweep.specs = new
                changed.append(sweep)
        with transaction.atomic():
            Sweep.objects.bulk_update(changed, ["parameters", "specs"])

    Trial = apps.get_model("jobs", "SweepTrial")
    for batch in _rows(Trial, ["values"]):
        changed = []
        for trial in batch:
            values = r.trial_values(trial.values)
            if values is not None:
                trial.values = values
                changed.append(trial)
        with transaction.atomic():
            Trial.objects.bulk_update(changed, ["values"])


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("jobs", "0033_api_idempotency_keys"),
    ]

    operations = [
        # The reverse cannot put plain values back (the ended jobs' are gone) and must not: it does nothing.
        migrations.RunPython(reseal, migrations.RunPython.noop),
    ]
