"""Data for the portal tests: two workspaces, one user per role, a job and a template in each.

Users get no usable password (tests sign in with force_login), because hashing passwords for every
parametrized case would dominate the run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BODY = {
    "DisplayName": "train-a",
    "JobType": "PyTorchJob",
    "JobSpecs": [{"Type": "Worker", "Image": "registry.example/pytorch:2.3", "PodCount": 1, "EcsSpec": "ecs.g6.large"}],
    "UserCommand": "echo hello",
}
# A port nothing listens on: views that call the backend get a fast "connection refused".
DEAD_ENDPOINT = "127.0.0.1:9"


@dataclass
class Team:
    alpha: Any
    beta: Any
    users: dict[str, Any]
    job: Any  # in alpha, owned by "member", running on DLC with one pod
    admin_job: Any  # in alpha, owned by "admin"
    other_job: Any  # in beta
    template: Any  # in alpha
    other_template: Any  # in beta
    memberships: dict[str, Any] = field(default_factory=dict)


def make_job(workspace, owner, name: str = "train-a", **fields: Any):
    from jobs.models import Job

    body = {**BODY, "DisplayName": name}
    values = {"status": "Running", "dlc_job_id": f"dlc-{name}", "job_type": "PyTorchJob",
              "pods": [{"PodId": f"{name}-worker-0", "Type": "Worker", "Status": "Running", "Ip": "10.0.0.1"}]}
    values.update(fields)
    return Job.objects.create(workspace=workspace, owner=owner, display_name=name, body=body, **values)


def make_team(endpoint: str = DEAD_ENDPOINT) -> Team:
    from django.contrib.auth import get_user_model

    from jobs import spec
    from jobs.models import JobTemplate, JobTemplateVersion, Membership, Workspace

    User = get_user_model()
    alpha = Workspace.objects.create(name="Alpha", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="alpha",
                                     endpoint=endpoint)
    beta = Workspace.objects.create(name="Beta", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="beta",
                                    endpoint=endpoint)
    users, memberships = {}, {}
    for name, workspace, role in (("viewer", alpha, "viewer"), ("member", alpha, "member"),
                                  ("admin", alpha, "admin"), ("other", beta, "admin")):
        users[name] = User.objects.create_user(name, password=None)
        memberships[name] = Membership.objects.create(user=users[name], workspace=workspace, role=role)
    job = make_job(alpha, users["member"])
    admin_job = make_job(alpha, users["admin"], "admin-job")
    other_job = make_job(beta, users["other"], "beta-job")
    sections = spec.inverse(BODY)
    template = JobTemplate.objects.create(workspace=alpha, name="base", created_by=users["admin"])
    JobTemplateVersion.objects.create(template=template, number=1, sections=sections, created_by=users["admin"])
    other_template = JobTemplate.objects.create(workspace=beta, name="beta-base", created_by=users["other"])
    JobTemplateVersion.objects.create(template=other_template, number=1, sections=sections)
    return Team(alpha, beta, users, job, admin_job, other_job, template, other_template, memberships)


def client_for(user=None, **kwargs: Any):
    from django.test import Client

    client = Client(**kwargs)
    if user is not None:
        client.force_login(user)
    return client
