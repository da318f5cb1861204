"""Creates the demo user and the "Local" workspace bound to localdlc. Safe to run again."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from jobs.models import Membership, Workspace
from jobs.portal_forms import binding_twin


class Command(BaseCommand):
    help = "Create the demo user and the Local workspace (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=settings.DEMO_USERNAME)
        if created:
            user.set_password(settings.DEMO_PASSWORD)
            user.is_staff = True
            user.save()
        workspace = Workspace.objects.filter(name="Local").first()
        if workspace is None:
            local = Workspace(name="Local", backend=Workspace.BACKEND_LOCAL, region="cn-hangzhou",
                              dlc_workspace_id="local")
            # Local renamed (or another workspace on localdlc's "local"): a second binding would import its jobs.
            twin = binding_twin(local)
            if twin is not None:
                self.stdout.write(f"Demo user {user.username!r} is ready; workspace {twin.name!r} already binds "
                                  "localdlc's 'local', so no Local workspace is made.")
                return
            # Names may not differ only in case (the database refuses it: migration 0040).
            named = Workspace.objects.filter(name__iexact="Local").first()
            if named is not None:
                self.stdout.write(f"Demo user {user.username!r} is ready; workspace {named.name!r} has the name "
                                  "'Local' but for case, so no Local workspace is made.")
                return
            local.save()
            workspace = local
        Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": Membership.ADMIN})
        self.stdout.write(f"Demo user {user.username!r} and workspace {workspace.name!r} are ready.")
