"""What the wizard's free-text fields suggest: values this workspace's recent jobs used (images, datasets, storage
paths, code sources, mount paths, instance types, VPC ids, variable names), offered as a <datalist>.

The real console's pickers list what the account has through AI Workspace APIs this console does not call; a
team's own recent jobs are the next best list. Only names and addresses are offered: never an environment
variable's value, a registry credential, a startup command or an advanced setting (places a secret can be).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.forms import TextInput

from jobs.models import Job, Workspace
from jobs.spec import SECRET_PLACEHOLDER

if TYPE_CHECKING:
    from jobs.forms.wizard import Wizard

LIMIT_JOBS = 200  # the newest jobs read: one index walk of job_ws_created, never the whole table
PER_FIELD = 20  # a datalist longer than this is a list nobody reads
MAX_LENGTH = 500  # a value longer than any real image address or path is not worth a page's bytes

# Datalist key -> the section whose template renders it.
SECTIONS = {
    "environment": ("image", "dataset_id", "storage_uri", "mount_path", "code_source_id", "code_branch",
                    "requirements_dir", "env_key"),
    "resources": ("instance_type",),
    "vpc": ("vpc_id", "switch_id", "security_group_id"),
}
# Form field (without its section, or "<list>.<field>" in a row) -> datalist key.
FIELD_KEYS = {
    "environment": {"image": "image", "code_source_id": "code_source_id", "code_branch": "code_branch",
                    "code_mount_path": "mount_path", "requirements_dir": "requirements_dir",
                    "datasets.id": "dataset_id", "datasets.mount_path": "mount_path", "storages.uri": "storage_uri",
                    "storages.mount_path": "mount_path", "envs.key": "env_key"},
    "resources": {"roles.instance_type": "instance_type"},
    "vpc": {"vpc_id": "vpc_id", "switch_id": "switch_id", "security_group_id": "security_group_id"},
}


def recent_values(workspace: Workspace, limit_jobs: int = LIMIT_JOBS, per_field: int = PER_FIELD
                  ) -> dict[str, list[str]]:
    """{datalist key: values}, most recently used first, each once, at most per_field per key, from the bodies of
    the workspace's last limit_jobs jobs (one query, only the body column). Keys without a value are left out."""
    bodies = (Job.objects.filter(workspace=workspace).order_by("-created_at", "-id")
              .values_list("body", flat=True)[:limit_jobs])
    found: dict[str, dict[str, None]] = {}  # dicts as ordered sets
    for body in bodies:
        for key, value in _values(body):
            seen = found.setdefault(key, {})
            if len(seen) < per_field:
                seen[value] = None
    return {key: list(values) for key, values in found.items()}


def _values(body: Any) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of one CreateJob body, in the body's order."""
    if not isinstance(body, Mapping):
        return
    for spec in _dicts(body.get("JobSpecs")):
        yield from _one("image", spec.get("Image"))
        yield from _one("instance_type", spec.get("EcsSpec"))
    for source in _dicts(body.get("DataSources")):
        if source.get("DataSourceId"):
            yield from _one("dataset_id", source.get("DataSourceId"))
        else:
            uri = source.get("Uri")
            if not _has_password(uri):
                yield from _one("storage_uri", uri)
        yield from _one("mount_path", source.get("MountPath"))
    code = body.get("CodeSource")
    if isinstance(code, Mapping):
        yield from _one("code_source_id", code.get("CodeSourceId"))
        yield from _one("code_branch", code.get("Branch"))
        yield from _one("mount_path", code.get("MountPath"))
    yield from _one("requirements_dir", body.get("ThirdpartyLibDir"))
    envs = body.get("Envs")
    if isinstance(envs, Mapping):
        for name in envs:  # names only: a value may be a secret that was never ticked Secret
            yield from _one("env_key", name)
    vpc = body.get("UserVpc")
    if isinstance(vpc, Mapping):
        yield from _one("vpc_id", vpc.get("VpcId"))
        yield from _one("switch_id", vpc.get("SwitchId"))
        yield from _one("security_group_id", vpc.get("SecurityGroupId"))


def _dicts(value: Any) -> list[Mapping]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _one(key: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        text = value.strip()
        if text and len(text) <= MAX_LENGTH and text != SECRET_PLACEHOLDER:
            yield key, text


def _has_password(uri: Any) -> bool:
    """A storage address with credentials in it (scheme://user:password@host/...) is never offered."""
    try:
        return isinstance(uri, str) and urlsplit(uri.strip()).password is not None
    except ValueError:
        return True


def offer(wizard: Wizard, values: Mapping[str, list[str]]) -> dict[str, list[tuple[str, list[str]]]]:
    """Connect the wizard's free-text inputs to the datalists of `values` (a select or a password field is left
    alone) and return what each section template renders: {section: [(key, values), ...]}."""
    for section, keys in FIELD_KEYS.items():
        for name, form_field in wizard.forms[section].fields.items():
            _connect(form_field, keys.get(name), values)
    for list_name, forms in wizard.row_forms.items():
        for form in forms:
            section = form.prefix.split("-", 1)[0]
            for name, form_field in form.fields.items():
                _connect(form_field, FIELD_KEYS.get(section, {}).get(f"{list_name}.{name}"), values)
    return {section: [(key, values[key]) for key in keys if values.get(key)] for section, keys in SECTIONS.items()}


def _connect(form_field, key: str | None, values: Mapping[str, list[str]]) -> None:
    widget = form_field.widget
    if key and values.get(key) and type(widget) is TextInput:
        widget.attrs.update({"list": f"suggest-{key}", "autocomplete": "off"})
