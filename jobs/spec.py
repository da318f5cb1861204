"""The PAI-DLC CreateJob request body (POST /api/v1/jobs) as the console models it. Pure Python, no Django.

Wizard data ("sections") is a plain dict of six sections; each is a dict of console fields:

=================  =====================  ==================================================================
section            field                  value (default) -> wire key of the CreateJob body
=================  =====================  ==================================================================
basic              name                   str -> DisplayName
basic              tags                   [{key, value}] -> Settings.Tags (map)
basic              description            str -> Description
basic              workspace_id           str, hidden; build(workspace_id=...) wins -> WorkspaceId
environment        image_type             "official"|"custom"|"address" ("official"); console only (hints)
environment        image                  str -> JobSpecs[*].Image (same image on every role)
environment        registry_username      str, image address only -> JobSpecs[*].ImageConfig.Username
environment        registry_password      str, SECRET -> JobSpecs[*].ImageConfig.Password (include_secrets)
environment        datasets               [{kind "custom"|"public", id, version, read_only bool|None,
                                           mount_path}] -> DataSources[] {DataSourceId, DataSourceVersion,
                                           MountAccess RO/RW (None: not sent), MountPath}
environment        storages               [{type "oss"|"nas"|"extreme_nas"|"cpfs"|"bmcpfs", uri, mount_path,
                                           options (JSON text)}] -> DataSources[] {Uri, MountPath, Options},
                                           after the datasets
environment        command                str -> UserCommand
environment        envs                   [{key, value}] -> Envs (map)
environment        libs_mode              "none"|"list"|"requirements" ("none")
environment        libs                   str, names separated by spaces -> ThirdpartyLibs (list)
environment        requirements_dir       str, requirements.txt path or its folder -> ThirdpartyLibDir (folder)
environment        code_mode              "none"|"git"|"upload" ("none")
environment        code_source_id         str -> CodeSource.CodeSourceId
environment        code_branch            str -> CodeSource.Branch
environment        code_commit            str -> CodeSource.Commit
environment        code_mount_path        str -> CodeSource.MountPath (git) / last DataSources[].MountPath
environment        code_upload_uri        str oss://..., set by the uploader -> last DataSources[].Uri (upload)
resources          resource_type          "general"|"lingjun" ("general"); console only (hints)
resources          source                 "public"|"quota"|"spot" ("public"): quota -> ResourceId,
                                           public/spot -> JobSpecs[].EcsSpec, spot -> JobSpecs[].SpotSpec
resources          quota_id               str -> ResourceId
resources          priority               int 1..9 or None (quota only) -> Priority
resources          framework              console name (catalog.FRAMEWORKS) ("PyTorch") -> JobType
resources          roles                  [{role, count, instance_type, cpu, gpu, memory_gib,
                                           shared_memory_gib, node_names}] -> JobSpecs[] {Type, PodCount,
                                           EcsSpec, ResourceConfig {CPU "4", GPU "1", Memory "8Gi",
                                           SharedMemory "4Gi"}, AssignNodeSpec.NodeNames "a,b"}
resources          node_scheduling        bool -> JobSpecs[].AssignNodeSpec.EnableAssignNode
resources          idle_resources         bool -> Settings.OversoldType "AcceptQuotaOverSold"
resources          cpu_affinity           bool -> Settings.EnableCPUAffinity
resources          scheduling_policy      "intelligent"|"centralized"|"spread" -> SchedulingStrategy
resources          bid_method             ""|"discount"|"price" (spot only)
resources          spot_discount          int percent 10..90 -> JobSpecs[].SpotSpec.SpotDiscountLimit 0.1..0.9
resources          spot_price             float > 0 -> JobSpecs[].SpotSpec.SpotPriceLimit
resources          max_duration           int (30) + max_duration_unit "minutes"|"hours"|"days" ("days")
                                           -> JobMaxRunningTimeMinutes
resources          retention              int or None + retention_unit ("hours")
                                           -> Settings.JobReservedMinutes + JobReservedPolicy "Always"
resources          dsw                    bool -> Settings.EnableDSWDev
resources          advanced               text, "k=v,k=v" or JSON -> Settings.AdvancedSettings (map)
vpc                vpc_id                 str -> UserVpc.VpcId
vpc                switch_id              str -> UserVpc.SwitchId
vpc                security_group_id      str -> UserVpc.SecurityGroupId
vpc                extended_cidrs         [str] (or text) -> UserVpc.ExtendedCIDRs
vpc                gateway                "public"|"private"|"" ("public") -> UserVpc.DefaultRoute eth0/eth1
fault_tolerance    enabled                bool -> Settings.EnableErrorMonitoringInAIMaster
fault_tolerance    args                   str -> Settings.ErrorMonitoringArgs
fault_tolerance    sanity_check           bool -> Settings.EnableSanityCheck
fault_tolerance    sanity_args            str -> Settings.SanityCheckArgs
ram_role           mode                   "none"|"default"|"custom" ("none") -> CredentialConfig
ram_role           role_arn               str acs:ram::<uid>:role/<name> -> CredentialConfig...Roles[0].RoleArn
=================  =====================  ==================================================================

A field the current choices hide (e.g. priority without a quota) must be empty: validate_sections()
reports it, and prune_inapplicable() clears such fields for forms that keep hidden values.

Public API: build, validate_sections, validate, notes, inverse, hints_from_sections, defaults,
prune_inapplicable, hidden_fields, infer_hints, strip_secrets, extract_secrets, fill_secrets, wire_path,
field_for_path, parse_advanced, format_advanced, Context, Policy, SECRET_PATHS, SECRET_PLACEHOLDER,
WIRE_SCHEMA, APPLICABLE.
Error and note dicts map a path to messages; "" is the whole job. Decisions: docs/spec-notes.md.
"""

from __future__ import annotations

import copy
import dataclasses
import ipaddress
import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobs import catalog as C

SECTIONS = ("basic", "environment", "resources", "vpc", "fault_tolerance", "ram_role")

# Default value of every field; also the list of known fields.
FIELDS: dict[str, dict[str, Any]] = {
    "basic": {"name": "", "tags": [], "description": "", "workspace_id": ""},
    "environment": {
        "image_type": "official", "image": "", "registry_username": "", "registry_password": "",
        "datasets": [], "storages": [], "command": "", "envs": [], "libs_mode": "none", "libs": "",
        "requirements_dir": "", "code_mode": "none", "code_source_id": "", "code_branch": "",
        "code_commit": "", "code_mount_path": "", "code_upload_uri": "",
    },
    "resources": {
        "resource_type": "general", "source": "public", "quota_id": "", "priority": None,
        "framework": "PyTorch", "roles": [], "node_scheduling": False, "idle_resources": False,
        "cpu_affinity": False, "scheduling_policy": "intelligent", "bid_method": "", "spot_discount": None,
        "spot_price": None, "max_duration": 30, "max_duration_unit": "days", "retention": None,
        "retention_unit": "hours", "dsw": False, "advanced": "",
    },
    "vpc": {"vpc_id": "", "switch_id": "", "security_group_id": "", "extended_cidrs": [], "gateway": "public"},
    "fault_tolerance": {"enabled": False, "args": "", "sanity_check": False, "sanity_args": ""},
    "ram_role": {"mode": "none", "role_arn": ""},
}
ROW_FIELDS: dict[str, dict[str, Any]] = {
    "tags": {"key": "", "value": ""},
    "envs": {"key": "", "value": ""},
    "datasets": {"kind": "custom", "id": "", "version": "", "read_only": None, "mount_path": ""},
    "storages": {"type": "oss", "uri": "", "mount_path": "", "options": ""},
    "roles": {"role": "Worker", "count": 1, "instance_type": "", "cpu": None, "gpu": None, "memory_gib": None,
              "shared_memory_gib": None, "node_names": ""},
}

# Stands for a secret kept outside the body (inverse() puts it back when the hints say a secret exists).
SECRET_PLACEHOLDER = "********"
# Wire paths of secrets: build() leaves them out unless include_secrets=True; strip_secrets() removes them.
SECRET_PATHS = ("JobSpecs[*].ImageConfig.Password", "Settings.AdvancedSettings.RayRedisPassword")


# ---------------------------------------------------------------------------------------------------------
# Context and guardrail policy
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """Workspace guardrails. The default has no limits."""

    allowed_sources: frozenset[str] | None = None  # subset of catalog.SOURCES
    max_nodes: int | None = None  # total PodCount over all roles
    max_gpus: int | None = None  # total GPUs of the job
    max_duration_minutes: int | None = None  # cap on JobMaxRunningTimeMinutes; also makes it required
    allowed_image_prefixes: tuple[str, ...] | None = None
    required_tag_keys: tuple[str, ...] = ()
    default_tags: Mapping[str, str] = field(default_factory=dict)  # prefilled by defaults()


@dataclass(frozen=True)
class Context:
    """What a rule needs beyond the wizard data or the body."""

    region: str = "cn-hangzhou"
    # ListEcsSpecs catalog: {instance_type: {cpu, gpu, memory, resource_type "ECS"|"Lingjun"}} (PascalCase
    # keys of EcsSpec.to_map() work too). None = unknown: public-resource limits become a note.
    specs: Mapping[str, Mapping[str, Any]] | None = None
    # {quota_id: {"resource_type": "general"|"lingjun", "general_computing_2_0": bool}}
    quotas: Mapping[str, Mapping[str, Any]] | None = None
    # {dataset_id: {"type": "CPFS"|..., "uri": ...}} from ListDatasets, for the CPFS-needs-VPC rule.
    datasets: Mapping[str, Mapping[str, Any]] | None = None
    hints: Mapping[str, Any] | None = None  # used by validate(body): see hints_from_sections()
    policy: Policy | None = None  # None = no guardrails
    reserved_tags: int = 0  # tag slots the console uses itself (e.g. the idempotency tag)


# ---------------------------------------------------------------------------------------------------------
# Value parsing: forms send strings, inverse() sends wire values, garbage must never raise.
# ---------------------------------------------------------------------------------------------------------


class _Errors:
    def __init__(self) -> None:
        self.d: dict[str, list[str]] = {}

    def add(self, path: str, message: str) -> None:
        messages = self.d.setdefault(path, [])
        if message not in messages:
            messages.append(message)

    def has(self, path: str) -> bool:
        return path in self.d


def _section(data: Any, name: str) -> Mapping:
    value = data.get(name) if isinstance(data, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else str(value)).strip()


def _secret(value: Any) -> str:
    # Passwords keep their spaces.
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


_BIG = 10**15  # larger numbers are typos or garbage; refusing them keeps arithmetic safe
_NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _int(value: Any) -> tuple[int | None, bool]:
    """(whole number or None when empty, ok)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, True
    if isinstance(value, bool):
        return None, False
    if isinstance(value, int):
        return (value, True) if abs(value) < _BIG else (None, False)
    if isinstance(value, float):
        return (int(value), True) if value.is_integer() and abs(value) < _BIG else (None, False)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,18}", value.strip()):
        return int(value.strip()), True
    return None, False


def _num(value: Any) -> tuple[int | float | None, bool]:
    """(finite number or None when empty, ok); integral values come back as int."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, True
    if isinstance(value, bool):
        return None, False
    if isinstance(value, int):
        return (value, True) if abs(value) < _BIG else (None, False)
    if isinstance(value, str) and _NUMBER_RE.fullmatch(value.strip()):
        value = float(value.strip())
    if isinstance(value, float) and value == value and abs(value) < _BIG:
        return (int(value) if value.is_integer() else value), True
    return None, False


def _bool(value: Any) -> tuple[bool | None, bool]:
    """(True/False or None when empty, ok)."""
    if value is None or value == "":
        return None, True
    if isinstance(value, bool):
        return value, True
    if isinstance(value, int) and value in (0, 1):
        return bool(value), True
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "on", "1", "yes", "ro"):
            return True, True
        if word in ("false", "off", "0", "no", "rw"):
            return False, True
    return None, False


def _fmt_num(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def _rows(value: Any, path: str, e: _Errors) -> list[Mapping]:
    if value is None or value == "":
        return []
    if isinstance(value, Mapping) and path.endswith(("tags", "envs")):
        return [{"key": k, "value": v} for k, v in value.items()]  # a plain map is fine for key/value lists
    if not isinstance(value, list):
        e.add(path, "Expected a list of rows.")
        return []
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, Mapping):
            e.add(f"{path}[{i}]", "Expected an object with the row's fields.")
            row = {}
        rows.append(row)
    return rows


def _choice(section: Mapping, key: str, choices: Mapping | tuple, path: str, e: _Errors, default: str) -> str:
    value = section.get(key)
    if value is None or value == "":
        return default
    text = _text(value)
    if text not in choices:
        e.add(path, f"Choose one of: {', '.join(choices)}.")
        return default
    return text


def _flag(section: Mapping, key: str, path: str, e: _Errors) -> bool:
    value, ok = _bool(section.get(key))
    if not ok:
        e.add(path, "Must be on or off.")
    return bool(value)


def _number(section: Mapping, key: str, path: str, e: _Errors, message: str, whole: bool = False):
    value, ok = (_int if whole else _num)(section.get(key))
    if not ok:
        e.add(path, message)
    return value


def _names(value: Any) -> list[str]:
    # Lists of names may come as a list or as text separated by commas or whitespace.
    if isinstance(value, list | tuple):
        return [t for t in (_text(v) for v in value) if t]
    return [t for t in re.split(r"[\s,]+", _text(value)) if t]


# ---------------------------------------------------------------------------------------------------------
# Normalised view: every field parsed once, typed; field-level parse errors collected on the way.
# ---------------------------------------------------------------------------------------------------------


def _norm(sections: Any) -> tuple[dict, _Errors]:
    e = _Errors()
    if sections is not None and not isinstance(sections, Mapping):
        e.add("", "The wizard data must be an object with the six sections.")
    for name in SECTIONS:
        if isinstance(sections, Mapping) and sections.get(name) is not None \
                and not isinstance(sections.get(name), Mapping):
            e.add(name, "Expected an object with the section's fields.")
    n: dict[str, dict] = {}
    n["basic"] = _norm_basic(_section(sections, "basic"), e)
    n["environment"] = _norm_environment(_section(sections, "environment"), e)
    n["resources"] = _norm_resources(_section(sections, "resources"), e)
    n["vpc"] = _norm_vpc(_section(sections, "vpc"), e)
    n["fault_tolerance"] = _norm_fault_tolerance(_section(sections, "fault_tolerance"), e)
    n["ram_role"] = _norm_ram_role(_section(sections, "ram_role"), e)
    return n, e


def _pairs(value: Any, path: str, e: _Errors) -> list[tuple[int, str, str]]:
    """Key/value rows as (row index, key, value); blank rows are skipped."""
    pairs = []
    for i, row in enumerate(_rows(value, path, e)):
        key, val = _text(row.get("key")), _text(row.get("value"))
        if key or val:
            pairs.append((i, key, val))
    return pairs


def _norm_basic(s: Mapping, e: _Errors) -> dict:
    return {
        "name": _text(s.get("name")),
        "tags": _pairs(s.get("tags"), "basic.tags", e),
        "description": _text(s.get("description")),
        "workspace_id": _text(s.get("workspace_id")),
    }


def _norm_environment(s: Mapping, e: _Errors) -> dict:
    p = "environment"
    datasets = []
    for i, row in enumerate(_rows(s.get("datasets"), f"{p}.datasets", e)):
        rp = f"{p}.datasets[{i}]"
        read_only, ok = _bool(row.get("read_only"))
        if not ok:
            e.add(f"{rp}.read_only", "Choose read-only (RO) or read-write (RW).")
        datasets.append({
            "kind": _choice(row, "kind", C.DATASET_KINDS, f"{rp}.kind", e, "custom"),
            "id": _text(row.get("id")),
            "version": _text(row.get("version")),
            "read_only": read_only,
            "mount_path": _text(row.get("mount_path")),
        })
    storages = []
    for i, row in enumerate(_rows(s.get("storages"), f"{p}.storages", e)):
        rp = f"{p}.storages[{i}]"
        uri = _text(row.get("uri"))
        # The type can be left out: the URI tells it (as in inverse()).
        default_type = _storage_type_from_uri(uri) or "oss"
        storages.append({
            "type": _choice(row, "type", C.STORAGE_TYPES, f"{rp}.type", e, default_type),
            "uri": uri,
            "mount_path": _text(row.get("mount_path")),
            "options": _text(row.get("options")),
        })
    return {
        "image_type": _choice(s, "image_type", C.IMAGE_TYPES, f"{p}.image_type", e, "official"),
        "image": _text(s.get("image")),
        "registry_username": _text(s.get("registry_username")),
        "registry_password": _secret(s.get("registry_password")),
        "datasets": datasets,
        "storages": storages,
        "command": _text(s.get("command")),
        "envs": _pairs(s.get("envs"), f"{p}.envs", e),
        "libs_mode": _choice(s, "libs_mode", C.LIBS_MODES, f"{p}.libs_mode", e, "none"),
        "libs": _names(s.get("libs")) if isinstance(s.get("libs"), list) else _text(s.get("libs")).split(),
        "requirements_dir": _text(s.get("requirements_dir")),
        "code_mode": _choice(s, "code_mode", C.CODE_MODES, f"{p}.code_mode", e, "none"),
        "code_source_id": _text(s.get("code_source_id")),
        "code_branch": _text(s.get("code_branch")),
        "code_commit": _text(s.get("code_commit")),
        "code_mount_path": _text(s.get("code_mount_path")),
        "code_upload_uri": _text(s.get("code_upload_uri")),
    }


def _norm_duration(s: Mapping, key: str, e: _Errors, label: str) -> int | None:
    path = f"resources.{key}"
    value, ok = _int(s.get(key))
    if not ok or (value is not None and value <= 0):
        e.add(path, f"{label} must be a positive whole number.")
        return None
    unit = _choice(s, f"{key}_unit", C.DURATION_UNITS, f"{path}_unit", e, FIELDS["resources"][f"{key}_unit"])
    return None if value is None else value * C.DURATION_UNITS[unit]


def _norm_resources(s: Mapping, e: _Errors) -> dict:
    p = "resources"
    roles = []
    for i, row in enumerate(_rows(s.get("roles"), f"{p}.roles", e)):
        rp = f"{p}.roles[{i}]"
        roles.append({
            "role": _text(row.get("role")),
            "count": _number(row, "count", f"{rp}.count", e, "The number of nodes must be a whole number.",
                             whole=True),
            "instance_type": _text(row.get("instance_type")),
            "cpu": _number(row, "cpu", f"{rp}.cpu", e, "CPU cores must be a number."),
            "gpu": _number(row, "gpu", f"{rp}.gpu", e, "GPUs must be a whole number.", whole=True),
            "memory_gib": _number(row, "memory_gib", f"{rp}.memory_gib", e, "Memory must be a number of GiB."),
            "shared_memory_gib": _number(row, "shared_memory_gib", f"{rp}.shared_memory_gib", e,
                                         "Shared memory must be a number of GiB."),
            "node_names": _names(row.get("node_names")),
        })
    advanced, message = parse_advanced(s.get("advanced"))
    if message:
        e.add(f"{p}.advanced", message)
    return {
        "resource_type": _choice(s, "resource_type", C.RESOURCE_TYPES, f"{p}.resource_type", e, "general"),
        "source": _choice(s, "source", C.SOURCES, f"{p}.source", e, "public"),
        "quota_id": _text(s.get("quota_id")),
        "priority": _number(s, "priority", f"{p}.priority", e, "Priority must be a whole number from 1 to 9.",
                            whole=True),
        "framework": _text(s.get("framework")),
        "roles": roles,
        "node_scheduling": _flag(s, "node_scheduling", f"{p}.node_scheduling", e),
        "idle_resources": _flag(s, "idle_resources", f"{p}.idle_resources", e),
        "cpu_affinity": _flag(s, "cpu_affinity", f"{p}.cpu_affinity", e),
        "scheduling_policy": _choice(s, "scheduling_policy", C.SCHEDULING_POLICIES, f"{p}.scheduling_policy",
                                     e, "intelligent"),
        "bid_method": _choice(s, "bid_method", C.BID_METHODS, f"{p}.bid_method", e, ""),
        "spot_discount": _number(s, "spot_discount", f"{p}.spot_discount", e,
                                 "The discount must be a whole percentage from 10 to 90.", whole=True),
        "spot_price": _number(s, "spot_price", f"{p}.spot_price", e, "The maximum price must be a number."),
        "max_duration": _norm_duration(s, "max_duration", e, "The maximum duration"),
        "retention": _norm_duration(s, "retention", e, "The retention period"),
        "dsw": _flag(s, "dsw", f"{p}.dsw", e),
        "advanced": advanced,
    }


def _norm_vpc(s: Mapping, e: _Errors) -> dict:
    return {
        "vpc_id": _text(s.get("vpc_id")),
        "switch_id": _text(s.get("switch_id")),
        "security_group_id": _text(s.get("security_group_id")),
        "extended_cidrs": _names(s.get("extended_cidrs")),
        "gateway": "" if s.get("gateway") == "" else _choice(s, "gateway", C.GATEWAYS, "vpc.gateway", e, "public"),
    }


def _norm_fault_tolerance(s: Mapping, e: _Errors) -> dict:
    p = "fault_tolerance"
    return {
        "enabled": _flag(s, "enabled", f"{p}.enabled", e),
        "args": _text(s.get("args")),
        "sanity_check": _flag(s, "sanity_check", f"{p}.sanity_check", e),
        "sanity_args": _text(s.get("sanity_args")),
    }


def _norm_ram_role(s: Mapping, e: _Errors) -> dict:
    return {
        "mode": _choice(s, "mode", C.RAM_ROLE_MODES, "ram_role.mode", e, "none"),
        "role_arn": _text(s.get("role_arn")),
    }


def _split_top_level(text: str, sep: str) -> list[str]:
    """Split on sep outside {...} / [...] / quotes, so RayRuntimeEnv={pip: x, env_vars: {...}} survives."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def parse_advanced(value: Any) -> tuple[dict | None, str]:
    """Advanced framework configuration: `k=v,k=v` text or a JSON object -> (dict or None, error message)."""
    if isinstance(value, Mapping):
        return dict(value), ""
    text = _text(value)
    if not text:
        return None, ""
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return None, f"Invalid JSON: {exc}."
        if not isinstance(parsed, dict):
            return None, "The JSON must be an object of parameter names to values."
        return parsed, ""
    result: dict[str, str] = {}
    for item in _split_top_level(text, ","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or not key:
            return None, f"Expected key=value entries separated by commas (or a JSON object); got '{item.strip()}'."
        if key in result:
            return None, f"'{key}' is given twice."
        result[key] = val.strip()
    return result or None, ""


def format_advanced(settings: Mapping) -> str:
    """The inverse of parse_advanced(): `k=v,...` when that format can carry the values, else JSON."""
    plain = all(
        isinstance(v, str) and not re.search(r"[,={}\[\]\"']", k + v) and v == v.strip() and v
        for k, v in settings.items()
    ) and all(k == k.strip() and k for k in settings)
    if plain:
        return ",".join(f"{k}={v}" for k, v in settings.items())
    return json.dumps(dict(settings), ensure_ascii=False, separators=(",", ":"), default=str)


# ---------------------------------------------------------------------------------------------------------
# Which fields the current choices show. One table: used by the rules, by build() and by prune_inapplicable().
# ---------------------------------------------------------------------------------------------------------

_Pred = Callable[[dict], "str | None"]  # returns None when the field applies, else why not


def _when(test: Callable[[dict], bool], message: str) -> _Pred:
    return lambda n: None if test(n) else message


def _env(n: dict) -> dict:
    return n["environment"]


def _res(n: dict) -> dict:
    return n["resources"]


def _QUOTA(n: dict) -> bool:  # noqa: N802 - reads like a constant in the table below
    return _res(n)["source"] == "quota"


def _SPOT(n: dict) -> bool:  # noqa: N802
    return _res(n)["source"] == "spot"


def _bid_applies(method: str) -> _Pred:
    def pred(n: dict) -> str | None:
        if not _SPOT(n):
            return "A bid is only used with preemptible resources."
        if _res(n)["bid_method"] != method:
            return "Set only one bid: by discount or by price."
        return None
    return pred


_CREDS = _when(lambda n: _env(n)["image_type"] == "address",
               "Registry credentials are only used with an image address.")
_GIT = _when(lambda n: _env(n)["code_mode"] == "git", "A code source is only used with online configuration (Git).")

APPLICABLE: dict[str, _Pred] = {
    "environment.registry_username": _CREDS,
    "environment.registry_password": _CREDS,
    "environment.libs": _when(lambda n: _env(n)["libs_mode"] == "list",
                              "Library names are only used with 'Select from List'; choose one library mode."),
    "environment.requirements_dir": _when(lambda n: _env(n)["libs_mode"] == "requirements",
                                          "The requirements.txt path is only used with 'Directory of "
                                          "requirements.txt'; choose one library mode."),
    "environment.code_source_id": _GIT,
    "environment.code_branch": _GIT,
    "environment.code_commit": _GIT,
    "environment.code_mount_path": _when(lambda n: _env(n)["code_mode"] in ("git", "upload"),
                                         "A code mount path needs a code configuration."),
    "environment.code_upload_uri": _when(lambda n: _env(n)["code_mode"] == "upload",
                                         "An uploaded code location is only used with Local Upload."),
    "resources.quota_id": _when(_QUOTA, "A quota is only used with Source = Resource Quota."),
    "resources.priority": _when(_QUOTA, "Priority is only available with a resource quota."),
    "resources.node_scheduling": _when(_QUOTA, "Node-specific scheduling is only available with a resource quota."),
    "resources.idle_resources": _when(_QUOTA, "Idle resources are only available with a resource quota."),
    "resources.cpu_affinity": _when(_QUOTA, "CPU affinity is only available with a resource quota."),
    "resources.dsw": _when(_QUOTA, "Start Developer Machine is only available with a resource quota."),
    "resources.bid_method": _when(_SPOT, "A bid is only used with preemptible resources."),
    "resources.spot_discount": _bid_applies("discount"),
    "resources.spot_price": _bid_applies("price"),
    "fault_tolerance.args": _when(lambda n: n["fault_tolerance"]["enabled"],
                                  "Parameters need automatic fault tolerance turned on."),
    "fault_tolerance.sanity_args": _when(lambda n: n["fault_tolerance"]["sanity_check"],
                                         "Parameters need the sanity check turned on."),
    "ram_role.role_arn": _when(lambda n: n["ram_role"]["mode"] == "custom",
                               "A role ARN is only used with a custom role."),
}
_ROLE_RESOURCE = _when(_QUOTA, "CPU, GPU and memory are set per role only with a resource quota; public and "
                       "preemptible resources take them from the instance type.")
ROLE_APPLICABLE: dict[str, _Pred] = {
    "instance_type": _when(lambda n: not _QUOTA(n), "A resource quota takes CPU/GPU/memory, not an instance type."),
    "cpu": _ROLE_RESOURCE,
    "gpu": _ROLE_RESOURCE,
    "memory_gib": _ROLE_RESOURCE,
    "shared_memory_gib": _ROLE_RESOURCE,
    "node_names": _when(lambda n: _QUOTA(n) and _res(n)["node_scheduling"],
                        "Node names need node-specific scheduling (resource quota)."),
}


def _is_set(value: Any) -> bool:
    if value is None or value is False:
        return False
    return bool(value) if isinstance(value, str | list | dict) else True


def _applies(n: dict, path: str) -> bool:
    return APPLICABLE[path](n) is None


def _field(n: dict, path: str) -> Any:
    section, name = path.split(".")
    return n[section][name]


# ---------------------------------------------------------------------------------------------------------
# Rules. Each takes the normalised view, the context and the error sink; paths are section paths.
# ---------------------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_TAG_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARN_RE = re.compile(r"acs:ram::\d+:role/[A-Za-z0-9.\-]{1,64}")
_OSS_URI_RE = re.compile(r"oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](\.[A-Za-z0-9.\-]+)?(/\S*)?")
_NAS_URI_RE = re.compile(r"nas://(?P<id>[A-Za-z0-9\-]+)\.(?P<region>[a-z0-9\-]+)(/\S*)?")
_BMCPFS_URI_RE = re.compile(C.BMCPFS_URI_SCHEME + r"://[A-Za-z0-9\-]+(/\S*)?")
_ID_RES = {
    "vpc_id": (re.compile(r"vpc-[A-Za-z0-9]+"), "A VPC id looks like vpc-xxxxxxxx."),
    "switch_id": (re.compile(r"vsw-[A-Za-z0-9]+"), "A vSwitch id looks like vsw-xxxxxxxx."),
    "security_group_id": (re.compile(r"sg-[A-Za-z0-9]+"), "A security group id looks like sg-xxxxxxxx."),
}


def _has_url(text: str) -> bool:
    lowered = text.lower()
    return "http://" in lowered or "https://" in lowered


def _path_problem(path: str) -> str | None:
    if not path.startswith("/"):
        return "Enter an absolute container path, e.g. /mnt/data."
    if path.rstrip("/") == "":
        return "The root directory cannot be a mount path."
    if re.search(r"\s", path) or "/../" in path + "/":
        return "The path must not contain spaces or '..'."
    return None


def _rule_basic(n: dict, ctx: Context, e: _Errors) -> None:
    name = n["basic"]["name"]
    if not name:
        e.add("basic.name", "Enter a job name.")
    elif len(name) > C.MAX_NAME_LENGTH:
        e.add("basic.name", f"The job name must be at most {C.MAX_NAME_LENGTH} characters.")
    elif not _NAME_RE.fullmatch(name):
        e.add("basic.name", "The job name may contain only letters, digits, '_', '.' and '-'.")
    tags = n["basic"]["tags"]
    limit = C.MAX_TAGS - ctx.reserved_tags
    if len(tags) > limit:
        e.add("basic.tags", f"At most {limit} tags are allowed.")
    seen: set[str] = set()
    for i, key, value in tags:
        kp, vp = f"basic.tags[{i}].key", f"basic.tags[{i}].value"
        if not key:
            e.add(kp, "Enter a tag key.")
        if key.lower().startswith(("aliyun", "acs:")):
            e.add(kp, "Tag keys must not start with 'aliyun' or 'acs:'.")
        if _has_url(key):
            e.add(kp, "Tag keys must not contain 'http://' or 'https://'.")
        if len(key) > C.MAX_TAG_KEY_LENGTH:
            e.add(kp, f"Tag keys must be at most {C.MAX_TAG_KEY_LENGTH} characters.")
        if key and not _TAG_KEY_RE.fullmatch(key):
            e.add(kp, "Tag keys may contain only letters, digits, '-', '_' and '.'.")
        if key in seen:
            e.add(kp, f"The tag key '{key}' is used twice.")
        seen.add(key)
        if _has_url(value):
            e.add(vp, "Tag values must not contain 'http://' or 'https://'.")
        if len(value) > C.MAX_TAG_VALUE_LENGTH:
            e.add(vp, f"Tag values must be at most {C.MAX_TAG_VALUE_LENGTH} characters.")


def _rule_image(n: dict, ctx: Context, e: _Errors) -> None:
    env = _env(n)
    image = env["image"]
    if not image:
        e.add("environment.image", "Choose or enter an image.")
    elif re.search(r"\s", image):
        e.add("environment.image", "The image address must not contain spaces.")
    if env["image_type"] == "address":
        if env["registry_username"] and not env["registry_password"]:
            e.add("environment.registry_password", "Enter the registry password too: credentials need both.")
        if env["registry_password"] and not env["registry_username"]:
            e.add("environment.registry_username", "Enter the registry username too: credentials need both.")


def _dataset_is_cpfs(ctx: Context, dataset_id: str) -> bool:
    info = (ctx.datasets or {}).get(dataset_id)
    if not isinstance(info, Mapping):
        return False
    kind = _text(info.get("type") or info.get("DataSourceType")).lower()
    return kind == "cpfs" or _storage_type_from_uri(_text(info.get("uri") or info.get("Uri"))) == "cpfs"


def _rule_data(n: dict, ctx: Context, e: _Errors) -> None:
    env, has_vpc = _env(n), bool(n["vpc"]["vpc_id"])
    mounts: list[tuple[str, str, str]] = []  # (section path, mount path, label)
    for i, d in enumerate(env["datasets"]):
        p = f"environment.datasets[{i}]"
        if not d["id"]:
            e.add(f"{p}.id", "Choose a dataset.")
        if d["kind"] == "public" and d["read_only"] is not True:
            e.add(f"{p}.read_only", "Public datasets can only be mounted read-only.")
        if d["mount_path"]:
            mounts.append((f"{p}.mount_path", d["mount_path"], f"dataset #{i + 1}"))
        if d["id"] and not has_vpc and _dataset_is_cpfs(ctx, d["id"]):
            e.add(f"{p}.id", "A CPFS dataset needs a VPC that matches the CPFS VPC (set it in the VPC section); "
                  "otherwise the job can stay in EnvPreparing for a long time.")
    for i, s in enumerate(env["storages"]):
        p = f"environment.storages[{i}]"
        kind = s["type"]
        problem = _storage_uri_problem(kind, s["uri"])
        if problem:
            e.add(f"{p}.uri", problem)
        if kind == "bmcpfs" and _res(n)["resource_type"] != "lingjun":
            e.add(f"{p}.type", "BMCPFS is only available with Lingjun resources.")
        if kind == "cpfs" and not has_vpc:
            e.add(f"{p}.type", "CPFS storage needs a VPC that matches the CPFS VPC (set it in the VPC section).")
        if not s["mount_path"]:
            e.add(f"{p}.mount_path", "Enter the container mount path, e.g. /mnt/data.")
        else:
            mounts.append((f"{p}.mount_path", s["mount_path"], f"storage #{i + 1}"))
        for message in _storage_option_problems(kind, s["options"]):
            e.add(f"{p}.options", message)
    if env["code_mode"] in ("git", "upload") and env["code_mount_path"]:
        mounts.append(("environment.code_mount_path", env["code_mount_path"], "the code"))
    used: dict[str, str] = {}
    for path, mount, label in mounts:
        problem = _path_problem(mount)
        if problem:
            e.add(path, problem)
            continue
        key = mount.rstrip("/")
        if key in used:
            e.add(path, f"The mount path {mount} is already used by {used[key]}.")
        used.setdefault(key, label)


def _storage_type_from_uri(uri: str) -> str | None:
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return None
    if scheme == "oss":
        return "oss"
    if scheme == C.BMCPFS_URI_SCHEME:
        return "bmcpfs"
    if scheme == "nas":
        for kind, prefix in C.NAS_ID_PREFIX.items():
            if rest.startswith(prefix):
                return kind
        return "nas"
    return None


def _storage_uri_problem(kind: str, uri: str) -> str | None:
    if not uri:
        return "Enter the storage path (URI)."
    if kind == "oss":
        return None if _OSS_URI_RE.fullmatch(uri) else "An OSS path looks like oss://<bucket>.<endpoint>/<path>."
    if kind == "bmcpfs":
        return None if _BMCPFS_URI_RE.fullmatch(uri) else "A BMCPFS path looks like bmcpfs://<file-system-id>/<path>."
    match = _NAS_URI_RE.fullmatch(uri)
    if not match:
        return "A NAS/CPFS path looks like nas://<file-system-id>.<region>/<path>."
    fs_id, prefix = match["id"], C.NAS_ID_PREFIX.get(kind)
    if prefix and not fs_id.startswith(prefix):
        return f"{C.STORAGE_TYPES[kind]} file system ids start with '{prefix}'."
    if not prefix:
        for other, other_prefix in C.NAS_ID_PREFIX.items():
            if fs_id.startswith(other_prefix):
                return f"This is a {C.STORAGE_TYPES[other]} file system id; choose {C.STORAGE_TYPES[other]}."
    return None


def _positive_int(value: Any) -> int | None:
    number, ok = _int(value)
    return number if ok and number is not None and number > 0 and not isinstance(value, float) else None


def _storage_option_problems(kind: str, text: str) -> list[str]:
    if not text:
        return []
    try:
        options = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return [f"Advanced settings must be a JSON object, e.g. {{\"mountType\":\"ossfs\"}}: {exc}."]
    if not isinstance(options, dict):
        return ["Advanced settings must be a JSON object."]
    allowed = C.STORAGE_OPTION_KEYS.get(kind, ())
    problems = []
    for key, value in options.items():
        if kind == "oss" and key.startswith(C.OSS_OPTION_PREFIX):
            if not isinstance(value, str | int) or isinstance(value, bool):
                problems.append(f"{key} must be a string or a number.")
        elif key not in allowed:
            label = C.STORAGE_TYPES.get(kind, kind)
            known = ", ".join(allowed) if allowed else "none"
            problems.append(f"Unknown advanced setting '{key}' for {label} (supported: {known}).")
        elif key == "mountType" and value not in C.OSS_MOUNT_TYPES:
            problems.append("mountType must be 'ossfs'.")
        elif key == "nconnect" and _positive_int(value) is None:
            problems.append("nconnect must be a positive integer, e.g. {\"nconnect\":\"4\"}.")
    return problems


def _rule_command_envs_libs(n: dict, ctx: Context, e: _Errors) -> None:
    env = _env(n)
    if not env["command"]:
        e.add("environment.command", "Enter a startup command.")
    if len(env["envs"]) > C.MAX_ENVS:
        e.add("environment.envs", f"At most {C.MAX_ENVS} environment variables are allowed.")
    seen: set[str] = set()
    for i, key, _value in env["envs"]:
        kp = f"environment.envs[{i}].key"
        if not key:
            e.add(kp, "Enter a variable name.")
        elif not _ENV_KEY_RE.fullmatch(key):
            e.add(kp, "Variable names may contain letters, digits and '_', and must not start with a digit.")
        elif key in seen:
            e.add(kp, f"The variable {key} is set twice.")
        seen.add(key)
    if env["libs_mode"] == "list" and not env["libs"]:
        e.add("environment.libs", "Enter at least one library name (separate names with spaces).")
    if env["libs_mode"] == "requirements":
        if not env["requirements_dir"]:
            e.add("environment.requirements_dir", "Enter the container path of requirements.txt (or its folder).")
        elif _path_problem(env["requirements_dir"]):
            e.add("environment.requirements_dir", _path_problem(env["requirements_dir"]))
    if env["code_mode"] == "git" and not env["code_source_id"]:
        e.add("environment.code_source_id", "Choose a code source.")
    if env["code_mode"] == "upload":
        if not env["code_mount_path"]:
            e.add("environment.code_mount_path", "Enter the container path where the uploaded code is mounted.")
        if not env["code_upload_uri"]:
            e.add("environment.code_upload_uri", "Upload the code first: the CreateJob API cannot upload local "
                  "code, so the console mounts the uploaded copy from OSS.")
        elif not _OSS_URI_RE.fullmatch(env["code_upload_uri"]):
            e.add("environment.code_upload_uri", "The uploaded code location must be an oss:// path.")


def _spec_info(ctx: Context, instance_type: str) -> Mapping | None:
    if ctx.specs is None:
        return None
    info = ctx.specs.get(instance_type)
    return info if isinstance(info, Mapping) else None


def _info_value(info: Mapping, name: str) -> Any:
    # Accept our snake_case keys and ListEcsSpecs' PascalCase ones (Cpu, Gpu, Memory, ResourceType).
    pascal = "".join(part.capitalize() for part in name.split("_"))
    return info.get(name, info.get(pascal))


def _resource_kind(value: Any) -> str | None:
    word = _text(value).lower()
    return {"ecs": "general", "general": "general", "lingjun": "lingjun"}.get(word)


def _job_totals(n: dict, ctx: Context) -> tuple[float | None, int | None, int]:
    """(total CPU cores, total GPUs, total nodes); None when an instance type is unknown."""
    res = _res(n)
    cpu: float | None = 0
    gpu: int | None = 0
    nodes = 0
    for role in res["roles"]:
        count = role["count"] if isinstance(role["count"], int) and role["count"] > 0 else 0
        nodes += count
        if res["source"] == "quota":
            role_cpu, role_gpu = role["cpu"] or 0, role["gpu"] or 0
        else:
            info = _spec_info(ctx, role["instance_type"])
            role_cpu = _num(_info_value(info, "cpu"))[0] if info else None
            role_gpu = _int(_info_value(info, "gpu"))[0] if info else None
        cpu = None if cpu is None or role_cpu is None else cpu + count * role_cpu
        gpu = None if gpu is None or role_gpu is None else gpu + count * role_gpu
    return cpu, gpu, nodes


def _rule_resources(n: dict, ctx: Context, e: _Errors) -> None:
    res = _res(n)
    lingjun, source = res["resource_type"] == "lingjun", res["source"]
    if lingjun and ctx.region not in C.LINGJUN_REGION_IDS:
        e.add("resources.resource_type", f"Lingjun resources are not offered in {ctx.region}; they are offered "
              f"in {', '.join(sorted(C.LINGJUN_REGION_IDS))}.")
    if source == "quota":
        if not res["quota_id"]:
            e.add("resources.quota_id", "Choose a resource quota.")
        info = (ctx.quotas or {}).get(res["quota_id"])
        kind = _resource_kind(info.get("resource_type")) if isinstance(info, Mapping) else None
        if kind and kind != res["resource_type"]:
            e.add("resources.quota_id", f"This quota holds {C.RESOURCE_TYPES[kind]}, not "
                  f"{C.RESOURCE_TYPES[res['resource_type']]}.")
        low, high = C.PRIORITY_RANGE
        if res["priority"] is not None and not low <= res["priority"] <= high:
            e.add("resources.priority", "Priority must be from 1 (lowest) to 9 (highest).")
    if source == "spot":
        _rule_spot(n, e)
    if res["cpu_affinity"] and lingjun:
        e.add("resources.cpu_affinity", "CPU affinity only takes effect on general computing resource quotas.")
    if source == "quota" and res["node_scheduling"]:
        for i, role in enumerate(res["roles"]):
            if not role["node_names"]:
                e.add(f"resources.roles[{i}].node_names", "Choose the nodes for this role (node-specific "
                      "scheduling is on).")
    _rule_framework_roles(n, ctx, e)
    if source == "public":
        cpu, gpu, _nodes = _job_totals(n, ctx)
        if gpu is not None and gpu > C.PUBLIC_MAX_GPUS:
            e.add("resources.roles", f"Public resources allow at most {C.PUBLIC_MAX_GPUS} GPUs per job (this job "
                  f"asks for {gpu}); use a resource quota or ask your account manager for more.")
        if cpu is not None and cpu > C.PUBLIC_MAX_CPUS:
            e.add("resources.roles", f"Public resources allow at most {C.PUBLIC_MAX_CPUS} CPU cores per job "
                  f"(this job asks for {_fmt_num(cpu)}); use a resource quota or ask your account manager for more.")


def _rule_spot(n: dict, e: _Errors) -> None:
    res = _res(n)
    lingjun = res["resource_type"] == "lingjun"
    if not res["bid_method"]:
        e.add("resources.bid_method", "Choose a bid method: by discount or by price.")
    elif res["bid_method"] == "price" and lingjun:
        e.add("resources.bid_method", "Lingjun preemptible resources only support bidding by discount.")
    if res["bid_method"] == "discount":
        if res["spot_discount"] is None:
            e.add("resources.spot_discount", "Choose the maximum discount (10% to 90%).")
        elif res["spot_discount"] not in C.SPOT_DISCOUNTS:
            e.add("resources.spot_discount", "The discount must be one of 10%, 20%, ... 90%.")
    if res["bid_method"] == "price":
        if res["spot_price"] is None:
            e.add("resources.spot_price", "Enter the maximum price (CNY per minute).")
        elif res["spot_price"] <= 0:
            e.add("resources.spot_price", "The maximum price must be greater than 0.")
    if lingjun:
        vpc = n["vpc"]
        if not vpc["vpc_id"]:
            e.add("vpc.vpc_id", "Lingjun preemptible resources require a VPC, vSwitch and security group.")
        if not vpc["switch_id"]:
            e.add("vpc.switch_id", "Lingjun preemptible resources require a vSwitch.")


def _rule_framework_roles(n: dict, ctx: Context, e: _Errors) -> None:
    res = _res(n)
    name, source = res["framework"], res["source"]
    fw = C.FRAMEWORKS.get(name)
    if not name:
        e.add("resources.framework", "Choose a framework.")
    elif fw is None:
        e.add("resources.framework", f"Unknown framework '{name}'; choose one of {', '.join(C.FRAMEWORKS)}.")
    elif fw.job_type is None:
        e.add("resources.framework", f"'{name}' has no documented CreateJob JobType, so this console cannot "
              "submit it; choose a concrete framework.")
    elif res["resource_type"] == "lingjun" and source == "quota" and not fw.lingjun_quota:
        allowed = ", ".join(f.name for f in C.FRAMEWORKS.values() if f.lingjun_quota)
        e.add("resources.framework", f"With a Lingjun resource quota only these frameworks are supported: {allowed}.")
    roles = res["roles"]
    if not roles:
        e.add("resources.roles", "Add at least one role.")
    seen: set[str] = set()
    for i, role in enumerate(roles):
        p = f"resources.roles[{i}]"
        role_name = role["role"]
        if not role_name:
            e.add(f"{p}.role", "Choose a role.")
        elif fw and role_name not in fw.roles and not (
            fw.custom_worker_roles and re.fullmatch(C.RAY_CUSTOM_ROLE_PATTERN, role_name)
        ):
            extra = " and custom Worker-<name> roles" if fw.custom_worker_roles else ""
            e.add(f"{p}.role", f"{fw.name} jobs support the roles {', '.join(fw.roles)}{extra}.")
        elif role_name in seen:
            e.add(f"{p}.role", f"The role {role_name} appears twice.")
        seen.add(role_name)
        count = role["count"]
        if count is None:
            if not e.has(f"{p}.count"):
                e.add(f"{p}.count", "Enter the number of nodes.")
        elif count < 1:
            e.add(f"{p}.count", "The number of nodes must be at least 1.")
        elif role_name == "Chief" and count > 1:
            e.add(f"{p}.count", "Only one Chief node is allowed.")
        if source == "quota":
            _rule_quota_role(role, p, e)
        else:
            _rule_instance_role(role, p, res["resource_type"], ctx, e)
    if fw:
        for required in fw.required:
            if roles and required not in seen:
                e.add("resources.roles", f"{fw.name} jobs need a {required} role.")


def _rule_quota_role(role: dict, p: str, e: _Errors) -> None:
    for key, label in (("cpu", "CPU cores"), ("memory_gib", "memory (GiB)")):
        if role[key] is None:
            if not e.has(f"{p}.{key}"):
                e.add(f"{p}.{key}", f"Enter the {label}.")
        elif role[key] <= 0:
            e.add(f"{p}.{key}", f"The {label} must be greater than 0.")
    if role["gpu"] is not None and role["gpu"] < 0:
        e.add(f"{p}.gpu", "GPUs cannot be negative.")
    shm, memory = role["shared_memory_gib"], role["memory_gib"]
    if shm is not None and shm < 0:
        e.add(f"{p}.shared_memory_gib", "Shared memory cannot be negative.")
    elif shm is not None and memory is not None and shm > memory:
        e.add(f"{p}.shared_memory_gib", "Shared memory cannot be larger than the role's memory.")


def _rule_instance_role(role: dict, p: str, resource_type: str, ctx: Context, e: _Errors) -> None:
    instance_type = role["instance_type"]
    if not instance_type:
        e.add(f"{p}.instance_type", "Choose an instance type.")
    elif ctx.specs is not None:
        info = _spec_info(ctx, instance_type)
        if info is None:
            e.add(f"{p}.instance_type", f"Unknown instance type {instance_type} (not offered by ListEcsSpecs).")
        else:
            kind = _resource_kind(_info_value(info, "resource_type"))
            if kind and kind != resource_type:
                e.add(f"{p}.instance_type", f"{instance_type} is a {C.RESOURCE_TYPES[kind]} instance type; the "
                      f"job uses {C.RESOURCE_TYPES[resource_type]}.")


def _bool_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _port_list_problems(value: Any) -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return ["customPortList must be a string like 10000;10001-10010."]
    problems = []
    for item in value.split(";"):
        item = item.strip()
        match = re.fullmatch(r"(\d{1,6})(?:-(\d{1,6}))?", item)
        if not match:
            problems.append(f"customPortList: '{item}' is not a port or a start-end range.")
            continue
        start, end = int(match[1]), int(match[2] or match[1])
        if not (1 <= start <= 65535 and 1 <= end <= 65535):
            problems.append(f"customPortList: ports must be from 1 to 65535 ('{item}').")
        elif start > end:
            problems.append(f"customPortList: the range '{item}' ends before it starts.")
        elif start <= C.DEFAULT_MASTER_PORT <= end:
            problems.append(f"customPortList must not include port {C.DEFAULT_MASTER_PORT} (the master's default "
                            "port).")
    return problems


def _advanced_value_problems(key: str, value: Any) -> list[str]:
    if key == "ReleaseResourcePolicy":
        return [] if value in C.RELEASE_RESOURCE_POLICIES else ["ReleaseResourcePolicy only accepts 'pod-exit'."]
    if key in C.ADVANCED_BOOL_KEYS:
        return [] if _bool_value(value) is not None else [f"{key} must be true or false."]
    if key in C.ADVANCED_POSITIVE_INT_KEYS:
        return [] if _positive_int(value) is not None else [f"{key} must be a positive integer."]
    if key == "customPortNumPerWorker":
        number = _positive_int(value)
        ok = number is not None and number <= C.MAX_CUSTOM_PORT_NUM
        return [] if ok else [f"customPortNumPerWorker must be a whole number from 1 to {C.MAX_CUSTOM_PORT_NUM}."]
    if key == "customPortList":
        return _port_list_problems(value)
    if key == "RayRuntimeEnv":
        return [] if isinstance(value, str | dict) and value else ["RayRuntimeEnv must be a non-empty string."]
    if key in C.ADVANCED_STRING_KEYS:
        return [] if isinstance(value, str) and value else [f"{key} must be a non-empty string."]
    return []


def _rule_advanced(n: dict, ctx: Context, e: _Errors) -> None:
    res = _res(n)
    settings = res["advanced"]
    if not settings:
        return
    path, framework = "resources.advanced", res["framework"]
    allowed = C.ADVANCED_KEYS_ALL + C.ADVANCED_KEYS_BY_FRAMEWORK.get(framework, ())
    for key, value in settings.items():
        if key not in allowed:
            owners = [f for f, keys in C.ADVANCED_KEYS_BY_FRAMEWORK.items() if key in keys]
            e.add(path, f"'{key}' is only available for {owners[0]} jobs." if owners else
                  f"Unknown advanced parameter '{key}'.")
            continue
        for message in _advanced_value_problems(key, value):
            e.add(path, message)
    if "customPortList" in settings and "customPortNumPerWorker" in settings:
        e.add(path, "customPortList and customPortNumPerWorker are mutually exclusive; set only one.")
    if res["resource_type"] == "lingjun" and "customPortNumPerWorker" in settings:
        e.add(path, "customPortNumPerWorker is not supported on Lingjun resources (they have no custom ports).")
    if _bool_value(settings.get("EnableJumboFrame")) is True:
        info = (ctx.quotas or {}).get(res["quota_id"])
        generation = info.get("general_computing_2_0") if isinstance(info, Mapping) else None
        if res["source"] != "quota" or res["resource_type"] != "general" or generation is False:
            e.add(path, "EnableJumboFrame is only supported on General Computing 2.0 resource quotas.")


def _rule_vpc(n: dict, ctx: Context, e: _Errors) -> None:
    vpc = n["vpc"]
    for key, (pattern, message) in _ID_RES.items():
        if vpc[key] and not pattern.fullmatch(vpc[key]):
            e.add(f"vpc.{key}", message)
    if not vpc["vpc_id"]:
        for key, label in (("switch_id", "vSwitch"), ("security_group_id", "security group"),
                           ("extended_cidrs", "extended CIDR blocks")):
            if vpc[key]:
                e.add(f"vpc.{key}", f"Choose a VPC first: the {label} belongs to it.")
        if vpc["gateway"] == "private":
            e.add("vpc.gateway", "The private gateway needs a VPC (with a NAT gateway, an EIP and SNAT entries).")
    elif not vpc["security_group_id"]:
        e.add("vpc.security_group_id", "Choose a security group for the VPC.")
    for cidr in vpc["extended_cidrs"]:
        try:
            ipaddress.ip_network(cidr if "/" in cidr else "missing prefix", strict=True)
        except ValueError:
            e.add("vpc.extended_cidrs", f"'{cidr}' is not a CIDR block such as 192.168.0.0/16.")


def _rule_fault_tolerance(n: dict, ctx: Context, e: _Errors) -> None:
    ft, res = n["fault_tolerance"], _res(n)
    for key in ("args", "sanity_args"):
        try:
            shlex.split(ft[key])
        except ValueError as exc:
            e.add(f"fault_tolerance.{key}", f"Could not parse the parameters: {exc}.")
    if ft["sanity_check"]:
        _cpu, gpus, _nodes = _job_totals(n, ctx)
        supported = (res["resource_type"] == "lingjun" and res["source"] == "quota"
                     and res["framework"] == "PyTorch" and (gpus or 0) > 0)
        if not supported:
            e.add("fault_tolerance.sanity_check", "The sanity check is only supported for PyTorch jobs on a "
                  "Lingjun resource quota with at least one GPU.")


def _rule_ram_role(n: dict, ctx: Context, e: _Errors) -> None:
    ram = n["ram_role"]
    if ram["mode"] == "custom":
        if not ram["role_arn"]:
            e.add("ram_role.role_arn", "Enter the ARN of the custom role.")
        elif not _ARN_RE.fullmatch(ram["role_arn"]):
            e.add("ram_role.role_arn", "A role ARN looks like acs:ram::<account-id>:role/<role-name>.")


def _rule_applicable(n: dict, ctx: Context, e: _Errors) -> None:
    for path, pred in APPLICABLE.items():
        if _is_set(_field(n, path)):
            message = pred(n)
            if message:
                e.add(path, message)
    for i, role in enumerate(_res(n)["roles"]):
        for key, pred in ROLE_APPLICABLE.items():
            if _is_set(role[key]):
                message = pred(n)
                if message:
                    e.add(f"resources.roles[{i}].{key}", message)


def _fmt_minutes(minutes: int) -> str:
    value, unit = _split_minutes(minutes, None)
    return f"{value} {unit[:-1] if value == 1 else unit}"


def _rule_policy(n: dict, ctx: Context, e: _Errors) -> None:
    policy, res = ctx.policy or Policy(), _res(n)
    if policy.allowed_sources is not None and res["source"] not in policy.allowed_sources:
        allowed = ", ".join(C.SOURCES[s] for s in C.SOURCES if s in policy.allowed_sources) or "none"
        e.add("resources.source", f"The workspace policy only allows these sources: {allowed}.")
    cpu, gpus, nodes = _job_totals(n, ctx)
    if policy.max_nodes is not None and nodes > policy.max_nodes:
        e.add("resources.roles", f"The workspace policy allows at most {policy.max_nodes} nodes per job "
              f"(this job has {nodes}).")
    if policy.max_gpus is not None:
        if gpus is None:
            e.add("resources.roles", "The workspace policy limits GPUs, and the GPU count of an instance type is "
                  "unknown.")
        elif gpus > policy.max_gpus:
            e.add("resources.roles", f"The workspace policy allows at most {policy.max_gpus} GPUs per job "
                  f"(this job asks for {gpus}).")
    cap = policy.max_duration_minutes
    if cap is not None:
        if res["max_duration"] is None:
            e.add("resources.max_duration", f"The workspace policy requires a maximum duration of at most "
                  f"{_fmt_minutes(cap)}.")
        elif res["max_duration"] > cap:
            e.add("resources.max_duration", f"The workspace policy allows at most {_fmt_minutes(cap)}.")
    image, prefixes = _env(n)["image"], policy.allowed_image_prefixes
    if image and prefixes is not None and not image.startswith(tuple(prefixes)):
        e.add("environment.image", f"The workspace policy only allows images starting with: {', '.join(prefixes)}.")
    keys = {key for _i, key, _v in n["basic"]["tags"]}
    for key in policy.required_tag_keys:
        if key not in keys:
            e.add("basic.tags", f"The workspace policy requires the tag '{key}'.")


RULES: tuple[Callable[[dict, Context, _Errors], None], ...] = (
    _rule_basic,
    _rule_image,
    _rule_data,
    _rule_command_envs_libs,
    _rule_resources,
    _rule_advanced,
    _rule_vpc,
    _rule_fault_tolerance,
    _rule_ram_role,
    _rule_applicable,
    _rule_policy,
)


def validate_sections(sections: Mapping, context: Context | None = None) -> dict[str, list[str]]:
    """Errors of the wizard data, keyed by section path ("resources.roles[0].count"); {} when valid."""
    ctx = context or Context()
    n, e = _norm(sections)
    for rule in RULES:
        rule(n, ctx, e)
    if not e.d:
        size = len(json.dumps(_build(n, None, "real"), ensure_ascii=False, default=str).encode())
        if size > C.MAX_BODY_BYTES:
            e.add("", f"The job is {size} bytes as JSON; CreateJob accepts at most {C.MAX_BODY_BYTES}.")
    return e.d


# ---------------------------------------------------------------------------------------------------------
# Notes: warnings and hints that do not block submission.
# ---------------------------------------------------------------------------------------------------------


def notes(sections: Mapping, context: Context | None = None) -> dict[str, list[str]]:
    """Warnings and hints keyed by section path."""
    ctx = context or Context()
    n, _ = _norm(sections)
    out = _Errors()
    env, res, vpc = _env(n), _res(n), n["vpc"]
    lingjun = res["resource_type"] == "lingjun"
    if lingjun and env["image_type"] == "custom":
        out.add("environment.image_type", "With Lingjun resources and a custom image, install the RDMA drivers in "
                "the image to get full use of the RDMA network.")
    for i, key, _value in env["envs"]:
        if key in C.DLC_INJECTED_ENVS:
            out.add(f"environment.envs[{i}].key", f"{key} is set by DLC itself; your value overrides it.")
    settings = res["advanced"] or {}
    if res["framework"] == "Ray" and "RayRuntimeEnv" in settings:
        if env["envs"]:
            out.add("environment.envs", "RayRuntimeEnv is set, so it overrides these environment variables.")
        if env["libs_mode"] != "none":
            out.add("environment.libs_mode", "RayRuntimeEnv is set, so it overrides the third-party libraries.")
    if env["code_mode"] == "upload":
        out.add("environment.code_mode", "The CreateJob API cannot upload local code: the console uploads it to OSS "
                "and mounts it. Git code sources, OSS mounts or a custom image work too.")
    mount = env["code_mount_path"]
    if env["code_mode"] in ("git", "upload") and mount and mount not in env["command"]:
        out.add("environment.command", f"The code is mounted at {mount}; refer to your files through that path, "
                f"e.g. python {mount.rstrip('/')}/train.py.")
    fw = C.FRAMEWORKS.get(res["framework"])
    if fw and not fw.verified and fw.job_type:
        out.add("resources.framework", f"{fw.name} is sent as JobType {fw.job_type}; this mapping and its roles "
                "are not confirmed by the DLC documentation.")
    if res["source"] == "public" and ctx.specs is None:
        out.add("resources.roles", "The instance type catalog is not available, so the public-resource limit "
                f"({C.PUBLIC_MAX_GPUS} GPUs, {C.PUBLIC_MAX_CPUS} CPU cores per job) was not checked.")
    if res["source"] == "spot":
        out.add("resources.source", "Preemptible resources have no availability guarantee: they may not be "
                "available at once and may be reclaimed.")
    if res["idle_resources"] and res["source"] == "quota":
        out.add("resources.idle_resources", "Jobs on idle resources are stopped automatically when the owning quota "
                "needs the resources back.")
    if res["retention"]:
        out.add("resources.retention", "Retained jobs keep consuming resources. Jobs past the retention period are "
                "deleted, and deleted jobs cannot be restored.")
    _advanced_notes(n, ctx, out)
    if not vpc["vpc_id"]:
        out.add("vpc.vpc_id", "Without a VPC the job uses the public network and gateway, whose bandwidth is "
                "limited: jobs may run slowly or fail.")
    else:
        out.add("vpc.vpc_id", "The resource group, the OSS dataset storage and the code repository must be in this "
                "VPC, in the same region, with network connectivity.")
        if vpc["switch_id"] and not vpc["extended_cidrs"]:
            out.add("vpc.extended_cidrs", "The API reference asks for all VPC CIDR blocks when a vSwitch is set; "
                    "the documented examples omit them.")
        if vpc["gateway"] == "private" and lingjun:
            out.add("vpc.gateway", "The default route only applies to general computing resources.")
    if n["fault_tolerance"]["enabled"]:
        usage = {"quota": C.AIMASTER_QUOTA_USAGE, "public": f"an {C.AIMASTER_PUBLIC_INSTANCE} instance"}.get(
            res["source"], "extra resources")
        out.add("fault_tolerance.enabled", f"An extra AIMaster instance runs next to the job and uses {usage}.")
    return out.d


def _advanced_notes(n: dict, ctx: Context, out: _Errors) -> None:
    res = _res(n)
    settings = res["advanced"] or {}
    if any(k in settings for k in ("customPortList", "customPortNumPerWorker")) and \
            _bool_value(settings.get("createSvcForAllWorkers")) is not True:
        out.add("resources.advanced", "Custom ports are meant to be used with createSvcForAllWorkers=true.")
    if "customPortList" in settings and res["resource_type"] == "lingjun":
        out.add("resources.advanced", "Lingjun resources have no custom-port feature; customPortList may not "
                "take effect.")
    if _bool_value(settings.get("EnableJumboFrame")) is True and res["source"] == "quota":
        info = (ctx.quotas or {}).get(res["quota_id"])
        if not isinstance(info, Mapping) or info.get("general_computing_2_0") is None:
            out.add("resources.advanced", "EnableJumboFrame needs a General Computing 2.0 quota; this quota's "
                    "generation is unknown.")


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
    _put(body, "Envs", {key: value for _i, key, value in env["envs"]})
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
    """A deep copy of the body without the SECRET_PATHS values."""
    out = copy.deepcopy(dict(body)) if isinstance(body, Mapping) else {}
    for spec in out.get("JobSpecs") or []:
        if isinstance(spec, dict) and isinstance(spec.get("ImageConfig"), dict):
            spec["ImageConfig"].pop("Password", None)
            if not spec["ImageConfig"]:
                del spec["ImageConfig"]
    settings = out.get("Settings")
    if isinstance(settings, dict) and isinstance(settings.get("AdvancedSettings"), dict):
        settings["AdvancedSettings"].pop("RayRedisPassword", None)
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
            if "*" not in schema and _is_empty(sub):
                continue  # null, "", [] and {} mean "not set"; map entries (Envs, Tags) keep empty values
            if sub_schema is _DROP:
                e.add(key_path, "Not supported by this console (unknown field or not sent by the wizard).")
                continue
            clean = _sanitize(sub, sub_schema, key_path, e)
            if clean is not _DROP and ("*" in schema or not _is_empty(clean)):
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


def _split_minutes(minutes: Any, preferred: str | None) -> tuple[Any, str]:
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
        return minutes, "minutes"
    if preferred in C.DURATION_UNITS and minutes % C.DURATION_UNITS[preferred] == 0:
        return minutes // C.DURATION_UNITS[preferred], preferred
    for unit in ("days", "hours", "minutes"):
        if minutes % C.DURATION_UNITS[unit] == 0:
            return minutes // C.DURATION_UNITS[unit], unit
    return minutes, "minutes"


def _from_wire_number(text: Any, unit: str = "") -> Any:
    # "4" -> 4, "8Gi" -> 8; anything else stays as it is so the rules can report it.
    if isinstance(text, str) and text.endswith(unit):
        number, ok = _num(text[: len(text) - len(unit)] if unit else text)
        if ok and number is not None:
            return number
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
    env["envs"] = [{"key": k, "value": v} for k, v in (body.get("Envs") or {}).items()]
    libs, lib_dir = body.get("ThirdpartyLibs"), body.get("ThirdpartyLibDir", "")
    env["libs_mode"] = "list" if libs else ("requirements" if lib_dir else "none")
    env["libs"] = " ".join(libs or [])
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


# ---------------------------------------------------------------------------------------------------------
# Paths: section path <-> wire path
# ---------------------------------------------------------------------------------------------------------

_SECTION_TO_WIRE = {
    "": "",
    "basic.name": "DisplayName", "basic.description": "Description", "basic.workspace_id": "WorkspaceId",
    "basic.tags": "Settings.Tags",
    "environment.image_type": "JobSpecs[0].Image", "environment.image": "JobSpecs[0].Image",
    "environment.registry_username": "JobSpecs[0].ImageConfig.Username",
    "environment.registry_password": "JobSpecs[0].ImageConfig.Password",
    "environment.datasets": "DataSources", "environment.storages": "DataSources",
    "environment.command": "UserCommand", "environment.envs": "Envs",
    "environment.libs_mode": "ThirdpartyLibs", "environment.libs": "ThirdpartyLibs",
    "environment.requirements_dir": "ThirdpartyLibDir",
    "environment.code_mode": "CodeSource", "environment.code_source_id": "CodeSource.CodeSourceId",
    "environment.code_branch": "CodeSource.Branch", "environment.code_commit": "CodeSource.Commit",
    "environment.code_mount_path": "CodeSource.MountPath", "environment.code_upload_uri": "DataSources",
    "resources.resource_type": "JobSpecs", "resources.source": "JobSpecs", "resources.quota_id": "ResourceId",
    "resources.priority": "Priority", "resources.framework": "JobType", "resources.roles": "JobSpecs",
    "resources.node_scheduling": "JobSpecs[0].AssignNodeSpec.EnableAssignNode",
    "resources.idle_resources": "Settings.OversoldType", "resources.cpu_affinity": "Settings.EnableCPUAffinity",
    "resources.scheduling_policy": "SchedulingStrategy", "resources.bid_method": "JobSpecs[0].SpotSpec",
    "resources.spot_discount": "JobSpecs[0].SpotSpec.SpotDiscountLimit",
    "resources.spot_price": "JobSpecs[0].SpotSpec.SpotPriceLimit",
    "resources.max_duration": "JobMaxRunningTimeMinutes", "resources.max_duration_unit": "JobMaxRunningTimeMinutes",
    "resources.retention": "Settings.JobReservedMinutes", "resources.retention_unit": "Settings.JobReservedMinutes",
    "resources.dsw": "Settings.EnableDSWDev", "resources.advanced": "Settings.AdvancedSettings",
    "vpc.vpc_id": "UserVpc.VpcId", "vpc.switch_id": "UserVpc.SwitchId",
    "vpc.security_group_id": "UserVpc.SecurityGroupId", "vpc.extended_cidrs": "UserVpc.ExtendedCIDRs",
    "vpc.gateway": "UserVpc.DefaultRoute",
    "fault_tolerance.enabled": "Settings.EnableErrorMonitoringInAIMaster",
    "fault_tolerance.args": "Settings.ErrorMonitoringArgs",
    "fault_tolerance.sanity_check": "Settings.EnableSanityCheck",
    "fault_tolerance.sanity_args": "Settings.SanityCheckArgs",
    "ram_role.mode": "CredentialConfig",
    "ram_role.role_arn": "CredentialConfig.CredentialConfigItems[0].Roles[0].RoleArn",
}
# Where a wire path lands when several fields share it.
_WIRE_TO_SECTION = {wire: section for section, wire in reversed(list(_SECTION_TO_WIRE.items()))}
_WIRE_TO_SECTION.update({
    "JobSpecs[0].Image": "environment.image", "DataSources": "environment.datasets", "JobSpecs": "resources.roles",
    "ThirdpartyLibs": "environment.libs", "JobMaxRunningTimeMinutes": "resources.max_duration",
    "Settings.JobReservedMinutes": "resources.retention", "Settings.JobReservedPolicy": "resources.retention",
    "JobSpecs[0].SpotSpec": "resources.bid_method", "CredentialConfig": "ram_role.mode", "Settings": "",
    "UserVpc": "vpc.vpc_id", "CodeSource.MountPath": "environment.code_mount_path",
})
_ROLE_WIRE = {"role": "Type", "count": "PodCount", "instance_type": "EcsSpec", "cpu": "ResourceConfig.CPU",
              "gpu": "ResourceConfig.GPU", "memory_gib": "ResourceConfig.Memory",
              "shared_memory_gib": "ResourceConfig.SharedMemory", "node_names": "AssignNodeSpec.NodeNames"}
_DATASET_WIRE = {"kind": "DataSourceId", "id": "DataSourceId", "version": "DataSourceVersion",
                 "read_only": "MountAccess", "mount_path": "MountPath"}
_STORAGE_WIRE = {"type": "Uri", "uri": "Uri", "mount_path": "MountPath", "options": "Options"}
_ROW_RE = re.compile(r"(?P<list>[\w.]+)\[(?P<i>\d+)\](?:\.(?P<field>[\w.]+))?")


@dataclass
class _Layout:
    datasets: list[int]
    storages: list[int]
    code: int | None
    source: str


def _layout_of_sections(sections: Mapping | None) -> _Layout:
    n, _ = _norm(sections or {})
    env = _env(n)
    nd, ns = len(env["datasets"]), len(env["storages"])
    code = nd + ns if env["code_mode"] == "upload" else None
    return _Layout(list(range(nd)), list(range(nd, nd + ns)), code, _res(n)["source"])


def _layout_of_body(body: Mapping, hints: Mapping) -> _Layout:
    datasets, storages, code = _classify_sources(body, hints)
    source = "quota" if "ResourceId" in body else \
        ("spot" if any(isinstance(s, Mapping) and "SpotSpec" in s for s in body.get("JobSpecs") or []) else "public")
    return _Layout(datasets, storages, code, source)


def _to_wire(path: str, layout: _Layout) -> str:
    if path in ("resources.source", "resources.resource_type"):
        return {"quota": "ResourceId", "spot": "JobSpecs[0].SpotSpec"}.get(layout.source, "JobSpecs[0].EcsSpec")
    if layout.code is not None and path in ("environment.code_mount_path", "environment.code_upload_uri"):
        return f"DataSources[{layout.code}].{'MountPath' if path.endswith('mount_path') else 'Uri'}"
    if path in _SECTION_TO_WIRE:
        return _SECTION_TO_WIRE[path]
    match = _ROW_RE.fullmatch(path)
    if match:
        rows, i, name = match["list"], int(match["i"]), match["field"]
        if rows == "basic.tags":
            return "Settings.Tags"
        if rows == "environment.envs":
            return "Envs"
        if rows == "resources.roles":
            return f"JobSpecs[{i}]" + (f".{_ROLE_WIRE[name]}" if name in _ROLE_WIRE else "")
        table, indices = {"environment.datasets": (_DATASET_WIRE, layout.datasets),
                          "environment.storages": (_STORAGE_WIRE, layout.storages)}.get(rows, ({}, []))
        if i < len(indices):
            return f"DataSources[{indices[i]}]" + (f".{table[name]}" if name in table else "")
        return "DataSources"
    head = path.rsplit(".", 1)[0]
    return _to_wire(head, layout) if head != path else ""


def _to_section(path: str, layout: _Layout) -> str:
    if path in _WIRE_TO_SECTION:
        return _WIRE_TO_SECTION[path]
    match = re.fullmatch(r"JobSpecs\[(\d+)\](?:\.(.+))?", path)
    if match:
        i, rest = int(match[1]), match[2] or ""
        shared = {"Image": "environment.image", "ImageConfig": "environment.registry_username",
                  "ImageConfig.Username": "environment.registry_username",
                  "ImageConfig.Password": "environment.registry_password", "SpotSpec": "resources.bid_method",
                  "SpotSpec.SpotStrategy": "resources.bid_method",
                  "SpotSpec.SpotDiscountLimit": "resources.spot_discount",
                  "SpotSpec.SpotPriceLimit": "resources.spot_price",
                  "AssignNodeSpec.EnableAssignNode": "resources.node_scheduling"}
        if rest in shared:
            return shared[rest]
        by_wire = {wire: name for name, wire in _ROLE_WIRE.items()}
        by_wire.update({"ResourceConfig": "cpu", "AssignNodeSpec": "node_names", "SpotSpec": "bid_method"})
        return f"resources.roles[{i}]" + (f".{by_wire[rest]}" if rest in by_wire else "")
    match = re.fullmatch(r"DataSources\[(\d+)\](?:\.(\w+))?", path)
    if match:
        k, name = int(match[1]), match[2] or ""
        if k in layout.datasets:
            by_wire = {"DataSourceId": "id", "DataSourceVersion": "version", "MountAccess": "read_only",
                       "MountPath": "mount_path"}
            row = f"environment.datasets[{layout.datasets.index(k)}]"
            return row + (f".{by_wire[name]}" if name in by_wire else "")
        if k in layout.storages:
            by_wire = {"Uri": "uri", "MountPath": "mount_path", "Options": "options"}
            row = f"environment.storages[{layout.storages.index(k)}]"
            return row + (f".{by_wire[name]}" if name in by_wire else "")
        if k == layout.code:
            return "environment.code_mount_path" if name == "MountPath" else "environment.code_upload_uri"
        return "environment.datasets"
    for prefix, section in (("Settings.Tags", "basic.tags"), ("Envs", "environment.envs"),
                            ("Settings.AdvancedSettings", "resources.advanced"),
                            ("UserVpc.ExtendedCIDRs", "vpc.extended_cidrs"), ("ThirdpartyLibs", "environment.libs")):
        if path.startswith(prefix):
            return section
    if path.startswith("CredentialConfig"):
        return "ram_role.role_arn" if path.endswith("RoleArn") else "ram_role.mode"
    head = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", path)
    return _to_section(head, layout) if head != path else ""


def wire_path(section_path: str, sections: Mapping | None = None) -> str:
    """Section path -> wire path of the body build(sections) makes ("resources.roles[0].count" ->
    "JobSpecs[0].PodCount"). Without sections, dataset and storage rows map to "DataSources"."""
    return _to_wire(section_path, _layout_of_sections(sections))


def field_for_path(path: str, sections: Mapping | None = None) -> str:
    """Wire path -> the wizard field that shows it ("JobSpecs[1].ResourceConfig.Memory" ->
    "resources.roles[1].memory_gib"); sections tell how DataSources split into datasets and storages."""
    return _to_section(path, _layout_of_sections(sections))


# ---------------------------------------------------------------------------------------------------------
# validate: body -> errors keyed by wire path
# ---------------------------------------------------------------------------------------------------------

# Messages for parts of a body that the wizard cannot reproduce, by wire path pattern.
_CANONICAL_MESSAGES = (
    (r"JobSpecs\[\d+\]\.Image", "Every role must use the same image."),
    (r"JobSpecs\[\d+\]\.ImageConfig.*", "Every role must use the same registry credentials."),
    (r"JobSpecs\[\d+\]\.SpotSpec\.SpotStrategy", f"SpotStrategy must be '{C.SPOT_STRATEGY}'; the bid only "
     "takes effect with it."),
    (r"JobSpecs\[\d+\]\.SpotSpec.*", "Every role must use the same bid, and spot roles need a SpotSpec."),
    (r"JobSpecs\[\d+\]\.AssignNodeSpec.*", "Node-specific scheduling is on for every role or for none."),
    (r"DataSources\[\d+\].*", "A data source has either DataSourceId (dataset) or Uri (storage); datasets come "
     "before storage mounts."),
    (r"Settings\.JobReservedPolicy", f"JobReservedPolicy must be '{C.JOB_RESERVED_POLICY}' and comes with "
     "JobReservedMinutes."),
    (r"Settings\.OversoldType", f"Idle resources are sent as OversoldType '{C.OVERSOLD_ACCEPT}'."),
    (r"Settings\.(EnableCPUAffinity|EnableDSWDev|EnableErrorMonitoringInAIMaster|EnableSanityCheck)",
     "Send true or leave the setting out."),
    (r"CredentialConfig.*", "The RAM role must be the PAI default role ({\"EnableCredentialInject\": true}) or one "
     "custom role in the console's CredentialConfig format."),
    (r"ThirdpartyLib.*", "Send either ThirdpartyLibs or ThirdpartyLibDir, not both."),
)


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, str]]) -> None:
    """Leaf paths where body a and rebuilt body b differ; b is _DROP where the rebuilt body has nothing."""
    if isinstance(a, dict) and (isinstance(b, dict) or b is _DROP):
        other = b if isinstance(b, dict) else {}
        for key in list(a) + [k for k in other if k not in a]:
            if key in a:
                _diff(a[key], other.get(key, _DROP), _join(path, key), out)
            else:
                out.append((_join(path, key), f"Missing: this console would send {json.dumps(other[key])} here."))
    elif isinstance(a, list) and (isinstance(b, list) or b is _DROP):
        other = b if isinstance(b, list) else []
        for i in range(max(len(a), len(other))):
            if i < len(a):
                _diff(a[i], other[i] if i < len(other) else _DROP, f"{path}[{i}]", out)
            else:
                out.append((f"{path}[{i}]", f"Missing: this console would send {json.dumps(other[i])} here."))
    elif b is _DROP:
        out.append((path, "This console cannot reproduce this value here; it would be dropped."))
    elif a != b or isinstance(a, bool) != isinstance(b, bool):
        out.append((path, f"Not in the console's form: it would be sent as {json.dumps(b)}."))


def _hints_for(body: Mapping, ctx: Context) -> dict:
    hints = _clean_hints(ctx.hints)
    if "resource_type" not in hints:
        quota = (ctx.quotas or {}).get(body.get("ResourceId"))
        kind = _resource_kind(quota.get("resource_type")) if isinstance(quota, Mapping) else None
        for role in body.get("JobSpecs") or []:
            info = _spec_info(ctx, role.get("EcsSpec", ""))
            kind = kind or (_resource_kind(_info_value(info, "resource_type")) if info else None)
        if kind:
            hints["resource_type"] = kind
    return hints


def validate(body: Any, context: Context | None = None) -> dict[str, list[str]]:
    """Errors of a CreateJob body keyed by wire path ("JobSpecs[0].PodCount"); {} when valid.

    The rules are those of validate_sections(), run on inverse(body, context.hints) and translated to wire
    paths; a valid body is also exactly what build() makes of it (build(inverse(body, hints)) == body).
    """
    ctx = context or Context()
    if not isinstance(body, Mapping):
        return {"": ["The request body must be a JSON object."]}
    e = _Errors()
    clean = _sanitize(body, WIRE_SCHEMA, "", e)
    hints = _hints_for(clean, ctx)
    sections = _inverse(clean, hints)
    layout = _layout_of_body(clean, hints)
    schema_paths = set(e.d)
    for path, messages in validate_sections(sections, ctx).items():
        target = _to_wire(path, layout)
        if any(target == p or target.startswith((p + ".", p + "[")) for p in schema_paths):
            continue  # the type error at (or above) this path already explains it
        for message in messages:
            e.add(target, message)
    if not e.d:
        n, _ = _norm(sections)
        rebuilt = _build(n, None, "real")
        differences: list[tuple[str, str]] = []
        _diff(clean, rebuilt, "", differences)
        for path, message in differences:
            specific = next((m for pattern, m in _CANONICAL_MESSAGES if re.fullmatch(pattern, path)), None)
            e.add(path, specific or message)
    return e.d


# ---------------------------------------------------------------------------------------------------------
# Helpers for forms
# ---------------------------------------------------------------------------------------------------------


def defaults(context: Context | None = None) -> dict:
    """A fresh wizard: console defaults, one Worker role, the policy's default tags."""
    ctx = context or Context()
    sections = copy.deepcopy(FIELDS)
    policy = ctx.policy or Policy()
    sections["basic"]["tags"] = [{"key": k, "value": v} for k, v in policy.default_tags.items()]
    sections["resources"]["roles"] = [dict(ROW_FIELDS["roles"])]
    return sections


def hidden_fields(sections: Mapping, role_count: int = 0) -> set[str]:
    """Section paths the current choices hide (APPLICABLE), role fields included, for forms to leave out."""
    n, _ = _norm(sections)
    hidden = {path for path, pred in APPLICABLE.items() if pred(n)}
    for i in range(role_count):
        hidden |= {f"resources.roles[{i}].{key}" for key, pred in ROLE_APPLICABLE.items() if pred(n)}
    return hidden


def infer_hints(body: Mapping, context: Context | None = None, hints: Mapping | None = None) -> dict:
    """Hints for a body that came without them (an imported job): what the quota or instance types tell."""
    ctx = context or Context()
    return _hints_for(body or {}, dataclasses.replace(ctx, hints=dict(hints or {})))


def prune_inapplicable(sections: Mapping) -> dict:
    """A copy with the fields the current choices hide reset to their defaults (see APPLICABLE)."""
    n, _ = _norm(sections)
    out = copy.deepcopy(dict(sections)) if isinstance(sections, Mapping) else {}
    for path, pred in APPLICABLE.items():
        section, name = path.split(".")
        if pred(n) and isinstance(out.get(section), dict) and name in out[section]:
            out[section][name] = copy.deepcopy(FIELDS[section][name])
    roles = out.get("resources", {}).get("roles") if isinstance(out.get("resources"), dict) else None
    if isinstance(roles, list):
        for role in roles:
            for key, pred in ROLE_APPLICABLE.items():
                if isinstance(role, dict) and key in role and pred(n):
                    role[key] = ROW_FIELDS["roles"][key]
    return out


def extract_secrets(sections: Mapping) -> dict[str, str]:
    """The secret values of the wizard data by name ("registry_password", "RayRedisPassword"), for storing
    them encrypted next to the job; placeholders are not secrets."""
    n, _ = _norm(sections)
    found = {"registry_password": n["environment"]["registry_password"],
             "RayRedisPassword": _secret((n["resources"]["advanced"] or {}).get("RayRedisPassword"))}
    return {k: v for k, v in found.items() if v and v != SECRET_PLACEHOLDER}


def fill_secrets(sections: Mapping, secrets: Mapping[str, str]) -> dict:
    """A copy of the wizard data with SECRET_PLACEHOLDER replaced by the stored secrets (edit and resubmit)."""
    out = copy.deepcopy(dict(sections)) if isinstance(sections, Mapping) else {}
    env, res = out.get("environment"), out.get("resources")
    if isinstance(env, dict) and env.get("registry_password") == SECRET_PLACEHOLDER and "registry_password" in secrets:
        env["registry_password"] = secrets["registry_password"]
    if isinstance(res, dict) and "RayRedisPassword" in secrets:
        advanced, _message = parse_advanced(res.get("advanced"))
        if advanced and advanced.get("RayRedisPassword") == SECRET_PLACEHOLDER:
            advanced["RayRedisPassword"] = secrets["RayRedisPassword"]
            res["advanced"] = format_advanced(advanced)
    return out
