"""tests/support/flushing.py: the flush after a transactional test survives a deadlock with another PostgreSQL
session. The deadlock is made for real: a second connection holds the last table the TRUNCATE will lock, waits
until the TRUNCATE is waiting for it, then asks for the first table, which the TRUNCATE holds."""

from __future__ import annotations

import re
import threading
import time

import pytest

from tests.support import flushing

pytestmark = pytest.mark.django_db(transaction=True)


def deadlock_the_next_flush(connection) -> tuple[threading.Thread, dict]:
    from django.core.management.color import no_style
    from django.core.management.sql import sql_flush

    # The flush command lists the tables in the same order (one process, the same set built the same way).
    tables = re.findall(r'"(\w+)"', sql_flush(no_style(), connection)[0])
    first, last = tables[0], tables[-1]
    connection.ensure_connection()
    flush_pid = connection.connection.info.backend_pid
    outcome: dict = {"holding": threading.Event()}

    def other_session() -> None:
        raw = connection.get_new_connection(connection.get_connection_params())
        try:
            with raw.cursor() as cursor:
                cursor.execute(f'LOCK TABLE "{last}" IN ROW EXCLUSIVE MODE')
                outcome["holding"].set()
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    cursor.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", [flush_pid])
                    if cursor.fetchone():
                        break
                    time.sleep(0.02)
                else:
                    outcome["error"] = "the flush never waited for the held table"
                    return
                cursor.execute(f'LOCK TABLE "{first}" IN ROW EXCLUSIVE MODE')
            raw.commit()
            outcome["committed"] = True
        except Exception as error:  # reported by the test, not lost in the thread
            outcome["error"] = repr(error)
        finally:
            raw.close()

    thread = threading.Thread(target=other_session)
    thread.start()
    assert outcome["holding"].wait(30)
    return thread, outcome


def test_a_flush_failed_by_a_deadlock_is_retried():
    from django.db import connection
    from django.test import TransactionTestCase

    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL deadlock")
    django_flush = TransactionTestCase._fixture_teardown.__wrapped__  # the session fixture has wrapped it
    failures: list[BaseException] = []

    def flush_noting_failures(case) -> None:
        try:
            django_flush(case)
        except Exception as error:
            failures.append(error)
            raise

    thread, outcome = deadlock_the_next_flush(connection)
    try:
        flushing.retrying(flush_noting_failures)(TransactionTestCase())
    finally:
        thread.join(30)
    assert outcome.get("committed"), outcome.get("error")
    # The first TRUNCATE waited first, so PostgreSQL failed it to break the deadlock; the retry emptied the tables.
    assert [flushing.is_deadlock(error) for error in failures] == [True]


def test_other_failures_are_not_retried():
    from django.core.management.base import CommandError

    calls = []

    def failing(case) -> None:
        calls.append(case)
        raise CommandError("Database couldn't be flushed: the disk is full")

    with pytest.raises(CommandError):
        flushing.retrying(failing)(object())
    assert len(calls) == 1
