"""jobs_job's indexes on status and dlc_job_id (migration 0010): no PostgreSQL "_like" copies, and the lookups by
them still seek an index. Both tests run on SQLite and, in `make test`'s second pass, on PostgreSQL."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.wizard import credentials_file
from tests.test_lifecycle import job_body


def indexes_on(column: str) -> set[str]:
    """Names of the jobs_job indexes made of this one column."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "jobs_job")
    return {name for name, c in constraints.items() if c["index"] and c["columns"] == [column]}


def plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A test's table of a few rows is cheapest to read whole whatever its indexes: ask which index the
            # planner takes when it must take one (the transaction's rollback ends the setting).
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}")
            return "\n".join(row[0] for row in cursor.fetchall())
        # SQLite plans without statistics (nothing here runs ANALYZE), as it does in production.
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
        return "\n".join(row[-1] for row in cursor.fetchall())


def indexes_in(plan_text: str) -> set[str]:
    pattern = (r"(?:Index Scan|Index Only Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\w+)"
               if connection.vendor == "postgresql" else r"SEARCH jobs_job USING (?:COVERING )?INDEX (\w+)")
    return set(re.findall(pattern, plan_text))


def test_status_and_dlc_job_id_have_no_like_index(db):
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs_job'")
            like = {name: sql for name, sql in cursor.fetchall()
                    if re.search(r"\((status|dlc_job_id) \w+_pattern_ops\)", sql) or name.endswith("_like")}
        assert like == {}
    # One plain index for status; lookups by dlc_job_id use the (workspace, dlc_job_id) unique index instead.
    assert indexes_on("status") == {"job_status"}
    assert indexes_on("dlc_job_id") == set()


@pytest.mark.integration
def test_the_syncs_lookups_by_dlc_job_id_and_status_seek_an_index(db, localdlc, settings, tmp_path):
    """The SQL the import, the adoption of a twin and the stuck-submit sweep really send, from the real code
    against a real localdlc, planned by the database."""
    from jobs import dlc, lifecycle
    from jobs.models import Job, Workspace, WorkspaceSync

    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(localdlc, tmp_path))
    ws = Workspace.objects.create(name="indexes", backend=Workspace.BACKEND_LOCAL, endpoint=localdlc.endpoint,
                                  dlc_workspace_id=f"ws-idx-{uuid.uuid4().hex[:8]}")
    remote = dlc.create_job(ws, job_body("true", WorkspaceId=ws.dlc_workspace_id))

    with CaptureQueriesContext(connection) as imported:
        lifecycle.import_new(ws, WorkspaceSync(workspace=ws))
    row = Job.objects.create(workspace=ws, display_name="twin", body={})
    with CaptureQueriesContext(connection) as adopted:
        assert lifecycle.adopt(row, remote)
    with CaptureQueriesContext(connection) as swept:
        assert row.pk not in lifecycle.stuck_jobs(timedelta(0))
    if connection.vendor == "postgresql":
        # PostgreSQL plans by its statistics, and a table of two rows (or the stale statistics earlier tests left)
        # makes any index as cheap as another: once, the created-at index was taken. Give it the shape a real
        # table has, many ended jobs and few unsent ones, so the plan below is the one production gets.
        now = timezone.now()
        Job.objects.bulk_create(
            Job(workspace=ws, display_name=f"ended-{i}", body={}, status="Succeeded", dlc_job_id=f"dlc-ended-{i}",
                created_at=now - timedelta(minutes=i)) for i in range(2000))
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE jobs_job")

    def select(captured, *needles: str) -> str:
        found = [q["sql"] for q in captured.captured_queries
                 if q["sql"].startswith("SELECT") and all(n in q["sql"] for n in needles)]
        assert len(found) == 1, (needles, [q["sql"] for q in captured.captured_queries])
        return found[0]

    lookups = {  # each SQL, and the indexes that may serve it
        "import: which listed jobs have a row": (select(imported, '"dlc_job_id" IN', remote), {"one_row_per_dlc_job"}),
        "adopt: the imported twin": (select(adopted, '"dlc_job_id" =', remote), {"one_row_per_dlc_job"}),
        "sweep: stuck submits": (select(swept, '"status" ='), {"job_status"}),
    }
    wrong = {}
    for name, (sql, expected) in lookups.items():
        text = plan(sql)
        if not indexes_in(text) or not indexes_in(text) <= expected:
            wrong[name] = text
    assert not wrong, wrong
