"""The job list through the Django test client: full page vs HTMX partial, filters in the URL, errors at the
field, pages at a fixed query cost, the poll of active rows, bulk stop, and no DLC call on the list."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import dlc, lifecycle
from jobs.models import Job

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HTMX = {"HTTP_HX_REQUEST": "true"}


def make_job(ws, owner=None, *, name="job", status="Succeeded", created=T0, **fields) -> Job:
    return Job.objects.create(workspace=ws, owner=owner, display_name=name, status=status, job_type="PyTorchJob",
                              created_at=created, **fields)


def row_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="job-(\d+)"', html)]


def link(html: str, rel: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)"[^>]*rel="{rel}"', html)
    return unescape(found.group(1)) if found else None


def test_full_page_has_form_rows_and_counts_htmx_gets_the_results_only(client, people, ws):
    mine = make_job(ws, people["alice"], name="bert-1", status="Running")
    make_job(people["elsewhere"], people["olga"], name="hidden-job")
    client.force_login(people["alice"])

    page = client.get("/").content.decode()
    assert '<form id="filters"' in page and "<html" in page
    assert row_ids(page) == [mine.pk] and "hidden-job" not in page
    assert 'hx-get="/jobs/counts" hx-trigger="load"' in page
    assert re.search(r'Running <span class="n">1</span>', client.get("/jobs/counts", **HTMX).content.decode())

    partial = client.get("/?q=bert", **HTMX).content.decode()
    assert "<html" not in partial and '<form id="filters"' not in partial
    assert partial.lstrip().startswith("<div id=\"results\">") and row_ids(partial) == [mine.pk]
    assert 'id="err-q" hx-swap-oob="true"' in partial


def test_history_restore_gets_the_whole_page(client, people, ws):
    client.force_login(people["alice"])
    answer = client.get("/?q=x", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert '<form id="filters"' in answer.content.decode()


def test_filters_come_from_the_url_and_stay_in_the_form(client, people, ws):
    alice, bob = people["alice"], people["bob"]
    a = make_job(ws, alice, name="bert-a", status="Failed")
    make_job(ws, bob, name="bert-b", status="Failed")
    make_job(ws, alice, name="gpt-a", status="Failed")
    make_job(ws, alice, name="bert-c", status="Succeeded")
    client.force_login(alice)
    html = client.get("/?q=bert&status=Failed&owner=me&framework=PyTorchJob").content.decode()
    assert row_ids(html) == [a.pk]
    assert 'value="bert"' in html and '<option value="Failed" selected>' in html
    assert '<option value="me" selected>' in html
    # Counts ignore the status filter so each chip says what choosing it would give.
    counts_url = unescape(re.search(r'hx-get="(/jobs/counts[^"]*)"', html).group(1))
    counts = client.get(counts_url, **HTMX).content.decode()
    assert re.search(r'Failed <span class="n">1</span>', counts)
    assert re.search(r'Succeeded <span class="n">1</span>', counts)
    assert re.search(r'All <span class="n">2</span>', counts)
    assert 'href="/?q=bert&amp;status=Succeeded&amp;framework=PyTorchJob&amp;owner=me"' in counts


def test_jobs_and_jobs_slash_lead_to_the_list_with_their_query(client, people, ws):
    client.force_login(people["alice"])
    for path in ("/jobs", "/jobs/"):
        answer = client.get(path, {"q": "bert", "status": "Failed"})
        assert answer.status_code == 301 and answer["Location"] == "/?q=bert&status=Failed", path
        assert client.get(path)["Location"] == "/"
    assert client.get("/jobs/", {"q": "bert"}, follow=True).status_code == 200


def test_the_job_type_filter_says_any_job_type(client, people, ws):
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    assert re.search(r'<option value=""[^>]*>Any job type</option>', html)
    assert "Any framework" not in html


def test_bad_filter_values_are_shown_at_their_field_never_a_500(client, people, ws):
    make_job(ws, people["alice"], name="kept")
    client.force_login(people["alice"])
    answer = client.get("/?created_from=31/02/2026&size=13&after=@@@")
    html = answer.content.decode()
    assert answer.status_code == 200
    assert re.search(r'id="err-created_from">Enter a date as YYYY-MM-DD', html)
    assert re.search(r'id="err-size">Choose one of: 10, 20, 50, 100.', html)
    assert re.search(r'id="cursor-error">Invalid page cursor: [^<]*out of date[^<]* Showing the first page.', html)
    both = client.get("/?after=@@@&before=@@@").content.decode()
    assert re.search(r'id="cursor-error">Invalid page cursor: [^<]*out of date[^<]* Showing the first page.', both)
    assert both.count("Invalid page cursor") == 1, "both cursors bad: said once"
    assert "kept" in html
    partial = client.get("/?created_from=nope", **HTMX).content.decode()
    assert re.search(r'id="err-created_from" hx-swap-oob="true">Enter a date', partial)


def test_next_links_walk_every_row_once_and_pages_cost_the_same_queries(client, people, ws):
    for i in range(57):
        make_job(ws, people["alice" if i % 2 else "bob"], name=f"j{i}", created=T0 + timedelta(seconds=i // 4))
    expected = list(Job.objects.filter(workspace=ws).order_by("-created_at", "-id").values_list("pk", flat=True))
    client.force_login(people["alice"])
    seen, url, queries = [], "/?size=10", []
    while url:
        with CaptureQueriesContext(connection) as ctx:
            html = client.get(url).content.decode()
        queries.append(len(ctx.captured_queries))
        seen += row_ids(html)
        url = link(html, "next")
    assert seen == expected
    assert len(set(queries)) == 1, queries
    with CaptureQueriesContext(connection) as big:
        client.get("/?size=100")
    assert len(big.captured_queries) == queries[0]
    assert not any("OFFSET" in q["sql"].upper() for q in big.captured_queries)


def test_a_page_reads_the_users_workspaces_and_roles_in_one_query(client, people, ws):
    """Session, user, the user's workspaces with their roles (top bar, current workspace, permission checks),
    the rows and the owner choices: five queries for a whole page, four for an HTMX page (SQLite's name search
    adds its plan's own, see test_listing), however many workspaces the user is in."""
    from jobs.models import Membership, Workspace

    ada = people["ada"]  # an admin: the top bar asks for the settings link too
    other = Workspace.objects.create(name="Zeta")  # after "Local": "Local" stays the current workspace
    Membership.objects.create(user=ada, workspace=other, role="viewer")
    make_job(ws, ada, name="mine")
    client.force_login(ada)
    with CaptureQueriesContext(connection) as page:
        html = client.get("/").content.decode()
    # The last FROM is the query's own table: the rows query counts each row's notes in a subquery before it.
    tables = [re.findall(r'FROM "(\w+)"', q["sql"])[-1] for q in page.captured_queries]
    assert tables == ["django_session", "auth_user", "jobs_workspace", "jobs_job", "auth_user"], tables
    assert row_ids(html) == [Job.objects.get(display_name="mine").pk]
    assert "Workspace settings" in html and html.count(f'<option value="{other.pk}"') == 1
    with CaptureQueriesContext(connection) as partial:
        client.get("/?status=Succeeded", **HTMX)
    assert len(partial.captured_queries) == 4


def top_nav(html: str) -> str:
    return re.search(r"<nav>(.*?)</nav>", html, re.S).group(1)


def test_a_viewer_is_offered_no_create_no_import_and_no_stop_but_checkboxes_to_compare(client, people, ws):
    job = make_job(ws, people["bob"], name="bobs", status="Running")
    client.force_login(people["vic"])
    with CaptureQueriesContext(connection) as page:
        html = client.get("/").content.decode()
    assert len(page.captured_queries) == 5, "what the page may offer is known without a query"
    assert row_ids(html) == [job.pk]
    assert "Create job" not in html and "Import" not in top_nav(html)
    assert 'id="stop-selected"' not in html, "a viewer stops nothing"
    # /jobs/compare shows them any job they may see: the list lets them pick, as it does a member.
    assert f'name="job" value="{job.pk}"' in html and 'id="compare-selected"' in html and "Select all" in html
    assert len(re.findall(r"<th[ >]", html)) == 8, "the checkbox column"
    poll = client.get(f"/jobs/rows?watch={job.pk}:Queuing", **HTMX).content.decode()
    assert row_ids(poll) == [job.pk] and f'name="job" value="{job.pk}"' in poll, "the poll's rows match the table"
    # QA: the poll's new row took keyboard focus away; htmx gives it back by id, the same in the table and the poll.
    for answer in (html, poll):
        assert f'value="{job.pk}" id="sel-{job.pk}"' in answer and f'id="name-{job.pk}"' in answer

    client.force_login(people["alice"])  # a member may stop their own jobs: checkboxes and the button stay
    html = client.get("/").content.decode()
    assert 'href="/jobs/new">Create job' in top_nav(html) and "Import" in top_nav(html)
    assert 'class="button primary" href="/jobs/new">Create job' in html
    assert f'name="job" value="{job.pk}"' in html and 'id="stop-selected"' in html
    assert len(re.findall(r"<th[ >]", html)) == 8
    poll = client.get(f"/jobs/rows?watch={job.pk}:Queuing", **HTMX).content.decode()
    assert f'name="job" value="{job.pk}"' in poll


def test_the_empty_list_offers_create_one_only_to_who_may_create(client, people, ws):
    client.force_login(people["vic"])
    html = client.get("/").content.decode()
    assert "No jobs yet." in html and "Create one" not in html and 'colspan="8"' in html  # ticks to compare
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    assert 'No jobs yet. <a href="/jobs/new">Create one</a>' in html and 'colspan="8"' in html


def test_stop_selected_skips_its_question_when_nothing_is_ticked(client, people, ws):
    """The question is htmx's hx-confirm; the form's htmx:confirm handler skips it when no box is ticked, so
    the request goes straight to the answer below (test_browser_list watches it in Chromium)."""
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    form = re.search(r'<form id="bulk-form"[^>]*>', html).group(0)
    assert 'hx-confirm="Stop the selected jobs?' in form
    assert "hx-on:htmx:confirm=" in form and "input[name=job]:checked" in form and "issueRequest(true)" in form
    assert "Select the jobs to stop first" in client.post("/jobs/stop", {}, **HTMX).content.decode()


def test_previous_link_returns_to_the_page_before(client, people, ws):
    for i in range(25):
        make_job(ws, people["alice"], name=f"j{i}", created=T0 + timedelta(seconds=i))
    client.force_login(people["alice"])
    first = client.get("/?size=10").content.decode()
    second = client.get(link(first, "next")).content.decode()
    back = client.get(link(second, "prev")).content.decode()
    assert row_ids(back) == row_ids(first) and link(back, "prev") is None


def test_back_to_the_start_after_new_jobs_shows_only_them_with_first_and_next_links(client, people, ws):
    # QA: the page before the first one read, once jobs were added, was a full first page repeating 8 rows.
    for i in range(26):
        make_job(ws, people["alice"], name=f"j{i}", created=T0 + timedelta(seconds=i))
    client.force_login(people["alice"])
    first = client.get("/?size=10").content.decode()
    new = [make_job(ws, people["alice"], name=f"new{i}", created=T0 + timedelta(hours=1, seconds=i)).pk
           for i in range(2)]
    second = client.get(link(first, "next")).content.decode()
    back = client.get(link(second, "prev")).content.decode()
    assert row_ids(back) == row_ids(first)
    start = client.get(link(back, "prev"), **HTMX).content.decode()
    assert row_ids(start) == new[::-1] and link(start, "prev") is None and link(start, "first")
    assert row_ids(client.get(link(start, "next")).content.decode()) == row_ids(first)


def test_counts_are_one_capped_query_loaded_after_the_rows(client, people, ws, settings):
    settings.DLC_LIST_COUNT_CAP = 2
    for status in ["Running", "Running", "Running", "Failed"]:
        make_job(ws, people["alice"], status=status)
    client.force_login(people["alice"])
    with CaptureQueriesContext(connection) as page:
        client.get("/")
    # (A row's note count, jobs.notes, is a COUNT inside the rows query: not a count of the list.)
    assert not any("COUNT(" in q["sql"].upper() and "JOBS_JOBNOTE" not in q["sql"].upper()
                   for q in page.captured_queries)
    with CaptureQueriesContext(connection) as counting:
        html = client.get("/jobs/counts", **HTMX).content.decode()
    on_jobs = [q["sql"] for q in counting.captured_queries if 'FROM "jobs_job"' in q["sql"]]
    assert len(on_jobs) == 1 and "LIMIT 3" in on_jobs[0]
    assert re.search(r'All <span class="n">3\+</span>.*Active <span class="n">2\+</span>', html, re.S)
    assert re.search(r'Running <span class="n">2\+</span>.*Failed <span class="n">1</span>', html, re.S)


def test_a_row_shows_what_the_job_says(client, people, ws):
    from django.template import Context, Template

    started = T0 + timedelta(minutes=1)
    done = make_job(ws, people["alice"], name="<b>done</b>", status="Failed", started_at=started,
                    finished_at=started + timedelta(hours=2, minutes=5), dlc_job_id="dlc-123",
                    stop_error={"Code": "Forbidden.Stop", "Message": 'No "way"'})
    bare = Job.objects.create(workspace=ws, display_name="bare", status="Submitting", created_at=T0)
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    # The row's values are worked out in Python (jobs.listing.rows): they must read as the template filters did,
    # and the duration as the job page writes it.
    old = Template('{{ t|date:"c" }}|{{ t|date:"Y-m-d H:i:s" }}').render(
        Context({"t": done.created_at})).split("|") + ["2h 5m"]
    row = re.search(rf'<tr id="job-{done.pk}".*?</tr>', html, re.S).group(0)
    name = "&lt;b&gt;done&lt;/b&gt;"
    assert f'<a href="/jobs/{done.pk}" id="name-{done.pk}" title="{name}">{name}</a>' in row
    assert '<span class="badge danger">Failed</span>' in row
    assert '<div class="error small" title="No &quot;way&quot;">Stop failed: Forbidden.Stop</div>' in row
    assert f'<time datetime="{old[0]}">{old[1]}</time>' in row and f"<td>{old[2]}</td>" in row
    assert "<td>alice</td>" in row and '<td class="mono">dlc-123</td>' in row
    row = re.search(rf'<tr id="job-{bare.pk}".*?</tr>', html, re.S).group(0)
    assert '<span class="badge pending">Waiting to submit</span>' in row and "Stop failed" not in row
    assert row.count("<td>—</td>") == 3 and '<td class="mono">—</td>' in row


def test_duration_reads_as_on_the_job_page(client, people, ws):
    """The list said "0 minutes" (timesince) for a job the job page said ran 3s: both use jobpage.human_duration."""
    from jobs import jobpage

    spans = {"quick": timedelta(seconds=3), "minutes": timedelta(minutes=4, seconds=7), "days": timedelta(days=1)}
    jobs = {name: make_job(ws, people["alice"], name=name, started_at=T0, finished_at=T0 + span,
                           status_history=[{"Status": "Running", "StartTime": "2026-03-01T12:00:00Z",
                                            "EndTime": (T0 + span).strftime("%Y-%m-%dT%H:%M:%SZ")},
                                           {"Status": "Succeeded", "StartTime": (T0 + span).isoformat()}])
            for name, span in spans.items()}
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    for name, expected in [("quick", "3s"), ("minutes", "4m 7s"), ("days", "1d")]:
        row = re.search(rf'<tr id="job-{jobs[name].pk}".*?</tr>', html, re.S).group(0)
        assert f"<td>{expected}</td>" in row, name
        page = client.get(f"/jobs/{jobs[name].pk}").content.decode()
        running = re.search(r"Running</span>(.*?)</li>", page, re.S).group(1)
        assert f'<span class="muted">{expected}</span>' in running, name
        assert jobpage.human_duration(spans[name]) == expected


def test_name_search_with_query_syntax_and_accents_is_just_text(client, people, ws):
    quoted = make_job(ws, people["alice"], name='run "A" AND (b)*')
    accent = make_job(ws, people["alice"], name="Über-lauf")
    client.force_login(people["alice"])
    # icontains folds case outside ASCII on PostgreSQL (UPPER) but not on SQLite (LIKE); the name index keeps each.
    folded = [accent.pk] if connection.vendor == "postgresql" else []
    for term, expected in [('"A" AND', [quoted.pk]), ("(b)*", [quoted.pk]), ('"', [quoted.pk]),
                           ("über", folded), ("Über", [accent.pk]), ("ber-lau", [accent.pk])]:
        answer = client.get("/", {"q": term}, **HTMX)
        assert answer.status_code == 200 and row_ids(answer.content.decode()) == expected, term
        counts = client.get("/jobs/counts", {"q": term}, **HTMX)
        assert counts.status_code == 200


def test_only_active_rows_are_polled_and_polling_stops_when_none_is_active(client, people, ws):
    running = make_job(ws, people["alice"], status="Running")
    make_job(ws, people["alice"], status="Succeeded")
    client.force_login(people["alice"])
    html = client.get("/").content.decode()
    poller = re.search(r'<div id="row-poller"[^>]*>', html).group(0)
    assert f"watch={running.pk}%3ARunning" in poller and 'hx-trigger="every 2s"' in poller
    assert html.count("hx-trigger=\"every") == 1, "one poll for the page, none per row"

    html = client.get("/?status=finished").content.decode()
    poller = re.search(r'<div id="row-poller"[^>]*>', html).group(0)
    assert "hx-trigger" not in poller and 'data-polling="no"' in poller


def test_poll_re_renders_only_moved_rows_keeps_their_checkbox_and_goes_quiet(client, people, ws):
    moved = make_job(ws, people["alice"], status="Succeeded")
    still = make_job(ws, people["alice"], status="Queuing")
    client.force_login(people["alice"])
    answer = client.get(f"/jobs/rows?watch={moved.pk}:Running,{still.pk}:Queuing&job={moved.pk}", **HTMX)
    html = answer.content.decode()
    assert row_ids(html) == [moved.pk]
    assert re.search(rf'<tr id="job-{moved.pk}" data-status="Succeeded" hx-swap-oob="true">', html)
    assert re.search(rf'name="job" value="{moved.pk}"[^>]*checked', html)
    assert 'id="status-counts" class="counts" hx-swap-oob="true"' in html
    poller = re.search(r'<div id="row-poller"[^>]*>', html).group(0)
    assert f"watch={still.pk}%3AQueuing" in poller and str(moved.pk) + "%3A" not in poller

    quiet = client.get(f"/jobs/rows?watch={still.pk}:Queuing", **HTMX).content.decode()
    assert row_ids(quiet) == [] and "status-counts" not in quiet, "nothing moved: nothing re-rendered"
    still.status = "Failed"
    still.save()
    done = client.get(f"/jobs/rows?watch={still.pk}:Queuing", **HTMX).content.decode()
    assert row_ids(done) == [still.pk]
    assert "hx-trigger" not in re.search(r'<div id="row-poller"[^>]*>', done).group(0)


def test_poll_never_shows_jobs_outside_the_users_workspaces(client, people, ws):
    other = make_job(people["elsewhere"], people["olga"], name="secret-name", status="Failed")
    client.force_login(people["alice"])
    html = client.get(f"/jobs/rows?watch={other.pk}:Running", **HTMX).content.decode()
    assert "secret-name" not in html and row_ids(html) == []


def test_the_list_never_calls_dlc(client, people, ws, localdlc):
    for i in range(5):
        make_job(ws, people["alice"], name=f"r{i}", status="Running", dlc_job_id=f"dlc-fake-{i}")
    client.force_login(people["alice"])
    before = localdlc.stats()["total"]
    client.get("/")
    client.get("/?status=active", **HTMX)
    client.get("/jobs/rows?watch=" + ",".join(f"{j.pk}:Queuing" for j in Job.objects.all()), **HTMX)
    assert localdlc.stats()["total"] == before


# --- bulk stop ----------------------------------------------------------------------------------------------
# The StopJob call itself is a Celery task (jobs.lifecycle); here the request's part: who may stop what, and
# one result per job. The browser tests watch a real stop reach localdlc.


def test_bulk_stop_reports_one_result_per_job_and_acts_only_where_it_applies(client, people, ws):
    alice = people["alice"]
    mine = make_job(ws, alice, name="mine-running", status="Running", dlc_job_id="dlc-mine")
    finished = make_job(ws, alice, name="mine-finished", status="Succeeded", dlc_job_id="dlc-done")
    theirs = make_job(ws, people["bob"], name="bobs-running", status="Running", dlc_job_id="dlc-bob")
    hidden = make_job(people["elsewhere"], people["olga"], name="hidden", status="Running", dlc_job_id="dlc-h")
    client.force_login(alice)

    answer = client.post("/jobs/stop", {"job": [mine.pk, finished.pk, theirs.pk, hidden.pk]}, **HTMX)
    html = answer.content.decode()
    results = dict(re.findall(r'data-job="(\d+)" data-result="([^"]+)"', html))
    assert results == {str(mine.pk): "stopping", str(finished.pk): "already-finished",
                       str(theirs.pk): "not-permitted", str(hidden.pk): "not-found"}
    assert "Stop requested" in html and "Not permitted" in html and "Already finished" in html
    assert "hidden" not in html, "a job outside the user's workspaces is not even named"
    # The acted-on rows come back out of band, already saying Stopping.
    assert re.search(rf'<tr id="job-{mine.pk}" data-status="Stopping" hx-swap-oob="true">', html)
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert statuses[mine.pk] == "Stopping"
    assert (statuses[theirs.pk], statuses[hidden.pk], statuses[finished.pk]) == ("Running", "Running", "Succeeded")
    assert Job.objects.get(pk=theirs.pk).stop_requested_at is None


def test_bulk_stop_lists_a_job_sent_twice_once_and_names_the_values_that_are_no_job_id(client, people, ws):
    # QA: job=10&job=10&job=abc&job=-1 listed job 10 "Stop requested" twice and said nothing of abc and -1.
    job = make_job(ws, people["alice"], name="twice", status="Running", dlc_job_id="dlc-twice")
    client.force_login(people["alice"])
    html = client.post("/jobs/stop", {"job": [job.pk, job.pk, "abc", "-1", "abc"]}, **HTMX).content.decode()
    assert re.findall(r'data-job="(\d+)" data-result="([^"]+)"', html) == [(str(job.pk), "stopping")]
    assert "Ignored, not job ids: &#x27;abc&#x27;, &#x27;-1&#x27;." in html
    answer = client.post("/jobs/stop", {"job": [job.pk, "x1"]}, follow=True)
    page = answer.content.decode()
    assert page.count("twice: ") == 1 and "Ignored, not job ids: &#x27;x1&#x27;." in page
    assert "Ignored" not in client.post("/jobs/stop", {"job": [job.pk]}, **HTMX).content.decode()


def test_admin_may_stop_anyones_job_viewer_no_ones(client, people, ws):
    job = make_job(ws, people["bob"], name="bobs", status="Running", dlc_job_id="dlc-b")
    client.force_login(people["vic"])
    html = client.post("/jobs/stop", {"job": [job.pk]}, **HTMX).content.decode()
    assert f'data-job="{job.pk}" data-result="not-permitted"' in html
    client.force_login(people["ada"])
    html = client.post("/jobs/stop", {"job": [job.pk]}, **HTMX).content.decode()
    assert f'data-job="{job.pk}" data-result="stopping"' in html


def test_bulk_stop_without_htmx_redirects_with_one_message_per_job(client, people, ws):
    job = make_job(ws, people["alice"], name="plain-form", status="Succeeded")
    client.force_login(people["alice"])
    answer = client.post("/jobs/stop", {"job": [job.pk]}, follow=True)
    assert answer.redirect_chain[-1][0] == "/"
    assert "plain-form: Already finished" in answer.content.decode()


def test_bulk_stop_with_nothing_selected_says_so(client, people, ws):
    client.force_login(people["alice"])
    html = client.post("/jobs/stop", {}, **HTMX).content.decode()
    assert "Select the jobs to stop first" in html


def test_a_stop_dlc_refused_shows_on_the_row_and_wakes_the_poll(client, people, ws):
    job = make_job(ws, people["alice"], name="refused", status="Stopping", dlc_job_id="dlc-r")
    client.force_login(people["alice"])
    watch = re.search(r'watch=([^"&]+)', client.get("/").content.decode()).group(1)
    lifecycle.stop_failed(job.pk, dlc.DLCError("Forbidden.Stop", "The job cannot be stopped now.", "RID-9"))
    html = client.get(f"/jobs/rows?watch={unescape(watch).replace('%3A', ':')}", **HTMX).content.decode()
    assert row_ids(html) == [job.pk]
    assert "Stop failed: Forbidden.Stop" in html


def test_tag_and_idle_filters_show_as_chips_keep_in_links_err_at_tag_and_cost_a_query_per_tag(client, people, ws):
    alice = people["alice"]
    tagged = [make_job(ws, alice, name=f"t{i}", created=T0 + timedelta(seconds=i),
                       body={"Settings": {"Tags": {"team": "vision", "run": str(i)}}}) for i in range(12)]
    make_job(ws, alice, name="untagged")
    client.force_login(alice)
    with CaptureQueriesContext(connection) as plain:
        client.get("/?size=10")
    with CaptureQueriesContext(connection) as filtered:
        html = client.get("/?size=10&tag=team=vision&tag=run").content.decode()
    assert len(filtered.captured_queries) == len(plain.captured_queries) + 2  # one look-up per tag
    assert row_ids(html) == [job.pk for job in tagged[::-1][:10]]
    # Each tag a chip whose × leads to the list without it; the form sends the tags on (form="filters").
    assert re.search(r'<input type="hidden" name="tag" value="team=vision" form="filters">.*'
                     r'<a href="/\?size=10&amp;tag=run"', html, re.S)
    assert "tag=team%3Dvision&tag=run" in link(html, "next")
    assert row_ids(client.get(link(html, "next")).content.decode()) == [tagged[1].pk, tagged[0].pk]
    partial = client.get("/?tag=team+vision&idle=maybe", **HTMX).content.decode()
    assert re.search(r'id="err-tag" hx-swap-oob="true">&#x27;team vision&#x27; is not a tag', partial)
    assert re.search(r'id="err-idle" hx-swap-oob="true">Use idle=1', partial)
    Job.objects.filter(pk=tagged[3].pk).update(status="Running", idle_since=T0)
    assert row_ids(client.get("/?idle=1&tag=team").content.decode()) == [tagged[3].pk]


def test_the_chosen_status_count_says_so_to_a_screen_reader_and_each_filter_names_its_error(client, people, ws):
    """A11y QA: the chosen status count was marked by its colour only (nothing for a screen reader), and a filter's
    error sat beside its field unconnected to it, so a screen reader on the field never heard it."""
    make_job(ws, people["alice"], status="Running")
    make_job(ws, people["alice"], status="Failed")
    client.force_login(people["alice"])
    counts = client.get("/jobs/counts?status=Running", **HTMX).content.decode()
    assert re.findall(r'<a id="count-([a-z]+)"[^>]*aria-current="true"', counts) == ["running"]
    unfiltered = client.get("/jobs/counts", **HTMX).content.decode()
    assert re.findall(r'<a id="count-([a-z]+)"[^>]*aria-current="true"', unfiltered) == ["all"]

    html = client.get("/?created_from=nope&tag=team+vision").content.decode()
    form = re.search(r'<form id="filters".*?</form>', html, re.S)[0]
    controls = re.findall(r'<(?:input|select) [^>]*?name="([a-z_]+)"[^>]*>', form)
    described = dict(re.findall(r'<(?:input|select) [^>]*?name="([a-z_]+)"[^>]*aria-describedby="([^"]+)"', form))
    assert set(controls) - {"tag"} == set(described), "every filter control (the chips' hidden tags aside)"
    for target in described.values():
        assert f'<div class="error" id="{target}">' in form, target
    assert re.search(r'id="err-created_from">Enter a date', form) and described["created_from"] == "err-created_from"
    assert re.search(r'id="err-tag">&#x27;team vision&#x27; is not a tag', form) and described["tag_add"] == "err-tag"
