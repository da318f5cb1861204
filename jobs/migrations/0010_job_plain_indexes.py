from django.db import migrations, models

# jobs_job.status and .dlc_job_id lose db_index=True (see Job). What `makemigrations` writes for that, AlterField,
# rebuilds the whole table on SQLite (new table, copy, drop, rename: minutes at 1M jobs, and it drops the name
# search index's triggers, which then refill) although only indexes change. So the state says AlterField and the
# database only creates job_status, then drops the indexes db_index had made. Their names are what Django gives
# a db_index index (table, column and a hash of both) and, on PostgreSQL only, that name + "_like" for the
# varchar_pattern_ops copy.
#
# dlc_job_id gets no index in their place: every lookup by it names the workspace and seeks the
# one_row_per_dlc_job unique index (EXPLAIN in tests/test_job_indexes.py).
DB_INDEX_NAMES = {"status": "jobs_job_status_383f1641", "dlc_job_id": "jobs_job_dlc_job_id_4125af47"}


def drop_db_indexes(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for name in DB_INDEX_NAMES.values():
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")
        if postgres:
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name + '_like')}")


def restore_db_indexes(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for column, name in DB_INDEX_NAMES.items():
        schema_editor.execute(f"CREATE INDEX {schema_editor.quote_name(name)} ON jobs_job ({column})")
        if postgres:
            schema_editor.execute(
                f"CREATE INDEX {schema_editor.quote_name(name + '_like')} ON jobs_job ({column} varchar_pattern_ops)"
            )


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0009_job_fillfactor'),
    ]

    operations = [
        # First the new index, then the old ones go: the status lookups never lack an index.
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['status'], name='job_status'),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='job',
                    name='dlc_job_id',
                    field=models.CharField(blank=True, max_length=64),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='status',
                    field=models.CharField(default='Submitting', max_length=32),
                ),
            ],
            database_operations=[migrations.RunPython(drop_db_indexes, restore_db_indexes)],
        ),
    ]
