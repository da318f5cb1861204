from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_migrate


def _repair_name_index(sender, using, **kwargs) -> None:
    # SQLite loses jobs_job's triggers whenever a migration rebuilds the table (jobs.listing.repair_name_index).
    from django.db import connections

    from jobs import listing

    listing.repair_name_index(connections[using])


def _land_in_last_used_workspace(sender, request, user, **kwargs) -> None:
    from jobs import views

    views.land_in_last_used_workspace(request, user)


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_repair_name_index, sender=self)
        user_logged_in.connect(_land_in_last_used_workspace, dispatch_uid="jobs.land_in_last_used_workspace")
