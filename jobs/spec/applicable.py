"""The applicability table: which fields the current choices show (APPLICABLE, ROLE_APPLICABLE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
