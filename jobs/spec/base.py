"""Shared parts of the CreateJob spec (jobs/spec/__init__.py has the field table and the public API): the fields and
their defaults, the secret paths, Context and Policy, the error sink and value parsing."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

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
    "envs": {"key": "", "value": "", "secret": False},
    "datasets": {"kind": "custom", "id": "", "version": "", "read_only": None, "mount_path": ""},
    "storages": {"type": "oss", "uri": "", "mount_path": "", "options": ""},
    "roles": {"role": "Worker", "count": 1, "instance_type": "", "cpu": None, "gpu": None, "memory_gib": None,
              "shared_memory_gib": None, "node_names": ""},
}

# Stands for a secret kept outside the body (inverse() puts it back when the hints say a secret exists).
SECRET_PLACEHOLDER = "********"
# Wire paths of secrets: build() leaves them out unless include_secrets=True; strip_secrets() removes them.
SECRET_PATHS = ("JobSpecs[*].ImageConfig.Password", "Settings.AdvancedSettings.RayRedisPassword")
# A secret environment variable stays in the body as SECRET_PLACEHOLDER (Envs.<NAME>), so every view of the body
# says that it is set; its value is a sealed secret under this prefix + NAME, put back at submit.
SECRET_ENV_PREFIX = "env:"

# Environment variable names a job's own settings must not take: ONE list, each name with why it is reserved.
# - DLC_INJECTED: DLC sets it in every pod, or the PyTorch launcher that DLC's documented command runs sets it in
#   every process. A sweep parameter named so is refused (RANK = 0, 1 would override the rank DLC gives each pod);
#   an ordinary variable only gets a warning (soft_rules.notes), since overriding one can be deliberate.
#   Documented [000][004]: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (the startup command's example), JOB_NAME
#   (createSvcForAllWorkers), CUSTOM_PORTS (customPortNumPerWorker). Inferred [inf]: TF_CONFIG (the seeds' "common
#   TensorFlow environment variables", which name none; the TF operator's variable), LOCAL_RANK and
#   LOCAL_WORLD_SIZE (set per process by torch.distributed.launch / torchrun, which the seeds' example runs).
# - PROCESS_CRITICAL: the pod's shell and Python need it as the image set it. A sweep parameter named so is refused
#   (PATH = 1, 2 left every trial without `sh`); an ordinary variable may set it with no note (a custom image can
#   legitimately need its own PATH or LD_LIBRARY_PATH). Ours [inf], not DLC's: see docs/spec-notes.md.
#   CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES: the GPU runtime sets them to the pod's GPUs; a per-trial value
#   hides or misnumbers them. PYTHONPATH is not here: a sweep over code variants may set it, and a wrong value
#   fails the trial's import plainly, not the pod's shell or GPUs.
DLC_INJECTED, PROCESS_CRITICAL = "set by DLC in every pod", "needed by the pod's shell, Python or GPUs"
RESERVED_ENVS: dict[str, str] = {
    **dict.fromkeys(("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "JOB_NAME", "CUSTOM_PORTS", "TF_CONFIG",
                     "LOCAL_RANK", "LOCAL_WORLD_SIZE"), DLC_INJECTED),
    **dict.fromkeys(("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "HOME", "SHELL", "PYTHONHOME", "CUDA_VISIBLE_DEVICES",
                     "NVIDIA_VISIBLE_DEVICES"), PROCESS_CRITICAL),
}

# Upper bounds of a role's numbers and of durations: ours, not DLC's (no document gives one), set above any
# machine or job there is, so only a typo or garbage reaches them (docs/spec-notes.md).
MAX_POD_COUNT = 10_000  # nodes per role
MAX_CPU = 1024  # cores per node
MAX_GPU = 16  # GPUs per node
MAX_MEMORY_GIB = 4096  # memory (and shared memory) per node
MAX_DURATION_DAYS = 3650  # maximum duration and retention

# ONE rule says which names hold secrets: what it names is sealed at submit and import (never in the database in
# plain text), replaced by SECRET_PLACEHOLDER in exports, clones and API output, hidden on pages and fingerprinted
# to mask in logs. It is wide, as the job page's masking was, because a miss leaks a value while a false match
# only costs typing the value again in a clone. A name matches by its segments (split at "_", "-", "." and
# camelCase): one that is or ends in pass/token(s)/auth (DB_PASS, HFTOKEN, OAUTH), a lone "key" (SSH_KEY,
# WANDB_API_KEY), passphrase, creds, Authorization; or by words run together anywhere in it (DBPASSWORD,
# MYAPIKEY, AWS_SECRET_ACCESS_KEY, CREDENTIALS, PASSCODE, TS_AUTHKEY). Still by segment, so KEYBOARD,
# MONKEY_COUNT, TOKENIZERS_PARALLELISM, PASSPORT_DIR and PWD (the working directory) stay plain.
_SECRET_SEGMENT = re.compile(r"[a-z]*(pass|tokens?|auth)|passphrase|authori[sz]ation|key|creds?")
_SECRET_RUN_TOGETHER = re.compile(r"passw(or)?d|passcode|secret|credential|(api|access|private|auth)[_-]?key")
_NAME_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def looks_like_secret(name: object) -> bool:
    """True when a name (an env var, an advanced setting, a detail or a JSON key) says its value is a secret."""
    text = str(name)
    return bool(_SECRET_RUN_TOGETHER.search(text.lower())) or \
        any(_SECRET_SEGMENT.fullmatch(w.lower()) for w in _NAME_SEGMENT.findall(text))


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
    # The message refusing every new job while this month's budget is spent (jobs.costs.refusal); None: allowed.
    budget_spent: str | None = None


@dataclass(frozen=True)
class Context:
    """What a rule needs beyond the wizard data or the body."""

    region: str = "cn-hangzhou"
    # ListEcsSpecs catalog: {instance_type: {cpu, gpu, memory, resource_type "ECS"|"Lingjun"}} (PascalCase
    # keys of EcsSpec.to_map() work too). None = unknown: public-resource limits become a note.
    specs: Mapping[str, Mapping[str, Any]] | None = None
    # {quota_id: {"resource_type": "general"|"lingjun", "general_computing_2_0": bool}}
    quotas: Mapping[str, Mapping[str, Any]] | None = None
    # {dataset_id: {"type": "CPFS"|..., "uri": ..., "vpc_id": ...}} from ListDatasets, for the CPFS-needs-its-VPC
    # rule (vpc_id: the CPFS file system's VPC, when known).
    datasets: Mapping[str, Mapping[str, Any]] | None = None
    hints: Mapping[str, Any] | None = None  # used by validate(body): see hints_from_sections()
    policy: Policy | None = None  # None = no guardrails
    reserved_tags: int = 0  # tag slots the console uses itself (e.g. the idempotency tag)


# ---------------------------------------------------------------------------------------------------------
# Storable values: what may enter the console at all (the wizard's fields, a JSON body, the advanced settings).
# ---------------------------------------------------------------------------------------------------------

# Levels of objects and lists a JSON value may nest (the advanced settings, e.g. RayRuntimeEnv): far above any
# real runtime env, and far below where copy.deepcopy, json.dumps and the database hit Python's recursion limit.
MAX_NESTING = 32


def text_problem(text: str) -> str | None:
    """Why a text cannot be stored or sent, or None. PostgreSQL refuses NUL (U+0000) in text and jsonb, and a pod's
    command line and environment end a string at it; a lone surrogate (JSON's "\\ud800") is no Unicode text, so
    it cannot be encoded as UTF-8 for the database, a page or DLC."""
    if "\x00" in text:
        return "Must not contain a NUL character (\\u0000): it cannot be stored or sent."
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Must not contain a lone surrogate (such as \\ud800): it is not Unicode text."
    return None


def storable_text(text: str) -> str:
    """The text without what text_problem() refuses (NUL dropped, a lone surrogate as U+FFFD): what the rules and
    their messages see once the problem is reported, so no later message or body carries it."""
    if text_problem(text) is None:
        return text
    return re.sub("[\ud800-\udfff]", "\ufffd", text.replace("\x00", ""))


def storable_problems(value: Any, path: str = "", max_depth: int = MAX_NESTING,
                      limit: int = 10) -> list[tuple[str, str]]:
    """(path, message) for each text, key or number in a JSON-like value that cannot be stored or sent: NUL or a lone
    surrogate (text_problem), NaN or Infinity (no JSON number), nesting deeper than max_depth. Paths continue `path`
    as the wire paths do ("Envs.A", "JobSpecs[0].Image"); a bad key is reported at its object, without the key.
    Iterative, so a value nested thousands of levels deep is reported, not a RecursionError; at most `limit`."""
    if isinstance(value, str):  # the common case, a field's text, without the walk
        problem = text_problem(value)
        return [(path, problem)] if problem else []
    if value is None or isinstance(value, bool | int):
        return []
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack and len(found) < limit:
        item, where, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth >= max_depth:
                found.append((where, f"Nested too deeply: at most {max_depth} levels of objects and lists."))
                continue
            children = []
            for key, child in (item.items() if isinstance(item, Mapping) else enumerate(item)):
                if isinstance(key, str) and (problem := text_problem(key)):
                    found.append((where, "A key " + problem[0].lower() + problem[1:]))
                    continue
                step = f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where else str(key))
                children.append((child, step, depth + 1))
            stack.extend(reversed(children))
        elif isinstance(item, str):
            if problem := text_problem(item):
                found.append((where, problem))
        elif isinstance(item, float) and not math.isfinite(item):
            found.append((where, "Must be a finite number: NaN and Infinity are not JSON."))
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_json(text: str | bytes) -> Any:
    """json.loads without the NaN, Infinity and -Infinity that Python's json accepts and JSON has not: the
    database's JSON check and DLC refuse them. Raises ValueError (and RecursionError when absurdly deep)."""
    return json.loads(text, parse_constant=_no_constant)


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


def _empty_bool_or_int(value: Any) -> tuple[int | None, bool] | None:
    """What _int and _num both answer for an empty value, a bool (never a number here) and an int; None for the
    rest, which each reads its own way."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, True
    if isinstance(value, bool):
        return None, False
    if isinstance(value, int):
        return (value, True) if abs(value) < _BIG else (None, False)
    return None


def _int(value: Any) -> tuple[int | None, bool]:
    """(whole number or None when empty, ok)."""
    if (answer := _empty_bool_or_int(value)) is not None:
        return answer
    if isinstance(value, float):
        return (int(value), True) if value.is_integer() and abs(value) < _BIG else (None, False)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,18}", value.strip()):
        return int(value.strip()), True
    return None, False


def _too_large(value: Any, whole: bool) -> bool:
    """A positive number written correctly but too big for _int / _num, so "too large" and not "not a number"."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value >= _BIG  # NaN compares False
    if not isinstance(value, str):
        return False
    text = value.strip().lstrip("+")
    if whole:
        # Digits only: int() of thousands of digits raises, and more than _BIG's digits is too large anyway.
        return text.isascii() and text.isdigit() and len(text.lstrip("0")) > len(str(_BIG)) - 1
    return bool(_NUMBER_RE.fullmatch(text)) and float(text) >= _BIG


def _num(value: Any) -> tuple[int | float | None, bool]:
    """(finite number or None when empty, ok); integral values come back as int."""
    if (answer := _empty_bool_or_int(value)) is not None:
        return answer
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
    # Plain decimals: repr(1e-07) is "1e-07", which is no Kubernetes quantity once a unit follows ("1e-07Gi").
    if isinstance(value, int):
        return str(value)
    text = repr(value)
    return format(Decimal(text), "f") if "e" in text or "E" in text else text


def _decimals(value: int | float) -> int:
    """How many decimal places a number has as typed (0.25 -> 2, 1e-07 -> 7)."""
    if isinstance(value, int):
        return 0
    return max(0, -int(Decimal(repr(value)).as_tuple().exponent))


def _split_minutes(minutes: Any, preferred: str | None) -> tuple[Any, str]:
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
        return minutes, "minutes"
    if preferred in C.DURATION_UNITS and minutes % C.DURATION_UNITS[preferred] == 0:
        return minutes // C.DURATION_UNITS[preferred], preferred
    for unit in ("days", "hours", "minutes"):
        if minutes % C.DURATION_UNITS[unit] == 0:
            return minutes // C.DURATION_UNITS[unit], unit
    return minutes, "minutes"


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


def _number(section: Mapping, key: str, path: str, e: _Errors, message: str, whole: bool = False,
            high: int | None = None, too_large: str = ""):
    """The field's number or None; `message` when it is not one, `too_large` (if given) when it is above `high` or
    beyond what the parser takes. Such a value becomes None, so no later rule adds its own message about it."""
    raw = section.get(key)
    value, ok = (_int if whole else _num)(raw)
    if too_large and ((not ok and _too_large(raw, whole)) or (ok and value is not None and high is not None
                                                               and value > high)):
        e.add(path, too_large)
        return None
    if not ok:
        e.add(path, message)
    return value


def _is_requirement(text: str) -> bool:
    """Whether text is one pip requirement (PEP 508: a name, optional extras, version specifier, marker)."""
    try:
        Requirement(text)
    except InvalidRequirement:
        return False
    return True


def _requirements(text: str) -> list[str]:
    """The libraries field as typed: one requirement per line, so `torch >= 2.0` (spaces are valid pip syntax) stays
    one. A line that is no requirement but whose words each are (`numpy pandas==2.2`) is the field's older form,
    names separated by spaces, which saved templates and sections still hold. No comma split: a requirement has
    commas of its own (`torch>=2,<3`, `transformers[torch,vision]`)."""
    out: list[str] = []
    for line in text.splitlines():
        line, words = line.strip(), line.split()
        if len(words) > 1 and not _is_requirement(line) and all(map(_is_requirement, words)):
            out.extend(words)
        elif line:
            out.append(line)
    return out


def _names(value: Any) -> list[str]:
    # Lists of names may come as a list or as text separated by commas or whitespace.
    if isinstance(value, list | tuple):
        return [t for t in (_text(v) for v in value) if t]
    return [t for t in re.split(r"[\s,]+", _text(value)) if t]
