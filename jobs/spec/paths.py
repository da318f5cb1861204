"""Paths: section path ("resources.roles[0].count") <-> wire path ("JobSpecs[0].PodCount")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobs.spec.applicable import _env, _res
from jobs.spec.from_body import _classify_sources
from jobs.spec.norm import _norm

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
    envs: list[str] = field(default_factory=list)  # the Envs names, by row
    tags: list[str] = field(default_factory=list)  # the Settings.Tags keys, by row


def _layout_of_sections(sections: Mapping | None) -> _Layout:
    n, _ = _norm(sections or {})
    env = _env(n)
    nd, ns = len(env["datasets"]), len(env["storages"])
    code = nd + ns if env["code_mode"] == "upload" else None
    return _Layout(list(range(nd)), list(range(nd, nd + ns)), code, _res(n)["source"],
                   _row_keys(env["envs"]), _row_keys(n["basic"]["tags"]))


def _row_keys(rows: list) -> list[str]:
    # Rows are (index, key, value) with the index of the row as given (empty rows are skipped).
    keys = [""] * (max((row[0] for row in rows), default=-1) + 1)
    for i, key, _value in rows:
        keys[i] = key
    return keys


def _layout_of_body(body: Mapping, hints: Mapping) -> _Layout:
    datasets, storages, code = _classify_sources(body, hints)
    source = "quota" if "ResourceId" in body else \
        ("spot" if any(isinstance(s, Mapping) and "SpotSpec" in s for s in body.get("JobSpecs") or []) else "public")
    envs, tags = body.get("Envs"), (body.get("Settings") or {}).get("Tags")
    return _Layout(datasets, storages, code, source, list(envs) if isinstance(envs, Mapping) else [],
                   list(tags) if isinstance(tags, Mapping) else [])


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
        # A variable's or a tag's error names it: Envs.9BAD, Settings.Tags.bad key.
        if rows in ("basic.tags", "environment.envs"):
            wire, keys = ("Settings.Tags", layout.tags) if rows == "basic.tags" else ("Envs", layout.envs)
            return f"{wire}.{keys[i]}" if i < len(keys) and keys[i] else wire
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
