"""The running console: submit, the job page with a 100k-line log, page weight, and memory, against the real
stack that `make run` starts (runserver, Celery worker and beat, Redis, localdlc) on a fresh database.

    python -m bench.live [--only submit,jobpage,weight,memory] [--jobs 100] [--log-lines 100000]

Each part prints its figures; memory comes last, so it is the RSS of the web process and the worker after
the others ran.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import heading, p50, percentile, record, rss_kib, setup_django, timed, vendor

PASSWORD = "bench-password-123"
IMAGE = "registry.example.com/team/pytorch:2.3"
PARTS = ("submit", "jobpage", "weight", "memory")


class Console:
    """The stack plus what the parts share: the signed-in user, the workspace, an HTTP session."""

    def __init__(self, data_dir: Path) -> None:
        from consoleapp.stack import Stack, free_port

        # Enough emulated capacity for 100 two-CPU jobs at once (the default is sized for a laptop).
        self.stack = Stack(data_dir=data_dir, web_port=free_port(), localdlc_port=free_port(), quiet=True,
                           sync_interval=3.0, extra_env={"LOCALDLC_CPU": "512", "LOCALDLC_MEMORY_GIB": "4096"})
        os.environ["LOCALDLC_CREDENTIALS_FILE"] = str(self.stack.credentials_file)
        os.environ["REDIS_URL"] = os.environ["CELERY_BROKER_URL"] = self.stack.redis_url
        os.environ.setdefault("DATABASE_URL", f"sqlite:///{data_dir / 'console.sqlite3'}")
        setup_django(data_dir)
        self.db = vendor()
        self.stack.start()

        from django.contrib.auth import get_user_model

        from jobs.models import Membership, Workspace

        self.user = get_user_model().objects.create_user("bench", password=PASSWORD)
        self.workspace = Workspace.objects.create(
            name="Local", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="local",
            endpoint=f"127.0.0.1:{self.stack.localdlc_port}")
        Membership.objects.create(user=self.user, workspace=self.workspace, role=Membership.MEMBER)
        # Production's web server (docker-compose.yml: gunicorn, 4 workers) beside the stack's runserver:
        # runserver's listen backlog of 10 resets the 11th simultaneous connection.
        self.gunicorn_port = free_port()
        # As in production, the workers share a Redis cache (instance types, sign-in counters).
        env = self.stack.env() | {"DLC_CACHE_URL": self.stack.redis_url.rsplit("/", 1)[0] + "/1"}
        self.stack._spawn("gunicorn", [sys.executable, "-m", "gunicorn", "consoleapp.wsgi", "--bind",
                                       f"127.0.0.1:{self.gunicorn_port}", "--workers", "4"], env)
        self.url = f"http://127.0.0.1:{self.gunicorn_port}"
        self.stack._wait_http(f"{self.url}/accounts/login/", "gunicorn")
        self.session = self.sign_in()

    def sign_in(self):
        import requests

        session = requests.Session()
        login = f"{self.url}/accounts/login/"
        token = csrf_token(session.get(login).text)
        answer = session.post(login, data={"username": "bench", "password": PASSWORD, "csrfmiddlewaretoken": token},
                              headers={"Referer": login})
        assert answer.url.rstrip("/") == self.url, "sign-in failed"
        return session

    def localdlc_stats(self, reset: bool = False) -> dict[str, int]:
        import requests

        base = f"http://127.0.0.1:{self.stack.localdlc_port}/_localdlc/stats"
        answer = requests.post(base + "/reset", timeout=10) if reset else requests.get(base, timeout=10)
        return answer.json()["calls"]

    def stop(self) -> None:
        self.stack.stop()


def csrf_token(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def wizard_data(name: str, command: str) -> dict[str, str]:
    """What the wizard page posts for a one-worker PyTorch job (the page's defaults plus four fields)."""
    from jobs import spec
    from jobs.forms import wizard as glue

    data = glue.sections_to_data(spec.defaults())
    data.update({"basic-name": name, "environment-image_type": "address", "environment-image": IMAGE,
                 "environment-command": command, "resources-roles-0-instance_type": "ecs.g6.large"})
    return data


def wait_for(predicate, timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


# -- submit ------------------------------------------------------------------------------------------------------

def bench_submit(console: Console, jobs: int) -> None:
    import requests

    from jobs import dlc
    from jobs.models import Job

    db = console.db
    heading(f"submit: {jobs} concurrent wizard posts, {db}")
    create_url = f"{console.url}/jobs/new"
    page = console.session.get(create_url)  # also warms the web process's instance-type cache
    token = csrf_token(page.text)
    cookies = console.session.cookies.get_dict()
    barrier = threading.Barrier(jobs)

    def post(n: int) -> tuple[float, int, float]:
        session = requests.Session()
        session.cookies.update(cookies)
        data = {**wizard_data(f"bench-submit-{n}", "sleep 300"), "csrfmiddlewaretoken": token}
        barrier.wait()
        sent = time.perf_counter()
        answer = session.post(create_url, data=data, headers={"Referer": create_url}, allow_redirects=False)
        return (time.perf_counter() - sent) * 1000, answer.status_code, sent

    # The POST alone, one at a time, on a quiet stack: what a request costs with no queue in front of it.
    n = iter(range(10**6))

    def one() -> None:
        data = {**wizard_data(f"bench-serial-{next(n)}", "sleep 1"), "csrfmiddlewaretoken": token}
        answer = console.session.post(create_url, data=data, headers={"Referer": create_url}, allow_redirects=False)
        assert answer.status_code == 302, answer.status_code

    from django.db import connection

    def connect() -> None:
        connection.close()
        connection.ensure_connection()

    record("submit", "opening a DB connection p50", p50(timed(connect, 20)), "ms", db=db,
           note="per request if DB_CONN_MAX_AGE=0; PostgreSQL connections are kept 60 s by default")
    serial = timed(one, 30, warmup=3)
    record("submit", "one POST at a time: p50", p50(serial), "ms", size=30, db=db, target="<50 ms",
           met=p50(serial) < 50, note="through gunicorn (4 workers); HTTP and a new DB connection included")
    record("submit", "one POST at a time: p95", percentile(serial, 95), "ms", size=30, db=db)
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    client.force_login(console.user)

    def in_process() -> None:
        answer = client.post("/jobs/new", wizard_data(f"bench-serial-{next(n)}", "sleep 1"))
        assert answer.status_code == 302, answer.status_code

    inproc = timed(in_process, 20, warmup=2)
    record("submit", "one POST, in-process: p50", p50(inproc), "ms", size=20, db=db, target="<50 ms",
           met=p50(inproc) < 50, note="the view's own cost: no HTTP, connection kept")
    time.sleep(3)  # let the worker submit those before the burst

    console.localdlc_stats(reset=True)
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(post, range(jobs)))
    first_sent = min(sent for _, _, sent in results)
    statuses = {code for _, code, _ in results}
    ms = [t for t, _, _ in results]
    record("submit", f"{jobs} concurrent POSTs: p50", p50(ms), "ms", size=jobs, db=db,
           note="client-side, all sent at once to gunicorn (4 sync workers); queueing included")
    record("submit", f"{jobs} concurrent POSTs: p95", percentile(ms, 95), "ms", size=jobs, db=db)
    record("submit", "POST answers", ",".join(map(str, sorted(statuses))), size=jobs, db=db,
           target="302 only", met=statuses == {302})

    def all_running_on_localdlc() -> bool:
        _, total = dlc.list_jobs(console.workspace, Status="Running", DisplayName="bench-submit", PageSize=1)
        return total >= jobs

    running_remote = wait_for(all_running_on_localdlc, timeout=120, interval=0.2)
    remote_s = time.perf_counter() - first_sent
    record("submit", f"all {jobs} Running on localdlc", remote_s if running_remote else "timeout", "s", size=jobs,
           db=db, target="<20 s", met=bool(running_remote) and remote_s < 20,
           note="from the first POST; CreateJob by the worker (8 threads)")
    running_console = wait_for(
        lambda: Job.objects.filter(display_name__startswith="bench-submit", status="Running").count() >= jobs,
        timeout=120, interval=0.2)
    console_s = time.perf_counter() - first_sent
    record("submit", f"all {jobs} Running on the console", console_s if running_console else "timeout", "s",
           size=jobs, db=db, note="plus the next status sync (every 3 s)")
    calls = console.localdlc_stats()
    record("submit", "ListEcsSpecs calls during the run", calls.get("ListEcsSpecs", 0), "", size=jobs, db=db,
           target="0 (cached; no backend call in a POST)", met=not calls.get("ListEcsSpecs"))

# -- the job page with a long log --------------------------------------------------------------------------------

def _browser():
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    return pw, browser


def _signed_in_context(browser, console: Console):
    context = browser.new_context()
    context.add_cookies([{"name": k, "value": v, "url": console.url}
                         for k, v in console.session.cookies.get_dict().items()])
    return context


def make_log_job(console: Console, lines: int) -> Any:
    """A job that prints `lines` lines at once, then one line a second (so the tail has something to send)."""
    from jobs import dlc
    from jobs.models import Job

    create_url = f"{console.url}/jobs/new"
    token = csrf_token(console.session.get(create_url).text)
    command = (f"awk 'BEGIN {{ for (i = 1; i <= {lines}; i++) printf \"step %d loss=0.%06d lr=3e-4 "
               f"throughput=1234.5 samples/s\\n\", i, i }}'; "
               "while true; do echo \"tick $(date +%s)\"; sleep 1; done")
    data = {**wizard_data("bench-log", command), "csrfmiddlewaretoken": token}
    answer = console.session.post(create_url, data=data, headers={"Referer": create_url}, allow_redirects=False)
    assert answer.status_code == 302, answer.text[:2000]
    job = Job.objects.get(display_name="bench-log")
    found = wait_for(lambda: Job.objects.filter(pk=job.pk, status="Running").exclude(pods=[]).first(), 90, 0.5)
    assert found, "the log job did not start"
    pod = found.pods[0]["PodId"]
    # Until the burst is printed (the ticks have begun) and has settled (the page reads SETTLE behind now).
    assert wait_for(lambda: "".join(dlc.get_pod_logs(console.workspace, found.dlc_job_id, pod, max_lines=1,
                                                     read_timeout_ms=30000)).startswith("tick"), 120, 0.5)
    time.sleep(3)
    return found


def _cursor(html: str) -> str:
    return re.search(r'data-since="(\d+)"', html).group(1)


def bench_jobpage(console: Console, lines: int) -> None:
    from django.test import Client

    from jobs import logarchive, podlogs

    db = console.db
    heading(f"job page with a {lines:,}-line log, {db}")
    job = make_log_job(console, lines)
    pod = job.pods[0]["PodId"]
    client = Client(HTTP_HOST="localhost")
    client.force_login(console.user)
    stats = console.localdlc_stats

    def page() -> None:
        assert client.get(f"/jobs/{job.pk}").status_code == 200

    ms = timed(page, 20, warmup=2)
    record("jobpage", "job page p50 (server, in-process)", p50(ms), "ms", size=lines, db=db, target="<100 ms",
           met=p50(ms) < 100, note="the log panel loads after it, by HTMX")
    record("jobpage", "job page p95", percentile(ms, 95), "ms", size=lines, db=db)

    # The first view: the last FIRST_VIEW_LINES lines, one GetPodLogs call.
    calls = stats().get("GetPodLogs", 0)
    views = timed(lambda: client.get(f"/jobs/{job.pk}/logs"), 10, warmup=0)
    per_view = (stats().get("GetPodLogs", 0) - calls) / len(views)
    record("jobpage", "first log view, server p50", p50(views), "ms", size=lines, db=db, target="<1000 ms",
           met=p50(views) < 1000, note=f"last {podlogs.FIRST_VIEW_LINES} lines, {per_view:g} GetPodLogs call(s)")
    record("jobpage", "first log view, server p95", percentile(views, 95), "ms", size=lines, db=db)

    # What one time-bounded GetPodLogs costs localdlc on this log: its index against the whole-file scan it
    # replaced (the same answer, see tests/test_localdlc_logindex.py).
    from jobs import dlc
    from localdlc.logindex import LogIndex, scan

    log_file = console.stack.data_dir / "localdlc" / "jobs" / job.dlc_job_id / "logs" / f"{pod}.log"
    began = logarchive.pod_range(job, job.pods[0])[0]
    start, end = began.timestamp(), podlogs.settled().timestamp()
    index = LogIndex()
    # Built once per file, as localdlc does on a pod's first read, then extended by what is appended.
    build = timed(lambda: index.lines(log_file, start, end, 1), 1, warmup=0)[0]
    indexed = timed(lambda: index.lines(log_file, start, end, podlogs.FIRST_VIEW_LINES), 20)
    scanned = timed(lambda: scan(log_file, start, end)[-podlogs.FIRST_VIEW_LINES:], 5)
    record("jobpage", "localdlc: last 1000 lines of the log, indexed p50", p50(indexed), "ms", size=lines, db=db,
           note=f"whole-file scan (before): p50 {p50(scanned):.1f} ms; indexing the file once: {build:.0f} ms")
    sdk = timed(lambda: dlc.get_pod_logs(console.workspace, job.dlc_job_id, pod, max_lines=podlogs.FIRST_VIEW_LINES,
                                         start_time=dlc.api_time(began),
                                         end_time=dlc.api_time(podlogs.settled())), 10)
    record("jobpage", "GetPodLogs of 1000 lines through the SDK p50", p50(sdk), "ms", size=lines, db=db)

    # The tail as the browser drives it, in-process: every second, the cursor of the previous answer.
    cursor = _cursor(client.get(f"/jobs/{job.pk}/logs").content.decode())
    refreshes: list[tuple[float, int, int, int]] = []  # (server ms, bytes, lines, GetPodLogs calls)
    for _ in range(15):
        time.sleep(1)
        calls = stats().get("GetPodLogs", 0)
        sent = time.perf_counter()
        answer = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={cursor}", HTTP_HX_REQUEST="true")
        took = (time.perf_counter() - sent) * 1000
        assert answer.status_code == 200, answer.status_code
        body = answer.content
        refreshes.append((took, len(body), body.count(b'class="ln"'), stats().get("GetPodLogs", 0) - calls))
        cursor = _cursor(body.decode())
    took = [t for t, _, _, _ in refreshes]
    record("jobpage", "tail refresh, server p50", p50(took), "ms", size=lines, db=db, target="<1000 ms",
           met=p50(took) < 1000, note=f"{len(refreshes)} refreshes, 1 s apart, in-process")
    record("jobpage", "tail refresh, server p95", percentile(took, 95), "ms", size=lines, db=db)
    per_refresh = [c for _, _, _, c in refreshes]
    record("jobpage", "GetPodLogs calls per tail refresh", sum(per_refresh) / len(per_refresh), "", size=lines,
           db=db, target="1 (no burst)", met=max(per_refresh) <= 1, note=f"max {max(per_refresh)}")

    # A tail that fell behind the whole burst (a tab asleep since the pod started): only its newest lines are
    # read (logarchive.fetch_newest), and the page says earlier ones were skipped.
    since = podlogs.encode_cursor(logarchive.pod_range(job, job.pods[0])[0])
    calls = stats().get("GetPodLogs", 0)
    sent = time.perf_counter()
    body = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={since}", HTTP_HX_REQUEST="true").content
    behind = (time.perf_counter() - sent) * 1000
    shown = body.count(b'class="ln"')
    record("jobpage", "tail refresh that fell behind the whole log", behind, "ms", size=lines, db=db,
           note=f"{stats().get('GetPodLogs', 0) - calls} GetPodLogs calls (paged); {len(body):,} B, "
                f"{shown} newest lines sent, earlier ones not read")

    # Every gunicorn worker past its first request (Django's URLconf, the SDK imported), so that the first
    # visit below is Chromium's cold cache, not a cold worker.
    def warm(_: int) -> None:
        for path in (f"/jobs/{job.pk}", f"/jobs/{job.pk}/logs"):
            console.session.get(console.url + path, timeout=60)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(warm, range(16)))

    pw, browser = _browser()
    try:
        context = _signed_in_context(browser, console)
        tab = context.new_page()
        tails: list[tuple[int, int, float]] = []  # (body bytes, lines sent, server+network ms)
        started: dict[str, float] = {}

        panels: list[float] = []  # the log panel's request to response, ms

        def on_request(request) -> None:
            if "/logs?since=" in request.url or "/logs?pod=" in request.url:
                started[request.url] = time.perf_counter()

        def on_response(response) -> None:
            if "/logs?pod=" in response.url:
                panels.append((time.perf_counter() - started.pop(response.url, time.perf_counter())) * 1000)
            if "/logs?since=" in response.url and response.status == 200:
                body = response.body()
                sent = started.pop(response.url, time.perf_counter())
                tails.append((len(body), body.count(b'class="ln"'), (time.perf_counter() - sent) * 1000))

        tab.on("request", on_request)
        tab.on("response", on_response)
        before = stats()
        for visit in ("first visit", "second visit"):
            begin = time.perf_counter()
            tab.goto(f"{console.url}/jobs/{job.pk}")  # returns at the page's load event
            loaded = (time.perf_counter() - begin) * 1000
            try:
                tab.wait_for_selector("#log-lines .ln", timeout=150_000)
                first_paint: float | str = (time.perf_counter() - begin) * 1000
            except Exception:  # noqa: BLE001 - a timeout is a figure too
                first_paint = "over 150000"
            record("jobpage", f"first paint of the tail (Chromium, {visit})", first_paint, "ms", size=lines, db=db,
                   target="<1000 ms", met=isinstance(first_paint, float) and first_paint < 1000,
                   note=f"navigation start to the first log line on screen, through gunicorn; the page's load "
                        f"event at {loaded:.0f} ms, the log panel's request took {panels[-1] if panels else 0:.0f} ms")
        watched = time.perf_counter()
        tab.wait_for_timeout(10_000)
        watch_s = time.perf_counter() - watched
        after = stats()
        context.close()
    finally:
        browser.close()
        pw.stop()
    record("jobpage", f"live-tail refreshes in {watch_s:.0f} s (Chromium)", len(tails), "", size=lines, db=db,
           target=">0", met=bool(tails))
    if tails:
        sizes = [b for b, _, _ in tails]
        record("jobpage", "bytes per live-tail refresh p50", p50(sizes), "B", size=lines, db=db,
               target="only new lines", met=max(sizes) < 20_000, note=f"max {max(sizes)} B")
        record("jobpage", "lines per live-tail refresh p50", p50([n for _, n, _ in tails]), "", size=lines, db=db,
               note="the job prints one line a second")
        record("jobpage", "live-tail refresh in Chromium p50", p50([t for _, _, t in tails]), "ms", size=lines,
               db=db, note="request to response, through gunicorn")
        pod_logs = after.get("GetPodLogs", 0) - before.get("GetPodLogs", 0)
        record("jobpage", "GetPodLogs calls per log read (Chromium run)", pod_logs / (len(tails) + 2), "",
               size=lines, db=db, note="two first views and each refresh")


# -- page weight ---------------------------------------------------------------------------------------------------

def bench_weight(console: Console) -> None:
    from jobs.models import Job

    db = console.db
    heading(f"page weight, {db}")
    job = Job.objects.filter(status="Running").order_by("-pk").first() or Job.objects.order_by("-pk").first()
    pages = {"list": "/", "job": f"/jobs/{job.pk}" if job else None, "wizard": "/jobs/new"}
    pw, browser = _browser()
    try:
        for name, path in pages.items():
            if path is None:
                continue
            context = _signed_in_context(browser, console)
            tab = context.new_page()
            seen: list[tuple[str, int]] = []
            loaded = {"done": False}

            def on_response(response, seen=seen, loaded=loaded) -> None:
                try:
                    size = len(response.body())
                except Exception:  # noqa: BLE001 - redirects have no body
                    size = 0
                seen.append(("poll" if loaded["done"] else "load", size))

            tab.on("response", on_response)
            tab.goto(console.url + path, wait_until="load")
            tab.wait_for_timeout(800)  # what the page loads right after (hx-trigger="load")
            loaded["done"] = True
            tab.wait_for_timeout(5000)
            context.close()
            first = [s for kind, s in seen if kind == "load"]
            polls = [s for kind, s in seen if kind == "poll"]
            record("weight", f"{name} page: requests to show it", len(first), "", db=db)
            record("weight", f"{name} page: bytes to show it", sum(first), "B", db=db,
                   note="response bodies; nothing is gzipped (no GZipMiddleware, static not compressed)")
            record("weight", f"{name} page: requests in the next 5 s", len(polls), "", db=db,
                   note=f"{sum(polls)} B; polling while jobs are active")
    finally:
        browser.close()
        pw.stop()


# -- memory ----------------------------------------------------------------------------------------------------------

def bench_memory(console: Console) -> None:
    db = console.db
    heading(f"memory after the runs above, {db}")
    from consoleapp.stack import descendants

    names = {"web": "runserver (make run's web)", "worker": "Celery worker (8 threads)", "beat": "Celery beat",
             "localdlc": "localdlc", "redis": "redis"}
    for name, label in names.items():
        proc = console.stack.procs.get(name)
        if proc is not None and proc.poll() is None:
            record("memory", f"RSS of {label}", rss_kib(proc.pid) // 1024, "MiB", db=db)
    master = console.stack.procs.get("gunicorn")
    if master is not None and master.poll() is None:
        workers = [rss_kib(pid) // 1024 for pid in descendants(master.pid)]
        record("memory", "RSS of each gunicorn worker", "/".join(map(str, workers)), "MiB", db=db,
               note=f"master {rss_kib(master.pid) // 1024} MiB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__)
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated, from {','.join(PARTS)}")
    parser.add_argument("--jobs", type=int, default=100, help="concurrent wizard posts")
    parser.add_argument("--log-lines", type=int, default=100_000)
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="bench-live-") as data_dir:
        console = Console(Path(data_dir))
        try:
            if "submit" in parts:
                bench_submit(console, args.jobs)
            if "jobpage" in parts:
                bench_jobpage(console, args.log_lines)
            if "weight" in parts:
                bench_weight(console)
            if "memory" in parts:
                bench_memory(console)
        finally:
            console.stop()


if __name__ == "__main__":
    main()
