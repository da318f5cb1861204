"""The inverse of build(): CreateJob body (+ hints) -> wizard data, for clone, import and edit."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobs import catalog as C
from jobs.spec.applicable import _env, _res
from jobs.spec.base import (
    _BIG,
    FIELDS,
    SECRET_PLACEHOLDER,
    _Errors,
    _num,
    _section,
    _split_minutes,
    _text,
    _too_large,
)
from jobs.spec.norm import _norm, _storage_type_from_uri, format_advanced
from jobs.spec.wire import WIRE_SCHEMA, _sanitize

# ---------------------------------------------------------------------------------------------------------
# inverse: body (+ hints) -> wizard data
# ---------------------------------------------------------------------------------------------------------


def hints_from_sections(sections: Mapping) -> dict:
    """The console-only choices the body cannot carry; store them next to the body (no secret values)."""
    n, _ = _norm(sections)
    env, res = _env(n), _res(n)
    secrets = []
    if env["image_type"] == "address" and env["registry_password"]:
        secrets.append("registry_password")
    if (res["advanced"] or {}).get("RayRedisPassword"):
        secrets.append("RayRedisPassword")
    return {
        "resource_type": res["resource_type"],
        "image_type": env["image_type"],
        "framework": res["framework"],
        "dataset_kinds": [d["kind"] for d in env["datasets"]],
        "code_upload": env["code_mode"] == "upload",
        "bid_method": res["bid_method"],
        "max_duration_unit": _text(_section(sections, "resources").get("max_duration_unit")) or "days",
        "retention_unit": _text(_section(sections, "resources").get("retention_unit")) or "hours",
        "secrets": secrets,
    }


def inverse(body: Mapping, hints: Mapping | None = None) -> dict:
    """Body back to wizard data (clone, import, edit). Console-only choices come from hints."""
    clean = _sanitize(body, WIRE_SCHEMA, "", _Errors())
    return _inverse(clean if isinstance(clean, dict) else {}, _clean_hints(hints))


def _clean_hints(hints: Any) -> dict:
    """Hints with the expected types only: they come from a DB row or an API caller."""
    if not isinstance(hints, Mapping):
        hints = {}
    out: dict[str, Any] = {k: hints[k] for k in ("resource_type", "image_type", "framework", "bid_method",
                                                 "max_duration_unit", "retention_unit")
                           if isinstance(hints.get(k), str)}
    for key in ("dataset_kinds", "secrets"):
        value = hints.get(key)
        out[key] = [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []
    out["code_upload"] = hints.get("code_upload") is True
    return out


def _hint(hints: Mapping, key: str, choices: Mapping, default: str) -> str:
    value = hints.get(key)
    return value if isinstance(value, str) and value in choices else default


def _classify_sources(body: Mapping, hints: Mapping) -> tuple[list[int], list[int], int | None]:
    """Indices of DataSources that are datasets, storage mounts and the uploaded code."""
    sources = body.get("DataSources") or []
    datasets = [i for i, s in enumerate(sources) if s.get("DataSourceId")]
    others = [i for i, s in enumerate(sources) if not s.get("DataSourceId")]
    code = others.pop() if hints.get("code_upload") and others else None
    return datasets, others, code


def _from_wire_number(text: Any, unit: str = "") -> Any:
    # "4" -> 4, "8Gi" -> 8; a number too big to parse keeps its digits (without the unit) so the rules say it is
    # too large; anything else stays as it is so the rules can report it.
    if isinstance(text, str) and text.endswith(unit):
        digits = text[: len(text) - len(unit)] if unit else text
        number, ok = _num(digits)
        if ok and number is not None:
            return number
        if _too_large(digits, whole=False):
            return digits
    return text


def _inverse(body: Mapping, hints: Mapping) -> dict:
    specs = body.get("JobSpecs") or []
    first = specs[0] if specs else {}
    settings = body.get("Settings") or {}
    sections = copy.deepcopy(FIELDS)
    basic, env, res = sections["basic"], sections["environment"], sections["resources"]
    basic.update(name=body.get("DisplayName", ""), description=body.get("Description", ""),
                 workspace_id=body.get("WorkspaceId", ""),
                 tags=[{"key": k, "value": v} for k, v in (settings.get("Tags") or {}).items()])
    _inverse_environment(body, hints, first, settings, env)
    _inverse_resources(body, hints, specs, settings, res)
    vpc = body.get("UserVpc") or {}
    if vpc:
        route = vpc.get("DefaultRoute")
        gateway = {v: k for k, v in C.GATEWAY_ROUTES.items()}.get(route, route or "")
        sections["vpc"] = {"vpc_id": vpc.get("VpcId", ""), "switch_id": vpc.get("SwitchId", ""),
                           "security_group_id": vpc.get("SecurityGroupId", ""),
                           "extended_cidrs": list(vpc.get("ExtendedCIDRs") or []), "gateway": gateway}
    sections["fault_tolerance"] = {
        "enabled": settings.get("EnableErrorMonitoringInAIMaster", False),
        "args": settings.get("ErrorMonitoringArgs", ""),
        "sanity_check": settings.get("EnableSanityCheck", False),
        "sanity_args": settings.get("SanityCheckArgs", ""),
    }
    sections["ram_role"] = _inverse_ram_role(body.get("CredentialConfig"))
    return sections


def _inverse_environment(body: Mapping, hints: Mapping, first: Mapping, settings: Mapping, env: dict) -> None:
    image_config = first.get("ImageConfig") or {}
    env["image_type"] = _hint(hints, "image_type", C.IMAGE_TYPES, "address")
    env["image"] = first.get("Image", "")
    env["registry_username"] = image_config.get("Username", "")
    password = image_config.get("Password", "")
    if not password and "registry_password" in hints["secrets"]:
        password = SECRET_PLACEHOLDER
    env["registry_password"] = password
    sources = body.get("DataSources") or []
    dataset_idx, storage_idx, code_idx = _classify_sources(body, hints)
    kinds = hints["dataset_kinds"]
    env["datasets"] = []
    for i, k in enumerate(dataset_idx):
        s = sources[k]
        access = s.get("MountAccess")
        read_only = {v: key for key, v in C.MOUNT_ACCESS.items()}.get(access, access)
        kind = kinds[i] if i < len(kinds) and kinds[i] in C.DATASET_KINDS else "custom"
        env["datasets"].append({"kind": kind, "id": s.get("DataSourceId", ""),
                                "version": s.get("DataSourceVersion", ""), "read_only": read_only,
                                "mount_path": s.get("MountPath", "")})
    env["storages"] = []
    for k in storage_idx:
        s = sources[k]
        uri = s.get("Uri", "")
        env["storages"].append({"type": _storage_type_from_uri(uri) or "oss", "uri": uri,
                                "mount_path": s.get("MountPath", ""), "options": s.get("Options", "")})
    env["command"] = body.get("UserCommand", "")
    # The placeholder marks a secret variable (its value is sealed, or was never stored): see build().
    env["envs"] = [{"key": k, "value": v, "secret": v == SECRET_PLACEHOLDER}
                   for k, v in (body.get("Envs") or {}).items()]
    libs, lib_dir = body.get("ThirdpartyLibs"), body.get("ThirdpartyLibDir", "")
    env["libs_mode"] = "list" if libs else ("requirements" if lib_dir else "none")
    env["libs"] = "\n".join(libs or [])  # one requirement per line: `torch >= 2.0` has spaces of its own
    env["requirements_dir"] = lib_dir
    code = body.get("CodeSource")
    if code is not None:
        env.update(code_mode="git", code_source_id=code.get("CodeSourceId", ""), code_branch=code.get("Branch", ""),
                   code_commit=code.get("Commit", ""), code_mount_path=code.get("MountPath", ""))
    elif code_idx is not None:
        upload = sources[code_idx]
        env.update(code_mode="upload", code_upload_uri=upload.get("Uri", ""),
                   code_mount_path=upload.get("MountPath", ""))


def _inverse_resources(body: Mapping, hints: Mapping, specs: list, settings: Mapping, res: dict) -> None:
    first = specs[0] if specs else {}
    spot = first.get("SpotSpec")
    res["resource_type"] = _hint(hints, "resource_type", C.RESOURCE_TYPES, "general")
    res["source"] = "quota" if "ResourceId" in body else ("spot" if spot is not None else "public")
    res["quota_id"] = body.get("ResourceId", "")
    res["priority"] = body.get("Priority")
    job_type = body.get("JobType", "")
    hinted = C.FRAMEWORKS.get(hints.get("framework", ""))
    res["framework"] = hinted.name if hinted and hinted.job_type == job_type else \
        C.JOB_TYPE_TO_FRAMEWORK.get(job_type, job_type)
    res["roles"] = []
    for spec in specs:
        config = spec.get("ResourceConfig") or {}
        assign = spec.get("AssignNodeSpec") or {}
        res["roles"].append({
            "role": spec.get("Type", ""), "count": spec.get("PodCount"), "instance_type": spec.get("EcsSpec", ""),
            "cpu": _from_wire_number(config.get("CPU")), "gpu": _from_wire_number(config.get("GPU")),
            "memory_gib": _from_wire_number(config.get("Memory"), "Gi"),
            "shared_memory_gib": _from_wire_number(config.get("SharedMemory"), "Gi"),
            "node_names": assign.get("NodeNames", ""),
        })
    res["node_scheduling"] = any((s.get("AssignNodeSpec") or {}).get("EnableAssignNode") for s in specs)
    oversold = settings.get("OversoldType")
    res["idle_resources"] = True if oversold == C.OVERSOLD_ACCEPT else (oversold or False)
    res["cpu_affinity"] = settings.get("EnableCPUAffinity", False)
    res["dsw"] = settings.get("EnableDSWDev", False)
    strategy = body.get("SchedulingStrategy")
    policies = {v: k for k, v in C.SCHEDULING_POLICIES.items()}
    res["scheduling_policy"] = policies.get(strategy, strategy)
    if spot is not None:
        discount, price = spot.get("SpotDiscountLimit"), spot.get("SpotPriceLimit")
        hinted_bid = _hint(hints, "bid_method", C.BID_METHODS, "")
        res["bid_method"] = "discount" if discount is not None else ("price" if price is not None else hinted_bid)
        if discount is not None:
            percent = discount * 100
            whole = round(percent) if abs(percent) < _BIG else None
            res["spot_discount"] = whole if whole is not None and whole / 100 == discount else percent
        res["spot_price"] = price
    minutes = body.get("JobMaxRunningTimeMinutes")
    res["max_duration"], res["max_duration_unit"] = (None, "days") if minutes is None else \
        _split_minutes(minutes, hints.get("max_duration_unit"))
    reserved = settings.get("JobReservedMinutes")
    res["retention"], res["retention_unit"] = (None, "hours") if reserved is None else \
        _split_minutes(reserved, hints.get("retention_unit"))
    advanced = dict(settings.get("AdvancedSettings") or {})
    if "RayRedisPassword" not in advanced and "RayRedisPassword" in hints["secrets"]:
        advanced["RayRedisPassword"] = SECRET_PLACEHOLDER
    res["advanced"] = format_advanced(advanced) if advanced else ""


def _inverse_ram_role(config: Mapping | None) -> dict:
    if not config:
        return {"mode": "none", "role_arn": ""}
    items = config.get("CredentialConfigItems") or [{}]
    roles = items[0].get("Roles") or [{}]
    arn = roles[0].get("RoleArn", "")
    if arn:
        return {"mode": "custom", "role_arn": arn}
    return {"mode": "default" if config.get("EnableCredentialInject") else "none", "role_arn": ""}
