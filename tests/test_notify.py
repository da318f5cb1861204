"""Job notifications by webhook (jobs.notify): payload, signature, which ends notify, the POST against a real HTTP
server in the test, retries, the sweep; the settings tab; and, with the real stack, jobs that end for real."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from tests import portal_fixtures as pf
from tests.test_lifecycle import (  # noqa: F401 - fixture_* register the fixtures used here by name
    fixture_backend,
    fixture_quiet_stack,
    fixture_ws,
)


class Receiver:
    """A real HTTP server on 127.0.0.1 (ephemeral port) that records every POST and answers with the codes
    scripted for its path (the last one repeats; 200 when none)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any, bytes]] = []
        self.script: dict[str, list[int]] = {}
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    receiver.received.append((self.path, self.headers, body))  # case-insensitive
                    codes = receiver.script.get(self.path) or [200]
                    code = codes.pop(0) if len(codes) > 1 else codes[0]
                self.send_response(code)
                if 300 <= code < 400:
                    self.send_header("Location", "/redirected")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Polled every 50 ms, not 0.5 s: shutdown() at each test's end waits for the poll to notice.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def posts(self, path: str) -> list[tuple[Any, bytes]]:
        return [(headers, body) for p, headers, body in list(self.received) if p == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(name="receiver")
def fixture_receiver():
    running = Receiver()
    yield running
    running.close()


def make_webhook(workspace, url: str, events=("Succeeded", "Failed"), secret: str = "", **fields):
    from jobs.models import Webhook

    webhook = Webhook(workspace=workspace, name=fields.pop("name", f"hook-{url[-8:]}"), events=list(events), **fields)
    webhook.set_url(url)
    webhook.set_secret(secret)
    webhook.save()
    return webhook


def ended_job(workspace, owner=None, status: str = "Succeeded", name: str | None = None, owe: bool = True,
              **fields):
    """A job that just ended, with the deliveries its end owes (made as lifecycle._enqueue_notify makes them)."""
    from jobs import notify

    name = name or f"ended-{uuid.uuid4().hex[:8]}"
    job = pf.make_job(workspace, owner, name, status=status, finished_at=timezone.now(), **fields)
    if owe:
        notify.deliveries_for(job)
    return job


# -- pure functions -----------------------------------------------------------------------------------------


def test_signature_is_the_hex_hmac_sha256_of_the_body():
    from jobs import notify

    # RFC 4231-style known answer (the Wikipedia HMAC example), so the test does not repeat the code under test.
    body = b"The quick brown fox jumps over the lazy dog"
    assert notify.signature("key", body) == "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"


@pytest.mark.parametrize(("url", "problem"), [
    ("https://hooks.example.com/dlc?x=1", None),
    ("http://127.0.0.1:8080/hook", None),
    ("ftp://example.com/hook", "Only http"),
    ("javascript:alert(1)", "Only http"),
    ("file:///etc/passwd", "Only http"),
    # QA: "not a url" was told "Only http:// and https:// URLs are allowed.", as if it were a URL of another kind.
    ("not a url", "Enter a valid URL, e.g. https://hooks.example.com/dlc."),
    ("hooks.example.com/dlc", "Enter a valid URL, e.g. https://hooks.example.com/dlc."),
    ("https:///path-only", "needs a host"),
    ("https://user:pw@example.com/hook", "no credentials"),
    ("https://example.com:99999/hook", "Enter a valid URL"),
    ("https://example.com/a b", "spaces"),
    ("https://example.com/a\x7fb", "control characters"),
    ("https://example.com/caf\u00e9", "Percent-encode"),
    ("https://b\u00fccher.example/hook", None),
    ("https://" + "a" * 63 + ".example.com/hook", None),
    ("https://" + "a" * 300 + ".example.com/hook", "at most 63"),
    ("https://" + "a" * 64 + ".example.com/hook", "at most 63"),
    ("https://" + ("a" * 60 + ".") * 5 + "com/hook", "at most 253"),
    ("https://" + "\u00fc" * 70 + ".example/hook", "not a valid host"),
])
def test_url_rules(url, problem):
    from jobs import notify

    found = notify.url_problem(url)
    assert (found is None) if problem is None else (problem in found), found


def test_the_host_shown_for_a_url_has_no_path_query_or_credentials():
    from jobs import notify_models

    assert notify_models.host_of("https://u:p@hooks.slack.example:8443/services/T0/B0/SECRETPATH?t=1") == \
        "https://hooks.slack.example:8443"


def test_retry_waits_grow_fourfold_over_about_ten_minutes_by_default(settings):
    from jobs import notify

    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 30
    waits = [notify.retry_wait(n) for n in range(1, settings.DLC_WEBHOOK_ATTEMPTS)]
    assert waits == [30, 120, 480] and 540 <= sum(waits) <= 720


@pytest.mark.parametrize(("url", "problem"), [
    ("http://127.0.0.1:8892/_localdlc/faults", "loopback"),
    ("http://127.1.2.3/x", "loopback"),
    ("http://localhost:8000/x", "loopback"),  # a name: checked as it resolves
    ("http://[::1]/x", "loopback"),
    ("http://[::ffff:127.0.0.1]/x", "loopback"),  # IPv4-mapped
    ("http://0.0.0.0:8000/x", "loopback"),
    ("http://[::]/x", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[::ffff:169.254.169.254]/latest/meta-data/", "link-local"),
    ("http://[fe80::1]/x", "link-local"),
    ("http://100.100.100.200/latest/meta-data/", "metadata"),  # Alibaba Cloud's ECS metadata service
    ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),  # AWS IMDS over IPv6, inside fc00::/7
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),  # GCE, refused by name (no lookup)
    ("http://METADATA./computeMetadata/v1/", "metadata"),  # GCE's short name, any case, trailing dot
    ("http://metadata.google.internal.example.com/x", None),  # only the names themselves
    ("http://224.0.0.1/x", "multicast"),
    ("http://[ff02::1]/x", "multicast"),
    ("http://10.1.2.3/relay", None),  # private ranges stay allowed by default: offline networks' chat relays
    ("http://192.168.1.10/relay", None),
    ("http://[fd00::5]/relay", None),
    ("http://8.8.8.8/x", None),
    ("https://unresolvable.invalid/x", None),  # checked again when sent
])
def test_destinations_the_server_must_not_post_to_are_refused(url, problem, settings):
    from jobs import notify

    settings.DLC_WEBHOOK_ALLOWED_HOSTS = []
    found = notify.url_problem(url)
    assert (found is None) if problem is None else (problem in found and "DLC_WEBHOOK_ALLOWED_HOSTS" in found), found


def test_private_ranges_can_be_refused_and_exceptions_allowed(settings):
    from jobs import notify

    settings.DLC_WEBHOOK_ALLOWED_HOSTS = []
    settings.DLC_WEBHOOK_ALLOW_PRIVATE = False
    for url in ("http://10.1.2.3/x", "http://172.20.0.1/x", "http://192.168.1.1/x", "http://[fd00::5]/x",
                "http://[::ffff:10.0.0.1]/x"):
        assert "private" in (notify.url_problem(url) or ""), url
    assert notify.url_problem("http://172.32.0.1/x") is None  # just outside 172.16/12
    settings.DLC_WEBHOOK_ALLOWED_HOSTS = ["10.9.0.0/16", "127.0.0.1", "LocalHost"]
    assert notify.url_problem("http://10.9.8.7/x") is None and notify.url_problem("http://10.10.0.1/x")
    assert notify.url_problem("http://127.0.0.1:9/x") is None and notify.url_problem("http://127.0.0.2/x")
    assert notify.url_problem("http://localhost:9/x") is None  # by name, whatever it resolves to


def test_metadata_services_are_refused_even_where_private_ranges_are_allowed_unless_listed(settings):
    from jobs import notify

    settings.DLC_WEBHOOK_ALLOWED_HOSTS = []
    settings.DLC_WEBHOOK_ALLOW_PRIVATE = True
    assert notify.url_problem("http://[fd00:ec2::253]/x") is None  # fc00::/7 stays allowed, but for IMDS:
    for url in ("http://[fd00:ec2::254]/", "http://metadata.google.internal/", "http://metadata/"):
        assert "metadata" in (notify.url_problem(url) or ""), url
        # Sent anyway (saved before this rule): refused before any lookup or connection, a failed delivery.
        answer = notify.post(url, b"{}", timeout=2)
        assert not answer.ok and answer.code is None and "refused" in answer.error and "metadata" in answer.error
    settings.DLC_WEBHOOK_ALLOWED_HOSTS = ["metadata.google.internal", "fd00:ec2::254"]
    assert notify.url_problem("http://metadata.google.internal/") is None
    assert notify.url_problem("http://[fd00:ec2::254]/") is None
    assert "metadata" in notify.url_problem("http://metadata/")


# -- the POST, against a real server ------------------------------------------------------------------------


def test_post_is_ok_on_2xx_only_and_never_follows_a_redirect(receiver):
    from jobs import notify

    receiver.script = {"/fail": [500], "/moved": [302], "/created": [201]}
    assert notify.post(receiver.url("/created"), b"{}") == notify.Answer(True, 201, "")
    failed = notify.post(receiver.url("/fail"), b"{}")
    assert not failed.ok and failed.code == 500 and failed.error == "Internal Server Error"
    moved = notify.post(receiver.url("/moved"), b"{}")
    assert not moved.ok and moved.code == 302 and "not followed" in moved.error
    assert receiver.posts("/redirected") == []
    headers, _ = receiver.posts("/created")[0]
    assert headers["Content-Type"] == "application/json" and notify.SIGNATURE_HEADER not in headers


def test_an_unreachable_receiver_is_an_error_that_does_not_quote_the_url():
    from jobs import notify
    from tests.support.localdlc import free_port

    answer = notify.post(f"http://127.0.0.1:{free_port()}/services/SECRETPATH", b"{}")
    assert not answer.ok and answer.code is None and answer.error
    assert "SECRETPATH" not in answer.error and "127.0.0.1" not in answer.error


def test_a_garbled_answer_is_an_error_not_a_crash():
    import socket

    from jobs import notify

    server = socket.create_server(("127.0.0.1", 0))

    def answer_garbage() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")

    threading.Thread(target=answer_garbage, daemon=True).start()
    try:
        answer = notify.post(f"http://127.0.0.1:{server.getsockname()[1]}/x", b"{}")
    finally:
        server.close()
    assert not answer.ok and answer.code is None and "BadStatusLine" in answer.error


def test_a_receiver_trickling_its_answer_is_cut_off_at_the_timeout_all_told():
    import socket
    import time

    from jobs import notify

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        # Each byte well within the timeout, the answer never complete: a per-read timeout would wait for ever.
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.1):
                try:
                    conn.sendall(b"a")
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    try:
        answer = notify.post(f"http://127.0.0.1:{server.getsockname()[1]}/x", b"{}", timeout=0.5)
    finally:
        elapsed = time.monotonic() - started
        stop.set()
        server.close()
    assert not answer.ok and "timed out" in answer.error
    assert elapsed < 2.5, elapsed


def test_a_url_http_client_refuses_is_an_error_that_does_not_quote_it(receiver):
    from jobs import notify

    # A DEL character passed the save-time rule before; http.client's refusal quotes the whole path and query.
    answer = notify.post(receiver.url("/services/SECRETPATH\x7f?token=TOKEN"), b"{}")
    assert not answer.ok and answer.error
    assert "SECRETPATH" not in answer.error and "TOKEN" not in answer.error


# -- deliveries ---------------------------------------------------------------------------------------------


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


def test_payload_names_the_job_and_links_its_page(team, settings):
    from jobs import notify

    settings.DLC_BASE_URL = "https://console.example"
    job = ended_job(team.alpha, team.users["member"], status="Failed", name="train-x",
                    reason_code="JobFailed", reason_message="exit 1")
    data = notify.payload(job)
    assert data["event"] == "job.failed" and data["sent_at"]
    assert data["job"] == {
        "id": job.pk, "name": "train-x", "status": "Failed", "dlc_job_id": job.dlc_job_id, "workspace": "Alpha",
        "owner": "member", "url": f"https://console.example/jobs/{job.pk}",
        "created_at": job.created_at.isoformat(), "finished_at": job.finished_at.isoformat(),
        "reason_code": "JobFailed", "reason_message": "exit 1", "upstream_job_id": None,
        "diagnosis": None,  # nothing in the reason matches a rule (jobs.diagnosis; its payload: tests/test_diagnosis)
    }
    assert notify.payload(job, status="SubmitFailed")["event"] == "job.submitfailed"


def test_only_enabled_webhooks_whose_events_include_the_status_get_one_delivery(team, receiver):
    from jobs import notify
    from jobs.models import WebhookDelivery

    wanted = make_webhook(team.alpha, receiver.url("/a"), events=["Failed"])
    make_webhook(team.alpha, receiver.url("/b"), events=["Succeeded"])
    make_webhook(team.alpha, receiver.url("/c"), events=["Failed"], enabled=False)
    make_webhook(team.beta, receiver.url("/d"), events=["Failed"])
    job = ended_job(team.alpha, status="Failed")
    first = notify.deliveries_for(job)
    assert [d.webhook for d in first] == [wanted]
    assert notify.deliveries_for(job) == first and WebhookDelivery.objects.count() == 1  # made once
    assert notify.deliveries_for(pf.make_job(team.alpha, None, "running")) == []  # still running: nothing


def test_a_failing_receiver_is_retried_until_delivered_then_never_again(team, receiver, settings):
    from jobs import notify
    from jobs.models import WebhookDelivery

    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    receiver.script = {"/flaky": [500, 200]}
    make_webhook(team.alpha, receiver.url("/flaky"), secret="s3cret")
    job = ended_job(team.alpha, team.users["member"])
    assert notify.notify_job(job.pk) is not None  # owed: the task retries
    delivery = WebhookDelivery.objects.get(job=job)
    assert delivery.state == "retrying" and delivery.attempts == 1 and delivery.last_code == 500
    assert notify.notify_job(job.pk) is None
    delivery.refresh_from_db()
    assert delivery.state == "delivered" and delivery.attempts == 2 and delivery.last_code == 200
    assert notify.notify_job(job.pk) is None  # a task run twice posts nothing more
    posts = receiver.posts("/flaky")
    assert len(posts) == 2
    headers, body = posts[-1]
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert headers["X-DLC-Signature"] == expected and json.loads(body)["job"]["id"] == job.pk


def test_a_webhook_added_after_a_job_ended_is_not_told_of_that_end(team, receiver, settings):
    """The retry of an earlier webhook's delivery makes none for a webhook added since: the end came before it."""
    from jobs import notify
    from jobs.models import WebhookDelivery

    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    receiver.script = {"/early": [500, 200]}
    make_webhook(team.alpha, receiver.url("/early"))
    job = ended_job(team.alpha)
    assert notify.notify_job(job.pk) is not None  # /early answered 500: owed
    make_webhook(team.alpha, receiver.url("/late"))
    assert notify.notify_job(job.pk) is None
    assert len(receiver.posts("/early")) == 2 and receiver.posts("/late") == []
    assert WebhookDelivery.objects.filter(job=job).count() == 1


def test_out_of_attempts_the_delivery_fails_and_is_owed_no_more(team, receiver, settings):
    from jobs import notify
    from jobs.models import WebhookDelivery

    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    settings.DLC_WEBHOOK_ATTEMPTS = 2
    receiver.script = {"/down": [503]}
    make_webhook(team.alpha, receiver.url("/down"))
    job = ended_job(team.alpha)
    notify.notify_job(job.pk)
    assert notify.notify_job(job.pk) is None
    delivery = WebhookDelivery.objects.get(job=job)
    assert delivery.state == "failed" and delivery.attempts == 2 and delivery.last_code == 503
    assert len(receiver.posts("/down")) == 2


def test_an_end_undone_by_adopting_the_job_is_not_told_and_its_real_end_is(team, receiver):
    from jobs import lifecycle, notify
    from jobs import status as st
    from jobs.models import WebhookDelivery

    make_webhook(team.alpha, receiver.url("/ends"), events=[st.SUBMIT_FAILED, "Succeeded"])
    # Given up after ambiguous errors, but the CreateJob had landed: the import finds it by its tag and adopts it.
    job = ended_job(team.alpha, status=st.SUBMIT_FAILED, dlc_job_id="")
    assert len(notify.deliveries_for(job)) == 1  # the end owed its delivery (as _fail_submit makes it)
    assert lifecycle.adopt(job, "dlc-adopted")
    assert notify.notify_job(job.pk) is None
    assert receiver.posts("/ends") == [] and not WebhookDelivery.objects.filter(job=job).exists()
    job.refresh_from_db()
    job.status, job.finished_at = "Succeeded", timezone.now()
    job.save()
    notify.deliveries_for(job)  # the real end, as the sync that sees it makes its deliveries
    assert notify.notify_job(job.pk) is None
    [(_, body)] = receiver.posts("/ends")
    assert json.loads(body)["event"] == "job.succeeded"


def test_a_submit_failed_end_adopted_by_a_job_already_ended_at_dlc_is_not_told(team, receiver):
    from jobs import lifecycle, notify
    from jobs import status as st

    make_webhook(team.alpha, receiver.url("/ends"), events=[st.SUBMIT_FAILED, "Succeeded"])
    job = ended_job(team.alpha, status=st.SUBMIT_FAILED, dlc_job_id="")
    notify.deliveries_for(job)
    # The import found the job by its tag, already ended: adopted, then DLC's end applied (import_or_adopt).
    assert lifecycle.adopt(job, "dlc-done")
    job.refresh_from_db()
    job.status, job.finished_at = "Succeeded", timezone.now()
    job.save()
    notify.deliveries_for(job)  # as _enqueue_notify does for an adopted job the import found ended
    assert notify.notify_job(job.pk) is None
    assert [json.loads(body)["event"] for _, body in receiver.posts("/ends")] == ["job.succeeded"]


def test_a_webhook_disabled_meanwhile_holds_its_owed_delivery_until_enabled(team, receiver, settings):
    from jobs import notify
    from jobs.models import WebhookDelivery

    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    receiver.script = {"/x": [500, 200]}
    webhook = make_webhook(team.alpha, receiver.url("/x"))
    job = ended_job(team.alpha)
    notify.notify_job(job.pk)
    assert WebhookDelivery.objects.get(job=job).state == "retrying"
    webhook.enabled = False
    webhook.save()
    assert WebhookDelivery.objects.get(job=job).state == "paused"  # before its turn: not "retrying"
    assert notify.notify_job(job.pk) is None  # its turn: held, nothing sent, the task ends
    delivery = WebhookDelivery.objects.get(job=job)
    assert delivery.state == "paused" and delivery.held_at and len(receiver.posts("/x")) == 1
    webhook.resume()
    webhook.save()
    assert notify.resume(webhook) == ([job.pk], 0)
    assert notify.notify_job(job.pk) is None
    delivery.refresh_from_db()
    assert delivery.state == "delivered" and delivery.attempts == 2 and len(receiver.posts("/x")) == 2


def test_a_paused_webhook_holds_the_ends_of_jobs_ending_meanwhile_and_a_disabled_one_hears_none(team, receiver):
    from jobs import notify
    from jobs.models import WebhookDelivery

    paused = make_webhook(team.alpha, receiver.url("/paused"), name="paused", enabled=False,
                          paused_at=timezone.now(), paused_reason="Paused after 20 deliveries in a row failed")
    off = make_webhook(team.alpha, receiver.url("/off"), name="off", enabled=False)
    assert notify.has_webhooks(team.alpha.pk)  # a workspace whose only live webhook is paused still owes
    job = ended_job(team.alpha)
    [held] = WebhookDelivery.objects.filter(job=job)
    assert held.webhook == paused and held.held_at and held.next_attempt_at is None and held.state == "paused"
    assert notify.notify_job(job.pk) is None and receiver.received == []  # nothing due while paused
    client = pf.client_for(team.users["admin"])
    page = " ".join(client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode().split())
    assert "A disabled webhook is told of no job ends" in page
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{paused.pk}/toggle")
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{off.pk}/toggle")
    notify.notify_job(job.pk)
    held.refresh_from_db()
    assert held.state == "delivered" and len(receiver.posts("/paused")) == 1 and receiver.posts("/off") == []


def test_the_sweep_finds_overdue_owed_deliveries_of_the_last_day(team):
    from jobs import notify
    from jobs.models import WebhookDelivery

    webhook = make_webhook(team.alpha, "http://127.0.0.1:9/hook")
    now = timezone.now()
    jobs = [ended_job(team.alpha, name=f"j{n}", owe=False) for n in range(4)]
    WebhookDelivery.objects.create(webhook=webhook, job=jobs[0], status="Succeeded",
                                   next_attempt_at=now - timedelta(minutes=5))  # lost: owed
    WebhookDelivery.objects.create(webhook=webhook, job=jobs[1], status="Succeeded",
                                   next_attempt_at=now + timedelta(seconds=30))  # due soon: its task waits
    WebhookDelivery.objects.create(webhook=webhook, job=jobs[2], status="Succeeded", delivered_at=now,
                                   next_attempt_at=None)
    WebhookDelivery.objects.create(webhook=webhook, job=jobs[3], status="Succeeded",
                                   next_attempt_at=now - timedelta(days=2), created_at=now - timedelta(days=2))
    assert notify.owed_jobs(timedelta(minutes=2)) == [jobs[0].pk]


def test_a_job_end_owes_its_deliveries_at_once_so_a_lost_task_is_swept(team, receiver,
                                                                        django_capture_on_commit_callbacks):
    """The end makes its deliveries in its own transaction: the task that would send them is never enqueued here
    (its on-commit callback is captured, not run), as when the broker is down, and the sweep still finds them."""
    from jobs import dlc, lifecycle, notify
    from jobs.models import WebhookDelivery

    make_webhook(team.alpha, receiver.url("/ends"), events=["SubmitFailed"])
    job = pf.make_job(team.alpha, team.users["member"], "refused", status="Submitting", dlc_job_id="", pods=[])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        lifecycle.give_up_submit(job.pk, dlc.DLCError("InvalidParameter", "refused"))
    assert len(callbacks) == 1  # the notify task, never run
    delivery = WebhookDelivery.objects.get(job=job)
    assert delivery.status == "SubmitFailed" and delivery.delivered_at is None and delivery.attempts == 0
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    assert notify.owed_jobs(timedelta(minutes=2)) == [job.pk]
    assert notify.notify_job(job.pk) is None  # what the swept task does
    assert [json.loads(body)["event"] for _headers, body in receiver.posts("/ends")] == ["job.submitfailed"]


# -- the settings tab ---------------------------------------------------------------------------------------


def test_the_tab_is_for_admins_and_shows_webhooks_with_their_deliveries(team):
    from jobs.models import WebhookDelivery

    webhook = make_webhook(team.alpha, "https://hooks.example.com/dlc", secret="never-shown", name="team-chat")
    WebhookDelivery.objects.create(webhook=webhook, job=team.job, status="Failed", attempts=2, last_code=502,
                                   last_error="Bad Gateway", next_attempt_at=None)
    url = f"/workspaces/{team.alpha.pk}/notifications"
    assert pf.client_for(team.users["member"]).get(url).status_code == 403
    page = pf.client_for(team.users["admin"]).get(url)
    text = page.content.decode()
    assert page.status_code == 200 and "team-chat" in text and "HTTP 502 Bad Gateway" in text
    assert "never-shown" not in text and "signed" in text
    assert pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/settings").content.count(
        url.encode()) == 1  # the tab link


def test_adding_a_webhook_seals_its_secret_and_is_audited_without_it(team):
    from jobs.models import AuditEvent, Webhook

    client = pf.client_for(team.users["admin"])
    response = client.post(f"/workspaces/{team.alpha.pk}/notifications", {
        "name": "ops", "url": "https://hooks.example.com/services/T0/SECRETPATH", "events": ["Failed", "SubmitFailed"],
        "enabled": "on", "secret": "hush-hush",
    })
    assert response.status_code == 302
    webhook = Webhook.objects.get(workspace=team.alpha, name="ops")
    assert webhook.events == ["Failed", "SubmitFailed"] and webhook.secret() == "hush-hush"
    assert "hush-hush" not in webhook.sealed_secret
    event = AuditEvent.objects.filter(workspace=team.alpha).first()
    assert event.details["event"] == "webhook-added" and event.details["webhook"]["url_host"] == \
        "https://hooks.example.com"
    assert "hush-hush" not in json.dumps(event.details) and "SECRETPATH" not in json.dumps(event.details)
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}").content.decode()
    assert "hush-hush" not in page and "A secret is set" in page

    # Editing with the secret left blank keeps it; the box to remove it removes it.
    data = {"name": "ops", "url": "", "events": ["Failed"], "enabled": "on", "secret": ""}
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", data)
    webhook.refresh_from_db()
    assert webhook.events == ["Failed"] and webhook.secret() == "hush-hush"
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", {**data, "clear_secret": "on"})
    webhook.refresh_from_db()
    assert not webhook.has_secret
    changes = [e.details.get("changes", {}) for e in AuditEvent.objects.filter(details__event="webhook-changed")]
    assert {"events", "signing"} <= set().union(*changes)


def test_a_webhook_added_twice_at_once_is_added_once_and_the_second_form_says_so(transactional_db):
    """QA: two posts of the Add form at once (a double click) both passed the name check before either saved, and the
    second's insert broke the one-name rule: a 500. Refused at the name instead, asking for the URL and secret again
    (never sent back to the page). The first waits at its save for the second (a bounded chance, not a sleep)."""
    from jobs.models import Webhook
    from tests.support.threads import second_while_first_saves

    team = pf.make_team()
    data = {"name": "ops", "url": "https://hooks.example.com/services/T0/B0", "events": ["Failed"], "enabled": "on",
            "secret": "hush-hush"}

    def add(client):  # signed in before: a sign-in's write would wait for the first save, and so miss the race
        return lambda: client.post(f"/workspaces/{team.alpha.pk}/notifications", data)

    answers = second_while_first_saves(add(pf.client_for(team.users["admin"])),
                                       add(pf.client_for(team.users["admin"])), Webhook)
    # Which one saves is the database's: SQLite queues the second behind the first, PostgreSQL lets it save first.
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    errors = refused.context["form"].errors
    assert errors["name"] == ["This workspace already has a webhook of that name."]
    assert errors["url"][0].startswith("Type the URL again") and errors["secret"][0].startswith("Type the signing")
    assert Webhook.objects.filter(workspace=team.alpha, name="ops").count() == 1


def test_two_webhooks_renamed_to_one_name_at_once_keep_their_names_and_the_second_form_says_so(transactional_db):
    """QA: two Edit posts renaming two webhooks to one name at once both passed the name check before either saved,
    and the second's update broke the one-name rule: a 500. Refused at the name instead, the URL and secret typed
    asked for again (never sent back to the page); the refused webhook keeps its name, URL and secret. The first
    waits at its save for the second (a bounded chance, not a sleep)."""
    from jobs.models import Webhook
    from tests.support.threads import second_while_first_saves

    team = pf.make_team()
    hooks = [make_webhook(team.alpha, f"https://hooks.example.com/{name}", name=name, secret=f"{name}-secret")
             for name in ("chat", "pager")]
    data = {"name": "ops", "url": "https://hooks.example.com/services/T0/B0", "events": ["Failed"], "enabled": "on",
            "secret": "hush-hush"}

    def rename(client, webhook):  # signed in before: a sign-in's write would wait for the first save
        return lambda: client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", data)

    answers = second_while_first_saves(rename(pf.client_for(team.users["admin"]), hooks[0]),
                                       rename(pf.client_for(team.users["admin"]), hooks[1]), Webhook)
    # Which one saves is the database's: SQLite queues the second behind the first, PostgreSQL lets it save first.
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    errors = refused.context["form"].errors
    assert errors["name"] == ["This workspace already has a webhook of that name."]
    assert errors["url"] == ["Type the URL again: it is never sent back to the page. Left empty, the current URL "
                             "stays."]
    assert errors["secret"][0].startswith("Type the signing secret again")
    kept = Webhook.objects.get(pk=refused.context["editing"].pk)  # the form stays on the refused webhook's Edit
    assert f"Edit {kept.name}</h2>" in refused.text and "/services/T0/B0" not in refused.text
    assert (kept.real_url(), kept.secret()) == (f"https://hooks.example.com/{kept.name}", f"{kept.name}-secret")
    assert sorted(Webhook.objects.filter(workspace=team.alpha).values_list("name", flat=True)) == sorted(
        ["ops", kept.name])


def webhook_rows_text() -> str:
    """Every column of every webhook row and audit event, as the database holds them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM jobs_webhook")
        rows = cursor.fetchall()
        cursor.execute("SELECT * FROM jobs_auditevent")
        rows += cursor.fetchall()
    return json.dumps(rows, default=str)


def test_a_webhook_url_is_sealed_shown_only_as_host_and_fingerprint_and_still_posted_to_whole(team, receiver):
    """A chat webhook's URL carries its credential (Slack's /services/T…/B…/<token>, a ?token=): not in the
    database in plain text, not on the Notifications page nor in its Edit form; the POST still goes to all of it."""
    from jobs import notify_models
    from jobs.models import AuditEvent, Webhook

    token = f"tok{secrets.token_hex(8)}"
    path = f"/services/T0/B0/{token}?token={token}q"
    url = receiver.url(path)
    client = pf.client_for(team.users["admin"])
    page_url = f"/workspaces/{team.alpha.pk}/notifications"
    assert client.post(page_url, {"name": "chat", "url": url, "events": ["Failed"], "enabled": "on"}).status_code \
        == 302
    webhook = Webhook.objects.get(workspace=team.alpha, name="chat")
    assert token not in webhook_rows_text()
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]  # what the audit log has always kept
    host = receiver.url("")
    assert (webhook.url_host, webhook.url_digest, webhook.real_url()) == (host, digest, url)
    assert AuditEvent.objects.get(details__event="webhook-added").details["webhook"]["url_digest"] == digest

    shown = f"{host}/… #{digest}"
    page = client.get(page_url).content.decode()
    assert token not in page and shown in page.split('class="mono webhook-url"')[1].split("</span>")[0]
    edit_url = f"{page_url}/{webhook.pk}"
    form = client.get(edit_url).content.decode()
    assert token not in form and host + "/services" not in form
    assert re.search(r'<input type="text" name="url"(?![^>]*value=)[^>]*>', form), "the box is empty"
    assert f"Left empty, the current URL stays ({shown})" in form
    # The template cannot be made to show it either.
    from django.template import Context, Template

    assert Template("{{ w.real_url }}").render(Context({"w": webhook})) == ""

    # The POST goes to the whole URL, path and query.
    assert notify_models.url_digest(url) == digest
    assert client.post(f"{edit_url}/test", HTTP_HX_REQUEST="true").status_code == 200
    assert len(receiver.posts(path)) == 1

    # Edit: left empty, the URL stays; typed, it is replaced (and the audit says so, by host and fingerprint).
    data = {"name": "chat", "url": "", "events": ["Failed", "Succeeded"], "enabled": "on"}
    assert client.post(edit_url, data).status_code == 302
    webhook.refresh_from_db()
    assert webhook.real_url() == url and webhook.events == ["Failed", "Succeeded"]
    other = receiver.url(f"/other/{token}")
    assert client.post(edit_url, {**data, "url": other}).status_code == 302
    webhook.refresh_from_db()
    assert webhook.real_url() == other and webhook.url_digest == notify_models.url_digest(other)
    [changed] = [e.details for e in AuditEvent.objects.filter(details__event="webhook-changed")
                 if "url_digest" in e.details["changes"]]
    assert token not in json.dumps(changed) and token not in webhook_rows_text()


def test_a_url_typed_in_a_refused_form_is_not_sent_back_and_is_asked_for_again_at_its_field(team):
    from jobs.models import Webhook

    again = "Type the URL again: it is never sent back to the page."
    client = pf.client_for(team.users["admin"])
    page_url = f"/workspaces/{team.alpha.pk}/notifications"
    url = "https://hooks.example.com/services/T0/B0/TYPEDTOKEN"
    data = {"name": "ops", "url": url, "events": [], "enabled": "on"}
    refused = client.post(page_url, data)
    assert refused.status_code == 200 and not Webhook.objects.exists()
    assert refused.context["form"].errors["url"] == [again]
    html = refused.content.decode()
    assert "TYPEDTOKEN" not in html and again in html.split('id="field-url"')[1].split("</div>\n</div>")[0]
    # Nothing typed on Add: required.
    empty = client.post(page_url, {**data, "url": "", "events": ["Failed"]})
    assert empty.context["form"].errors["url"] == ["Enter the URL to POST to, e.g. https://hooks.example.com/dlc."]
    assert client.post(page_url, {**data, "events": ["Failed"]}).status_code == 302

    # Edit: an empty box keeps the current URL, and the re-prompt says so.
    webhook = Webhook.objects.get(name="ops")
    edit_url = f"{page_url}/{webhook.pk}"
    refused = client.post(edit_url, {**data, "url": "https://hooks.example.com/NEWTOKEN"})
    assert refused.context["form"].errors["url"] == [again + " Left empty, the current URL stays."]
    assert "NEWTOKEN" not in refused.content.decode() and "TYPEDTOKEN" not in refused.content.decode()
    webhook.refresh_from_db()
    assert webhook.real_url() == url


def test_a_url_that_no_longer_unseals_fails_its_post_with_a_reason_not_an_empty_request(team, settings):
    """The box key changed (DLC_SECRET_BOX_KEY): the URL cannot be read back; the POST says so, as for the secret."""
    from jobs import notify

    settings.DLC_SECRET_BOX_KEY = "the-key-it-was-sealed-with"
    webhook = make_webhook(team.alpha, "https://hooks.example.com/services/T0/B0/x", name="sealed")
    settings.DLC_SECRET_BOX_KEY = "another-key"
    answer = notify.send_test(webhook)
    assert not answer.ok and answer.error == notify.URL_UNSEALABLE.error


@pytest.mark.django_db(transaction=True)
def test_the_migration_seals_each_webhook_url_and_unseals_it_backwards():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from jobs import notify_models

    before, after = [("jobs", "0034_reseal_secret_named_values")], [("jobs", "0035_seal_webhook_urls")]
    url = "https://hooks.slack.example/services/T0/B0/MIGRATEDTOKEN?x=1"
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        workspace = old.get_model("jobs", "Workspace").objects.create(name="W", backend="local")
        old.get_model("jobs", "Webhook").objects.create(workspace=workspace, name="chat", url=url, events=["Failed"])
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        row = new.get_model("jobs", "Webhook").objects.get(name="chat")
        assert (row.url_host, row.url_digest) == ("https://hooks.slack.example", notify_models.url_digest(url))
        assert notify_models.unsealed_url(row.sealed_url) == url and "MIGRATEDTOKEN" not in webhook_rows_text()
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps
        assert back.get_model("jobs", "Webhook").objects.get(name="chat").url == url
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"url": "ftp://example.com/x"}, "url", "Only http"),
    ({"url": "https://u:p@example.com/x"}, "url", "no credentials"),
    ({"events": []}, "events", "at least one"),
    ({"events": ["Running"]}, "events", "valid choice"),
    ({"name": "n" * 101}, "name", "at most 100"),
    ({"name": "   "}, "name", "required"),
    ({"name": "taken"}, "name", "already has a webhook"),
    ({"name": "TAKEN"}, "name", "named 'taken': names may not differ only in case"),
    ({"url": "http://[::1/x"}, "url", "Enter a valid URL"),
    ({"url": "http://example.com:port/x"}, "url", "Enter a valid URL"),
    ({"url": "not a url"}, "url", "Enter a valid URL, e.g. https://hooks.example.com/dlc."),
    ({"url": "https://example.com/" + "x" * 2000}, "url", "at most 2000"),
    ({"url": "https://example.com/a\x7f"}, "url", "control characters"),
    ({"url": "https://" + "h" * 300 + ".example.com/x"}, "url", "at most 63"),
    ({"url": "https://example.com/a\x00"}, "url", "Null characters"),
    ({"url": "https://example.com/\u00e9t\u00e9"}, "url", "Percent-encode"),
    ({"url": "http://169.254.169.254/latest/meta-data/"}, "url", "link-local"),
    ({"secret": "s" * 201}, "secret", "at most 200"),
    ({"secret": "   "}, "secret", "only spaces"),
    ({"secret": " \t "}, "secret", "only spaces"),
])
def test_bad_input_is_an_error_at_its_field(team, data, field, message):
    from jobs.models import Webhook

    make_webhook(team.alpha, "https://example.com/taken", name="taken")
    post = {"name": "new", "url": "https://example.com/x", "events": ["Failed"], **data}
    response = pf.client_for(team.users["admin"]).post(f"/workspaces/{team.alpha.pk}/notifications", post)
    assert response.status_code == 200
    errors = response.context["form"].errors
    # A URL typed is never sent back (it may carry the receiver's credential): at fault or not, it is asked again.
    again = {} if field == "url" else {"url": ["Type the URL again: it is never sent back to the page."]}
    assert {name: errors[name] for name in errors if name != field} == again, errors
    assert message in " ".join(errors[field]), errors
    html = response.content.decode()
    assert f'id="field-{field}"' in html and post["url"] not in html
    assert Webhook.objects.filter(workspace=team.alpha).count() == 1


def test_a_secret_typed_in_a_refused_form_is_asked_for_again_at_its_field(team):
    """QA: with an error elsewhere (URL ftp://x) the Signing secret box came back empty without a word; fixing the
    URL and saving made the webhook unsigned without the admin noticing."""
    from jobs.models import Webhook

    again = "Type the signing secret again: it is never sent back to the page."
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/notifications"
    data = {"name": "ops", "url": "ftp://x", "events": ["Failed"], "enabled": "on", "secret": "hush-hush"}
    refused = client.post(url, data)
    assert refused.status_code == 200 and not Webhook.objects.exists()
    assert refused.context["form"].errors["secret"] == [again]
    html = refused.content.decode()
    assert "hush-hush" not in html and again in html.split('id="field-secret"')[1].split("</div>\n</div>")[0]
    assert client.post(url, {**data, "url": "https://hooks.example.com/dlc"}).status_code == 302
    webhook = Webhook.objects.get(name="ops")
    assert webhook.secret() == "hush-hush"
    # Nothing typed: no re-prompt, only the error of the field at fault.
    untyped = client.post(url, {**data, "name": "ops2", "secret": ""})
    assert list(untyped.context["form"].errors) == ["url"]

    # Edit: an empty box keeps the current secret, and the re-prompt says so.
    edit = f"{url}/{webhook.pk}"
    refused = client.post(edit, {**data, "secret": "new-secret"})
    assert refused.status_code == 200 and refused.context["form"].errors["secret"] == [
        again + " Left empty, the current secret stays."]
    assert "new-secret" not in refused.content.decode()
    assert client.post(edit, {**data, "url": "https://hooks.example.com/dlc", "secret": ""}).status_code == 302
    webhook.refresh_from_db()
    assert webhook.secret() == "hush-hush" and webhook.real_url() == "https://hooks.example.com/dlc"


def test_the_signing_secret_is_kept_exactly_as_typed(team):
    """The receiver signs with the secret as typed: surrounding spaces are part of it."""
    from jobs.models import Webhook

    client = pf.client_for(team.users["admin"])
    response = client.post(f"/workspaces/{team.alpha.pk}/notifications", {
        "name": "padded", "url": "https://hooks.example.com/dlc", "events": ["Failed"], "enabled": "on",
        "secret": "  s3cret with spaces  ",
    })
    assert response.status_code == 302
    assert Webhook.objects.get(workspace=team.alpha, name="padded").secret() == "  s3cret with spaces  "


def test_a_renamed_webhook_may_not_take_another_ones_name_in_other_case_and_the_database_refuses_twins(team):
    from django.db import IntegrityError, transaction

    from jobs.models import Webhook

    first = make_webhook(team.alpha, "https://example.com/a", name="deploys")
    second = make_webhook(team.alpha, "https://example.com/b", name="other")
    client = pf.client_for(team.users["admin"])

    def edit(webhook, name):
        return client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}",
                           {"name": name, "url": "", "events": ["Failed"], "enabled": "on"})

    refused = edit(second, "DEPLOYS")
    assert refused.status_code == 200
    assert "names may not differ only in case" in refused.context["form"].errors["name"][0]
    assert edit(first, "Deploys").status_code == 302, "its own name in other case"
    # The database holds the rule too (migration 0040; the twins saved before it were renamed there).
    with pytest.raises(IntegrityError), transaction.atomic():
        make_webhook(team.alpha, "https://example.com/c", name="DEPLOYS")
    assert sorted(Webhook.objects.filter(workspace=team.alpha).values_list("name", flat=True)) == [
        "Deploys", "other"]


def test_webhooks_added_at_once_with_names_differing_only_in_case_are_one_and_a_name_error(transactional_db):
    """QA: Add posts of `Ops` and `ops` at once both passed the name check (it ignores case) and both saved: the
    database held names unique as written only. It refuses the second now (migration 0040), and the form says what
    its check says, not a 500. The first waits at its save for the second (a bounded chance, not a sleep)."""
    from jobs.models import Webhook
    from tests.support.threads import second_while_first_saves

    team = pf.make_team()

    def add(client, name):  # signed in before: a sign-in's write would wait for the first save
        return lambda: client.post(f"/workspaces/{team.alpha.pk}/notifications", {
            "name": name, "url": "https://hooks.example.com/services/T0/B0", "events": ["Failed"], "enabled": "on"})

    answers = second_while_first_saves(add(pf.client_for(team.users["admin"]), "Ops"),
                                       add(pf.client_for(team.users["admin"]), "ops"), Webhook)
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    [name] = Webhook.objects.filter(workspace=team.alpha).values_list("name", flat=True)
    assert refused.context["form"].errors["name"] == [
        f"This workspace has a webhook named '{name}': names may not differ only in case."]


def test_every_test_post_has_a_fresh_event_id(team):
    """QA: the README says every POST has an event_id; the "Send test" one had none."""
    import uuid

    from jobs import notify

    webhook = make_webhook(team.alpha, "https://example.com/t", name="t")
    first, second = notify.ping_payload(webhook), notify.ping_payload(webhook)
    assert first["event"] == "test" and uuid.UUID(first["event_id"]) != uuid.UUID(second["event_id"])


def test_send_test_posts_now_and_answers_in_place(team, receiver):
    receiver.script = {"/bad": [404]}
    good = make_webhook(team.alpha, receiver.url("/good"), secret="k", name="good")
    bad = make_webhook(team.alpha, receiver.url("/bad"), name="bad")
    client = pf.client_for(team.users["admin"])
    ok = client.post(f"/workspaces/{team.alpha.pk}/notifications/{good.pk}/test", HTTP_HX_REQUEST="true")
    assert ok.status_code == 200 and 'data-ok="true"' in ok.content.decode() and b"<html" not in ok.content
    headers, body = receiver.posts("/good")[0]
    assert json.loads(body)["event"] == "test" and json.loads(body)["event_id"]
    assert headers["X-DLC-Signature"] == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    failed = client.post(f"/workspaces/{team.alpha.pk}/notifications/{bad.pk}/test", HTTP_HX_REQUEST="true")
    assert 'data-ok="false"' in failed.content.decode() and "HTTP 404" in failed.content.decode()


def test_a_destination_refused_at_send_time_is_never_connected_to(team, receiver, settings):
    """Saved while allowed (or a name that resolved elsewhere when saved, as a DNS-rebinding name does): the POST
    checks the address it is about to connect to, and the delivery records the refusal like any failure."""
    from jobs import notify
    from jobs.models import WebhookDelivery

    connects = []
    receiver.server.verify_request = lambda *args: connects.append(args) or True
    by_name = make_webhook(team.alpha, receiver.url("/named").replace("127.0.0.1", "localhost"), name="named")
    by_ip = make_webhook(team.alpha, receiver.url("/ip"), name="ip")
    settings.DLC_WEBHOOK_ALLOWED_HOSTS = []
    settings.DLC_WEBHOOK_RETRY_BASE_SECONDS = 0
    answer = notify.send_test(by_name)
    assert not answer.ok and answer.code is None and "refused" in answer.error and "loopback" in answer.error
    job = ended_job(team.alpha)
    notify.notify_job(job.pk)
    delivery = WebhookDelivery.objects.get(webhook=by_ip, job=job)
    assert delivery.last_code is None and "refused" in delivery.last_error and delivery.state == "retrying"
    assert connects == [] and receiver.received == []  # not even a TCP connection: no port probing by errors
    settings.DLC_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.0/8", "::1"]
    assert notify.send_test(by_name).ok and notify.send_test(by_ip).ok


def test_send_test_of_a_refused_destination_shows_the_refusal_not_an_answer(team, settings):
    settings.DLC_WEBHOOK_ALLOWED_HOSTS = []
    webhook = make_webhook(team.alpha, "http://169.254.169.254/latest/", events=["Failed"], name="meta")
    page = pf.client_for(team.users["admin"]).post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/test",
                                                   HTTP_HX_REQUEST="true").content.decode()
    assert 'data-ok="false"' in page and "link-local" in page and "HTTP" not in page


def test_a_webhook_failing_delivery_after_delivery_is_paused_until_an_admin_enables_it(team, receiver, settings):
    from jobs import notify
    from jobs.models import AuditEvent, Webhook, WebhookDelivery

    settings.DLC_WEBHOOK_ATTEMPTS = 1
    settings.DLC_WEBHOOK_PAUSE_AFTER = 3
    receiver.script = {"/gone": [500, 500, 200, 500]}
    webhook = make_webhook(team.alpha, receiver.url("/gone"), events=["Succeeded"], name="gone")
    for _ in range(3):  # failed, failed, delivered: a delivery starts the count over
        notify.notify_job(ended_job(team.alpha).pk)
    assert Webhook.objects.get(pk=webhook.pk).failures_in_a_row == 0
    for n in range(3):
        notify.notify_job(ended_job(team.alpha).pk)
        webhook.refresh_from_db()
        assert webhook.enabled == (n < 2) and webhook.failures_in_a_row == n + 1
    assert webhook.paused_at and "3 deliveries in a row failed" in webhook.paused_reason
    held = ended_job(team.alpha)  # paused: its delivery is made held, nothing POSTed
    notify.notify_job(held.pk)
    assert len(receiver.posts("/gone")) == 6
    assert WebhookDelivery.objects.get(job=held).state == "paused"
    [event] = AuditEvent.objects.filter(workspace=team.alpha, details__event="webhook-paused")
    assert event.actor_name == "system" and event.details["webhook"] == "gone"

    client = pf.client_for(team.users["admin"])
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert "paused</span>" in page and "3 deliveries in a row failed" in page
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/toggle")
    webhook.refresh_from_db()
    assert webhook.enabled and not webhook.paused_at and not webhook.paused_reason and webhook.failures_in_a_row == 0
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert "3 deliveries in a row failed" not in page


def test_a_secret_that_cannot_be_unsealed_is_not_sent_unsigned(team, receiver, settings):
    from jobs import notify

    webhook = make_webhook(team.alpha, receiver.url("/signed"), secret="old")
    settings.DLC_SECRET_BOX_KEY = "another-key"  # the key changed since the secret was sealed
    answer = notify.send_test(webhook)
    assert not answer.ok and "cannot be unsealed" in answer.error and receiver.posts("/signed") == []


def test_disable_and_delete_are_audited(team):
    from jobs.models import AuditEvent, Webhook

    webhook = make_webhook(team.alpha, "https://example.com/x", name="x")
    client = pf.client_for(team.users["admin"])
    assert client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/toggle").status_code == 302
    webhook.refresh_from_db()
    assert not webhook.enabled
    assert client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/delete").status_code == 302
    assert not Webhook.objects.filter(pk=webhook.pk).exists()
    events = [e.details["event"] for e in AuditEvent.objects.filter(workspace=team.alpha).order_by("id")]
    assert events[-2:] == ["webhook-disabled", "webhook-deleted"]
    assert client.post(f"/workspaces/{team.beta.pk}/notifications/{webhook.pk}/delete").status_code == 404


# -- skipped dependents, sweeps, resend, paused --------------------------------------------------------------


def test_a_skipped_dependent_is_job_skipped_naming_its_upstream_not_a_stop(team, receiver,
                                                                           django_capture_on_commit_callbacks):
    from jobs import dependencies, notify
    from jobs.models import WebhookDelivery

    skips = make_webhook(team.alpha, receiver.url("/skips"), events=["Skipped"], name="skips")
    make_webhook(team.alpha, receiver.url("/stops"), events=["Stopped"], name="stops")
    upstream = ended_job(team.alpha, team.users["member"], status="Failed", owe=False)
    waiting = pf.make_job(team.alpha, team.users["member"], "after-it", status="Waiting", dlc_job_id="", pods=[],
                          run_after=upstream)
    with django_capture_on_commit_callbacks(execute=False):
        assert dependencies.release([upstream.pk]).skipped == [waiting.pk]  # the real path: _skip ends it
    [delivery] = WebhookDelivery.objects.filter(job=waiting)
    assert delivery.webhook == skips and delivery.status == "Skipped"
    notify.notify_job(waiting.pk)
    [(_, body)] = receiver.posts("/skips")
    data = json.loads(body)
    assert data["event"] == "job.skipped" and data["event_id"] == str(delivery.event_id)
    assert data["job"]["status"] == "Stopped" and data["job"]["upstream_job_id"] == upstream.pk
    assert data["job"]["reason_code"] == dependencies.SKIPPED
    assert receiver.posts("/stops") == []  # a receiver of real stops is not told of it


def sweep_of_trials(team, statuses: list[str], name: str = "lr"):
    """A sweep whose trials are jobs with these statuses (an ended one has its finished_at)."""
    from jobs import status as st
    from jobs.models import Sweep, SweepTrial

    sweep = Sweep.objects.create(workspace=team.alpha, owner=team.users["member"], name=name,
                                 parameters=[["LR", [str(n) for n in range(len(statuses))]]])
    jobs = []
    for number, status in enumerate(statuses, 1):
        ended = {"finished_at": timezone.now()} if status in st.TERMINAL else {}
        job = pf.make_job(team.alpha, team.users["member"], f"{name}-{number}", status=status, **ended)
        SweepTrial.objects.create(sweep=sweep, job=job, number=number, values={"LR": str(number)})
        jobs.append(job)
    return sweep, jobs


@pytest.mark.parametrize(("events", "sweeps", "statuses", "notifies"), [
    (["Succeeded", "Failed"], "sweep", ["Succeeded", "Failed"], True),
    (["Failed"], "sweep", ["Succeeded", "Succeeded"], False),  # a webhook for failures: no failure, no event
    (["Failed"], "sweep", ["Succeeded", "SubmitFailed", "Failed"], True),
    (["Succeeded"], "trial", ["Succeeded"], False),  # per trial: its trials' job events instead
])
def test_which_ended_sweeps_make_a_sweep_event(team, events, sweeps, statuses, notifies):
    from jobs import notify

    webhook = make_webhook(team.alpha, "https://hooks.example.com/x", events=events, sweeps=sweeps)
    assert notify.sweep_notifies(webhook, statuses) is notifies
    webhook.enabled = False
    assert notify.sweep_notifies(webhook, statuses) is False


def test_a_sweep_makes_one_delivery_when_its_last_trial_ends_and_per_trial_webhooks_one_per_trial(
        team, django_capture_on_commit_callbacks):
    from jobs import lifecycle, notify
    from jobs.models import WebhookDelivery

    per_sweep = make_webhook(team.alpha, "https://hooks.example.com/s", events=["Succeeded", "Failed"],
                             name="per-sweep")
    per_trial = make_webhook(team.alpha, "https://hooks.example.com/t", events=["Succeeded", "Failed"],
                             sweeps="trial", name="per-trial")
    assert per_sweep.sweeps == "sweep"  # a new webhook's default
    sweep, jobs = sweep_of_trials(team, ["Running", "Running", "Running"])
    for n, (job, status) in enumerate(zip(jobs[::-1], ["Succeeded", "Failed", "Succeeded"], strict=True)):
        job.status, job.finished_at = status, timezone.now()
        job.save()
        with django_capture_on_commit_callbacks(execute=False) as enqueued:
            lifecycle.enqueue_notify(team.alpha.pk, [job.pk])
        # The last trial here is trial 1; until then the per-sweep webhook owes nothing.
        made = WebhookDelivery.objects.filter(webhook=per_sweep)
        assert made.count() == (1 if n == 2 else 0)
        assert len(enqueued) == 1  # this job's (for per-trial), which for the last is also the sweep's key
    [summary] = WebhookDelivery.objects.filter(webhook=per_sweep)
    assert (summary.job_id, summary.status, summary.is_sweep) == (jobs[0].pk, "SweepEnded", True)
    assert WebhookDelivery.objects.filter(webhook=per_trial).count() == 3
    # The end seen again (a second sync): no second summary; a trial other than the first ending last is keyed
    # on the first all the same, and its notify task is enqueued for that job.
    for job in jobs:
        notify.deliveries_for(job)
    assert WebhookDelivery.objects.filter(webhook=per_sweep).count() == 1
    _, others = sweep_of_trials(team, ["Succeeded", "Running"], name="other")
    others[1].status, others[1].finished_at = "Failed", timezone.now()
    others[1].save()
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        lifecycle.enqueue_notify(team.alpha.pk, [others[1].pk])
    assert WebhookDelivery.objects.get(webhook=per_sweep, status="SweepEnded", job__display_name="other-1")
    assert len(enqueued) == 2  # the per-trial delivery's job (other-2) and the summary's (other-1)


def test_the_sweep_event_counts_its_trials_ends_and_lists_each_signed_like_a_job_event(team, receiver, settings):
    from jobs import notify
    from jobs.models import WebhookDelivery

    settings.DLC_BASE_URL = "https://console.example"
    webhook = make_webhook(team.alpha, receiver.url("/sweeps"), events=["Failed"], secret="k")
    sweep, jobs = sweep_of_trials(team, ["Succeeded", "Failed", "Succeeded"], name="grid")
    [delivery] = notify.deliveries_for(jobs[2])
    assert notify.notify_job(delivery.job_id) is None
    [(headers, body)] = receiver.posts("/sweeps")
    assert headers["X-DLC-Signature"] == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    data = json.loads(body)
    assert data["event"] == "sweep.ended" and data["event_id"] == str(delivery.event_id) and data["sent_at"]
    assert data["sweep"] == {
        "id": sweep.pk, "name": "grid", "workspace": "Alpha", "owner": "member",
        "url": f"https://console.example/sweeps/{sweep.pk}", "created_at": sweep.created_at.isoformat(),
        "trial_count": 3, "counts": {"Succeeded": 2, "Failed": 1},
        "trials": [{"number": n, "job_id": j.pk, "name": f"grid-{n}", "status": j.status,
                    "url": f"https://console.example/jobs/{j.pk}"} for n, j in enumerate(jobs, 1)],
    }
    assert WebhookDelivery.objects.get(pk=delivery.pk).state == "delivered"
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert f'href="/sweeps/{sweep.pk}">grid</a>' in page and "sweep ended" in page
    assert webhook.sweeps == "sweep" and "one event when the sweep ends" in page


def test_a_given_up_delivery_is_resent_once_under_the_same_event_id(team, receiver, settings):
    from jobs import notify
    from jobs.models import AuditEvent, WebhookDelivery

    settings.DLC_WEBHOOK_ATTEMPTS = 1
    receiver.script = {"/flaky": [500, 200]}
    webhook = make_webhook(team.alpha, receiver.url("/flaky"), name="flaky")
    job = ended_job(team.alpha)
    notify.notify_job(job.pk)
    original = WebhookDelivery.objects.get(job=job)
    assert original.state == "failed" and original.resendable
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/deliveries/{original.pk}/resend"
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert f'action="{url}"' in page
    assert client.post(url).status_code == 302
    assert client.post(url).status_code == 302  # clicked twice: no second copy
    [copy] = WebhookDelivery.objects.filter(resend_of=original)
    assert WebhookDelivery.objects.filter(job=job).count() == 2
    assert copy.event_id == original.event_id and copy.state == "pending"
    assert notify.resend(webhook, original.pk) is None and notify.resend(webhook, copy.pk) is None  # owed, not given up
    notify.notify_job(job.pk)
    bodies = [json.loads(body) for _, body in receiver.posts("/flaky")]
    assert [b["event_id"] for b in bodies] == [str(original.event_id)] * 2
    copy.refresh_from_db()
    assert copy.state == "delivered" and not WebhookDelivery.objects.get(pk=original.pk).resendable
    [event] = AuditEvent.objects.filter(details__event="webhook-delivery-resent")
    assert event.job == job and event.details["event_id"] == str(original.event_id)
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert f'action="{url}"' not in page and "resent" in page


def test_resend_is_for_a_given_up_delivery_of_an_enabled_webhook_of_the_workspace(team, receiver):
    from jobs.models import WebhookDelivery

    webhook = make_webhook(team.alpha, receiver.url("/x"), enabled=False, name="off")
    job = ended_job(team.alpha, owe=False)
    failed = WebhookDelivery.objects.create(webhook=webhook, job=job, status="Succeeded", attempts=4)
    client = pf.client_for(team.users["admin"])
    base = f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/deliveries/{failed.pk}/resend"
    assert client.post(base, follow=True).content.decode().count("Enable off first") == 1
    other = make_webhook(team.alpha, receiver.url("/y"), name="other")
    wrong = f"/workspaces/{team.alpha.pk}/notifications/{other.pk}/deliveries/{failed.pk}/resend"
    assert client.post(wrong).status_code == 302  # another webhook's delivery: nothing
    assert WebhookDelivery.objects.count() == 1


def test_enabling_a_paused_webhook_sends_its_held_deliveries_and_drops_those_over_a_day_old(team, receiver):
    from jobs import notify
    from jobs.models import WebhookDelivery

    webhook = make_webhook(team.alpha, receiver.url("/back"), name="back", enabled=False,
                           paused_at=timezone.now(), paused_reason="Paused after 20 deliveries in a row failed")
    fresh, stale = ended_job(team.alpha, owe=False), ended_job(team.alpha, owe=False)
    now = timezone.now()
    WebhookDelivery.objects.create(webhook=webhook, job=fresh, status="Succeeded", held_at=now, attempts=1)
    WebhookDelivery.objects.create(webhook=webhook, job=stale, status="Succeeded", held_at=now, attempts=1,
                                   created_at=now - timedelta(days=2))
    client = pf.client_for(team.users["admin"])
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    assert page.count('data-state="paused"') == 2 and "retrying" not in page
    answer = client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/toggle", follow=True)
    text = " ".join(answer.content.decode().split())
    assert "paused deliveries are sent now" in text and "1 paused for over a day was dropped: Resend" in text
    assert WebhookDelivery.objects.get(job=fresh).state == "retrying"  # its second attempt, due now
    stale_row = WebhookDelivery.objects.get(job=stale)
    assert stale_row.state == "failed" and "dropped" in stale_row.last_error
    assert f"/deliveries/{stale_row.pk}/resend" in text
    notify.notify_job(fresh.pk)
    assert [json.loads(b)["job"]["id"] for _, b in receiver.posts("/back")] == [fresh.pk]


def test_every_given_up_delivery_can_be_resent_from_the_webhooks_deliveries_page(team, receiver):
    from jobs import notify
    from jobs.models import WebhookDelivery

    webhook = make_webhook(team.alpha, receiver.url("/all"), name="all")
    now = timezone.now()
    rows = []
    for n in range(8):  # given up, delivered, given up, ...: the oldest given-up ones far beyond the 5 newest
        job = ended_job(team.alpha, owe=False)
        rows.append(WebhookDelivery.objects.create(webhook=webhook, job=job, status="Succeeded", attempts=4,
                                                   delivered_at=now if n % 2 else None))
    given_up = [d.pk for d in reversed(rows[::2])]
    page, before = notify.deliveries_page(webhook, given_up=True, size=3)
    assert [d.pk for d in page] == given_up[:3] and before == given_up[2]
    page, before = notify.deliveries_page(webhook, given_up=True, size=3, before=before)
    assert [d.pk for d in page] == given_up[3:] and before is None

    client = pf.client_for(team.users["admin"])
    base = f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}/deliveries"
    assert f'href="{base}"' in client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    text = client.get(base).content.decode()
    assert text.count('<tr id="delivery-') == 8 and text.count('class="resend"') == 4
    text = client.get(base + "?given_up=1").content.decode()
    assert text.count('<tr id="delivery-') == 4 and 'data-state="delivered"' not in text
    oldest = rows[0].pk
    assert f'action="{base}/{oldest}/resend"' in text
    for cursor in ("x", "\u00b2"):  # a bad cursor (a superscript two is a digit to str.isdigit) is page 1, not a 500
        assert client.get(f"{base}?before={cursor}").status_code == 200
    answer = client.post(f"{base}/{oldest}/resend", {"back": "given_up"})
    assert answer.status_code == 302 and answer["Location"] == base + "?given_up=1"
    assert WebhookDelivery.objects.get(resend_of_id=oldest).state == "pending"
    answer = client.post(f"{base}/{rows[2].pk}/resend", {"back": "https://evil.example/"})
    assert answer["Location"] == f"/workspaces/{team.alpha.pk}/notifications"  # only our pages


def test_the_form_sets_the_sweep_choice_and_keeps_it_when_left_out(team):
    from jobs.models import AuditEvent, Webhook

    client = pf.client_for(team.users["admin"])
    base = {"name": "s", "url": "https://hooks.example.com/s", "events": ["Failed"], "enabled": "on"}
    assert client.post(f"/workspaces/{team.alpha.pk}/notifications", {**base, "sweeps": "trial"}).status_code == 302
    webhook = Webhook.objects.get(name="s")
    assert webhook.sweeps == "trial"
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", base)  # an older form, no choice
    assert Webhook.objects.get(pk=webhook.pk).sweeps == "trial"
    client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", {**base, "sweeps": "sweep"})
    assert Webhook.objects.get(pk=webhook.pk).sweeps == "sweep"
    assert AuditEvent.objects.filter(details__event="webhook-changed").last().details["changes"]["sweeps"] == {
        "from": "trial", "to": "sweep"}
    bad = client.post(f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}", {**base, "sweeps": "both"})
    assert bad.status_code == 200 and "valid choice" in " ".join(bad.context["form"].errors["sweeps"])
    assert 'id="field-sweeps"' in bad.content.decode()


def test_webhooks_made_before_keep_an_event_per_trial_and_hear_of_skipped_jobs(team):
    """Migration 0025: existing rows are added with "trial" (what their receivers get now), and a webhook that
    heard of skipped dependents as Stopped ends hears of them as Skipped. Its data step, run on today's models."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("jobs.migrations.0025_webhook_sweep_summary")
    added = migration.Migration.operations[0]
    assert (added.name, added.field.default) == ("sweeps", "trial")
    assert migration.Migration.operations[1].field.default == "sweep"
    stops = make_webhook(team.alpha, "https://hooks.example.com/a", events=["Stopped"], name="a")
    fails = make_webhook(team.alpha, "https://hooks.example.com/b", events=["Failed"], name="b")
    migration.keep_old_behaviour(apps, None)
    migration.keep_old_behaviour(apps, None)  # twice: no second Skipped
    stops.refresh_from_db()
    fails.refresh_from_db()
    assert (stops.events, fails.events) == (["Stopped", "Skipped"], ["Failed"])
# -- with the real stack --------------------------------------------------------------------------------------


def seal_with_the_stack_key(stack, settings) -> None:
    """Seal here with the key the stack's worker unseals with (a file in its data dir), as a web server and its
    worker share one: the webhook URLs and signing secrets a test makes are read by the worker that POSTs them."""
    key_file = stack.data_dir / "secret_box_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(32))
    settings.DLC_SECRET_BOX_KEY = key_file.read_text().strip()


@pytest.mark.integration
def test_jobs_that_end_notify_each_webhook_once_with_a_valid_signature(stack, member, workspace, receiver, settings):
    from jobs import status as st
    from jobs.models import WebhookDelivery
    from jobs.views import save_and_enqueue
    from tests.test_lifecycle import job_body, use_broker, wait_for
    from tests.test_sync import status_of, submit_through_the_stack

    seal_with_the_stack_key(stack, settings)
    receiver.script = {"/flaky": [500, 200]}
    make_webhook(workspace, receiver.url("/all"), events=["Succeeded", "Failed", "SubmitFailed"], secret="shh",
                 name="all")
    make_webhook(workspace, receiver.url("/flaky"), events=["Succeeded"], name="flaky")
    make_webhook(workspace, receiver.url("/off"), events=["Succeeded", "Failed"], enabled=False, name="off")

    good = submit_through_the_stack(stack, workspace, member, "echo fine")
    bad = submit_through_the_stack(stack, workspace, member, "echo broken; exit 1")
    # DLC refuses a body it cannot run (PodCount 0): a permanent error, the job ends SubmitFailed.
    body = job_body("echo never")
    body["JobSpecs"][0]["PodCount"] = 0
    with use_broker(stack.redis_url):
        refused = save_and_enqueue(workspace=workspace, owner=member, body=body)

    wait_for(lambda: (status_of(good), status_of(bad), status_of(refused)) == ("Succeeded", "Failed",
                                                                               st.SUBMIT_FAILED),
             timeout=60, what="jobs ended")
    wait_for(lambda: len(receiver.posts("/all")) >= 3 and len(receiver.posts("/flaky")) >= 2, timeout=30,
             what="webhooks called")

    by_job = {}
    for headers, body in receiver.posts("/all"):
        assert headers["X-DLC-Signature"] == "sha256=" + hmac.new(b"shh", body, hashlib.sha256).hexdigest()
        data = json.loads(body)
        by_job.setdefault(data["job"]["id"], []).append(data["event"])
    assert by_job == {good.pk: ["job.succeeded"], bad.pk: ["job.failed"], refused.pk: ["job.submitfailed"]}

    flaky = receiver.posts("/flaky")
    assert [json.loads(b)["job"]["id"] for _, b in flaky] == [good.pk, good.pk]
    assert "X-DLC-Signature" not in flaky[0][0]
    delivery = WebhookDelivery.objects.get(webhook__name="flaky", job=good)
    wait_for(lambda: WebhookDelivery.objects.get(pk=delivery.pk).delivered_at is not None, timeout=10,
             what="delivery recorded")
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and delivery.last_code == 200 and delivery.state == "delivered"
    assert receiver.posts("/off") == [] and len(receiver.posts("/all")) == 3  # nothing more came meanwhile


@pytest.mark.integration
def test_a_sweep_is_one_sweep_ended_for_a_per_sweep_webhook_and_a_job_event_per_trial_for_the_other(
        stack, member, workspace, receiver, settings):
    """Three trials run by the stack's worker and synced by its beat: the webhook set to one event per sweep gets
    exactly one sweep.ended, the one set per trial exactly three job events, none of them twice."""
    import time

    from jobs import sweeps
    from tests.test_lifecycle import job_body, use_broker, wait_for
    from tests.test_sync import status_of

    seal_with_the_stack_key(stack, settings)
    make_webhook(workspace, receiver.url("/sweep"), events=["Succeeded", "Failed"], name="per-sweep")
    make_webhook(workspace, receiver.url("/trial"), events=["Succeeded", "Failed"], sweeps="trial", name="per-trial")
    grid, errors = sweeps.parse("SEED = 1, 2, 3", limit=50)
    assert not errors
    body = job_body('echo "seed $SEED"; test "$SEED" != 2', "hooked")
    with use_broker(stack.redis_url):
        sweep = sweeps.launch(workspace=workspace, owner=member, name="hooked", grid=grid,
                              found=sweeps.trials(body, grid), hints={}, secrets={})
    jobs = [t.job for t in sweep.trials.select_related("job").order_by("number")]
    wait_for(lambda: [status_of(j) for j in jobs] == ["Succeeded", "Failed", "Succeeded"], timeout=90,
             what="the sweep's trials ended")
    wait_for(lambda: receiver.posts("/sweep") and len(receiver.posts("/trial")) >= 3, timeout=30,
             what="webhooks called")
    time.sleep(1.5)  # a second sweep.ended or a trial's event to the per-sweep webhook would be in by now
    [(_, body)] = receiver.posts("/sweep")
    data = json.loads(body)
    assert data["event"] == "sweep.ended" and data["sweep"]["id"] == sweep.pk
    assert data["sweep"]["counts"] == {"Succeeded": 2, "Failed": 1}
    assert [(t["job_id"], t["status"]) for t in data["sweep"]["trials"]] == [
        (jobs[0].pk, "Succeeded"), (jobs[1].pk, "Failed"), (jobs[2].pk, "Succeeded")]
    trial_events = sorted((json.loads(b)["job"]["id"], json.loads(b)["event"]) for _, b in receiver.posts("/trial"))
    assert trial_events == [(jobs[0].pk, "job.succeeded"), (jobs[1].pk, "job.failed"), (jobs[2].pk, "job.succeeded")]


# Last in the module: quiet_stack pauses the stack's beat until the module ends, and the test above needs it.
@pytest.mark.integration
def test_a_sync_notifies_the_end_it_watched_not_a_job_imported_already_ended(ws, backend, quiet_stack, receiver,
                                                                             settings):
    """A job created outside the console that ended before the import is no news; the console's own job ending
    is. The stack's real worker (its beat paused) runs the notify tasks the in-process sync enqueues."""
    import time

    from alibabacloud_pai_dlc20201203 import models as sdk

    from jobs import lifecycle
    from jobs.models import Job, WebhookDelivery
    from tests.test_lifecycle import job_body, make_job, use_broker, wait_for

    seal_with_the_stack_key(quiet_stack, settings)
    make_webhook(ws, receiver.url("/ends"), events=["Succeeded"])
    outside = backend.client().create_job(sdk.CreateJobRequest().from_map(job_body("echo outside"))).body.job_id
    backend.wait_for_status(outside, ("Succeeded",), timeout=30)
    ours = make_job(ws, command="echo ours")
    assert lifecycle.submit(ours.pk) == "created"

    with use_broker(quiet_stack.redis_url):
        wait_for(lambda: lifecycle.sync_workspace(ws) is not None and Job.objects.get(pk=ours.pk).status == "Succeeded",
                 timeout=30, what="our job ended in a sync")
    imported = Job.objects.get(workspace=ws, dlc_job_id=outside)
    assert imported.imported and imported.status == "Succeeded"
    wait_for(lambda: receiver.posts("/ends"), timeout=15, what="our job's end notified")
    time.sleep(1.5)  # a wrongly enqueued notification of the imported job would be in by now
    assert [json.loads(body)["job"]["id"] for _, body in receiver.posts("/ends")] == [ours.pk]
    assert not WebhookDelivery.objects.filter(job=imported).exists()


# -- mail files (jobs.notify_email under make run) ----------------------------------------------------------


def test_under_make_run_each_mail_is_a_file_of_its_own(team, settings, tmp_path):
    from email import message_from_bytes, policy

    from django.core.mail import EmailMessage

    from jobs import notify_email

    # Django's file backend names a connection's file by the second and the backend object's id() and appends to
    # it: seen under make run as two mails in one file when a backend took a freed one's address. That reuse cannot
    # be caused on demand; mails over one connection share Django's file the same way, and can be.
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    connection = notify_email.mail_connection()
    assert connection.send_messages([EmailMessage(subject=f"mail {n}", body="b", to=["me@example.com"])
                                     for n in range(2)]) == 2
    connection.send_messages([EmailMessage(subject="mail 2", body="b", to=["me@example.com"])])
    user = team.users["member"]
    user.email = "me@example.com"
    user.save(update_fields=["email"])
    assert notify_email.send_test(user).ok
    files = list(tmp_path.glob("*.log"))
    subjects = sorted(message_from_bytes(f.read_bytes(), policy=policy.default)["Subject"] for f in files)
    assert subjects == ["[DLC Console] Test email", "mail 0", "mail 1", "mail 2"]
