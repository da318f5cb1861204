"""The validation rules of the wizard data (RULES) and validate_sections()."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from jobs import catalog as C
from jobs.dlc import IDEMPOTENCY_TAG_KEY
from jobs.spec.applicable import APPLICABLE, ROLE_APPLICABLE, _env, _field, _is_set, _res
from jobs.spec.base import (
    Context,
    Policy,
    _decimals,
    _Errors,
    _fmt_num,
    _int,
    _is_requirement,
    _num,
    _split_minutes,
    _text,
    loads_json,
    storable_problems,
)
from jobs.spec.norm import _inside, _norm, _storage_type_from_uri
from jobs.spec.wire import _build

# ---------------------------------------------------------------------------------------------------------
# Rules. Each takes the normalised view, the context and the error sink; paths are section paths.
# ---------------------------------------------------------------------------------------------------------

JOB_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
# JOB_NAME_RE in words, for every message and help text about a job name (the wizard's, the API's, a schedule's):
# "letters" alone reads as "é" and "中" too, which the SDK's rule ("digits, letters, _, . and -") does not take.
JOB_NAME_CHARSET = "ASCII letters (a-z, A-Z), digits, '_', '.' and '-'"
TAG_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]+")
# One wording for the wizard, the API and the list's tag filter (jobs.tags): "letters" alone reads as "é" too.
TAG_KEY_CHARSET = "ASCII letters (a-z, A-Z), digits, '-', '_' and '.'"
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_NAME_CHARSET = "ASCII letters (a-z, A-Z), digits and '_', not starting with a digit"  # ENV_NAME_RE in words
_COMMIT_RE = re.compile(r"[0-9a-fA-F]{7,40}")  # an abbreviated (git's default 7) or full SHA-1
_ARN_RE = re.compile(r"acs:ram::(?P<account>[0-9]+):role/[A-Za-z0-9.\-]{1,64}")
_OSS_URI_RE = re.compile(r"oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](\.[A-Za-z0-9.\-]+)?(/\S*)?")
_NAS_URI_RE = re.compile(r"nas://(?P<id>[A-Za-z0-9\-]+)\.(?P<region>[a-z0-9\-]+)(/\S*)?")
_BMCPFS_URI_RE = re.compile(C.BMCPFS_URI_SCHEME + r"://[A-Za-z0-9\-]+(/\S*)?")
# The region an OSS endpoint names: oss-<region>[-internal].aliyuncs.com. Endpoints without one (oss-accelerate,
# the oss-rg-* resource-group endpoints) give none.
_OSS_REGION_RE = re.compile(r"oss://[^./]+\.oss-(?!rg-)(?P<region>[a-z]{2}-[a-z0-9-]+?)(-internal)?\.aliyuncs\.com(/.*)?")
# Lengths of what is typed or sent as text, so that a typo or garbage (40,000 characters of image address) gets a
# message, never a request DLC refuses (docs/spec-notes.md, D29).
MAX_IMAGE_NAME = 255  # distribution/reference NameTotalLengthMax: registry host + repository path, without tag/digest
MAX_PATH_BYTES = 4095  # Linux PATH_MAX (4096 bytes) less its terminating NUL
MAX_PATH_PART_BYTES = 255  # Linux NAME_MAX: one name between slashes
MAX_RESOURCE_ID = 64  # a VPC, vSwitch or security group id (vpc- + about 20 characters) [inf]
MAX_ACCOUNT_ID_DIGITS = 16  # an Alibaba Cloud account id (UID) is 16 digits
MAX_BRANCH_BYTES = 255  # a Git branch: a file name under .git/refs/heads (NAME_MAX) [inf]
# CPU is millicores on Kubernetes, which refuses a precision finer than 1m; memory has no such step, so the same
# thousandth of the console's unit (0.001 GiB, about 1 MiB) is its minimum (D30).
MIN_CPU = 0.001
CPU_DECIMALS = 3
MIN_MEMORY_GIB = 0.001
_ID_RES = {
    "vpc_id": (re.compile(r"vpc-[A-Za-z0-9]+"), "A VPC id looks like vpc-xxxxxxxx."),
    "switch_id": (re.compile(r"vsw-[A-Za-z0-9]+"), "A vSwitch id looks like vsw-xxxxxxxx."),
    "security_group_id": (re.compile(r"sg-[A-Za-z0-9]+"), "A security group id looks like sg-xxxxxxxx."),
}


# An image reference as registries parse it (the grammar of distribution/reference, which docker and containerd use):
# [domain[:port]/]path-component[/path-component...][:tag][@algorithm:hex].
_IMAGE_COMPONENT_RE = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_IMAGE_DOMAIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                              r"(?::[0-9]+)?")
_IMAGE_TAG_RE = re.compile(r"\w[\w.-]{0,127}")
_IMAGE_DIGEST_RE = re.compile(r"(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})")
_IMAGE_PREFIX_RE = re.compile(r"[A-Za-z0-9._:/@-]+")


def _path_segment_problem(parts: list[str]) -> str | None:
    if any(part in (".", "..") for part in parts):
        return "'.' and '..' are not path segments of an image reference: write the repository's own path."
    if "" in parts:
        return "An image reference has no empty path segment ('//', or '/' at the start or end)."
    return None


def image_problem(image: str) -> str | None:
    """Why an image address is not an image reference registries accept, or None (the wizard, the API, import and
    clone all get it through _rule_image)."""
    if re.search(r"\s", image):
        return "The image address must not contain spaces."
    # The longest reference: the name, ':' and a 128-character tag, '@sha512:' and 128 hex digits.
    if len(image) > MAX_IMAGE_NAME + 1 + 128 + 8 + 128:
        return f"The image address is too long: an image name is at most {MAX_IMAGE_NAME} characters, plus its tag."
    name, at, digest = image.partition("@")
    if at and not _IMAGE_DIGEST_RE.fullmatch(digest):
        return "A digest after '@' is sha256: and 64 lowercase hex digits (or sha512: and 128)."
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
        if not _IMAGE_TAG_RE.fullmatch(tag):
            return "A tag is 1 to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'."
    if len(name) > MAX_IMAGE_NAME:
        return (f"The image name (registry and repository, without the tag) is at most {MAX_IMAGE_NAME} characters; "
                f"this one has {len(name)}.")
    parts = name.split("/")
    problem = _path_segment_problem(parts)
    if problem:
        return problem
    first = parts[0]
    if len(parts) > 1 and ("." in first or ":" in first or first == "localhost"):
        if not _IMAGE_DOMAIN_RE.fullmatch(first):
            return f"Not a registry host: {first[:60]!r}."
        parts = parts[1:]
    bad = next((part for part in parts if not _IMAGE_COMPONENT_RE.fullmatch(part)), None)
    if bad is not None:
        return (f"Not a repository path segment: {bad[:60]!r}. Segments are lowercase letters and digits, "
                "separated by '.', '_' or '-'.")
    return None


def image_prefix_problem(prefix: str) -> str | None:
    """Why a guardrail's allowed image prefix is refused, or None: it is the start of an image reference."""
    if any(c in prefix for c in "*?[]{}"):
        return (f"{prefix[:60]!r}: no wildcards; a prefix matches images from their start, e.g. "
                "registry.example.com/team/ allows every image under it.")
    if not _IMAGE_PREFIX_RE.fullmatch(prefix) or len(prefix) > 255:
        return (f"Not an image prefix: {prefix[:60]!r}. A prefix is the start of an image reference (letters, digits, "
                "'.', '_', '-', ':', '/' and '@'), e.g. registry.example.com/team/.")
    parts = prefix.split("/")
    return _path_segment_problem(parts[:-1] if parts[-1] == "" and len(parts) > 1 else parts)


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
    if len(path.encode("utf-8", "replace")) > MAX_PATH_BYTES:
        return f"The path is too long: at most {MAX_PATH_BYTES} bytes (Linux PATH_MAX)."
    if any(len(part.encode("utf-8", "replace")) > MAX_PATH_PART_BYTES for part in path.split("/")):
        return f"A name between two '/' is at most {MAX_PATH_PART_BYTES} bytes (Linux NAME_MAX)."
    return None


def branch_problem(branch: str) -> str | None:
    """Why a text is no Git branch name (the rules of `git check-ref-format --branch`), or None."""
    if len(branch.encode("utf-8", "replace")) > MAX_BRANCH_BYTES:
        return f"A branch name is at most {MAX_BRANCH_BYTES} bytes."
    if re.search(r"[\x00-\x20\x7f~^:?*\[\\]", branch):
        return "A branch name has no spaces, control characters or any of ~ ^ : ? * [ \\."
    if ".." in branch or "@{" in branch or branch == "@":
        return "A branch name has no '..' or '@{' and is not '@'."
    if branch.startswith(("-", "/")) or branch.endswith(("/", ".")) or "//" in branch:
        return "A branch name does not start with '-' or '/', end with '/' or '.', or contain '//'."
    if any(part.startswith(".") or part.endswith(".lock") for part in branch.split("/")):
        return "No part of a branch name (between '/') starts with '.' or ends with '.lock'."
    return None


def _rule_basic(n: dict, ctx: Context, e: _Errors) -> None:
    name = n["basic"]["name"]
    if not name:
        e.add("basic.name", "Enter a job name.")
    elif len(name) > C.MAX_NAME_LENGTH:
        e.add("basic.name", f"The job name must be at most {C.MAX_NAME_LENGTH} characters.")
    elif not JOB_NAME_RE.fullmatch(name):
        e.add("basic.name", f"The job name may contain only {JOB_NAME_CHARSET}.")
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
        if key and not TAG_KEY_RE.fullmatch(key):
            e.add(kp, f"Tag keys may contain only {TAG_KEY_CHARSET}.")
        # lifecycle.wire_body sets it on every submission: a person's value would be overwritten, or be taken
        # for another job's by the exactly-once look-up (dlc.find_by_tag).
        if key == IDEMPOTENCY_TAG_KEY:
            e.add(kp, f"The tag key '{key}' is reserved for the console's exactly-once submission.")
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
    elif problem := image_problem(image):
        e.add("environment.image", problem)
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


def _cpfs_dataset_vpc(ctx: Context, dataset_id: str) -> str:
    """The VPC of a CPFS dataset's file system when Context.datasets says it; "" when unknown."""
    info = (ctx.datasets or {}).get(dataset_id)
    if not _dataset_is_cpfs(ctx, dataset_id) or not isinstance(info, Mapping):
        return ""
    return _text(info.get("vpc_id") or info.get("VpcId"))


def _storage_region(kind: str, uri: str) -> str:
    """The region a storage URI names (OSS endpoint, NAS/CPFS file system); "" when it names none."""
    if kind == "oss":
        match = _OSS_REGION_RE.fullmatch(uri)
        return match["region"] if match else ""
    if kind in ("nas", "extreme_nas", "cpfs"):
        match = _NAS_URI_RE.fullmatch(uri)
        return match["region"] if match else ""
    return ""


def _rule_data(n: dict, ctx: Context, e: _Errors) -> None:
    env, has_vpc = _env(n), bool(n["vpc"]["vpc_id"])
    mounts: list[tuple[str, str, str]] = []  # (section path, mount path, label)
    for i, d in enumerate(env["datasets"]):
        p = f"environment.datasets[{i}]"
        if not d["id"]:
            e.add(f"{p}.id", "Choose a dataset.")
        if d["kind"] in C.READ_ONLY_DATASET_KINDS and d["read_only"] is not True:
            e.add(f"{p}.read_only", "Public datasets can only be mounted read-only.")
        if d["mount_path"]:
            mounts.append((f"{p}.mount_path", d["mount_path"], f"dataset #{i + 1}"))
        if d["id"] and not has_vpc and _dataset_is_cpfs(ctx, d["id"]):
            e.add(f"{p}.id", "A CPFS dataset needs a VPC that matches the CPFS VPC (set it in the VPC section); "
                  "otherwise the job can stay in EnvPreparing for a long time.")
        cpfs_vpc = _cpfs_dataset_vpc(ctx, d["id"]) if has_vpc else ""
        if cpfs_vpc and cpfs_vpc != n["vpc"]["vpc_id"]:
            e.add(f"{p}.id", f"This dataset's CPFS file system is in {cpfs_vpc}, not {n['vpc']['vpc_id']}: the job's "
                  "VPC must match the CPFS VPC, otherwise the job can stay in EnvPreparing for a long time.")
    for i, s in enumerate(env["storages"]):
        p = f"environment.storages[{i}]"
        kind = s["type"]
        problem = _storage_uri_problem(kind, s["uri"])
        if problem:
            e.add(f"{p}.uri", problem)
        # [004] VPC: with a VPC, the dataset storage must be in the same VPC and region as the job.
        region = "" if problem or not has_vpc else _storage_region(kind, s["uri"])
        if region and region != ctx.region:
            e.add(f"{p}.uri", f"This storage is in {region}, but the job runs in {ctx.region}: with a VPC, the "
                  "storage must be in the job's region and VPC.")
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


def _storage_options(text: str) -> tuple[dict, list[str]]:
    """The storage advanced settings JSON as (object, parse problems)."""
    if not text:
        return {}, []
    try:
        options = loads_json(text)
    except (ValueError, RecursionError) as exc:
        return {}, [f"Advanced settings must be a JSON object, e.g. {{\"mountType\":\"ossfs\"}}: {exc}."]
    if not isinstance(options, dict):
        return {}, ["Advanced settings must be a JSON object."]
    # The text is sent as typed, but DLC parses it: an escape ("\\u0000", "\\ud800") or nesting it cannot take
    # would fail the create, as the same value in the advanced framework configuration would (norm._storable_advanced).
    for where, message in storable_problems(options, limit=1):
        return {}, [f"Advanced settings: {_inside(where, message)}"]
    return options, []


def _option_owners(key: str) -> list[str]:
    """The storage types the documents give this advanced setting for."""
    if key.startswith(C.OSS_OPTION_PREFIX):
        return [C.STORAGE_TYPES["oss"]]
    return [C.STORAGE_TYPES[kind] for kind, keys in C.STORAGE_OPTION_KEYS.items() if key in keys]


def _storage_option_problems(kind: str, text: str) -> list[str]:
    options, problems = _storage_options(text)
    allowed, label = C.STORAGE_OPTION_KEYS.get(kind, ()), C.STORAGE_TYPES.get(kind, kind)
    for key, value in options.items():
        if kind == "oss" and key.startswith(C.OSS_OPTION_PREFIX):
            if not isinstance(value, str | int) or isinstance(value, bool):
                problems.append(f"{key} must be a string or a number.")
        elif key in allowed:
            if key == "mountType" and value not in C.OSS_MOUNT_TYPES:
                problems.append("mountType must be 'ossfs'.")
            elif key == "nconnect" and _positive_int(value) is None:
                problems.append("nconnect must be a positive integer, e.g. {\"nconnect\":\"4\"}.")
        elif owners := _option_owners(key):
            problems.append(f"{key} applies to {' and '.join(owners)}, not {label}.")
        # Any other key goes through with a note: the seeds list the options "for example" (spec-notes D21).
    return problems


def undocumented_storage_options(kind: str, text: str) -> list[str]:
    """Keys of a storage's advanced settings that no document names for any storage type."""
    options, _problems = _storage_options(text)
    allowed = C.STORAGE_OPTION_KEYS.get(kind, ())
    return [key for key in options if key not in allowed and not _option_owners(key)]


def _rule_command_envs_libs(n: dict, ctx: Context, e: _Errors) -> None:
    env = _env(n)
    if not env["command"]:
        e.add("environment.command", "Enter a startup command.")
    if len(env["envs"]) > C.MAX_ENVS:
        e.add("environment.envs", f"At most {C.MAX_ENVS} environment variables are allowed.")
    seen: set[str] = set()
    for i, key, value in env["envs"]:
        kp = f"environment.envs[{i}].key"
        if not key:
            e.add(kp, "Enter a variable name.")
        elif not ENV_NAME_RE.fullmatch(key):
            e.add(kp, f"Variable names may contain only {ENV_NAME_CHARSET}.")
        elif key in seen:
            e.add(kp, f"The variable {key} is set twice.")
        seen.add(key)
        if i in env["secret_envs"] and not value:
            e.add(f"environment.envs[{i}].value", f"Type the value of {key or 'this secret variable'} again: "
                  "secrets are never copied or sent back to the page.")
    if env["libs_mode"] == "list" and not env["libs"]:
        e.add("environment.libs", "Enter at least one library (one pip requirement per line).")
    if env["libs_mode"] == "list":
        # One message for all of them: ten bad lines are one problem of the field, not ten.
        bad = [lib for lib in env["libs"] if not _is_requirement(lib)]
        if bad:
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            shown = ", ".join(f"'{lib[:80]}'" for lib in bad[:5]) + more
            e.add("environment.libs", (f"{shown} is not a pip requirement" if len(bad) == 1 else
                                       f"{len(bad)} lines are not pip requirements: {shown}") +
                  ". Put one requirement per line: a package name, optionally with extras, a version and a marker, "
                  "e.g. numpy, torch >= 2.0 or transformers[torch]>=4.40.")
    if env["libs_mode"] == "requirements":
        if not env["requirements_dir"]:
            e.add("environment.requirements_dir", "Enter the container path of requirements.txt (or its folder).")
        elif _path_problem(env["requirements_dir"]):
            e.add("environment.requirements_dir", _path_problem(env["requirements_dir"]))
    if env["code_mode"] == "git" and not env["code_source_id"]:
        e.add("environment.code_source_id", "Choose a code source.")
    if env["code_mode"] == "git" and env["code_branch"] and (problem := branch_problem(env["code_branch"])):
        e.add("environment.code_branch", problem)
    if env["code_mode"] == "git" and env["code_commit"] and not _COMMIT_RE.fullmatch(env["code_commit"]):
        e.add("environment.code_commit", "A commit is its SHA: 7 to 40 hexadecimal characters, e.g. 3f9c2ab.")
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
    elif lingjun and res["bid_method"] not in C.LINGJUN_SPOT_BID_METHODS:
        e.add("resources.bid_method", "Lingjun preemptible resources only support bidding by discount.")
    # A value that did not parse (or was too large) is None with its own message already: not also "missing".
    if res["bid_method"] == "discount":
        if res["spot_discount"] is None:
            if not e.has("resources.spot_discount"):
                e.add("resources.spot_discount", "Choose the maximum discount (10% to 90%).")
        elif res["spot_discount"] not in C.SPOT_DISCOUNTS:
            e.add("resources.spot_discount", "The discount must be one of 10%, 20%, ... 90%.")
    if res["bid_method"] == "price":
        if res["spot_price"] is None:
            if not e.has("resources.spot_price"):
                e.add("resources.spot_price", "Enter the maximum price (CNY per minute).")
        elif res["spot_price"] <= 0:
            e.add("resources.spot_price", "The maximum price must be greater than 0.")
    if (res["resource_type"], res["source"]) in C.NEEDS_USER_VPC:
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
    cpu = role["cpu"]
    if cpu is not None and 0 < cpu < MIN_CPU:
        e.add(f"{p}.cpu", f"The CPU cores must be at least {MIN_CPU} (one millicore, the finest step Kubernetes "
              "takes).")
    elif cpu is not None and cpu > 0 and _decimals(cpu) > CPU_DECIMALS:
        e.add(f"{p}.cpu", f"CPU cores have at most {CPU_DECIMALS} decimals (millicores), e.g. 0.5 or 1.25; "
              f"{_fmt_num(cpu)} is finer than Kubernetes takes.")
    for key, label in (("memory_gib", "The memory"), ("shared_memory_gib", "Shared memory, when set,")):
        if role[key] is not None and 0 < role[key] < MIN_MEMORY_GIB:
            e.add(f"{p}.{key}", f"{label} must be at least {MIN_MEMORY_GIB} GiB (about 1 MiB).")
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
        # ASCII digits only: \d takes "١٠٠٠٠" too, which no port parser reads.
        match = re.fullmatch(r"([0-9]{1,6})(?:-([0-9]{1,6}))?", item)
        if not match:
            problems.append(f"customPortList: '{item[:40]}' is not a port or a start-end range (ASCII digits).")
            continue
        if any(len(port) > 1 and port.startswith("0") for port in match.groups() if port):
            problems.append(f"customPortList: write '{item}' without leading zeros.")
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
        if not isinstance(value, str | dict):
            return ['RayRuntimeEnv must be an object such as {"pip": ["numpy"]} (or its JSON text).']
        return [] if value else ["RayRuntimeEnv must not be empty."]
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
        if len(vpc[key]) > MAX_RESOURCE_ID:
            e.add(f"vpc.{key}", f"{message} It is at most {MAX_RESOURCE_ID} characters.")
        elif vpc[key] and not pattern.fullmatch(vpc[key]):
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


def role_arn_problem(arn: str) -> str | None:
    """Why a text is no RAM role ARN (acs:ram::<account-id>:role/<name>), or None: the one rule for a job's custom
    role and a workspace's role to assume (jobs.portal_forms)."""
    match = _ARN_RE.fullmatch(arn)
    if not match:
        return "A role ARN looks like acs:ram::<account-id>:role/<role-name>."
    if len(match["account"]) > MAX_ACCOUNT_ID_DIGITS:
        return f"The account id in a role ARN is at most {MAX_ACCOUNT_ID_DIGITS} digits (an Alibaba Cloud account id)."
    return None


def _rule_ram_role(n: dict, ctx: Context, e: _Errors) -> None:
    ram = n["ram_role"]
    if ram["mode"] == "custom":
        if not ram["role_arn"]:
            e.add("ram_role.role_arn", "Enter the ARN of the custom role.")
        elif problem := role_arn_problem(ram["role_arn"]):
            e.add("ram_role.role_arn", problem)


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
    if policy.budget_spent:
        e.add("", policy.budget_spent)  # about the workspace, not a field of the job
    if policy.allowed_sources is not None and res["source"] not in policy.allowed_sources:
        allowed = ", ".join(C.SOURCES[s] for s in C.SOURCES if s in policy.allowed_sources) or "none"
        e.add("resources.source", f"The workspace policy only allows these sources: {allowed}.")
    cpu, gpus, nodes = _job_totals(n, ctx)
    if policy.max_nodes is not None and nodes > policy.max_nodes:
        e.add("resources.roles", f"The workspace policy allows at most {policy.max_nodes} nodes per job "
              f"(this job has {nodes}).")
    if policy.max_gpus is not None:
        # A role without an instance type gets "Choose an instance type." at its field: that is the problem, not
        # an unknown GPU count.
        untyped = res["source"] != "quota" and any(not role["instance_type"] for role in res["roles"])
        if gpus is None:
            if not untyped:
                e.add("resources.roles", "The workspace policy limits GPUs, and the GPU count of an instance type "
                      "is unknown.")
        elif gpus > policy.max_gpus:
            e.add("resources.roles", f"The workspace policy allows at most {policy.max_gpus} GPUs per job "
                  f"(this job asks for {gpus}).")
    cap = policy.max_duration_minutes
    if cap is not None:
        # A value below the minimum (0, -1) or too large already has its own message; the cap's would contradict it.
        if res["max_duration"] is None:
            if not e.has("resources.max_duration"):
                # Keyed at the field (JobMaxRunningTimeMinutes in the API), so the message need not name it.
                minutes = "" if _fmt_minutes(cap).endswith(("minute", "minutes")) else f" = {cap} minutes"
                e.add("resources.max_duration", f"Required by this workspace's guardrails (at most "
                      f"{_fmt_minutes(cap)}{minutes}).")
        elif res["max_duration"] > cap:
            e.add("resources.max_duration", f"The workspace policy allows at most {_fmt_minutes(cap)}.")
    image, prefixes = _env(n)["image"], policy.allowed_image_prefixes
    if image and prefixes is not None and not image.startswith(tuple(prefixes)):
        e.add("environment.image", f"The workspace policy only allows images starting with: {', '.join(prefixes)}.")
    values = {key: value for _i, key, value in n["basic"]["tags"]}
    for key in policy.required_tag_keys:
        if key not in values:
            e.add("basic.tags", f"The workspace policy requires the tag '{key}'.")
        elif not values[key].strip():
            e.add("basic.tags", f"The workspace policy requires a value for the tag '{key}'.")


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
