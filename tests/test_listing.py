"""jobs.listing: filters, keyset pagination (ties, both directions, every sort), counts, fixed query count."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import listing
from jobs.models import Job, Workspace

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def ws(db):
    return Workspace.objects.create(name="WS", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")


@pytest.fixture
def users(db):
    make = get_user_model().objects.create_user
    return make("ann"), make("bob")


def make_job(ws, owner=None, *, name="job", status="Running", job_type="PyTorchJob", created=T0) -> Job:
    return Job.objects.create(workspace=ws, owner=owner, display_name=name, status=status, job_type=job_type,
                              created_at=created)


def filters(**params) -> listing.Filters:
    return listing.Filters.from_query({k: str(v) for k, v in params.items()})


def names(jobs) -> list[str]:
    return [j.display_name for j in jobs]


def walk(qs, **params) -> list[int]:
    """Every id, following next cursors from the first page."""
    seen, after = [], None
    for _ in range(1000):
        f = filters(**params, **({"after": after} if after else {}))
        page = listing.page(qs, f)
        seen += [j.pk for j in page.jobs]
        if not page.next_cursor:
            return seen
        after = page.next_cursor
    raise AssertionError("pagination does not end")


# --- filters ---------------------------------------------------------------------------------------------


def test_search_by_name_is_case_insensitive_substring(ws):
    make_job(ws, name="bert-pretrain")
    make_job(ws, name="BERT-finetune")
    make_job(ws, name="resnet")
    qs = listing.apply_filters(Job.objects.all(), filters(q="bert"))
    assert sorted(names(qs)) == ["BERT-finetune", "bert-pretrain"]


def test_status_filter_exact_active_and_finished(ws):
    for status in ["Running", "Queuing", "Succeeded", "Failed", "Submitting", "SubmitFailed"]:
        make_job(ws, name=status, status=status)
    base = Job.objects.all()
    assert names(listing.apply_filters(base, filters(status="Failed"))) == ["Failed"]
    assert sorted(names(listing.apply_filters(base, filters(status="active")))) == [
        "Queuing", "Running", "Submitting"]
    assert sorted(names(listing.apply_filters(base, filters(status="finished")))) == [
        "Failed", "SubmitFailed", "Succeeded"]


def test_framework_owner_and_me(ws, users):
    ann, bob = users
    make_job(ws, ann, name="a-torch", job_type="PyTorchJob")
    make_job(ws, ann, name="a-tf", job_type="TFJob")
    make_job(ws, bob, name="b-torch", job_type="PyTorchJob")
    base = Job.objects.all()
    assert sorted(names(listing.apply_filters(base, filters(framework="PyTorchJob")))) == ["a-torch", "b-torch"]
    assert names(listing.apply_filters(base, filters(owner="bob"))) == ["b-torch"]
    assert sorted(names(listing.apply_filters(base, filters(owner="me"), user=ann))) == ["a-tf", "a-torch"]
    assert names(listing.apply_filters(base, filters(owner="ann", framework="TFJob"))) == ["a-tf"]


def test_time_range_is_inclusive_of_whole_days(ws):
    make_job(ws, name="before", created=datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC))
    make_job(ws, name="first", created=datetime(2026, 3, 1, 0, 0, tzinfo=UTC))
    make_job(ws, name="last", created=datetime(2026, 3, 2, 23, 59, 59, tzinfo=UTC))
    make_job(ws, name="after", created=datetime(2026, 3, 3, 0, 0, tzinfo=UTC))
    qs = listing.apply_filters(Job.objects.all(), filters(created_from="2026-03-01", created_to="2026-03-02"))
    assert sorted(names(qs)) == ["first", "last"]


def test_bad_values_are_errors_at_their_field_and_are_ignored(ws):
    f = filters(created_from="yesterday", status="Exploded", size="7", sort="random", after="!!!", q="ok")
    assert set(f.errors) == {"created_from", "status", "size", "sort", "after"}
    assert "YYYY-MM-DD" in f.errors["created_from"][0]
    assert (f.created_from, f.status, f.size, f.sort, f.after, f.q) == (None, "", 20, "-created", None, "ok")


def test_end_before_start_is_reported_on_the_end_date(ws):
    f = filters(created_from="2026-03-05", created_to="2026-03-01")
    assert "before the start" in f.errors["created_to"][0]
    assert f.created_to is None and f.created_from == date(2026, 3, 5)


def test_cursor_made_for_another_sort_is_refused(ws):
    job = make_job(ws)
    f = filters(sort="name", after=listing.encode_cursor(job, "-created"))
    assert "after" in f.errors and f.after is None


def test_query_round_trips_the_filters_without_defaults(ws):
    f = filters(q="x", status="active", owner="me", created_from="2026-03-01", sort="name", size="50")
    assert f.query() == {"q": "x", "status": "active", "owner": "me", "created_from": "2026-03-01",
                         "sort": "name", "size": "50"}
    assert listing.Filters.from_query(f.query()).query() == f.query()
    assert filters().query() == {}


# --- keyset pagination -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sort", list(listing.SORTS))
def test_keyset_walk_matches_full_ordering_with_ties(ws, sort):
    # Many rows share created_at, name and status, so only the id tie-breaker orders them.
    for i in range(23):
        make_job(ws, name=f"n{i % 3}", status=["Running", "Failed"][i % 2], created=T0 + timedelta(seconds=i % 4))
    qs = Job.objects.all()
    expected = list(qs.order_by(*listing.ordering(sort)).values_list("pk", flat=True))
    assert walk(qs, sort=sort, size=10) == expected


@pytest.mark.parametrize("sort", ["-created", "name", "status"])
def test_previous_pages_walk_back_to_the_start(ws, sort):
    for i in range(25):
        make_job(ws, name=f"n{i % 2}", status=["Running", "Failed", "Queuing"][i % 3], created=T0)
    qs = Job.objects.all()
    pages, after = [], None
    while True:
        page = listing.page(qs, filters(sort=sort, size=10, **({"after": after} if after else {})))
        pages.append([j.pk for j in page.jobs])
        if not page.next_cursor:
            break
        after = page.next_cursor
    assert [len(p) for p in pages] == [10, 10, 5]
    back = listing.page(qs, filters(sort=sort, size=10, before=listing.page(
        qs, filters(sort=sort, size=10, after=after)).prev_cursor))
    assert [j.pk for j in back.jobs] == pages[1]
    first = listing.page(qs, filters(sort=sort, size=10, before=back.prev_cursor))
    assert [j.pk for j in first.jobs] == pages[0]
    assert first.prev_cursor is None


def test_a_short_run_before_the_cursor_shows_the_first_full_page(ws):
    jobs = [make_job(ws, created=T0 + timedelta(seconds=i)) for i in range(15)]
    # Newest first: the cursor on the 3rd-newest row leaves only two rows before it.
    page = listing.page(Job.objects.all(), filters(size=10, before=listing.encode_cursor(jobs[-3], "-created")))
    assert [j.pk for j in page.jobs] == [j.pk for j in reversed(jobs)][:10]
    assert page.first and page.next_cursor


def test_rows_added_while_paging_do_not_shift_later_pages(ws):
    for i in range(20):
        make_job(ws, created=T0 + timedelta(seconds=i))
    qs = Job.objects.all()
    first = listing.page(qs, filters(size=10))
    make_job(ws, name="newcomer", created=T0 + timedelta(hours=1))
    second = listing.page(qs, filters(size=10, after=first.next_cursor))
    assert not {j.pk for j in first.jobs} & {j.pk for j in second.jobs}
    assert len(second.jobs) == 10 and second.next_cursor is None


@pytest.mark.parametrize("size", [10, 100])
def test_one_query_per_page_whatever_its_size_or_depth(ws, users, size, django_assert_num_queries):
    for i in range(250):
        make_job(ws, users[i % 2], created=T0 + timedelta(seconds=i // 3))
    qs = Job.objects.filter(workspace=ws)
    with django_assert_num_queries(1):
        page = listing.page(qs, filters(size=size))
        [j.owner.username for j in page.jobs]
    deep = filters(size=size, after=page.next_cursor)
    with CaptureQueriesContext(connection) as ctx:
        later = listing.page(qs, deep)
        [j.owner.username for j in later.jobs]
    assert len(ctx.captured_queries) == 1
    sql = ctx.captured_queries[0]["sql"].upper()
    assert "OFFSET" not in sql and f"LIMIT {size + 1}" in sql


# --- counts ------------------------------------------------------------------------------------------------


def test_counts_by_status_in_one_group_by(ws, django_assert_num_queries):
    for status, n in [("Running", 3), ("Succeeded", 2), ("Failed", 1), ("Submitting", 1)]:
        for _ in range(n):
            make_job(ws, status=status)
    with django_assert_num_queries(1) as captured:
        counts = listing.counts(Job.objects.all())
    assert "GROUP BY" in captured.captured_queries[0]["sql"].upper()
    assert counts.by_status == {"Running": 3, "Succeeded": 2, "Failed": 1, "Submitting": 1}
    assert (counts.total, counts.active, counts.finished) == (7, 4, 3)
    assert [c[0] for c in counts.chips()] == ["Submitting", "Running", "Succeeded", "Failed"]


def test_counts_follow_the_other_filters_but_not_the_status(ws):
    make_job(ws, name="bert", status="Running")
    make_job(ws, name="bert", status="Failed")
    make_job(ws, name="gpt", status="Running")
    f = filters(q="bert", status="Running")
    counts = listing.counts(listing.apply_filters(Job.objects.all(), f, with_status=False))
    assert counts.by_status == {"Running": 1, "Failed": 1}


# --- the poll of active rows --------------------------------------------------------------------------------


def test_watch_lists_only_active_rows_and_parses_garbage_safely(ws):
    running = make_job(ws, status="Running")
    make_job(ws, status="Succeeded")
    text = listing.format_watch(list(Job.objects.all()))
    assert text == f"{running.pk}:Running"
    assert listing.parse_watch(text) == {running.pk: "Running"}
    assert listing.parse_watch("x:1,5,7:,:Running,9:Queuing") == {9: "Queuing"}
