"""jobs.access: the user's workspaces with their roles read in one query, and a role carried by a workspace
trusted only for the user it was read for."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from jobs import access
from jobs.models import Membership, Workspace


@pytest.fixture
def setup(db):
    make = get_user_model().objects.create_user
    users = {name: make(name) for name in ("ann", "ben")}
    users["root"] = get_user_model().objects.create_superuser("root")
    spaces = {name: Workspace.objects.create(name=name) for name in ("a-team", "b-team", "c-team")}
    Membership.objects.create(user=users["ann"], workspace=spaces["a-team"], role="admin")
    Membership.objects.create(user=users["ann"], workspace=spaces["b-team"], role="viewer")
    Membership.objects.create(user=users["ben"], workspace=spaces["b-team"], role="member")
    return users, spaces


def test_workspaces_with_roles_in_one_query(setup, django_assert_num_queries):
    users, spaces = setup
    with django_assert_num_queries(1):
        found = access.workspaces_with_roles(users["ann"])
    assert [ws.name for ws in found] == ["a-team", "b-team"]
    with django_assert_num_queries(0):
        assert [access.role_in(users["ann"], ws) for ws in found] == ["admin", "viewer"]
        assert access.can(users["ann"], "manage", workspace=found[0])
        assert not access.can(users["ann"], "create", workspace=found[1])


def test_superuser_sees_every_workspace_as_admin_and_anonymous_none(setup):
    from django.contrib.auth.models import AnonymousUser

    users, spaces = setup
    found = access.workspaces_with_roles(users["root"])
    assert [ws.name for ws in found] == ["a-team", "b-team", "c-team"]
    assert {access.role_in(users["root"], ws) for ws in found} == {"admin"}
    assert access.workspaces_with_roles(AnonymousUser()) == []


def test_a_role_read_for_one_user_is_not_trusted_for_another(setup):
    users, spaces = setup
    b_team = access.workspaces_with_roles(users["ann"])[1]
    assert access.role_in(users["ann"], b_team) == "viewer"
    assert access.role_in(users["ben"], b_team) == "member"  # asked the database, not ann's role
    c_team = spaces["c-team"]
    c_team.role_of = (users["ben"].pk + 1000, "admin")  # nobody's
    assert access.role_in(users["ben"], c_team) is None


def test_a_token_scope_narrows_the_workspaces_and_wins_over_a_carried_role(setup):
    users, spaces = setup
    ann = users["ann"]
    ann.token_scope = access.TokenScope(workspace_id=spaces["b-team"].pk)
    found = access.workspaces_with_roles(ann)
    assert [ws.name for ws in found] == ["b-team"]
    a_team = access.workspaces_with_roles(get_user_model().objects.get(pk=ann.pk))[0]
    assert access.role_in(ann, a_team) is None  # a-team carries ann's admin role, but the token is for b-team
    ann.token_scope = access.TokenScope(read_only=True)
    admin_of = access.workspaces_with_roles(ann)[0]
    assert access.role_in(ann, admin_of) == "admin" and not access.can(ann, "manage", workspace=admin_of)


def test_a_refusal_says_the_rule_of_the_action_refused(db):
    """QA: a member's priority change on someone else's job said "You may not stop here.", their stop "You may not
    stop here." and an admin page "You may not manage here.": each refusal now states its action's rule."""
    from html import escape

    from tests import portal_fixtures as pf
    from tests.support.api import Api

    team = pf.make_team()
    member = pf.client_for(team.users["member"])  # team.admin_job is someone else's job to them
    priority = member.post(f"/jobs/{team.admin_job.pk}/priority", {"priority": "5"})
    assert priority.status_code == 403
    assert escape("Only the job's owner or a workspace admin may change its priority.") in priority.text
    stop = member.post(f"/jobs/{team.admin_job.pk}/stop")
    assert stop.status_code == 403 and "You may stop only your own jobs (or be a workspace admin)." in stop.text
    api_stop = Api(team.users["member"]).post(f"/api/v1/jobs/{team.admin_job.pk}/stop")
    assert api_stop.status_code == 403
    assert api_stop.json()["error"] == "You may stop only your own jobs (or be a workspace admin)."
    settings = member.get(f"/workspaces/{team.alpha.pk}/settings")
    assert settings.status_code == 403 and escape("Only the workspace's admins may change this.") in settings.text
    # A read-only token is told that it is the token, in the action's words.
    read_only = Api(team.users["admin"], read_only=True).post(f"/api/v1/jobs/{team.admin_job.pk}/stop")
    assert read_only.status_code == 403 and read_only.json()["error"] == \
        "This API token is read-only: it may not stop. Use a read-write token."
    viewer = pf.client_for(team.users["viewer"]).post(f"/jobs/{team.job.pk}/priority", {"priority": "5"})
    assert viewer.status_code == 403 and "may change its priority" in viewer.text
    viewer_stop = Api(team.users["viewer"]).post(f"/api/v1/jobs/{team.job.pk}/stop")
    assert viewer_stop.json()["error"] == "Viewers may not stop jobs: members stop their own, workspace admins any."
    # An action named for its refusal follows another's rule: scheduling a job's clone is cloning it.
    assert access.can(team.users["member"], "schedule", workspace=team.alpha)
    assert access.refusal(team.users["viewer"], "schedule", workspace=team.alpha) == \
        "Only the workspace's members and admins may schedule jobs here."
