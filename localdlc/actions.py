"""The DLC actions: each takes the parsed request and returns the response body (server.py adds RequestId).

Wire names and JSON types follow the SDK's models (alibabacloud_pai_dlc20201203/models), e.g. every Gmt*Time
is an ISO 8601 UTC string, GetJob.RequestGPU is a number while JobItem.RequestGPU is a string.
"""

from __future__ import annotations

import json
import math
import secrets
import shutil
import string
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import catalog, metrics, validation
from .errors import ApiError, invalid, not_found
from .logindex import LogIndex
from .runner import Runner, iso, plan_pods
from .store import Store

WEEK = 7 * 24 * 3600
LIST_JOBS_DEFAULT_PAGE_SIZE = 10
LIST_ECS_SPECS_DEFAULT_PAGE_SIZE = 10
LIST_TEMPLATES_DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100
MAX_LOG_LINES = 2000
MAX_EVENTS = 2000
_MAX_EPOCH = 253402300799  # 9999-12-31T23:59:59Z, the last time an ISO 8601 answer can show
# There is one user: the UserId and Username every job shows. A ListJobs filter naming anyone else matches nothing.
USER = "localdlc"
_ID_CHARS = string.ascii_lowercase + string.digits
# Time-bounded log reads bisect an index instead of scanning a pod's whole log (100k lines: ~70 ms a call).
_LOG_INDEX = LogIndex()


@dataclass
class Context:
    store: Store
    runner: Runner
    data_dir: Path
    workspaces: set[str] | None = None
    resource_ids: set[str] | None = None


# -- helpers -----------------------------------------------------------------------------------------------
def parse_time(value: str | None, field: str) -> float | None:
    """ISO 8601 (Z or offset, optional fraction) or epoch seconds/milliseconds -> epoch seconds."""
    if value in (None, ""):
        return None
    text = value.strip()
    problem = f"'{value}' is not an ISO 8601 time such as 2026-01-02T03:04:05Z"
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        seconds = number / 1000 if number > 1e11 else number
        # float() also reads "nan", "inf" and 1e30: as a bound they silently matched nothing (or everything).
        if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_EPOCH:
            raise invalid(field, problem + " or epoch seconds/milliseconds")
        return seconds
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        raise invalid(field, problem) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def parse_bool(value: str | None, field: str) -> bool | None:
    """The SDK sends a Boolean as true/false; anything else is refused, not read as false."""
    if value in (None, ""):
        return None
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise invalid(field, f"'{value}' is not a Boolean: use true or false")
    return text == "true"


def parse_int(query: dict[str, str], key: str, default: int, minimum: int = 0) -> int:
    raw = query.get(key)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(key, "must be an integer") from None
    if value < minimum:
        raise invalid(key, f"must be at least {minimum}")
    return value


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def _get_doc(ctx: Context, job_id: str) -> dict[str, Any]:
    doc = ctx.store.get_job(job_id)
    if doc is None:
        raise not_found("JobNotFound", f"The job {job_id} does not exist.")
    return doc


def new_job_id() -> str:
    return "dlc" + "".join(secrets.choice(_ID_CHARS) for _ in range(14))


# -- rendering -----------------------------------------------------------------------------------------------
def _render_pod(pod: dict[str, Any]) -> dict[str, Any]:
    start, finish = pod.get("started"), pod.get("finished")
    duration = None if start is None else round((finish or time.time()) - start, 3)
    return _clean({
        "PodId": pod["PodId"],
        "PodUid": pod["PodUid"],
        "Type": pod["Type"],
        "Status": pod["Status"],
        "SubStatus": "Normal",
        "Ip": "127.0.0.1" if start is not None else "",
        "PodIps": [] if start is None else [{"Ip": "127.0.0.1"}],
        "NodeName": "localdlc",
        "ResourceType": "ECS",
        "GmtCreateTime": iso(pod.get("created")),
        "GmtStartTime": iso(start),
        "GmtFinishTime": iso(finish),
        "Duration": duration,
        "HistoryPods": [],
    })


def _render_history(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [_clean({"Status": h["Status"], "StartTime": iso(h["StartTime"]), "EndTime": iso(h.get("EndTime")),
                    "ReasonCode": h.get("ReasonCode") or "", "ReasonMessage": h.get("ReasonMessage") or ""})
            for h in doc.get("StatusHistory", [])]


def _resource_type(request: dict[str, Any]) -> str:
    for spec in request.get("JobSpecs") or []:
        found = catalog.find_spec(spec.get("EcsSpec") or "")
        if found and found["ResourceType"] == "Lingjun":
            return "Lingjun"
    return "ECS"


def render_job(doc: dict[str, Any], detail: bool = True, item: bool = False) -> dict[str, Any]:
    """GetJob body (item=False) or ListJobs JobItem (item=True)."""
    request = doc["Request"]
    need = doc.get("Need") or [0, 0, 0]
    running, finished = doc.get("running"), doc.get("finished")
    duration = int((finished or time.time()) - running) if running else 0
    vpc = request.get("UserVpc")
    if isinstance(vpc, dict):
        vpc = dict(vpc)
        if "ExtendedCIDRs" in vpc:  # GetJob spells it ExtendedCidrs
            vpc["ExtendedCidrs"] = vpc.pop("ExtendedCIDRs")
    out: dict[str, Any] = {
        "JobId": doc["JobId"],
        "DisplayName": doc["DisplayName"],
        "JobType": doc["JobType"],
        "WorkspaceId": doc.get("WorkspaceId") or "",
        "WorkspaceName": doc.get("WorkspaceId") or "default",
        "ResourceId": doc.get("ResourceId") or "",
        "ResourceType": _resource_type(request),
        "ResourceLevel": "L0",
        "Status": doc["Status"],
        "SubStatus": "",
        "ReasonCode": doc.get("ReasonCode") or "",
        "ReasonMessage": doc.get("ReasonMessage") or "",
        "Priority": doc.get("Priority") or 1,
        "Accessibility": doc.get("Accessibility") or "PRIVATE",
        "Description": doc.get("Description"),
        "UserCommand": doc.get("UserCommand"),
        "Envs": request.get("Envs") or {},
        "Settings": request.get("Settings"),
        "UserVpc": vpc,
        "CodeSource": request.get("CodeSource"),
        "CredentialConfig": request.get("CredentialConfig"),
        "ThirdpartyLibs": request.get("ThirdpartyLibs"),
        "ThirdpartyLibDir": request.get("ThirdpartyLibDir"),
        "SchedulingStrategy": request.get("SchedulingStrategy"),
        "ElasticSpec": request.get("ElasticSpec"),
        "JobSpecs": request.get("JobSpecs"),
        "DataSources": [_clean({"DataSourceId": d.get("DataSourceId"), "MountPath": d.get("MountPath"),
                                "Uri": d.get("Uri")}) for d in request.get("DataSources") or []],
        "CustomEnvs": request.get("CustomEnvs"),
        "StatusHistory": _render_history(doc),
        "GmtCreateTime": iso(doc["created"]),
        "GmtSubmittedTime": iso(doc.get("submitted")),
        "GmtRunningTime": iso(running),
        "GmtFinishTime": iso(finished),
        "GmtSuccessedTime": iso(doc.get("succeeded")),
        "GmtFailedTime": iso(doc.get("failed")),
        "GmtStoppedTime": iso(doc.get("stopped")),
        "Duration": duration,
        "RequestCPU": int(round(need[0])),
        "RequestGPU": float(need[2]),
        "RequestMemory": float(need[1]),
        "RestartTimes": "0",
        "UserId": USER,
        "TenantId": "localdlc",
        "ClusterId": "localdlc",
        "EnabledDebugger": False,
        "JobReplicaStatuses": _replica_statuses(doc),
    }
    if detail or item:
        out["Pods"] = [_render_pod(p) for p in doc.get("Pods", [])]
    if item:
        out.update({
            "RequestGPU": f"{need[2]:g}",
            "RequestMemory": f"{need[1]:g}Gi",
            "Username": USER,
            "ResourceQuotaName": doc.get("ResourceId") or "",
            "ResourceName": doc.get("ResourceId") or "",
            "NodeCount": str(len(doc.get("Pods", []))),
            "UseOversoldResource": False,
            "JobMaxRunningTimeMinutes": request.get("JobMaxRunningTimeMinutes") or 0,
            "IsDeleted": bool(doc.get("IsDeleted")),
            "TemplateId": request.get("TemplateId"),
            "TemplateName": doc.get("TemplateName"),
            "GmtModifiedTime": iso(doc.get("modified")),
            "RetryCount": 0,
            "EnablePreemptibleJob": any((s.get("SpotSpec") or s.get("UseSpotInstance"))
                                        for s in request.get("JobSpecs") or []),
        })
    return _clean(out)


def _replica_statuses(doc: dict[str, Any]) -> list[dict[str, Any]]:
    roles: dict[str, dict[str, Any]] = {}
    for pod in doc.get("Pods", []):
        entry = roles.setdefault(pod["Type"], {"Type": pod["Type"], "Active": 0, "Queuing": 0, "Dequeued": 0})
        if pod["Status"] == "Running":
            entry["Active"] += 1
        elif pod["Status"] == "Pending":
            entry["Queuing"] += 1
        else:
            entry["Dequeued"] += 1
    return list(roles.values())


# -- jobs ----------------------------------------------------------------------------------------------------
def create_job(ctx: Context, body: Any) -> dict[str, Any]:
    template_name = None
    if isinstance(body, dict) and body.get("TemplateId"):
        body, template_name = _apply_template(ctx, body)
    validation.validate_create_job(body, ctx.workspaces, ctx.resource_ids)
    now = time.time()
    while True:
        job_id = new_job_id()
        pods, need = plan_pods(job_id, body, now)
        doc = {
            "JobId": job_id,
            "DisplayName": body["DisplayName"],
            "JobType": body["JobType"],
            "WorkspaceId": body.get("WorkspaceId") or "",
            "ResourceId": body.get("ResourceId") or "",
            "Priority": body.get("Priority") or 1,
            "Accessibility": body.get("Accessibility") or "PRIVATE",
            "Description": body.get("Description") or "",
            "UserCommand": body["UserCommand"],
            "TemplateName": template_name,
            "Request": body,
            "Status": "Creating",
            "ReasonCode": "",
            "ReasonMessage": "",
            "StatusHistory": [{"Status": "Creating", "StartTime": now, "EndTime": None,
                               "ReasonCode": "", "ReasonMessage": ""}],
            "created": now, "modified": now, "submitted": None, "running": None, "finished": None,
            "Pods": pods,
            "Need": list(need),
            "IsDeleted": False,
        }
        if ctx.store.insert_job(doc):
            break
    images = sorted({p["Image"] for p in pods if p["Image"]})
    ctx.store.add_event(job_id, None, now, f"{iso(now)} [Normal] Created: Job {job_id} created"
                        + (f"; image(s) {', '.join(images)} recorded, pods run as host processes" if images else ""))
    ctx.runner.add(doc)
    return {"JobId": job_id}


def get_job(ctx: Context, job_id: str, query: dict[str, str]) -> dict[str, Any]:
    detail = parse_bool(query.get("NeedDetail"), "NeedDetail")
    return render_job(_get_doc(ctx, job_id), detail=detail is not False)


_SORT_KEYS = {
    "DisplayName": lambda d: d["DisplayName"].lower(),
    "JobType": lambda d: d["JobType"],
    "Status": lambda d: d["Status"],
    "GmtCreateTime": lambda d: d["created"],
    "GmtFinishTime": lambda d: d.get("finished") or 0.0,
    "Priority": lambda d: d.get("Priority") or 1,
}
_TIME_FIELDS = {"GmtCreateTime": "created", "GmtFinishTime": "finished", "GmtRunningTime": "running",
                "GmtSubmittedTime": "submitted", "GmtModifiedTime": "modified"}
# ListJobs filters that look inside a job's document (the others are columns of the store).
_DOCUMENT_FILTERS = ("Accessibility", "TemplateId", "PipelineId", "Description", "UserCommandSearch", "ImageSearch",
                     "ReasonSearch", "ResourceQuotaName", "Username", "UserIdForFilter")


def list_jobs(ctx: Context, query: dict[str, str]) -> dict[str, Any]:
    page, size = validation.paging(query, LIST_JOBS_DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    now = time.time()
    ids: set[str] | None = None
    if query.get("JobId"):
        ids = {query["JobId"].strip().lower()}
    elif query.get("JobIds"):
        ids = {j.strip().lower() for j in query["JobIds"].split(",") if j.strip()}
    start = parse_time(query.get("StartTime"), "StartTime")
    end = parse_time(query.get("EndTime"), "EndTime")
    if ids is None:  # an id lookup is not limited to the default 7-day window (documented)
        start = now - WEEK if start is None else start
        end = now + 1 if end is None else end
    time_field = query.get("TimeRangeField") or "GmtCreateTime"
    if time_field not in _TIME_FIELDS:
        raise invalid("TimeRangeField", f"must be one of {', '.join(_TIME_FIELDS)}")
    sort_by = query.get("SortBy") or "GmtCreateTime"
    if sort_by not in _SORT_KEYS:
        raise invalid("SortBy", f"must be one of {', '.join(_SORT_KEYS)}")
    order = (query.get("Order") or "desc").lower()
    if order not in ("asc", "desc"):
        raise invalid("Order", "must be asc or desc")
    statuses = {s.strip() for s in (query.get("Status") or "").split(",") if s.strip()}
    for status in statuses:
        if status not in validation.STATUSES:
            raise invalid("Status", f"'{status}' is not a job status")
    tags: dict[str, str] = {}
    if query.get("Tags"):
        try:
            tags = json.loads(query["Tags"])
        except ValueError:
            raise invalid("Tags", "must be a JSON object of strings") from None
        if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
            raise invalid("Tags", "must be a JSON object of strings")
    name = (query.get("DisplayName") or "").lower()
    job_types = {t.strip() for t in (query.get("JobType") or "").split(",") if t.strip()}
    resource_ids = {r.strip() for r in (query.get("ResourceIds") or "").split(",") if r.strip()}
    if query.get("ResourceId"):
        resource_ids = {query["ResourceId"]}

    # Ids are generated lower-case (new_job_id), so the lower-cased ids can narrow the query in SQL.
    narrow = {"job_ids": ids, "workspace_id": query.get("WorkspaceId") or None}
    looks_inside = (statuses or name or job_types or resource_ids or tags
                    or any(query.get(k) for k in _DOCUMENT_FILTERS))
    if time_field == "GmtCreateTime" and sort_by == "GmtCreateTime" and not looks_inside:
        # Nothing to match inside the documents: SQL orders, counts and cuts the page, so only the page's
        # documents are decoded. (The console's import asks for the oldest 100 of all of a workspace's recent
        # jobs every cycle: decoding them all was most of localdlc's time in a 10k-job sync cycle.)
        page_docs, total = ctx.store.page_jobs(start, end, order=order, limit=size, offset=(page - 1) * size,
                                               **narrow)
        return {"Jobs": [render_job(d, item=True) for d in page_docs], "TotalCount": total}
    if time_field == "GmtCreateTime":
        docs = ctx.store.list_jobs(start, end, **narrow)
    else:
        docs = ctx.store.list_jobs(**narrow)
        key = _TIME_FIELDS[time_field]
        docs = [d for d in docs if d.get(key) is not None and (start is None or d[key] >= start)
                and (end is None or d[key] <= end)]

    def keep(d: dict[str, Any]) -> bool:
        request = d["Request"]
        if ids is not None and d["JobId"].lower() not in ids:
            return False
        if query.get("WorkspaceId") and d.get("WorkspaceId") != query["WorkspaceId"]:
            return False
        if statuses and d["Status"] not in statuses:
            return False
        if name and name not in d["DisplayName"].lower():
            return False
        if job_types and d["JobType"] not in job_types:
            return False
        if resource_ids and d.get("ResourceId") not in resource_ids:
            return False
        if query.get("Accessibility") and (d.get("Accessibility") or "PRIVATE") != query["Accessibility"]:
            return False
        if tags:
            job_tags = (request.get("Settings") or {}).get("Tags") or {}
            if any(job_tags.get(k) != v for k, v in tags.items()):
                return False
        if query.get("TemplateId") and request.get("TemplateId") != query["TemplateId"]:
            return False
        if query.get("PipelineId") and (request.get("Settings") or {}).get("PipelineId") != query["PipelineId"]:
            return False
        if query.get("Description") and query["Description"].lower() not in (d.get("Description") or "").lower():
            return False
        if query.get("UserCommandSearch") and query["UserCommandSearch"] not in (d.get("UserCommand") or ""):
            return False
        if query.get("ImageSearch") and not any(query["ImageSearch"] in (p.get("Image") or "")
                                                for p in d.get("Pods", [])):
            return False
        if query.get("ReasonSearch") and query["ReasonSearch"].lower() not in (
                (d.get("ReasonCode") or "") + " " + (d.get("ReasonMessage") or "")).lower():
            return False
        # Fuzzy, like DisplayName: the quota name an item shows is its ResourceId (render_job).
        if query.get("ResourceQuotaName") and query["ResourceQuotaName"].lower() not in (
                d.get("ResourceId") or "").lower():
            return False
        if query.get("Username") and query["Username"].lower() not in USER:
            return False
        if query.get("UserIdForFilter") and query["UserIdForFilter"] != USER:
            return False
        return True

    docs = [d for d in docs if keep(d)]
    key = _SORT_KEYS[sort_by]
    docs.sort(key=lambda d: (key(d), d["created"], d["JobId"]), reverse=(order == "desc"))
    total = len(docs)
    page_docs = docs[(page - 1) * size: page * size]
    return {"Jobs": [render_job(d, item=True) for d in page_docs], "TotalCount": total}


def stop_job(ctx: Context, job_id: str) -> dict[str, Any]:
    _get_doc(ctx, job_id)
    # Stopping a job that already ended is a no-op that succeeds (documented choice: idempotent).
    ctx.runner.request_stop(job_id)
    return {"JobId": job_id}


def delete_job(ctx: Context, job_id: str) -> dict[str, Any]:
    doc = _get_doc(ctx, job_id)
    if doc["Status"] not in validation.TERMINAL or ctx.runner.is_active(job_id):
        raise ApiError(400, "InvalidJobStatus",
                       f"The job {job_id} is {doc['Status']}; only Succeeded, Failed or Stopped jobs can be "
                       "deleted. Stop it first.")

    def mutate(d: dict[str, Any]) -> None:
        d["IsDeleted"] = True
        d["modified"] = time.time()

    ctx.store.update_job(job_id, mutate)
    shutil.rmtree(ctx.data_dir / "jobs" / job_id, ignore_errors=True)
    return {"JobId": job_id}


def update_job(ctx: Context, job_id: str, body: Any) -> dict[str, Any]:
    _get_doc(ctx, job_id)
    validation.validate_update_job(body)
    if body.get("JobSpecs") is not None:
        raise invalid("JobSpecs", "changing the resources of a submitted job is not supported by localdlc")
    now = time.time()

    def mutate(d: dict[str, Any]) -> None:
        if body.get("Priority") is not None:
            d["Priority"] = body["Priority"]
            d["Request"]["Priority"] = body["Priority"]
        if body.get("Description") is not None:
            d["Description"] = body["Description"]
        if body.get("Accessibility") is not None:
            d["Accessibility"] = body["Accessibility"]
        if body.get("UserCommand") is not None:
            d["UserCommand"] = body["UserCommand"]
            d["Request"]["UserCommand"] = body["UserCommand"]
            if d["Status"] in ("Creating", "Queuing"):  # not yet started: the new command is what will run
                specs = d["Request"]["JobSpecs"]
                for pod in d["Pods"]:
                    if not specs[pod["SpecIndex"]].get("UserCommand"):
                        pod["Command"] = body["UserCommand"]
        d["modified"] = now

    ctx.store.update_job(job_id, mutate)
    if body.get("Priority") is not None:
        ctx.runner.set_priority(job_id, body["Priority"])
    return {"JobId": job_id}


def _find_pod(doc: dict[str, Any], pod_id: str, pod_uid: str | None) -> dict[str, Any]:
    for pod in doc.get("Pods", []):
        if pod["PodId"] == pod_id and (not pod_uid or pod["PodUid"] == pod_uid):
            return pod
    raise not_found("PodNotFound", f"The pod {pod_id} of job {doc['JobId']} does not exist.")


def get_pod_logs(ctx: Context, job_id: str, pod_id: str, query: dict[str, str]) -> dict[str, Any]:
    doc = _get_doc(ctx, job_id)
    pod = _find_pod(doc, pod_id, query.get("PodUid"))
    download = parse_bool(query.get("DownloadToFile"), "DownloadToFile") is True
    max_lines = parse_int(query, "MaxLines", MAX_LOG_LINES, minimum=1)
    now = time.time()
    start = parse_time(query.get("StartTime"), "StartTime")
    end = parse_time(query.get("EndTime"), "EndTime")
    start = now - WEEK if start is None else start
    end = now + 1 if end is None else end
    path = ctx.data_dir / "jobs" / job_id / "logs" / f"{pod_id}.log"
    # DownloadToFile returns the whole range (documented), otherwise the last MaxLines
    lines = _LOG_INDEX.lines(path, start, end, None if download else max_lines)
    return {"JobId": job_id, "PodId": pod_id, "PodUid": pod["PodUid"], "Logs": lines, "Containers": "main",
            "ContainerInfo": {"MainContainer": "main", "SidecarContainers": []}}


def _events(ctx: Context, job_id: str, pod_id: str | None, query: dict[str, str]) -> list[str]:
    now = time.time()
    start = parse_time(query.get("StartTime"), "StartTime")
    end = parse_time(query.get("EndTime"), "EndTime")
    limit = parse_int(query, "MaxEventsNum", MAX_EVENTS, minimum=1)
    rows = ctx.store.events(job_id, pod_id, now - WEEK if start is None else start,
                            now + 1 if end is None else end, limit)
    return [message for _, message in rows]


def get_job_events(ctx: Context, job_id: str, query: dict[str, str]) -> dict[str, Any]:
    _get_doc(ctx, job_id)
    return {"JobId": job_id, "Events": _events(ctx, job_id, None, query)}


def get_job_metrics(ctx: Context, job_id: str, query: dict[str, str]) -> dict[str, Any]:
    """Each pod's samples of one metric, averaged per TimeStep (see metrics.py); no GPU or network data here."""
    metric = query.get("MetricType") or ""
    if metric not in metrics.METRIC_TYPES:
        raise invalid("MetricType", f"is required and must be one of {', '.join(metrics.METRIC_TYPES)}")
    doc = _get_doc(ctx, job_id)
    now = time.time()
    end = parse_time(query.get("EndTime"), "EndTime")
    end = now if end is None else end
    start = parse_time(query.get("StartTime"), "StartTime")
    start = end - 3600 if start is None else start
    if start > end:
        raise invalid("StartTime", "must not be after EndTime")
    try:
        step = metrics.parse_step(query.get("TimeStep"))
    except ValueError as exc:
        raise invalid("TimeStep", str(exc)) from None
    if (end - start) / step > metrics.MAX_POINTS:
        raise invalid("TimeStep", f"too small for this time range: more than {metrics.MAX_POINTS} points per pod")
    return {"JobId": job_id, "PodMetrics": [
        {"PodId": pod["PodId"], "Metrics": ctx.runner.metrics.query(pod["PodId"], metric, start, end, step)}
        for pod in doc.get("Pods", [])]}


def get_pod_events(ctx: Context, job_id: str, pod_id: str, query: dict[str, str]) -> dict[str, Any]:
    doc = _get_doc(ctx, job_id)
    pod = _find_pod(doc, pod_id, query.get("PodUid"))
    return {"JobId": job_id, "PodId": pod_id, "PodUid": pod["PodUid"],
            "Events": _events(ctx, job_id, pod_id, query)}


# -- ecs specs -----------------------------------------------------------------------------------------------
_SPEC_SORT = {"CPU": "Cpu", "GPU": "Gpu", "Memory": "Memory", "GmtCreateTime": None}


def list_ecs_specs(ctx: Context, query: dict[str, str]) -> dict[str, Any]:
    page, size = validation.paging(query, LIST_ECS_SPECS_DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    specs = list(enumerate(catalog.ECS_SPECS))
    accel = query.get("AcceleratorType")
    if accel:
        if accel not in ("CPU", "GPU"):
            raise invalid("AcceleratorType", "must be CPU or GPU")
        specs = [(i, s) for i, s in specs if s["AcceleratorType"] == accel]
    rtype = query.get("ResourceType")
    if rtype:
        if rtype not in ("ECS", "Lingjun"):
            raise invalid("ResourceType", "must be ECS or Lingjun")
        specs = [(i, s) for i, s in specs if s["ResourceType"] == rtype]
    if query.get("InstanceTypes"):
        wanted = {t.strip() for t in query["InstanceTypes"].split(",") if t.strip()}
        specs = [(i, s) for i, s in specs if s["InstanceType"] in wanted]
    sort_by = query.get("SortBy")
    order = (query.get("Order") or "desc").lower()
    if order not in ("asc", "desc"):
        raise invalid("Order", "must be asc or desc")
    if sort_by:
        if sort_by not in _SPEC_SORT:
            raise invalid("SortBy", f"must be one of {', '.join(_SPEC_SORT)}")
        field = _SPEC_SORT[sort_by]
        specs.sort(key=lambda e: (e[1][field] if field else e[0], e[0]), reverse=(order == "desc"))
    total = len(specs)
    chunk = specs[(page - 1) * size: page * size]
    return {"EcsSpecs": [dict(s) for _, s in chunk], "TotalCount": total}


# -- job templates ---------------------------------------------------------------------------------------------
def _template_content(content: Any, field: str = "Content") -> dict[str, Any]:
    if not isinstance(content, str) or not content.strip():
        raise invalid(field, "is required and must be a JSON string of CreateJob parameters")
    try:
        parsed = json.loads(content)
    except ValueError:
        raise invalid(field, "is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise invalid(field, "must be a JSON object of CreateJob parameters")
    return parsed


def _check_constraints(constraints: Any) -> dict[str, str]:
    if constraints is None:
        return {}
    if not isinstance(constraints, dict):
        raise invalid("Constraints", "must be an object of JSONPath -> locked|overridable|required")
    for path, rule in constraints.items():
        if not str(path).startswith("$") or rule not in ("locked", "overridable", "required"):
            raise invalid(f"Constraints.{path}", "must map a JSONPath ($.Field) to locked, overridable or required")
    return constraints


def _render_template(doc: dict[str, Any]) -> dict[str, Any]:
    return _clean({
        "TemplateId": doc["TemplateId"], "TemplateName": doc["TemplateName"], "WorkspaceId": doc["WorkspaceId"],
        "Description": doc.get("Description") or "", "Metadata": doc.get("Metadata") or {},
        "DefaultVersion": doc["DefaultVersion"], "UserId": "localdlc", "TenantId": "localdlc",
        "ModifiedBy": "localdlc", "GmtCreateTime": iso(doc["created"]), "GmtModifyTime": iso(doc["modified"]),
        "LastUsedTime": iso(doc.get("last_used")),
    })


def _render_version(v: dict[str, Any]) -> dict[str, Any]:
    return {"Version": v["Version"], "Content": v["Content"], "Constraints": v.get("Constraints") or {},
            "CreatedBy": "localdlc", "GmtCreateTime": iso(v["created"])}


def _get_template(ctx: Context, template_id: str) -> dict[str, Any]:
    doc = ctx.store.get_template(template_id)
    if doc is None:
        raise not_found("JobTemplateNotFound", f"The job template {template_id} does not exist.")
    return doc


def create_job_template(ctx: Context, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    for key in ("WorkspaceId", "TemplateName"):
        if not isinstance(body.get(key), str) or not body[key].strip():
            raise invalid(key, "is required")
    _template_content(body.get("Content"))
    constraints = _check_constraints(body.get("Constraints"))
    if body.get("Metadata") is not None and not isinstance(body["Metadata"], dict):
        raise invalid("Metadata", "must be an object")
    now = time.time()
    doc = {"TemplateId": "jt-" + uuid.uuid4().hex[:16], "TemplateName": body["TemplateName"],
           "WorkspaceId": body["WorkspaceId"], "Description": body.get("Description") or "",
           "Metadata": body.get("Metadata") or {}, "DefaultVersion": 1, "created": now, "modified": now,
           "versions": [{"Version": 1, "Content": body["Content"], "Constraints": constraints, "created": now}]}
    ctx.store.insert_template(doc)
    out = _render_template(doc)
    out["Version"] = 1
    return out


def get_job_template(ctx: Context, template_id: str, query: dict[str, str]) -> dict[str, Any]:
    doc = _get_template(ctx, template_id)
    wanted = (query.get("Version") or "").strip()
    if wanted.lower() == "all":
        versions = doc["versions"]
    else:
        number = doc["DefaultVersion"]
        if wanted:
            try:
                number = int(wanted)
            except ValueError:
                raise invalid("Version", "must be a version number or 'all'") from None
        versions = [v for v in doc["versions"] if v["Version"] == number]
        if not versions:
            raise not_found("JobTemplateVersionNotFound", f"Version {number} of {template_id} does not exist.")
    out = _render_template(doc)
    out["Versions"] = [_render_version(v) for v in versions]
    out["TotalCount"] = len(doc["versions"])
    return out


def list_job_templates(ctx: Context, query: dict[str, str]) -> dict[str, Any]:
    page, size = validation.paging(query, LIST_TEMPLATES_DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if not query.get("WorkspaceId"):
        raise invalid("WorkspaceId", "is required")
    docs = [d for d in ctx.store.list_templates() if d["WorkspaceId"] == query["WorkspaceId"]]
    if query.get("TemplateId"):
        docs = [d for d in docs if d["TemplateId"] == query["TemplateId"]]
    if query.get("TemplateName"):
        docs = [d for d in docs if query["TemplateName"].lower() in d["TemplateName"].lower()]
    if query.get("Description"):
        docs = [d for d in docs if query["Description"].lower() in (d.get("Description") or "").lower()]
    sort_keys = {"GmtCreateTime": "created", "GmtModifyTime": "modified", "TemplateName": "TemplateName"}
    sort_by = query.get("SortBy") or "GmtCreateTime"
    if sort_by not in sort_keys:
        raise invalid("SortBy", f"must be one of {', '.join(sort_keys)}")
    order = (query.get("Order") or "desc").lower()
    if order not in ("asc", "desc"):
        raise invalid("Order", "must be asc or desc")
    docs.sort(key=lambda d: (d[sort_keys[sort_by]], d["created"]), reverse=(order == "desc"))
    chunk = docs[(page - 1) * size: page * size]
    return {"JobTemplates": [_render_template(d) for d in chunk], "TotalCount": len(docs),
            "PageNumber": page, "PageSize": size}


def update_job_template(ctx: Context, template_id: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    _get_template(ctx, template_id)
    if body.get("Constraints") is not None and body.get("Content") is None:
        raise invalid("Constraints", "can only be changed together with Content")
    if body.get("Content") is not None:
        _template_content(body["Content"])
    constraints = _check_constraints(body.get("Constraints"))
    now = time.time()
    created: dict[str, Any] = {}

    def mutate(d: dict[str, Any]) -> None:
        if body.get("Content") is not None:
            latest = max(d["versions"], key=lambda v: v["Version"])
            number = latest["Version"] + 1
            # A new version without Constraints keeps the previous version's constraints.
            kept = constraints if body.get("Constraints") is not None else latest.get("Constraints") or {}
            d["versions"].append({"Version": number, "Content": body["Content"], "Constraints": kept,
                                  "created": now})
            created["version"] = number
            if body.get("SetAsDefault"):
                d["DefaultVersion"] = number
        for key in ("TemplateName", "Description", "Metadata"):
            if body.get(key) is not None:
                d[key] = body[key]
        d["modified"] = now

    doc = ctx.store.update_template(template_id, mutate)
    assert doc is not None
    return {"DefaultVersion": doc["DefaultVersion"], "GmtModifyTime": iso(now),
            "Version": created.get("version", doc["DefaultVersion"]), "VersionCreated": bool(created)}


def delete_job_template(ctx: Context, template_id: str) -> dict[str, Any]:
    _get_template(ctx, template_id)
    ctx.store.update_template(template_id, lambda d: d.update(deleted=True))
    return {"TemplateId": template_id}


def set_job_template_default_version(ctx: Context, template_id: str, body: Any) -> dict[str, Any]:
    doc = _get_template(ctx, template_id)
    version = body.get("Version") if isinstance(body, dict) else None
    if not validation.is_int(version):
        raise invalid("Version", "is required and must be an integer")
    if not any(v["Version"] == version for v in doc["versions"]):
        raise not_found("JobTemplateVersionNotFound", f"Version {version} of {template_id} does not exist.")
    now = time.time()

    def mutate(d: dict[str, Any]) -> None:
        d["DefaultVersion"] = version
        d["modified"] = now

    ctx.store.update_template(template_id, mutate)
    return {"DefaultVersion": version, "GmtModifyTime": iso(now)}


def _resolve(obj: Any, path: str) -> tuple[bool, Any]:
    """A tiny JSONPath subset: $.A.B[0].C."""
    current = obj
    for part in path.lstrip("$").replace("[", ".").replace("]", "").split("."):
        if not part:
            continue
        if isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return False, None
    return True, current


def _apply_template(ctx: Context, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """CreateJob with TemplateId: template content, overridden by the request, checked against Constraints."""
    doc = ctx.store.get_template(str(body["TemplateId"]))
    if doc is None:
        raise invalid("TemplateId", f"template '{body['TemplateId']}' does not exist")
    number = body.get("TemplateVersion") or doc["DefaultVersion"]
    version = next((v for v in doc["versions"] if v["Version"] == number), None)
    if version is None:
        raise invalid("TemplateVersion", f"version {number} of template {doc['TemplateId']} does not exist")
    content = json.loads(version["Content"])
    merged = {**content, **{k: v for k, v in body.items() if k not in ("TemplateId", "TemplateVersion")}}
    for path, rule in (version.get("Constraints") or {}).items():
        in_body, value = _resolve(body, path)
        in_content, original = _resolve(content, path)
        if rule == "locked" and in_body and (not in_content or value != original):
            raise invalid(path.lstrip("$."), "is locked by the job template and cannot be overridden")
        if rule == "required" and not _resolve(merged, path)[0]:
            raise invalid(path.lstrip("$."), "is required by the job template")
    merged["TemplateId"] = doc["TemplateId"]
    merged["TemplateVersion"] = number
    now = time.time()
    ctx.store.update_template(doc["TemplateId"], lambda d: d.update(last_used=now))
    return merged, doc["TemplateName"]
