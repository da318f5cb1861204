"""validate(body) for the API: the rules of validate_sections() on inverse(body), reported at wire paths."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jobs import catalog as C
from jobs.spec.base import Context, _Errors
from jobs.spec.from_body import _clean_hints, _inverse
from jobs.spec.norm import _norm
from jobs.spec.paths import _layout_of_body, _to_wire
from jobs.spec.rules import _info_value, _resource_kind, _spec_info, validate_sections
from jobs.spec.wire import _DROP, WIRE_SCHEMA, _build, _join, _sanitize

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
    elif isinstance(a, str) and isinstance(b, str) and a != b and a.strip() == b:
        out.append((path, f"{_edges(a)}, which the console's form trims: send {json.dumps(b)}."))
    elif a != b or isinstance(a, bool) != isinstance(b, bool):
        out.append((path, f"Not in the console's form: it would be sent as {json.dumps(b)}."))


def _edges(text: str) -> str:
    """What surrounds a text that the wizard trims, in words ("Ends with a line break")."""
    def named(chars: str) -> str:
        kinds = dict.fromkeys("a line break" if c in "\r\n" else "a tab" if c == "\t" else "a space"
                              for c in chars)
        return " and ".join(kinds)

    stripped = text.strip()
    head = text[:len(text) - len(text.lstrip())] if stripped else ""
    tail = text[len(text.rstrip()):] if stripped else text
    parts = ([f"starts with {named(head)}"] if head else []) + ([f"ends with {named(tail)}"] if tail else [])
    return " and ".join(parts).capitalize() if stripped else f"Only whitespace ({named(text)})"


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
