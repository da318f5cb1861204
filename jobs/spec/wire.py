"""The wire side: build() (wizard data -> CreateJob body), strip_secrets(), and WIRE_SCHEMA with _sanitize()
(what the console sends; anything else is unsupported)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobs import catalog as C
from jobs.spec.applicable import _applies, _env, _res
from jobs.spec.base import (
    SECRET_PLACEHOLDER,
    SECTIONS,
    _Errors,
    _fmt_num,
    _secret,
    looks_like_secret,
)
from jobs.spec.norm import _norm

# ---------------------------------------------------------------------------------------------------------
# build: wizard data -> CreateJob body
# ---------------------------------------------------------------------------------------------------------


def build(sections: Mapping, *, workspace_id: str | None = None, include_secrets: bool = False) -> dict:
    """The exact CreateJob JSON body. Secrets are left out unless include_secrets=True.

    Expects valid data (see validate_sections); on invalid data it still returns a best-effort body.
    Raises ValueError if include_secrets=True and a secret is still SECRET_PLACEHOLDER.
    """
    n, _ = _norm(sections)
    return _build(n, workspace_id, "include" if include_secrets else "omit")


def _secret_value(value: str, secrets: str) -> str | None:
    if not value or secrets == "omit":
        return None
    if value == SECRET_PLACEHOLDER:
        if secrets == "include":
            raise ValueError("A secret is still the placeholder; put the stored secret in before submitting.")
        return None
    return value


def _env_value(secret: bool, value: str, secrets: str) -> str:
    # A secret variable keeps its name in every body, with the placeholder for its value until the submit.
    if not secret or secrets == "real":
        return value
    if secrets == "omit":
        return SECRET_PLACEHOLDER
    return _secret_value(value, secrets) or ""


def _put(target: dict, key: str, value: Any) -> None:
    if value not in (None, "", [], {}):
        target[key] = value


def _build(n: dict, workspace_id: str | None, secrets: str) -> dict:
    """secrets: "omit" (stored body), "include" (submit) or "real" (include, skip placeholders)."""
    basic, env, res, vpc, ft, ram = (n[s] for s in SECTIONS)
    body: dict[str, Any] = {}
    _put(body, "WorkspaceId", workspace_id or basic["workspace_id"])
    _put(body, "DisplayName", basic["name"])
    _put(body, "Description", basic["description"])
    fw = C.FRAMEWORKS.get(res["framework"])
    _put(body, "JobType", fw.job_type if fw else res["framework"])
    body["JobSpecs"] = [_build_role(n, role, secrets) for role in res["roles"]]
    _put(body, "UserCommand", env["command"])
    _put(body, "DataSources", _build_data_sources(n))
    _put(body, "Envs", {key: _env_value(i in env["secret_envs"], value, secrets) for i, key, value in env["envs"]})
    if _applies(n, "environment.libs"):
        _put(body, "ThirdpartyLibs", list(env["libs"]))
    if _applies(n, "environment.requirements_dir"):
        _put(body, "ThirdpartyLibDir", _requirements_folder(env["requirements_dir"]))
    if env["code_mode"] == "git":
        code: dict[str, Any] = {}
        for key, wire in (("code_source_id", "CodeSourceId"), ("code_branch", "Branch"),
                          ("code_commit", "Commit"), ("code_mount_path", "MountPath")):
            _put(code, wire, env[key])
        _put(body, "CodeSource", code)
    if res["source"] == "quota":
        _put(body, "ResourceId", res["quota_id"])
        _put(body, "Priority", res["priority"])
    _put(body, "SchedulingStrategy", C.SCHEDULING_POLICIES.get(res["scheduling_policy"]))
    _put(body, "JobMaxRunningTimeMinutes", res["max_duration"])
    _put(body, "Settings", _build_settings(n, secrets))
    if vpc["vpc_id"]:
        user_vpc = {"VpcId": vpc["vpc_id"]}
        _put(user_vpc, "SwitchId", vpc["switch_id"])
        _put(user_vpc, "SecurityGroupId", vpc["security_group_id"])
        _put(user_vpc, "ExtendedCIDRs", list(vpc["extended_cidrs"]))
        _put(user_vpc, "DefaultRoute", C.GATEWAY_ROUTES.get(vpc["gateway"]))
        body["UserVpc"] = user_vpc
    if ram["mode"] == "default":
        body["CredentialConfig"] = {"EnableCredentialInject": True}
    elif ram["mode"] == "custom":
        body["CredentialConfig"] = {
            "EnableCredentialInject": True,
            "AliyunEnvRoleKey": C.CREDENTIAL_ROLE_KEY,
            "CredentialConfigItems": [{
                "Key": C.CREDENTIAL_ROLE_KEY,
                "Type": C.CREDENTIAL_ITEM_TYPE,
                "Roles": [{"RoleType": C.CREDENTIAL_ROLE_TYPE, "RoleArn": ram["role_arn"]}],
            }],
        }
    return body


def _build_role(n: dict, role: dict, secrets: str) -> dict:
    env, res = _env(n), _res(n)
    spec: dict[str, Any] = {}
    _put(spec, "Type", role["role"])
    _put(spec, "Image", env["image"])
    if env["image_type"] == "address":
        image_config: dict[str, str] = {}
        _put(image_config, "Username", env["registry_username"])
        _put(image_config, "Password", _secret_value(env["registry_password"], secrets))
        _put(spec, "ImageConfig", image_config)
    _put(spec, "PodCount", role["count"])
    if res["source"] == "quota":
        config: dict[str, str] = {}
        for key, wire, unit in (("cpu", "CPU", ""), ("gpu", "GPU", ""), ("memory_gib", "Memory", "Gi"),
                                ("shared_memory_gib", "SharedMemory", "Gi")):
            if role[key] is not None:
                config[wire] = _fmt_num(role[key]) + unit
        _put(spec, "ResourceConfig", config)
        if res["node_scheduling"]:
            assign: dict[str, Any] = {"EnableAssignNode": True}
            _put(assign, "NodeNames", ",".join(role["node_names"]))
            spec["AssignNodeSpec"] = assign
    else:
        _put(spec, "EcsSpec", role["instance_type"])
    if res["source"] == "spot":
        spot: dict[str, Any] = {"SpotStrategy": C.SPOT_STRATEGY}
        if res["bid_method"] == "discount" and res["spot_discount"] is not None:
            spot["SpotDiscountLimit"] = res["spot_discount"] / 100
        if res["bid_method"] == "price" and res["spot_price"] is not None:
            spot["SpotPriceLimit"] = float(res["spot_price"])
        spec["SpotSpec"] = spot
    return spec


def _build_data_sources(n: dict) -> list[dict]:
    env = _env(n)
    sources = []
    for d in env["datasets"]:  # one entry per row, even an invalid one, so indices line up with the rows
        entry: dict[str, Any] = {}
        _put(entry, "DataSourceId", d["id"])
        _put(entry, "DataSourceVersion", d["version"])
        if d["read_only"] is not None:
            entry["MountAccess"] = C.MOUNT_ACCESS[d["read_only"]]
        _put(entry, "MountPath", d["mount_path"])
        sources.append(entry)
    for s in env["storages"]:
        entry = {}
        _put(entry, "Uri", s["uri"])
        _put(entry, "MountPath", s["mount_path"])
        _put(entry, "Options", s["options"])
        sources.append(entry)
    if env["code_mode"] == "upload":
        entry = {}
        _put(entry, "Uri", env["code_upload_uri"])
        _put(entry, "MountPath", env["code_mount_path"])
        sources.append(entry)
    return sources


def _requirements_folder(path: str) -> str:
    # The console asks for the requirements.txt file [004]; the API wants its folder [SDK].
    if path.endswith("/requirements.txt"):
        return path[: -len("requirements.txt")].rstrip("/") or "/"
    return path


def _build_settings(n: dict, secrets: str) -> dict:
    basic, res, ft = n["basic"], _res(n), n["fault_tolerance"]
    settings: dict[str, Any] = {}
    _put(settings, "Tags", {key: value for _i, key, value in basic["tags"]})
    quota = res["source"] == "quota"
    if quota and res["idle_resources"]:
        settings["OversoldType"] = C.OVERSOLD_ACCEPT
    if quota and res["cpu_affinity"]:
        settings["EnableCPUAffinity"] = True
    if quota and res["dsw"]:
        settings["EnableDSWDev"] = True
    if res["retention"] is not None:
        settings["JobReservedMinutes"] = res["retention"]
        settings["JobReservedPolicy"] = C.JOB_RESERVED_POLICY
    advanced = dict(res["advanced"] or {})
    if "RayRedisPassword" in advanced:
        password = _secret_value(_secret(advanced["RayRedisPassword"]), secrets)
        if password is None:
            del advanced["RayRedisPassword"]
    _put(settings, "AdvancedSettings", advanced)
    if ft["enabled"]:
        settings["EnableErrorMonitoringInAIMaster"] = True
        _put(settings, "ErrorMonitoringArgs", ft["args"])
    if ft["sanity_check"]:
        settings["EnableSanityCheck"] = True
        _put(settings, "SanityCheckArgs", ft["sanity_args"])
    return settings


def strip_secrets(body: Mapping) -> dict:
    """A deep copy of the body without the SECRET_PATHS values, and with SECRET_PLACEHOLDER for the value of every
    environment variable whose name looks like a secret's (a job imported from DLC, or one whose owner did not tick
    Secret) and of every other advanced setting named like one, so no view of a body shows one."""
    out = copy.deepcopy(dict(body)) if isinstance(body, Mapping) else {}
    envs = out.get("Envs")
    if isinstance(envs, dict):
        out["Envs"] = {k: SECRET_PLACEHOLDER if looks_like_secret(k) and v not in (None, "") else v
                       for k, v in envs.items()}
    for spec in out.get("JobSpecs") or []:
        if isinstance(spec, dict) and isinstance(spec.get("ImageConfig"), dict):
            spec["ImageConfig"].pop("Password", None)
            if not spec["ImageConfig"]:
                del spec["ImageConfig"]
    settings = out.get("Settings")
    if isinstance(settings, dict) and isinstance(settings.get("AdvancedSettings"), dict):
        advanced = settings["AdvancedSettings"]
        advanced.pop("RayRedisPassword", None)
        # No console job holds another secret-named key (the wizard refuses them); a job imported from DLC may
        # (e.g. WandbApiKey), and nothing seals it: the placeholder, as for an env value named like a secret.
        for key, value in advanced.items():
            if looks_like_secret(key) and value not in (None, ""):
                advanced[key] = SECRET_PLACEHOLDER
        if not settings["AdvancedSettings"]:
            del settings["AdvancedSettings"]
        if not settings:
            del out["Settings"]
    return out


# ---------------------------------------------------------------------------------------------------------
# Wire schema: what the console sends. Anything else in a body is reported as unsupported.
# ---------------------------------------------------------------------------------------------------------

_S, _I, _B, _N, _ANY = "str", "int", "bool", "num", "any"

WIRE_SCHEMA: dict[str, Any] = {
    "WorkspaceId": _S, "DisplayName": _S, "Description": _S, "JobType": _S, "UserCommand": _S,
    "ResourceId": _S, "Priority": _I, "SchedulingStrategy": _S, "JobMaxRunningTimeMinutes": _I,
    "ThirdpartyLibDir": _S, "ThirdpartyLibs": [_S], "Envs": {"*": _S},
    "JobSpecs": [{
        "Type": _S, "Image": _S, "PodCount": _I, "EcsSpec": _S,
        "ImageConfig": {"Username": _S, "Password": _S},
        "ResourceConfig": {"CPU": _S, "GPU": _S, "Memory": _S, "SharedMemory": _S},
        "SpotSpec": {"SpotStrategy": _S, "SpotDiscountLimit": _N, "SpotPriceLimit": _N},
        "AssignNodeSpec": {"EnableAssignNode": _B, "NodeNames": _S},
    }],
    "DataSources": [{"DataSourceId": _S, "DataSourceVersion": _S, "MountAccess": _S, "MountPath": _S,
                     "Uri": _S, "Options": _S}],
    "CodeSource": {"CodeSourceId": _S, "Branch": _S, "Commit": _S, "MountPath": _S},
    "Settings": {
        "Tags": {"*": _S}, "OversoldType": _S, "EnableCPUAffinity": _B, "EnableDSWDev": _B,
        "JobReservedMinutes": _I, "JobReservedPolicy": _S, "AdvancedSettings": {"*": _ANY},
        "EnableErrorMonitoringInAIMaster": _B, "ErrorMonitoringArgs": _S, "EnableSanityCheck": _B,
        "SanityCheckArgs": _S,
    },
    "UserVpc": {"VpcId": _S, "SwitchId": _S, "SecurityGroupId": _S, "ExtendedCIDRs": [_S], "DefaultRoute": _S},
    "CredentialConfig": {
        "EnableCredentialInject": _B, "AliyunEnvRoleKey": _S,
        "CredentialConfigItems": [{"Key": _S, "Type": _S, "Roles": [{"RoleType": _S, "RoleArn": _S}]}],
    },
}
_DROP = object()
_TYPE_MESSAGES = {_S: "Must be a string.", _I: "Must be a whole number.", _B: "Must be true or false.",
                  _N: "Must be a number."}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


# Objects whose presence alone says something, kept even when empty: a SpotSpec makes its role a spot role, so
# `"SpotSpec": {}` is a spot role without a bid (refused, as the wizard refuses spot without a bid method), never
# quietly a pay-as-you-go job.
_MEANS_SOMETHING_EMPTY = frozenset({"SpotSpec"})


def _empty_means_unset(key: str, value: Any) -> bool:
    return _is_empty(value) and not (key in _MEANS_SOMETHING_EMPTY and isinstance(value, Mapping))


def sendable(body: Mapping) -> dict:
    """The body as validate() checks it, which is the body to store and send: null, "", [] and {} (outside the
    Envs and Tags maps) mean "not set" and are left out, so DLC never gets an empty structure nobody checked."""
    clean = _sanitize(body, WIRE_SCHEMA, "", _Errors())
    return clean if isinstance(clean, dict) else {}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == _S:
        return isinstance(value, str)
    if kind == _B:
        return isinstance(value, bool)
    if kind == _I:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _N:
        return isinstance(value, int | float) and not isinstance(value, bool) and value == value \
            and abs(value) != float("inf")
    return True


def _sanitize(value: Any, schema: Any, path: str, e: _Errors) -> Any:
    """The part of value that fits the schema; every misfit is reported at its path."""
    if isinstance(schema, dict):
        if not isinstance(value, Mapping):
            e.add(path, "Must be an object.")
            return _DROP
        out = {}
        for key, sub in value.items():
            if not isinstance(key, str):
                e.add(path, "Object keys must be strings.")
                continue
            key_path = _join(path, key)
            sub_schema = schema.get("*", schema.get(key, _DROP))
            if "*" not in schema and _empty_means_unset(key, sub):
                continue  # null, "", [] and {} mean "not set"; map entries (Envs, Tags) keep empty values
            if sub_schema is _DROP:
                e.add(key_path, "Not supported by this console (unknown field or not sent by the wizard).")
                continue
            clean = _sanitize(sub, sub_schema, key_path, e)
            if clean is not _DROP and ("*" in schema or not _empty_means_unset(key, clean)):
                out[key] = clean
        return out
    if isinstance(schema, list):
        if not isinstance(value, list):
            e.add(path, "Must be a list.")
            return _DROP
        items = []
        for i, item in enumerate(value):
            clean = _sanitize(item, schema[0], f"{path}[{i}]", e)
            if clean is not _DROP:
                items.append(clean)
            elif isinstance(schema[0], dict):
                items.append({})  # keep the indices of the remaining entries
        return items
    if not _type_ok(value, schema):
        e.add(path, _TYPE_MESSAGES[schema])
        return _DROP
    return value
