"""The one permission helper: every view and API endpoint asks here what a user may see and do.

An API token's scope is applied here too, so no API view can forget it: jobs.apitokens puts the token's
TokenScope on the user it authenticates (`user.token_scope`), and every function below narrows its answer by
it. Session users carry no scope and are judged by their memberships alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db.models import F, QuerySet
from django.shortcuts import get_object_or_404

from jobs.models import Job, Membership, Workspace

RANK = {Membership.VIEWER: 0, Membership.MEMBER: 1, Membership.ADMIN: 2}


@dataclass(frozen=True)
class TokenScope:
    """What an API token narrows its user's rights to: one workspace (None: all of theirs), and read-only or not."""

    workspace_id: int | None = None
    read_only: bool = False


def scope_of(user) -> TokenScope | None:
    return getattr(user, "token_scope", None)


def _in_scope(user, rows: QuerySet, field: str) -> QuerySet:
    scope = scope_of(user)
    if scope is None or scope.workspace_id is None:
        return rows
    return rows.filter(**{field: scope.workspace_id})


def role_in(user, workspace: Workspace) -> str | None:
    if not user.is_authenticated:
        return None
    scope = scope_of(user)
    if scope is not None and scope.workspace_id is not None and workspace.pk != scope.workspace_id:
        return None  # before the superuser check: a scoped token of a superuser is scoped too
    if user.is_superuser:
        return Membership.ADMIN
    known = getattr(workspace, "role_of", None)
    if known is not None and known[0] == user.pk:
        return known[1]
    membership = Membership.objects.filter(user=user, workspace=workspace).first()
    return membership.role if membership else None


def workspaces_for(user) -> QuerySet[Workspace]:
    rows = Workspace.objects.all() if user.is_superuser else Workspace.objects.filter(memberships__user=user)
    return _in_scope(user, rows, "pk")


def workspaces_with_roles(user) -> list[Workspace]:
    """workspaces_for() in one query, each workspace knowing the user's role in it (`role_of`), so that a page's
    top bar, its choice of the current workspace and its permission checks need no query of their own."""
    if not user.is_authenticated:
        return []
    # With its prices row (jobs.costs), so the budget notice of the list and the wizard costs no query either.
    rows = workspaces_for(user).select_related("costs")
    if user.is_superuser:
        found = [(ws, Membership.ADMIN) for ws in rows]
    else:
        found = [(ws, ws.member_role) for ws in rows.annotate(member_role=F("memberships__role"))]
    for ws, role in found:
        ws.role_of = (user.pk, role)  # role_in() trusts it only for this user
    return [ws for ws, _ in found]


def remember_role(user, workspace: Workspace) -> None:
    """Look the user's role in this workspace up once, so that the checks of a page that asks many (one per job
    note) need no query each: as workspaces_with_roles does for the top bar."""
    if user.is_authenticated and getattr(workspace, "role_of", (None,))[0] != user.pk:
        workspace.role_of = (user.pk, role_in(user, workspace))


def jobs_for(user) -> QuerySet[Job]:
    rows = Job.objects.all() if user.is_superuser else Job.objects.filter(workspace__memberships__user=user)
    return _in_scope(user, rows, "workspace_id")


def jobs_in(user, workspace: Workspace | None) -> QuerySet[Job]:
    """One workspace's jobs if the user may view it, else none.

    The membership is checked once, here, rather than joined into the rows query as jobs_for() does: with
    that join SQLite sorts the whole workspace for every list page instead of walking its index.
    """
    if workspace is None or not can(user, "view", workspace=workspace):
        return Job.objects.none()
    return Job.objects.filter(workspace=workspace)


# Actions that follow another action's rule: their own name only so that a refusal says what was refused.
_SAME_RULE = {"priority": "stop", "schedule": "clone"}


def can(user, action: str, *, workspace: Workspace, job: Job | None = None) -> bool:
    """Actions: view, create, clone, stop, manage, note (write notes on the workspace's jobs: members and admins).
    Members stop their own jobs; admins any job. priority (change a job's priority) is stop's rule, schedule
    (schedule a job's clone) clone's."""
    action = _SAME_RULE.get(action, action)
    role = role_in(user, workspace)
    if role is None:
        return False
    if action == "view":
        return True
    scope = scope_of(user)
    if scope is not None and scope.read_only:
        return False
    if action in {"create", "clone", "note"}:
        return RANK[role] >= RANK[Membership.MEMBER]
    if action == "stop":
        if RANK[role] >= RANK[Membership.ADMIN]:
            return True
        return role == Membership.MEMBER and job is not None and job.owner_id == user.pk
    if action == "manage":
        return role == Membership.ADMIN
    return False


def can_change_note(user, action: str, note) -> bool:
    """A job note (jobs.notes): "edit" is its author's alone; "delete" its author's or a workspace admin's. Either
    needs the right to write notes still (a viewer, a read-only token), as `note.job.workspace` says."""
    workspace = note.job.workspace
    if not can(user, "note", workspace=workspace):
        return False
    if note.author_id is not None and note.author_id == user.pk:
        return action in {"edit", "delete"}
    return action == "delete" and can(user, "manage", workspace=workspace)


def require_note(user, action: str, note) -> None:
    if not can_change_note(user, action, note):
        raise PermissionDenied(f"You may not {action} this note: only its author may"
                               f"{' (or a workspace admin)' if action == 'delete' else ''}.")


# How a read-only token's refusal says an action whose name is not a verb.
_ACTION_WORDS = {"note": "write notes", "priority": "change a job's priority", "schedule": "schedule jobs"}
# Each refusal states the rule, so that the user knows whom to ask (one wording for the UI and the API).
_REFUSALS = {
    "create": "Only the workspace's members and admins may create jobs here.",
    "clone": "Only the workspace's members and admins may clone jobs here.",
    "schedule": "Only the workspace's members and admins may schedule jobs here.",
    "note": "Only the workspace's members and admins may write notes here.",
    "stop": "You may stop only your own jobs (or be a workspace admin).",
    "priority": "Only the job's owner or a workspace admin may change its priority.",
    "manage": "Only the workspace's admins may change this.",
}
# A viewer owns no job to stop: "only your own jobs" would read as if theirs were allowed.
_VIEWER_REFUSALS = {"stop": "Viewers may not stop jobs: members stop their own, workspace admins any."}


def read_only_refusal(action: str) -> str:
    """A read-only token's refusal of an action that changes something (one wording wherever it is refused)."""
    return f"This API token is read-only: it may not {_ACTION_WORDS.get(action, action)}. Use a read-write token."


def refusal(user, action: str, *, workspace: Workspace, job: Job | None = None) -> str | None:
    """Why the user may not do this here (a read-only token says so first), or None when they may."""
    if can(user, action, workspace=workspace, job=job):
        return None
    scope, role = scope_of(user), role_in(user, workspace)
    if scope is not None and scope.read_only and role is not None:
        return read_only_refusal(action)
    if role == Membership.VIEWER and action in _VIEWER_REFUSALS:
        return _VIEWER_REFUSALS[action]
    return _REFUSALS.get(action, f"You may not {action} here.")


def require(user, action: str, *, workspace: Workspace, job: Job | None = None) -> None:
    problem = refusal(user, action, workspace=workspace, job=job)
    if problem is not None:
        raise PermissionDenied(problem)


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
