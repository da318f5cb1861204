"""Workspace guardrails: the stored WorkspacePolicy as the spec.Policy that jobs.spec enforces.

`context_for(workspace)` is the one way the wizard, the JSON API, import and clone get the validation
context of a workspace, so the guardrails apply the same everywhere.
"""

from __future__ import annotations

from typing import Any

from jobs import catalog, spec
from jobs.models import Workspace, WorkspacePolicy

# Tag slots of a job the console takes itself: the idempotency tag it adds to Settings.Tags.
CONSOLE_TAGS = 1


def policy_row(workspace: Workspace) -> WorkspacePolicy:
    """The workspace's stored policy (an unsaved empty one when none was ever saved)."""
    try:
        return workspace.policy
    except WorkspacePolicy.DoesNotExist:
        return WorkspacePolicy(workspace=workspace)


def policy_for(workspace: Workspace) -> spec.Policy:
    from jobs import costs  # costs reads jobs.usage, which the forms layer imports

    row = policy_row(workspace)
    return spec.Policy(
        allowed_sources=frozenset(row.allowed_sources) if row.allowed_sources else None,
        max_nodes=row.max_nodes,
        max_gpus=row.max_gpus,
        max_duration_minutes=row.max_duration_minutes,
        allowed_image_prefixes=tuple(row.allowed_image_prefixes) if row.allowed_image_prefixes else None,
        required_tag_keys=tuple(row.required_tag_keys or ()),
        default_tags=dict(row.default_tags or {}),
        budget_spent=costs.refusal(workspace) if workspace.pk else None,
    )


def instance_specs(workspace: Workspace) -> dict[str, dict[str, Any]] | None:
    """ListEcsSpecs of the workspace's backend keyed by instance type; None when unreachable.

    The wizard's cached catalog, so the wizard and every other caller see the same instance types.
    """
    from jobs.forms.wizard import instance_catalog  # the forms layer imports this module

    return instance_catalog(workspace).by_type()


def quotas_for(workspace: Workspace) -> dict[str, dict[str, Any]]:
    """The workspace's registered resource quotas keyed by id, in the shape spec.Context.quotas takes."""
    return {q["id"]: {"resource_type": q["resource_type"], "general_computing_2_0": q.get("general_computing_2_0"),
                      "name": q.get("name", "")} for q in workspace.quotas or []}


def context_for(workspace: Workspace, *, with_specs: bool = True, hints: dict | None = None,
                specs: dict[str, dict[str, Any]] | None = None) -> spec.Context:
    """The validation context of a workspace: its region, its guardrails and (when reachable) instance types.

    Instance types matter to the GPU cap and the public-resource limits, so every path that validates a job (the
    wizard, the API, import, clone) gets them from the one cached catalog (instance_specs); `specs` is for a caller
    that already holds it (the wizard). with_specs=False is only for a caller that reads the policy alone: without
    the instance types a GPU cap cannot be checked.
    """
    return spec.Context(
        region=workspace.region,
        specs=specs if specs is not None else (instance_specs(workspace) if with_specs else None),
        quotas=quotas_for(workspace),
        policy=policy_for(workspace),
        hints=hints,
        reserved_tags=CONSOLE_TAGS,
    )


def hints_for(workspace: Workspace) -> dict[str, list[str]]:
    """The guardrails as short sentences keyed by the wizard field they constrain, for display."""
    p = policy_for(workspace)
    out: dict[str, list[str]] = {}
    if p.allowed_sources is not None:
        names = ", ".join(label for key, label in catalog.SOURCES.items() if key in p.allowed_sources)
        out.setdefault("resources.source", []).append(f"Allowed sources: {names or 'none'}.")
    if p.max_nodes is not None:
        out.setdefault("resources.roles", []).append(f"At most {p.max_nodes} nodes per job.")
    if p.max_gpus is not None:
        out.setdefault("resources.roles", []).append(f"At most {p.max_gpus} GPUs per job.")
    if p.max_duration_minutes is not None:
        out.setdefault("resources.max_duration", []).append(
            f"Maximum duration is required and at most {format_minutes(p.max_duration_minutes)}."
        )
    if p.allowed_image_prefixes is not None:
        out.setdefault("environment.image", []).append(
            "Images must start with: " + ", ".join(p.allowed_image_prefixes) + "."
        )
    if p.required_tag_keys:
        out.setdefault("basic.tags", []).append("Required tags: " + ", ".join(p.required_tag_keys) + ".")
    if p.default_tags:
        out.setdefault("basic.tags", []).append(
            "Default tags: " + ", ".join(f"{k}={v}" for k, v in p.default_tags.items()) + "."
        )
    # Not a rule a job can break at submit, but one that ends it: its owner should know before a job that waits on
    # input (a notebook, a debug `sleep`) is stopped under them.
    row = policy_row(workspace)
    if row.idle_after_minutes:
        idle = f"A job using under {row.idle_threshold_percent}% of its GPUs (or CPU cores) is flagged idle after " \
               f"{format_minutes(row.idle_after_minutes)}"
        if row.idle_stop_after_minutes:
            idle += f" and stopped after {format_minutes(row.idle_stop_after_minutes)}"
        out.setdefault("resources.max_duration", []).append(idle + ".")
    return out


def format_minutes(minutes: int) -> str:
    for unit, size in (("days", 1440), ("hours", 60), ("minutes", 1)):
        if minutes % size == 0:
            return f"{minutes // size} {unit[:-1] if minutes == size else unit}"
    return f"{minutes} minutes"
