"""After each transactional test pytest-django empties the database with one `TRUNCATE` of every table. On
PostgreSQL that statement locks the tables one after another, while the stack's worker (a real process, perhaps
still writing the job a test started) may hold one of them and then want another the TRUNCATE already holds.
PostgreSQL breaks such a deadlock by failing one side; when the flush is the one failed, the test errors at
teardown and the next test finds the rows left behind (seen in CI). A deadlock victim is retried, as any
PostgreSQL client retries one: the other side has gone on by then."""

from __future__ import annotations

import functools

import pytest

DEADLOCK = "40P01"
ATTEMPTS = 5


def is_deadlock(error: BaseException) -> bool:
    """Whether PostgreSQL failed this statement to break a deadlock (anywhere in the chain of causes:
    the flush command wraps Django's error, which wraps psycopg's)."""
    while error is not None:
        if getattr(error, "sqlstate", None) == DEADLOCK:
            return True
        error = error.__cause__ or error.__context__
    return False


def retrying(flush):
    @functools.wraps(flush)
    def fixture_teardown(self) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return flush(self)
            except Exception as error:
                if attempt == ATTEMPTS or not is_deadlock(error):
                    raise
    return fixture_teardown


@pytest.fixture(name="flush_retries_deadlocks", scope="session", autouse=True)
def fixture_flush_retries_deadlocks():
    from django.test import TransactionTestCase

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", retrying(TransactionTestCase._fixture_teardown))
        yield
