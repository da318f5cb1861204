"""Helpers for forms: defaults, hidden and inapplicable fields, inferred hints, secrets out and back in."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping

from jobs.catalog import DURATION_UNITS
from jobs.spec.applicable import APPLICABLE, ROLE_APPLICABLE
from jobs.spec.base import (
    FIELDS,
    ROW_FIELDS,
    SECRET_ENV_PREFIX,
    SECRET_PLACEHOLDER,
    Context,
    Policy,
    _secret,
    _split_minutes,
)
from jobs.spec.body_check import _hints_for
from jobs.spec.norm import _norm, format_advanced, parse_advanced

# ---------------------------------------------------------------------------------------------------------
# Helpers for forms
# ---------------------------------------------------------------------------------------------------------


def duration_default(policy: Policy | None) -> int | None:
    """The minutes a form (a new wizard job, a clone in the wizard or the API) puts in an empty maximum duration:
    None when the workspace has no cap (empty is then valid, no limit); else the console's default, lowered to the
    cap, since the cap makes the field required and the console's default may exceed it."""
    cap = (policy or Policy()).max_duration_minutes
    if cap is None or cap <= 0:
        return None
    return min(FIELDS["resources"]["max_duration"] * DURATION_UNITS[FIELDS["resources"]["max_duration_unit"]], cap)


def fill_duration(resources: dict, policy: Policy | None) -> int | None:
    """Put duration_default() in resources' maximum duration when it is empty; the minutes put, or None."""
    minutes = duration_default(policy)
    if minutes is None or resources.get("max_duration") not in (None, ""):
        return None
    resources["max_duration"], resources["max_duration_unit"] = _split_minutes(
        minutes, resources.get("max_duration_unit"))
    return minutes


def defaults(context: Context | None = None) -> dict:
    """A fresh wizard: console defaults, one Worker role, the policy's default tags."""
    ctx = context or Context()
    sections = copy.deepcopy(FIELDS)
    policy = ctx.policy or Policy()
    sections["basic"]["tags"] = [{"key": k, "value": v} for k, v in policy.default_tags.items()]
    sections["resources"]["roles"] = [dict(ROW_FIELDS["roles"])]
    res = sections["resources"]
    res["max_duration"] = None
    if fill_duration(res, policy) is None:
        res["max_duration"] = FIELDS["resources"]["max_duration"]
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
    """The secret values of the wizard data by name ("registry_password", "RayRedisPassword", "env:<NAME>" for a
    variable ticked Secret), for storing them encrypted next to the job; placeholders are not secrets."""
    n, _ = _norm(sections)
    env = n["environment"]
    found = {"registry_password": env["registry_password"],
             "RayRedisPassword": _secret((n["resources"]["advanced"] or {}).get("RayRedisPassword"))}
    found.update({SECRET_ENV_PREFIX + key: value for i, key, value in env["envs"] if i in env["secret_envs"] and key})
    return {k: v for k, v in found.items() if v and v != SECRET_PLACEHOLDER}


def fill_secrets(sections: Mapping, secrets: Mapping[str, str]) -> dict:
    """A copy of the wizard data with SECRET_PLACEHOLDER replaced by the stored secrets (edit and resubmit)."""
    out = copy.deepcopy(dict(sections)) if isinstance(sections, Mapping) else {}
    env, res = out.get("environment"), out.get("resources")
    if isinstance(env, dict) and env.get("registry_password") == SECRET_PLACEHOLDER and "registry_password" in secrets:
        env["registry_password"] = secrets["registry_password"]
    rows = env.get("envs") if isinstance(env, dict) else None
    for row in rows if isinstance(rows, list) else []:
        name = SECRET_ENV_PREFIX + str(row.get("key") or "").strip() if isinstance(row, dict) else ""
        if name in secrets and row.get("value") == SECRET_PLACEHOLDER:
            row["value"], row["secret"] = secrets[name], True
    if isinstance(res, dict) and "RayRedisPassword" in secrets:
        advanced, _message = parse_advanced(res.get("advanced"))
        if advanced and advanced.get("RayRedisPassword") == SECRET_PLACEHOLDER:
            advanced["RayRedisPassword"] = secrets["RayRedisPassword"]
            res["advanced"] = format_advanced(advanced)
    return out
