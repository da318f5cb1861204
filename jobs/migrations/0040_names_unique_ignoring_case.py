"""Names that differ only in case are one name for workspaces, and per workspace for templates, schedules and
webhooks: the forms and the API checked that, but two posts at once (`Team` and `team`) could both pass the check
and both save. Each name is now unique ignoring case in the database too (UniqueConstraint on Lower(name)).

Case twins saved before (by such a race, or before the checks existed) would make adding the constraint fail, so
they are renamed first: the oldest row of each group keeps its name, each later one gets " (2)", " (3)"... (a
schedule "-2", "-3"...: its name starts its jobs' names; the first such name free ignoring case, shortened to fit
100 characters). Folding is the database's own lower(), the one the constraint uses: PostgreSQL folds every
letter, SQLite ASCII letters only (the forms also refuse twins that only Python's casefold makes, e.g. 'É' and 'é'
on SQLite)."""

from django.db import migrations, models
from django.db.models import Value
from django.db.models.functions import Lower

NAME_MAX = 100

# (model, the fields a name is unique within, the suffix a later twin gets). A schedule's name starts its jobs'
# names, which take only ASCII letters, digits, '_', '.' and '-' (schedules.name_problem): `nightly-2`.
SCOPES = [("Workspace", (), " ({})"), ("JobTemplate", ("workspace_id",), " ({})"),
          ("Schedule", ("workspace_id",), "-{}"), ("Webhook", ("workspace_id",), " ({})")]


def _free_name(rows, name: str, scope: dict, suffixed: str) -> str:
    """`name (n)` (as `suffixed` says) for the smallest n from 2 that no row of the scope has, ignoring case as the
    database does."""
    number = 2
    while True:
        suffix = suffixed.format(number)
        candidate = name[:NAME_MAX - len(suffix)] + suffix
        if not rows.filter(**scope).annotate(folded=Lower("name")).filter(folded=Lower(Value(candidate))).exists():
            return candidate
        number += 1


def rename_case_twins(apps, schema_editor):
    for model_name, scope_fields, suffixed in SCOPES:
        rows = apps.get_model("jobs", model_name)._default_manager
        seen: set[tuple] = set()
        # Oldest first: the first row of a (scope, folded name) keeps its name.
        for pk, name, *scope in (rows.annotate(folded=Lower("name")).order_by("pk")
                                 .values_list("pk", "name", *scope_fields, "folded")):
            folded = scope.pop()
            key = (*scope, folded)
            if key not in seen:
                seen.add(key)
                continue
            new = _free_name(rows, name, dict(zip(scope_fields, scope, strict=True)), suffixed)
            rows.filter(pk=pk).update(name=new)
            # A later row named so already (`team (2)`) is a twin of this one now.
            seen.add((*scope, rows.filter(pk=pk).annotate(folded=Lower("name")).values_list("folded", flat=True)
                      .get()))


class Migration(migrations.Migration):
    dependencies = [("jobs", "0038_jobtag_created_at")]

    operations = [
        migrations.RunPython(rename_case_twins, migrations.RunPython.noop, elidable=True),
        migrations.AddConstraint(
            model_name="workspace",
            constraint=models.UniqueConstraint(
                Lower("name"), name="one_workspace_name_ignoring_case",
                violation_error_message="Another workspace has this name (names may not differ only in case).",
            ),
        ),
        migrations.AddConstraint(
            model_name="jobtemplate",
            constraint=models.UniqueConstraint("workspace", Lower("name"), name="one_template_name_ignoring_case"),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.UniqueConstraint("workspace", Lower("name"), name="one_schedule_name_ignoring_case"),
        ),
        migrations.AddConstraint(
            model_name="webhook",
            constraint=models.UniqueConstraint("workspace", Lower("name"), name="one_webhook_name_ignoring_case"),
        ),
    ]
