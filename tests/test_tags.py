"""jobs.tags and the list's tag and idle filters: tag rows written where a job is made (never the console's own tag),
the migration's fill, `tag` (key, key=value, several, malformed) and `idle=1` through pages and counts, a fixed
number of queries, the plan on the tag index, the API's answers and the job page's tag links."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import dlc, lifecycle, listing, tags
from jobs.models import Job, JobTag, Membership, Workspace
from tests.test_job_indexes import plan

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def ws(db):
    return Workspace.objects.create(name="Tags", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")


def body(name: str, **tag_map: str) -> dict:
    return {"DisplayName": name, "JobType": "PyTorchJob", **({"Settings": {"Tags": tag_map}} if tag_map else {})}


def make_job(ws, name: str, *, created=T0, status="Succeeded", **tag_map: str) -> Job:
    return Job.objects.create(workspace=ws, display_name=name, status=status, body=body(name, **tag_map),
                              created_at=created)


def rows_of(job: Job) -> dict[str, str]:
    return dict(JobTag.objects.filter(job=job).values_list("key", "value"))


def walk(qs, **params) -> list[str]:
    """Every name, following next cursors from the first page."""
    seen, after = [], None
    for _ in range(100):
        page = listing.page(qs, listing.Filters.from_query(_query(params, after)))
        seen += [j.display_name for j in page.jobs]
        if not page.next_cursor:
            return seen
        after = page.next_cursor
    raise AssertionError("pagination does not end")


def _query(params: dict, after: str | None):
    from django.http import QueryDict

    q = QueryDict(mutable=True)
    for key, value in params.items():
        q.setlist(key, value if isinstance(value, list) else [str(value)])
    if after:
        q["after"] = after
    return q


# --- rows ----------------------------------------------------------------------------------------------------


def test_rows_are_written_with_a_new_job_never_for_the_consoles_own_tag(ws, django_assert_num_queries):
    job = Job.objects.create(workspace=ws, display_name="a", body={"Settings": {"Tags": {
        "team": "vision", "experiment": "", dlc.IDEMPOTENCY_TAG_KEY: str(uuid.uuid4())}}})
    assert rows_of(job) == {"team": "vision", "experiment": ""}
    assert JobTag.objects.get(job=job, key="team").workspace_id == ws.pk
    with django_assert_num_queries(1):  # the INSERT alone: an untagged job costs no tag query
        Job.objects.create(workspace=ws, display_name="b", body={})
    job.body = {"Settings": {"Tags": {"other": "x"}}}
    job.status = "Running"
    job.save()  # a later save (the sync's) leaves the rows alone
    assert rows_of(job) == {"team": "vision", "experiment": ""}


def test_a_clone_and_an_import_get_their_own_rows(ws):
    from jobs.views import save_and_enqueue

    source = make_job(ws, "src", team="vision")
    clone = save_and_enqueue(workspace=ws, owner=None, body=body("src-copy", team="nlp", lr="3e-4"),
                             cloned_from=source)
    assert rows_of(clone) == {"team": "nlp", "lr": "3e-4"} and rows_of(source) == {"team": "vision"}
    # A job made outside the console, as the sync's ListJobs page shows it: its tags, but no submission tag of ours.
    item = {"JobId": "dlc-imported-1", "DisplayName": "outside", "JobType": "PyTorchJob", "Status": "Running",
            "GmtCreateTime": "2026-03-01T12:00:00Z",
            "Settings": {"Tags": {"team": "audio", dlc.IDEMPOTENCY_TAG_KEY: str(uuid.uuid4())}}}
    imported = lifecycle.import_or_adopt(ws, item)
    assert imported is not None and imported.imported
    assert rows_of(imported) == {"team": "audio"}
    # Each row carries its job's creation time (DLC's for an import), which the tag's ordered index reads.
    for job in (source, clone, imported):
        assert set(JobTag.objects.filter(job=job).values_list("created_at", flat=True)) == {job.created_at}
    assert imported.created_at == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_the_migration_copies_each_jobs_creation_time_into_its_tag_rows(ws):
    import importlib

    from django.apps import apps

    jobs = [make_job(ws, f"m{i}", created=T0 + timedelta(days=i), team="vision", run=str(i)) for i in range(3)]
    JobTag.objects.update(created_at=T0 - timedelta(days=365))  # as rows written before it: no such time
    importlib.import_module("jobs.migrations.0038_jobtag_created_at").copy_created_at(apps, None)
    for job in jobs:
        assert set(JobTag.objects.filter(job=job).values_list("created_at", flat=True)) == {job.created_at}


def test_pairs_cut_long_tags_and_skip_what_is_no_tag():
    long = {"k" * 200: "v" * 300, "": "x", "n": None, dlc.IDEMPOTENCY_TAG_KEY: "t"}
    assert tags.pairs({"Settings": {"Tags": long}}) == [("k" * 128, "v" * 256), ("n", "")]
    assert tags.pairs({"Settings": {"Tags": ["not", "a", "map"]}}) == tags.pairs("junk") == []


def test_the_migrations_fill_writes_rows_for_jobs_without_any_in_batches(ws):
    jobs = [make_job(ws, f"j{i}", team="vision", run=str(i)) for i in range(5)] + [make_job(ws, "plain")]
    JobTag.objects.filter(job__in=jobs[:4]).delete()  # as before migration 0030
    assert tags.fill(Job, JobTag, batch=2) == 8
    assert all(rows_of(job) == {"team": "vision", "run": str(i)} for i, job in enumerate(jobs[:5]))
    assert tags.fill(Job, JobTag, batch=2) == 0  # rerun: nothing twice


# --- filters ---------------------------------------------------------------------------------------------------


@pytest.fixture
def tagged(ws):
    """25 jobs, one a second, newest last: every 3rd experiment=a, every 2nd team=vision, 5 of them idle."""
    made = []
    for i in range(25):
        tag_map = {**({"experiment": "a" if i % 3 == 0 else "b"}), **({"team": "vision"} if i % 2 == 0 else {})}
        job = make_job(ws, f"j{i:02d}", created=T0 + timedelta(seconds=i), status="Running" if i % 5 == 0 else
                       "Succeeded", **tag_map)
        made.append(job)
    Job.objects.filter(pk__in=[j.pk for j in made[::5]][:3]).update(idle_since=T0)  # j00, j05, j10
    Job.objects.filter(pk=made[15].pk).update(idle_since=T0, status="Stopping")  # flagged, but no longer running
    return made


def newest_first(names: list[str]) -> list[str]:
    return sorted(names, reverse=True)


@pytest.mark.parametrize("through_index", [True, False])
def test_key_key_value_and_two_tags_across_keyset_pages(ws, tagged, through_index, monkeypatch):
    """Read through the tag index (a rare tag), or checked row by row (a common one): the same pages."""
    if not through_index:
        monkeypatch.setattr(listing, "FEW_TAGGED", 1)
    jobs = Job.objects.filter(workspace=ws)
    assert walk(jobs, tag="experiment=a", size=10) == newest_first([f"j{i:02d}" for i in range(0, 25, 3)])
    assert walk(jobs, tag="team", size=10) == newest_first([f"j{i:02d}" for i in range(0, 25, 2)])
    # AND of all given: experiment=a and team (any value): every 6th.
    assert walk(jobs, tag=["experiment=a", "team"], size=10) == newest_first([f"j{i:02d}" for i in range(0, 25, 6)])
    assert walk(jobs, tag=["experiment=a", "team"], size=10, sort="name") == [f"j{i:02d}" for i in range(0, 25, 6)]
    assert walk(jobs, tag="experiment=") == []  # an empty value is a value
    assert walk(jobs, tag="nope") == []


@pytest.mark.parametrize("window", [20, 1])
def test_a_common_tag_read_from_its_index_gives_the_pages_of_the_job_order_walk(ws, tagged, window, monkeypatch):
    """A common key=value tag (FEW_TAGGED lowered) in creation order: each page from the tag's ordered index
    (listing.TagWalk), alone or with other filters, forward, backward and oldest first, the same rows as checking
    the tag along the job order. window=1: other filters keep fewer of the entries read than a page, so the page
    is read along the job order after all."""
    monkeypatch.setattr(listing, "FEW_TAGGED", 1)
    monkeypatch.setattr(listing, "TAG_WALK_ROWS_PER_ROW", window)
    jobs = Job.objects.filter(workspace=ws)
    every_2nd = newest_first([f"j{i:02d}" for i in range(0, 25, 2)])  # team=vision: 13 jobs, two pages of 10
    assert walk(jobs, tag="team=vision", size=10) == every_2nd
    assert walk(jobs, tag="team=vision", size=10, sort="created") == every_2nd[::-1]
    # Succeeded: all but every 5th (Running, and j15 Stopping); with experiment=a too: every 6th.
    assert walk(jobs, tag="team=vision", status="Succeeded", size=10) == [n for n in every_2nd if int(n[1:]) % 5]
    assert walk(jobs, tag=["team=vision", "experiment=a"], size=10) == newest_first(
        [f"j{i:02d}" for i in range(0, 25, 6)])
    assert walk(jobs, tag="team=vision", status="Running", size=10) == ["j20", "j10", "j00"]
    # Back from the second page: the first.
    first = listing.page(jobs, listing.Filters.from_query({"tag": "team=vision", "size": "10"}))
    second = listing.page(jobs, listing.Filters.from_query({"tag": "team=vision", "size": "10",
                                                            "after": first.next_cursor}))
    assert [j.display_name for j in second.jobs] == every_2nd[10:]
    back = listing.page(jobs, listing.Filters.from_query({"tag": "team=vision", "size": "10",
                                                          "before": second.prev_cursor}))
    assert [j.display_name for j in back.jobs] == every_2nd[:10] and back.next_cursor and not back.prev_cursor


@pytest.mark.parametrize("window", [20, 1])
def test_a_common_tags_jobs_made_in_the_same_second_page_by_id_as_the_job_order(ws, window, monkeypatch):
    """Imported jobs carry DLC's creation time, to the second: many share it. The tag index's pages break the tie
    by job id as the job order does, so no job is skipped or shown twice at a page's edge, in either direction,
    and another workspace's jobs with the same tag and time stay out."""
    other = Workspace.objects.create(name="Other", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local")
    for i in range(23):
        make_job(other if i % 4 == 3 else ws, f"s{i:02d}", created=T0 + timedelta(seconds=i // 9), team="vision",
                 status="Running" if i % 3 else "Succeeded")
    jobs = Job.objects.filter(workspace=ws)

    def pages(params: dict) -> tuple[list[str], list[str]]:
        """Every name following Next from the first page, then following Previous back from the last page."""
        seen, back = [], []
        page = listing.page(jobs, listing.Filters.from_query(_query(params, None)))
        while True:
            seen += [j.display_name for j in page.jobs]
            if not page.next_cursor:
                break
            page = listing.page(jobs, listing.Filters.from_query(_query(params, page.next_cursor)))
        while page.prev_cursor:
            page = listing.page(jobs, listing.Filters.from_query({**_query(params, None).dict(),
                                                                  "before": page.prev_cursor}))
            back = [j.display_name for j in page.jobs] + back
        return seen, back

    for params in ({"tag": "team=vision", "size": 10}, {"tag": "team=vision", "size": 10, "sort": "created"},
                   {"tag": "team=vision", "size": 10, "status": "Running"}):
        joined = walk(jobs, **params)  # 18 tagged jobs: read through the tag index, joined and sorted
        assert len(joined) == len(set(joined)) == (12 if "status" in params else 18)
        monkeypatch.setattr(listing, "FEW_TAGGED", 1)
        monkeypatch.setattr(listing, "TAG_WALK_ROWS_PER_ROW", window)
        forward, backward = pages(params)
        assert forward == joined, params
        assert backward == joined[:10], params
        monkeypatch.undo()


@pytest.mark.postgres
def test_a_common_tags_page_reads_its_entries_in_the_lists_order_then_their_jobs_by_id(ws, tagged, monkeypatch):
    """The walk's two queries: the tag's entries from jobtag_ws_kv_created in the page's order (no sort, an index
    range that starts at the cursor), then those jobs (by primary key on PostgreSQL). PostgreSQL joined every
    tagged job and sorted them instead (170 ms at 1M jobs for a tag on 1%, bench/RESULTS.md)."""
    monkeypatch.setattr(listing, "FEW_TAGGED", 1)
    jobs = listing.for_rows(Job.objects.filter(workspace=ws))
    first = listing.page(jobs, listing.Filters.from_query({"tag": "team=vision", "size": "10"}))
    with CaptureQueriesContext(connection) as done:
        listing.page(jobs, listing.Filters.from_query({"tag": "team=vision", "size": "10",
                                                       "after": first.next_cursor}))
    entries, rows = done.captured_queries[-2]["sql"], done.captured_queries[-1]["sql"]
    entries_plan, rows_plan_ = plan(entries), plan(rows)
    if connection.vendor == "postgresql":
        assert re.search(r"Index Only Scan (Backward )?using jobtag_ws_kv_created", entries_plan), entries_plan
        assert "created_at" in entries_plan.split("Index Cond:")[1].split("\n")[0], entries_plan
        assert "Sort" not in entries_plan, entries_plan
        # Its jobs: by primary key at 1M jobs (bench/RESULTS.md); on a test's few rows whatever it likes.
    else:
        assert re.fullmatch(r"SEARCH jobs_jobtag USING COVERING INDEX jobtag_ws_kv_created \(workspace_id=\? AND "
                            r"key=\? AND value=\? AND created_at<\?\)", entries_plan), entries_plan
        # No statistics: the job index from the cursor, each job's id checked against the entries' (a list in
        # memory), never the tag per job as the walk along the job order does.
        assert rows_plan_.startswith("SEARCH jobs_job USING INDEX job_ws_created (workspace_id=? AND created_at<?)"), \
            rows_plan_
    assert "jobs_jobtag" not in rows_plan_, rows_plan_


def test_idle_only_is_running_jobs_the_policy_flagged(ws, tagged):
    jobs = Job.objects.filter(workspace=ws)
    assert walk(jobs, idle="1") == ["j10", "j05", "j00"]
    assert walk(jobs, idle="1", tag="team=vision") == ["j10", "j00"]
    counts = listing.counts(jobs, listing.Filters.from_query(_query({"idle": "1", "tag": "team"}, None)))
    assert {s: t.n for s, t in counts.by_status.items()} == {"Running": 2}


def test_counts_follow_the_tags(ws, tagged):
    counts = listing.counts(Job.objects.filter(workspace=ws),
                            listing.Filters.from_query(_query({"tag": "experiment=a"}, None)))
    assert {s: t.n for s, t in counts.by_status.items()} == {"Running": 1, "Stopping": 1, "Succeeded": 7}


@pytest.mark.parametrize(("value", "message"), [
    ("=vision", "is not a tag"), ("team vision", "is not a tag"), ("k" * 129, "at most 128"),
    ("team=" + "v" * 257, "at most 128 characters and values at most 256"), ("team=a\x00b", "NUL"),
])
def test_a_malformed_tag_is_an_error_at_tag_and_the_good_ones_still_filter(ws, tagged, value, message):
    f = listing.Filters.from_query(_query({"tag": ["team=vision", value]}, None))
    assert message in " ".join(f.errors["tag"]) and list(f.errors) == ["tag"]
    assert f.tags == [("team", "vision")]


def test_bad_idle_and_too_many_tags_are_errors_at_their_field(ws):
    assert "idle=1" in listing.Filters.from_query({"idle": "yes"}).errors["idle"][0]
    f = listing.Filters.from_query(_query({"tag": [f"k{i}" for i in range(11)]}, None))
    assert f.errors["tag"] == ["Filter by at most 10 tags."] and len(f.tags) == 10


def test_query_round_trips_tags_and_idle(ws):
    f = listing.Filters.from_query(_query({"tag": ["team=vision", "exp", "team=vision"], "idle": "1"}, None))
    assert f.tags == [("team", "vision"), ("exp", None)]  # the same tag twice is once
    assert f.query() == {"tag": ["team=vision", "exp"], "idle": "1"}
    assert f.tag_chips() == [("team=vision", "/?tag=exp&idle=1"), ("exp", "/?tag=team%3Dvision&idle=1")]


@pytest.mark.parametrize("params", [{"tag": "team=vision"}, {"tag": ["team=vision", "experiment"]},
                                    {"tag": "experiment", "sort": "name"}])
@pytest.mark.parametrize("few", [1, 500])
def test_a_tagged_page_costs_one_query_per_tag_and_one_or_two_at_any_depth(ws, tagged, params, few, monkeypatch,
                                                                    django_assert_num_queries):
    monkeypatch.setattr(listing, "FEW_TAGGED", few)
    monkeypatch.setattr(listing, "COUNT_THROUGH_INDEX_MAX", few)
    jobs = Job.objects.filter(workspace=ws)
    per_tag = len(params["tag"]) if isinstance(params["tag"], list) else 1
    # A common key=value tag in creation order reads its index's entries, then their jobs (listing.TagWalk).
    walked = few == 1 and "sort" not in params
    first = listing.page(jobs, listing.Filters.from_query(_query({**params, "size": 10}, None)))
    assert first.next_cursor
    with django_assert_num_queries(per_tag + 1 + walked):
        listing.page(jobs, listing.Filters.from_query(_query({**params, "size": 10}, first.next_cursor)))
    with django_assert_num_queries(per_tag + 1):
        listing.counts(jobs, listing.Filters.from_query(_query(params, None)))


def rows_plan(ws, params: dict) -> str:
    jobs = listing.for_rows(Job.objects.filter(workspace=ws))
    f = listing.Filters.from_query(params)
    query = listing.apply_filters(jobs, f).order_by(*listing.ordering(f.sort))[:21]
    sql, sql_params = query.query.get_compiler(using=query.db).as_sql()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            return plan(cursor.mogrify(sql, sql_params))
    return plan(_inline(sql, sql_params))


@pytest.mark.postgres
def test_a_rare_tag_is_read_through_the_tag_index_a_common_one_checked_along_the_page_order(ws, tagged,
                                                                                             monkeypatch):
    """A rare tag: the rows query reads the workspace's key=value range of jobtag_ws_key_value, then those jobs by
    primary key; a common one (FEW_TAGGED lowered) walks the page order's index and checks each job's tag on
    one_jobtag_per_key. Never every job's tags or body. SQLite plans without statistics (as in production);
    PostgreSQL (under the `postgres` marker) is asked which index it takes when it must take one."""
    text = rows_plan(ws, {"tag": "experiment=a"})
    if connection.vendor == "postgresql":
        assert re.search(r"Index (Only )?Scan (Backward )?using jobtag_ws_(key_value|kv_created)", text), text
    else:
        assert re.search(r"SEARCH jobs_jobtag USING COVERING INDEX jobtag_ws_(key_value|kv_created) "
                         r"\(workspace_id=\? AND key=\? AND value=\?\)\nSEARCH jobs_job USING INTEGER PRIMARY KEY",
                         text), text
    with CaptureQueriesContext(connection) as counted:
        listing.counts(Job.objects.filter(workspace=ws), listing.Filters.from_query({"tag": "experiment=a"}))
    grouped = counted.captured_queries[-1]["sql"]
    text = plan(grouped)
    if connection.vendor == "postgresql":
        assert re.search(r"Index (Only )?Scan (Backward )?using jobtag_ws_(key_value|kv_created)", text), text
    else:  # the counts, exactly, from the tag's index range: no walk of the workspace's jobs
        assert re.match(r"SEARCH jobs_jobtag USING COVERING INDEX jobtag_ws_(key_value|kv_created)", text), text
    monkeypatch.setattr(listing, "FEW_TAGGED", 1)
    text = rows_plan(ws, {"tag": "experiment=a"})
    if connection.vendor == "postgresql":
        assert re.search(r"Index (Only )?Scan (Backward )?using one_jobtag_per_key", text), text
    else:
        assert "SEARCH jobs_job USING INDEX job_ws_created (workspace_id=?)" in text, text
        # A UniqueConstraint is in SQLite's CREATE TABLE: its index is named by SQLite.
        assert re.search(r"SEARCH \w+ USING INDEX (one_jobtag_per_key|sqlite_autoindex_jobs_jobtag_\d) "
                         r"\(job_id=\? AND key=\?\)", text), text
    assert "SCAN jobs_job" not in text and "SCAN jobs_jobtag" not in text, text


def _inline(sql: str, params) -> str:
    return sql % tuple(p if isinstance(p, int) else "'" + str(p).replace("'", "''") + "'" for p in params)


# --- the API and the job page ------------------------------------------------------------------------------


@pytest.fixture
def member(ws):
    user = get_user_model().objects.create_user("tagger")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    return user


def test_the_api_filters_by_tag_and_idle_and_refuses_a_malformed_tag_at_tag(client, ws, tagged, member):
    client.force_login(member)
    answer = client.get("/api/v1/jobs", {"tag": ["experiment=a", "team=vision"], "size": 10}).json()
    assert [j["name"] for j in answer["jobs"]] == ["j24", "j18", "j12", "j06", "j00"]
    page = client.get("/api/v1/jobs", {"tag": "team", "size": 10}).json()
    assert "tag=team" in page["next"]  # the next page keeps the filter
    assert len(client.get(page["next"]).json()["jobs"]) == 3
    assert len(client.get("/api/v1/jobs", {"idle": "1"}).json()["jobs"]) == 3
    refused = client.get("/api/v1/jobs", {"tag": "a b"})
    assert refused.status_code == 400 and "is not a tag" in str(refused.json())


def test_the_job_page_links_each_tag_to_the_list_filtered_by_it(client, ws, member):
    job = make_job(ws, "shown", team="vision", experiment="a b")
    client.force_login(member)
    html = client.get(f"/jobs/{job.pk}").content.decode()
    links = re.findall(r'<a class="chip mono job-tag" href="([^"]+)"[^>]*>([^<]+)</a>', html)
    assert links == [(f"/?workspace={ws.pk}&amp;tag=team%3Dvision", "team=vision"),
                     (f"/?workspace={ws.pk}&amp;tag=experiment%3Da+b", "experiment=a b")]
    listed = client.get(links[1][0].replace("&amp;", "&"), follow=True).content.decode()
    assert f'id="job-{job.pk}"' in listed and 'value="experiment=a b" form="filters"' in listed


def test_a_tag_link_opens_the_jobs_own_workspace_whichever_is_chosen_and_only_for_a_member(client, ws, member):
    """QA: on a job of workspace Local, with Second chosen, the tag link opened "Jobs in Second", empty."""
    job = make_job(ws, "in-tags", team="wizard")
    second = Workspace.objects.create(name="Second", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="second")
    Membership.objects.create(user=member, workspace=second, role=Membership.MEMBER)
    client.force_login(member)
    client.post("/workspace", {"workspace": second.pk})
    link = re.search(r'class="chip mono job-tag" href="([^"]+)"', client.get(f"/jobs/{job.pk}").content.decode())[1]
    opened = client.get(link.replace("&amp;", "&"))
    # Switched as the switcher does, then the list without the parameter: its filter form and pages stay there.
    assert opened.status_code == 302 and opened["Location"] == "/?tag=team%3Dwizard"
    listed = client.get(opened["Location"]).content.decode()
    assert "Jobs <small>in Tags</small>" in listed and f'id="job-{job.pk}"' in listed
    assert client.session["workspace_id"] == ws.pk
    # Someone not a member of the job's workspace gets nothing of it, and stays where they were.
    Membership.objects.filter(user=member, workspace=ws).delete()
    client.post("/workspace", {"workspace": second.pk})
    assert client.get(f"/?workspace={ws.pk}&tag=team%3Dwizard").status_code == 404
    assert client.get("/?workspace=x").status_code == 404
    assert client.session["workspace_id"] == second.pk


def test_an_accented_key_is_refused_saying_ascii_letters_as_the_wizard_says(ws):
    """QA: `équipe` was refused with "only letters, ...", which it is made of."""
    f = listing.Filters.from_query(_query({"tag": "équipe=a"}, None))
    assert "a key of ASCII letters (a-z, A-Z), digits, '-', '_' and '.'" in f.errors["tag"][0]
    assert "ASCII letters (a-z, A-Z)" in tags.FORMAT_HELP


def test_the_answer_that_took_the_boxs_tag_empties_the_box_and_no_other_does(client, ws, member):
    """QA: the box kept `team=vision` after Apply while its chip sent it too, so the next change sent it twice. Then
    a late answer to another change (the name search) emptied what was being typed in the box: only the answer that
    took the box's own parameter may empty it."""
    client.force_login(member)
    htmx = {"HX-Request": "true"}
    box = r'<input type="text" id="f-tag" name="tag_add" value=""[^>]* hx-swap-oob="true">'
    taken = client.get("/", {"tag_add": "team=vision"}, headers=htmx)
    assert re.search(box, taken.content.decode())
    assert taken.content.decode().count('name="tag" value="team=vision"') == 1  # the chip's, sent from now on
    assert taken["HX-Push-Url"] == "/?tag=team%3Dvision"  # the address says `tag`, as every other link does
    other = client.get("/", {"tag": "team=vision", "q": "x", "tag_add": " "}, headers=htmx)
    assert 'id="f-tag"' not in other.content.decode() and "HX-Push-Url" not in other
    refused = client.get("/", {"tag_add": "a b"}, headers=htmx).content.decode()
    assert 'id="f-tag"' not in refused and "is not a tag" in refused
    # Without JavaScript the form's GET lands on the same address; a refused tag stays in its box with its error.
    assert client.get("/", {"tag": "a", "tag_add": "team=vision"})["Location"] == "/?tag=a&tag=team%3Dvision"
    page = client.get("/", {"tag_add": "a b"}).content.decode()
    assert 'name="tag_add" value="a b"' in page and "is not a tag" in page


def test_without_reserved_drops_only_the_consoles_own_tag():
    own = {dlc.IDEMPOTENCY_TAG_KEY: "t-1"}
    kept = {"JobType": "TFJob", "Settings": {"Tags": {"team": "a", **own}, "Driver": "x"}}
    assert tags.without_reserved(kept) == {"JobType": "TFJob", "Settings": {"Tags": {"team": "a"}, "Driver": "x"}}
    assert kept["Settings"]["Tags"] == {"team": "a", **own}  # a copy: the caller's body is left alone
    assert tags.without_reserved({"JobType": "TFJob", "Settings": {"Tags": own}}) == {"JobType": "TFJob"}
    for other in ({"Settings": {"Tags": {"team": "a"}}}, {"Settings": "odd"}, [], None):
        assert tags.without_reserved(other) == other


def test_user_tags_drops_only_the_consoles_own_key_from_a_plain_map():
    mine = {"team": "a", "n": None, 7: "x", dlc.IDEMPOTENCY_TAG_KEY: "t-1"}
    assert tags.user_tags(mine) == {"team": "a", "n": None, 7: "x"}
    assert dlc.IDEMPOTENCY_TAG_KEY in mine  # a new dict: the caller's map is left alone
    assert tags.user_tags({}) == {}
    # The one test behind every shape (wizard rows in jobs.clone, maps here and in jobs.compare).
    assert tags.is_reserved(dlc.IDEMPOTENCY_TAG_KEY)
    assert not any(tags.is_reserved(k) for k in ("team", dlc.IDEMPOTENCY_TAG_KEY.upper(), "", None))



def test_the_admin_site_cannot_move_a_jobs_creation_time_away_from_its_tag_rows(ws, admin_client):
    job = make_job(ws, "a", team="vision")
    page = admin_client.get(f"/admin/jobs/job/{job.pk}/change/")
    assert page.status_code == 200
    assert 'name="created_at' not in page.content.decode()  # shown, not a field
