"""The normalised view of the wizard data that rules, build and notes read, and the text format of the
advanced framework settings (parse_advanced / format_advanced)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jobs import catalog as C
from jobs.spec.base import (
    FIELDS,
    MAX_CPU,
    MAX_DURATION_DAYS,
    MAX_GPU,
    MAX_MEMORY_GIB,
    MAX_POD_COUNT,
    SECTIONS,
    _bool,
    _choice,
    _Errors,
    _flag,
    _int,
    _names,
    _number,
    _requirements,
    _rows,
    _secret,
    _section,
    _text,
    _too_large,
    loads_json,
    looks_like_secret,
    storable_problems,
    storable_text,
)

# ---------------------------------------------------------------------------------------------------------
# Normalised view: every field parsed once, typed; field-level parse errors collected on the way.
# ---------------------------------------------------------------------------------------------------------


def _norm(sections: Any) -> tuple[dict, _Errors]:
    e = _Errors()
    if sections is not None and not isinstance(sections, Mapping):
        e.add("", "The wizard data must be an object with the six sections.")
    sections = _storable(sections, e)
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


def _storable(sections: Any, e: _Errors) -> Any:
    """The wizard data with every value that cannot be stored or sent (base.storable_problems: NUL, a lone surrogate,
    NaN, too deep) reported at its field and replaced: a text by its storable_text(), anything else by None. So no
    rule, message or built body carries it, whichever way it came in (a form, an API body, an import, a clone).
    The same object when everything is storable, which is the common case: no copy."""
    if not isinstance(sections, Mapping):
        return sections
    bad: list[tuple[str, str, str, int | None, Any]] = []  # (path, message, section, row or None, field)
    for name in SECTIONS:
        section = sections.get(name)
        for key, value in section.items() if isinstance(section, Mapping) else ():
            if (name, key) == ("resources", "advanced") and isinstance(value, str):
                continue  # parse_advanced checks the settings it reads, naming the one at fault
            rows = value if isinstance(value, list) and all(isinstance(r, Mapping) for r in value) else None
            if rows:
                for i, row in enumerate(rows):
                    for field, cell in row.items():
                        for where, message in storable_problems(cell, limit=1):
                            bad.append((f"{name}.{key}[{i}].{field}", _inside(where, message), name, i, field))
            else:
                for where, message in storable_problems(value, limit=1):
                    bad.append((f"{name}.{key}", _inside(where, message), name, None, key))
    if not bad:
        return sections

    def clean(value: Any) -> Any:
        return storable_text(value) if isinstance(value, str) else None

    out = dict(sections)
    for path, message, name, row, field in bad:
        e.add(path, message)
        section = out[name] = dict(out[name]) if out[name] is sections[name] else out[name]
        if row is None:
            section[field] = clean(section[field])
            continue
        key = path[len(name) + 1:path.index("[")]
        if section[key] is sections[name][key]:
            section[key] = [dict(r) for r in section[key]]
        section[key][row][field] = clean(section[key][row][field])
    return out


def _pairs(value: Any, path: str, e: _Errors) -> list[tuple[int, str, str]]:
    """Key/value rows as (row index, key, value); blank rows are skipped."""
    pairs = []
    for i, row in enumerate(_rows(value, path, e)):
        key, val = _text(row.get("key")), _text(row.get("value"))
        if key or val:
            pairs.append((i, key, val))
    return pairs


def _secret_rows(value: Any, path: str, e: _Errors) -> set[int]:
    """Indices of the env rows ticked Secret (their value is kept out of the stored body)."""
    found = set()
    for i, row in enumerate(_rows(value, path, _Errors())):  # _pairs reports the row-shape problems already
        flag, ok = _bool(row.get("secret"))
        if not ok:
            e.add(f"{path}[{i}].secret", "Must be on or off.")
        if flag:
            found.add(i)
    return found


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
        # A CR would end up in the pod's shell lines (`cd /mnt/code\r` fails): a browser posts a textarea's line
        # breaks as CRLF, and an API caller may send them; DLC gets LF only, from the wizard and the API alike.
        "command": _text(s.get("command")).replace("\r\n", "\n").replace("\r", "\n"),
        "envs": _pairs(s.get("envs"), f"{p}.envs", e),
        "secret_envs": _secret_rows(s.get("envs"), f"{p}.envs", e),
        "libs_mode": _choice(s, "libs_mode", C.LIBS_MODES, f"{p}.libs_mode", e, "none"),
        "libs": _names(s.get("libs")) if isinstance(s.get("libs"), list) else _requirements(_text(s.get("libs"))),
        "requirements_dir": _text(s.get("requirements_dir")),
        "code_mode": _choice(s, "code_mode", C.CODE_MODES, f"{p}.code_mode", e, "none"),
        "code_source_id": _text(s.get("code_source_id")),
        "code_branch": _text(s.get("code_branch")),
        "code_commit": _text(s.get("code_commit")),
        "code_mount_path": _text(s.get("code_mount_path")),
        "code_upload_uri": _text(s.get("code_upload_uri")),
    }


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


def _norm_duration(s: Mapping, key: str, e: _Errors, label: str) -> int | None:
    path = f"resources.{key}"
    value, ok = _int(s.get(key))
    too_large = f"{label} is too large (at most {MAX_DURATION_DAYS} days)."
    if not ok and _too_large(s.get(key), whole=True):
        e.add(path, too_large)
        return None
    if not ok or (value is not None and value <= 0):
        e.add(path, f"{label} must be a positive whole number.")
        return None
    unit = _choice(s, f"{key}_unit", C.DURATION_UNITS, f"{path}_unit", e, FIELDS["resources"][f"{key}_unit"])
    minutes = None if value is None else value * C.DURATION_UNITS[unit]
    if minutes is not None and minutes > MAX_DURATION_DAYS * C.DURATION_UNITS["days"]:
        e.add(path, too_large)
        return None
    return minutes


def _norm_resources(s: Mapping, e: _Errors) -> dict:
    p = "resources"
    roles = []
    for i, row in enumerate(_rows(s.get("roles"), f"{p}.roles", e)):
        rp = f"{p}.roles[{i}]"
        roles.append({
            "role": _text(row.get("role")),
            "count": _number(row, "count", f"{rp}.count", e, "The number of nodes must be a whole number.",
                             whole=True, high=MAX_POD_COUNT,
                             too_large=f"The number of nodes is too large (at most {MAX_POD_COUNT} per role)."),
            "instance_type": _text(row.get("instance_type")),
            "cpu": _number(row, "cpu", f"{rp}.cpu", e, "CPU cores must be a number.", high=MAX_CPU,
                           too_large=f"The CPU core count is too large (at most {MAX_CPU} per node)."),
            "gpu": _number(row, "gpu", f"{rp}.gpu", e, "GPUs must be a whole number.", whole=True, high=MAX_GPU,
                           too_large=f"The GPU count is too large (at most {MAX_GPU} per node)."),
            "memory_gib": _number(row, "memory_gib", f"{rp}.memory_gib", e, "Memory must be a number of GiB.",
                                  high=MAX_MEMORY_GIB,
                                  too_large=f"Memory is too large (at most {MAX_MEMORY_GIB} GiB per node)."),
            "shared_memory_gib": _number(row, "shared_memory_gib", f"{rp}.shared_memory_gib", e,
                                         "Shared memory must be a number of GiB.", high=MAX_MEMORY_GIB,
                                         too_large=f"Shared memory is too large (at most {MAX_MEMORY_GIB} GiB "
                                                   "per node)."),
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
        "spot_price": _number(s, "spot_price", f"{p}.spot_price", e, "The maximum price must be a number.",
                              too_large="The maximum price is too large."),
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


def _split_top_level(text: str, sep: str, quotes: bool = True) -> list[str]:
    """Split on sep outside {...} / [...] / quotes, so RayRuntimeEnv={pip: x, env_vars: {...}} survives.
    quotes=False: a quote protects nothing (a password's lone apostrophe must not hide the line break after it)."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif quotes and ch in "\"'":
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
        return _storable_advanced(dict(value))
    text = _text(value)
    if not text:
        return None, ""
    if text.startswith("{"):
        try:
            parsed = loads_json(text)
        except (ValueError, RecursionError) as exc:
            return None, f"Invalid JSON: {exc}."
        if not isinstance(parsed, dict):
            return None, "The JSON must be an object of parameter names to values."
        return _storable_advanced(parsed)
    result: dict[str, str] = {}
    previous = ""
    for item in _split_top_level(text, ","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        key = key.strip()
        # After a secret's entry (RayRedisPassword=ab,cd), text without '=' is the rest of the secret: never quoted.
        if looks_like_secret(previous) and not sep:
            return None, (f"The value of '{previous}' has a comma in it, which ends an entry in key=value text: write "
                          f"the settings as a JSON object instead, e.g. {{\"{previous}\": \"...\"}}.")
        previous = key
        if not sep or not key:
            return None, f"Expected key=value entries separated by commas (or a JSON object); got '{item.strip()}'."
        if key in result:
            return None, f"'{key}' is given twice."
        # The field is a textarea, so entries typed one per line reach here as one value: refused, as a Redis address
        # or a password would otherwise be sent with the next lines in it, and the settings on them never set.
        lines = [line for line in _split_top_level(val.strip(), "\n", quotes=False) if line.strip()]
        if len(lines) > 1:
            # Only the next line's key is quoted: a value may be a password (RayRedisPassword).
            after, sep, _value = lines[1].partition("=")
            then = f" ({after.strip()[:40]}=…)" if sep and after.strip() else ""
            return None, (f"The value of '{key}' runs onto the next line{then}: separate entries with commas, e.g. "
                          "createSvcForAllWorkers=true,customPortNumPerWorker=100, or write a JSON object.")
        result[key] = val.strip()
    return _storable_advanced(result) if result else (None, "")


def _storable_advanced(settings: dict) -> tuple[dict | None, str]:
    """The settings, or (None, why) when a value in them cannot be stored or sent (base.storable_problems): a JSON
    escape such as "\\u0000" or "\\ud800" gets past the form's own checks, and RayRuntimeEnv nests freely."""
    for where, message in storable_problems(settings, limit=1):
        return None, _inside(where, message)
    return settings, ""


def _inside(where: str, message: str) -> str:
    """A problem inside a field's object, named by its key there ("RayRuntimeEnv: ..."), not by its whole path:
    the path of a value nested too deeply is dozens of keys long."""
    top = where.split(".", 1)[0].split("[", 1)[0]
    return f"{top}: {message}" if top else message


def format_advanced(settings: Mapping) -> str:
    """The inverse of parse_advanced(): `k=v,...` when that format can carry the values, else JSON."""
    plain = all(
        isinstance(v, str) and not re.search(r"[,={}\[\]\"'\r\n]", k + v) and v == v.strip() and v
        for k, v in settings.items()
    ) and all(k == k.strip() and k for k in settings)
    if plain:
        return ",".join(f"{k}={v}" for k, v in settings.items())
    return json.dumps(dict(settings), ensure_ascii=False, separators=(",", ":"), default=str)
