"""jobs.podlogs without a request or DLC: the time cursor and its checks, the live window and tail chunks (their
line numbers where known, their colours carried from request to request), the archive's numbered first view, when
a tail stops following, search and marking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import pytest

from jobs import ansi, logarchive, podlogs
from jobs.jobpage import PodRow
from jobs.models import Job

NOW = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)
POD_CREATED = "2026-03-01T11:50:00Z"


def job(status: str = "Running", **fields) -> Job:
    pods = [{"PodId": "j-worker-0", "Type": "Worker", "Status": "Running", "GmtCreateTime": POD_CREATED}]
    return Job(display_name="j", status=status, dlc_job_id="dlc-j", created_at=NOW - timedelta(minutes=11),
               pods=pods, **fields)


def pod(status: str = "Running", end: datetime | None = None) -> PodRow:
    return PodRow("j-worker-0", "Worker", 0, status, "", None, end)


def texts(chunk: podlogs.Chunk) -> list[str]:
    return [str(text) for _, text in chunk.lines]


# --- the cursor ------------------------------------------------------------------------------------------


def test_a_cursor_is_the_instant_in_microseconds_and_round_trips_exactly():
    assert podlogs.encode_cursor(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == 1_000_005
    for instant in (NOW, NOW + timedelta(microseconds=1), datetime(2038, 1, 19, 3, 14, 8, 999_999, tzinfo=UTC)):
        assert podlogs.decode_cursor(podlogs.encode_cursor(instant)) == instant


def test_reads_stop_a_settle_lag_before_now():
    assert podlogs.settled(NOW) == NOW - podlogs.SETTLE
    assert timedelta(0) < podlogs.SETTLE <= timedelta(seconds=5), "long enough for ingestion, short to wait for"


def test_the_cursor_the_console_sends_is_accepted():
    j = job()
    sent = podlogs.encode_cursor(podlogs.settled(NOW))
    assert podlogs.parse_cursor(str(sent), j, "j-worker-0", NOW) == podlogs.settled(NOW)
    start, _ = logarchive.pod_range(j, j.pods[0])
    assert podlogs.parse_cursor(str(podlogs.encode_cursor(start)), j, "j-worker-0", NOW) == start
    ahead = NOW + podlogs.CURSOR_AHEAD
    assert podlogs.parse_cursor(str(podlogs.encode_cursor(ahead)), j, "j-worker-0", NOW) == ahead


@pytest.mark.parametrize(("raw", "says"), [
    ("", "microseconds since 1970"), ("abc", "microseconds since 1970"), ("-5", "microseconds since 1970"),
    ("1.5", "microseconds since 1970"), ("2026-03-01T12:00:00Z", "microseconds since 1970"),
    (" 123", "microseconds since 1970"), ("9" * 18, "microseconds since 1970"), ("١٢٣", "microseconds since 1970"),
    ("9" * 17, "in the future"), ("0", "before this pod"),
])
def test_a_malformed_or_impossible_cursor_is_refused_with_a_reason(raw, says):
    with pytest.raises(podlogs.BadCursor, match=says):
        podlogs.parse_cursor(raw, job(), "j-worker-0", NOW)


def test_a_cursor_just_past_the_allowed_bounds_is_refused():
    j = job()
    start, _ = logarchive.pod_range(j, j.pods[0])
    floor = min(start, j.created_at - logarchive.MARGIN)
    assert podlogs.parse_cursor(str(podlogs.encode_cursor(floor)), j, "j-worker-0", NOW) == floor
    too_early = podlogs.encode_cursor(floor - timedelta(microseconds=1))
    too_late = podlogs.encode_cursor(NOW + podlogs.CURSOR_AHEAD + timedelta(microseconds=1))
    for raw in (too_early, too_late):
        with pytest.raises(podlogs.BadCursor):
            podlogs.parse_cursor(str(raw), j, "j-worker-0", NOW)


def test_a_cursor_sent_before_the_pod_restarted_is_still_accepted():
    """A pod restarted under its name (restart policy, fault tolerance) is listed with a later GmtCreateTime. The
    page opened before keeps tailing from its cursor: a 400 there would go unseen (htmx swaps no error) and the
    tail would ask again every second, for nothing, while the page said "Following the log"."""
    j = job()
    sent = podlogs.encode_cursor(podlogs.settled(NOW - timedelta(minutes=5)))
    j.pods[0]["GmtCreateTime"] = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert podlogs.parse_cursor(str(sent), j, "j-worker-0", NOW) == podlogs.decode_cursor(sent)
    with pytest.raises(podlogs.BadCursor, match="before this pod"):
        podlogs.parse_cursor(str(podlogs.encode_cursor(j.created_at - timedelta(minutes=2))), j, "j-worker-0", NOW)


# --- live chunks -----------------------------------------------------------------------------------------


def test_a_live_window_carries_its_cursor_says_whether_it_came_back_full_and_is_numbered_only_if_not():
    cursor = podlogs.settled(NOW)
    short = podlogs.window(["a", "b <b>"], cursor, size=3)
    assert short.lines == [(1, "a"), (2, "b &lt;b&gt;")] and short.live, "short: the log from its first line"
    assert short.cursor == podlogs.encode_cursor(cursor) and short.read == 2 and not short.full
    assert short.number == 2, "the tail numbers on from here"
    full = podlogs.window(["a", "b", "c"], cursor, size=3)
    assert full.full and full.read == 3 and full.skipped == 0
    assert full.lines == [(None, "a"), (None, "b"), (None, "c")] and full.number is None, \
        "earlier lines were not read: their count, so these lines' numbers, are not known"
    ended = podlogs.window(["a"], None)
    assert not ended.live and ended.cursor is None and ended.lines == [(1, "a")], "an ended job: no tail"
    assert not podlogs.following(job("Succeeded", finished_at=NOW), pod(), ended.cursor)


def test_a_searched_window_keeps_the_matches_and_counts_what_it_searched():
    chunk = podlogs.window(["loss=1", "LOSS=2", "lr=3"], podlogs.settled(NOW), "loss", size=3)
    assert texts(chunk) == ["<mark>loss</mark>=1", "<mark>LOSS</mark>=2"]
    assert chunk.read == 3 and chunk.full, "the note says the search covered only the window"


def test_a_search_term_is_trimmed_and_an_over_long_one_refused_by_its_length():
    assert podlogs.parse_query("  loss=1 ") == "loss=1" and podlogs.parse_query("") == ""
    assert podlogs.parse_query("x" * podlogs.QUERY_MAX_CHARS + "   ") == "x" * podlogs.QUERY_MAX_CHARS
    with pytest.raises(podlogs.BadQuery, match=r"at most 200 characters; this one has 201\."):
        podlogs.parse_query("x" * 201)


def test_a_tail_chunk_sends_the_matching_lines_and_skips_beyond_its_limit_saying_how_many():
    cursor = podlogs.settled(NOW)
    chunk = podlogs.burst([f"l{i}" for i in range(10)], cursor, limit=4)
    assert texts(chunk) == ["l6", "l7", "l8", "l9"] and chunk.skipped == 6
    assert chunk.cursor == podlogs.encode_cursor(cursor)
    searched = podlogs.burst(["tick 1", "tock", "tick 2"], cursor, "TICK")
    assert texts(searched) == ["<mark>tick</mark> 1", "<mark>tick</mark> 2"] and searched.skipped == 0
    assert podlogs.burst([], cursor).lines == []
    cut = podlogs.burst(["l8", "l9"], cursor, cut=True)
    assert cut.cut and texts(cut) == ["l8", "l9"] and not chunk.cut, "lines before those read were never read"


def test_tail_lines_are_numbered_on_from_the_number_carried_and_not_after_lines_left_unread():
    cursor = podlogs.settled(NOW)
    chunk = podlogs.burst(["x", "y", "z"], cursor, number=10)
    assert chunk.lines == [(11, "x"), (12, "y"), (13, "z")] and chunk.number == 13
    searched = podlogs.burst(["tick", "tock", "tick"], cursor, "tick", number=10)
    assert [n for n, _ in searched.lines] == [11, 13] and searched.number == 13, "every line read counts"
    over = podlogs.burst([f"l{i}" for i in range(10)], cursor, limit=4, number=0)
    assert [n for n, _ in over.lines] == [7, 8, 9, 10] and over.number == 10, "skipped lines were read: counted"
    cut = podlogs.burst(["l8", "l9"], cursor, cut=True, number=5)
    assert [n for n, _ in cut.lines] == [None, None] and cut.number is None, "lines never read: no guess"
    unknown = podlogs.burst(["a"], cursor)
    assert unknown.lines == [(None, "a")] and unknown.number is None
    assert podlogs.burst([], cursor, number=7).number == 7


def test_colours_carry_from_a_window_through_each_tail_request():
    cursor = podlogs.settled(NOW)
    first = podlogs.window(["plain", "\x1b[1;31mTraceback:"], cursor, size=5)
    assert texts(first)[1] == '<span class="ansi-bold ansi-red">Traceback:</span>'
    assert first.style == ansi.Style(fg=1, bold=True)
    query = dict(parse_qsl(first.tail_query))
    assert query == {"since": str(first.cursor), "n": "2", "sgr": "1;31"}
    number, style = podlogs.parse_carried(query)
    assert (number, style) == (2, first.style)
    more = podlogs.burst(["  File x.py", "boom\x1b[0m", "after"], cursor, number=number, style=style)
    assert texts(more) == ['<span class="ansi-bold ansi-red">  File x.py</span>',
                           '<span class="ansi-bold ansi-red">boom</span>', "after"]
    assert more.style == ansi.DEFAULT and more.tail_query == f"since={more.cursor}&n=5", "no colours to carry"
    searched = podlogs.burst(["\x1b[32mok", "nope", "match\x1b[0m", "match"], cursor, "match")
    assert texts(searched) == ['<span class="ansi-green"><mark>match</mark></span>', "<mark>match</mark>"], \
        "lines not shown still set the colours"
    again = podlogs.unchanged(NOW, 7, ansi.Style(fg=2))
    assert again.lines == [] and again.tail_query == f"since={podlogs.encode_cursor(NOW)}&n=7&sgr=32"


@pytest.mark.parametrize(("params", "says"), [
    ({"n": "-1"}, "`n`"), ({"n": "1.5"}, "`n`"), ({"n": ""}, "`n`"), ({"n": "9" * 13}, "`n`"),
    ({"sgr": "1;31m"}, "`sgr`"), ({"sgr": "<b>"}, "`sgr`"), ({"sgr": "1;" * 30}, "`sgr`"),
])
def test_a_malformed_line_number_or_colour_state_is_refused_with_a_reason(params, says):
    with pytest.raises(podlogs.BadCursor, match=says):
        podlogs.parse_carried(params)
    assert podlogs.parse_carried({}) == (None, ansi.DEFAULT), "both optional: a page from before them still tails"
    assert podlogs.parse_carried({"n": "0", "sgr": "38;5;196"}) == (0, ansi.Style(fg=9))


def test_the_tail_asks_with_its_line_number_and_colours():
    from django.template.loader import render_to_string

    chunk = podlogs.burst(["\x1b[33mwarn"], podlogs.settled(NOW), number=41)
    running = job(pk=5)
    html = render_to_string("jobs/_log_chunk.html", {"job": running, "pod": pod(), "q": "", "chunk": chunk,
                                                     "following": True, "error": None})
    assert f"?since={chunk.cursor}&amp;n=42&amp;sgr=33" in html
    assert '<div class="ln" data-n="42"><span class="no">42</span><span class="ansi-yellow">warn</span></div>' in html


def test_no_time_has_settled_since_the_cursor_means_no_dlc_call_and_the_same_cursor():
    # A cursor a little ahead (another web server's clock) is accepted; nothing is asked until time passes it.
    j = job()  # it has no workspace: asking DLC would raise
    ahead = podlogs.settled(NOW) + timedelta(seconds=1)
    chunk = podlogs.tail(j, "j-worker-0", ahead, now=NOW)
    assert chunk.lines == [] and chunk.cursor == podlogs.encode_cursor(ahead)


# --- following -------------------------------------------------------------------------------------------


def test_a_tail_follows_a_running_pod_and_an_ended_one_until_its_end_has_settled():
    cursor = podlogs.encode_cursor(NOW)
    assert podlogs.following(job(), pod(), cursor)
    assert not podlogs.following(job(), pod(), None), "an archived log has nothing more to come"
    ended = NOW - timedelta(seconds=1)
    assert podlogs.following(job(), pod("Succeeded", ended), cursor)
    assert not podlogs.following(job(), pod("Succeeded", ended), podlogs.encode_cursor(ended + podlogs.END_SLACK))
    assert not podlogs.following(job(), pod("Failed"), cursor), "no end time: nothing to wait for"
    done = job("Succeeded", finished_at=NOW)
    assert podlogs.following(done, pod("Running"), cursor), "the job's end counts when the pod's is unknown"
    assert not podlogs.following(done, pod("Running"), podlogs.encode_cursor(NOW + podlogs.END_SLACK))
    assert podlogs.END_SLACK > timedelta(seconds=1), "end times are cut to the second"


def test_a_pending_pod_or_one_without_a_start_time_has_not_started_and_is_still_followed():
    started = NOW - timedelta(minutes=1)
    cursor = podlogs.encode_cursor(NOW)
    for status, start, has_started in [("Pending", None, False), ("Pending", started, False), ("", None, False),
                                       ("Running", started, True), ("Running", None, True),
                                       ("Succeeded", started, True)]:
        row = PodRow("j-worker-0", "Worker", 0, status, "", start, None)
        assert row.started is has_started, (status, start)
    assert podlogs.following(job(), PodRow("j-worker-0", "Worker", 0, "Pending", "", None, None), cursor), \
        "the tail keeps asking, so the log appears once the pod runs"


# --- archived logs -------------------------------------------------------------------------------------------


def test_an_archived_log_is_numbered_from_its_first_line_and_shows_its_last_lines():
    lines = [f"line {i}" for i in range(1, 11)]
    chunk = podlogs.cut(lines, first_view=4)
    assert chunk.lines == [(7, "line 7"), (8, "line 8"), (9, "line 9"), (10, "line 10")]
    assert chunk.skipped == 6 and chunk.total == 10 and not chunk.live
    searched = podlogs.cut(lines, "LINE 1", first_view=4)
    assert [n for n, _ in searched.lines] == [1, 10] and searched.skipped == 0
    assert podlogs.cut([], "x").lines == []


def test_an_archived_view_starts_in_the_colours_set_before_it_and_a_search_follows_them_through_every_line():
    lines = ["\x1b[31mred from here", *[f"line {i}" for i in range(2, 9)], "\x1b[0mplain", "last"]
    assert texts(podlogs.cut(lines, first_view=3)) == ['<span class="ansi-red">line 8</span>', "plain", "last"]
    assert texts(podlogs.cut(lines, "LINE 7")) == ['<span class="ansi-red"><mark>line 7</mark></span>']
    assert texts(podlogs.cut(lines, "plain")) == ["<mark>plain</mark>"]


def test_an_archived_view_links_to_the_lines_before_it_by_number_and_the_start_has_no_link():
    lines = [f"line {i}" for i in range(1, 11)]
    assert podlogs.cut(lines, first_view=4).older == "upto=7"
    assert podlogs.cut(lines, "line", first_view=4).older == "upto=7"
    assert podlogs.cut(lines, first_view=10).older == "" and podlogs.cut(lines, "line 1", first_view=4).older == ""


# --- search marks ------------------------------------------------------------------------------------------


def test_highlight_escapes_and_marks_every_match_case_insensitively():
    assert podlogs.highlight("<b>Loss</b> loss", "LOSS") == "&lt;b&gt;<mark>Loss</mark>&lt;/b&gt; <mark>loss</mark>"
    assert podlogs.highlight("a & b", "") == "a &amp; b"
    assert podlogs.highlight("<x>", "<") == "<mark>&lt;</mark>x&gt;"
    assert podlogs.highlight("Straße", "SS") == "Straße", "casefold changed the length: nothing marked"
    assert podlogs.matches("Straße", "STRASSE") and not podlogs.matches("abc", "d") and podlogs.matches("x", "")


def test_download_name_and_stream():
    j = job()
    j.display_name = 'my "job"/x'
    assert podlogs.filename(j, "w-0") == "my__job__x-w-0.log"
    assert "".join(podlogs.stream(["a", "b", "c"], batch=2)) == "a\nb\nc\n"
    assert list(podlogs.stream([])) == []


@pytest.mark.parametrize(("query", "note"), [("boom", "The search covers the whole log."),
                                              ("", "The whole log is shown.")])
def test_older_lines_reaching_the_start_replace_the_note_that_said_so_far(query, note):
    from django.template.loader import render_to_string

    oob = f'<div class="muted" id="log-note" hx-swap-oob="true">{note}</div>'
    at_start = render_to_string("jobs/_log_older.html", {
        "job": job("Failed"), "pod": pod("Failed"), "q": query, "answer": True, "error": None,
        "chunk": podlogs.Chunk([(1, "boom")], read=1)})
    assert oob in at_start and "Start of the log." in at_start
    failed = render_to_string("jobs/_log_older.html", {
        "job": job("Failed"), "pod": pod("Failed"), "q": query, "answer": True, "error": "DLC is down",
        "chunk": podlogs.Chunk([])})
    assert "log-note" not in failed  # not read: the note stands


def test_every_older_lines_answer_updates_the_note_not_only_the_one_reaching_the_start():
    """QA: after two loads 11,000 lines showed but the note still said "Showing the last 1000 lines" and "99403
    earlier lines not shown": the note was replaced only at the log's start."""
    from django.template.loader import render_to_string

    context = {"job": job("Failed", pk=7), "pod": pod("Failed"), "q": "", "answer": True, "error": None}
    archived = render_to_string("jobs/_log_older.html", {**context, "chunk": podlogs.Chunk(
        [(94404, "x")], total=100403, skipped=94403, older="upto=94404")})
    assert ('<div class="muted" id="log-note" hx-swap-oob="true">\n94403 earlier lines not shown here: “Load older '
            'lines” at the top shows them.') in archived
    assert "?from=start" in archived, "the archive's start is one click away"
    live = render_to_string("jobs/_log_older.html", {**context, "chunk": podlogs.Chunk(
        [(None, "x")], read=5000, older="until=1&skip=2")})
    assert ('id="log-note" hx-swap-oob="true">Older lines are shown too: “Load older lines” at the top shows earlier '
            'ones.</div>') in live
    searched = render_to_string("jobs/_log_older.html", {**context, "q": "x", "chunk": podlogs.Chunk(
        [(None, "x")], read=5000, older="until=1&skip=2")})
    assert "Older lines were searched too: “Search older lines” at the top searches further back." in searched


def test_a_live_search_without_a_match_says_so_and_what_it_covered():
    """QA: a search of a running log with no hit showed an empty box and only "covers the last 1000 lines"."""
    from django.template.loader import render_to_string

    html = render_to_string("jobs/_logs.html", {
        "job": job(pk=7), "pod": pod(), "pods": [], "q": "zzz", "q_typed": "zzz", "q_error": "", "error": None,
        "following": True, "retrying": False, "log_search_form": "log-search",
        "chunk": podlogs.Chunk([], cursor=1, read=1000, full=True, older="until=1&skip=1000")})
    assert ("No line contains “zzz” in the last 1000 lines so far. The search covers the last 1000 lines so far: "
            "“Search older lines” at the top searches further back.") in html


def test_the_older_page_of_a_running_log_that_reaches_its_start_is_numbered_from_1(client, people, ws, localdlc):
    """QA: "Load older lines" back to line 1 of a 3,000-line running log left them unnumbered, though the page
    that reaches the start holds the log from its first line. The window before it (the last 1000) stays as it
    was: unnumbered."""
    from jobs import dlc
    from tests.test_views_job_page import HTMX, lines_of, older_link, on_localdlc, wait_for_last_line

    job = on_localdlc(ws, people["alice"], "seq 1 3000; sleep 60", until=("Running",))
    pod = job.pods[0]["PodId"]
    try:
        wait_for_last_line(ws, job, pod, "3000")
        client.force_login(people["alice"])
        panel = client.get(f"/jobs/{job.pk}/pods/{pod}/logs", **HTMX).text
        assert {n for n, _ in lines_of(panel)} == {None}, "a full window: where it starts is not known"
        answer = client.get(older_link(panel), **HTMX).text
        assert lines_of(answer) == [(n, str(n)) for n in range(1, 2001)] and older_link(answer) is None
    finally:
        dlc.stop_job(ws, job.dlc_job_id)
