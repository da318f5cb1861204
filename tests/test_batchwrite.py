"""jobs.batchwrite, the status sync's write side, at its edges, on SQLite and (make test) PostgreSQL: rows of one
statement whose values differ in type, batches longer than one PostgreSQL statement, a row named twice, attnames,
unsaved and deleted rows. The common values (quotes, JSON, microseconds) are in tests/test_sync.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model

from jobs import batchwrite
from jobs.models import Job, Workspace

T = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
WRITABLE = [f.name for f in Job._meta.concrete_fields if not f.primary_key]


@pytest.fixture
def ws(db):
    return Workspace.objects.create(name="bw", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")


def stored(job: Job) -> list:
    fresh = Job.objects.get(pk=job.pk)
    return [getattr(fresh, f.attname) for f in Job._meta.concrete_fields]


def held(job: Job) -> list:
    return [getattr(job, f.attname) for f in Job._meta.concrete_fields]


def test_one_statement_takes_null_in_one_row_and_a_value_in_the_next_in_every_column(ws):
    """A VALUES list has no column types on PostgreSQL: NULL next to a datetime, a JSON string next to a JSON
    object, an owner next to none, all in one statement, and more rows than one statement holds."""
    user = get_user_model().objects.create_user("u")
    count = 2 * batchwrite.VALUES_ROWS + 3
    jobs = Job.objects.bulk_create([Job(workspace=ws, display_name=f"j{i}") for i in range(count)])
    for i, job in enumerate(jobs):
        odd = i % 2
        job.status, job.display_name = f"S{i}", f"renamed {i} 'quoted' %s"
        job.finished_at = T + timedelta(seconds=i) if odd else None
        job.stop_requested_at = None if odd else T
        job.owner = user if odd else None
        job.pods = {"i": i} if odd else [None, i, "x"]
        job.submit_error = "a JSON string" if odd else {}
        job.submit_attempts = i
        job.imported = bool(odd)
    assert batchwrite.update_changed([(job, WRITABLE) for job in jobs]) == count
    for job in [*jobs[:3], jobs[batchwrite.VALUES_ROWS], *jobs[-3:]]:
        assert stored(job) == held(job), job.display_name


def test_a_row_named_twice_ends_as_saving_the_pairs_in_order_would(ws):
    """Each field from the last pair naming it, on both databases: PostgreSQL's UPDATE ... FROM keeps one of a
    row's two VALUES rows, the first once it hash-joins (50 rows are enough), so the older value won there."""
    jobs = Job.objects.bulk_create([Job(workspace=ws, display_name=f"j{i}", reason_code="kept") for i in range(60)])
    pairs = []
    for job in jobs:
        older, newer = Job.objects.get(pk=job.pk), Job.objects.get(pk=job.pk)
        older.status, older.reason_code, newer.status = "Older", "from older", "Newer"
        pairs += [(older, ["status"]), (newer, ["status"]), (older, ["reason_code"])]
    written = batchwrite.update_changed(pairs)
    assert set(Job.objects.values_list("status", "reason_code")) == {("Newer", "from older")}
    assert written == len(jobs), "rows, not pairs"


def test_attnames_are_taken_as_save_takes_them(ws):
    user = get_user_model().objects.create_user("u")
    job = Job.objects.create(workspace=ws, display_name="j", owner=user)
    job.owner_id = None
    assert batchwrite.update_changed([(job, ["owner_id"])]) == 1
    assert Job.objects.get(pk=job.pk).owner_id is None


def test_the_count_is_of_rows_written_and_an_unsaved_instance_is_refused(ws):
    gone, kept = (Job.objects.create(workspace=ws, display_name=name) for name in ("gone", "kept"))
    Job.objects.filter(pk=gone.pk).delete()
    gone.status = kept.status = "Running"
    assert batchwrite.update_changed([(gone, ["status"]), (kept, ["status"])]) == 1
    assert not Job.objects.filter(pk=gone.pk).exists()
    with pytest.raises(ValueError, match="no primary key"):
        batchwrite.update_changed([(Job(workspace=ws, display_name="new"), ["status"])])
    assert batchwrite.update_changed([]) == 0 and batchwrite.update_changed([(kept, [])]) == 0


def test_a_bad_name_is_refused_before_anything_is_written(ws):
    first, second = (Job.objects.create(workspace=ws, display_name=name) for name in "ab")
    first.status = "Running"
    with pytest.raises(ValueError, match="no_such_field"):
        batchwrite.update_changed([(first, ["status"]), (second, ["no_such_field"])])
    assert Job.objects.get(pk=first.pk).status != "Running", "no half-done batch outside a transaction"
