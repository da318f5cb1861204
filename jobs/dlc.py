"""The one place that talks to a DLC backend: an official SDK client per workspace, and thin calls.

Everything goes through `alibabacloud_pai_dlc20201203.Client`, whether the workspace points at the
regional PAI-DLC endpoint or at the embedded localdlc service, so tests exercise production's code path.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from alibabacloud_credentials.client import Client as CredentialClient
from alibabacloud_credentials.exceptions import CredentialException
from alibabacloud_credentials.provider import (
    DefaultCredentialsProvider,
    ProfileCredentialsProvider,
    RamRoleArnCredentialsProvider,
)
from alibabacloud_credentials.utils import auth_constant as credentials_constants
from alibabacloud_credentials.utils import auth_util as credentials_env
from alibabacloud_pai_dlc20201203 import models as dlc_models
from alibabacloud_pai_dlc20201203.client import Client
from alibabacloud_tea_openapi import exceptions as api_exceptions
from alibabacloud_tea_openapi.utils import Utils as OpenApiUtils
from alibabacloud_tea_openapi.utils_models import Config, OpenApiRequest, Params
from darabonba.runtime import RuntimeOptions
from django.conf import settings
from django.utils import timezone

# The Settings.Tags key that carries a Job's idempotency tag, so a retried submit can find its job.
IDEMPOTENCY_TAG_KEY = "dlc-console-submission"
# The API's largest ListJobs page.
LIST_PAGE_SIZE = 100
# Throttling codes the service answers with HTTP 400 rather than 429.
THROTTLING_CODES = ("Throttling", "ServiceUnavailable", "InternalError", "ServiceBusy")
# Transport errors (by class name, whatever HTTP library the SDK uses) raised before a connection existed.
NOT_CONNECTED_ERRORS = frozenset({"ConnectionRefusedError", "NewConnectionError", "ConnectTimeoutError",
                                  "ConnectTimeout", "NameResolutionError"})
# Of those, the ones that say the endpoint as configured cannot be reached (nothing listens, the name does not
# resolve): a retry seconds later meets the same. A connect timeout is not among them: it may pass.
UNREACHABLE_ERRORS = frozenset({"ConnectionRefusedError", "NameResolutionError", "gaierror"})
# Codes (and code prefixes) of a refused signature or unknown AccessKey: the credentials, not the request.
CREDENTIAL_CODES = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "InvalidSecurityToken",
                    "MissingSecurityToken", "InvalidAuthorization", "Console.Credential")
# Our code for a failure to get credentials at all (no profile, no file, no metadata service): raised by the
# credentials library before anything was sent.
CREDENTIALS_CODE = "Console.Credentials"
PERMISSION_CODES = ("Forbidden", "NoPermission", "NotAuthorized", "Unauthorized", "AccessDenied")
# How many unverifiable candidates a tag look-up confirms with GetJob before giving up on them.
TAG_CONFIRM_LIMIT = 5


@dataclass
class DLCError(Exception):
    """A backend failure in the console's terms: `transient` failures are worth retrying; `ambiguous`
    ones (no answer came back) may have taken effect, so a retry of CreateJob must look first."""

    code: str
    message: str
    request_id: str = ""
    status: int | None = None
    transient: bool = False
    ambiguous: bool = False
    retry_after: float | None = None  # seconds the backend (or the console) asks to wait before retrying
    unreachable: bool = False  # the endpoint refused the connection or its name did not resolve

    @property
    def persistent(self) -> bool:
        """Trying again in a few seconds meets the same failure (credentials, signature, permission, an endpoint
        that cannot be reached), so a periodic caller should back off; throttling, 5xx and timeouts pass."""
        return not self.transient or self.unreachable

    @property
    def kind(self) -> str:
        """What went wrong, in the console's words: credentials, permission, endpoint, settings, busy, network
        or request."""
        if self.code.startswith(CREDENTIAL_CODES):
            return "credentials"
        if self.code.startswith(PERMISSION_CODES) or self.status == 403:
            return "permission"
        if self.unreachable:
            return "endpoint"
        if self.code.startswith("Console."):
            return "settings"  # failed before sending: an endpoint, region or profile the SDK cannot use
        if self.transient:
            return "network" if self.code.startswith("Connection.") else "busy"
        return "request"

    def __str__(self) -> str:
        rid = f" (RequestId {self.request_id})" if self.request_id else ""
        return f"{self.code}: {self.message}{rid}"

    def as_dict(self) -> dict[str, Any]:
        return {"Code": self.code, "Message": self.message, "RequestId": self.request_id, "Status": self.status}


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps (the SDK nests requests' and urllib3's errors)."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or any(current is seen for seen in found) or len(found) > 20:
            continue
        found.append(current)
        todo += [getattr(current, "inner_exception", None), current.__cause__, current.__context__]
    return found


def _never_sent(exc: BaseException) -> bool:
    """No connection was made, so the request cannot have reached the service."""
    return any(type(e).__name__ in NOT_CONNECTED_ERRORS for e in _causes(exc))


# A secret's value after its name, quoted or not: `"AccessKeySecret": "abc"`, `SecurityToken=abc`, `'password': 'x'`.
_SECRET_VALUE = re.compile(
    r"""(?P<name>["']?[\w.-]*(?:secret|token|password|passwd)[\w.-]*["']?\s*[:=]\s*)"""
    r"""(?:"[^"]*"|'[^']*'|[^"'\s,;&}\]]+)""",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Text of an error raised before DLC answered, with the values of secrets masked: the credentials library
    puts an STS answer (AccessKeySecret, SecurityToken) into its error when a field is missing, and this text
    is logged, stored on the job and shown."""
    return _SECRET_VALUE.sub(lambda m: f"{m['name']}***", text)


# An absolute file path (or ~/...) standing on its own: the credentials library names the files it looked in.
_SERVER_PATH = re.compile(r"(?<![\w.:/~])~?/(?:[\w.@+-]+/)*[\w.@+-]+")


def strip_paths(text: str) -> str:
    """Text of an error raised on the server before anything was sent, without the server's file paths (its home
    directory, where its credentials files are or are not): they are nobody's business but the operator's."""
    return _SERVER_PATH.sub("<server file>", text)


class _OneLineCredentialsLog(logging.Filter):
    """The credentials library logs each failed credentials refresh twice, the second time with a full
    traceback (and through a handler of its own as well as ours): every call of a workspace without working
    credentials. The failure is also raised to our caller, which reports it once, redacted: drop those
    records here, and mask secrets in the library's other warnings."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info or "cached value is None" in text:
            return False
        record.msg, record.args = redact(text), ()
        return True


_credentials_log = logging.getLogger("credentials")
if not any(isinstance(f, _OneLineCredentialsLog) for f in _credentials_log.filters):
    _credentials_log.addFilter(_OneLineCredentialsLog())


def classify(exc: Exception) -> DLCError:
    if isinstance(exc, DLCError):
        return exc
    if isinstance(exc, api_exceptions.AlibabaCloudException):
        data = exc.data or {}
        code = str(data.get("Code") or exc.code or "Error")
        message = str(data.get("Message") or exc.message or "")
        request_id = str(data.get("RequestId") or exc.request_id or "")
        status = exc.status_code
        transient = (
            isinstance(exc, api_exceptions.ThrottlingException | api_exceptions.ServerException)
            or (status is not None and (status == 429 or status >= 500))
            or code.startswith(THROTTLING_CODES)
        )
        retry_after_ms = getattr(exc, "retry_after", None)
        retry_after = retry_after_ms / 1000 if isinstance(retry_after_ms, int | float) and retry_after_ms > 0 else None
        return DLCError(code, message, request_id, status, transient=transient, retry_after=retry_after)
    causes = _causes(exc)
    inner = getattr(exc, "inner_exception", None)
    detail = redact(str(inner if inner is not None else exc))[:500]
    if any(isinstance(e, CredentialException) for e in causes):
        # No credentials to sign with (whatever the chain met on the way, an ECS metadata service that did not
        # answer included): nothing was sent, and only an admin can fix it.
        return DLCError(CREDENTIALS_CODE, strip_paths(detail))
    if not any(isinstance(e, OSError) for e in causes):
        # Failed on our side before any network I/O (credentials, a bad endpoint, a bad request object):
        # nothing was sent, and trying again will not help.
        return DLCError(f"Console.{type(causes[-1]).__name__}", strip_paths(detail))
    # No answer: refused before sending is harmless; a reset or timeout after sending may have taken effect.
    return DLCError(f"Connection.{type(exc).__name__}", detail, transient=True, ambiguous=not _never_sent(exc),
                    unreachable=any(type(e).__name__ in UNREACHABLE_ERRORS for e in causes))


_REASONS = {
    "credentials": "DLC credentials are not working for this workspace",
    "permission": "the workspace's DLC credentials are not allowed to do this",
    "endpoint": "the workspace's DLC endpoint cannot be reached as configured",
    "settings": "the console could not call DLC with this workspace's settings",
    "network": "DLC did not answer in time",
    "busy": "DLC is busy or failing",
    "request": "DLC refused the request",
}


def reason(err: DLCError, *, code: bool = True) -> str:
    """A short account of a failure that is safe to show anyone in the workspace: no local file paths, no
    credential chain, no message text (the full, redacted text is for logs and the admins' settings page)."""
    return f"{_REASONS[err.kind]} ({err.code})" if code else _REASONS[err.kind]


def credentials_message(workspace) -> str:
    """The plain account of a failure to get credentials: safe for everyone who sees a job of the workspace."""
    if workspace.is_local:
        source = "its profile localdlc"
    elif workspace.credential_profile:
        source = f"its profile {workspace.credential_profile}"
    else:
        source = "the default credentials chain"
    if workspace.role_arn:
        source += f", then its RAM role {workspace.role_arn}"
    return (f"The console could not get Alibaba Cloud credentials for workspace {workspace.name} ({source}). "
            "An admin can test them under Settings → Test connection.")


def job_error(err: DLCError, workspace) -> dict[str, Any]:
    """What a job keeps of a failure (submit_error, stop_error): the job page and the API show it to everyone who
    sees the job. DLC's answer as it came; a failure to get credentials as the plain message: its detail (the
    credential chain, the ECS metadata answer) is for the server log (the caller's) and the admins' Test
    connection."""
    if err.code == CREDENTIALS_CODE:
        return {**err.as_dict(), "Message": credentials_message(workspace)}
    return err.as_dict()


def needs_admin(err: DLCError) -> bool:
    """Only a workspace admin (or the console's operator) can fix this: its settings or its credentials."""
    return err.kind in ("credentials", "permission", "endpoint", "settings")


def in_flight_window() -> float:
    """Seconds after which a CreateJob sent without an answer can no longer land: the client has given up
    (connect + read timeout) and the service has had a margin to finish what it received."""
    return (settings.DLC_CONNECT_TIMEOUT_MS + settings.DLC_READ_TIMEOUT_MS) / 1000 + 2.0


def api_time(value: datetime) -> str:
    """A time as the API's query parameters take it (UTC, ISO 8601); sub-second only when there is one."""
    value = value.astimezone(UTC) if timezone.is_aware(value) else value
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


# One credentials client per way of getting credentials, reused while its files are unchanged. A new one per call
# would walk the default chain (and ask the ECS metadata service) every time, assume a RAM role per request, and
# leak a thread: each EcsRamRoleCredentialsProvider starts a background scheduler that is never shut down.
_credential_clients: dict[tuple, tuple[tuple, CredentialClient]] = {}
_credential_lock = threading.Lock()


def _stamps(*paths: str) -> tuple:
    """The files' modification times, so an edited credentials file is read again."""
    found = []
    for path in paths:
        try:
            found.append(os.stat(path).st_mtime_ns)
        except OSError:
            found.append(None)
    return tuple(found)


def credentials_for(workspace) -> CredentialClient:
    if workspace.is_local:
        key = ("profile", settings.LOCALDLC_CREDENTIALS_FILE, "localdlc", workspace.role_arn)
        files = [settings.LOCALDLC_CREDENTIALS_FILE]
    elif workspace.credential_profile:
        key = ("profile", settings.DLC_CREDENTIALS_FILE, workspace.credential_profile, workspace.role_arn)
        files = [settings.DLC_CREDENTIALS_FILE or _default_profile_file()]
    else:
        key = ("default", "", "", workspace.role_arn)
        files = [os.path.join(credentials_constants.HOME, ".aliyun", "config.json"), _default_profile_file()]
    stamps = _stamps(*files)
    with _credential_lock:
        cached = _credential_clients.get(key)
        if cached is None or cached[0] != stamps:
            cached = _credential_clients[key] = (stamps, _new_credentials(workspace))
    return cached[1]


def _default_profile_file() -> str:
    return credentials_env.environment_credentials_file or os.path.join(
        credentials_constants.HOME, ".alibabacloud", "credentials.ini")


def _new_credentials(workspace) -> CredentialClient:
    if workspace.is_local:
        provider = ProfileCredentialsProvider(
            profile_file=settings.LOCALDLC_CREDENTIALS_FILE, profile_name="localdlc"
        )
    elif workspace.credential_profile:
        provider = ProfileCredentialsProvider(
            profile_file=settings.DLC_CREDENTIALS_FILE or None, profile_name=workspace.credential_profile
        )
    else:
        provider = DefaultCredentialsProvider()
    if workspace.role_arn:
        provider = RamRoleArnCredentialsProvider(
            credentials_provider=provider, role_arn=workspace.role_arn, role_session_name="dlc-console"
        )
    return CredentialClient(provider=provider)


def endpoint_for(workspace) -> str:
    if workspace.endpoint:
        return workspace.endpoint
    if workspace.is_local:
        return settings.LOCALDLC_ENDPOINT
    return f"pai-dlc.{workspace.region}.aliyuncs.com"


def client_for(workspace, *, read_timeout_ms: int | None = None) -> Client:
    """The SDK client for a workspace. Production refuses localdlc workspaces unless allowed."""
    if workspace.is_local and not settings.ALLOW_LOCALDLC:
        raise DLCError("Console.LocalDLCDisabled", "localdlc workspaces are disabled in production settings.")
    try:
        config = Config(
            credential=credentials_for(workspace),
            region_id=workspace.region,
            endpoint=endpoint_for(workspace),
            protocol="http" if workspace.is_local else "https",
            read_timeout=read_timeout_ms or settings.DLC_READ_TIMEOUT_MS,
            connect_timeout=settings.DLC_CONNECT_TIMEOUT_MS,
        )
        return Client(config)
    except Exception as exc:  # noqa: BLE001 - callers handle DLCError only (a credentials provider may raise here)
        raise classify(exc) from exc


def _runtime() -> RuntimeOptions:
    # Retries are ours (Celery, with the idempotency look-up); the SDK must not re-send on its own.
    return RuntimeOptions(autoretry=False, max_attempts=0)


def _call(fn, *args):
    try:
        return fn(*args, {}, _runtime()).body
    except Exception as exc:  # noqa: BLE001 - every failure becomes a DLCError for the caller
        raise classify(exc) from exc


def create_job(workspace, body: dict[str, Any]) -> str:
    request = dlc_models.CreateJobRequest().from_map(body)
    return _call(client_for(workspace).create_job_with_options, request).job_id


# ListJobs exactly as the SDK's list_jobs_with_options sends it (same action, path, query and signature), but
# through the client's generic call_api, which hands back the JSON: the SDK would parse every 100-job page into
# models only for us to turn them back into dicts: about a fifth of the console's CPU in a 10k-job sync cycle.
_LIST_JOBS = Params(action="ListJobs", version="2020-12-03", protocol="HTTPS", pathname="/api/v1/jobs",
                    method="GET", auth_type="AK", style="ROA", req_body_type="json", body_type="json")


def list_jobs(workspace, **query: Any) -> tuple[list[dict[str, Any]], int]:
    """One ListJobs page as plain dicts (the wire JSON, fields the SDK's models lack included), and the total."""
    query.setdefault("WorkspaceId", workspace.dlc_workspace_id or None)
    try:
        request = dlc_models.ListJobsRequest().from_map({k: v for k, v in query.items() if v is not None})
        request.validate()
        shrink = dlc_models.ListJobsShrinkRequest()
        OpenApiUtils.convert(request, shrink)
        if request.tags is not None:
            shrink.tags_shrink = OpenApiUtils.array_to_string_with_specified_style(request.tags, "Tags", "json")
        wire = OpenApiRequest(headers={}, query=OpenApiUtils.query(shrink.to_map()))
        body = client_for(workspace).call_api(_LIST_JOBS, wire, _runtime())["body"] or {}
    except Exception as exc:  # noqa: BLE001 - every failure becomes a DLCError for the caller
        raise classify(exc) from exc
    return list(body.get("Jobs") or []), int(body.get("TotalCount") or 0)


def tag_of(item: dict[str, Any]) -> str | None:
    """The console idempotency tag a ListJobs/GetJob item carries, if any."""
    tags = (item.get("Settings") or {}).get("Tags") or {}
    value = tags.get(IDEMPOTENCY_TAG_KEY) if isinstance(tags, dict) else None
    return str(value) if value else None


def pick_tagged(items: list[dict[str, Any]], tag: str) -> str | None:
    """The job among items that carries the tag; the oldest if (against all odds) there are several."""
    matches = [item for item in items if tag_of(item) == tag and item.get("JobId")]
    if not matches:
        return None
    return min(matches, key=lambda item: (str(item.get("GmtCreateTime") or ""), item["JobId"]))["JobId"]


def find_by_tag(workspace, tag: str, *, since: datetime | None = None, display_name: str = "") -> str | None:
    """The DLC job id created with this idempotency tag, if the service has one.

    A tag match is only trusted when the item itself shows the tag: a backend that ignored the Tags filter
    would otherwise hand us someone else's job. Items that do not echo Settings are confirmed with GetJob.
    `since` (the Job row's creation) widens the search past ListJobs' default 7-day window; `display_name`
    gives a second look, among jobs of that name, in case the Tags filter is not honoured at all.
    """
    start = api_time((since - timedelta(days=1)).replace(microsecond=0)) if since else None
    queries = [{"Tags": {IDEMPOTENCY_TAG_KEY: tag}}]
    if display_name:
        queries.append({"DisplayName": display_name})
    for query in queries:
        items, _ = list_jobs(workspace, StartTime=start, PageSize=LIST_PAGE_SIZE, PageNumber=1, **query)
        found = pick_tagged(items, tag)
        if found:
            return found
        if "Tags" in query:
            unverifiable = [item for item in items if item.get("JobId") and not item.get("Settings")]
            confirmed = [get_job(workspace, item["JobId"]) for item in unverifiable[:TAG_CONFIRM_LIMIT]]
            found = pick_tagged(confirmed, tag)
            if found:
                return found
    return None


def get_job(workspace, job_id: str) -> dict[str, Any]:
    request = dlc_models.GetJobRequest(need_detail=True)
    return _call(client_for(workspace).get_job_with_options, job_id, request).to_map()


def stop_job(workspace, job_id: str) -> None:
    _call(client_for(workspace).stop_job_with_options, job_id)


def update_job(workspace, job_id: str, *, priority: int | None = None, description: str | None = None,
               read_timeout_ms: int = 5000) -> None:
    """UpdateJob of the fields given (None: left as it is). A user waits on it, hence the short read timeout."""
    request = dlc_models.UpdateJobRequest(priority=priority, description=description)
    _call(client_for(workspace, read_timeout_ms=read_timeout_ms).update_job_with_options, job_id, request)


def get_pod_logs(workspace, job_id: str, pod_id: str, *, max_lines: int = 2000, read_timeout_ms: int = 5000,
                 **query: Any) -> list[str]:
    request = dlc_models.GetPodLogsRequest(max_lines=max_lines, **query)
    client = client_for(workspace, read_timeout_ms=read_timeout_ms)
    return list(_call(client.get_pod_logs_with_options, job_id, pod_id, request).logs or [])


def get_job_events(workspace, job_id: str, *, max_events: int = 2000) -> list[str]:
    request = dlc_models.GetJobEventsRequest(max_events_num=max_events)
    client = client_for(workspace, read_timeout_ms=5000)
    return list(_call(client.get_job_events_with_options, job_id, request).events or [])


def list_ecs_specs(workspace, **query: Any) -> list[dict[str, Any]]:
    request = dlc_models.ListEcsSpecsRequest().from_map({"PageSize": 100, **query})
    body = _call(client_for(workspace, read_timeout_ms=5000).list_ecs_specs_with_options, request)
    return [s.to_map() for s in (body.ecs_specs or [])]


def get_job_metrics(workspace, job_id: str, metric_type: str, start: datetime | None = None,
                    end: datetime | None = None, time_step: str | None = None) -> list[dict[str, Any]]:
    """GetJobMetrics: [{PodId, Metrics: [{Time (epoch ms), Value}]}] of one metric type, one entry per pod."""
    request = dlc_models.GetJobMetricsRequest(
        metric_type=metric_type, start_time=api_time(start) if start else None,
        end_time=api_time(end) if end else None, time_step=time_step)
    client = client_for(workspace, read_timeout_ms=5000)
    body = _call(client.get_job_metrics_with_options, job_id, request)
    return [pod.to_map() for pod in body.pod_metrics or []]
