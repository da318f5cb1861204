from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _repair_name_index(sender, using, **kwargs) -> None:
    # SQLite loses jobs_job's triggers whenever a migration rebuilds the table (jobs.listing.repair_name_index).
    from django.db import connections

    from jobs import listing

    listing.repair_name_index(connections[using])


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_repair_name_index, sender=self)
