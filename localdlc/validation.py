"""Request validation, emulating what the remote PAI-DLC service rejects.

Deliberately independent of the console's jobs/spec/: this module plays the *server*, so a console bug
that sends a bad body shows up as the server's HTTP 400 InvalidParameter (message naming the field), the
way it would against the real endpoint. Every check here runs before anything is stored, so a rejected
CreateJob leaves no job behind.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from . import catalog
from .errors import ApiError, invalid

# JobType -> role types (JobSpecs[].Type) the SDK documents for it. RayJob also allows custom "Worker-xxx".
JOB_TYPES: dict[str, tuple[str, ...]] = {
    "TFJob": ("Chief", "PS", "Worker", "Evaluator", "GraphLearn"),
    "PyTorchJob": ("Master", "Worker"),
    "XGBoostJob": ("Master", "Worker"),
    "OneFlowJob": ("Master", "Worker"),
    "ElasticBatchJob": ("Master", "Worker"),
    # MPIJob and DataJuicerJob roles are undocumented: accept the Kubeflow names and the console's guesses.
    "MPIJob": ("Launcher", "Master", "Worker"),
    "RayJob": ("Head", "Worker"),
    "SlurmJob": ("Master", "Worker"),
    "DataJuicerJob": ("Head", "Master", "Worker"),
}
STATUSES = ("Creating", "Queuing", "Bidding", "EnvPreparing", "SanityChecking", "Running", "Restarting",
            "Stopping", "SucceededReserving", "FailedReserving", "Succeeded", "Failed", "Stopped")
TERMINAL = ("Succeeded", "Failed", "Stopped")

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,256}$")
_TAG_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_ENV_KEY_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_RAY_ROLE_RE = re.compile(r"^Worker-[A-Za-z0-9][A-Za-z0-9\-]{0,62}$")
# Pods without ResourceConfig or EcsSpec get this emulated request (the real service would pick a default).
DEFAULT_POD_REQUEST = (1.0, 2.0, 0.0)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str(body: dict[str, Any], key: str, path: str, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise invalid(path, "is required")
        return None
    if not isinstance(value, str):
        raise invalid(path, "must be a string")
    if required and not value.strip():
        raise invalid(path, "is required and must not be empty")
    return value


def _str_map(value: Any, path: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise invalid(path, "must be an object of string values")
    for k, v in value.items():
        if not isinstance(v, str):
            raise invalid(f"{path}.{k}", "must be a string")
    return value


# -- resource quantities -----------------------------------------------------------------------------------
_MEM_UNITS = {"": 1.0, "ki": 1 / 1024 ** 2, "mi": 1 / 1024, "gi": 1.0, "ti": 1024.0,
              "k": 1e3 / 1024 ** 3, "m": 1e6 / 1024 ** 3, "g": 1e9 / 1024 ** 3, "t": 1e12 / 1024 ** 3}


def parse_cpu(value: Any, path: str) -> float:
    """'4', '0.5', '500m' or a number -> cores."""
    text = str(value).strip()
    try:
        cores = float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        raise invalid(path, f"'{value}' is not a CPU quantity (e.g. '4' or '500m')") from None
    if not math.isfinite(cores) or cores <= 0:
        raise invalid(path, "must be greater than 0")
    return cores


def parse_memory_gib(value: Any, path: str) -> float:
    """'2Gi', '512Mi', '4G' -> GiB. A bare number is read as GiB (documented: DLC users write '8' meaning 8Gi)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGTkmgt]i?)?\s*", str(value))
    if not match:
        raise invalid(path, f"'{value}' is not a memory quantity (e.g. '2Gi')")
    gib = float(match.group(1)) * _MEM_UNITS[(match.group(2) or "").lower()]
    if gib <= 0:
        raise invalid(path, "must be greater than 0")
    return gib


def parse_gpu(value: Any, path: str) -> float:
    try:
        gpus = float(str(value).strip() or "0")
    except ValueError:
        raise invalid(path, f"'{value}' is not a GPU count") from None
    if not math.isfinite(gpus) or gpus < 0:
        raise invalid(path, "must not be negative")
    return gpus


def pod_request(spec: dict[str, Any], path: str) -> tuple[float, float, float]:
    """(cores, GiB, GPUs) one pod of this role asks for: ResourceConfig wins, else the EcsSpec's shape."""
    rc = spec.get("ResourceConfig")
    if rc is not None:
        if not isinstance(rc, dict):
            raise invalid(f"{path}.ResourceConfig", "must be an object")
        cpu = parse_cpu(rc["CPU"], f"{path}.ResourceConfig.CPU") if rc.get("CPU") not in (None, "") \
            else DEFAULT_POD_REQUEST[0]
        mem = parse_memory_gib(rc["Memory"], f"{path}.ResourceConfig.Memory") \
            if rc.get("Memory") not in (None, "") else DEFAULT_POD_REQUEST[1]
        gpu = parse_gpu(rc.get("GPU") or 0, f"{path}.ResourceConfig.GPU")
        if rc.get("SharedMemory") not in (None, ""):
            parse_memory_gib(rc["SharedMemory"], f"{path}.ResourceConfig.SharedMemory")
        return cpu, mem, gpu
    ecs = spec.get("EcsSpec")
    if ecs:
        found = catalog.find_spec(ecs)
        if found is None:  # already rejected by validate_create_job; stay safe for stored bodies
            return DEFAULT_POD_REQUEST
        return float(found["Cpu"]), float(found["Memory"]), float(found["Gpu"])
    return DEFAULT_POD_REQUEST


def advanced_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """Settings.AdvancedSettings as a dict; the console also allows 'k=v,k=v' text or a JSON string."""
    raw = (settings or {}).get("AdvancedSettings")
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                raise invalid("Settings.AdvancedSettings", "is not valid JSON") from None
            if isinstance(parsed, dict):
                return parsed
        out: dict[str, Any] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise invalid("Settings.AdvancedSettings", f"'{part}' is not key=value")
            out[key.strip()] = value.strip()
        return out
    raise invalid("Settings.AdvancedSettings", "must be an object")


def custom_port_count(settings: dict[str, Any] | None) -> int:
    value = advanced_settings(settings).get("customPortNumPerWorker")
    if value in (None, ""):
        return 0
    try:
        count = int(str(value))
    except ValueError:
        raise invalid("Settings.AdvancedSettings.customPortNumPerWorker", "must be an integer") from None
    # The documented cap is 65536 ports per worker; localdlc hands out at most 100 real ones (see runner).
    if not 0 <= count <= 65536:
        raise invalid("Settings.AdvancedSettings.customPortNumPerWorker", "must be between 0 and 65536")
    return count


# -- CreateJob ---------------------------------------------------------------------------------------------
def validate_create_job(body: Any, workspaces: set[str] | None = None,
                        resource_ids: set[str] | None = None) -> None:
    """Raise ApiError(400, InvalidParameter, '<field>: <problem>') for the first problem found."""
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    name = _str(body, "DisplayName", "DisplayName", required=True)
    if not _NAME_RE.match(name or ""):
        raise invalid("DisplayName", "must be 1-256 characters of letters, digits, '_', '.' and '-'")
    job_type = _str(body, "JobType", "JobType", required=True)
    if job_type not in JOB_TYPES:
        raise invalid("JobType", f"'{job_type}' is not supported; use one of {', '.join(JOB_TYPES)}")
    _str(body, "UserCommand", "UserCommand", required=True)

    workspace = _str(body, "WorkspaceId", "WorkspaceId")
    if workspaces and workspace not in workspaces:
        raise ApiError(403, "Forbidden.WorkspaceId",
                       f"WorkspaceId: workspace '{workspace}' does not exist or you have no access to it.")
    resource_id = _str(body, "ResourceId", "ResourceId")
    if resource_ids and resource_id and resource_id not in resource_ids:
        raise invalid("ResourceId", f"resource quota '{resource_id}' does not exist")
    for key in ("Description", "Options", "ThirdpartyLibDir", "SchedulingStrategy", "DebuggerConfigContent"):
        _str(body, key, key)

    priority = body.get("Priority")
    if priority is not None and (not is_int(priority) or not 1 <= priority <= 9):
        raise invalid("Priority", "must be an integer from 1 to 9")
    max_minutes = body.get("JobMaxRunningTimeMinutes")
    if max_minutes is not None and (not is_int(max_minutes) or max_minutes < 0):
        raise invalid("JobMaxRunningTimeMinutes", "must be a non-negative integer number of minutes")
    accessibility = body.get("Accessibility")
    if accessibility is not None and accessibility not in ("PUBLIC", "PRIVATE"):
        raise invalid("Accessibility", "must be PUBLIC or PRIVATE")
    success_policy = body.get("SuccessPolicy")
    if success_policy is not None:
        if success_policy not in ("ChiefWorker", "AllWorkers"):
            raise invalid("SuccessPolicy", "must be ChiefWorker or AllWorkers")
        if job_type != "TFJob":
            raise invalid("SuccessPolicy", "is only supported for TFJob")

    if body.get("Envs") is not None:
        for key in _str_map(body["Envs"], "Envs"):
            if not _ENV_KEY_RE.match(key):
                raise invalid(f"Envs.{key}", "is not a valid environment variable name")
    custom_envs = body.get("CustomEnvs")
    if custom_envs is not None:
        if not isinstance(custom_envs, list):
            raise invalid("CustomEnvs", "must be a list")
        for i, item in enumerate(custom_envs):
            if not isinstance(item, dict) or not isinstance(item.get("Key"), str) \
                    or not _ENV_KEY_RE.match(item["Key"]):
                raise invalid(f"CustomEnvs[{i}].Key", "is not a valid environment variable name")
            if item.get("Value") is not None and not isinstance(item["Value"], str):
                raise invalid(f"CustomEnvs[{i}].Value", "must be a string")
    libs = body.get("ThirdpartyLibs")
    if libs is not None and (not isinstance(libs, list) or not all(isinstance(x, str) for x in libs)):
        raise invalid("ThirdpartyLibs", "must be a list of strings")
    for key in ("UserVpc", "CodeSource", "CredentialConfig", "ElasticSpec"):
        if body.get(key) is not None and not isinstance(body[key], dict):
            raise invalid(key, "must be an object")

    _validate_settings(body.get("Settings"))
    _validate_data_sources(body.get("DataSources"))
    _validate_job_specs(body.get("JobSpecs"), job_type)


def _validate_settings(settings: Any) -> None:
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise invalid("Settings", "must be an object")
    tags = settings.get("Tags")
    if tags is not None:
        for key, value in _str_map(tags, "Settings.Tags").items():
            low = key.lower()
            if not _TAG_KEY_RE.match(key) or low.startswith(("aliyun", "acs:")) or "http://" in low \
                    or "https://" in low:
                raise invalid(f"Settings.Tags.{key}",
                              "tag keys are at most 128 letters, digits, '-', '_' or '.', and must not start "
                              "with 'aliyun' or 'acs:'")
            if len(value) > 256 or "http://" in value or "https://" in value:
                raise invalid(f"Settings.Tags.{key}", "tag values are at most 256 characters without URLs")
    for key in ("JobReservedMinutes", "TerminationGracePeriodSeconds"):
        if settings.get(key) is not None and (not is_int(settings[key]) or settings[key] < 0):
            raise invalid(f"Settings.{key}", "must be a non-negative integer")
    custom_port_count(settings)


def _validate_data_sources(sources: Any) -> None:
    if sources is None:
        return
    if not isinstance(sources, list):
        raise invalid("DataSources", "must be a list")
    for i, ds in enumerate(sources):
        path = f"DataSources[{i}]"
        if not isinstance(ds, dict):
            raise invalid(path, "must be an object")
        for key in ("DataSourceId", "Uri", "MountPath", "MountAccess", "Options", "DataSourceVersion"):
            _str(ds, key, f"{path}.{key}")
        if not ds.get("DataSourceId") and not ds.get("Uri"):
            raise invalid(path, "needs a DataSourceId or a Uri")
        mount = ds.get("MountPath")
        if mount and (not mount.startswith("/") or ".." in mount.split("/")):
            raise invalid(f"{path}.MountPath", "must be an absolute path without '..'")
        if ds.get("MountAccess") not in (None, "RO", "RW"):
            raise invalid(f"{path}.MountAccess", "must be RO or RW")


def _validate_job_specs(specs: Any, job_type: str) -> None:
    if specs is None:
        raise invalid("JobSpecs", "is required")
    if not isinstance(specs, list) or not specs:
        raise invalid("JobSpecs", "must be a non-empty list")
    seen: set[str] = set()
    chiefs = 0
    allowed = JOB_TYPES[job_type]
    for i, spec in enumerate(specs):
        path = f"JobSpecs[{i}]"
        if not isinstance(spec, dict):
            raise invalid(path, "must be an object")
        role = spec.get("Type")
        if not isinstance(role, str) or not role:
            raise invalid(f"{path}.Type", "is required")
        if role not in allowed and not (job_type == "RayJob" and _RAY_ROLE_RE.match(role)):
            raise invalid(f"{path}.Type", f"'{role}' is not a valid role for {job_type}; "
                                          f"use one of {', '.join(allowed)}")
        if role in seen:
            raise invalid(f"{path}.Type", f"role '{role}' appears more than once")
        seen.add(role)
        count = spec.get("PodCount")
        if count is None:
            raise invalid(f"{path}.PodCount", "is required")
        if not is_int(count) or count < 1:
            raise invalid(f"{path}.PodCount", "must be an integer of at least 1")
        if count > 1 and (role in ("Master", "Chief", "Head", "Launcher")):
            raise invalid(f"{path}.PodCount", f"a {role} role must have exactly 1 pod")
        for key in ("Image", "EcsSpec", "UserCommand", "RestartPolicy"):
            _str(spec, key, f"{path}.{key}")
        if spec.get("RestartPolicy") not in (None, "Always", "Never", "OnFailure", "ExitCode"):
            raise invalid(f"{path}.RestartPolicy", "must be Always, Never, OnFailure or ExitCode")
        if spec.get("IsChief") or spec.get("IsCheif"):
            chiefs += 1
        ecs = spec.get("EcsSpec")
        if ecs:
            found = catalog.find_spec(ecs)
            if found is None:
                raise invalid(f"{path}.EcsSpec", f"instance type '{ecs}' is not supported")
            if not found["IsAvailable"]:
                raise invalid(f"{path}.EcsSpec", f"instance type '{ecs}' is currently not available")
        pod_request(spec, path)
        spot = spec.get("SpotSpec")
        if spot is not None:
            if not isinstance(spot, dict):
                raise invalid(f"{path}.SpotSpec", "must be an object")
            disc, price = spot.get("SpotDiscountLimit"), spot.get("SpotPriceLimit")
            if disc is not None and price is not None:
                raise invalid(f"{path}.SpotSpec",
                              "SpotDiscountLimit and SpotPriceLimit cannot both be set")
            if disc is not None and (not isinstance(disc, int | float) or isinstance(disc, bool)
                                     or not 0 < disc <= 1):
                raise invalid(f"{path}.SpotSpec.SpotDiscountLimit", "must be a number in (0, 1]")
            if price is not None and (not isinstance(price, int | float) or isinstance(price, bool)
                                      or price <= 0):
                raise invalid(f"{path}.SpotSpec.SpotPriceLimit", "must be a positive number")
            if spot.get("SpotStrategy") not in (None, "SpotWithPriceLimit", "SpotAsPriceGo"):
                raise invalid(f"{path}.SpotSpec.SpotStrategy", "must be SpotWithPriceLimit or SpotAsPriceGo")
    if chiefs > 1:
        raise invalid("JobSpecs", "only one role may set IsChief")
    if job_type == "RayJob" and "Head" not in seen:
        raise invalid("JobSpecs", "a RayJob needs a Head role")


def validate_update_job(body: Any) -> None:
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    priority = body.get("Priority")
    if priority is not None and (not is_int(priority) or not 1 <= priority <= 9):
        raise invalid("Priority", "must be an integer from 1 to 9")
    if body.get("Accessibility") not in (None, "PUBLIC"):
        raise invalid("Accessibility", "can only be changed to PUBLIC")
    for key in ("Description", "UserCommand"):
        _str(body, key, key)
    if body.get("JobSpecs") is not None and not isinstance(body["JobSpecs"], list):
        raise invalid("JobSpecs", "must be a list")


def paging(query: dict[str, str], default_size: int, max_size: int) -> tuple[int, int]:
    """PageNumber (>= 1, default 1) and PageSize (1..max_size) or a 400 naming the parameter."""
    def num(key: str, default: int) -> int:
        raw = query.get(key)
        if raw in (None, ""):
            return default
        try:
            return int(raw)
        except ValueError:
            raise invalid(key, "must be an integer") from None
    page = num("PageNumber", 1)
    size = num("PageSize", default_size)
    if page < 1:
        raise invalid("PageNumber", "must be at least 1")
    if not 1 <= size <= max_size:
        raise invalid("PageSize", f"must be between 1 and {max_size}")
    return page, size
