"""validate(body) for the API: the rules of validate_sections() on inverse(body), reported at wire paths."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jobs import catalog as C
from jobs.spec.base import Context, _Errors, _requirements
from jobs.spec.from_body import _clean_hints, _inverse
from jobs.spec.norm import _norm
from jobs.spec.paths import _layout_of_body, _to_wire
from jobs.spec.rules import _info_value, _resource_kind, _spec_info, validate_sections
from jobs.spec.wire import _DROP, WIRE_SCHEMA, _build, _join, _sanitize

# ---------------------------------------------------------------------------------------------------------
# validate: body -> errors keyed by wire path
# ---------------------------------------------------------------------------------------------------------

# A value the wizard could never send, checked before the rules: its message names the values it may have, and the
# rules' own verdict on it (e.g. "Must be on or off." for the idle-resources switch behind OversoldType) is left out.
_WIRE_CHOICES = (
    (r"Settings\.OversoldType", (C.OVERSOLD_ACCEPT,),
     f"OversoldType is '{C.OVERSOLD_ACCEPT}' (use the quota's idle resources) or left out."),
    (r"Settings\.JobReservedPolicy", (C.JOB_RESERVED_POLICY,),
     f"JobReservedPolicy must be '{C.JOB_RESERVED_POLICY}' and comes with JobReservedMinutes."),
    (r"JobSpecs\[\d+\]\.SpotSpec\.SpotStrategy", (C.SPOT_STRATEGY,),
     f"SpotStrategy must be '{C.SPOT_STRATEGY}'; the bid only takes effect with it."),
    (r"DataSources\[\d+\]\.MountAccess", tuple(C.MOUNT_ACCESS.values()),
     "MountAccess is 'RO' (read-only) or 'RW' (read-write), or left out for the dataset's default."),
    # The wizard's own words for these two (intelligent, public, ...) are no wire values: naming them would send
    # an API caller to a second refusal.
    (r"SchedulingStrategy", tuple(v for v in C.SCHEDULING_POLICIES.values() if v),
     f"SchedulingStrategy is '{C.SCHEDULING_POLICIES['centralized']}' (Centralized) or "
     f"'{C.SCHEDULING_POLICIES['spread']}' (Spread), or left out for Intelligent (the default)."),
    (r"UserVpc\.DefaultRoute", tuple(C.GATEWAY_ROUTES.values()),
     f"DefaultRoute is '{C.GATEWAY_ROUTES['public']}' (public gateway) or '{C.GATEWAY_ROUTES['private']}' "
     "(private gateway), or left out."),
)


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    # Not into the advanced settings: no choice is checked there, and RayRuntimeEnv may nest deeper than recursion.
    if isinstance(value, Mapping) and path != "Settings.AdvancedSettings":
        return [leaf for key, sub in value.items() for leaf in _leaves(sub, _join(path, key))]
    if isinstance(value, list):
        return [leaf for i, sub in enumerate(value) for leaf in _leaves(sub, f"{path}[{i}]")]
    return [(path, value)]


def _check_choices(body: Mapping, e: _Errors) -> None:
    for path, value in _leaves(body):
        for pattern, allowed, message in _WIRE_CHOICES:
            if re.fullmatch(pattern, path) and value not in allowed:
                e.add(path, message)


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any, str]]) -> None:
    """(path, given, rebuilt, message) of each leaf where body a and rebuilt body b differ; b is _DROP where the
    rebuilt body has nothing, a is _DROP where the body has nothing."""
    if isinstance(a, dict) and not a and b is _DROP:  # an empty SpotSpec on a quota job: sent, so never unsaid
        out.append((path, a, b, "This console cannot reproduce this value here; it would be dropped."))
    elif isinstance(a, dict) and (isinstance(b, dict) or b is _DROP):
        other = b if isinstance(b, dict) else {}
        # A map key the form trims (an Envs name " K "): one error at the key as given, not "dropped" + "missing".
        trimmed = {k: k.strip() for k in a if k.strip() != k and k.strip() in other and k.strip() not in a}
        for key in list(a) + [k for k in other if k not in a and k not in trimmed.values()]:
            if key in trimmed:
                out.append((_join(path, key), key, trimmed[key],
                            f"The name {_edges(key)[0].lower() + _edges(key)[1:]}, which the console's form trims: "
                            f"send {json.dumps(trimmed[key])}."))
            elif key in a:
                _diff(a[key], other.get(key, _DROP), _join(path, key), out)
            else:
                out.append((_join(path, key), _DROP, other[key],
                            f"Missing: this console would send {json.dumps(other[key])} here."))
    elif isinstance(a, list) and (isinstance(b, list) or b is _DROP):
        other = b if isinstance(b, list) else []
        for i in range(max(len(a), len(other))):
            if i < len(a):
                _diff(a[i], other[i] if i < len(other) else _DROP, f"{path}[{i}]", out)
            else:
                out.append((f"{path}[{i}]", _DROP, other[i],
                            f"Missing: this console would send {json.dumps(other[i])} here."))
    elif b is _DROP:
        out.append((path, a, b, "This console cannot reproduce this value here; it would be dropped."))
    elif isinstance(a, str) and isinstance(b, str) and a != b and a.strip() == b:
        out.append((path, a, b, f"{_edges(a)}, which the console's form trims: send {json.dumps(b)}."))
    elif isinstance(a, str) and isinstance(b, str) and "\r" in a \
            and a.replace("\r\n", "\n").replace("\r", "\n").strip() == b:
        out.append((path, a, b, "Has CR (\\r) line breaks, which the console turns into LF (a shell takes a CR as part "
                    f"of its line): send {json.dumps(b)}."))
    elif a != b or isinstance(a, bool) != isinstance(b, bool):
        out.append((path, a, b, f"Not in the console's form: it would be sent as {json.dumps(b)}."))


_ROLE_PATH = re.compile(r"JobSpecs\[(?P<i>\d+)\]\.(?P<rest>.+)")


def _explain(path: str, given: Any, rebuilt: Any, body: Mapping) -> str | None:
    """What a difference from the rebuilt body means, when it is one of the console's known constraints; None:
    the difference's own message (trimmed, missing, dropped, sent as ...) says it best."""
    if isinstance(given, str) and isinstance(rebuilt, str) and given.strip() == rebuilt:
        return None  # only the whitespace differs, whatever the field
    role = _ROLE_PATH.fullmatch(path)
    if role:
        return _explain_role(int(role["i"]), role["rest"], given, rebuilt, body)
    if path.startswith("DataSources["):
        sources = [s for s in body.get("DataSources") or [] if isinstance(s, Mapping)]
        kinds = "".join("d" if s.get("DataSourceId") else "s" for s in sources)
        if "sd" in kinds or any(s.get("DataSourceId") and s.get("Uri") for s in sources):
            return "A data source has either DataSourceId (dataset) or Uri (storage); datasets come before storage " \
                   "mounts."
        return None
    if re.fullmatch(r"Settings\.(EnableCPUAffinity|EnableDSWDev|EnableErrorMonitoringInAIMaster|EnableSanityCheck)",
                    path) and given is False:
        return "Send true or leave the setting out."
    if path.startswith("CredentialConfig"):
        config = body.get("CredentialConfig") or {}
        if config.get("EnableCredentialInject") is False and not config.get("CredentialConfigItems"):
            return "For no RAM role leave CredentialConfig out; {\"EnableCredentialInject\": true} is the PAI " \
                   "default role."
        return "The RAM role must be the PAI default role ({\"EnableCredentialInject\": true}) or one custom role " \
               "in the console's CredentialConfig format."
    if path == "ThirdpartyLibDir" and isinstance(given, str) and isinstance(rebuilt, str) \
            and given.rstrip("/").endswith("/requirements.txt"):
        return f"ThirdpartyLibDir is the folder that holds requirements.txt: send {json.dumps(rebuilt)}."
    return None


def _explain_role(i: int, rest: str, given: Any, rebuilt: Any, body: Mapping) -> str | None:
    specs = [s if isinstance(s, Mapping) else {} for s in body.get("JobSpecs") or []]
    first, this = specs[0], specs[i] if i < len(specs) else {}
    part = rest.split(".")[0]
    if i > 0 and part == "Image" and this.get("Image") != first.get("Image"):
        return "Every role must use the same image."
    if i > 0 and part == "ImageConfig" and this.get("ImageConfig") != first.get("ImageConfig"):
        return "Every role must use the same registry credentials."
    if part == "SpotSpec" and "ResourceId" in body:
        return "A bid is only used with preemptible resources."
    if i > 0 and part == "SpotSpec" and this.get("SpotSpec") != first.get("SpotSpec"):
        return "Every role must use the same bid, and spot roles need a SpotSpec."
    if rest == "SpotSpec.SpotStrategy":
        return f"SpotStrategy must be '{C.SPOT_STRATEGY}'; the bid only takes effect with it."
    if rest == "AssignNodeSpec.NodeNames" and isinstance(given, str) and isinstance(rebuilt, str):
        return f"NodeNames is one text of node names separated by commas, without spaces: send {json.dumps(rebuilt)}."
    if part == "AssignNodeSpec":
        return "Node-specific scheduling is on for every role or for none."
    return None


def _libs_one_per_item(body: Mapping) -> dict[str, str]:
    """ThirdpartyLibs items that hold several requirements ("numpy pandas", the wizard's old one-line form): the
    API takes one requirement per item, and what is sent is what was checked, so it says how to split them."""
    libs = body.get("ThirdpartyLibs")
    out = {}
    for i, item in enumerate(libs if isinstance(libs, list) else []):
        parts = _requirements(item) if isinstance(item, str) else []
        if len(parts) > 1:
            out[f"ThirdpartyLibs[{i}]"] = "One requirement per list item: send " + \
                ", ".join(json.dumps(p) for p in parts) + " as separate items."
    return out


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
    paths; a valid body is also exactly what build() makes of it (build(inverse(body, hints)) == body). What is
    checked is sendable(body): the body without its empty values, which is what the caller must store and send.
    """
    ctx = context or Context()
    if not isinstance(body, Mapping):
        return {"": ["The request body must be a JSON object."]}
    e = _Errors()
    clean = _sanitize(body, WIRE_SCHEMA, "", e)
    _check_choices(clean, e)
    hints = _hints_for(clean, ctx)
    sections = _inverse(clean, hints)
    layout = _layout_of_body(clean, hints)
    checked_paths = set(e.d)
    for path, messages in validate_sections(sections, ctx).items():
        target = _to_wire(path, layout)
        if any(target == p or target.startswith((p + ".", p + "[")) or p.startswith(target + ".")
               for p in checked_paths):
            continue  # the type error at (above, or in a member of) this path already explains it
        for message in messages:
            e.add(target, message)
    if not e.d:
        n, _ = _norm(sections)
        rebuilt = _build(n, None, "real")
        differences: list[tuple[str, Any, Any, str]] = []
        _diff(clean, rebuilt, "", differences)
        split = _libs_one_per_item(clean)
        for path, given, made, message in differences:
            if split and path.startswith("ThirdpartyLibs["):
                continue  # the items after a split one only differ by its split
            e.add(path, _explain(path, given, made, clean) or message)
        for path, message in split.items():
            e.add(path, message)
    return e.d
