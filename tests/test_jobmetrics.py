"""jobs.jobmetrics without a request or DLC: ranges and windows, values in their units, charts scaled to the box."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from jobs import jobmetrics as jm
from jobs.models import Job

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CPU = jm.METRICS[0]
MEMORY = jm.METRICS[1]
GPU = next(m for m in jm.METRICS if m.type == "GpuCoreUsage")


def ms(seconds: float) -> int:
    return int((T0.timestamp() + seconds) * 1000)


def test_ranges_default_to_the_last_hour_and_a_bad_one_names_the_choices():
    assert jm.parse_range(None).key == jm.parse_range("").key == "job"
    assert jm.parse_range("24h").seconds == 86400
    with pytest.raises(jm.BadRange, match=r"'1w'.*15m, 1h, 6h, 24h, job"):
        jm.parse_range("1w")


def test_a_window_ends_at_the_jobs_end_and_the_whole_job_picks_a_step_for_a_few_hundred_points():
    now = T0 + timedelta(hours=3)
    running = Job(created_at=T0 - timedelta(minutes=1), started_at=T0, status="Running")
    last = jm.window(running, jm.parse_range("15m"), now)
    assert (last.start, last.end, last.step) == (now - timedelta(minutes=15), now, "15s")
    whole = jm.window(running, jm.parse_range("job"), now)
    assert (whole.start, whole.end, whole.step) == (T0, now, "1m")  # 180 points
    ended = Job(created_at=T0, started_at=T0, finished_at=T0 + timedelta(minutes=10), status="Succeeded")
    assert jm.window(ended, jm.parse_range("1h"), now).end == T0 + timedelta(minutes=10)
    assert jm.window(ended, jm.parse_range("job"), now).step == "15s"
    # Never started (stopped while queued): a minute before its end, not an empty or reversed span.
    never = Job(created_at=T0, finished_at=T0, status="Stopped")
    span = jm.window(never, jm.parse_range("job"), now)
    assert span.end - span.start == timedelta(minutes=1)


@pytest.mark.parametrize("value, unit, text", [
    (0.523, "cores", "0.52 cores"), (12.34, "cores", "12.3 cores"),
    (512, "bytes", "512 B"), (150 * 2 ** 20, "bytes", "150.0 MiB"), (3.5 * 2 ** 30, "bytes", "3.5 GiB"),
    (1.2 * 2 ** 20, "bytes/s", "1.2 MiB/s"), (0, "bytes/s", "0 B/s"), (45.4, "percent", "45%"),
])
def test_values_are_shown_in_their_units(value, unit, text):
    assert jm.fmt(value, unit) == text


def test_a_chart_scales_each_pods_points_into_the_box_with_min_max_last():
    pods = [{"PodId": "w0", "Metrics": [{"Time": ms(0), "Value": 0.5}, {"Time": ms(30), "Value": 2.0},
                                        {"Time": ms(60), "Value": 1.0}]},
            {"PodId": "w1", "Metrics": [{"Time": ms(60), "Value": 0.0}, {"Time": ms(0), "Value": 0.25}]}]
    chart = jm.chart(CPU, pods, T0, T0 + timedelta(seconds=60))
    top = 2.0 * 1.1
    assert chart.top == jm.fmt(top, "cores") and not chart.empty and not chart.error
    first, second = chart.series
    y = [round(jm.HEIGHT - v / top * jm.HEIGHT, 1) for v in (0.5, 2.0, 1.0)]
    assert first.points == f"0,{y[0]:g} 300,{y[1]:g} 600,{y[2]:g}"
    assert (first.low, first.high, first.last) == ("0.50 cores", "2.00 cores", "1.00 cores")
    assert (first.last_x, first.last_y) == (600, y[2])
    # Sorted by time; the bottom of the box is 0.
    assert second.points.endswith("600,140") and second.last == "0.00 cores" and second.colour == 1


def test_small_cpu_keeps_a_whole_core_on_top_and_percent_keeps_100():
    one = [{"PodId": "w0", "Metrics": [{"Time": ms(0), "Value": 0.5}, {"Time": ms(10), "Value": 0.5}]}]
    assert jm.chart(CPU, one, T0, T0 + timedelta(seconds=10)).series[0].points == "0,70 600,70"
    gpu = [{"PodId": "w0", "Metrics": [{"Time": ms(0), "Value": 50}]}]
    assert jm.chart(GPU, gpu, T0, T0 + timedelta(seconds=10)).top == "100%"


def test_empty_series_out_of_range_and_garbage_points_are_left_out():
    pods = [{"PodId": "gpu-less", "Metrics": []}, {"PodId": "none"},
            {"PodId": "late", "Metrics": [{"Time": ms(3600), "Value": 1.0}]},
            {"PodId": "junk", "Metrics": [{"Time": "soon", "Value": 1}, {"Time": ms(5), "Value": float("nan")},
                                          {"Time": ms(5), "Value": None}]}]
    chart = jm.chart(MEMORY, pods, T0, T0 + timedelta(seconds=60))
    assert chart.empty and chart.series == [] and chart.top == ""
    assert jm.chart(GPU, [], T0, T0 + timedelta(seconds=60)).empty


def test_one_failure_for_all_charts_is_said_once():
    same = [jm.Chart(m, error="DLC is busy or failing (ServiceUnavailable)") for m in jm.METRICS]
    assert jm.failure(same) == "DLC is busy or failing (ServiceUnavailable)"
    assert jm.failure(same[:-1] + [jm.Chart(jm.METRICS[-1])]) == ""
    assert jm.failure([jm.Chart(m) for m in jm.METRICS]) == ""


def test_strips_cover_the_box_without_a_gap_each_holding_an_equal_share_of_the_points():
    many = jm.strips([float(x) for x in range(100)], 0.0, 99.0)
    assert len(many) == jm.HOVER_BANDS
    assert many[0][0] == 0 and round(many[-1][0] + many[-1][1], 1) == jm.WIDTH
    assert all(round(a[0] + a[1], 1) == b[0] for a, b in zip(many, many[1:], strict=False)), "no gap, no overlap"
    assert [(first, last) for *_, first, last in many[:2]] == [(0, 4), (5, 9)]
    # Fewer points than strips: one per point, each reaching halfway to its neighbours.
    assert jm.strips([0.0, 30.0, 60.0, 30.0], 0.0, 60.0) == [(0, 150, 0, 0), (150, 300, 30, 30), (450, 150, 60, 60)]
    assert jm.strips([], 0.0, 1.0) == []


def test_a_chart_has_its_axis_values_and_hover_strips_with_every_pods_value():
    pods = [{"PodId": "w0", "Metrics": [{"Time": ms(0), "Value": 0.5}, {"Time": ms(30), "Value": 2.0},
                                        {"Time": ms(60), "Value": 1.0}]},
            {"PodId": "w1", "Metrics": [{"Time": ms(60), "Value": 0.0}, {"Time": ms(0), "Value": 0.25}]}]
    chart = jm.chart(CPU, pods, T0, T0 + timedelta(seconds=60))
    assert (chart.top, chart.bottom) == ("2.20 cores", "0.00 cores")
    assert [b.text for b in chart.bands] == ["w0 0.50 cores · w1 0.25 cores", "w0 2.00 cores",
                                             "w0 1.00 cores · w1 0.00 cores"]
    assert (chart.bands[1].start, chart.bands[1].end) == (T0 + timedelta(seconds=30),) * 2
    crowd = [{"PodId": f"w{n}", "Metrics": [{"Time": ms(0), "Value": 1.0}]} for n in range(jm.HOVER_PODS + 2)]
    assert jm.chart(CPU, crowd, T0, T0 + timedelta(seconds=60)).bands[0].text.endswith(" · 2 more pods")


def test_the_monitoring_partial_draws_axes_and_a_title_per_strip(settings):
    from django.template.loader import render_to_string
    from django.utils import timezone

    pods = [{"PodId": "w0", "Metrics": [{"Time": ms(s), "Value": 0.5 + s / 36000} for s in range(0, 3600, 15)]}]
    win = jm.Window(T0, T0 + timedelta(hours=1), "15s")
    chart = jm.chart(CPU, pods, win.start, win.end)
    job = Job(pk=7, dlc_job_id="dlc-7", status="Succeeded")
    with timezone.override("UTC"):
        html = render_to_string("jobs/_metrics.html", {"job": job, "range": jm.RANGES[-1], "ranges": jm.RANGES,
                                                       "window": win, "charts": [chart], "failure": ""})
    figure = html[html.index('id="chart-CpuCoreUsage"'):]
    assert '<div class="y-axis"><span>1.00 cores</span><span>0.00 cores</span></div>' in figure
    assert ">Nov 30 12:00</time>" in figure and ">Nov 30 13:00</time>" in figure
    titles = re.findall(r'<rect class="hover" [^>]*><title>([^<]*)</title></rect>', figure)
    assert len(titles) == jm.HOVER_BANDS and titles[0] == "12:00:00 to 12:02:45: w0 0.50 cores"
    svg = figure[figure.index("<svg"):figure.index("</svg>")]
    assert len(svg) < 8000, f"{len(svg)} bytes for a chart of 240 points"
