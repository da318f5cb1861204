"""The one permission helper: every view and API endpoint asks here what a user may see and do."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from jobs.models import Job, Membership, Workspace

RANK = {Membership.VIEWER: 0, Membership.MEMBER: 1, Membership.ADMIN: 2}


def role_in(user, workspace: Workspace) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.ADMIN
    membership = Membership.objects.filter(user=user, workspace=workspace).first()
    return membership.role if membership else None


def workspaces_for(user) -> QuerySet[Workspace]:
    if user.is_superuser:
        return Workspace.objects.all()
    return Workspace.objects.filter(memberships__user=user)


def jobs_for(user) -> QuerySet[Job]:
    if user.is_superuser:
        return Job.objects.all()
    return Job.objects.filter(workspace__memberships__user=user)


def jobs_in(user, workspace: Workspace | None) -> QuerySet[Job]:
    """One workspace's jobs if the user may view it, else none.

    The membership is checked once, here, rather than joined into the rows query as jobs_for() does: with
    that join SQLite sorts the whole workspace for every list page instead of walking its index.
    """
    if workspace is None or not can(user, "view", workspace=workspace):
        return Job.objects.none()
    return Job.objects.filter(workspace=workspace)


def can(user, action: str, *, workspace: Workspace, job: Job | None = None) -> bool:
    """Actions: view, create, clone, stop, manage. Members stop their own jobs; admins any job."""
    role = role_in(user, workspace)
    if role is None:
        return False
    if action == "view":
        return True
    if action in {"create", "clone"}:
        return RANK[role] >= RANK[Membership.MEMBER]
    if action == "stop":
        if RANK[role] >= RANK[Membership.ADMIN]:
            return True
        return role == Membership.MEMBER and job is not None and job.owner_id == user.pk
    if action == "manage":
        return role == Membership.ADMIN
    return False


def require(user, action: str, *, workspace: Workspace, job: Job | None = None) -> None:
    if not can(user, action, workspace=workspace, job=job):
        raise PermissionDenied(f"You may not {action} here.")


def get_job(user, pk: int, action: str = "view") -> Job:
    """A job the user may act on; 404 (not 403) for jobs outside their workspaces, so ids don't leak."""
    job = get_object_or_404(jobs_for(user).select_related("workspace", "owner"), pk=pk)
    require(user, action, workspace=job.workspace, job=job)
    return job


def get_workspace(user, pk: int, action: str = "view") -> Workspace:
    """A workspace the user may act on; 404 (not 403) when they are not a member, so ids don't leak."""
    workspace = get_object_or_404(workspaces_for(user), pk=pk)
    require(user, action, workspace=workspace)
    return workspace


def get_template(user, pk: int, action: str = "view"):
    """A job template of one of the user's workspaces; 404 for templates elsewhere."""
    from jobs.models import JobTemplate

    template = get_object_or_404(
        JobTemplate.objects.select_related("workspace").filter(workspace__in=workspaces_for(user)), pk=pk
    )
    require(user, action, workspace=template.workspace)
    return template
