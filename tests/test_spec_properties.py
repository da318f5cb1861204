"""Property tests of jobs.spec: valid wizard data round-trips through the body and the official SDK;
garbage never makes validation raise. Pure Python, no Django."""

from __future__ import annotations

import copy
import json
import string

from alibabacloud_pai_dlc20201203.models import CreateJobRequest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import catalog as C
from jobs import spec

SPECS = {
    "ecs.c6.large": {"cpu": 2, "gpu": 0, "memory": 4, "resource_type": "ECS"},
    "ecs.g7.xlarge": {"cpu": 4, "gpu": 0, "memory": 16, "resource_type": "ECS"},
    "ecs.gn6i-c4g1.xlarge": {"Cpu": 4, "Gpu": 1, "Memory": 15, "ResourceType": "ECS"},
    "ml.gu7i.c2m8.1-gu30": {"cpu": 2, "gpu": 1, "memory": 8, "resource_type": "Lingjun"},
    "ml.c2m4": {"cpu": 2, "gpu": 0, "memory": 4, "resource_type": "Lingjun"},
}
QUOTAS = {
    "quota-general": {"resource_type": "general", "general_computing_2_0": True},
    "quota-lingjun": {"resource_type": "lingjun"},
}
DATASETS = {"d-cpfs01": {"type": "CPFS"}}
CONTEXT = spec.Context(region="cn-hangzhou", specs=SPECS, quotas=QUOTAS, datasets=DATASETS)

WORD = st.text(string.ascii_letters + string.digits, min_size=1, max_size=12)
NAME = st.from_regex(r"[A-Za-z0-9_.\-]{1,40}", fullmatch=True)
# Any text the console can store and send: no NUL and no lone surrogate (docs/spec-notes.md D31).
STORABLE = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
ANY_TEXT = st.text(STORABLE, min_size=1, max_size=30).filter(lambda s: s.strip())
MOUNTS = [f"/mnt/m{i}" for i in range(12)]


def _instance_types(resource_type: str, source: str) -> list[str]:
    kind = "Lingjun" if resource_type == "lingjun" else "ECS"
    types = [t for t, info in SPECS.items() if info.get("resource_type", info.get("ResourceType")) == kind]
    if source == "public":  # stay inside the public limit: 2 CPU cores, no GPU per node
        types = [t for t in types if SPECS[t].get("cpu", SPECS[t].get("Cpu")) == 2
                 and SPECS[t].get("gpu", SPECS[t].get("Gpu")) == 0]
    return types


@st.composite
def roles_strategy(draw, framework: C.Framework, resource_type: str, source: str, node_scheduling: bool):
    names = list(framework.required) or [framework.roles[0]]
    optional = [r for r in framework.roles if r not in names]
    names += draw(st.lists(st.sampled_from(optional), unique=True, max_size=3)) if optional else []
    if framework.custom_worker_roles and draw(st.booleans()):
        names.append(draw(st.from_regex(C.RAY_CUSTOM_ROLE_PATTERN, fullmatch=True)))
    roles = []
    for name in names[:4]:
        role = {"role": name, "count": 1 if name == "Chief" or source == "public" else draw(st.integers(1, 3))}
        if source == "quota":
            memory = draw(st.sampled_from([0.5, 1, 2, 8, 64]))
            role.update(cpu=draw(st.sampled_from([0.5, 1, 2, 4, "8"])), memory_gib=memory,
                        gpu=draw(st.sampled_from([None, 0, 1, 8])),
                        shared_memory_gib=draw(st.sampled_from([None, memory, memory / 2])))
            if node_scheduling:
                role["node_names"] = draw(st.lists(WORD, min_size=1, max_size=3, unique=True))
        else:
            role["instance_type"] = draw(st.sampled_from(_instance_types(resource_type, source)))
        roles.append(role)
    return roles


@st.composite
def advanced_strategy(draw, framework: str, resource_type: str, jumbo_ok: bool) -> str:
    settings: dict = {}
    if draw(st.booleans()):
        settings["ReleaseResourcePolicy"] = "pod-exit"
    for key in ("EnableNvidiaIBGDA", "EnableNvidiaGDRCopy", "EnablePaiNUMACoreBinding", "EnableResourcePreCheck"):
        if draw(st.integers(0, 3)) == 0:
            settings[key] = draw(st.sampled_from([True, False, "true", "false"]))
    if draw(st.integers(0, 3)) == 0:
        settings["EnableJumboFrame"] = "true" if jumbo_ok and draw(st.booleans()) else "false"
    if framework == "PyTorch":
        if draw(st.booleans()):
            settings["createSvcForAllWorkers"] = "true"
        ports = draw(st.sampled_from(["none", "list", "num"]))
        if ports == "list":
            settings["customPortList"] = draw(st.sampled_from(["10000", "10000;10001-10010", "30000-30005;1"]))
        elif ports == "num" and resource_type != "lingjun":
            settings["customPortNumPerWorker"] = draw(st.sampled_from(["1", "100", 65536]))
    if framework == "Ray":
        if draw(st.booleans()):
            settings["RayRuntimeEnv"] = "{pip: requirements.txt, env_vars: {key: value}}"
        if draw(st.booleans()):
            settings.update(RayRedisAddress="redis://10.0.0.1:6379", RayRedisUsername="default",
                            RayRedisPassword=draw(WORD))
        if draw(st.booleans()):
            settings["RayObjectStoreMemoryBytes"] = draw(st.sampled_from(["1073741824", 1024]))
            settings["RaySubmitterBackoffLimit"] = draw(st.integers(1, 10))
    if not settings:
        return ""
    if all(isinstance(v, str) for v in settings.values()) and draw(st.booleans()):
        return ",".join(f"{k}={v}" for k, v in settings.items())
    return json.dumps(settings)


@st.composite
def valid_sections(draw) -> dict:
    s = spec.defaults()
    resource_type = draw(st.sampled_from(list(C.RESOURCE_TYPES)))
    source = draw(st.sampled_from(list(C.SOURCES)))
    lingjun_quota = resource_type == "lingjun" and source == "quota"
    frameworks = [f for f in C.FRAMEWORKS.values() if f.job_type and (f.lingjun_quota or not lingjun_quota)]
    framework = draw(st.sampled_from(frameworks))
    res = s["resources"]
    res.update(resource_type=resource_type, source=source, framework=framework.name,
               scheduling_policy=draw(st.sampled_from(list(C.SCHEDULING_POLICIES))))
    node_scheduling = source == "quota" and draw(st.booleans())
    res["roles"] = draw(roles_strategy(framework, resource_type, source, node_scheduling))
    if source == "quota":
        res.update(quota_id=f"quota-{resource_type}", priority=draw(st.sampled_from([None, 1, 5, 9])),
                   node_scheduling=node_scheduling, idle_resources=draw(st.booleans()),
                   cpu_affinity=resource_type == "general" and draw(st.booleans()), dsw=draw(st.booleans()))
    needs_vpc = False
    if source == "spot":
        method = "discount" if resource_type == "lingjun" else draw(st.sampled_from(list(C.BID_METHODS)))
        res["bid_method"] = method
        if method == "discount":
            res["spot_discount"] = draw(st.sampled_from(C.SPOT_DISCOUNTS))
        else:
            res["spot_price"] = draw(st.floats(0.001, 100, allow_nan=False))
        needs_vpc = resource_type == "lingjun"
    res["max_duration"] = draw(st.sampled_from([None, 1, 30, 90, 1441]))
    res["max_duration_unit"] = draw(st.sampled_from(list(C.DURATION_UNITS)))
    if draw(st.booleans()):
        res.update(retention=draw(st.integers(1, 100)), retention_unit=draw(st.sampled_from(list(C.DURATION_UNITS))))
    jumbo_ok = source == "quota" and resource_type == "general"
    res["advanced"] = draw(advanced_strategy(framework.name, resource_type, jumbo_ok))

    s["basic"]["name"] = draw(NAME)
    s["basic"]["description"] = draw(st.sampled_from(["", "MNIST baseline", "  spaces around  "]))
    keys = draw(st.lists(st.from_regex(r"[a-z][A-Za-z0-9_.\-]{0,20}", fullmatch=True), unique=True, max_size=5))
    s["basic"]["tags"] = [{"key": k, "value": draw(st.text("abc, 123-_", max_size=10))} for k in keys
                          if not k.lower().startswith("aliyun")]

    vpc = s["vpc"]
    if needs_vpc or draw(st.booleans()):
        vpc.update(vpc_id="vpc-" + draw(WORD), security_group_id="sg-" + draw(WORD),
                   gateway=draw(st.sampled_from(["public", "private", ""])))
        if needs_vpc or draw(st.booleans()):
            vpc["switch_id"] = "vsw-" + draw(WORD)
        if draw(st.booleans()):
            vpc["extended_cidrs"] = draw(st.sampled_from([["10.0.0.0/8"], ["192.168.0.0/16", "172.16.0.0/12"]]))
    has_vpc = bool(vpc["vpc_id"])

    env = s["environment"]
    image_type = draw(st.sampled_from(list(C.IMAGE_TYPES)))
    env.update(image_type=image_type, image=draw(st.from_regex(  # an image reference (rules.image_problem)
        r"([a-z0-9]{1,8}\.[a-z]{2,5}(:[0-9]{1,5})?/)?[a-z0-9]{1,10}([._-][a-z0-9]{1,6})?(/[a-z0-9]{1,10}){0,2}"
        r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,10})?", fullmatch=True)),
               command=draw(ANY_TEXT))
    if image_type == "address" and draw(st.booleans()):
        env.update(registry_username=draw(WORD), registry_password=draw(ANY_TEXT))
    mounts = iter(draw(st.permutations(MOUNTS)))
    env["datasets"] = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(list(C.DATASET_KINDS)))
        dataset_id = draw(st.sampled_from(["d-abc123", "d-cpfs01"] if has_vpc else ["d-abc123", "d-xyz"]))
        env["datasets"].append({
            "kind": kind, "id": dataset_id, "version": draw(st.sampled_from(["", "v1", "v2"])),
            "read_only": True if kind == "public" else draw(st.sampled_from([None, True, False])),
            "mount_path": draw(st.sampled_from(["", next(mounts)])),
        })
    storage_types = [t for t in C.STORAGE_TYPES if (t != "bmcpfs" or resource_type == "lingjun")
                     and (t != "cpfs" or has_vpc)]
    env["storages"] = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(storage_types))
        uri, options = {
            "oss": ("oss://bucket-1.oss-cn-hangzhou-internal.aliyuncs.com/data/", draw(st.sampled_from(
                ["", '{"mountType":"ossfs"}', '{"fs.oss.download.thread.concurrency":"10"}']))),
            "nas": ("nas://31a8e4abc.cn-hangzhou/", draw(st.sampled_from(["", '{"nconnect":"4"}']))),
            "extreme_nas": ("nas://extreme-0015ab.cn-hangzhou/x", ""),
            "cpfs": ("nas://cpfs-125487ab.cn-hangzhou/", draw(st.sampled_from(["", '{"nconnect": 8}']))),
            "bmcpfs": ("bmcpfs://bmcpfs-01/data", ""),
        }[kind]
        env["storages"].append({"type": draw(st.sampled_from([kind, ""])), "uri": uri,
                                "mount_path": next(mounts), "options": options})
    env["envs"] = [{"key": k, "value": draw(st.text(STORABLE, max_size=10))}
                   for k in draw(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
                                          unique=True, max_size=5))]
    env["libs_mode"] = draw(st.sampled_from(list(C.LIBS_MODES)))
    if env["libs_mode"] == "list":
        env["libs"] = draw(st.sampled_from(["numpy", "griffon numpy pandas", " torch==2.1  tqdm "]))
    elif env["libs_mode"] == "requirements":
        env["requirements_dir"] = draw(st.sampled_from(["/mnt/code", "/mnt/code/requirements.txt", "/ml/"]))
    env["code_mode"] = draw(st.sampled_from(list(C.CODE_MODES)))
    if env["code_mode"] == "git":
        env.update(code_source_id="code-" + draw(WORD), code_branch=draw(st.sampled_from(["", "main"])),
                   code_commit=draw(st.sampled_from(["", "a1b2c3d"])),
                   code_mount_path=draw(st.sampled_from(["", next(mounts)])))
    elif env["code_mode"] == "upload":
        env.update(code_upload_uri="oss://bucket-1.oss-cn-hangzhou.aliyuncs.com/uploads/code.zip",
                   code_mount_path=next(mounts))

    ft = s["fault_tolerance"]
    if draw(st.booleans()):
        ft.update(enabled=True, args=draw(st.sampled_from(["", "--enable-log-hang-detection true"])))
    gpus = sum((r.get("gpu") or 0) * r["count"] for r in res["roles"])
    if lingjun_quota and framework.name == "PyTorch" and gpus > 0 and draw(st.booleans()):
        ft.update(sanity_check=True, sanity_args=draw(st.sampled_from(["", "--sanity-check-timing=BeforeJobRun"])))
    mode = draw(st.sampled_from(list(C.RAM_ROLE_MODES)))
    s["ram_role"] = {"mode": mode, "role_arn": "acs:ram::1234567890123456:role/my-role" if mode == "custom" else ""}
    return s


def _prune_empty(value):
    """The SDK's to_map() always adds empty lists (CustomEnvs, DataSources, ...); they carry nothing."""
    if isinstance(value, dict):
        return {k: _prune_empty(v) for k, v in value.items() if v not in ([], None)}
    if isinstance(value, list):
        return [_prune_empty(v) for v in value]
    return value


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_sections(), st.sampled_from([None, "ws-20210126170216-abcd"]))
def test_valid_sections_round_trip(sections, workspace_id):
    assert spec.validate_sections(sections, CONTEXT) == {}
    hints = spec.hints_from_sections(sections)
    context = spec.Context(region=CONTEXT.region, specs=SPECS, quotas=QUOTAS, datasets=DATASETS, hints=hints)
    for include_secrets in (False, True):
        body = spec.build(sections, workspace_id=workspace_id, include_secrets=include_secrets)
        assert json.loads(json.dumps(body)) == body  # plain JSON
        assert spec.validate(body, context) == {}
        assert spec.build(spec.inverse(body, hints), include_secrets=include_secrets) == body
        # Without hints too: build() only depends on console-only choices that the body shows.
        assert spec.build(spec.inverse(body), include_secrets=include_secrets) == body
    assert spec.strip_secrets(spec.build(sections, include_secrets=True)) == spec.build(sections)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_sections())
def test_sdk_carries_every_field(sections):
    body = spec.build(sections, workspace_id="ws-1", include_secrets=True)
    request = CreateJobRequest().from_map(copy.deepcopy(body))
    request.validate()
    assert _prune_empty(request.to_map()) == body


def test_sdk_knows_every_schema_key():
    """Every key of spec.WIRE_SCHEMA survives CreateJobRequest.from_map().to_map()."""

    def sample(schema):
        if isinstance(schema, dict):
            if "*" in schema:
                return {"k": sample(schema["*"])}
            return {k: sample(v) for k, v in schema.items()}
        if isinstance(schema, list):
            return [sample(schema[0])]
        return {"str": "x", "int": 1, "bool": True, "num": 0.5, "any": "v"}[schema]

    body = sample(spec.WIRE_SCHEMA)
    assert _prune_empty(CreateJobRequest().from_map(copy.deepcopy(body)).to_map()) == body


# --- garbage ----------------------------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
ALL_FIELDS = sorted({f for fields in spec.FIELDS.values() for f in fields}
                    | {f for fields in spec.ROW_FIELDS.values() for f in fields})


def _garbage_rows(field_names):
    return st.lists(st.dictionaries(st.sampled_from(field_names), JSONISH, max_size=6) | JSONISH, max_size=3)


GARBAGE_SECTION = st.dictionaries(
    st.sampled_from(ALL_FIELDS),
    JSONISH | _garbage_rows(ALL_FIELDS) | st.sampled_from(["", "quota", "spot", "lingjun", "address", "git",
                                                          "upload", "list", "requirements", "custom", "public"]),
    max_size=12,
)
GARBAGE_SECTIONS = st.dictionaries(st.sampled_from(list(spec.SECTIONS) + ["other"]), GARBAGE_SECTION | JSONISH,
                                   max_size=7) | JSONISH


def _schema_garbage(schema, depth=0):
    if isinstance(schema, dict) and depth < 4:
        keys = list(schema) if "*" not in schema else ["A", "B_1", "1x"]
        children = {k: _schema_garbage(schema.get(k, schema.get("*")), depth + 1) for k in keys}
        return st.fixed_dictionaries({}, optional=children) | JSONISH
    if isinstance(schema, list) and depth < 4:
        return st.lists(_schema_garbage(schema[0], depth + 1), max_size=3) | JSONISH
    return JSONISH


GARBAGE_BODY = _schema_garbage(spec.WIRE_SCHEMA)


def _check_errors(errors):
    assert isinstance(errors, dict)
    assert all(isinstance(k, str) and v and all(isinstance(m, str) for m in v) for k, v in errors.items())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GARBAGE_SECTIONS)
def test_garbage_sections_never_raise(sections):
    _check_errors(spec.validate_sections(sections, CONTEXT))
    _check_errors(spec.notes(sections, CONTEXT))
    spec.build(sections)
    spec.hints_from_sections(sections)
    spec.prune_inapplicable(sections)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GARBAGE_BODY, st.none() | st.dictionaries(st.sampled_from(
    ["resource_type", "image_type", "framework", "dataset_kinds", "code_upload", "secrets", "bid_method",
     "max_duration_unit"]), JSONISH))
def test_garbage_bodies_never_raise(body, hints):
    context = spec.Context(specs=SPECS, quotas=QUOTAS, datasets=DATASETS, hints=hints)
    errors = spec.validate(body, context)
    _check_errors(errors)
    sections = spec.inverse(body, hints)
    _check_errors(spec.validate_sections(sections, context))
    for path in errors:
        spec.field_for_path(path, sections)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_sections(), st.data())
def test_mutated_bodies_never_raise(sections, data):
    """One leaf of a valid body replaced by garbage: validate() reports instead of raising."""
    body = spec.build(sections, include_secrets=True)
    paths = []

    def walk(value, path):
        paths.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, path + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, path + (i,))

    walk(body, ())
    path = data.draw(st.sampled_from(paths[1:]))
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = data.draw(JSONISH)
    hints = spec.hints_from_sections(sections)
    errors = spec.validate(body, spec.Context(specs=SPECS, quotas=QUOTAS, datasets=DATASETS, hints=hints))
    _check_errors(errors)
    if not errors:  # what validate() accepts, the console reproduces exactly (empty fields mean "not set")
        again, expected = spec.inverse(body, hints), _drop_empty_fields(body)
        try:
            rebuilt = spec.build(again, include_secrets=True)
        except ValueError:  # the hints say a secret is kept outside the body: compare without secrets
            rebuilt, expected = spec.build(again), spec.strip_secrets(expected)
        assert rebuilt == expected


def _drop_empty_fields(value, schema=spec.WIRE_SCHEMA):
    if isinstance(schema, dict) and isinstance(value, dict):
        if "*" in schema:
            return value
        # Unknown keys reach here only with empty values (validate() reports any other), so they drop out.
        kept = {k: _drop_empty_fields(v, schema.get(k)) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(schema, list) and isinstance(value, list):
        return [_drop_empty_fields(v, schema[0]) for v in value]
    return value
