"""Shared fixtures. Integration tests run the real stack (Redis, localdlc, Celery worker and beat, web)
as processes against pytest-django's test database, which is a file so every process sees it."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from consoleapp.stack import Stack, free_port

# Playwright's sync API runs an event loop in the test thread; our ORM calls there are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# The default credentials chain must not ask an ECS metadata service (100.100.100.200) from a test: set before
# alibabacloud_credentials is first imported (it reads the environment then), and inherited by the stack.
os.environ.setdefault("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
# The tests' webhook receivers listen on loopback, which jobs.notify refuses unless allowed: in the stack's
# processes (they inherit this environment) and in this one (fixture_webhook_receivers_allowed below).
os.environ.setdefault("DLC_WEBHOOK_ALLOWED_HOSTS", "127.0.0.1")

pytest_plugins = ["tests.support.localdlc", "tests.support.browser", "tests.support.pages", "tests.support.teams",
                  "tests.support.flushing"]

PASSWORD = "correct-horse-battery"

# `make test` runs everything on SQLite and, alongside, every integration test and every test that touches the
# database on PostgreSQL (production's database): SQL, transactions and locking differ by database, and the
# integration tests are where they meet the worker, beat and web processes. Unit tests that never open the
# database (the spec's pure rules, forms without a model) would only repeat themselves.
DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "stack"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.get_closest_marker("django_db") or item.get_closest_marker("integration")
                or DB_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(name="fast_password_hashing", scope="session", autouse=True)
def fixture_fast_password_hashing():
    # Django's PBKDF2 at 1,000 iterations in this process (tests/support/hashers.py); the default list follows, so
    # any hash is still checked.
    from django.conf import settings
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["tests.support.hashers.FastPBKDF2PasswordHasher",
                                             *settings.PASSWORD_HASHERS]):
        yield


@pytest.fixture(name="static_files_looked_up_when_asked", scope="session", autouse=True)
def fixture_static_files_looked_up_when_asked():
    # Every Django test Client builds its own middleware chain, and WhiteNoise's scan of every static file took
    # 15 ms of each (thousands of clients in a run). With autorefresh it looks a /static/ URL up when one is asked
    # for and serves the same files; this process only: the stack's web server keeps the settings' behaviour.
    from django.test import override_settings

    with override_settings(WHITENOISE_AUTOREFRESH=True):
        yield


@pytest.fixture(name="webhook_receivers_allowed", scope="session", autouse=True)
def fixture_webhook_receivers_allowed():
    # pytest-django loaded the settings before this module set the environment variable.
    from django.test import override_settings

    allowed = [h.strip() for h in os.environ["DLC_WEBHOOK_ALLOWED_HOSTS"].split(",") if h.strip()]
    with override_settings(DLC_WEBHOOK_ALLOWED_HOSTS=allowed):
        yield


@pytest.fixture(scope="session")
def stack(django_db_setup, django_db_blocker, tmp_path_factory) -> Stack:
    from django.db import connection

    db_name = connection.settings_dict["NAME"]
    engine = connection.settings_dict["ENGINE"]
    if "sqlite" in engine:
        database_url = f"sqlite:///{Path(db_name).resolve()}"
    else:
        s = connection.settings_dict
        user, password = quote(s["USER"] or "", safe=""), quote(s["PASSWORD"] or "", safe="")
        database_url = f"postgres://{user}:{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{db_name}"
    running = Stack(
        data_dir=tmp_path_factory.mktemp("stack"),
        web_port=free_port(),
        localdlc_port=free_port(),
        quiet=True,
        sync_interval=1.0,
        # The session localdlc keeps every earlier test's jobs: a new test's workspace must not import them.
        # Webhook retries (jobs.notify) after 0.3 s, 1.2 s...: the retry test waits for one, not for 30 s.
        # Due schedules (jobs.schedules) are looked for every 2 s, not 30 s: the schedule test waits for one.
        # An ended job's logs are archived 1 s after a sync sees the end, not 5 s: many tests wait for the archive.
        # Its localdlc's jobs are Creating and EnvPreparing 0.1 s each (as the `localdlc` fixture's), not 0.3 s.
        extra_env={"DATABASE_URL": database_url, "DLC_SWEEP_INTERVAL": "5", "DLC_IMPORT_LOOKBACK_HOURS": "0",
                   "DLC_WEBHOOK_RETRY_BASE_SECONDS": "0.3", "DLC_SCHEDULE_INTERVAL": "2", "DLC_ARCHIVE_DELAY": "1",
                   "LOCALDLC_CREATING_SECONDS": "0.1", "LOCALDLC_ENV_PREPARING_SECONDS": "0.1"},
        overlap_start=True,
    )
    running.start()
    yield running
    running.stop()


@pytest.fixture
def gate(tmp_path):
    """A file a test's pod waits for (`until [ -e {gate} ]; do sleep 0.1; done`): the test lets the pod end once it
    has seen what it came for, where a `sleep N` guessed how long a loaded machine takes to show it. Created at
    teardown too, so a test that failed leaves no pod waiting on the session's localdlc."""
    path = tmp_path / "gate"
    yield path
    path.touch()


@pytest.fixture
def workspace(transactional_db, stack):
    from jobs.models import Workspace

    return Workspace.objects.create(
        name="Local", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local",
        endpoint=f"127.0.0.1:{stack.localdlc_port}",
    )


@pytest.fixture
def member(workspace):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    user = get_user_model().objects.create_user("alice", password=PASSWORD)
    Membership.objects.create(user=user, workspace=workspace, role=Membership.MEMBER)
    return user
