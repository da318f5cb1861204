"""Fixtures shared by the portal and API tests: a team (tests.portal_fixtures.make_team: two workspaces and a user
of each role) and an API client per user of it. A module that needs another team defines its own `team`."""

from __future__ import annotations

import pytest


@pytest.fixture
def team(db):
    from tests import portal_fixtures as pf

    return pf.make_team()


@pytest.fixture
def api(team):
    """An API client, with its own token, for each user of the team, by role name."""
    from tests.support.api import Api

    return {name: Api(user) for name, user in team.users.items()}
