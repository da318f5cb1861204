"""notes(): warnings and hints on the wizard data that do not block submission."""

from __future__ import annotations

from collections.abc import Mapping

from jobs import catalog as C
from jobs.spec.applicable import _env, _res
from jobs.spec.base import DLC_INJECTED, RESERVED_ENVS, Context, _Errors, looks_like_secret
from jobs.spec.norm import _norm
from jobs.spec.rules import _bool_value, _path_problem, undocumented_storage_options

# ---------------------------------------------------------------------------------------------------------
# Notes: warnings and hints that do not block submission.
# ---------------------------------------------------------------------------------------------------------


def notes(sections: Mapping, context: Context | None = None) -> dict[str, list[str]]:
    """Warnings and hints keyed by section path."""
    ctx = context or Context()
    n, _ = _norm(sections)
    out = _Errors()
    env, res, vpc = _env(n), _res(n), n["vpc"]
    lingjun = res["resource_type"] == "lingjun"
    if lingjun and env["image_type"] == "custom":
        out.add("environment.image_type", "With Lingjun resources and a custom image, install the RDMA drivers in "
                "the image to get full use of the RDMA network.")
    for i, d in enumerate(env["datasets"]):
        # The console does not call AIWorkspace ListDatasets, so Context.datasets rarely knows the dataset; then
        # the CPFS rule [004] (an error when the type is known) can only be a reminder.
        known = isinstance((ctx.datasets or {}).get(d["id"]), Mapping)
        if d["id"] and not vpc["vpc_id"] and not known:
            out.add(f"environment.datasets[{i}].id", "If this is a CPFS dataset, set a VPC that matches the CPFS "
                    "file system's VPC; otherwise the job can stay in EnvPreparing for a long time.")
    for i, s in enumerate(env["storages"]):
        label = C.STORAGE_TYPES.get(s["type"], s["type"])
        if s["type"] in ("nas", "extreme_nas"):  # [004] FAQ
            out.add(f"environment.storages[{i}].uri", "The NAS file system needs a mount target (create one in the "
                    "NAS console); without one, CreateJob fails with BadRequest.")
        for key in undocumented_storage_options(s["type"], s["options"]):
            documented = ", ".join(C.STORAGE_OPTION_KEYS.get(s["type"], ())) or "none"
            out.add(f"environment.storages[{i}].options", f"'{key}' is not a documented advanced setting for {label} "
                    f"(documented: {documented}); it is sent as entered.")
    for i, key, value in env["envs"]:
        # Process-critical names (PATH, LD_LIBRARY_PATH, ...) get no note: a custom image may need its own.
        if RESERVED_ENVS.get(key) == DLC_INJECTED:
            out.add(f"environment.envs[{i}].key", f"{key} is set by DLC itself; your value overrides it.")
        if value and i not in env["secret_envs"] and looks_like_secret(key):
            out.add(f"environment.envs[{i}].key", f"{key} looks like a secret, so its value is kept like one: "
                    "encrypted, sent only to DLC, never shown, exported or copied. Tick Secret to hide it here too.")
    settings = res["advanced"] or {}
    if res["framework"] == "Ray" and "RayRuntimeEnv" in settings:
        if env["envs"]:
            out.add("environment.envs", "RayRuntimeEnv is set, so it overrides these environment variables.")
        if env["libs_mode"] != "none":
            out.add("environment.libs_mode", "RayRuntimeEnv is set, so it overrides the third-party libraries.")
    if env["code_mode"] == "upload":
        out.add("environment.code_mode", "The CreateJob API cannot upload local code: the console uploads it to OSS "
                "and mounts it. Git code sources, OSS mounts or a custom image work too.")
    mount = env["code_mount_path"]
    # Only a valid path: the hint would otherwise repeat, as advice, the path the error refuses.
    if env["code_mode"] in ("git", "upload") and mount and not _path_problem(mount) and mount not in env["command"]:
        out.add("environment.command", f"The code is mounted at {mount}; refer to your files through that path, "
                f"e.g. python {mount.rstrip('/')}/train.py.")
    fw = C.FRAMEWORKS.get(res["framework"])
    if fw and not fw.verified and fw.job_type:
        out.add("resources.framework", f"{fw.name} is sent as JobType {fw.job_type}; this mapping and its roles "
                "are not confirmed by the DLC documentation.")
    if res["source"] == "public" and ctx.specs is None:
        out.add("resources.roles", "The instance type catalog is not available, so the public-resource limit "
                f"({C.PUBLIC_MAX_GPUS} GPUs, {C.PUBLIC_MAX_CPUS} CPU cores per job) was not checked.")
    if res["source"] == "spot":
        out.add("resources.source", "Preemptible resources have no availability guarantee: they may not be "
                "available at once and may be reclaimed.")
        if res["bid_method"] == "price":
            out.add("resources.spot_price", "The maximum price must fall within the instance type's market price "
                    "range (CNY per minute); this console cannot check it.")
    if res["idle_resources"] and res["source"] == "quota":
        out.add("resources.idle_resources", "Jobs on idle resources are stopped automatically when the owning quota "
                "needs the resources back.")
    if res["retention"]:
        out.add("resources.retention", "Retained jobs keep consuming resources. Jobs past the retention period are "
                "deleted, and deleted jobs cannot be restored.")
    _advanced_notes(n, ctx, out)
    if not vpc["vpc_id"]:
        # Where a VPC is required (its error says so), a note on running without one would contradict it.
        if (res["resource_type"], res["source"]) not in C.NEEDS_USER_VPC:
            out.add("vpc.vpc_id", "Without a VPC the job uses the public network and gateway, whose bandwidth is "
                    "limited: jobs may run slowly or fail.")
    else:
        out.add("vpc.vpc_id", "The resource group, the OSS dataset storage and the code repository must be in this "
                "VPC, in the same region, with network connectivity.")
        if vpc["switch_id"] and not vpc["extended_cidrs"]:
            out.add("vpc.extended_cidrs", "The API reference asks for all VPC CIDR blocks when a vSwitch is set; "
                    "the documented examples omit them.")
        if vpc["gateway"] == "private" and lingjun:
            out.add("vpc.gateway", "The default route only applies to general computing resources.")
    if n["fault_tolerance"]["enabled"]:
        usage = {"quota": C.AIMASTER_QUOTA_USAGE, "public": f"an {C.AIMASTER_PUBLIC_INSTANCE} instance"}.get(
            res["source"], "extra resources")
        out.add("fault_tolerance.enabled", f"An extra AIMaster instance runs next to the job and uses {usage}.")
    return out.d


def _advanced_notes(n: dict, ctx: Context, out: _Errors) -> None:
    res = _res(n)
    settings = res["advanced"] or {}
    if any(k in settings for k in ("customPortList", "customPortNumPerWorker")) and \
            _bool_value(settings.get("createSvcForAllWorkers")) is not True:
        out.add("resources.advanced", "Custom ports are meant to be used with createSvcForAllWorkers=true.")
    if "customPortList" in settings and res["resource_type"] == "lingjun":
        out.add("resources.advanced", "Lingjun resources have no custom-port feature; customPortList may not "
                "take effect.")
    if _bool_value(settings.get("EnableResourcePreCheck")) is True and res["source"] != "quota":
        out.add("resources.advanced", "EnableResourcePreCheck compares a resource quota's capacity with the roles' "
                "specs; this job uses no quota, so there is nothing to check.")
    # A Lingjun quota is an error already (rules), whatever its generation.
    if _bool_value(settings.get("EnableJumboFrame")) is True and res["source"] == "quota" \
            and res["resource_type"] == "general":
        info = (ctx.quotas or {}).get(res["quota_id"])
        if not isinstance(info, Mapping) or info.get("general_computing_2_0") is None:
            out.add("resources.advanced", "EnableJumboFrame needs a General Computing 2.0 quota; this quota's "
                    "generation is unknown.")
