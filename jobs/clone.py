"""Clone and edit-and-resubmit: what a new job takes from an existing one, field by field.

POLICY is the one table. Every wizard field (spec.FIELDS, spec.ROW_FIELDS) and the few values inside
fields that need their own treatment have exactly one entry:

- copy: the clone starts with the source's value.
- reset: the clone gets a fresh value (a unique name, its own submission tag, ports a running source may
  still hold, the target workspace).
- re-prompt: a secret. Never copied, never sent to the page; the page says it must be typed again.

Edit and resubmit (a job whose submission failed) uses the same table but keeps the name and the ports:
the failed job never ran, so nothing it holds can clash.

A source started from a template (jobs.templates_lib.linked) binds its clone and edit to the template's locks; a
locked field the source does not match (it predates the lock) takes the template's value, listed with the resets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobs import dlc, export, secretbox, spec, tags, templates_lib
from jobs.forms import environment
from jobs.forms import wizard as glue
from jobs.policies import format_minutes

COPY, RESET, REPROMPT = "copy", "reset", "re-prompt"
NAME_RESET = "Job name"  # the note of Prefill.resets about the name

POLICY: dict[str, tuple[str, str]] = {
    # Basic information
    "basic.name": (RESET, "gets a unique -copy suffix, so the two jobs can be told apart"),
    "basic.description": (COPY, ""),
    "basic.workspace_id": (RESET, "the workspace the clone is created in"),
    "basic.tags": (COPY, ""),
    "basic.tags[].key": (COPY, ""),
    "basic.tags[].value": (COPY, ""),
    f"basic.tags.{dlc.IDEMPOTENCY_TAG_KEY}": (RESET, "each job gets its own submission tag (exactly-once)"),
    # Environment
    "environment.image_type": (COPY, ""),
    "environment.image": (COPY, ""),
    "environment.registry_username": (COPY, ""),
    "environment.registry_password": (REPROMPT, "registry password"),
    "environment.datasets": (COPY, ""),
    "environment.datasets[].kind": (COPY, ""),
    "environment.datasets[].id": (COPY, ""),
    "environment.datasets[].version": (COPY, ""),
    "environment.datasets[].read_only": (COPY, ""),
    "environment.datasets[].mount_path": (COPY, ""),
    "environment.storages": (COPY, ""),
    "environment.storages[].type": (COPY, ""),
    "environment.storages[].uri": (COPY, ""),
    "environment.storages[].mount_path": (COPY, ""),
    "environment.storages[].options": (COPY, ""),
    "environment.command": (COPY, ""),
    "environment.envs": (COPY, ""),
    "environment.envs[].key": (COPY, ""),
    "environment.envs[].value": (COPY, "a variable ticked Secret (or named like one) is re-prompted instead"),
    "environment.envs[].secret": (COPY, ""),
    "environment.envs.secret_value": (REPROMPT, "value of"),
    "environment.libs_mode": (COPY, ""),
    "environment.libs": (COPY, ""),
    "environment.requirements_dir": (COPY, ""),
    "environment.code_mode": (COPY, ""),
    "environment.code_source_id": (COPY, ""),
    "environment.code_branch": (COPY, ""),
    "environment.code_commit": (COPY, ""),
    "environment.code_mount_path": (COPY, ""),
    "environment.code_upload_uri": (COPY, ""),
    # Resources
    "resources.resource_type": (COPY, ""),
    "resources.source": (COPY, ""),
    "resources.quota_id": (COPY, ""),
    "resources.priority": (COPY, ""),
    "resources.framework": (COPY, ""),
    "resources.roles": (COPY, ""),
    "resources.roles[].role": (COPY, ""),
    "resources.roles[].count": (COPY, ""),
    "resources.roles[].instance_type": (COPY, ""),
    "resources.roles[].cpu": (COPY, ""),
    "resources.roles[].gpu": (COPY, ""),
    "resources.roles[].memory_gib": (COPY, ""),
    "resources.roles[].shared_memory_gib": (COPY, ""),
    "resources.roles[].node_names": (COPY, ""),
    "resources.node_scheduling": (COPY, ""),
    "resources.idle_resources": (COPY, ""),
    "resources.cpu_affinity": (COPY, ""),
    "resources.scheduling_policy": (COPY, ""),
    "resources.bid_method": (COPY, ""),
    "resources.spot_discount": (COPY, ""),
    "resources.spot_price": (COPY, ""),
    "resources.max_duration": (COPY, ""),
    "resources.max_duration_unit": (COPY, ""),
    "resources.retention": (COPY, ""),
    "resources.retention_unit": (COPY, ""),
    "resources.dsw": (COPY, ""),
    "resources.advanced": (COPY, ""),
    "resources.advanced.customPortList": (RESET, "fixed ports the source job may still hold; DLC then exposes "
                                                 "only port 23456 on the master unless you set ports again"),
    "resources.advanced.RayRedisPassword": (REPROMPT, "RayRedisPassword (advanced framework configuration)"),
    # Any other key named like a secret (e.g. WandbApiKey, HfToken in a job imported from DLC): dropped, not masked,
    # as nothing would put a masked value back at submit.
    "resources.advanced.secret_named": (REPROMPT, "(advanced framework configuration)"),
    # VPC
    "vpc.vpc_id": (COPY, ""),
    "vpc.switch_id": (COPY, ""),
    "vpc.security_group_id": (COPY, ""),
    "vpc.extended_cidrs": (COPY, ""),
    "vpc.gateway": (COPY, ""),
    # Fault tolerance and diagnosis
    "fault_tolerance.enabled": (COPY, ""),
    "fault_tolerance.args": (COPY, ""),
    "fault_tolerance.sanity_check": (COPY, ""),
    "fault_tolerance.sanity_args": (COPY, ""),
    # RAM role
    "ram_role.mode": (COPY, ""),
    "ram_role.role_arn": (COPY, ""),
    # The Job row itself
    "job.idempotency_tag": (RESET, "a new Job row gets a new tag"),
    "job.run_after": (RESET, "a clone waits for no job unless Run after names one (the wizard's ?run_after=<id>)"),
    # Notes (jobs.notes) are about the run they were written on: neither a clone nor a config export takes them.
    "job.notes": (RESET, "a clone starts with no notes: they are about the source's run"),
}

# Reset in a clone but kept by edit and resubmit (the failed source never ran).
_CLONE_ONLY = frozenset({"basic.name", "resources.advanced.customPortList"})


def policy(path: str) -> str:
    return POLICY[path][0]


def copy_base(name: str) -> str:
    """The name without a -copy / -copy-N suffix: every copy of a copy counts up from the same base."""
    return re.sub(r"-copy(-\d+)?$", "", name) or "job"


def copy_name(name: str, taken: Iterable[str]) -> str:
    """`name-copy`, `name-copy-2`, ... unique among taken, within the 256-character name limit."""
    from jobs import catalog as C

    taken = set(taken)
    base = copy_base(name)
    n = 1
    while True:
        suffix = "-copy" if n == 1 else f"-copy-{n}"
        candidate = base[: C.MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1


@dataclass
class Prefill:
    """A clone's starting point: the sections, and what the page must tell the user about them."""

    sections: dict
    source_sections: dict
    resets: list[tuple[str, str, str]] = field(default_factory=list)  # (what, from, to / why)
    reprompts: list[tuple[str, str]] = field(default_factory=list)  # (field name, what)
    not_copied: list[str] = field(default_factory=list)  # wire paths of the source the wizard cannot express
    # Edit and resubmit: secret variables whose sealed value the failed job still holds (kept unless retyped).
    kept_secrets: list[tuple[str, str]] = field(default_factory=list)  # (field name, variable)
    # (template, version) the source started from (templates_lib.linked): its locks bind the clone as they bound it.
    template: tuple[Any, Any] | None = None

    def rename(self, name: str) -> None:
        """Give the clone another name (the sweep's copy name, the name the page started with): the name field
        and the policy's note about it must say the same."""
        self.sections["basic"]["name"] = name
        self.resets = [(what, before, name if what == NAME_RESET else after)
                       for what, before, after in self.resets]


def source_hints(body: Mapping, hints: Mapping | None, context: spec.Context | None = None) -> dict:
    """A job's console-only choices. A job created elsewhere (imported: no hints) gets what spec infers from the
    body and the workspace's instance types, exactly as spec.validate() does, so a Lingjun job stays Lingjun."""
    context = context or spec.Context()
    # spec has no public name for its inference yet (see the report); it is the one used by validate().
    return spec.infer_hints(body, context, hints)


def prefill(job, *, taken_names: Iterable[str] = (), workspace_id: str = "", edit: bool = False,
            context: spec.Context | None = None, keep_sealed: bool = False) -> Prefill:
    """Sections for a clone (or an edit) of job, with POLICY applied. keep_sealed: an edit by the job's owner,
    which may reuse the job's still-sealed secret variables (anyone else must type them)."""
    hints = source_hints(job.body or {}, job.hints, context)
    # strip_secrets: a variable named like a secret but not ticked Secret is not copied in plain text either.
    body = spec.strip_secrets(job.body or {})
    source = spec.inverse(body, hints)
    sections = spec.inverse(body, hints)
    result = Prefill(sections, source)
    basic, env, res = sections["basic"], sections["environment"], sections["resources"]
    hints_secrets = set((job.hints or {}).get("secrets") or ())

    if not edit:
        basic["name"] = copy_name(source["basic"]["name"], taken_names)
        result.resets.append((NAME_RESET, source["basic"]["name"], basic["name"]))
    basic["workspace_id"] = workspace_id
    kept = [t for t in basic["tags"] if not tags.is_reserved(t.get("key"))]
    if len(kept) != len(basic["tags"]):
        result.resets.append(("Tag " + dlc.IDEMPOTENCY_TAG_KEY, "the source's", POLICY[
            f"basic.tags.{dlc.IDEMPOTENCY_TAG_KEY}"][1]))
    basic["tags"] = kept

    result.template = templates_lib.linked(job) if getattr(job, "pk", None) else None
    if result.template:  # before the secrets below: a locked list of variables re-prompts the template's secrets
        result.resets.extend(templates_lib.impose(*result.template, sections))

    if env.get("registry_password") or "registry_password" in hints_secrets:
        result.reprompts.append((glue.PASSWORD, POLICY["environment.registry_password"][1]))
    env["registry_password"] = ""

    # A failed job whose secrets are still sealed (retries ran out) lends them to its edit; never to a clone.
    sealed = kept_envs(job) if edit and keep_sealed else {}
    for i, row in enumerate(env["envs"]):
        if row.get("secret"):
            row["value"] = ""
            name = environment.secret_value_name(f"environment-envs-{i}", row["key"])
            if row["key"] in sealed:
                result.kept_secrets.append((name, row["key"]))
                continue
            result.reprompts.append((environment.secret_value_name(f"environment-envs-{i}", row["key"]),
                                     f"{POLICY['environment.envs.secret_value'][1]} {row['key']}"))

    dropped = export.drop_secret_advanced(res)
    export.drop_secret_advanced(source["resources"])  # the diff quotes the source's values: not these
    if dropped:
        # One entry for all of them: the page gives each entry a note at the field.
        result.reprompts.append(("resources-advanced",
                                 f"{' and '.join(sorted(dropped))} {POLICY['resources.advanced.secret_named'][1]}"))
    advanced, _ = spec.parse_advanced(res.get("advanced"))
    if advanced:
        if "RayRedisPassword" in advanced:
            advanced["RayRedisPassword"] = spec.SECRET_PLACEHOLDER
            result.reprompts.append(("resources-advanced", POLICY["resources.advanced.RayRedisPassword"][1]))
        if "customPortList" in advanced and not edit:
            result.resets.append(("customPortList", str(advanced.pop("customPortList")),
                                  POLICY["resources.advanced.customPortList"][1]))
        res["advanced"] = spec.format_advanced(advanced) if advanced else ""
    # An older job (or one from before the workspace's cap) may have no maximum duration: the cap makes it
    # required, and the clone gets the same default a new job gets rather than a refusal.
    cap_policy = (context or spec.Context()).policy
    minutes = spec.fill_duration(res, cap_policy)
    if minutes is not None:
        why = ("set to the workspace's cap" if minutes == cap_policy.max_duration_minutes
               else "the console's default, within the workspace's cap")
        result.resets.append(("Maximum duration", "empty (no limit)", f"{format_minutes(minutes)}: {why}"))
    if getattr(job, "run_after_id", None):
        result.resets.append(("Run after", f"job {job.run_after_id}", POLICY["job.run_after"][1]))
    result.not_copied = _not_copied(job, hints)
    return result


def kept_envs(job) -> dict[str, str]:
    """{NAME: value} of the secret variables sealed with a job (empty once DLC has it or its submit failed)."""
    secrets = secretbox.unseal(job.sealed_secrets) if getattr(job, "sealed_secrets", "") else {}
    prefix = spec.SECRET_ENV_PREFIX
    return {k[len(prefix):]: v for k, v in secrets.items() if k.startswith(prefix) and isinstance(v, str)}


def _not_copied(job, hints: Mapping) -> list[str]:
    """Wire paths of the source body that the wizard cannot carry over (say so rather than drop silently)."""
    # Its submission tag is reset (POLICY), not lost; nor is a Settings that held only that tag.
    body = tags.without_reserved(spec.strip_secrets(job.body or {}))
    rebuilt = spec.build(spec.inverse(body, hints), workspace_id=body.get("WorkspaceId") or None)
    lost: list[str] = []
    _compare(body, rebuilt, "", lost)
    return lost


def _compare(a: Any, b: Any, path: str, lost: list[str]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key, value in a.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in b:
                if value not in (None, "", [], {}):
                    lost.append(sub)
            else:
                _compare(value, b[key], sub, lost)
    elif isinstance(a, list) and isinstance(b, list):
        for i, value in enumerate(a):
            if i >= len(b):
                lost.append(f"{path}[{i}]")
            else:
                _compare(value, b[i], f"{path}[{i}]", lost)
    elif a != b:
        lost.append(path)


# --- diff: what the user changed, against the source job ---------------------------------------------------


@dataclass
class Change:
    section: str
    label: str
    before: str
    after: str


_KEYED_LISTS = {"tags": "Tag", "envs": "Variable"}  # rows that are a map: compare by key, not by position


def _keyed(data: Mapping[str, str], section: str, name: str) -> dict[str, str]:
    rows: dict[str, str] = {}
    for i in range(glue.MAX_ROWS):
        key = data.get(f"{section}-{name}-{i}-key")
        if key is None:
            break
        if key or data.get(f"{section}-{name}-{i}-value"):
            rows[key] = data.get(f"{section}-{name}-{i}-value", "")
    return rows


def changes(baseline: Mapping, current: Mapping, source: Mapping, label=None) -> list[Change]:
    """Field-level differences between the clone's starting point and what the form holds now, shown as
    source value -> new value, in the console's section order. Secrets are never part of a diff."""
    label = label or glue.field_label
    before, after, origin = (glue.mask(glue.sections_to_data(spec.prune_inapplicable(s)))
                             for s in (baseline, current, source))
    out: list[Change] = []
    for module in glue.MODULES:
        section, title = module.SECTION, module.TITLE
        names = [f"{section}-{n}" for n in module.Form.base_fields if f"{section}-{n}" != glue.PASSWORD]
        for name in names:
            if before.get(name, "") != after.get(name, ""):
                out.append(Change(title, label(name), origin.get(name, ""), after.get(name, "")))
        for list_name, row_form in module.ROWS.items():
            if list_name in _KEYED_LISTS:
                old, new = _keyed(before, section, list_name), _keyed(after, section, list_name)
                src = _keyed(origin, section, list_name)
                what = _KEYED_LISTS[list_name]
                for key in [*old, *(k for k in new if k not in old)]:
                    if old.get(key) != new.get(key):
                        out.append(Change(title, f"{what} {key}", src.get(key, "(not set)") if key in old
                                          else "(not set)", new.get(key, "(removed)")))
                continue
            for i in range(glue.MAX_ROWS):
                prefix = f"{section}-{list_name}-{i}-"
                had = any(k.startswith(prefix) for k in before)
                has = any(k.startswith(prefix) for k in after)
                if not had and not has:
                    break
                row = f"{module.ROW_LABELS[list_name]} {i + 1}"
                if had and not has:
                    out.append(Change(title, row, "present", "(removed)"))
                elif has and not had:
                    out.append(Change(title, row, "(not set)", "added"))
                else:
                    for name in row_form.base_fields:
                        key = prefix + name
                        if before.get(key, "") != after.get(key, ""):
                            out.append(Change(title, label(key), origin.get(key, ""), after.get(key, "")))
    return out
