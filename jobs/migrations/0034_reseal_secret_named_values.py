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


def _rewrite(model, read, written, new_values):
    """Every row of `model` (only the `read` fields loaded) whose new_values(row) is not None gets those values in
    its `written` fields, a batch a transaction."""
    for batch in _rows(model, read):
        changed = []
        for row in batch:
            values = new_values(row)
            if values is not None:
                for name, value in zip(written, values, strict=True):
                    setattr(row, name, value)
                changed.append(row)
        with transaction.atomic():
            model.objects.bulk_update(changed, written)


def reseal(apps, schema_editor):
    from jobs import reseal as r

    job_fields = ["body", "sealed_secrets", "secret_marks"]
    _rewrite(apps.get_model("jobs", "Job"), [*job_fields, "status", "dlc_job_id"], job_fields,
             lambda job: r.job_row(job.body, job.sealed_secrets, job.secret_marks, status=job.status,
                                   dlc_job_id=job.dlc_job_id, what=f"job {job.pk}"))
    _rewrite(apps.get_model("jobs", "Schedule"), ["body", "sealed_secrets"], ["body", "sealed_secrets"],
             lambda schedule: r.schedule_row(schedule.body, schedule.sealed_secrets, what=f"schedule {schedule.pk}"))
    _rewrite(apps.get_model("jobs", "JobTemplateVersion"), ["sections"], ["sections"],
             lambda version: _one(r.template_sections(version.sections)))
    _rewrite(apps.get_model("jobs", "Sweep"), ["parameters", "specs"], ["parameters", "specs"],
             lambda sweep: r.sweep_row(sweep.parameters, sweep.specs))
    _rewrite(apps.get_model("jobs", "SweepTrial"), ["values"], ["values"],
             lambda trial: _one(r.trial_values(trial.values)))


def _one(value):
    return None if value is None else (value,)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("jobs", "0033_api_idempotency_keys"),
    ]

    operations = [
        # The reverse cannot put plain values back (the ended jobs' are gone) and must not: it does nothing.
        migrations.RunPython(reseal, migrations.RunPython.noop),
    ]
