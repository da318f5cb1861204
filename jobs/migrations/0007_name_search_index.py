import sqlite3

from django.db import migrations

# Name search on SQLite: an FTS5 trigram index over jobs_job.display_name, kept in step by triggers (the DDL and why
# it only narrows icontains: jobs.listing, "name search"). PostgreSQL has its trigram index since 0004_list_indexes.
# Filling it from 1M existing jobs takes ~30 s.


def install(apps, schema_editor):
    from jobs import listing

    connection = schema_editor.connection
    if connection.vendor == "sqlite" and not listing.install_name_index(connection):
        print(f"\n  SQLite {sqlite3.sqlite_version} has no FTS5 trigram tokenizer (3.34+): name search will scan.")


def uninstall(apps, schema_editor):
    from jobs import listing

    listing.drop_name_index(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0006_drop_redundant_status_index'),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
