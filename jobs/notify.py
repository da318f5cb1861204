"""Job notifications by webhook: which job ends notify whom, the JSON payload, its signature, and the POST.

Plain functions; jobs.tasks.notify_job is the thin Celery task over notify_job(). A job end makes at most one
WebhookDelivery per webhook (its unique key), tried until the receiver answers 2xx or the attempts run out.

Two kinds of end have events of their own. A job skipped because the job it was to run after did not succeed
(jobs.dependencies.SKIPPED) is "job.skipped", not "job.stopped". A sweep's trials are, for a webhook set to one
event per sweep (Webhook.sweeps), one "sweep.ended" when the last trial ends, decided by the same rule as the
sweep's mail (jobs.notify_email.finished_sweeps) and keyed like it on the first trial's job.

Every delivery carries an event_id; a resend of a given-up delivery (an admin's "Resend") carries the same one,
so that a receiver can drop a copy of what it got after all.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import io
import ipaddress
import json
import socket
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from jobs import audit, costs, dependencies, diagnosis, dlc
from jobs import status as st
from jobs.models import AuditEvent, Job, Webhook, WebhookDelivery
from jobs.notify_models import BUDGET, EVENTS, IDLE, PER_SWEEP, SKIPPED, SWEEP_ENDED, BudgetAlert, is_idle
from jobs.sweep_models import Sweep, SweepTrial

EVENT_STATUSES = frozenset(value for value, _ in EVENTS)
TIMEOUT = 5.0  # seconds: a receiver slower than this is retried later, it does not hold a worker
# A try holds its delivery this long ahead (the claim): longer than any POST can take.
CLAIM = timedelta(seconds=TIMEOUT + 30)
# Celery's countdown may fire a hair before the time noted on the row.
EARLY = timedelta(milliseconds=200)
# The sweep re-enqueues owed deliveries up to this age; a receiver down for longer is not owed any more.
SWEEP_WINDOW = timedelta(days=1)
SIGNATURE_HEADER = "X-DLC-Signature"


# -- what is sent ----------------------------------------------------------------------------------------


def event_name(status: str) -> str:
    """The payload's "event" for a delivery's status: job.succeeded ... job.skipped, job.idle, or sweep.ended."""
    if is_idle(status):
        return "job.idle"
    return "sweep.ended" if status == SWEEP_ENDED else f"job.{status.lower()}"


def end_of(job: Job) -> str:
    """The end a webhook hears of: the job's status, or SKIPPED for a job that never ran because its upstream did
    not succeed (Stopped in the job list, but no one stopped it)."""
    if job.status == "Stopped" and job.reason_code == dependencies.SKIPPED:
        return SKIPPED
    return job.status


def job_url(job: Job) -> str:
    return settings.DLC_BASE_URL + job.get_absolute_url()


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _diagnosis(job: Job, status: str) -> dict[str, str] | None:
    if status not in diagnosis.DIAGNOSED:
        return None
    found = diagnosis.for_job(job, read_dlc=True)
    return {"id": found.id, "title": found.title} if found is not None else None


def payload(job: Job, *, status: str | None = None, sent_at: datetime | None = None,
            event_id: Any = None) -> dict[str, Any]:
    """The JSON a webhook receives for a job's end (`status`: the end's, should the job have moved on since)."""
    from jobs.jobpage import console_stop_reason

    status = status or end_of(job)
    return {
        "event": event_name(status),
        "event_id": str(event_id) if event_id else None,
        "job": {
            "id": job.pk,
            "name": job.display_name,
            "status": "Stopped" if status == SKIPPED else status,
            "dlc_job_id": job.dlc_job_id,
            "workspace": job.workspace.name,
            "owner": job.owner.get_username() if job.owner else None,
            "url": job_url(job),
            "created_at": _iso(job.created_at),
            "finished_at": _iso(job.finished_at),
            # DLC's code; the message is the console's own when it stopped the job (the idle policy, early
            # stopping), as DLC's only says the user did.
            "reason_code": job.reason_code,
            "reason_message": console_stop_reason(job) or job.reason_message,
            # The job it ran (or was to run) after: for job.skipped, the one that did not succeed.
            "upstream_job_id": job.run_after_id,
            # A failure's likely cause (jobs.diagnosis), null for other ends. Sent before the log archive, so it
            # may read DLC's log once (then stored on the job).
            "diagnosis": _diagnosis(job, status),
        },
        "sent_at": _iso(sent_at or timezone.now()),
    }


def idle_payload(job: Job, *, sent_at: datetime | None = None, event_id: Any = None) -> dict[str, Any]:
    """The JSON of "job.idle": the running job and its idle state as the API's job detail gives it (jobs.idle)."""
    from jobs import idle

    return {
        "event": "job.idle",
        "event_id": str(event_id) if event_id else None,
        "job": {
            "id": job.pk,
            "name": job.display_name,
            "status": job.status,
            "dlc_job_id": job.dlc_job_id,
            "workspace": job.workspace.name,
            "owner": job.owner.get_username() if job.owner else None,
            "url": job_url(job),
            "created_at": _iso(job.created_at),
            "started_at": _iso(job.started_at),
            "idle": idle.as_json(job),
        },
        "sent_at": _iso(sent_at or timezone.now()),
    }


def sweep_payload(sweep: Sweep, *, sent_at: datetime | None = None, event_id: Any = None) -> dict[str, Any]:
    """The JSON of "sweep.ended": the sweep, its trials' ends counted, and each trial's job and end (as a job event
    would name it: Skipped apart from Stopped)."""
    trials = list(SweepTrial.objects.filter(sweep=sweep).select_related("job").order_by("number"))
    counts = dict(Counter(end_of(trial.job) for trial in trials))
    return {
        "event": event_name(SWEEP_ENDED),
        "event_id": str(event_id) if event_id else None,
        "sweep": {
            "id": sweep.pk,
            "name": sweep.name,
            "workspace": sweep.workspace.name,
            "owner": sweep.owner.get_username() if sweep.owner else None,
            "url": settings.DLC_BASE_URL + sweep.get_absolute_url(),
            "created_at": _iso(sweep.created_at),
            "trial_count": len(trials),
            "counts": counts,
            "trials": [{"number": t.number, "job_id": t.job_id, "name": t.job.display_name, "status": end_of(t.job),
                        "url": job_url(t.job)} for t in trials],
        },
        "sent_at": _iso(sent_at or timezone.now()),
    }


def budget_payload(alert: BudgetAlert, *, sent_at: datetime | None = None, event_id: Any = None) -> dict[str, Any]:
    """A workspace's spend crossing a share of its monthly budget (jobs.budget_alerts); amounts as decimal strings
    to the cent, as the API gives them. `refusing`: the workspace refuses new jobs once its budget is spent."""
    return {
        "event": "budget.threshold",
        "event_id": str(event_id or uuid.uuid4()),
        "workspace": alert.workspace.name,
        "month": alert.month,
        "threshold_percent": alert.threshold,
        "spent": costs.money(alert.spent),
        "budget": costs.money(alert.budget),
        "currency": alert.currency,
        "refusing": bool(alert.threshold >= 100 and costs.row(alert.workspace).refuse_when_spent),
        "sent_at": _iso(sent_at or timezone.now()),
    }


def delivery_payload(delivery: WebhookDelivery, job: Job | None) -> dict[str, Any]:
    """What a delivery POSTs: its budget alert, its sweep's summary, its job's idle spell, or its job's end."""
    if delivery.budget_alert_id:
        return budget_payload(delivery.budget_alert, event_id=delivery.event_id)
    if is_idle(delivery.status):
        return idle_payload(job, event_id=delivery.event_id)
    if delivery.status == SWEEP_ENDED:
        trial = SweepTrial.objects.filter(job=job).select_related("sweep__workspace", "sweep__owner").first()
        if trial is not None:
            return sweep_payload(trial.sweep, event_id=delivery.event_id)
    return payload(job, status=delivery.status if delivery.status != SWEEP_ENDED else None,
                   event_id=delivery.event_id)


def ping_payload(webhook: Webhook) -> dict[str, Any]:
    # A fresh event_id per test: every POST has one, and a receiver that drops repeats must not drop the next test.
    return {"event": "test", "event_id": str(uuid.uuid4()), "workspace": webhook.workspace.name,
            "webhook": webhook.name, "sent_at": _iso(timezone.now())}


def encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def signature(secret: str, body: bytes) -> str:
    """The X-DLC-Signature value: receivers compute the same HMAC over the raw body and compare."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def notifies(webhook: Webhook, status: str) -> bool:
    return webhook.hears and status in EVENT_STATUSES and status in (webhook.events or [])


# -- URL rules -------------------------------------------------------------------------------------------


NOT_A_URL = "Enter a valid URL, e.g. https://hooks.example.com/dlc."


def url_problem(url: str) -> str | None:
    """Why a webhook URL is refused, or None. Checked at save time; the POST checks its destination again (after
    DNS, as it connects) and never follows a redirect elsewhere."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is no number
    except ValueError:
        return NOT_A_URL
    if not parts.scheme:
        return NOT_A_URL  # "not a url", "hooks.example.com/dlc": the example shows what is missing
    if parts.scheme not in ("http", "https"):
        return "Only http:// and https:// URLs are allowed."
    if not parts.hostname:
        return "The URL needs a host, e.g. https://hooks.example.com/dlc."
    if parts.username is not None or parts.password is not None:
        return "Put no credentials in the URL: set a signing secret instead."
    if problem := host_name_problem(parts.hostname):
        return problem
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "The URL must not contain spaces or control characters."
    if not f"{parts.path}{parts.query}{parts.fragment}".isascii():
        # http.client cannot send it: every POST would fail. (A non-ASCII host is fine: it goes out as IDNA.)
        return "Percent-encode non-ASCII characters in the URL's path and query."
    return host_problem(parts.hostname)


def host_name_problem(host: str) -> str | None:
    """A host name DNS cannot hold (RFC 1035: labels of at most 63 characters, at most 253 all told), as sent:
    a non-ASCII name in its IDNA form. Such a URL would save fine and fail every POST."""
    if host.isascii():
        ascii_host = host
    else:
        try:
            ascii_host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return "The URL's host is not a valid host name."
    if any(len(label) > 63 for label in ascii_host.split(".")):
        return "A part of the URL's host name (between dots) is too long: at most 63 characters each."
    if len(ascii_host.rstrip(".")) > 253:
        return "The URL's host name is too long: at most 253 characters."
    return None


# -- where a POST may go ----------------------------------------------------------------------------------
# The POST leaves from the server, inside its network: a URL naming the server itself, a cloud metadata service
# or a link-local address would let a workspace admin reach what only the server can (and read its status code).

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud metadata services (instance credentials!) outside the link-local range that is refused anyway, so refused
# even where private addresses are allowed:
# - 100.100.100.200: Alibaba Cloud ECS metadata, in the shared 100.64/10 range (ECS docs, "Instance metadata").
# - fd00:ec2::254: AWS EC2 IMDS over IPv6 on Nitro instances, in fc00::/7 (EC2 user guide, "Configure the
#   instance metadata service", IPv6 endpoint).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("100.100.100.200", "fd00:ec2::254"))
# Names of metadata services, refused before any lookup (the name may resolve only inside the cloud, or to an address
# no rule above knows): Google Compute Engine's metadata server answers to both "metadata.google.internal" and the
# bare "metadata" (GCE docs, "About VM metadata" / "Query VM metadata"). Azure's IMDS has no host name, only
# 169.254.169.254 (link-local, refused above).
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata"})
PRIVATE_NETWORKS = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                           "fc00::/7"))
# "This network": Linux connects 0.0.0.0 to the host itself.
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
ALLOW_HINT = "a server admin can allow it with DLC_WEBHOOK_ALLOWED_HOSTS"


class RefusedDestination(OSError):
    """The URL's host is (or resolves to) an address webhooks may not reach. An OSError, so that urllib hands it
    back as a failed connection."""


def _allowed_entries() -> tuple[frozenset[str], tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]]:
    names, networks = set(), []
    for entry in settings.DLC_WEBHOOK_ALLOWED_HOSTS:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.lower().rstrip("."))
    return frozenset(names), tuple(networks)


def address_problem(address: Address) -> str | None:
    """Why webhooks may not go to `address` (not counting the allowed exceptions), or None."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if address.is_loopback or address.is_unspecified or address in THIS_NETWORK:
        return "the server itself (a loopback address)"
    if address.is_link_local or address in METADATA_ADDRESSES:
        return "a link-local or cloud metadata address"
    if address.is_multicast or address == ipaddress.IPv4Address("255.255.255.255"):
        return "a multicast or broadcast address"
    if not settings.DLC_WEBHOOK_ALLOW_PRIVATE and any(address in net for net in PRIVATE_NETWORKS):
        return "a private network address (DLC_WEBHOOK_ALLOW_PRIVATE is off)"
    return None


def destination_problem(host: str, addresses: list[Address]) -> str | None:
    """Why a POST to `host`, which resolved to `addresses`, is refused, or None. One refused address refuses the
    host: a name that resolves to a public and a loopback address must not be a coin toss."""
    names, networks = _allowed_entries()
    name = host.lower().rstrip(".")
    if name in names:
        return None
    if name in METADATA_HOSTS:
        return f"Webhooks may not go to a cloud metadata service; {ALLOW_HINT}."
    for address in addresses:
        if any(address in net for net in networks):
            continue
        problem = address_problem(address)
        if problem:
            return f"Webhooks may not go to {problem}; {ALLOW_HINT}."
    return None


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.partition("%")[0])  # an IPv6 zone (fe80::1%eth0) is no part of it
    except ValueError:
        return None


def _resolve(host: str, port: int | None) -> list[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def host_problem(host: str) -> str | None:
    """The save-time check of a URL's host: a literal address as it is, a name as it resolves now. A name that
    does not resolve now is not refused (an offline relay may come later); the send-time check still holds."""
    literal = _literal(host)
    if literal is not None:
        return destination_problem(host, [literal])
    try:
        found = _resolve(host, None)
    except (OSError, UnicodeError):
        return destination_problem(host, [])  # the names refused whatever they resolve to, still
    return destination_problem(host, [_literal(info[4][0]) for info in found])


def _guarded_create_connection(address: tuple[str, int], timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,
                               source_address: Any = None, **_: Any) -> socket.socket:
    """socket.create_connection, but checking every address the host resolves to before connecting to any, and
    then connecting to those very addresses: no second lookup a DNS-rebinding name could answer differently, and
    no connection attempt (whose refusal or success would tell open ports apart) to a refused address. The Host
    header and TLS name stay the URL's host: http.client takes them from the URL, not from this socket."""
    host, port = address
    problem = destination_problem(host, [])  # a metadata service's name is refused before (or without) a lookup
    if problem:
        raise RefusedDestination(problem)
    found = _resolve(host, port)
    problem = destination_problem(host, [_literal(info[4][0]) for info in found])
    if problem:
        raise RefusedDestination(problem)
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in found:
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as err:
            error = err
            sock.close()
    raise error or OSError("the host resolved to no address")


# -- the POST --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    ok: bool
    code: int | None = None
    error: str = ""

    def __str__(self) -> str:
        if self.ok:
            return f"HTTP {self.code}"
        return f"HTTP {self.code}: {self.error}" if self.code else self.error


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect is answered as the failure it is for a POST: urllib would re-send it as a GET, possibly to
    # another host that was never configured (and would get the signature of our body).
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _DeadlineSocket:
    """A connected socket whose reads and writes all time out at one deadline for the whole exchange. A socket
    timeout alone bounds each read: a receiver trickling a byte every few seconds would hold the worker for ever."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def _arm(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._arm()
        return self._sock.recv_into(buffer, nbytes, flags)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self._arm()
        return self._sock.recv(bufsize, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._arm()
        self._sock.sendall(data, flags)

    def makefile(self, mode: str = "rb", buffering: int | None = None, **_: Any) -> io.BufferedReader:
        # socket.makefile's reader, but reading through this wrapper (http.client reads the answer from it).
        self._sock._io_refs += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"), io.DEFAULT_BUFFER_SIZE)  # type: ignore[arg-type]


def _deadline(timeout: Any) -> float:
    # urllib passes a sentinel object, not a number, when the caller gave no timeout.
    return time.monotonic() + (timeout if isinstance(timeout, int | float) else TIMEOUT)


class _DeadlineHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _guarded_create_connection

    def connect(self) -> None:
        deadline = _deadline(self.timeout)
        super().connect()
        self.sock = _DeadlineSocket(self.sock, deadline)


class _DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _guarded_create_connection  # checked before the TLS handshake

    def connect(self) -> None:
        deadline = _deadline(self.timeout)
        super().connect()  # the TLS handshake: bounded per read only
        self.sock = _DeadlineSocket(self.sock, deadline)


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_DeadlineHTTPConnection, req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_DeadlineHTTPSConnection, req, context=self._context)


_opener = urllib.request.build_opener(_NoRedirects, _DeadlineHTTPHandler, _DeadlineHTTPSHandler)


def _short(text: str) -> str:
    return dlc.redact(" ".join(str(text).split()))[:200]


def post(url: str, body: bytes, secret: str = "", *, timeout: float = TIMEOUT) -> Answer:
    """POST body (JSON) to url; ok on a 2xx, answered within `timeout` seconds all told (DNS aside). Never raises
    for the receiver's faults."""
    headers = {"Content-Type": "application/json", "User-Agent": "dlc-console-webhook/1"}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _opener.open(request, timeout=timeout) as response:
            code = response.status
    except urllib.error.HTTPError as err:
        err.close()
        note = "redirect not followed" if 300 <= err.code < 400 else err.reason
        return Answer(False, err.code, _short(note or "error"))
    except urllib.error.URLError as err:
        reason = err.reason
        if isinstance(reason, RefusedDestination):
            return Answer(False, None, f"refused: {reason}")
        text = "timed out" if isinstance(reason, TimeoutError) else reason
        return Answer(False, None, _short(f"{type(reason).__name__}: {text}" if isinstance(reason, OSError) else text))
    except http.client.InvalidURL:
        # Its text quotes the URL, whose path may be the receiver's secret.
        return Answer(False, None, "the URL cannot be sent to")
    except (OSError, http.client.HTTPException) as err:
        # A read that times out, a connection reset, a garbled answer: their texts hold no URL.
        return Answer(False, None, _short(f"{type(err).__name__}: {err}" if str(err) else type(err).__name__))
    except ValueError:
        # urllib's own texts quote the URL, whose path may be the receiver's secret.
        return Answer(False, None, "the URL cannot be sent to")
    return Answer(200 <= code < 300, code, "" if 200 <= code < 300 else "not a 2xx answer")


UNSEALABLE = Answer(False, None, "the signing secret cannot be unsealed (was DLC_SECRET_BOX_KEY changed?): set it "
                                 "again")
URL_UNSEALABLE = Answer(False, None, "the URL cannot be unsealed (was DLC_SECRET_BOX_KEY changed?): type it again")


def _send(webhook: Webhook, data: dict[str, Any]) -> Answer:
    url = webhook.real_url()
    if not url:
        return URL_UNSEALABLE
    secret = webhook.secret()
    if webhook.has_secret and not secret:
        # Sent unsigned, it would fail a receiver that checks, or fool one that does not: neither.
        return UNSEALABLE
    return post(url, encode(data), secret)


def send_test(webhook: Webhook) -> Answer:
    """The settings page's "Send test": a {"event": "test"} POST, synchronous, with the webhook's secret."""
    return _send(webhook, ping_payload(webhook))


# -- deliveries ------------------------------------------------------------------------------------------


# The webhooks a job end makes deliveries for (Webhook.hears): enabled, or paused after failures.
HEARING = Q(enabled=True) | Q(paused_at__isnull=False)


def has_webhooks(workspace_id: int) -> bool:
    return Webhook.objects.filter(HEARING, workspace_id=workspace_id).exists()


def sweep_notifies(webhook: Webhook, statuses: list[str]) -> bool:
    """Whether a sweep whose trials all ended with `statuses` makes a "sweep.ended" for this webhook: set to one
    event per sweep, enabled or paused (Webhook.hears), and one of its job ends among the trials' (a webhook for
    failures only hears of a sweep that had one)."""
    return webhook.hears and webhook.sweeps == PER_SWEEP and any(s in (webhook.events or []) for s in statuses)


def _owe(webhook: Webhook, job_id: int | None, status: str, alert_id: int | None = None) -> WebhookDelivery:
    key = {"webhook": webhook, "job_id": job_id, "budget_alert_id": alert_id, "status": status,
           "resend_of__isnull": True}
    now = timezone.now()
    # A paused webhook's delivery is made held: sent when it is enabled, dropped after SWEEP_WINDOW (resume()).
    defaults = {"next_attempt_at": now} if webhook.enabled else {"held_at": now}
    try:
        delivery, _ = WebhookDelivery.objects.get_or_create(**key, defaults=defaults)
    except IntegrityError:  # a concurrent task made it a moment ago
        delivery = WebhookDelivery.objects.get(**key)
    return delivery


def deliveries_for(job: Job) -> list[WebhookDelivery]:
    """The deliveries a job's end owes, made once: one per enabled webhook whose events include its end (held for
    a paused one; none for one disabled by hand); for a
    sweep's trial and a webhook set to one event per sweep, none, or the sweep's one once its last trial ended
    (keyed on the first trial's job: the caller enqueues the deliveries' jobs, not only this one)."""
    end = end_of(job)
    if end not in EVENT_STATUSES:
        return []
    webhooks = list(Webhook.objects.filter(HEARING, workspace_id=job.workspace_id))
    sweep_id = None
    if any(w.sweeps == PER_SWEEP for w in webhooks):
        sweep_id = SweepTrial.objects.filter(job=job).values_list("sweep_id", flat=True).first()
    sweep_end = None
    if sweep_id is not None:
        from jobs.notify_email import finished_sweeps  # it imports this module

        sweep_end = next(iter(finished_sweeps({sweep_id})), None)
    found = []
    for webhook in webhooks:
        if sweep_id is not None and webhook.sweeps == PER_SWEEP:
            if sweep_end is not None and sweep_notifies(webhook, sweep_end.statuses):
                found.append(_owe(webhook, sweep_end.first_job_id, SWEEP_ENDED))
        elif notifies(webhook, end):
            found.append(_owe(webhook, job.pk, end))
    return found


def idle_deliveries(job: Job, status: str) -> list[WebhookDelivery]:
    """The deliveries of an idle spell (`status`: jobs.idle.spell_status), made once per webhook and spell: one per
    webhook whose events include Idle (held for a paused one)."""
    return [_owe(webhook, job.pk, status) for webhook in Webhook.objects.filter(HEARING, workspace_id=job.workspace_id)
            if notifies(webhook, IDLE)]


def budget_deliveries(alert: BudgetAlert) -> list[WebhookDelivery]:
    """The deliveries of a budget alert, made once per webhook whose events include Budget (held for a paused
    one); jobs.budget_alerts makes them in the alert's transaction."""
    webhooks = Webhook.objects.filter(HEARING, workspace_id=alert.workspace_id)
    return [_owe(webhook, None, BUDGET, alert.pk) for webhook in webhooks if notifies(webhook, BUDGET)]


def retry_wait(attempts: int) -> float:
    """Seconds before the next try after `attempts` failed ones: base, 4x base, 16x base..."""
    return settings.DLC_WEBHOOK_RETRY_BASE_SECONDS * 4 ** max(0, attempts - 1)


def attempt(delivery: WebhookDelivery, job: Job | None) -> str:
    """One try of a delivery that is due: "delivered", "retry", "failed" (out of attempts), or "skipped" (not
    due, done, or another worker's try is under way)."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery.pk, delivered_at__isnull=True, next_attempt_at__lte=now + EARLY
    ).update(next_attempt_at=now + CLAIM)
    if not claimed:
        return "skipped"
    if job is None:
        pass  # a budget alert's: recorded once its threshold was crossed, it is news whatever the spend does next
    elif is_idle(delivery.status) and (not job.is_active or job.idle_since is None):
        # The spell ended before its turn (busy again, or the job ended): old news, not sent.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None, last_error="no longer idle")
        return "skipped"
    elif (job.is_active and not is_idle(delivery.status)) or (delivery.status == st.SUBMIT_FAILED and job.dlc_job_id):
        # The end was undone: a job given up as SubmitFailed (or stopped unsent) whose CreateJob had landed after
        # all is adopted by DLC's job (lifecycle.adopt). Receivers must not hear of that end now; its real end
        # makes a delivery anew (the unique key is free again).
        WebhookDelivery.objects.filter(pk=delivery.pk, delivered_at__isnull=True).delete()
        return "skipped"
    delivery.refresh_from_db(fields=["attempts"])  # another worker may have tried since it was read
    webhook = Webhook.objects.get(pk=delivery.webhook_id)
    attempts = delivery.attempts + 1
    if not webhook.enabled:
        # Held, not given up: paused (or disabled) is a state the admin ends by enabling it (resume()).
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None, held_at=now)
        return "held"
    answer = _send(webhook, delivery_payload(delivery, job))
    done = timezone.now()
    fields: dict[str, Any] = {"attempts": attempts, "last_code": answer.code, "last_error": answer.error}
    if answer.ok:
        fields.update(delivered_at=done, next_attempt_at=None)
        outcome = "delivered"
    elif attempts >= settings.DLC_WEBHOOK_ATTEMPTS:
        fields.update(next_attempt_at=None)
        outcome = "failed"
    else:
        fields.update(next_attempt_at=done + timedelta(seconds=retry_wait(attempts)))
        outcome = "retry"
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    note_outcome(webhook, outcome)
    return outcome


def note_outcome(webhook: Webhook, outcome: str) -> bool:
    """Count a delivery's end against its webhook; True if that paused the webhook. A receiver gone for good
    would otherwise be POSTed every job end, attempts and all, for ever: after DLC_WEBHOOK_PAUSE_AFTER given-up
    deliveries in a row it is disabled, with the reason on the Notifications page and in the audit log."""
    rows = Webhook.objects.filter(pk=webhook.pk)
    if outcome == "delivered":
        rows.exclude(failures_in_a_row=0).update(failures_in_a_row=0)
        return False
    if outcome != "failed":
        return False
    rows.update(failures_in_a_row=F("failures_in_a_row") + 1)  # atomic: workers end deliveries concurrently
    limit = settings.DLC_WEBHOOK_PAUSE_AFTER
    reason = f"Paused after {limit} deliveries in a row failed; enable it again once the receiver is fixed."
    with transaction.atomic():
        # Only the worker whose update flips `enabled` records the pause.
        paused = rows.filter(enabled=True, failures_in_a_row__gte=limit).update(
            enabled=False, paused_at=timezone.now(), paused_reason=reason)
        if paused:
            audit.record(None, AuditEvent.CHANGED, workspace=webhook.workspace, event="webhook-paused",
                         webhook=webhook.name, reason=reason)
    return bool(paused)


def notify_job(job_id: int) -> float | None:
    """Try a job's owed deliveries that are due. Seconds until the next owed try, or None if none is owed.

    The deliveries were made with the end itself (lifecycle._enqueue_notify calls deliveries_for), so a webhook
    added later is not told of an end that came before it. Idempotent: a delivered (or given-up) delivery is
    never tried again, and a try in progress elsewhere is left alone (the claim in attempt()).
    """
    job = Job.objects.select_related("workspace", "owner").get(pk=job_id)
    # Every owed delivery of the job, not only those of its current status and enabled webhooks: one whose
    # webhook was disabled since must be closed (attempt() does), or it would stay owed.
    owed = WebhookDelivery.objects.filter(job_id=job_id, delivered_at__isnull=True, next_attempt_at__isnull=False)
    for delivery in owed.order_by("pk"):
        attempt(delivery, job)
    return next_try_in(owed)


def notify_budget(alert_id: int) -> float | None:
    """Try a budget alert's owed deliveries that are due; as notify_job."""
    owed = WebhookDelivery.objects.filter(budget_alert_id=alert_id, delivered_at__isnull=True,
                                          next_attempt_at__isnull=False)
    for delivery in owed.select_related("budget_alert__workspace").order_by("pk"):
        attempt(delivery, None)
    return next_try_in(owed)


def next_try_in(owed: QuerySet) -> float | None:
    """Seconds until the earliest of these owed deliveries (webhook or email) is due, or None when none is owed;
    a hair late rather than early, as Celery's countdown may fire before the time on the row."""
    due = owed.order_by("next_attempt_at").values_list("next_attempt_at", flat=True).first()
    return None if due is None else max(0.05, (due - timezone.now()).total_seconds() + 0.05)


def overdue_jobs(owed: QuerySet, older_than: timedelta) -> list[int]:
    """Jobs of these owed deliveries overdue by `older_than` (their task was lost), made in the last day: for
    the sweep. Both delivery models (webhook, email) have next_attempt_at, created_at and job."""
    now = timezone.now()
    return list(owed.filter(next_attempt_at__lt=now - older_than, created_at__gt=now - SWEEP_WINDOW)
                .order_by().values_list("job_id", flat=True).distinct()[:100])


def owed_jobs(older_than: timedelta) -> list[int]:
    return overdue_jobs(WebhookDelivery.objects.filter(delivered_at__isnull=True, job__isnull=False), older_than)


def owed_budget_alerts(older_than: timedelta) -> list[int]:
    """Budget alerts with a delivery owed whose task was lost (the sweep's, as owed_jobs)."""
    now = timezone.now()
    owed = WebhookDelivery.objects.filter(delivered_at__isnull=True, budget_alert__isnull=False,
                                          next_attempt_at__lt=now - older_than, created_at__gt=now - SWEEP_WINDOW)
    return list(owed.order_by().values_list("budget_alert_id", flat=True).distinct()[:100])


def enqueue_budget(alert_ids: list[int]) -> None:
    """These budget alerts' webhook tasks, once committed (as enqueue)."""
    from jobs import lifecycle  # it imports this module

    for alert_id in alert_ids:
        transaction.on_commit(lambda alert_id=alert_id: lifecycle._enqueue("notify_budget_alert", alert_id))


def enqueue(job_ids: list[int]) -> None:
    """These jobs' notify tasks, once committed, through lifecycle's enqueue (a broker that is down leaves them to
    the beat's sweep: the rows say what is owed)."""
    from jobs import lifecycle  # it imports this module

    for job_id in job_ids:
        transaction.on_commit(lambda job_id=job_id: lifecycle._enqueue("notify_job", job_id))


def resume(webhook: Webhook) -> tuple[list[int], int]:
    """After an admin enabled the webhook again: its held deliveries go on, due now; those made more than
    SWEEP_WINDOW ago are dropped instead (a receiver back after days is not owed a flood of stale ends: an admin
    can still resend one). (jobs whose notify task to enqueue, count dropped)."""
    now = timezone.now()
    held = WebhookDelivery.objects.filter(webhook=webhook, held_at__isnull=False, delivered_at__isnull=True)
    dropped = held.filter(created_at__lte=now - SWEEP_WINDOW).update(
        held_at=None, last_error="dropped: the webhook was paused for over a day; resend it if still wanted")
    job_ids = sorted(set(held.filter(job__isnull=False).values_list("job_id", flat=True)))
    enqueue_budget(sorted(set(held.filter(budget_alert__isnull=False).values_list("budget_alert_id", flat=True))))
    held.update(held_at=None, next_attempt_at=now)
    return job_ids, dropped


def resend(webhook: Webhook, delivery_id: int) -> WebhookDelivery | None:
    """A given-up delivery sent again: a new delivery of the same end under the same event id, due now. None if it
    is not given up (delivered, owed, held) or was resent already: the conditional update lets one click of two
    (or two workers) through. The caller enqueues the job's notify task once committed."""
    now = timezone.now()
    with transaction.atomic():
        took = WebhookDelivery.objects.filter(
            pk=delivery_id, webhook=webhook, delivered_at__isnull=True, next_attempt_at__isnull=True,
            held_at__isnull=True, resent_at__isnull=True,
        ).update(resent_at=now)
        if not took:
            return None
        original = WebhookDelivery.objects.get(pk=delivery_id)
        return WebhookDelivery.objects.create(webhook=webhook, job_id=original.job_id,
                                              budget_alert_id=original.budget_alert_id, status=original.status,
                                              event_id=original.event_id, resend_of=original, next_attempt_at=now)


def _shown(webhook: Webhook, rows: list[WebhookDelivery]) -> list[WebhookDelivery]:
    """Rows made ready for a page: a sweep's delivery with its sweep (`sweep`, for the link)."""
    sweeps = {}
    if any(d.is_sweep for d in rows):
        sweeps = {t.job_id: t.sweep for t in SweepTrial.objects.filter(
            job_id__in=[d.job_id for d in rows if d.is_sweep]).select_related("sweep")}
    for d in rows:
        d.webhook = webhook  # its state reads whether the webhook is enabled
        d.sweep = sweeps.get(d.job_id)
    return rows


def latest_deliveries(webhooks: list[Webhook], count: int = 5) -> dict[int, list[WebhookDelivery]]:
    """Each webhook's newest deliveries, for the settings page (a query per webhook: a workspace has few)."""
    return {w.pk: _shown(w, list(WebhookDelivery.objects.filter(webhook=w).select_related("job", "budget_alert")
                                 .order_by("-id")[:count])) for w in webhooks}


# Given up: out of attempts or dropped, i.e. neither delivered, owed nor held (WebhookDelivery.state "failed").
GIVEN_UP = Q(delivered_at__isnull=True, next_attempt_at__isnull=True, held_at__isnull=True)


def deliveries_page(webhook: Webhook, *, before: int | None = None, given_up: bool = False,
                    size: int = 50) -> tuple[list[WebhookDelivery], int | None]:
    """A page of a webhook's deliveries, newest first, keyed by id so a deep page costs what the first does
    (`before`: the last id of the page before); only the given-up ones if asked. (rows, `before` of the next page
    or None)."""
    rows = WebhookDelivery.objects.filter(webhook=webhook).select_related("job", "budget_alert")
    if given_up:
        rows = rows.filter(GIVEN_UP)
    if before is not None:
        rows = rows.filter(id__lt=before)
    found = list(rows.order_by("-id")[:size + 1])
    more = len(found) > size
    found = _shown(webhook, found[:size])
    return found, (found[-1].pk if more else None)
