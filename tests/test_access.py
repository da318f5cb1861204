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
