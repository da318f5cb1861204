"""A token-authenticated test client of the JSON API, for the API test modules."""

from __future__ import annotations

import json
from typing import Any

from jobs import apitokens
from tests import portal_fixtures as pf


class Api:
    """One user's API token (scoped as asked: workspace=, read_only=) and a client that sends it."""

    def __init__(self, user, **scope: Any):
        _, self.token = apitokens.create_token(user, "test", **scope)
        self.client = pf.client_for(enforce_csrf_checks=True)

    def get(self, url, **query):
        return self.client.get(url, query, HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def post(self, url, payload=None):
        data = payload if isinstance(payload, str | bytes) else json.dumps(payload) if payload is not None else ""
        return self.client.post(url, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {self.token}")
