"""HTTP front end: ROA routing with the SDK's paths and methods, signature check, faults, JSON answers.

Every answer carries a RequestId (body) and the x-acs-request-id header. Errors use the Alibaba Cloud shape
{"RequestId", "HostId", "Code", "Message", "Recommend"} with a 4xx/5xx status, which the SDK turns into
ClientException / ServerException with e.code, e.message ('code: <status>, <Message> request id: <id>'),
e.data (the body) and e.request_id.

Unsigned admin endpoints under /_localdlc/ answer loopback clients only (see README.md).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from . import API_VERSION, actions
from .auth import Verifier, parse_query
from .errors import ApiError
from .faults import Faults

_SEG = r"([^/]+)"
# (method, path regex, action, handler(ctx, path_args, query, body))
Route = tuple[str, re.Pattern[str], str, Callable[..., dict[str, Any]]]
ROUTES: list[Route] = [
    ("POST", re.compile(r"^/api/v1/jobs$"), "CreateJob", lambda c, a, q, b: actions.create_job(c, b)),
    ("GET", re.compile(r"^/api/v1/jobs$"), "ListJobs", lambda c, a, q, b: actions.list_jobs(c, q)),
    ("GET", re.compile(rf"^/api/v1/jobs/{_SEG}$"), "GetJob", lambda c, a, q, b: actions.get_job(c, a[0], q)),
    ("PUT", re.compile(rf"^/api/v1/jobs/{_SEG}$"), "UpdateJob",
     lambda c, a, q, b: actions.update_job(c, a[0], b)),
    ("DELETE", re.compile(rf"^/api/v1/jobs/{_SEG}$"), "DeleteJob", lambda c, a, q, b: actions.delete_job(c, a[0])),
    ("POST", re.compile(rf"^/api/v1/jobs/{_SEG}/stop$"), "StopJob", lambda c, a, q, b: actions.stop_job(c, a[0])),
    ("GET", re.compile(rf"^/api/v1/jobs/{_SEG}/events$"), "GetJobEvents",
     lambda c, a, q, b: actions.get_job_events(c, a[0], q)),
    ("GET", re.compile(rf"^/api/v1/jobs/{_SEG}/metrics$"), "GetJobMetrics",
     lambda c, a, q, b: actions.get_job_metrics(c, a[0], q)),
    ("GET", re.compile(rf"^/api/v1/jobs/{_SEG}/pods/{_SEG}/logs$"), "GetPodLogs",
     lambda c, a, q, b: actions.get_pod_logs(c, a[0], a[1], q)),
    ("GET", re.compile(rf"^/api/v1/jobs/{_SEG}/pods/{_SEG}/events$"), "GetPodEvents",
     lambda c, a, q, b: actions.get_pod_events(c, a[0], a[1], q)),
    ("GET", re.compile(r"^/api/v1/ecsspecs$"), "ListEcsSpecs", lambda c, a, q, b: actions.list_ecs_specs(c, q)),
    ("POST", re.compile(r"^/api/v1/jobtemplates$"), "CreateJobTemplate",
     lambda c, a, q, b: actions.create_job_template(c, b)),
    ("GET", re.compile(r"^/api/v1/jobtemplates$"), "ListJobTemplates",
     lambda c, a, q, b: actions.list_job_templates(c, q)),
    ("GET", re.compile(rf"^/api/v1/jobtemplates/{_SEG}$"), "GetJobTemplate",
     lambda c, a, q, b: actions.get_job_template(c, a[0], q)),
    ("PUT", re.compile(rf"^/api/v1/jobtemplates/{_SEG}$"), "UpdateJobTemplate",
     lambda c, a, q, b: actions.update_job_template(c, a[0], b)),
    ("DELETE", re.compile(rf"^/api/v1/jobtemplates/{_SEG}$"), "DeleteJobTemplate",
     lambda c, a, q, b: actions.delete_job_template(c, a[0])),
    ("PUT", re.compile(rf"^/api/v1/jobtemplates/{_SEG}/defaultversion$"), "SetJobTemplateDefaultVersion",
     lambda c, a, q, b: actions.set_job_template_default_version(c, a[0], b)),
]


def route(method: str, path: str) -> tuple[str, list[str], Callable[..., dict[str, Any]]] | None:
    for verb, pattern, action, handler in ROUTES:
        if verb == method:
            match = pattern.match(path)
            if match:
                return action, [unquote(g) for g in match.groups()], handler
    return None


def new_request_id() -> str:
    return str(uuid.uuid4()).upper()


class Service:
    """Everything a request handler needs, shared by all handler threads."""

    def __init__(self, ctx: actions.Context, verifier: Verifier, faults: Faults, host_id: str = "") -> None:
        self.ctx = ctx
        self.verifier = verifier
        self.faults = faults
        self.host_id = host_id
        self.started = time.time()


class _Drop(Exception):
    """Close the connection without answering (fault modes reset / lost_response)."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK pools connections
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed ACK of
    # the headers, which made every call take 40 ms more on a keep-alive connection.
    disable_nagle_algorithm = True
    server_version = "localdlc"
    sys_version = ""
    service: Service  # set on the subclass built by make_server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # one line per request would drown the useful output; errors still go to stderr

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # -- plumbing ------------------------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        request_id = new_request_id()
        try:
            body = self._read_body()
            path, _, raw_query = self.path.partition("?")
            if path.startswith("/_localdlc/"):
                self._admin(method, path, raw_query, body, request_id)
                return
            self._api(method, path, raw_query, body, request_id)
        except _Drop:
            self._reset()
        except ApiError as err:
            self._error(err, request_id)
        except Exception:  # an emulator bug must still produce a well-formed 500
            traceback.print_exc(file=sys.stderr)
            self._error(ApiError(500, "InternalError",
                                 "The request processing has failed due to some unknown error."), request_id)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _api(self, method: str, path: str, raw_query: str, body: bytes, request_id: str) -> None:
        svc = self.service
        found = route(method, path)
        if found is None:
            raise ApiError(404, "InvalidAction.NotFound",
                           f"Specified api is not found, please check your url and method: {method} {path}")
        action, args, handler = found
        svc.faults.count(action)
        svc.verifier.verify(method, path, raw_query, self.headers.items(), body)
        version = self.headers.get("x-acs-version")
        if version and version != API_VERSION:
            raise ApiError(400, "InvalidVersion", f"Specified parameter Version {version} is not valid.")
        rule = svc.faults.take(action)
        lost = False
        if rule is not None:
            if rule.delay:
                time.sleep(rule.delay)
            if rule.mode == "503":
                raise ApiError(rule.status or 503, "ServiceUnavailable",
                               "The request has failed due to a temporary failure of the server.")
            if rule.mode == "500":
                raise ApiError(rule.status or 500, "InternalError",
                               "The request processing has failed due to some unknown error.")
            if rule.mode == "throttle":
                headers = {"x-acs-retry-after": str(rule.retry_after)} if rule.retry_after else {}
                raise ApiError(rule.status or 400, "Throttling.User",
                               "Request was denied due to user flow control.", headers)
            if rule.mode == "reset":
                raise _Drop()
            lost = rule.mode == "lost_response"
        query = dict(parse_query(raw_query))
        parsed: Any = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                raise ApiError(400, "InvalidParameter", "The request body is not valid JSON.") from None
        result = handler(svc.ctx, args, query, parsed)
        if lost:
            raise _Drop()
        self._send(200, {"RequestId": request_id, **result}, request_id)

    def _admin(self, method: str, path: str, raw_query: str, body: bytes, request_id: str) -> None:
        svc = self.service
        try:
            loopback = ipaddress.ip_address(self.client_address[0].split("%")[0]).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ApiError(403, "Forbidden", "The /_localdlc/ admin endpoints only answer loopback clients.")
        payload: Any = None
        if body:
            try:
                payload = json.loads(body)
            except ValueError:
                raise ApiError(400, "InvalidParameter", "The request body is not valid JSON.") from None
        if path == "/_localdlc/health" and method == "GET":
            result: dict[str, Any] = {"ok": True, "version": API_VERSION, "pid": os.getpid(),
                                      "uptime": round(time.time() - svc.started, 3),
                                      "capacity": svc.ctx.runner.capacity()}
        elif path == "/_localdlc/stats" and method == "GET":
            result = svc.faults.stats()
        elif path == "/_localdlc/stats/reset" and method == "POST":
            svc.faults.reset_stats()
            result = svc.faults.stats()
        elif path == "/_localdlc/faults" and method == "GET":
            result = {"faults": svc.faults.rules()}
        elif path == "/_localdlc/faults" and method in ("POST", "PUT"):
            try:
                if method == "PUT" or (isinstance(payload, dict) and payload.get("replace")):
                    items = payload.get("faults", []) if isinstance(payload, dict) and "faults" in payload \
                        else payload
                    svc.faults.replace(items)
                else:
                    svc.faults.add(payload.get("faults") if isinstance(payload, dict) and "faults" in payload
                                   else payload)
            except (ValueError, AttributeError) as exc:
                raise ApiError(400, "InvalidParameter", f"Invalid fault rule: {exc}") from None
            result = {"faults": svc.faults.rules()}
        elif path == "/_localdlc/faults" and method == "DELETE":
            svc.faults.clear()
            result = {"faults": []}
        else:
            raise ApiError(404, "InvalidAction.NotFound", f"Unknown admin endpoint {method} {path}")
        self._send(200, {"RequestId": request_id, **result}, request_id)

    def _send(self, status: int, payload: dict[str, Any], request_id: str,
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-acs-request-id", request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, err: ApiError, request_id: str) -> None:
        host = self.service.host_id or self.headers.get("host") or "localdlc"
        self._send(err.status, {
            "RequestId": request_id,
            "HostId": host,
            "Code": err.code,
            "Message": err.message,
            "Recommend": f"https://api.aliyun.com/troubleshoot?q={err.code}&product=pai-dlc",
        }, request_id, err.headers)

    def _reset(self) -> None:
        """Abort the connection with a TCP RST so the client sees a reset, not an answer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


class Server6(Server):
    address_family = socket.AF_INET6


def make_server(host: str, port: int, service: Service) -> Server:
    handler = type("BoundHandler", (Handler,), {"service": service})
    return (Server6 if ":" in host else Server)((host, port), handler)


def serve_in_thread(server: Server) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="localdlc-http", daemon=True)
    thread.start()
    return thread
