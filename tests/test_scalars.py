"""jobs.scalars: METRIC lines parsed (both forms, malformed ones ignored, steps), downsampled, the pod chosen,
stored from the archive when a job ends (and lazily for a job archived before), and the job page's "Training
metrics" section, through the real localdlc and the real SDK for a job that prints METRIC lines."""

from __future__ import annotations

import re
import sys
import time
import zlib

import pytest
from django.utils import timezone

from jobs import dlc, jobmetrics, lifecycle, logarchive, scalars
from jobs.models import Job, JobScalar, PodLog

HTMX = {"HTTP_HX_REQUEST": "true"}


# --- parsing, without the database ------------------------------------------------------------------------------


def test_both_forms_parse_and_step_is_the_x_axis():
    lines = [
        "epoch 1 starting",
        "METRIC step=100 loss=0.3142 acc=0.81",
        '  METRIC {"step": 200, "loss": 0.25, "acc": 0.85}',
        "METRIC step=300,loss=0.2, acc=8.5e-1",
    ]
    assert scalars.parse(lines) == {"loss": [(100, 0.3142), (200, 0.25), (300, 0.2)],
                                    "acc": [(100, 0.81), (200, 0.85), (300, 0.85)]}


def test_without_a_step_the_x_is_the_index_among_metric_lines():
    lines = ["METRIC loss=3", "noise", "METRIC nothing-here", "METRIC loss=2 lr=0.1", 'METRIC {"loss": 1}']
    assert scalars.parse(lines) == {"loss": [(0, 3.0), (1, 2.0), (2, 1.0)], "lr": [(1, 0.1)]}


def test_a_time_stamp_before_the_marker_is_allowed():
    assert scalars.parse(["2026-11-30T22:00:01.123456Z METRIC step=1 loss=0.5",
                          "2026-11-30T22:00:02+08:00   METRIC step=2 loss=0.4"]) == {"loss": [(1, 0.5), (2, 0.4)]}


@pytest.mark.parametrize("line", [
    "loss=0.3",  # no marker
    "INFO METRIC step=1 loss=0.3",  # the marker not first
    "METRICS step=1 loss=0.3",  # not the marker
    "metric step=1 loss=0.3",  # the marker is upper case
    "METRIC",  # nothing after it
    "METRIC loss=nan",
    "METRIC loss=inf",
    "METRIC loss=1e999",
    "METRIC loss=0.3.1",
    "METRIC 1loss=0.3",  # a name starts with a letter or _
    "METRIC loss=",
    "METRIC step=-1 loss=0.3",  # a bad step leaves the line out whole
    "METRIC step=1.5 loss=0.3",
    "METRIC step=abc loss=0.3",
    'METRIC {"step": 1, "loss": 0.3',  # bad JSON
    'METRIC ["loss", 0.3]',
    'METRIC {"loss": "0.3", "ok": true, "nested": {"a": 1}, "bad name": 2, "nan": NaN}',
    'METRIC {"step": true, "loss": 0.3}',
    "METRIC " + "x" * 70 + "=1",  # a name longer than 64
])
def test_malformed_lines_are_ignored_never_an_error(line):
    assert scalars.parse([line]) == {}


def test_a_malformed_pair_is_left_out_and_the_others_kept():
    assert scalars.parse(["METRIC step=5 loss=nan acc=0.9 junk lr=1e-3 a.b/c-d=2"]) == {
        "acc": [(5, 0.9)], "lr": [(5, 0.001)], "a.b/c-d": [(5, 2.0)]}


def test_a_step_going_back_drops_the_later_points_like_a_restart_from_a_checkpoint():
    lines = [f"METRIC step={s} loss={v}" for s, v in ((1, 9), (2, 8), (3, 7), (4, 6), (2, 5), (3, 4), (3, 3))]
    assert scalars.parse(lines) == {"loss": [(1, 9.0), (2, 5.0), (3, 3.0)]}


def test_at_most_max_names_metrics_per_job():
    line = "METRIC " + " ".join(f"m{i}={i}" for i in range(scalars.MAX_NAMES + 10))
    found = scalars.parse([line])
    assert len(found) == scalars.MAX_NAMES and "m0" in found and f"m{scalars.MAX_NAMES}" not in found


# --- downsampling, summary, chart -------------------------------------------------------------------------------


def test_downsample_keeps_first_last_and_the_extremes_within_the_limit():
    points = [(s, float(s % 7)) for s in range(10_000)]
    points[4321] = (4321, 1000.0)  # a spike
    points[8765] = (8765, -50.0)  # a dip
    kept = scalars.downsample(points, 500)
    assert len(kept) <= 500 and kept[0] == points[0] and kept[-1] == points[-1]
    assert (4321, 1000.0) in kept and (8765, -50.0) in kept
    assert [s for s, _ in kept] == sorted({s for s, _ in kept}), "by step, each once"
    assert scalars.downsample(points[:10], 500) == points[:10]


def test_summary_and_chart_fit_the_box():
    points = [(0, 2.0), (10, 1.0), (20, 0.5), (30, 0.75)]
    summary = scalars.summarize(points)
    assert summary == scalars.Summary(last=0.75, min=0.5, max=2.0, count=4, last_step=30)
    chart = scalars.chart("loss", points, summary)
    xy = [tuple(map(float, p.split(","))) for p in chart.points.split()]
    assert xy[0][0] == 0 and xy[-1][0] == jobmetrics.WIDTH
    assert all(0 < y < jobmetrics.HEIGHT for _, y in xy), "room above the max and below the min"
    assert min(xy, key=lambda p: p[1])[0] == 0 and max(xy, key=lambda p: p[1])[0] == 400  # 2.0 top, 0.5 bottom
    assert (chart.last, chart.low, chart.high, chart.last_step) == ("0.75", "0.5", "2", 30)
    flat = scalars.chart("lr", [(0, 0.1)], scalars.summarize([(0, 0.1)]))  # one point, one value: no error
    # In the middle of the box: at its left edge the box cut the dot in half and the chart looked empty (QA).
    assert flat.points == "300,70" and (flat.last_x, flat.last_y) == (300, 70)
    assert [(b.x, b.width, b.text) for b in flat.bands] == [(0, 600, "step 0: 0.1")]



def test_hovering_a_chart_says_the_values_of_its_steps_and_it_has_axes_and_a_plain_summary(settings):
    from django.template.loader import render_to_string

    points = [(s, 2.0 - s / 1000) for s in range(0, 1010, 10)]  # 101 points
    chart = scalars.chart("loss", points, scalars.summarize(points))
    assert len(chart.bands) == jobmetrics.HOVER_BANDS
    assert chart.bands[0].text == "steps 0–40: last 1.96, min 1.96, max 2"
    few = [(0, 2.0), (10, 1.0), (20, 0.5)]
    assert [b.text for b in scalars.chart("loss", few, scalars.summarize(few)).bands] == [
        "step 0: 2", "step 10: 1", "step 20: 0.5"]

    view = scalars.Section([chart], "p-0", "archive")
    html = render_to_string("jobs/_scalars.html", {"view": view, "job": Job(pk=3, dlc_job_id="dlc-3",
                                                   status="Succeeded"), "examples": scalars.FORMAT_EXAMPLES})
    summary = '<span class="muted scalar-summary">last <span class="scalar-last">1</span> · min 1 · max 2</span>'
    assert summary in html, "not the old '1 to 2 up'"
    assert f'<div class="y-axis"><span>{chart.top}</span><span>{chart.bottom}</span></div>' in html
    assert '<div class="x-axis"><span>step 0</span><span>101 points</span><span>step 1000</span></div>' in html
    titles = re.findall(r'<rect class="hover" [^>]*><title>([^<]*)</title></rect>', html)
    assert titles == [b.text for b in chart.bands]


# --- the pod -----------------------------------------------------------------------------------------------------


def test_the_first_pod_in_the_page_order_with_metric_lines_is_chosen_and_later_ones_not_read():
    pods = [("Worker", "j-worker-10"), ("Worker", "j-worker-2"), ("Master", "j-master-0"), ("PS", "j-ps-0")]
    ordered = [p for _, p in sorted(pods, key=lambda p: scalars.order_key(*p))]
    assert ordered == ["j-master-0", "j-ps-0", "j-worker-2", "j-worker-10"]
    logs = {"j-master-0": ["starting"], "j-ps-0": ["METRIC step=1 loss=1"], "j-worker-2": ["METRIC step=1 loss=2"]}
    read = []

    def lazily():
        for pod_id in ordered:
            read.append(pod_id)
            yield pod_id, logs.get(pod_id, [])

    assert scalars.choose(lazily()) == ("j-ps-0", {"loss": [(1, 1.0)]})
    assert read == ["j-master-0", "j-ps-0"]
    assert scalars.choose(iter([("a", ["x"]), ("b", [])])) is None


# --- stored rows --------------------------------------------------------------------------------------------------


def _archived_job(ws, owner, logs: dict[str, tuple[str, list[str]]], **fields) -> Job:
    job = Job.objects.create(workspace=ws, owner=owner, display_name="trained", status="Succeeded",
                             dlc_job_id=f"dlc-{time.monotonic_ns()}", finished_at=timezone.now(), **fields)
    for pod_id, (role, lines) in logs.items():
        PodLog.objects.create(job=job, pod_id=pod_id, role=role, lines=len(lines),
                              content=zlib.compress("\n".join(lines).encode()))
    return job


@pytest.fixture
def plain_ws(db):
    from jobs.models import Workspace

    return Workspace.objects.create(name="Plain", backend=Workspace.BACKEND_LOCAL)


def test_compute_replaces_the_jobs_rows_from_the_archive_of_the_chosen_pod(plain_ws):
    many = [f"METRIC step={s} loss={1 / (s + 1)} acc={s / 2000}" for s in range(2000)]
    job = _archived_job(plain_ws, None, {"j-worker-0": ("Worker", ["METRIC step=1 loss=99"]),
                                         "j-master-0": ("Master", ["boot", *many])})
    JobScalar.objects.create(job=job, pod_id="old", name="stale", last=0, min=0, max=0, count=1, last_step=0)
    assert scalars.compute(job) == 2
    assert scalars.compute(job) == 2  # idempotent
    rows = {r.name: r for r in JobScalar.objects.filter(job=job)}
    assert set(rows) == {"loss", "acc"} and {r.pod_id for r in rows.values()} == {"j-master-0"}
    loss = rows["loss"]
    assert (loss.count, loss.last_step, loss.min, loss.max) == (2000, 1999, 1 / 2000, 1.0)
    assert loss.last == pytest.approx(1 / 2000)
    assert len(loss.points) <= scalars.MAX_POINTS and loss.points[0] == [0, 1.0] and loss.points[-1][0] == 1999


def test_a_job_archived_before_gets_its_rows_on_first_view_and_one_without_metrics_is_read_once(
        plain_ws, django_assert_num_queries):
    job = _archived_job(plain_ws, None, {"j-worker-0": ("Worker", ["METRIC step=3 loss=0.5"])},
                        logs_archived_at=timezone.now())
    assert [(r.name, r.last) for r in scalars.stored(job)] == [("loss", 0.5)]
    quiet = _archived_job(plain_ws, None, {"j-worker-0": ("Worker", ["no metrics here"])},
                          logs_archived_at=timezone.now())
    assert scalars.stored(quiet) == []
    with django_assert_num_queries(1):  # its rows only: the archive is not read again
        assert scalars.stored(quiet) == []
    not_archived = _archived_job(plain_ws, None, {"j-worker-0": ("Worker", ["METRIC loss=1"])})
    assert scalars.stored(not_archived) == [] and not JobScalar.objects.filter(job=not_archived).exists()


def test_last_values_of_many_jobs_in_one_query(plain_ws, django_assert_num_queries):
    a = _archived_job(plain_ws, None, {"p-0": ("Worker", ["METRIC step=1 loss=0.4 acc=0.7"])})
    b = _archived_job(plain_ws, None, {"p-0": ("Worker", ["METRIC step=1 loss=0.2"])})
    scalars.compute(a), scalars.compute(b)
    with django_assert_num_queries(1):
        found = scalars.last_values([a.pk, b.pk])
        values = {job: {name: row.last for name, row in rows.items()} for job, rows in found.items()}
    assert values == {a.pk: {"loss": 0.4, "acc": 0.7}, b.pk: {"loss": 0.2}}
    assert scalars.common_names(values.values()) == ["loss", "acc"]
    assert scalars.common_names(values.values(), 1) == ["loss"]


def test_running_jobs_values_so_far_come_from_the_last_read_and_the_longest_unread_are_read_in_turn(plain_ws):
    """scalars.sampled (a sweep's trials table): no DLC call here (the jobs have no started pod yet, so a read asks
    DLC nothing); the integration test of the sweep page reads a real pod's log."""
    from datetime import timedelta

    from django.core.cache import cache

    cache.clear()
    now = timezone.now()

    def job(name: str, status: str = "Running") -> Job:
        return Job.objects.create(workspace=plain_ws, display_name=name, status=status, dlc_job_id=f"dlc-{name}",
                                  started_at=now)

    fresh, stale, never, ended = job("fresh"), job("stale"), job("never"), job("ended", "Succeeded")
    for found, read_at in ((fresh, now), (stale, now - timedelta(seconds=scalars.SAMPLE_SECONDS + 1)),
                           (ended, now)):
        cache.set(scalars._sample_key(found), scalars.Sample({"loss": scalars.summarize([(3, 0.5)])}, read_at))
    got = scalars.sampled([fresh, stale, never, ended], reads=1)
    assert {pk: values["loss"].last for pk, values in got.items()} == {fresh.pk: 0.5, stale.pk: 0.5}, \
        "the older values kept until read again; an ended job's are its stored rows'"
    assert cache.get(scalars._sample_key(never)).read_at >= now, "never read: the first read"
    assert cache.get(scalars._sample_key(stale)).read_at < now, "one read per call"
    got = scalars.sampled([fresh, stale, never], reads=5)
    assert cache.get(scalars._sample_key(stale)).values == {} and got == {fresh.pk: got[fresh.pk]}
    cache.set(scalars._sample_key(never), scalars.Sample({}, now - timedelta(hours=1)))
    scalars.sampled([never], reads=5)
    assert cache.get(scalars._sample_key(never)).read_at < now, "claimed by the read a moment ago: not again"


# --- the job page's section, through the real localdlc ----------------------------------------------------------

# 20 METRIC lines, then a pause long enough to see the job running.
PRINTS = (f"{sys.executable} -c 'import sys, time\n"
          "print(\"loading data\", flush=True)\n"
          "for s in range(20): print(f\"METRIC step={s * 10} loss={2.0 / (s + 1):.4f} acc={s / 20:.3f}\", "
          "flush=True)\n"
          "time.sleep(3)'")


def _wait(job: Job, done) -> dict:
    deadline = time.monotonic() + 30
    while not done(item := dlc.get_job(job.workspace, job.dlc_job_id)):
        assert time.monotonic() < deadline and item["Status"] not in ("Failed", "Stopped"), item["Status"]
        time.sleep(0.2)
    lifecycle.apply_remote(job, item)
    job.refresh_from_db()
    return item


def _charts(html: str) -> dict[str, str]:
    return dict(re.findall(r'<figure class="metric-chart scalar-chart" id="scalar-\d+" data-name="([^"]+)">(.*?)'
                           r"</figure>", html, re.S))


@pytest.mark.integration
def test_a_job_printing_metric_lines_is_charted_while_running_and_from_its_rows_after_archive(client, people, ws,
                                                                                             localdlc):
    body = {"DisplayName": "metrics", "JobType": "PyTorchJob", "UserCommand": PRINTS,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="metrics", status="Creating",
                             job_type="PyTorchJob", body=body)
    job.dlc_job_id = dlc.create_job(ws, body)
    job.save()
    client.force_login(people["vic"])  # a viewer may look
    url = f"/jobs/{job.pk}/scalars"

    # Running: parsed from DLC now, refreshed, the pod carried to the next refresh.
    _wait(job, lambda item: item["Status"] == "Running" and item.get("Pods"))
    deadline = time.monotonic() + 15
    while "acc" not in _charts(html := client.get(url, **HTMX).content.decode()):
        assert time.monotonic() < deadline, html
        time.sleep(0.3)
    pod_id = job.pods[0]["PodId"]
    assert 'hx-trigger="every 15s"' in html and f"?pod={pod_id}" in html and 'data-source="live"' in html
    assert "from the last 5,000 log lines" not in html
    # Another viewer (or a loop) within LIVE_CACHE_SECONDS gets the same read: DLC is not asked again.
    reads = localdlc.stats()["calls"].get("GetPodLogs", 0)
    assert _charts(client.get(url, **HTMX).content.decode()) == _charts(html)
    assert localdlc.stats()["calls"].get("GetPodLogs", 0) == reads

    # Ended and archived: the rows, no refresh, no DLC call.
    _wait(job, lambda item: item["Status"] == "Succeeded")
    assert logarchive.archive(job.pk) == 1
    rows = {r.name: r for r in JobScalar.objects.filter(job=job)}
    assert set(rows) == {"loss", "acc"} and rows["loss"].pod_id == pod_id
    assert (rows["loss"].count, rows["loss"].last_step, rows["loss"].last) == (20, 190, 0.1)
    assert (rows["loss"].min, rows["loss"].max, rows["acc"].last) == (0.1, 2.0, 0.95)
    assert rows["loss"].points[:2] == [[0, 2.0], [10, 1.0]]
    job.refresh_from_db()
    with_dlc_down = type(job.workspace).objects.filter(pk=ws.pk)
    with_dlc_down.update(endpoint="127.0.0.1:9")  # nothing listens: any DLC call would be an error on the page
    html = client.get(url, **HTMX).content.decode()
    charts = _charts(html)
    assert set(charts) == {"acc", "loss"} and "Could not read" not in html
    assert 'data-source="archive"' in html and "hx-trigger" not in html
    assert '<span class="scalar-last">0.1</span>' in charts["loss"] and "<polyline" in charts["loss"]
    points = re.search(r'points="([^"]+)"', charts["loss"]).group(1).split()
    assert len(points) == 20


@pytest.fixture
def quiet_job(client, people, ws) -> Job:
    """An ended job, archived, that printed no METRIC line, its owner signed in on `client`."""
    client.force_login(people["alice"])
    return Job.objects.create(workspace=ws, owner=people["alice"], display_name="quiet", status="Succeeded",
                              dlc_job_id="dlc-not-there", finished_at=timezone.now(), logs_archived_at=timezone.now())


@pytest.mark.integration
def test_the_page_loads_the_section_lazily_and_a_job_without_metric_lines_gets_the_format(client, quiet_job):
    job = quiet_job
    page = client.get(f"/jobs/{job.pk}").content.decode()
    assert f'hx-get="/jobs/{job.pk}/scalars" hx-trigger="revealed"' in page
    html = client.get(f"/jobs/{job.pk}/scalars", **HTMX).content.decode()
    assert 'id="scalars-none"' in html and "METRIC step=100 loss=0.3142 acc=0.81" in html
    assert "hx-trigger" not in html


@pytest.mark.integration
def test_without_javascript_the_section_opens_as_a_page_of_its_own(client, quiet_job):
    job = quiet_job
    page = client.get(f"/jobs/{job.pk}").content.decode()
    assert f'<noscript><p><a id="scalars-page" href="/jobs/{job.pk}/scalars">' in page
    html = client.get(f"/jobs/{job.pk}/scalars").content.decode()  # the link followed without JavaScript
    assert html.startswith("<!doctype html>") and f'<a href="/jobs/{job.pk}#training-metrics">Back to quiet</a>' in html
    assert 'id="scalars-none"' in html
    assert not client.get(f"/jobs/{job.pk}/scalars", **HTMX).content.decode().lstrip().startswith("<!doctype")


@pytest.mark.integration
def test_a_failed_dlc_read_is_said_in_place_not_a_500(client, people, ws):
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="gone", status="Running",
                             dlc_job_id="dlc-no-such-job",
                             pods=[{"PodId": "dlc-no-such-job-worker-0", "Type": "Worker", "Status": "Running"}])
    client.force_login(people["alice"])
    answer = client.get(f"/jobs/{job.pk}/scalars", **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "Could not read the log from DLC:" in html
    assert 'hx-trigger="every 15s"' in html, "a running job's section tries again"


@pytest.mark.integration
def test_outside_the_users_workspaces_it_is_404(client, people, ws):
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="mine", status="Succeeded")
    client.force_login(people["olga"])
    assert client.get(f"/jobs/{job.pk}/scalars", **HTMX).status_code == 404


# --- a sweep's ranking, without the database ---------------------------------------------------------------------


def _trial(number: int, status: str):
    from jobs import sweeps

    return sweeps.TrialRow(number, [], {"pk": 100 + number, "status": status}, "—", "")


def _last(**values) -> dict[str, JobScalar]:
    return {name: JobScalar(name=name, last=value, min=value, max=value, count=1, last_step=1)
            for name, value in values.items()}


def test_the_goal_defaults_to_min_for_losses_errors_and_perplexities():
    from jobs import sweeps

    assert [sweeps.default_goal(n) for n in ("val/loss", "Top1_Error", "perplexity", "acc", "bleu")] == [
        "min", "min", "min", "max", "max"]
    # the usual short names of lower-is-better metrics, as whole words only
    assert [sweeps.default_goal(n) for n in ("val_mse", "eval/RMSE", "mae", "test-wer", "ppl", "nll", "fid",
                                             "power", "precision", "lr")] == ["min"] * 7 + ["max"] * 3


def test_ended_trials_are_ranked_best_first_the_others_below_in_trial_order():
    from jobs import sweeps

    rows = [_trial(1, "Succeeded"), _trial(2, "Running"), _trial(3, "Failed"), _trial(4, "Succeeded"),
            _trial(5, "Succeeded")]
    values = {101: _last(loss=0.5, acc=0.7), 102: _last(loss=0.01), 103: _last(loss=0.3, acc=0.8),
              104: _last(loss=0.3, acc=0.9), 105: _last(acc=0.1)}
    board = sweeps.leaderboard(rows, values, "loss")
    assert (board.rank, board.goal, board.error) == ("loss", "min", "")
    assert board.names == ["acc", "loss"]  # four trials have each; then by name
    # 3 and 4 tie: both first (standard competition ranking), in trial order
    assert [(r.number, r.rank, r.best) for r in board.rows] == [
        (3, 1, True), (4, 1, True), (1, 3, False), (2, None, False), (5, None, False)]
    assert board.rows[0].metrics == ["0.8", "0.3"] and board.rows[-1].metrics == ["0.1", ""]
    assert board.query == "?rank=loss&goal=min" and board.other_goal == "?rank=loss&goal=max"

    board = sweeps.leaderboard(rows, values, "acc")  # highest first by default
    assert [r.number for r in board.rows] == [4, 3, 1, 5, 2]
    board = sweeps.leaderboard(rows, values, "loss", "max")
    assert [r.number for r in board.rows][:3] == [1, 3, 4]


def test_a_rank_that_cannot_be_used_is_said_and_the_trials_keep_their_order():
    from jobs import sweeps

    rows = [_trial(1, "Succeeded"), _trial(2, "Succeeded")]
    values = {101: _last(loss=0.5), 102: _last(loss=0.1)}
    for rank, goal, message in (("bleu", "", "No trial has a metric named 'bleu': rank by one of loss."),
                                ("loss", "up", "Rank loss by min (lowest first) or max (highest first), not 'up'.")):
        board = sweeps.leaderboard(rows, values, rank, goal)
        assert board.error == message and board.rank == "" and [r.number for r in board.rows] == [1, 2]
        assert all(r.rank is None for r in board.rows) and board.query == ""
    assert "no trial printed METRIC lines yet" in sweeps.leaderboard(rows, {}, "loss").error
    names = {101: _last(a=1, b=1, c=1, d=1, e=1)}
    assert sweeps.leaderboard(rows, names, "e").names == ["a", "b", "c", "e"], "the ranked metric is a column"


@pytest.mark.integration
def test_a_job_waiting_to_submit_says_so_and_asks_again(client, people, ws):
    job = Job.objects.create(workspace=ws, owner=people["alice"], display_name="waiting", status="Submitting")
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{job.pk}/scalars", **HTMX).content.decode()
    assert "Not started: DLC does not know this job yet" in html and 'hx-trigger="every 15s"' in html
    Job.objects.filter(pk=job.pk).update(status="SubmitFailed")
    html = client.get(f"/jobs/{job.pk}/scalars", **HTMX).content.decode()
    assert "Not started" in html and "hx-trigger" not in html


def test_tqdm_bars_and_torchrun_rank_prefixes_around_metric_lines():
    bar = " 45%|████▌     | 45/100 [00:04<00:05, 10.00it/s, loss=0.3]"
    lines = [
        f"Epoch 1:{bar}METRIC step=1 loss=0.5",  # logged to stderr while the bar was drawn
        f"\r{bar}\r 46%|████▌     | 46/100 [00:04<00:05]\rMETRIC step=2 loss=0.4\r",  # what a terminal shows
        "100%|██████████| 100/100 [00:10<00:00, 10.00it/s]",  # a bar alone is no metric
        "[default0]:METRIC step=3 loss=0.3",
        "[default1]:METRIC step=3 loss=0.9",  # another rank of the same run: not a restart to step 3
        "[rank0]: METRIC step=4 loss=0.2",
        "[rank3]: METRIC step=2 loss=0.8",
        f"[default0]:{bar}METRIC step=5 loss=0.15",  # torchrun prefixes what the rank wrote, bar and all
        f"[default2]:{bar}METRIC step=5 loss=0.95",
        "INFO 45% done METRIC step=6 loss=0.1",  # still: the marker first, or after a bar
    ]
    assert scalars.parse(lines) == {"loss": [(1, 0.5), (2, 0.4), (3, 0.3), (4, 0.2), (5, 0.15)]}
