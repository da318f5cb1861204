"""The one place that talks to a DLC backend: an official SDK client per workspace, and thin calls.

Everything goes through `alibabacloud_pai_dlc20201203.Client`, whether the workspace points at the
regional PAI-DLC endpoint or at the embedded localdlc service, so tests exercise production's code path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alibabacloud_credentials.client import Client as CredentialClient
from alibabacloud_credentials.provider import (
    DefaultCredentialsProvider,
    ProfileCredentialsProvider,
    RamRoleArnCredentialsProvider,
)
from alibabacloud_pai_dlc20201203 import models as dlc_models
from alibabacloud_pai_dlc20201203.client import Client
from alibabacloud_tea_openapi import exceptions as api_exceptions
from alibabacloud_tea_openapi.utils_models import Config
from darabonba.runtime import RuntimeOptions
from django.conf import settings

# The Settings.Tags key that carries a Job's idempotency tag, so a retried submit can find its job.
IDEMPOTENCY_TAG_KEY = "dlc-console-submission"
# The API's largest ListJobs page.
LIST_PAGE_SIZE = 100
# Throttling codes the service answers with HTTP 400 rather than 429.
THROTTLING_CODES = ("Throttling", "ServiceUnavailable", "InternalError", "ServiceBusy")


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

    def __str__(self) -> str:
        rid = f" (RequestId {self.request_id})" if self.request_id else ""
        return f"{self.code}: {self.message}{rid}"

    def as_dict(self) -> dict[str, Any]:
        return {"Code": self.code, "Message": self.message, "RequestId": self.request_id, "Status": self.status}


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
        return DLCError(code, message, request_id, status, transient=transient)
    # No answer (refused, reset, timed out): the call may or may not have reached the service.
    name = type(exc).__name__
    return DLCError(f"Connection.{name}", str(exc)[:500], transient=True, ambiguous=True)


def credentials_for(workspace) -> CredentialClient:
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
    config = Config(
        credential=credentials_for(workspace),
        region_id=workspace.region,
        endpoint=endpoint_for(workspace),
        protocol="http" if workspace.is_local else "https",
        read_timeout=read_timeout_ms or settings.DLC_READ_TIMEOUT_MS,
        connect_timeout=settings.DLC_CONNECT_TIMEOUT_MS,
    )
    return Client(config)


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


def list_jobs(workspace, **query: Any) -> tuple[list[dict[str, Any]], int]:
    """One ListJobs page as plain dicts (the wire JSON), and the total count."""
    query.setdefault("WorkspaceId", workspace.dlc_workspace_id or None)
    request = dlc_models.ListJobsRequest().from_map({k: v for k, v in query.items() if v is not None})
    body = _call(client_for(workspace).list_jobs_with_options, request)
    return [j.to_map() for j in (body.jobs or [])], int(body.total_count or 0)


def find_by_tag(workspace, tag: str) -> str | None:
    """The DLC job id created with this idempotency tag, if the service has one."""
    jobs, _ = list_jobs(workspace, Tags={IDEMPOTENCY_TAG_KEY: tag}, PageSize=10, ShowOwn=None)
    for job in jobs:
        if (job.get("Settings") or {}).get("Tags", {}).get(IDEMPOTENCY_TAG_KEY) == tag:
            return job["JobId"]
    return None


def get_job(workspace, job_id: str) -> dict[str, Any]:
    request = dlc_models.GetJobRequest(need_detail=True)
    return _call(client_for(workspace).get_job_with_options, job_id, request).to_map()


def stop_job(workspace, job_id: str) -> None:
    _call(client_for(workspace).stop_job_with_options, job_id)


def get_pod_logs(workspace, job_id: str, pod_id: str, *, max_lines: int = 2000, **query: Any) -> list[str]:
    request = dlc_models.GetPodLogsRequest(max_lines=max_lines, **query)
    client = client_for(workspace, read_timeout_ms=5000)
    return list(_call(client.get_pod_logs_with_options, job_id, pod_id, request).logs or [])


def get_job_events(workspace, job_id: str, *, max_events: int = 2000) -> list[str]:
    request = dlc_models.GetJobEventsRequest(max_events_num=max_events)
    client = client_for(workspace, read_timeout_ms=5000)
    return list(_call(client.get_job_events_with_options, job_id, request).events or [])


def list_ecs_specs(workspace, **query: Any) -> list[dict[str, Any]]:
    request = dlc_models.ListEcsSpecsRequest().from_map({"PageSize": 100, **query})
    body = _call(client_for(workspace, read_timeout_ms=5000).list_ecs_specs_with_options, request)
    return [s.to_map() for s in (body.ecs_specs or [])]
