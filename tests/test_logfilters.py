"""A refused request is logged as one warning line (method, path, user), never with a traceback."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model


@pytest.mark.django_db
def test_a_403_is_one_warning_line_with_method_path_and_user_and_no_traceback(client, caplog):
    client.force_login(get_user_model().objects.create_user("mallory", password=None))
    with caplog.at_level(logging.INFO, logger="django.request"):
        answer = client.get("/workspaces/new")  # only a superuser creates workspaces: PermissionDenied
    assert answer.status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    text = logging.Formatter().format(records[0])
    assert text == "Forbidden (Permission denied): /workspaces/new (GET, user mallory)"

