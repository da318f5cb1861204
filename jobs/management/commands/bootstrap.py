"""Creates the demo user and the "Local" workspace bound to localdlc. Safe to run again."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from jobs.models import Membership, Workspace


class Command(BaseCommand):
    help = "Create the demo user and the Local workspace (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=settings.DEMO_USERNAME)
        if created:
            user.set_password(settings.DEMO_PASSWORD)
            user.is_staff = True
            user.save()
        workspace, _ = Workspace.objects.get_or_create(
            name="Local",
            defaults={"backend": Workspace.BACKEND_LOCAL, "region": "cn-hangzhou", "dlc_workspace_id": "local"},
        )
        Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": Membership.ADMIN})
        self.stdout.write(f"Demo user {user.username!r} and workspace {workspace.name!r} are ready.")
