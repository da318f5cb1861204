"""jobs.listing: filters, keyset pagination (ties, both directions, every sort), counts, fixed query count."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import listing
from jobs import status as st
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


# --- name search -------------------------------------------------------------------------------------------
# On SQLite a name search of 3+ characters goes through the FTS5 trigram index of migration 0007 (jobs.listing,
# "name search"); whichever plan it takes, the rows must be exactly those of Django's icontains. On PostgreSQL
# (this module runs there too) the same tests check the trigram-indexed icontains.

NAMES = [
    "bert-pretrain", "BERT-finetune", "roberta-large", "resnet50", "ResNet-101", 'say "hello"', 'quote"inside',
    "a AND b", "x OR y", "NOT this", "NEAR(a b)", "star*gazer", "(paren)", "col:value", "^caret", "-minus",
    "+plus", "100%", "under_score", "back\\slash", "über-run", "Über-Run", "ÜBER", "émile", "Émile", "straße",
    "STRASSE", "日本語モデル", "emoji-🚀-run", "ab", "a", "spaced  name", "trailing.", "İstanbul", "ıi-dotless",
    "ǅemal", "ǆemal",
]
TERMS = ['"', "'", '""', "AND", "and", "*", "(", ")", "^", ":", "a", "ab", "AN", "bert", "BERT", "ert", "ResNet",
         'say "', '"hello"', 'e"i', "a AND b", "OR", "x OR", "NOT", "NEAR(", "NEAR(a", "star*", "*gazer", "col:",
         "^car", "-min", "+pl", "100%", "%", "_", "r_s", "\\", "back\\s", "über", "ÜBER", "Über", "émile",
         "ÉMILE", "straße", "STRASSE", "ss", "日本", "語モデ", "🚀", "-🚀-", "spaced  name", "İst", "ist", "ıi",
         "I", "ǅem", "ǆEM", "nothing-matches-this", "bert" * 64, "e\u0301", "NEAR(a b, 2)", '"""']
PLANS = {  # (FEW_NAME_MATCHES, SCAN_ROWS_PER_ROW): small data, so the thresholds are set to force each plan
    "default": None,
    "through the index": (10**9, 250),
    "walk the page order": (0, 10**6),
    "walk, then the index": (0, 0),
}


@pytest.fixture
def named_jobs(ws):
    created = [make_job(ws, name=name, created=T0 + timedelta(seconds=i % 5)) for i, name in enumerate(NAMES)]
    make_job(Workspace.objects.create(name="other", dlc_workspace_id="x"), name="bert-elsewhere")
    return created


@pytest.fixture
def name_index_state():
    yield
    listing._index_ready.clear()  # a test that changed the schema was rolled back


def icontains(ws, term: str) -> list[int]:
    return list(Job.objects.filter(workspace=ws, display_name__icontains=term).order_by("-created_at", "-id")
                .values_list("pk", flat=True))


@pytest.mark.parametrize("plan", list(PLANS))
def test_name_search_returns_exactly_what_icontains_does(ws, named_jobs, plan, monkeypatch):
    if PLANS[plan]:
        if connection.vendor != "sqlite":
            pytest.skip("plans of SQLite's name index")
        monkeypatch.setattr(listing, "FEW_NAME_MATCHES", PLANS[plan][0])
        monkeypatch.setattr(listing, "SCAN_ROWS_PER_ROW", PLANS[plan][1])
    scope = Job.objects.filter(workspace=ws)
    wrong = {}
    for term in TERMS:
        found = walk(scope, q=term, size=3)
        if found != icontains(ws, term):
            wrong[term] = (found, icontains(ws, term))
    assert not wrong
    assert len(walk(scope, q="bert", size=3)) == 3 and walk(scope, q="nothing-matches-this") == []
    # Non-ASCII case is ASCII-only in icontains on SQLite (its LIKE); the index must not widen it.
    if connection.vendor == "sqlite":
        assert [Job.objects.get(pk=pk).display_name for pk in walk(scope, q="über")] == ["über-run"]


def test_name_search_plans_by_how_common_the_term_is(ws, monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's name index")
    for i in range(40):  # the 25 newest are "common", the rest "other", one of them "rare"
        make_job(ws, name=f"{'common' if i >= 15 else 'rare' if i == 4 else 'other'}-{i}",
                 created=T0 + timedelta(seconds=i))
    scope = Job.objects.filter(workspace=ws)

    def search(term: str) -> tuple[list[int], list[str]]:
        with CaptureQueriesContext(connection) as ctx:
            found = [int(n.split("-")[1]) for n in names(listing.page(scope, filters(q=term, size=10)).jobs)]
        return found, [q["sql"] for q in ctx.captured_queries]

    monkeypatch.setattr(listing, "FEW_NAME_MATCHES", 5)
    monkeypatch.setattr(listing, "SCAN_ROWS_PER_ROW", 2)  # a window of 22 rows for a page of 10 (+1)
    assert listing.name_index_ready(connection.alias)  # looked up once per process, here before counting queries
    found, sqls = search("rare")  # 1 match: count the candidates, read them through the index
    assert found == [4] and len(sqls) == 2 and "MATCH" in sqls[1]
    found, sqls = search("common")  # 25 matches, the newest rows: the walk fills the page
    assert found == list(range(39, 29, -1)) and len(sqls) == 3
    assert "MATCH" not in sqls[2] and "LIKE" in sqls[2]
    found, sqls = search("other")  # 14 matches, none in the window: the index after all
    assert found == [14, 13, 12, 11, 10, 9, 8, 7, 6, 5] and len(sqls) == 4 and "MATCH" in sqls[3]
    found, sqls = search("ot")  # too short for trigrams: the walk, as icontains always did
    assert len(found) == 10 and len(sqls) == 1 and "MATCH" not in sqls[0]


def test_renamed_and_deleted_jobs_leave_the_index(ws, name_index_state):
    kept = make_job(ws, name="alpha-kept")
    renamed = make_job(ws, name="alpha-renamed")
    gone = make_job(ws, name="alpha-deleted")
    scope = Job.objects.filter(workspace=ws)
    renamed.display_name = "omega-renamed"
    renamed.save()
    Job.objects.filter(pk=kept.pk).update(display_name="ALPHA-kept-by-update")
    gone.delete()
    Job.objects.bulk_create([Job(workspace=ws, display_name="alpha-bulk", created_at=T0)])
    assert names(listing.page(scope, filters(q="alpha")).jobs) == ["alpha-bulk", "ALPHA-kept-by-update"]
    assert names(listing.page(scope, filters(q="omega")).jobs) == ["omega-renamed"]
    assert names(listing.page(scope, filters(q="deleted")).jobs) == []
    if connection.vendor == "sqlite":
        # The index itself holds no stale name (a stale one would only cost time: icontains filters again).
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT rowid FROM {listing.NAME_INDEX} WHERE {listing.NAME_INDEX} MATCH %s",
                           [listing.fts_phrase("alpha")])
            assert sorted(r[0] for r in cursor.fetchall()) == sorted(
                Job.objects.filter(display_name__icontains="alpha").values_list("pk", flat=True))


def test_fts_query_syntax_in_a_search_is_only_text(ws, named_jobs):
    if connection.vendor != "sqlite":
        pytest.skip("FTS5 query syntax")
    assert listing.fts_phrase('say "hi" AND *') == '"say ""hi"" AND *"'
    with connection.cursor() as cursor:
        for term in [*TERMS, 'x" OR "y', '" AND', "col:a", "NEAR(a b, 2)", "a*", "{a b}", '"""']:
            cursor.execute(f"SELECT rowid FROM {listing.NAME_INDEX} WHERE {listing.NAME_INDEX} MATCH %s",
                           [listing.fts_phrase(term)])  # raises on a syntax error
            cursor.fetchall()


def test_without_the_index_name_search_scans_with_the_same_results(ws, named_jobs, name_index_state):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's name index")
    before = {term: walk(Job.objects.filter(workspace=ws), q=term) for term in ("bert", "über", '"hello"')}
    listing.drop_name_index(connection)  # as on a SQLite without FTS5's trigram tokenizer (the test's transaction
    assert not listing.name_index_ready("default")  # rolls the drop back)
    with CaptureQueriesContext(connection) as ctx:
        after = {term: walk(Job.objects.filter(workspace=ws), q=term) for term in before}
    assert after == before and not any("MATCH" in q["sql"] for q in ctx.captured_queries)


def test_migrations_leave_the_index_and_its_triggers_and_repair_puts_them_back(ws, name_index_state):
    if connection.vendor != "sqlite":
        assert not listing.repair_name_index(connection)
        return
    assert listing.name_index_ready("default"), "migration 0007 installs the index with its triggers"
    job = make_job(ws, name="before-rebuild")
    # What Django's SQLite schema editor does to jobs_job for most column changes drops its triggers.
    with connection.cursor() as cursor:
        for trigger in listing.NAME_INDEX_TRIGGERS:
            cursor.execute(f"DROP TRIGGER {trigger}")
    Job.objects.filter(pk=job.pk).update(display_name="renamed-while-unindexed")
    listing._index_ready.clear()
    assert not listing.name_index_ready("default")
    assert listing.repair_name_index(connection) and listing.name_index_ready("default")
    assert not listing.repair_name_index(connection), "nothing to repair twice"
    with CaptureQueriesContext(connection) as ctx:
        found = names(listing.page(Job.objects.all(), filters(q="unindexed")).jobs)
    assert found == ["renamed-while-unindexed"] and "MATCH" in ctx.captured_queries[-1]["sql"]


def test_name_search_counts_through_the_index_or_by_status_agree(ws, named_jobs, monkeypatch, settings):
    settings.DLC_LIST_COUNT_CAP = 2
    for i, status in enumerate(["Failed", "Failed", "Failed", "Running"]):
        make_job(ws, name=f"bert-{i}", status=status)
    scope = Job.objects.filter(workspace=ws)
    expected = {"Running": "2+", "Failed": "2+"}  # + bert-pretrain, BERT-finetune, roberta-large: Running
    monkeypatch.setattr(listing, "COUNT_THROUGH_INDEX_MAX", 10**9)
    listing.name_index_ready(connection.alias)  # looked up once per process: not this test's business
    with CaptureQueriesContext(connection) as ctx:
        counts = listing.counts(scope, filters(q="BERT"))
    assert {s: str(n) for s, n in counts.by_status.items()} == expected and len(ctx.captured_queries) <= 2
    assert "GROUP BY" in ctx.captured_queries[-1]["sql"]
    monkeypatch.setattr(listing, "COUNT_THROUGH_INDEX_MAX", 2)  # the term is "too common" to count through it
    counts = listing.counts(scope, filters(q="BERT"))
    if connection.vendor == "sqlite":  # by status, capped: the same figures
        assert {s: str(n) for s, n in counts.by_status.items()} == expected
    else:  # the statuses of the first 3 matches, as lower bounds (each capped at 2)
        assert all(n.more for n in counts.by_status.values()) and 2 <= counts.total.n <= 3


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


def test_a_short_run_before_the_cursor_is_just_those_rows(ws):
    jobs = [make_job(ws, created=T0 + timedelta(seconds=i)) for i in range(15)]
    # Newest first: the cursor on the 3rd-newest row leaves only two rows before it. Topped up to a full page (as
    # it was), the page would repeat eight rows of the page the reader came from.
    page = listing.page(Job.objects.all(), filters(size=10, before=listing.encode_cursor(jobs[-3], "-created")))
    assert [j.pk for j in page.jobs] == [jobs[-1].pk, jobs[-2].pk]
    assert page.first and page.prev_cursor is None
    after = listing.page(Job.objects.all(), filters(size=10, after=page.next_cursor))
    assert [j.pk for j in after.jobs] == [j.pk for j in reversed(jobs)][2:12]


def test_no_row_left_before_the_cursor_shows_the_first_page(ws):
    jobs = [make_job(ws, created=T0 + timedelta(seconds=i)) for i in range(15)]
    page = listing.page(Job.objects.all(), filters(size=10, before=listing.encode_cursor(jobs[-1], "-created")))
    assert [j.pk for j in page.jobs] == [j.pk for j in reversed(jobs)][:10] and page.first and page.next_cursor


# Per sort, what puts a new job ahead of every other (the base jobs: names m00.., Running, T0 + i seconds).
AHEAD = {"-created": {"created": T0 + timedelta(hours=1)}, "created": {"created": T0 - timedelta(hours=1)},
         "name": {"name": "a-new"}, "-name": {"name": "z-new"}, "status": {"status": "Failed"}}


@pytest.mark.parametrize("sort", list(listing.SORTS))
def test_walking_back_after_new_jobs_repeats_none(ws, sort):
    """QA: 26 jobs at size 10, page 1 read, 2 jobs created, forward to the end, then back by `previous`: the page
    [26..17] still had a `previous`, which gave [28, 27, 26..19]: 8 jobs seen twice."""
    assert set(AHEAD) == set(listing.SORTS)
    for i in range(26):
        make_job(ws, name=f"m{i:02d}", created=T0 + timedelta(seconds=i))
    qs = Job.objects.all()
    page = listing.page(qs, filters(sort=sort, size=10))
    added = {make_job(ws, **{"name": "m-new", **AHEAD[sort]}).pk for _ in range(2)}
    while page.next_cursor:
        page = listing.page(qs, filters(sort=sort, size=10, after=page.next_cursor))
    seen = [j.pk for j in page.jobs]
    while page.prev_cursor:
        page = listing.page(qs, filters(sort=sort, size=10, before=page.prev_cursor))
        seen += [j.pk for j in page.jobs]
    assert len(seen) == len(set(seen)) == 28, "every job once, the new ones too"
    assert {j.pk for j in page.jobs} == added, "the start of the list: the new jobs alone"
    assert page.next_cursor and listing.page(qs, filters(sort=sort, size=10, after=page.next_cursor)).jobs


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


def test_counts_by_status_in_one_query_each_status_capped(ws, django_assert_num_queries):
    for status, n in [("Running", 3), ("Succeeded", 2), ("Failed", 1), ("Submitting", 1)]:
        for _ in range(n):
            make_job(ws, status=status)
    with django_assert_num_queries(1) as captured:
        counts = listing.counts(Job.objects.all())
    sql = captured.captured_queries[0]["sql"]
    # One capped subquery per known status and one for any other: never more than cap + 1 rows each.
    assert sql.count(f"LIMIT {listing.count_cap() + 1}") == len(st.ALL) + 1
    assert {s: str(n) for s, n in counts.by_status.items()} == {"Running": "3", "Succeeded": "2", "Failed": "1",
                                                                 "Submitting": "1"}
    assert (str(counts.total), str(counts.active), str(counts.finished)) == ("7", "4", "3")
    assert [c[0] for c in counts.chips()] == ["Submitting", "Running", "Succeeded", "Failed"]


def test_counts_are_exact_up_to_the_cap_and_n_plus_beyond(ws, settings):
    settings.DLC_LIST_COUNT_CAP = 3
    # "Mystery" is a status DLC might add one day: counted too, and active (it is not a known terminal one).
    for status, n in [("Running", 2), ("Failed", 3), ("Succeeded", 4), ("Queuing", 9), ("Mystery", 4)]:
        for _ in range(n):
            make_job(ws, status=status)
    counts = listing.counts(Job.objects.all())
    assert {s: str(n) for s, n in counts.by_status.items()} == {
        "Running": "2", "Failed": "3", "Succeeded": "3+", "Queuing": "3+", "Mystery": "3+"}
    # Sums of counts that stopped are lower bounds: "at least".
    assert (str(counts.total), str(counts.active), str(counts.finished)) == ("14+", "8+", "6+")
    assert [c[0] for c in counts.chips()] == ["Queuing", "Running", "Succeeded", "Failed", "Mystery"]
    settings.DLC_LIST_COUNT_CAP = 1000
    assert str(listing.counts(Job.objects.all()).total) == "22"
    assert str(listing.Tally(12345, True)) == "12,345+"


def test_counts_follow_the_other_filters_but_not_the_status(ws, users, settings):
    settings.DLC_LIST_COUNT_CAP = 2
    ann, bob = users
    for _ in range(3):
        make_job(ws, ann, name="bert-a", status="Running")
    make_job(ws, ann, name="bert-b", status="Failed", job_type="TFJob")
    make_job(ws, bob, name="bert-c", status="Failed")
    make_job(ws, ann, name="gpt", status="Running")
    make_job(ws, ann, name="bert-old", status="Failed", created=T0 - timedelta(days=3))
    f = filters(q="bert", status="Running", owner="me", created_from=T0.date().isoformat())
    counts = listing.counts(Job.objects.all(), f, user=ann)
    assert {s: str(n) for s, n in counts.by_status.items()} == {"Running": "2+", "Failed": "1"}
    f = filters(q="bert", framework="TFJob")
    assert {s: str(n) for s, n in listing.counts(Job.objects.all(), f).by_status.items()} == {"Failed": "1"}


def test_counts_of_nothing_visible_are_empty(ws, django_assert_num_queries):
    make_job(ws)
    with django_assert_num_queries(0):
        counts = listing.counts(Job.objects.none(), filters(q="job"))
    assert counts.by_status == {} and str(counts.total) == "0"


# --- the poll of active rows --------------------------------------------------------------------------------


def test_watch_lists_only_active_rows_and_parses_garbage_safely(ws):
    running = make_job(ws, status="Running")
    make_job(ws, status="Succeeded")
    text = listing.format_watch(list(Job.objects.all()))
    assert text == f"{running.pk}:Running"
    assert listing.parse_watch(text) == {running.pk: "Running"}
    assert listing.parse_watch("x:1,5,7:,:Running,9:Queuing") == {9: "Queuing"}
    assert listing.parse_watch(f"²:Running,{'9' * 5000}:Running,{10**30}:Running,12:Queuing") == {12: "Queuing"}, (
        "only ASCII digits no longer than an id: int('²') fails, and so does a 5000-digit number")


# --- tampered input: an error at its field, never a 500 -------------------------------------------------------


def cursor_of(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


@pytest.mark.parametrize(("sort", "values"), [
    ("-created", ["2026-13-45T00:00:00", 1]),  # parse_datetime raises on a well-formed impossible date
    ("-created", ["2026-01-01T00:00:00+99:00", 1]),
    ("-created", ["0001-01-01T00:00:00+14:00", 1]),  # before year 1 in UTC: OverflowError on SQLite
    ("-created", ["9999-12-31T23:59:59-14:00", 1]),
    ("-created", ["2026-01-01T00:00:00", 10**30]),
    ("name", ["a\x00b", 1]),  # PostgreSQL refuses NUL in text
    ("name", ["\ud800", 1]),  # a lone surrogate: no database can encode it
])
def test_a_tampered_cursor_is_an_error_at_its_field_and_the_first_page_is_shown(ws, sort, values):
    job = make_job(ws)
    f = filters(sort=sort, after=cursor_of({"s": sort, "v": values}), before=cursor_of({"s": sort, "v": values}))
    assert "out of date" in f.errors["after"][0] and f.after is None and f.before is None
    assert listing.page(Job.objects.all(), f).jobs == [job]


def test_a_deeply_nested_cursor_is_unreadable_not_a_recursion_error(ws):
    f = filters(after=base64.urlsafe_b64encode(b"[" * 1400).decode())
    assert "after" in f.errors and f.after is None


def test_the_next_link_after_a_long_non_ascii_name_leads_to_the_next_page(ws):
    """A cursor carries the name for the name sort: 256 emoji as JSON \\u escapes made it longer than the form
    takes, so Next showed the first page again."""
    first, second = (make_job(ws, name="😀" * 255 + digit) for digit in "12")
    page = listing.page(Job.objects.all(), listing.Filters(sort="name", size=1))
    assert page.jobs == [first]
    f = filters(sort="name", after=page.next_cursor)
    assert not f.errors and listing.page(Job.objects.all(), f).jobs == [second]


@pytest.mark.parametrize("params", [{"created_to": "9999-12-31"}, {"created_from": "0001-01-01"},
                                    {"created_from": "10000-01-01"}])
def test_dates_at_the_ends_of_the_calendar_are_an_error_at_their_field(ws, settings, params):
    settings.TIME_ZONE = "Asia/Tokyo"  # 0001-01-01 00:00 there is before year 1 in UTC
    make_job(ws)
    f = filters(**params)
    (field,) = params
    assert f.errors[field] and getattr(f, field) is None
    assert len(listing.page(Job.objects.all(), f).jobs) == 1
    assert str(listing.counts(Job.objects.all(), f).total) == "1"


def test_two_unknown_statuses_over_the_cap_are_both_lower_bounds(ws, settings):
    """The statuses the console does not know share one capped subquery: when it fills, a status counted under the
    cap may still have more, and must say so rather than a wrong exact number."""
    settings.DLC_LIST_COUNT_CAP = 3
    for status in ("BrandNewA", "BrandNewB"):
        for _ in range(3):
            make_job(ws, status=status)
    counts = listing.counts(Job.objects.all())
    assert set(counts.by_status) == {"BrandNewA", "BrandNewB"}
    for status, tally in counts.by_status.items():
        assert tally.n == 3 or tally.more, (status, str(tally))
    assert counts.total.more


def test_the_list_views_answer_tampered_parameters_with_a_page_not_a_500(client, ws):
    from jobs.models import Membership

    user = get_user_model().objects.create_user("tamper")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    job = make_job(ws, user)
    client.force_login(user)
    bad_cursor = cursor_of({"s": "-created", "v": ["2026-02-30T00:00:00", 1]})
    for url in (f"/?after={bad_cursor}", "/?created_to=9999-12-31", "/jobs/counts?created_to=9999-12-31",
                "/jobs/rows?watch=²:Running", f"/jobs/rows?watch={job.pk}:Queuing&job=²"):
        assert client.get(url).status_code == 200, url
    assert client.post("/jobs/stop", {"job": ["²", str(job.pk)]}).status_code == 302
