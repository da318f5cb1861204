"""Table-driven tests of jobs.spec rules: every documented rule passes once and fails once at the right path.

Pure Python, no Django. Each case edits a valid base job; a failing case must produce errors at exactly the
expected paths, with the expected words in the message. Failing cases with a `wire` path are also checked
through the body: build() -> validate(body) reports the same message at that wire path.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from jobs import catalog as C
from jobs import spec

SPECS = {
    "ecs.c6.large": {"cpu": 2, "gpu": 0, "memory": 4, "resource_type": "ECS"},
    "ecs.g7.xlarge": {"cpu": 4, "gpu": 0, "memory": 16, "resource_type": "ECS"},
    "ecs.gn6i-c4g1.xlarge": {"Cpu": 4, "Gpu": 1, "Memory": 15, "ResourceType": "ECS"},
    "ml.gu7i.c16m60.1-gu30": {"cpu": 16, "gpu": 1, "memory": 60, "resource_type": "Lingjun"},
}
QUOTAS = {
    "quota-gc2": {"resource_type": "general", "general_computing_2_0": True},
    "quota-gc1": {"resource_type": "general", "general_computing_2_0": False},
    "quota-gen": {"resource_type": "general"},
    "quota-lj": {"resource_type": "lingjun"},
}
DATASETS = {"d-cpfs": {"type": "CPFS"}, "d-oss": {"type": "OSS"},
            "d-cpfs-vpc": {"type": "CPFS", "vpc_id": "vpc-0jlq8l7qech3m2ta2"}}


def base() -> dict:
    s = spec.defaults()
    s["basic"]["name"] = "mnist-train_1.0"
    s["environment"].update(image="registry.cn-hangzhou.aliyuncs.com/pai/pytorch:2.1", command="python train.py")
    s["resources"]["roles"][0]["instance_type"] = "ecs.g7.xlarge"
    return s


def _set(data: dict, path: str, value: Any) -> None:
    steps = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    target = data
    for step in steps[:-1]:
        if isinstance(step, int):
            while len(target) <= step:
                target.append({})
        elif step not in target:
            target[step] = {}
        target = target[step]
    if isinstance(steps[-1], int):
        while len(target) <= steps[-1]:
            target.append({})
    target[steps[-1]] = value


# Common edits
QUOTA = {"resources.source": "quota", "resources.quota_id": "quota-gen", "resources.roles[0]":
         {"role": "Worker", "count": 1, "cpu": 4, "memory_gib": 16}}
LJ_QUOTA = {**QUOTA, "resources.resource_type": "lingjun", "resources.quota_id": "quota-lj"}
SPOT = {"resources.source": "spot", "resources.bid_method": "discount", "resources.spot_discount": 40}
VPC = {"vpc.vpc_id": "vpc-0jlq8l7qech3m2ta2", "vpc.security_group_id": "sg-0jl4bd9wwh5auei9"}
LINGJUN_PUBLIC = {"resources.resource_type": "lingjun", "resources.roles[0].instance_type": "ml.gu7i.c16m60.1-gu30"}
RAY = {"resources.framework": "Ray", "resources.roles": [{"role": "Head", "count": 1, "instance_type": "ecs.c6.large"}]}


@dataclass
class Case:
    id: str
    edits: dict
    paths: tuple[str, ...] = ()  # expected error paths; () = valid
    words: str = ""  # expected in one of the messages of the first path
    wire: str | None = None  # wire path checked through validate(build(...))
    context: dict = field(default_factory=dict)


CASES = [
    # ---- basic: job name --------------------------------------------------------------------------------
    Case("name ok", {"basic.name": "a" * 256}),
    Case("name required", {"basic.name": "  "}, ("basic.name",), "Enter a job name"),
    Case("name too long", {"basic.name": "a" * 257}, ("basic.name",), "at most 256", wire="DisplayName"),
    Case("name charset", {"basic.name": "my job!"}, ("basic.name",), "only ASCII letters", wire="DisplayName"),
    # QA: "é", "ü" and "中" are letters, which the message said it took; the rule (the SDK's) is ASCII: say so.
    *(Case(f"name accented {name}", {"basic.name": name}, ("basic.name",),
           "may contain only ASCII letters (a-z, A-Z), digits, '_', '.' and '-'.", wire="DisplayName")
      for name in ("café", "über-run", "训练")),
    # ---- basic: tags ------------------------------------------------------------------------------------
    Case("tag ok", {"basic.tags": [{"key": "team-a_b.c", "value": "x,y"}, {"key": "", "value": ""}]}),
    Case("tag key aliyun", {"basic.tags": [{"key": "aliyun-x", "value": "1"}]}, ("basic.tags[0].key",),
         "must not start with 'aliyun'", wire="Settings.Tags.aliyun-x"),
    Case("tag key Aliyun case", {"basic.tags": [{"key": "AliyunX", "value": "1"}]}, ("basic.tags[0].key",),
         "must not start"),
    Case("tag key acs:", {"basic.tags": [{"key": "acs:x", "value": "1"}]}, ("basic.tags[0].key",), "'acs:'"),
    Case("tag key url", {"basic.tags": [{"key": "xhttp://y", "value": "1"}]}, ("basic.tags[0].key",), "http://"),
    Case("tag value url", {"basic.tags": [{"key": "k", "value": "see https://x"}]}, ("basic.tags[0].value",),
         "https://", wire="Settings.Tags.k"),
    Case("tag key 128 ok", {"basic.tags": [{"key": "k" * 128, "value": "v" * 256}]}),
    Case("tag key 129", {"basic.tags": [{"key": "k" * 129, "value": "v"}]}, ("basic.tags[0].key",), "128"),
    Case("tag value 257", {"basic.tags": [{"key": "k", "value": "v" * 257}]}, ("basic.tags[0].value",), "256"),
    Case("tag key charset", {"basic.tags": [{"key": "a b", "value": "v"}]}, ("basic.tags[0].key",),
         "only ASCII letters (a-z, A-Z), digits"),
    Case("tag key accented", {"basic.tags": [{"key": "équipe", "value": "v"}]}, ("basic.tags[0].key",),
         "only ASCII letters (a-z, A-Z), digits"),
    Case("tag key the console's own", {"basic.tags": [{"key": "dlc-console-submission", "value": "v"}]},
         ("basic.tags[0].key",), "reserved for the console's exactly-once submission",
         wire="Settings.Tags.dlc-console-submission"),
    Case("tag key missing", {"basic.tags": [{"key": "", "value": "v"}]}, ("basic.tags[0].key",), "Enter a tag key"),
    Case("tag keys unique", {"basic.tags": [{"key": "k", "value": "1"}, {"key": "k", "value": "2"}]},
         ("basic.tags[1].key",), "used twice"),
    Case("20 tags ok", {"basic.tags": [{"key": f"k{i}", "value": ""} for i in range(20)]}),
    Case("21 tags", {"basic.tags": [{"key": f"k{i}", "value": ""} for i in range(21)]}, ("basic.tags",),
         "At most 20", wire="Settings.Tags"),
    Case("reserved tag slot", {"basic.tags": [{"key": f"k{i}", "value": ""} for i in range(20)]}, ("basic.tags",),
         "At most 19", context={"reserved_tags": 1}),
    Case("tags as a map", {"basic.tags": {"team": "a"}}),
    # ---- environment: image -----------------------------------------------------------------------------
    Case("image required", {"environment.image": ""}, ("environment.image",), "Choose or enter an image",
         wire="JobSpecs[0].Image"),
    Case("image spaces", {"environment.image": "a b"}, ("environment.image",), "spaces"),
    # One image-reference rule (rules.image_problem) for the wizard, the API, import and clone (QA).
    Case("image dot-dot", {"environment.image": "registry.example.com/team/../evil/x:1"}, ("environment.image",),
         "'..' are not path segments", wire="JobSpecs[0].Image"),
    Case("image bad digest", {"environment.image": "registry.example.com/team/x:1@sha256:zz"},
         ("environment.image",), "sha256: and 64 lowercase hex digits", wire="JobSpecs[0].Image"),
    Case("image digest ok", {"environment.image": "registry.example.com/team/x:1@sha256:" + "0a" * 32}),
    Case("image with port ok", {"environment.image": "localhost:5000/team/x_y-z:v1.2"}),
    Case("image markup", {"environment.image": 'reg.example/"><script>'}, ("environment.image",),
         "Not a repository path segment"),
    Case("image empty segment", {"environment.image": "reg.example//x:1"}, ("environment.image",),
         "no empty path segment"),
    Case("image bad tag", {"environment.image": "reg.example/x:-1"}, ("environment.image",), "A tag is"),
    Case("image type unknown", {"environment.image_type": "docker"}, ("environment.image_type",), "Choose one of"),
    Case("registry both", {"environment.image_type": "address", "environment.registry_username": "u",
                           "environment.registry_password": "p w"}),
    Case("registry password missing", {"environment.image_type": "address", "environment.registry_username": "u"},
         ("environment.registry_password",), "need both", wire="JobSpecs[0].ImageConfig.Password"),
    Case("registry username missing", {"environment.image_type": "address", "environment.registry_password": "p"},
         ("environment.registry_username",), "need both"),
    Case("registry only for address", {"environment.image_type": "custom", "environment.registry_username": "u",
                                       "environment.registry_password": "p"},
         ("environment.registry_username", "environment.registry_password"), "only used with an image address"),
    # ---- environment: datasets --------------------------------------------------------------------------
    Case("dataset ok", {"environment.datasets": [{"kind": "custom", "id": "d-1", "version": "v2",
                                                  "read_only": False, "mount_path": "/mnt/data"}]}),
    Case("dataset id", {"environment.datasets": [{"kind": "custom", "id": ""}]}, ("environment.datasets[0].id",),
         "Choose a dataset"),
    Case("public dataset read-only ok", {"environment.datasets": [{"kind": "public", "id": "d-pub",
                                                                   "read_only": True}]}),
    Case("public dataset read-write", {"environment.datasets": [{"kind": "public", "id": "d-pub",
                                                                 "read_only": False}]},
         ("environment.datasets[0].read_only",), "read-only", wire="DataSources[0].MountAccess"),
    Case("dataset mount relative", {"environment.datasets": [{"id": "d-1", "mount_path": "mnt/data"}]},
         ("environment.datasets[0].mount_path",), "absolute", wire="DataSources[0].MountPath"),
    Case("cpfs dataset needs vpc", {"environment.datasets": [{"id": "d-cpfs"}]}, ("environment.datasets[0].id",),
         "needs a VPC", wire="DataSources[0].DataSourceId"),
    Case("cpfs dataset with vpc", {"environment.datasets": [{"id": "d-cpfs"}], **VPC}),
    # [004] "CPFS VPC'siyle eşleşen bir VPC" (a VPC that matches the CPFS VPC), when the dataset says which.
    Case("cpfs dataset same vpc", {"environment.datasets": [{"id": "d-cpfs-vpc"}], **VPC}),
    Case("cpfs dataset other vpc", {"environment.datasets": [{"id": "d-cpfs-vpc"}], **VPC, "vpc.vpc_id": "vpc-other1"},
         ("environment.datasets[0].id",), "file system is in vpc-0jlq8l7qech3m2ta2, not vpc-other1",
         wire="DataSources[0].DataSourceId"),
    # ---- environment: storage ---------------------------------------------------------------------------
    Case("oss ok", {"environment.storages": [{"type": "oss", "uri": "oss://bucket.oss-cn-hangzhou.aliyuncs.com/d/",
                                              "mount_path": "/mnt/oss", "options": '{"mountType":"ossfs"}'}]}),
    Case("oss uri", {"environment.storages": [{"type": "oss", "uri": "s3://b/x", "mount_path": "/mnt/oss"}]},
         ("environment.storages[0].uri",), "oss://<bucket>", wire="DataSources[0].Uri"),
    Case("storage uri missing", {"environment.storages": [{"type": "nas", "mount_path": "/mnt/x"}]},
         ("environment.storages[0].uri",), "Enter the storage path"),
    Case("oss mountType", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x", "mount_path": "/m",
                                                     "options": '{"mountType":"jindo"}'}]},
         ("environment.storages[0].options",), "'ossfs'", wire="DataSources[0].Options"),
    # The seeds give the storage options "for example" ([000] "Por exemplo", [004] "Örneğin"): an undocumented key
    # is sent with a note, a key documented for another storage type is an error.
    Case("oss undocumented option ok", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x",
                                                                  "mount_path": "/m", "options": '{"foo": 1}'}]}),
    Case("nconnect on oss", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x", "mount_path": "/m",
                                                       "options": '{"nconnect": "4"}'}]},
         ("environment.storages[0].options",), "nconnect applies to General-purpose NAS and CPFS, not OSS",
         wire="DataSources[0].Options"),
    Case("mountType on nas", {"environment.storages": [{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/a",
                                                        "mount_path": "/m", "options": '{"mountType": "ossfs"}'}]},
         ("environment.storages[0].options",), "mountType applies to OSS, not General-purpose NAS"),
    Case("options bad json", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x", "mount_path": "/m",
                                                        "options": "{mountType: ossfs"}]},
         ("environment.storages[0].options",), "JSON object"),
    Case("options not object", {"environment.storages": [{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/",
                                                          "mount_path": "/m", "options": "[1]"}]},
         ("environment.storages[0].options",), "JSON object"),
    Case("nas nconnect ok", {"environment.storages": [{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/a",
                                                       "mount_path": "/m", "options": '{"nconnect":"4"}'}]}),
    Case("nas nconnect bad", {"environment.storages": [{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/a",
                                                        "mount_path": "/m", "options": '{"nconnect":"0"}'}]},
         ("environment.storages[0].options",), "positive integer"),
    Case("extreme nas has no options", {"environment.storages": [
        {"type": "extreme_nas", "uri": "nas://extreme-0015.cn-hangzhou/", "mount_path": "/m",
         "options": '{"nconnect":"4"}'}]}, ("environment.storages[0].options",), "not Extreme NAS"),
    Case("nas id is extreme", {"environment.storages": [{"type": "nas", "uri": "nas://extreme-0015.cn-hangzhou/",
                                                         "mount_path": "/m"}]},
         ("environment.storages[0].uri",), "choose Extreme NAS"),
    Case("extreme prefix", {"environment.storages": [{"type": "extreme_nas", "uri": "nas://31a8e4.cn-hangzhou/",
                                                      "mount_path": "/m"}]},
         ("environment.storages[0].uri",), "start with 'extreme-'"),
    Case("cpfs ok", {"environment.storages": [{"type": "cpfs", "uri": "nas://cpfs-1254.cn-hangzhou/",
                                               "mount_path": "/m", "options": '{"nconnect": 8}'}], **VPC}),
    Case("cpfs prefix", {"environment.storages": [{"type": "cpfs", "uri": "nas://1254.cn-hangzhou/",
                                                   "mount_path": "/m"}], **VPC},
         ("environment.storages[0].uri",), "start with 'cpfs-'"),
    Case("cpfs storage needs vpc", {"environment.storages": [{"type": "cpfs", "uri": "nas://cpfs-1.cn-hangzhou/",
                                                              "mount_path": "/m"}]},
         ("environment.storages[0].type",), "needs a VPC", wire="DataSources[0].Uri"),
    Case("bmcpfs only lingjun", {"environment.storages": [{"type": "bmcpfs", "uri": "bmcpfs://bmcpfs-1/d",
                                                           "mount_path": "/m"}]},
         ("environment.storages[0].type",), "only available with Lingjun"),
    Case("bmcpfs with lingjun", {"environment.storages": [{"type": "bmcpfs", "uri": "bmcpfs://bmcpfs-1/d",
                                                           "mount_path": "/m"}], **LINGJUN_PUBLIC}),
    # [004] VPC: with a VPC, the dataset storage must be in the job's region (and VPC).
    Case("storage same region with vpc", {"environment.storages": [
        {"type": "oss", "uri": "oss://bucket.oss-cn-hangzhou-internal.aliyuncs.com/d/", "mount_path": "/m"},
        {"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/d", "mount_path": "/n"}], **VPC}),
    Case("storage other region without vpc", {"environment.storages": [
        {"type": "oss", "uri": "oss://bucket.oss-cn-beijing.aliyuncs.com/d/", "mount_path": "/m"}]}),
    Case("storage no region with vpc", {"environment.storages": [
        {"type": "oss", "uri": "oss://bucket.oss-accelerate.aliyuncs.com/d/", "mount_path": "/m"}], **VPC}),
    Case("oss other region with vpc", {"environment.storages": [
        {"type": "oss", "uri": "oss://bucket.oss-cn-beijing-internal.aliyuncs.com/d/", "mount_path": "/m"}], **VPC},
         ("environment.storages[0].uri",), "in cn-beijing, but the job runs in cn-hangzhou", wire="DataSources[0].Uri"),
    Case("nas other region with vpc", {"environment.storages": [
        {"type": "nas", "uri": "nas://31a8e4.cn-shanghai/d", "mount_path": "/m"}], **VPC},
         ("environment.storages[0].uri",), "in cn-shanghai"),
    Case("storage mount required", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x"}]},
         ("environment.storages[0].mount_path",), "Enter the container mount path"),
    Case("storage mount root", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x",
                                                          "mount_path": "/"}]},
         ("environment.storages[0].mount_path",), "root directory"),
    Case("mount paths unique", {"environment.datasets": [{"id": "d-1", "mount_path": "/mnt/data"}],
                                "environment.storages": [{"type": "oss", "uri": "oss://bucket/x",
                                                          "mount_path": "/mnt/data/"}]},
         ("environment.storages[0].mount_path",), "already used by dataset #1", wire="DataSources[1].MountPath"),
    # ---- environment: command, envs, libs, code ---------------------------------------------------------
    Case("command required", {"environment.command": ""}, ("environment.command",), "startup command",
         wire="UserCommand"),
    Case("envs ok", {"environment.envs": [{"key": "_A1", "value": ""}, {"key": "B", "value": "x=y"}]}),
    Case("20 envs ok", {"environment.envs": [{"key": f"V{i}", "value": "1"} for i in range(20)]}),
    Case("21 envs", {"environment.envs": [{"key": f"V{i}", "value": "1"} for i in range(21)]},
         ("environment.envs",), "At most 20", wire="Envs"),
    Case("env key digit", {"environment.envs": [{"key": "1ABC", "value": "1"}]}, ("environment.envs[0].key",),
         "not starting with a digit"),
    Case("env key dash", {"environment.envs": [{"key": "A-B", "value": "1"}]}, ("environment.envs[0].key",),
         "digits and '_'", wire="Envs.A-B"),
    Case("env key unique", {"environment.envs": [{"key": "A", "value": "1"}, {"key": "A", "value": "2"}]},
         ("environment.envs[1].key",), "set twice"),
    # Two Secret rows of one name: the same error, at the second row (the sealed value would be one of them).
    Case("secret env key unique", {"environment.envs": [{"key": "HF_TOKEN", "value": "a", "secret": True},
                                                         {"key": "HF_TOKEN", "value": "b", "secret": True}]},
         ("environment.envs[1].key",), "set twice"),
    Case("env key missing", {"environment.envs": [{"key": "", "value": "1"}]}, ("environment.envs[0].key",),
         "Enter a variable name"),
    Case("libs list ok", {"environment.libs_mode": "list", "environment.libs": "griffon numpy pandas"}),
    Case("libs list empty", {"environment.libs_mode": "list", "environment.libs": "  "}, ("environment.libs",),
         "at least one library"),
    Case("libs without mode", {"environment.libs": "numpy"}, ("environment.libs",), "Select from List"),
    Case("requirements ok", {"environment.libs_mode": "requirements",
                             "environment.requirements_dir": "/mnt/code/requirements.txt"}),
    Case("requirements required", {"environment.libs_mode": "requirements"}, ("environment.requirements_dir",),
         "requirements.txt"),
    Case("requirements relative", {"environment.libs_mode": "requirements",
                                   "environment.requirements_dir": "code/requirements.txt"},
         ("environment.requirements_dir",), "absolute", wire="ThirdpartyLibDir"),
    Case("git ok", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                    "environment.code_branch": "main", "environment.code_mount_path": "/mnt/code"}),
    Case("git needs source", {"environment.code_mode": "git", "environment.code_branch": "main"},
         ("environment.code_source_id",), "Choose a code source"),
    Case("branch without git", {"environment.code_branch": "main"}, ("environment.code_branch",), "Git"),
    Case("upload ok", {"environment.code_mode": "upload", "environment.code_mount_path": "/mnt/code",
                       "environment.code_upload_uri": "oss://bucket/uploads/code/"}),
    Case("upload needs mount path", {"environment.code_mode": "upload",
                                     "environment.code_upload_uri": "oss://bucket/uploads/code/"},
         ("environment.code_mount_path",), "uploaded code is mounted"),
    Case("upload needs upload", {"environment.code_mode": "upload", "environment.code_mount_path": "/mnt/code"},
         ("environment.code_upload_uri",), "cannot upload local code"),
    Case("upload must be oss", {"environment.code_mode": "upload", "environment.code_mount_path": "/mnt/code",
                                "environment.code_upload_uri": "nas://x.cn-hangzhou/"},
         ("environment.code_upload_uri",), "oss://", wire="DataSources[0].Uri"),
    # ---- resources: type, region, source, quota, priority -----------------------------------------------
    Case("lingjun region ok", {**LINGJUN_PUBLIC}, context={"region": "ap-southeast-3"}),
    Case("lingjun region", {**LINGJUN_PUBLIC}, ("resources.resource_type",), "not offered in us-west-1",
         wire="JobSpecs[0].EcsSpec", context={"region": "us-west-1"}),
    Case("resource type unknown", {"resources.resource_type": "gpu"}, ("resources.resource_type",), "Choose one of"),
    Case("quota ok", {**QUOTA, "resources.priority": 9}),
    Case("quota id required", {**QUOTA, "resources.quota_id": ""}, ("resources.quota_id",), "Choose a resource quota"),
    Case("quota kind mismatch", {**QUOTA, "resources.quota_id": "quota-lj"}, ("resources.quota_id",),
         "holds Lingjun", wire="ResourceId", context={"quotas": QUOTAS}),
    Case("priority 0", {**QUOTA, "resources.priority": 0}, ("resources.priority",), "1 (lowest) to 9",
         wire="Priority"),
    Case("priority 10", {**QUOTA, "resources.priority": "10"}, ("resources.priority",), "1 (lowest) to 9"),
    Case("priority text", {**QUOTA, "resources.priority": "high"}, ("resources.priority",), "whole number"),
    Case("priority needs quota", {"resources.priority": 3}, ("resources.priority",), "only available with a resource"),
    Case("quota id needs quota", {"resources.quota_id": "quota-gen"}, ("resources.quota_id",), "Source = Resource"),
    # ---- resources: framework and roles -----------------------------------------------------------------
    Case("framework required", {"resources.framework": ""}, ("resources.framework",), "Choose a framework",
         wire="JobType"),
    Case("framework unknown", {"resources.framework": "Caffe"}, ("resources.framework",), "Unknown framework"),
    Case("framework custom", {"resources.framework": "Custom"}, ("resources.framework",), "no documented"),
    Case("framework mpi ok", {"resources.framework": "MPI"}),
    Case("lingjun quota subset", {**LJ_QUOTA, "resources.framework": "XGBoost"}, ("resources.framework",),
         "only these frameworks", wire="JobType"),
    Case("lingjun quota ray ok", {**LJ_QUOTA, "resources.framework": "Ray", "resources.roles[0].role": "Head"}),
    Case("roles required", {"resources.roles": []}, ("resources.roles",), "at least one role", wire="JobSpecs"),
    Case("role for framework", {"resources.roles[0].role": "PS"}, ("resources.roles[0].role", "resources.roles"),
         "Worker, Master", wire="JobSpecs[0].Type"),
    Case("tf roles ok", {"resources.framework": "TensorFlow", "resources.roles": [
        {"role": r, "count": 1, "instance_type": "ecs.c6.large"} for r in ("Worker", "PS", "Chief", "Evaluator")]}),
    Case("ray custom worker ok", {**RAY, "resources.roles[1]": {"role": "Worker-gpu", "count": 1,
                                                               "instance_type": "ecs.c6.large"}}),
    Case("ray custom worker name", {**RAY, "resources.roles[1]": {"role": "Worker_gpu", "count": 1,
                                                                 "instance_type": "ecs.c6.large"}},
         ("resources.roles[1].role",), "custom Worker-<name>"),
    Case("role unique", {"resources.roles[1]": {"role": "Worker", "count": 1, "instance_type": "ecs.c6.large"}},
         ("resources.roles[1].role",), "appears twice"),
    Case("required role", {"resources.roles[0].role": "Master"}, ("resources.roles",), "need a Worker role"),
    Case("ray needs head", {**RAY, "resources.roles[0].role": "Worker"}, ("resources.roles",), "need a Head role"),
    Case("count 0", {"resources.roles[0].count": 0}, ("resources.roles[0].count",), "at least 1",
         wire="JobSpecs[0].PodCount"),
    Case("count text", {"resources.roles[0].count": "two"}, ("resources.roles[0].count",), "whole number"),
    Case("count missing", {"resources.roles[0].count": ""}, ("resources.roles[0].count",), "number of nodes"),
    Case("one chief", {"resources.framework": "TensorFlow", "resources.roles": [
        {"role": "Worker", "count": 1, "instance_type": "ecs.c6.large"},
        {"role": "Chief", "count": 2, "instance_type": "ecs.c6.large"}]},
        ("resources.roles[1].count",), "Only one Chief", wire="JobSpecs[1].PodCount"),
    Case("instance type required", {"resources.roles[0].instance_type": ""}, ("resources.roles[0].instance_type",),
         "Choose an instance type", wire="JobSpecs[0].EcsSpec"),
    Case("instance type known", {}, context={"specs": SPECS}),
    Case("instance type unknown", {"resources.roles[0].instance_type": "ecs.nope"},
         ("resources.roles[0].instance_type",), "Unknown instance type", context={"specs": SPECS}),
    Case("instance type resource kind", {"resources.roles[0].instance_type": "ml.gu7i.c16m60.1-gu30"},
         ("resources.roles[0].instance_type", "resources.roles"), "Lingjun Intelligence Resources instance type",
         context={"specs": SPECS}),
    Case("instance type on quota", {**QUOTA, "resources.roles[0].instance_type": "ecs.c6.large"},
         ("resources.roles[0].instance_type",), "not an instance type"),
    Case("public 2 gpus ok", {"resources.roles[0].instance_type": "ecs.gn6i-c4g1.xlarge",
                              "resources.roles[0].count": 2}, context={"specs": SPECS}),
    Case("public 3 gpus", {"resources.roles[0].instance_type": "ecs.gn6i-c4g1.xlarge", "resources.roles[0].count": 3},
         ("resources.roles",), "at most 2 GPUs", wire="JobSpecs", context={"specs": SPECS}),
    Case("public 8 cpus ok", {"resources.roles[0].count": 2}, context={"specs": SPECS}),
    Case("public 12 cpus", {"resources.roles[0].count": 3}, ("resources.roles",), "at most 8 CPU cores",
         context={"specs": SPECS}),
    Case("quota cpu required", {**QUOTA, "resources.roles[0].cpu": None}, ("resources.roles[0].cpu",),
         "Enter the CPU cores", wire="JobSpecs[0].ResourceConfig.CPU"),
    Case("quota memory required", {**QUOTA, "resources.roles[0].memory_gib": ""},
         ("resources.roles[0].memory_gib",), "Enter the memory"),
    Case("quota cpu positive", {**QUOTA, "resources.roles[0].cpu": 0}, ("resources.roles[0].cpu",),
         "greater than 0"),
    Case("quota gpu negative", {**QUOTA, "resources.roles[0].gpu": -1}, ("resources.roles[0].gpu",), "negative",
         wire="JobSpecs[0].ResourceConfig.GPU"),
    Case("quota memory text", {**QUOTA, "resources.roles[0].memory_gib": "8G"}, ("resources.roles[0].memory_gib",),
         "number of GiB"),
    Case("quota shm ok", {**QUOTA, "resources.roles[0].shared_memory_gib": 16, "resources.roles[0].gpu": 1}),
    Case("quota shm > memory", {**QUOTA, "resources.roles[0].shared_memory_gib": 17},
         ("resources.roles[0].shared_memory_gib",), "larger than", wire="JobSpecs[0].ResourceConfig.SharedMemory"),
    Case("cpu on public", {"resources.roles[0].cpu": 4}, ("resources.roles[0].cpu",), "only with a resource quota"),
    # ---- resources: spot --------------------------------------------------------------------------------
    Case("spot discount ok", {**SPOT}),
    Case("spot price ok", {**SPOT, "resources.bid_method": "price", "resources.spot_discount": None,
                           "resources.spot_price": "0.011"}),
    Case("spot bid required", {**SPOT, "resources.bid_method": "", "resources.spot_discount": None},
         ("resources.bid_method",), "Choose a bid method", wire="JobSpecs[0].SpotSpec"),
    Case("spot discount step", {**SPOT, "resources.spot_discount": 45}, ("resources.spot_discount",), "10%, 20%",
         wire="JobSpecs[0].SpotSpec.SpotDiscountLimit"),
    Case("spot discount 100", {**SPOT, "resources.spot_discount": 100}, ("resources.spot_discount",), "90%"),
    Case("spot discount missing", {**SPOT, "resources.spot_discount": None}, ("resources.spot_discount",),
         "Choose the maximum discount"),
    Case("spot price positive", {**SPOT, "resources.bid_method": "price", "resources.spot_discount": None,
                                 "resources.spot_price": 0}, ("resources.spot_price",), "greater than 0",
         wire="JobSpecs[0].SpotSpec.SpotPriceLimit"),
    Case("spot one bid", {**SPOT, "resources.spot_price": 0.5}, ("resources.spot_price",), "only one bid"),
    Case("bid needs spot", {"resources.bid_method": "discount"}, ("resources.bid_method",), "preemptible"),
    Case("lingjun spot discount ok", {**SPOT, **LINGJUN_PUBLIC, **VPC, "vpc.switch_id": "vsw-1"}),
    Case("lingjun spot price", {**SPOT, **LINGJUN_PUBLIC, **VPC, "vpc.switch_id": "vsw-1",
                                "resources.bid_method": "price", "resources.spot_discount": None,
                                "resources.spot_price": 1},
         ("resources.bid_method",), "only support bidding by discount"),
    Case("lingjun spot vpc", {**SPOT, **LINGJUN_PUBLIC}, ("vpc.vpc_id", "vpc.switch_id"), "require a VPC",
         wire="UserVpc.VpcId"),
    # ---- resources: quota-only options ------------------------------------------------------------------
    Case("node scheduling ok", {**QUOTA, "resources.node_scheduling": True,
                                "resources.roles[0].node_names": "node-1, node-2"}),
    Case("node scheduling names", {**QUOTA, "resources.node_scheduling": True}, ("resources.roles[0].node_names",),
         "Choose the nodes", wire="JobSpecs[0].AssignNodeSpec.NodeNames"),
    Case("node scheduling needs quota", {"resources.node_scheduling": True}, ("resources.node_scheduling",),
         "resource quota"),
    Case("idle needs quota", {"resources.idle_resources": "on"}, ("resources.idle_resources",), "resource quota"),
    Case("idle ok", {**QUOTA, "resources.idle_resources": True}),
    Case("dsw needs quota", {"resources.dsw": True}, ("resources.dsw",), "resource quota"),
    Case("dsw ok", {**QUOTA, "resources.dsw": "true"}),
    Case("cpu affinity needs quota", {"resources.cpu_affinity": True}, ("resources.cpu_affinity",), "resource quota"),
    Case("cpu affinity general ok", {**QUOTA, "resources.cpu_affinity": True}),
    Case("cpu affinity not lingjun", {**LJ_QUOTA, "resources.cpu_affinity": True}, ("resources.cpu_affinity",),
         "general computing", wire="Settings.EnableCPUAffinity"),
    Case("flag garbage", {"resources.dsw": "maybe"}, ("resources.dsw",), "on or off"),
    # ---- resources: scheduling, duration, retention -----------------------------------------------------
    Case("scheduling spread ok", {"resources.scheduling_policy": "spread"}),
    Case("scheduling unknown", {"resources.scheduling_policy": "random"}, ("resources.scheduling_policy",),
         "intelligent, centralized, spread"),
    Case("duration ok", {"resources.max_duration": 2, "resources.max_duration_unit": "hours"}),
    Case("duration empty ok", {"resources.max_duration": None}),
    Case("duration 0", {"resources.max_duration": 0}, ("resources.max_duration",), "positive whole number"),
    Case("duration text", {"resources.max_duration": "soon"}, ("resources.max_duration",), "positive whole number"),
    Case("duration unit", {"resources.max_duration_unit": "weeks"}, ("resources.max_duration_unit",), "Choose one"),
    Case("retention ok", {"resources.retention": 3, "resources.retention_unit": "days"}),
    Case("retention negative", {"resources.retention": -1}, ("resources.retention",), "positive whole number"),
    # ---- resources: advanced framework configuration ----------------------------------------------------
    Case("advanced kv ok", {"resources.advanced": "createSvcForAllWorkers=true,customPortNumPerWorker=100"}),
    Case("advanced json ok", {"resources.advanced": '{ "ReleaseResourcePolicy": "pod-exit" }'}),
    Case("advanced bad json", {"resources.advanced": '{"ReleaseResourcePolicy": pod-exit}'},
         ("resources.advanced",), "Invalid JSON"),
    Case("advanced json array", {"resources.advanced": "{}[]"}, ("resources.advanced",), "Invalid JSON"),
    Case("advanced not kv", {"resources.advanced": "createSvcForAllWorkers"}, ("resources.advanced",),
         "key=value"),
    Case("advanced duplicate", {"resources.advanced": "EnableNvidiaIBGDA=true,EnableNvidiaIBGDA=false"},
         ("resources.advanced",), "given twice"),
    Case("advanced unknown key", {"resources.advanced": "Foo=1"}, ("resources.advanced",), "Unknown advanced",
         wire="Settings.AdvancedSettings"),
    Case("advanced other framework", {"resources.advanced": "RayRedisAddress=x"}, ("resources.advanced",),
         "only available for Ray"),
    Case("advanced release policy", {"resources.advanced": "ReleaseResourcePolicy=all"}, ("resources.advanced",),
         "'pod-exit'"),
    Case("advanced bool", {"resources.advanced": "EnableNvidiaGDRCopy=yes"}, ("resources.advanced",),
         "true or false"),
    Case("ports exclusive", {"resources.advanced": "customPortList=10000,customPortNumPerWorker=2"},
         ("resources.advanced",), "mutually exclusive"),
    Case("port list ok", {"resources.advanced": "createSvcForAllWorkers=true,customPortList=10000;10001-10010"}),
    Case("port list 23456", {"resources.advanced": "customPortList=10000;23450-23460"}, ("resources.advanced",),
         "must not include port 23456"),
    Case("port list range", {"resources.advanced": "customPortList=70000"}, ("resources.advanced",), "1 to 65535"),
    Case("port list order", {"resources.advanced": "customPortList=10010-10000"}, ("resources.advanced",),
         "ends before it starts"),
    Case("port list syntax", {"resources.advanced": "customPortList=10000,10001"}, ("resources.advanced",),
         "key=value"),
    Case("port num max", {"resources.advanced": "customPortNumPerWorker=65537"}, ("resources.advanced",),
         "1 to 65536"),
    Case("port num 65536 ok", {"resources.advanced": '{"customPortNumPerWorker": 65536}'}),
    Case("port num lingjun", {**LINGJUN_PUBLIC, "resources.advanced": "customPortNumPerWorker=10"},
         ("resources.advanced",), "not supported on Lingjun"),
    Case("jumbo frame 2.0 ok", {**QUOTA, "resources.quota_id": "quota-gc2", "resources.advanced":
                                "EnableJumboFrame=true"}, context={"quotas": QUOTAS}),
    Case("jumbo frame public", {"resources.advanced": "EnableJumboFrame=true"}, ("resources.advanced",),
         "General Computing 2.0"),
    Case("jumbo frame old quota", {**QUOTA, "resources.quota_id": "quota-gc1", "resources.advanced":
                                   "EnableJumboFrame=true"}, ("resources.advanced",), "General Computing 2.0",
         context={"quotas": QUOTAS}),
    Case("jumbo frame false ok", {"resources.advanced": "EnableJumboFrame=false"}),
    Case("ray advanced ok", {**RAY, "resources.advanced":
                             "RayRuntimeEnv={pip: requirements.txt, env_vars: {key: value}},"
                             "RayObjectStoreMemoryBytes=1073741824,RaySubmitterBackoffLimit=3"}),
    Case("ray backoff positive", {**RAY, "resources.advanced": '{"RaySubmitterBackoffLimit": 0}'},
         ("resources.advanced",), "positive integer"),
    # ---- vpc --------------------------------------------------------------------------------------------
    Case("vpc ok", {**VPC, "vpc.switch_id": "vsw-0jlc46eg4k3pivwpz8", "vpc.extended_cidrs": "10.0.0.0/8, 172.16.0.0/12",
                    "vpc.gateway": "private"}),
    Case("switch needs vpc", {"vpc.switch_id": "vsw-1"}, ("vpc.switch_id",), "Choose a VPC first"),
    Case("sg needs vpc", {"vpc.security_group_id": "sg-1"}, ("vpc.security_group_id",), "Choose a VPC first"),
    Case("vpc needs sg", {"vpc.vpc_id": "vpc-1"}, ("vpc.security_group_id",), "Choose a security group",
         wire="UserVpc.SecurityGroupId"),
    Case("vpc id format", {**VPC, "vpc.vpc_id": "vpc_1"}, ("vpc.vpc_id",), "vpc-xxxxxxxx"),
    Case("cidr invalid", {**VPC, "vpc.extended_cidrs": ["10.0.0.1/8"]}, ("vpc.extended_cidrs",), "not a CIDR",
         wire="UserVpc.ExtendedCIDRs"),
    Case("cidr no prefix", {**VPC, "vpc.extended_cidrs": ["10.0.0.0"]}, ("vpc.extended_cidrs",), "not a CIDR"),
    Case("cidr needs vpc", {"vpc.extended_cidrs": ["10.0.0.0/8"]}, ("vpc.extended_cidrs",), "Choose a VPC first"),
    Case("private gateway needs vpc", {"vpc.gateway": "private"}, ("vpc.gateway",), "needs a VPC"),
    Case("gateway unknown", {"vpc.gateway": "nat"}, ("vpc.gateway",), "Choose one of"),
    # ---- fault tolerance --------------------------------------------------------------------------------
    Case("aimaster ok", {"fault_tolerance.enabled": True, "fault_tolerance.args": "--enable-log-hang-detection true"}),
    Case("aimaster args need toggle", {"fault_tolerance.args": "--x 1"}, ("fault_tolerance.args",), "turned on"),
    Case("aimaster args quoting", {"fault_tolerance.enabled": True, "fault_tolerance.args": "--x 'a"},
         ("fault_tolerance.args",), "Could not parse", wire="Settings.ErrorMonitoringArgs"),
    Case("sanity ok", {**LJ_QUOTA, "resources.roles[0].gpu": 8, "fault_tolerance.sanity_check": True,
                       "fault_tolerance.sanity_args": "--sanity-check-timing=AfterJobFaultTolerant"}),
    Case("sanity general", {"fault_tolerance.sanity_check": True}, ("fault_tolerance.sanity_check",),
         "PyTorch jobs on a Lingjun resource quota", wire="Settings.EnableSanityCheck"),
    Case("sanity no gpu", {**LJ_QUOTA, "resources.roles[0].gpu": 0, "fault_tolerance.sanity_check": True},
         ("fault_tolerance.sanity_check",), "at least one GPU"),
    Case("sanity tensorflow", {**LJ_QUOTA, "resources.framework": "TensorFlow", "resources.roles[0].gpu": 1,
                               "fault_tolerance.sanity_check": True}, ("fault_tolerance.sanity_check",), "PyTorch"),
    Case("sanity args need toggle", {"fault_tolerance.sanity_args": "--x"}, ("fault_tolerance.sanity_args",),
         "sanity check turned on"),
    # ---- RAM role ---------------------------------------------------------------------------------------
    Case("default role ok", {"ram_role.mode": "default"}),
    Case("custom role ok", {"ram_role.mode": "custom", "ram_role.role_arn": "acs:ram::1234567890:role/my-role"}),
    Case("custom role arn required", {"ram_role.mode": "custom"}, ("ram_role.role_arn",), "Enter the ARN"),
    Case("custom role arn format", {"ram_role.mode": "custom", "ram_role.role_arn": "my-role"},
         ("ram_role.role_arn",), "acs:ram::<account-id>:role/<role-name>",
         wire="CredentialConfig.CredentialConfigItems[0].Roles[0].RoleArn"),
    Case("arn needs custom", {"ram_role.mode": "default", "ram_role.role_arn": "acs:ram::1:role/x"},
         ("ram_role.role_arn",), "custom role"),
    Case("ram mode unknown", {"ram_role.mode": "admin"}, ("ram_role.mode",), "none, default, custom"),
    # ---- guardrail policy -------------------------------------------------------------------------------
    Case("policy source ok", {**QUOTA}, context={"policy": spec.Policy(allowed_sources=frozenset({"quota"}))}),
    Case("policy source", {}, ("resources.source",), "only allows these sources: Resource Quota",
         wire="JobSpecs[0].EcsSpec", context={"policy": spec.Policy(allowed_sources=frozenset({"quota"}))}),
    Case("policy nodes ok", {"resources.roles[0].count": 2}, context={"policy": spec.Policy(max_nodes=2)}),
    Case("policy nodes", {"resources.roles[0].count": 3}, ("resources.roles",), "at most 2 nodes",
         context={"policy": spec.Policy(max_nodes=2)}),
    Case("policy gpus", {**QUOTA, "resources.roles[0].gpu": 2, "resources.roles[0].count": 2},
         ("resources.roles",), "at most 2 GPUs per job (this job asks for 4)",
         context={"policy": spec.Policy(max_gpus=2)}),
    Case("policy gpus unknown", {}, ("resources.roles",), "GPU count of an instance type is unknown",
         context={"policy": spec.Policy(max_gpus=2)}),
    Case("policy gpus public ok", {}, context={"policy": spec.Policy(max_gpus=0), "specs": SPECS}),
    Case("policy duration ok", {"resources.max_duration": 1},
         context={"policy": spec.Policy(max_duration_minutes=1440)}),
    Case("policy duration cap", {}, ("resources.max_duration",), "at most 1 day.",
         wire="JobMaxRunningTimeMinutes", context={"policy": spec.Policy(max_duration_minutes=1440)}),
    Case("policy duration required", {"resources.max_duration": None}, ("resources.max_duration",),
         "Required by this workspace's guardrails (at most 1 day = 1440 minutes).",
         wire="JobMaxRunningTimeMinutes", context={"policy": spec.Policy(max_duration_minutes=1440)}),
    Case("policy image ok", {}, context={"policy": spec.Policy(allowed_image_prefixes=("registry.cn-hangzhou",))}),
    Case("policy image", {}, ("environment.image",), "only allows images starting with: docker.io/",
         context={"policy": spec.Policy(allowed_image_prefixes=("docker.io/",))}),
    Case("policy tags ok", {"basic.tags": [{"key": "cost-center", "value": "42"}]},
         context={"policy": spec.Policy(required_tag_keys=("cost-center",))}),
    Case("policy tags", {}, ("basic.tags",), "requires the tag 'cost-center'",
         context={"policy": spec.Policy(required_tag_keys=("cost-center",))}),
    Case("policy tag without a value", {"basic.tags": [{"key": "cost-center", "value": " "}]}, ("basic.tags",),
         "requires a value for the tag 'cost-center'",
         context={"policy": spec.Policy(required_tag_keys=("cost-center",))}),
    Case("policy image dot-dot", {"environment.image": "registry.example.com/team/../evil/x:1"},
         ("environment.image",), "'..' are not path segments",
         context={"policy": spec.Policy(allowed_image_prefixes=("registry.example.com/team/",))}),
    # ---- numbers beyond their bound: "too large (at most N)", not "not a number" (QA) ------------------------
    Case("count huge", {"resources.roles[0].count": "9" * 30}, ("resources.roles[0].count",),
         f"too large (at most {spec.MAX_POD_COUNT} per role)"),
    Case("count huge int", {"resources.roles[0].count": 10**20}, ("resources.roles[0].count",), "too large"),
    Case("count at bound ok", {"resources.roles[0].count": spec.MAX_POD_COUNT}),
    Case("count above bound", {"resources.roles[0].count": spec.MAX_POD_COUNT + 1}, ("resources.roles[0].count",),
         "too large"),
    Case("quota memory 100,000,000 GiB", {**QUOTA, "resources.roles[0].memory_gib": 100_000_000},
         ("resources.roles[0].memory_gib",), f"too large (at most {spec.MAX_MEMORY_GIB} GiB per node)"),
    Case("quota memory digits", {**QUOTA, "resources.roles[0].memory_gib": "9" * 40},
         ("resources.roles[0].memory_gib",), "too large"),
    Case("quota memory at bound ok", {**QUOTA, "resources.roles[0].memory_gib": spec.MAX_MEMORY_GIB}),
    Case("quota cpu huge", {**QUOTA, "resources.roles[0].cpu": 1025}, ("resources.roles[0].cpu",),
         f"too large (at most {spec.MAX_CPU} per node)"),
    Case("quota gpu huge", {**QUOTA, "resources.roles[0].gpu": 17}, ("resources.roles[0].gpu",),
         f"too large (at most {spec.MAX_GPU} per node)"),
    Case("quota shm huge", {**QUOTA, "resources.roles[0].shared_memory_gib": "1e309"},
         ("resources.roles[0].shared_memory_gib",), "too large"),
    Case("duration huge", {"resources.max_duration": "9" * 25}, ("resources.max_duration",),
         f"too large (at most {spec.MAX_DURATION_DAYS} days)"),
    Case("duration above bound", {"resources.max_duration": spec.MAX_DURATION_DAYS + 1}, ("resources.max_duration",),
         "too large"),
    Case("duration at bound ok", {"resources.max_duration": spec.MAX_DURATION_DAYS}),
    Case("retention huge", {"resources.retention": 10**9, "resources.retention_unit": "hours"},
         ("resources.retention",), "too large"),
    Case("spot price huge", {**SPOT, "resources.bid_method": "price", "resources.spot_discount": None,
                             "resources.spot_price": "1e400"}, ("resources.spot_price",), "too large"),
    # ---- junk the rules used to accept (QA) ------------------------------------------------------------------
    Case("libs requirement syntax ok", {"environment.libs_mode": "list",
                                        "environment.libs": "torch==2.1.0 transformers[torch]>=4.40 numpy<2,>=1.24"}),
    Case("libs script tag", {"environment.libs_mode": "list", "environment.libs": "numpy\n<script>"},
         ("environment.libs",), "'<script>' is not a pip requirement", wire="ThirdpartyLibs"),
    # QA Q2.2: one requirement per line; spaces inside one are valid pip syntax.
    Case("libs spaces in a requirement ok", {"environment.libs_mode": "list",
                                             "environment.libs": "torch >= 2.0\nnumpy<2, >=1.24\n"}),
    Case("libs marker that is a command", {"environment.libs_mode": "list",
                                           "environment.libs": "numpy>=1.0; rm -rf /"},
         ("environment.libs",), "'numpy>=1.0; rm -rf /' is not a pip requirement. Put one", wire="ThirdpartyLibs"),
    Case("libs pip option", {"environment.libs_mode": "list", "environment.libs": "--index-url"},
         ("environment.libs",), "not a pip requirement"),
    Case("git commit ok", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                           "environment.code_commit": "3f9c2aB"}),
    Case("git full commit ok", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                "environment.code_commit": "a" * 40}),
    Case("git commit not a sha", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                  "environment.code_commit": "zzz-not-a-sha"}, ("environment.code_commit",),
         "7 to 40 hexadecimal", wire="CodeSource.Commit"),
    Case("git commit too short", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                  "environment.code_commit": "abc123"}, ("environment.code_commit",), "7 to 40"),
    Case("git commit too long", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                 "environment.code_commit": "a" * 41}, ("environment.code_commit",), "7 to 40"),
    # ---- what cannot be stored or sent: an error at the field, never a 500 (audit) ----------------------------
    # Not through the body: build() leaves the bad character out (storable_text); test_unstorable_text_in_a_body.
    Case("description NUL", {"basic.description": "a\x00b"}, ("basic.description",), "NUL character (\\u0000)"),
    Case("env value NUL", {"environment.envs": [{"key": "A", "value": "x\x00"}]}, ("environment.envs[0].value",),
         "NUL character"),
    Case("tag value lone surrogate", {"basic.tags": [{"key": "team", "value": "v\ud800"}]},
         ("basic.tags[0].value",), "lone surrogate"),
    Case("mount path NUL", {"environment.datasets": [{"id": "d-1", "mount_path": "/mnt/a\x00"}]},
         ("environment.datasets[0].mount_path",), "NUL character"),
    Case("branch NUL", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                        "environment.code_branch": "main\x00"}, ("environment.code_branch",), "NUL character"),
    Case("fault tolerance args NUL", {"fault_tolerance.enabled": True, "fault_tolerance.args": "--x \x00"},
         ("fault_tolerance.args",), "NUL character"),
    Case("registry password lone surrogate", {"environment.image_type": "address", "environment.registry_username": "u",
                                              "environment.registry_password": "p\ud800"},
         ("environment.registry_password",), "lone surrogate"),
    # The Advanced field's JSON escapes get past the form's own NUL check.
    Case("advanced NUL escape", {**RAY, "resources.advanced": '{"RayRedisAddress": "a\\u0000"}'},
         ("resources.advanced",), "RayRedisAddress: Must not contain a NUL character"),
    Case("advanced lone surrogate escape", {**RAY, "resources.advanced": '{"RayRedisAddress": "\\ud800"}'},
         ("resources.advanced",), "RayRedisAddress: Must not contain a lone surrogate"),
    Case("advanced lone surrogate key", {**RAY, "resources.advanced": '{"\\ud800": "1"}'},
         ("resources.advanced",), "A key must not contain a lone surrogate"),
    Case("advanced NaN", {**RAY, "resources.advanced": '{"RayRuntimeEnv": {"x": NaN}}'}, ("resources.advanced",),
         "Invalid JSON: NaN is not a JSON number"),
    Case("advanced Infinity", {**RAY, "resources.advanced": '{"RayRuntimeEnv": {"x": -Infinity}}'},
         ("resources.advanced",), "-Infinity is not a JSON number"),
    Case("advanced nested too deep", {**RAY, "resources.advanced": '{"RayRuntimeEnv": ' + '{"a":' * 600 + "1" +
                                      "}" * 601}, ("resources.advanced",),
         "RayRuntimeEnv: Nested too deeply: at most 32 levels"),
    Case("advanced nested 31 ok", {**RAY, "resources.advanced": '{"RayRuntimeEnv": ' + '{"a":' * 30 + "1" +
                                   "}" * 31}),
    Case("advanced nested as an object", {**RAY, "resources.advanced": {"RayRuntimeEnv": {"x": float("nan")}}},
         ("resources.advanced",), "RayRuntimeEnv: Must be a finite number"),
    # ---- tiny CPU and memory: Kubernetes quantities, not exponents (audit) ----------------------------------
    Case("quota cpu one millicore ok", {**QUOTA, "resources.roles[0].cpu": "0.001",
                                        "resources.roles[0].memory_gib": "0.001"}),
    Case("quota cpu below a millicore", {**QUOTA, "resources.roles[0].cpu": 1e-7}, ("resources.roles[0].cpu",),
         "at least 0.001 (one millicore", wire="JobSpecs[0].ResourceConfig.CPU"),
    Case("quota cpu finer than millicores", {**QUOTA, "resources.roles[0].cpu": "1.0005"},
         ("resources.roles[0].cpu",), "at most 3 decimals (millicores), e.g. 0.5 or 1.25; 1.0005 is finer"),
    Case("quota memory below 1 MiB", {**QUOTA, "resources.roles[0].memory_gib": "0.000000001"},
         ("resources.roles[0].memory_gib",), "at least 0.001 GiB (about 1 MiB)",
         wire="JobSpecs[0].ResourceConfig.Memory"),
    Case("quota shared memory below 1 MiB", {**QUOTA, "resources.roles[0].shared_memory_gib": 0.0001},
         ("resources.roles[0].shared_memory_gib",), "Shared memory, when set, must be at least 0.001 GiB"),
    Case("quota shared memory 0 ok", {**QUOTA, "resources.roles[0].shared_memory_gib": 0}),
    # ---- odd values the rules let through (audit) -------------------------------------------------------------
    Case("port list leading zero", {"resources.advanced": "customPortList=010000"}, ("resources.advanced",),
         "write '010000' without leading zeros"),
    Case("port list range leading zero", {"resources.advanced": "customPortList=10000-010010"},
         ("resources.advanced",), "without leading zeros"),
    Case("port list arabic digits", {"resources.advanced": "customPortList=\u0661\u0660\u0660\u0660\u0660"},
         ("resources.advanced",), "is not a port or a start-end range (ASCII digits)"),
    Case("image name at its bound ok", {"environment.image": "r.io/" + "a" * 250 + ":1"}),
    Case("image name too long", {"environment.image": "r.io/" + "a" * 251 + ":1"}, ("environment.image",),
         "at most 255 characters; this one has 256", wire="JobSpecs[0].Image"),
    Case("image address 40,000 characters", {"environment.image": "a" * 40_000}, ("environment.image",),
         "The image address is too long"),
    Case("mount path at PATH_MAX ok", {"environment.datasets": [{"id": "d-1", "mount_path": "/a" * 2047 + "b"}]}),
    Case("mount path beyond PATH_MAX", {"environment.datasets": [{"id": "d-1", "mount_path": "/" + "a" * 10_000}]},
         ("environment.datasets[0].mount_path",), "at most 4095 bytes (Linux PATH_MAX)"),
    Case("mount path name beyond NAME_MAX", {"environment.storages": [{"type": "oss", "uri": "oss://bucket/x",
                                                                        "mount_path": "/mnt/" + "a" * 256}]},
         ("environment.storages[0].mount_path",), "at most 255 bytes (Linux NAME_MAX)"),
    Case("requirements dir beyond PATH_MAX", {"environment.libs_mode": "requirements",
                                              "environment.requirements_dir": "/" + "a/" * 3000},
         ("environment.requirements_dir",), "PATH_MAX"),
    Case("vpc id too long", {**VPC, "vpc.vpc_id": "vpc-" + "a" * 10_000}, ("vpc.vpc_id",), "at most 64 characters",
         wire="UserVpc.VpcId"),
    Case("security group id too long", {**VPC, "vpc.security_group_id": "sg-" + "1" * 62}, ("vpc.security_group_id",),
         "at most 64 characters"),
    Case("arn 16-digit account ok", {"ram_role.mode": "custom",
                                     "ram_role.role_arn": "acs:ram::1234567890123456:role/my-role"}),
    Case("arn account id too long", {"ram_role.mode": "custom", "ram_role.role_arn": f"acs:ram::{'1' * 10_000}:role/a"},
         ("ram_role.role_arn",), "at most 16 digits",
         wire="CredentialConfig.CredentialConfigItems[0].Roles[0].RoleArn"),
    Case("arn non-ascii digits", {"ram_role.mode": "custom", "ram_role.role_arn": "acs:ram::\u0661\u0662:role/a"},
         ("ram_role.role_arn",), "acs:ram::<account-id>"),
    Case("git branch ok", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                           "environment.code_branch": "release/v1.2_rc-1"}),
    Case("git branch with a space", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                     "environment.code_branch": "my branch"}, ("environment.code_branch",),
         "no spaces", wire="CodeSource.Branch"),
    Case("git branch dot-dot", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                "environment.code_branch": "a..b"}, ("environment.code_branch",), "no '..'"),
    Case("git branch option-like", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                    "environment.code_branch": "-f"}, ("environment.code_branch",),
         "does not start with '-'"),
    Case("git branch .lock", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                              "environment.code_branch": "topic/x.lock"}, ("environment.code_branch",), ".lock"),
    Case("git branch too long", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                 "environment.code_branch": "b" * 256}, ("environment.code_branch",), "at most 255"),
    # ---- whole job --------------------------------------------------------------------------------------
    Case("body size", {"basic.description": "x" * 70000}, ("",), "at most 65536", wire=""),
    Case("rows not a list", {"environment.datasets": "d-1"}, ("environment.datasets",), "list of rows"),
    Case("section not an object", {"vpc": ["vpc-1"]}, ("vpc",), "section's fields"),
]


def _context(case: Case) -> spec.Context:
    values = {"datasets": DATASETS, **case.context}
    return spec.Context(**values)


def _apply(case: Case) -> dict:
    sections = base()
    for path, value in case.edits.items():
        _set(sections, path, copy.deepcopy(value))
    return sections


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case):
    sections = _apply(case)
    errors = spec.validate_sections(sections, _context(case))
    if not case.paths:
        assert errors == {}
        return
    assert set(errors) == set(case.paths), errors
    assert any(case.words in message for message in errors[case.paths[0]]), errors


WIRE_CASES = [c for c in CASES if c.wire is not None]


@pytest.mark.parametrize("case", WIRE_CASES, ids=[c.id for c in WIRE_CASES])
def test_rule_through_body(case: Case):
    """The same rule, the same message, reported at the wire path of the body build() makes."""
    sections = _apply(case)
    context = _context(case)
    body = spec.build(sections, include_secrets=True)
    errors = spec.validate(body, spec.Context(**{**context.__dict__, "hints": spec.hints_from_sections(sections)}))
    assert case.wire in errors, errors
    expected = spec.validate_sections(sections, context)[case.paths[0]]
    assert set(expected) <= set(errors[case.wire]), errors
    assert spec.wire_path(case.paths[0], sections) == case.wire


def test_case_count():
    assert len(CASES) >= 80
    assert len([c for c in CASES if c.paths]) >= 80


def test_base_is_valid():
    assert spec.validate_sections(base()) == {}
    assert C.FRAMEWORKS[base()["resources"]["framework"]].job_type == "PyTorchJob"


# ---- build: exact bodies ----------------------------------------------------------------------------------


def test_build_matches_seed_quota_example():
    """Seed [004] "subscription resource quota" example, built from the wizard."""
    s = spec.defaults()
    s["basic"]["name"] = "sample-dlc-job"
    s["environment"].update(
        image_type="official",
        image="registry-vpc.cn-hangzhou.aliyuncs.com/pai-dlc/tensorflow-training:1.15-cpu-py36-ubuntu18.04",
        command='echo "Hello World"')
    s["resources"].update(source="quota", quota_id="rs-xxx", framework="TensorFlow", max_duration=None,
                          roles=[{"role": "Worker", "count": 1, "cpu": "1", "memory_gib": 2}])
    assert spec.validate_sections(s) == {}
    assert spec.build(s, workspace_id="ws-1") == {
        "ResourceId": "rs-xxx", "WorkspaceId": "ws-1", "DisplayName": "sample-dlc-job", "JobType": "TFJob",
        "JobSpecs": [{"Type": "Worker", "Image": s["environment"]["image"], "PodCount": 1,
                      "ResourceConfig": {"CPU": "1", "Memory": "2Gi"}}],
        "UserCommand": 'echo "Hello World"',
    }


@pytest.mark.parametrize("method,limit", [("discount", {"SpotDiscountLimit": 0.4}),
                                          ("price", {"SpotPriceLimit": 0.011})])
def test_build_matches_seed_spot_examples(method, limit):
    s = spec.defaults()
    s["basic"]["name"] = "sample-spot-job"
    s["environment"].update(image="dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:1.12-cpu",
                            command="echo 'Hello World' && ls -R /mnt/data/ && sleep 30 && echo 'DONE'")
    s["resources"].update(source="spot", bid_method=method, spot_discount=40 if method == "discount" else None,
                          spot_price="0.011" if method == "price" else None, max_duration=None,
                          roles=[{"role": "Worker", "count": 1, "instance_type": "ecs.g7.xlarge"}])
    s["vpc"].update(vpc_id="vpc-0jlq8l7qech3m2ta2", switch_id="vsw-0jlc46eg4k3pivwpz8",
                    security_group_id="sg-0jl4bd9wwh5auei9", gateway="")
    assert spec.validate_sections(s) == {}
    assert spec.build(s, workspace_id="12345") == {
        "WorkspaceId": "12345", "DisplayName": "sample-spot-job", "JobType": "PyTorchJob",
        "JobSpecs": [{"Type": "Worker", "Image": s["environment"]["image"], "PodCount": 1,
                      "EcsSpec": "ecs.g7.xlarge", "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit", **limit}}],
        "UserVpc": {"VpcId": "vpc-0jlq8l7qech3m2ta2", "SwitchId": "vsw-0jlc46eg4k3pivwpz8",
                    "SecurityGroupId": "sg-0jl4bd9wwh5auei9"},
        "UserCommand": s["environment"]["command"],
    }


def test_build_full_quota_job():
    s = _apply(Case("", {**QUOTA, **VPC}))
    s["basic"].update(tags=[{"key": "team", "value": "a,b"}], description=" nightly ")
    s["environment"].update(
        datasets=[{"kind": "public", "id": "d-pub", "read_only": True, "mount_path": "/mnt/pub"},
                  {"kind": "custom", "id": "d-1", "version": "v3", "read_only": None}],
        storages=[{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/x", "mount_path": "/mnt/nas",
                   "options": '{"nconnect":"4"}'}],
        envs=[{"key": "EPOCHS", "value": "10"}], libs_mode="requirements",
        requirements_dir="/mnt/code/requirements.txt", code_mode="git", code_source_id="code-1",
        code_mount_path="/mnt/code")
    s["resources"].update(priority=5, node_scheduling=True, idle_resources=True, cpu_affinity=True, dsw=True,
                          scheduling_policy="centralized", max_duration=2, max_duration_unit="hours", retention=1,
                          retention_unit="days", advanced="createSvcForAllWorkers=true,customPortNumPerWorker=100")
    s["resources"]["roles"][0].update(gpu=1, shared_memory_gib=8, node_names=["n1", "n2"])
    s["vpc"].update(extended_cidrs=["10.0.0.0/8"], gateway="private")
    s["fault_tolerance"].update(enabled=True, args="--enable-log-hang-detection true")
    s["ram_role"].update(mode="custom", role_arn="acs:ram::123:role/train")
    assert spec.validate_sections(s) == {}
    body = spec.build(s)
    assert body == {
        "DisplayName": "mnist-train_1.0", "Description": "nightly", "JobType": "PyTorchJob",
        "JobSpecs": [{"Type": "Worker", "Image": s["environment"]["image"], "PodCount": 1,
                      "ResourceConfig": {"CPU": "4", "GPU": "1", "Memory": "16Gi", "SharedMemory": "8Gi"},
                      "AssignNodeSpec": {"EnableAssignNode": True, "NodeNames": "n1,n2"}}],
        "UserCommand": "python train.py",
        "DataSources": [{"DataSourceId": "d-pub", "MountAccess": "RO", "MountPath": "/mnt/pub"},
                        {"DataSourceId": "d-1", "DataSourceVersion": "v3"},
                        {"Uri": "nas://31a8e4.cn-hangzhou/x", "MountPath": "/mnt/nas", "Options": '{"nconnect":"4"}'}],
        "Envs": {"EPOCHS": "10"}, "ThirdpartyLibDir": "/mnt/code",
        "CodeSource": {"CodeSourceId": "code-1", "MountPath": "/mnt/code"},
        "ResourceId": "quota-gen", "Priority": 5, "SchedulingStrategy": C.SCHEDULING_POLICIES["centralized"],
        "JobMaxRunningTimeMinutes": 120,
        "Settings": {"Tags": {"team": "a,b"}, "OversoldType": "AcceptQuotaOverSold", "EnableCPUAffinity": True,
                     "EnableDSWDev": True, "JobReservedMinutes": 1440, "JobReservedPolicy": "Always",
                     "AdvancedSettings": {"createSvcForAllWorkers": "true", "customPortNumPerWorker": "100"},
                     "EnableErrorMonitoringInAIMaster": True,
                     "ErrorMonitoringArgs": "--enable-log-hang-detection true"},
        "UserVpc": {"VpcId": "vpc-0jlq8l7qech3m2ta2", "SecurityGroupId": "sg-0jl4bd9wwh5auei9",
                    "ExtendedCIDRs": ["10.0.0.0/8"], "DefaultRoute": "eth1"},
        "CredentialConfig": {"EnableCredentialInject": True, "AliyunEnvRoleKey": "0", "CredentialConfigItems": [
            {"Key": "0", "Type": "Role", "Roles": [{"RoleType": "service", "RoleArn": "acs:ram::123:role/train"}]}]},
    }
    hints = spec.hints_from_sections(s)
    assert spec.build(spec.inverse(body, hints)) == body
    assert spec.validate(body, spec.Context(hints=hints)) == {}


def test_libs_are_one_requirement_per_line_and_the_older_space_separated_form_still_reads():
    def libs(text: str) -> list[str]:
        return spec.build(_apply(Case("", {"environment.libs_mode": "list", "environment.libs": text})))[
            "ThirdpartyLibs"]

    assert libs("torch >= 2.0\n\n  numpy; python_version > '3.8'  \r\npandas==2.2") == [
        "torch >= 2.0", "numpy; python_version > '3.8'", "pandas==2.2"]
    assert libs("numpy>=1.0; rm -rf /") == ["numpy>=1.0; rm -rf /"], "one line, one (invalid) requirement"
    assert libs("griffon numpy pandas==2.2") == ["griffon", "numpy", "pandas==2.2"], "a saved template's text"
    assert libs("transformers[torch,vision]>=4.40") == ["transformers[torch,vision]>=4.40"], "no comma split"
    body = {**spec.build(base()), "ThirdpartyLibs": ["torch >= 2.0", "numpy"]}
    assert spec.inverse(body)["environment"]["libs"] == "torch >= 2.0\nnumpy"
    assert spec.build(spec.inverse(body))["ThirdpartyLibs"] == ["torch >= 2.0", "numpy"]


def test_bad_libraries_are_one_message_listing_at_most_five_lines():
    text = "\n".join(["numpy", "torch >= 2.0"] + [f"bad lib {i} !" for i in range(7)])
    errors = spec.validate_sections(_apply(Case("", {"environment.libs_mode": "list", "environment.libs": text})))
    assert list(errors) == ["environment.libs"] and len(errors["environment.libs"]) == 1
    message = errors["environment.libs"][0]
    assert message.startswith("7 lines are not pip requirements: 'bad lib 0 !', 'bad lib 1 !', 'bad lib 2 !', "
                              "'bad lib 3 !', 'bad lib 4 !' and 2 more. Put one requirement per line")
    assert "torch" not in message.split(".")[0]


def test_libraries_never_reach_a_shell_command():
    # DLC takes ThirdpartyLibs as a JSON list and installs them itself; the console's only shell text, the
    # `dlc submit` params file and its command, has no key for them, so a job with libraries has no params file.
    from jobs import export

    body = spec.build(_apply(Case("", {"environment.libs_mode": "list", "environment.libs": "numpy; os_name == 'x'"})))
    assert body["ThirdpartyLibs"] == ["numpy; os_name == 'x'"]
    assert export.to_params_file(body) is None
    assert "os_name" not in (export.params_submit_command(body) or "")


def test_build_libs_split_on_whitespace_and_default_role():
    s = _apply(Case("", {"environment.libs_mode": "list", "environment.libs": " griffon  numpy\tpandas ",
                         "ram_role.mode": "default"}))
    body = spec.build(s)
    assert body["ThirdpartyLibs"] == ["griffon", "numpy", "pandas"]
    assert body["CredentialConfig"] == {"EnableCredentialInject": True}


# ---- secrets ----------------------------------------------------------------------------------------------


def _secret_job() -> dict:
    s = _apply(Case("", {**RAY, "environment.image_type": "address", "environment.registry_username": "bob",
                         "environment.registry_password": " s3cret ",
                         "resources.advanced": '{"RayRedisAddress": "r:6379", "RayRedisPassword": "pw"}'}))
    assert spec.validate_sections(s) == {}
    return s


def test_build_leaves_secrets_out_by_default():
    s = _secret_job()
    stored = spec.build(s)
    assert stored["JobSpecs"][0]["ImageConfig"] == {"Username": "bob"}
    assert stored["Settings"]["AdvancedSettings"] == {"RayRedisAddress": "r:6379"}
    full = spec.build(s, include_secrets=True)
    assert full["JobSpecs"][0]["ImageConfig"] == {"Username": "bob", "Password": " s3cret "}
    assert full["Settings"]["AdvancedSettings"]["RayRedisPassword"] == "pw"
    assert spec.strip_secrets(full) == stored
    assert spec.SECRET_PATHS == ("JobSpecs[*].ImageConfig.Password", "Settings.AdvancedSettings.RayRedisPassword")


def test_stored_body_with_hints_is_valid_and_clones_with_placeholders():
    s = _secret_job()
    stored, hints = spec.build(s), spec.hints_from_sections(s)
    assert hints["secrets"] == ["registry_password", "RayRedisPassword"]
    assert spec.validate(stored, spec.Context(hints=hints)) == {}
    clone = spec.inverse(stored, hints)
    assert clone["environment"]["registry_password"] == spec.SECRET_PLACEHOLDER
    assert spec.SECRET_PLACEHOLDER in clone["resources"]["advanced"]
    assert spec.build(clone) == stored
    with pytest.raises(ValueError, match="placeholder"):
        spec.build(clone, include_secrets=True)
    # Without the hints, the stored body lacks the password the username needs.
    assert "JobSpecs[0].ImageConfig.Password" in spec.validate(stored)


# ---- inverse ----------------------------------------------------------------------------------------------


def test_inverse_derives_console_choices():
    body = {
        "DisplayName": "j", "JobType": "MPIJob", "UserCommand": "run",
        "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 2, "EcsSpec": "ecs.g7.xlarge",
                      "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit", "SpotPriceLimit": 0.02}}],
        "DataSources": [{"DataSourceId": "d-1", "MountAccess": "RO"},
                        {"Uri": "oss://bkt/x", "MountPath": "/a"},
                        {"Uri": "nas://extreme-1.cn-hangzhou/", "MountPath": "/b"},
                        {"Uri": "nas://cpfs-1.cn-hangzhou/", "MountPath": "/c"},
                        {"Uri": "nas://31a8.cn-hangzhou/", "MountPath": "/d"},
                        {"Uri": "oss://bkt/code/", "MountPath": "/code"}],
        "JobMaxRunningTimeMinutes": 2880,
        "Settings": {"JobReservedMinutes": 90, "JobReservedPolicy": "Always"},
        "CredentialConfig": {"EnableCredentialInject": True},
        "UserVpc": {"VpcId": "vpc-1", "SecurityGroupId": "sg-1"},
    }
    hints = {"framework": "MPI", "dataset_kinds": ["public"], "code_upload": True, "image_type": "custom"}
    s = spec.inverse(body, hints)
    env, res = s["environment"], s["resources"]
    assert res["framework"] == "MPI" and spec.inverse(body)["resources"]["framework"] == "MPIJob"
    assert (res["source"], res["bid_method"], res["spot_price"]) == ("spot", "price", 0.02)
    assert env["image_type"] == "custom" and spec.inverse(body)["environment"]["image_type"] == "address"
    assert env["datasets"][0]["kind"] == "public" and env["datasets"][0]["read_only"] is True
    assert [st["type"] for st in env["storages"]] == ["oss", "extreme_nas", "cpfs", "nas"]
    assert (env["code_mode"], env["code_upload_uri"], env["code_mount_path"]) == ("upload", "oss://bkt/code/", "/code")
    assert (res["max_duration"], res["max_duration_unit"]) == (2, "days")
    assert (res["retention"], res["retention_unit"]) == (90, "minutes")
    assert s["ram_role"] == {"mode": "default", "role_arn": ""}
    assert spec.build(s) == body
    assert spec.validate(body, spec.Context(hints=hints)) == {}


def test_inverse_keeps_wizard_units_from_hints():
    body = spec.build(_apply(Case("", {"resources.max_duration": 48, "resources.max_duration_unit": "hours"})))
    assert spec.inverse(body)["resources"]["max_duration"] == 2
    again = spec.inverse(body, {"max_duration_unit": "hours"})["resources"]
    assert (again["max_duration"], again["max_duration_unit"]) == (48, "hours")


# ---- validate(body): wire-level checks --------------------------------------------------------------------

SEED_QUOTA_BODY = {
    "ResourceId": "rs-1", "WorkspaceId": "ws-1", "DisplayName": "sample-dlc-job", "JobType": "TFJob",
    "JobSpecs": [{"Type": "Worker", "Image": "registry-vpc.cn-hangzhou.aliyuncs.com/pai-dlc/tf:1.15", "PodCount": 1,
                  "ResourceConfig": {"CPU": "1", "Memory": "2Gi"}}],
    "UserCommand": 'echo "Hello World"',
}


def _with(body: dict, path: str, value: Any) -> dict:
    body = copy.deepcopy(body)
    _set(body, path, value)
    return body


@pytest.mark.parametrize("path,value,wire,words", [
    ("Accessibility", "PUBLIC", "Accessibility", "Not supported by this console"),
    ("JobSpecs[0].PodCount", "2", "JobSpecs[0].PodCount", "whole number"),
    ("JobSpecs[0].ResourceConfig.CPU", 1, "JobSpecs[0].ResourceConfig.CPU", "Must be a string"),
    ("JobSpecs[0].ResourceConfig.Memory", "2G", "JobSpecs[0].ResourceConfig.Memory", "number of GiB"),
    ("JobSpecs[0].ResourceConfig.CPU", "1.0", "JobSpecs[0].ResourceConfig.CPU", 'sent as "1"'),
    ("JobSpecs[1]", {"Type": "PS", "Image": "other", "PodCount": 1, "ResourceConfig": {"CPU": "1", "Memory": "2Gi"}},
     "JobSpecs[1].Image", "same image"),
    ("JobSpecs[0].EcsSpec", "ecs.g7.xlarge", "JobSpecs[0].EcsSpec", "not an instance type"),
    ("Settings.EnableDSWDev", False, "Settings.EnableDSWDev", "Send true or leave"),
    ("Settings.OversoldType", "ForceQuotaOverSold", "Settings.OversoldType", "'AcceptQuotaOverSold' (use the quota's"),
    ("Settings.JobReservedPolicy", "Never", "Settings.JobReservedPolicy", "must be 'Always'"),
    ("DisplayName", None, "DisplayName", "Enter a job name"),
    ("JobType", "SlurmJob", "JobType", "Unknown framework 'SlurmJob'"),
    ("Priority", 0, "Priority", "1 (lowest) to 9"),
    ("UserVpc", {"VpcId": "vpc-1"}, "UserVpc.SecurityGroupId", "Choose a security group"),
    ("ThirdpartyLibDir", "mnt/x", "ThirdpartyLibDir", "absolute"),
    ("ThirdpartyLibs", ["numpy"], "ThirdpartyLibs", None),
    ("CredentialConfig", {"EnableCredentialInject": False}, "CredentialConfig.EnableCredentialInject", "default role"),
    ("JobSpecs", "Worker", "JobSpecs", "Must be a list"),
])
def test_validate_body(path, value, wire, words):
    body = _with(SEED_QUOTA_BODY, path, value)
    if path == "ThirdpartyLibs":  # both library fields at once
        body["ThirdpartyLibDir"] = "/mnt/x"
        wire, words = "ThirdpartyLibDir", "choose one library mode"
    errors = spec.validate(body)
    assert wire in errors, errors
    assert any(words in m for m in errors[wire]), errors


def test_validate_body_spot_rules():
    spot = {"DisplayName": "s", "JobType": "PyTorchJob", "UserCommand": "x",
            "JobSpecs": [{"Type": "Worker", "Image": "i", "PodCount": 1, "EcsSpec": "ecs.g7.xlarge",
                          "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit", "SpotDiscountLimit": 0.4}}]}
    assert spec.validate(spot) == {}
    both = _with(spot, "JobSpecs[0].SpotSpec.SpotPriceLimit", 0.01)
    assert spec.validate(both) == {"JobSpecs[0].SpotSpec.SpotPriceLimit": ["Set only one bid: by discount or by "
                                                                           "price."]}
    assert "JobSpecs[0].SpotSpec.SpotStrategy" in spec.validate(_with(spot, "JobSpecs[0].SpotSpec.SpotStrategy", None))
    assert "JobSpecs[0].SpotSpec.SpotDiscountLimit" in spec.validate(
        _with(spot, "JobSpecs[0].SpotSpec.SpotDiscountLimit", 0.45))
    lingjun = spec.Context(hints={"resource_type": "lingjun"})
    assert set(spec.validate(spot, lingjun)) == {"UserVpc.VpcId", "UserVpc.SwitchId"}
    specs = spec.Context(specs={"ecs.g7.xlarge": {"cpu": 4, "gpu": 0, "resource_type": "Lingjun"}})
    assert "UserVpc.VpcId" in spec.validate(spot, specs)  # resource type derived from the instance catalog


@pytest.mark.parametrize("field, value, message", [
    ("spot_price", "1e400", "The maximum price is too large."),
    ("spot_price", "cheap", "The maximum price must be a number."),
    ("spot_discount", "40.5", "The discount must be a whole percentage from 10 to 90."),
])
def test_a_bid_that_does_not_parse_gets_one_message_not_also_missing(field, value, message):
    # Was that message and "Enter the maximum price (CNY per minute)." / "Choose the maximum discount (10% to 90%).":
    # a bid the user typed is not missing.
    s = base()
    s["resources"].update(source="spot", bid_method="price" if field == "spot_price" else "discount",
                          **{field: value})
    assert spec.validate_sections(s) == {f"resources.{field}": [message]}


@pytest.mark.parametrize("bid, message", [
    ({"SpotPriceLimit": 1e20}, "The maximum price is too large."),
    ({"SpotDiscountLimit": 0.405}, "The discount must be a whole percentage from 10 to 90."),
])
def test_a_bid_the_api_sends_out_of_range_gets_one_message(bid, message):
    body = _with(spec.build(base()), "JobSpecs[0].SpotSpec", {"SpotStrategy": "SpotWithPriceLimit", **bid})
    assert spec.validate(body) == {f"JobSpecs[0].SpotSpec.{next(iter(bid))}": [message]}


def test_validate_body_accepts_empty_fields_and_rejects_non_objects():
    body = dict(SEED_QUOTA_BODY, Description="", DataSources=[], Envs={}, Settings={}, CustomEnvs=[])
    assert spec.validate(body) == {}
    assert spec.validate(["not", "a", "job"]) == {"": ["The request body must be a JSON object."]}
    assert spec.validate({"JobSpecs": "x"})["JobSpecs"] == ["Must be a list."]
    assert "JobSpecs[0].Image" not in spec.validate({"JobSpecs": "x"})  # no noise under a broken field


@pytest.mark.parametrize("field,given,words", [
    ("UserCommand", "echo hi\n", "Ends with a line break"),
    ("UserCommand", "echo hi \t", "Ends with a space and a tab"),
    ("UserCommand", "\n echo hi\r\n", "Starts with a line break and a space and ends with a line break"),
    ("DisplayName", " train ", "Starts with a space and ends with a space"),
])
def test_text_the_wizard_trims_is_refused_saying_what_surrounds_it(field, given, words):
    # QA: "Not in the console's form: it would be sent as ..." did not say that only the whitespace differed.
    errors = spec.validate({**SEED_QUOTA_BODY, field: given})
    assert errors == {field: [f"{words}, which the console's form trims: send \"{given.strip()}\"."]}


# ---- paths ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("section_path,wire", [
    ("basic.name", "DisplayName"),
    ("basic.tags[3].key", "Settings.Tags"),
    ("environment.image", "JobSpecs[0].Image"),
    ("environment.envs[0].key", "Envs"),
    ("environment.datasets[1].read_only", "DataSources[1].MountAccess"),
    ("environment.storages[0].options", "DataSources[2].Options"),
    ("environment.code_upload_uri", "DataSources[3].Uri"),
    ("environment.code_mount_path", "DataSources[3].MountPath"),
    ("resources.roles[1].memory_gib", "JobSpecs[1].ResourceConfig.Memory"),
    ("resources.roles[0].node_names", "JobSpecs[0].AssignNodeSpec.NodeNames"),
    ("resources.spot_discount", "JobSpecs[0].SpotSpec.SpotDiscountLimit"),
    ("resources.max_duration_unit", "JobMaxRunningTimeMinutes"),
    ("resources.advanced", "Settings.AdvancedSettings"),
    ("vpc.gateway", "UserVpc.DefaultRoute"),
    ("fault_tolerance.sanity_args", "Settings.SanityCheckArgs"),
    ("ram_role.role_arn", "CredentialConfig.CredentialConfigItems[0].Roles[0].RoleArn"),
    ("", ""),
])
def test_paths_both_ways(section_path, wire):
    s = base()
    s["environment"].update(datasets=[{"id": "a"}, {"id": "b"}], storages=[{"type": "oss", "uri": "oss://bb/x"}],
                            code_mode="upload")
    s["resources"]["roles"].append({"role": "Master"})
    assert spec.wire_path(section_path, s) == wire
    back = spec.field_for_path(wire, s)
    assert section_path.startswith(back) or back.startswith(section_path.split("[")[0]), back


@pytest.mark.parametrize("wire,field", [
    ("JobSpecs[2].Image", "environment.image"),
    ("JobSpecs[1].ImageConfig.Password", "environment.registry_password"),
    ("JobSpecs[1].ResourceConfig.GPUType", "resources.roles[1]"),
    ("JobSpecs[0].SpotSpec.SpotStrategy", "resources.bid_method"),
    ("JobSpecs[0].AssignNodeSpec.EnableAssignNode", "resources.node_scheduling"),
    ("Settings.Tags.team", "basic.tags"),
    ("Envs.FOO", "environment.envs"),
    ("Settings.AdvancedSettings.customPortList", "resources.advanced"),
    ("UserVpc.ExtendedCIDRs[1]", "vpc.extended_cidrs"),
    ("Settings.JobReservedPolicy", "resources.retention"),
    ("Accessibility", ""),
    ("Settings.Unknown", ""),
    ("ResourceId", "resources.quota_id"),
])
def test_field_for_path(wire, field):
    assert spec.field_for_path(wire) == field


# ---- notes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("edits,path,words", [
    ({**LJ_QUOTA, "environment.image_type": "custom"}, "environment.image_type", "RDMA drivers"),
    ({**QUOTA, "fault_tolerance.enabled": True}, "fault_tolerance.enabled", "1 CPU core and 1 GiB"),
    ({"fault_tolerance.enabled": True}, "fault_tolerance.enabled", "ecs.c6.large"),
    ({"resources.retention": 2}, "resources.retention", "cannot be restored"),
    ({}, "vpc.vpc_id", "public network"),
    ({**VPC}, "vpc.vpc_id", "same region"),
    ({**VPC, "vpc.switch_id": "vsw-1"}, "vpc.extended_cidrs", "CIDR"),
    ({**RAY, "environment.envs": [{"key": "A", "value": "1"}], "resources.advanced": "RayRuntimeEnv={pip: x}"},
     "environment.envs", "overrides"),
    ({"environment.envs": [{"key": "RANK", "value": "1"}]}, "environment.envs[0].key", "set by DLC"),
    ({"environment.code_mode": "upload"}, "environment.code_mode", "cannot upload local code"),
    ({"environment.code_mode": "git", "environment.code_mount_path": "/mnt/data"}, "environment.command",
     "python /mnt/data/train.py"),
    ({"resources.advanced": "customPortList=10000"}, "resources.advanced", "createSvcForAllWorkers"),
    ({**QUOTA, "resources.advanced": "EnableJumboFrame=true"}, "resources.advanced", "generation is unknown"),
    ({"resources.framework": "MPI"}, "resources.framework", "not confirmed"),
    ({}, "resources.roles", "not checked"),
    ({**SPOT}, "resources.source", "no availability guarantee"),
    ({**QUOTA, "resources.idle_resources": True}, "resources.idle_resources", "stopped automatically"),
    ({"environment.storages": [{"type": "oss", "uri": "oss://bucket/x", "mount_path": "/m", "options": '{"foo": 1}'}]},
     "environment.storages[0].options", "'foo' is not a documented advanced setting for OSS"),
    ({"environment.datasets": [{"id": "d-unknown"}]}, "environment.datasets[0].id", "If this is a CPFS dataset"),
    ({"environment.storages": [{"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/a", "mount_path": "/m"}]},
     "environment.storages[0].uri", "needs a mount target"),
    ({"resources.advanced": "EnableResourcePreCheck=true"}, "resources.advanced", "uses no quota"),
    ({**SPOT, "resources.bid_method": "price", "resources.spot_discount": None, "resources.spot_price": 0.01},
     "resources.spot_price", "market price range"),
])
def test_notes(edits, path, words):
    notes = spec.notes(_apply(Case("", edits)))
    assert path in notes, notes
    assert any(words in n for n in notes[path]), notes


def test_no_public_network_note_where_a_vpc_is_required():
    """Lingjun preemptible resources require a VPC (an error says so): a note on running without one would
    contradict it."""
    sections = _apply(Case("", {**SPOT, **LINGJUN_PUBLIC}))
    assert "require a VPC" in " ".join(spec.validate_sections(sections)["vpc.vpc_id"])
    assert "vpc.vpc_id" not in spec.notes(sections)


def test_no_cpfs_hint_when_the_dataset_is_known_or_a_vpc_is_set():
    known = _apply(Case("", {"environment.datasets": [{"id": "d-oss"}]}))
    with_vpc = _apply(Case("", {"environment.datasets": [{"id": "d-unknown"}], **VPC}))
    assert "environment.datasets[0].id" not in spec.notes(known, spec.Context(datasets=DATASETS))
    assert "environment.datasets[0].id" not in spec.notes(with_vpc)


def test_jumbo_frame_on_a_lingjun_quota_is_an_error_without_a_contradicting_note():
    sections = _apply(Case("", {**LJ_QUOTA, "resources.advanced": "EnableJumboFrame=true"}))
    assert "General Computing 2.0" in " ".join(spec.validate_sections(sections)["resources.advanced"])
    assert not any("generation is unknown" in n for n in spec.notes(sections).get("resources.advanced", []))


# ---- helpers ----------------------------------------------------------------------------------------------


def test_prune_inapplicable_clears_hidden_fields():
    s = _apply(Case("", {"resources.priority": 4, "resources.dsw": True, "resources.roles[0].cpu": 2,
                         "resources.spot_price": 1, "environment.libs": "numpy", "ram_role.role_arn": "x"}))
    assert set(spec.validate_sections(s)) == {"resources.priority", "resources.dsw", "resources.roles[0].cpu",
                                              "resources.spot_price", "environment.libs", "ram_role.role_arn"}
    pruned = spec.prune_inapplicable(s)
    assert spec.validate_sections(pruned) == {}
    assert spec.build(pruned) == spec.build(base())
    assert s["resources"]["priority"] == 4  # the input is not modified


def test_defaults_take_policy_tags():
    policy = spec.Policy(default_tags={"owner": "ml-team"})
    s = spec.defaults(spec.Context(policy=policy))
    assert s["basic"]["tags"] == [{"key": "owner", "value": "ml-team"}]
    assert set(s) == set(spec.SECTIONS)
    assert s["resources"]["max_duration"] * C.DURATION_UNITS[s["resources"]["max_duration_unit"]] == \
        C.DEFAULT_MAX_DURATION_MINUTES


@pytest.mark.parametrize("text,parsed", [
    ("createSvcForAllWorkers=true,customPortNumPerWorker=100",
     {"createSvcForAllWorkers": "true", "customPortNumPerWorker": "100"}),
    ('{"RayRuntimeEnv": "{pip: requirements.txt, env_vars: {key: value}}"}',
     {"RayRuntimeEnv": "{pip: requirements.txt, env_vars: {key: value}}"}),
    ("RayRuntimeEnv={pip: r.txt, env_vars: {a: b}}, ReleaseResourcePolicy = pod-exit",
     {"RayRuntimeEnv": "{pip: r.txt, env_vars: {a: b}}", "ReleaseResourcePolicy": "pod-exit"}),
    ("", None),
])
def test_parse_advanced(text, parsed):
    assert spec.parse_advanced(text) == (parsed, "")
    if parsed:
        assert spec.parse_advanced(spec.format_advanced(parsed))[0] == parsed


@pytest.mark.parametrize("text, key, next_line", [
    ("createSvcForAllWorkers=true\ncustomPortNumPerWorker=100", "createSvcForAllWorkers",
     " (customPortNumPerWorker=…)"),
    ("RayRedisAddress=redis.internal:6379\r\nRayRedisPassword=hunter2", "RayRedisAddress", " (RayRedisPassword=…)"),
    ("RayRedisPassword=hunter2\nmore-of-it", "RayRedisPassword", ""),  # a secret is never quoted
    ("RayRedisPassword=it's\nRayRedisAddress=r:6379", "RayRedisPassword", " (RayRedisAddress=…)"),  # a lone quote
])
def test_advanced_entries_on_separate_lines_are_refused_not_run_together(text, key, next_line):
    # [004] plain text: "virgülle (,) ayrılmış bir dize ... anahtar=değer" (a string separated by commas, each entry
    # key=value). The field is a textarea: entries typed one per line were one value, so RayRedisAddress was sent as
    # "redis.internal:6379\nRayRedisPassword=hunter2" and the password never set (a boolean got "must be true or
    # false").
    parsed, message = spec.parse_advanced(text)
    assert parsed is None
    assert message == (f"The value of '{key}' runs onto the next line{next_line}: separate entries with commas, "
                       "e.g. createSvcForAllWorkers=true,customPortNumPerWorker=100, or write a JSON object.")
    assert not any(secret in message for secret in ("hunter2", "more-of-it", "it's"))
    # A line break after a comma, or inside {...} (a RayRuntimeEnv written over lines), separates nothing.
    assert spec.parse_advanced("a=b,\nc=d") == ({"a": "b", "c": "d"}, "")
    assert spec.parse_advanced("RayRuntimeEnv={pip: r.txt,\n env_vars: {a: b}}") == (
        {"RayRuntimeEnv": "{pip: r.txt,\n env_vars: {a: b}}"}, "")
    # A value with a line break (a job made through the API) is written back as JSON, so its clone still parses.
    assert spec.parse_advanced(spec.format_advanced({"RayRedisAddress": "a\nb"})) == ({"RayRedisAddress": "a\nb"}, "")
    sections = base()
    sections["resources"].update(framework="Ray", advanced=text, roles=[
        {"role": "Head", "count": 1, "instance_type": "ecs.g7.xlarge"},
        {"role": "Worker", "count": 1, "instance_type": "ecs.g7.xlarge"}])
    assert spec.validate_sections(sections)["resources.advanced"] == [message]


@pytest.mark.parametrize("text", ["RayRedisAddress=r:6379,RayRedisPassword=hunter2,tail",
                                  "RayRedisPassword=hunter2,tail,RayRedisAddress=r:6379"])
def test_a_comma_in_a_password_is_refused_without_quoting_the_password(text):
    # Was "Expected key=value entries ...; got 'tail'.": the page echoed part of RayRedisPassword, which it never shows
    # (the field is not written back into pages).
    parsed, message = spec.parse_advanced(text)
    assert parsed is None
    assert message == ("The value of 'RayRedisPassword' has a comma in it, which ends an entry in key=value text: "
                       'write the settings as a JSON object instead, e.g. {"RayRedisPassword": "..."}.')
    assert spec.parse_advanced('{"RayRedisPassword": "hunter2,tail"}') == ({"RayRedisPassword": "hunter2,tail"}, "")
    assert spec.parse_advanced("RayRedisPassword=hunter2,RayRedisAddress=r:6379") == (
        {"RayRedisPassword": "hunter2", "RayRedisAddress": "r:6379"}, "")
    assert spec.parse_advanced("foo") == (
        None, "Expected key=value entries separated by commas (or a JSON object); got 'foo'.")


def test_requirements_path_is_sent_as_its_folder():
    for path, folder in (("/mnt/code/requirements.txt", "/mnt/code"), ("/mnt/code", "/mnt/code"),
                         ("/requirements.txt", "/")):
        s = _apply(Case("", {"environment.libs_mode": "requirements", "environment.requirements_dir": path}))
        assert spec.build(s)["ThirdpartyLibDir"] == folder


def test_secrets_round_trip_through_storage():
    s = _secret_job()
    secrets = spec.extract_secrets(s)
    assert secrets == {"registry_password": " s3cret ", "RayRedisPassword": "pw"}
    stored, hints = spec.build(s), spec.hints_from_sections(s)
    clone = spec.inverse(stored, hints)
    assert spec.extract_secrets(clone) == {}
    filled = spec.fill_secrets(clone, secrets)
    assert spec.build(filled, include_secrets=True) == spec.build(s, include_secrets=True)


# ---- secret environment variables (the W&B key rule) -------------------------------------------------------

WANDB = "wandb-0123456789abcdef"


def _secret_env_job() -> dict:
    s = _apply(Case("", {"environment.envs": [{"key": "WANDB_API_KEY", "value": WANDB, "secret": True},
                                              {"key": "EPOCHS", "value": "3"}]}))
    assert spec.validate_sections(s) == {}
    return s


def test_a_secret_env_is_the_placeholder_in_the_stored_body_and_real_only_with_include_secrets():
    s = _secret_env_job()
    stored = spec.build(s)
    assert stored["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "EPOCHS": "3"}
    assert WANDB not in str(stored)
    assert spec.build(s, include_secrets=True)["Envs"] == {"WANDB_API_KEY": WANDB, "EPOCHS": "3"}
    assert spec.strip_secrets(spec.build(s, include_secrets=True)) == stored
    # The stored body is valid as it is (the API and the sync read it back).
    assert spec.validate(stored, spec.Context(hints=spec.hints_from_sections(s))) == {}


def test_secret_envs_round_trip_extract_inverse_fill():
    s = _secret_env_job()
    secrets = spec.extract_secrets(s)
    assert secrets == {"env:WANDB_API_KEY": WANDB}
    clone = spec.inverse(spec.build(s), spec.hints_from_sections(s))
    assert clone["environment"]["envs"] == [
        {"key": "WANDB_API_KEY", "value": spec.SECRET_PLACEHOLDER, "secret": True},
        {"key": "EPOCHS", "value": "3", "secret": False}]
    assert spec.extract_secrets(clone) == {}
    with pytest.raises(ValueError, match="placeholder"):
        spec.build(clone, include_secrets=True)
    filled = spec.fill_secrets(clone, secrets)
    assert spec.build(filled, include_secrets=True) == spec.build(s, include_secrets=True)
    # Only the placeholder is filled: a value typed over it wins.
    typed = copy.deepcopy(clone)
    typed["environment"]["envs"][0]["value"] = "typed"
    assert spec.fill_secrets(typed, secrets)["environment"]["envs"][0]["value"] == "typed"


def test_a_secret_env_without_a_value_must_be_typed_again():
    s = _apply(Case("", {"environment.envs": [{"key": "HF_TOKEN", "value": "", "secret": "on"}]}))
    errors = spec.validate_sections(s)
    assert "Type the value of HF_TOKEN again" in " ".join(errors["environment.envs[0].value"])
    plain = _apply(Case("", {"environment.envs": [{"key": "EMPTY_OK", "value": ""}]}))
    assert spec.validate_sections(plain) == {}
    bad = _apply(Case("", {"environment.envs": [{"key": "A", "value": "1", "secret": "maybe"}]}))
    assert spec.validate_sections(bad)["environment.envs[0].secret"] == ["Must be on or off."]


@pytest.mark.parametrize("name,secret", [
    ("WANDB_API_KEY", True), ("HF_TOKEN", True), ("GITHUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True),
    ("DB_PASSWORD", True), ("DB_PASSWD", True), ("OPENAI_APIKEY", True), ("MY_CREDENTIALS", True),
    ("RayRedisPassword", True), ("registry_password", True), ("accessKeyId", True), ("api_token", True),
    ("TOKENIZERS_PARALLELISM", False), ("PWD", False), ("EPOCHS", False), ("MASTER_ADDR", False),
    ("PASSPORT_DIR", False),
    # The one rule is the wide one the job page masked with: these match it (a lone KEY, a segment ending in
    # pass, "secret" run together) and are sealed too, the price of never leaking a value the page hides.
    ("KEY_COLUMN", True), ("BYPASS_CACHE", True), ("SECRETARY", True),
])
def test_looks_like_secret_matches_whole_segments(name, secret):
    assert spec.looks_like_secret(name) is secret


def test_a_plain_env_named_like_a_secret_gets_a_note_and_a_ticked_one_none():
    plain = _apply(Case("", {"environment.envs": [{"key": "WANDB_API_KEY", "value": "x"},
                                                  {"key": "TOKENIZERS_PARALLELISM", "value": "false"}]}))
    notes = spec.notes(plain)
    assert "Tick Secret" in " ".join(notes["environment.envs[0].key"])
    assert "environment.envs[1].key" not in notes
    ticked = _apply(Case("", {"environment.envs": [{"key": "WANDB_API_KEY", "value": "x", "secret": True}]}))
    assert "environment.envs[0].key" not in spec.notes(ticked)


def test_strip_secrets_hides_env_values_named_like_secrets():
    body = {"DisplayName": "j", "Envs": {"HF_TOKEN": "hf_abc", "TOKENIZERS_PARALLELISM": "false", "EMPTY_KEY": ""}}
    assert spec.strip_secrets(body)["Envs"] == {"HF_TOKEN": spec.SECRET_PLACEHOLDER,
                                                "TOKENIZERS_PARALLELISM": "false", "EMPTY_KEY": ""}
    assert body["Envs"]["HF_TOKEN"] == "hf_abc"  # a copy
    # Read back, the hidden one is a secret row: a clone or an import asks for it.
    rows = spec.inverse(spec.strip_secrets(body))["environment"]["envs"]
    assert [r["secret"] for r in rows] == [True, False, False]


def test_strip_secrets_hides_advanced_settings_named_like_secrets():
    # Only a job made outside the console has one (the wizard refuses such keys), and nothing sealed it.
    body = {"DisplayName": "j", "Settings": {"AdvancedSettings": {"WandbApiKey": "w", "HfToken": "", "EnableRDMA": True,
                                                                  "RayRedisPassword": "r"}}}
    assert spec.strip_secrets(body)["Settings"]["AdvancedSettings"] == {
        "WandbApiKey": spec.SECRET_PLACEHOLDER, "HfToken": "", "EnableRDMA": True}
    assert body["Settings"]["AdvancedSettings"]["WandbApiKey"] == "w"  # a copy


# ---- one rule for secret names: sealed, stripped, hidden, masked in logs --------------------------------


@pytest.mark.parametrize("name", [
    # words and pairs
    "WANDB_API_KEY", "WandbApiKey", "HfToken", "RayRedisPassword", "AccessKeyId", "api_key", "aws_secret_access_key",
    "passphrase", "PrivateKey", "CREDENTIALS", "GITHUB_TOKENS",
    # the broader words the job page and the import notes masked, once a second rule: sealed now too
    "DB_PASS", "MY_AUTH", "SSH_KEY", "OAUTH_CLIENT", "HFTOKEN", "DBPASSWORD", "MYAPIKEY", "ACCESSKEY_ID", "api-key",
    "Authorization", "GIT_CREDS", "key",
    # masked by the job page's older rule: still masked
    "PASSCODE", "APP_PASSCODE", "AUTHKEY", "TS_AUTHKEY",
])
def test_names_that_look_like_secrets(name):
    assert spec.looks_like_secret(name)


@pytest.mark.parametrize("name", [
    "TOKENIZERS_PARALLELISM", "KEYBOARD", "MONKEY_COUNT", "KEYS_DIR", "PWD", "AUTHOR", "PASSENGER_COUNT", "EPOCHS",
    "RayRedisUsername", "customPortList", "createSvcForAllWorkers", "", None, 3,
])
def test_names_that_stay_plain(name):
    assert not spec.looks_like_secret(name)


def test_the_names_the_page_hides_are_the_names_stored_sealed():
    # HFTOKEN and DB_PASS were hidden on the page but stored in plain text (a second, narrower rule sealed).
    body = {"DisplayName": "j", "Envs": {"HFTOKEN": "abc123", "DB_PASS": "p4ssw0rd", "SSH_KEY": "k3y",
                                         "KEYBOARD": "us", "MONKEY_COUNT": "3", "TOKENIZERS_PARALLELISM": "false"},
            "Settings": {"AdvancedSettings": {"OAuthToken": "o", "RayRedisUsername": "u"}}}
    stripped = spec.strip_secrets(body)
    assert stripped["Envs"] == {"HFTOKEN": spec.SECRET_PLACEHOLDER, "DB_PASS": spec.SECRET_PLACEHOLDER,
                                "SSH_KEY": spec.SECRET_PLACEHOLDER, "KEYBOARD": "us", "MONKEY_COUNT": "3",
                                "TOKENIZERS_PARALLELISM": "false"}
    assert stripped["Settings"]["AdvancedSettings"] == {"OAuthToken": spec.SECRET_PLACEHOLDER,
                                                        "RayRedisUsername": "u"}
    notes = spec.notes(_apply(Case("", {"environment.envs": [{"key": "HFTOKEN", "value": "abc123"},
                                                             {"key": "KEYBOARD", "value": "us"}]})))
    assert "looks like a secret" in " ".join(notes["environment.envs[0].key"])
    assert "environment.envs[1].key" not in notes


# ---- a value below the minimum gets the minimum's message only, not the policy cap's (QA) -----------------


@pytest.mark.parametrize("value", [0, -1, "0"])
def test_a_duration_below_the_minimum_gets_only_its_own_message_under_a_policy(value):
    sections = _apply(Case("", {"resources.max_duration": value}))
    errors = spec.validate_sections(sections, spec.Context(policy=spec.Policy(max_duration_minutes=7 * 1440)))
    assert errors == {"resources.max_duration": ["The maximum duration must be a positive whole number."]}


def test_a_huge_duration_under_a_policy_is_too_large_not_required():
    sections = _apply(Case("", {"resources.max_duration": "9" * 30}))
    errors = spec.validate_sections(sections, spec.Context(policy=spec.Policy(max_duration_minutes=7 * 1440)))
    assert errors == {"resources.max_duration": [f"The maximum duration is too large (at most "
                                                 f"{spec.MAX_DURATION_DAYS} days)."]}


def test_a_huge_pod_count_in_a_body_is_too_large_at_its_wire_path():
    body = spec.build(base())
    body["JobSpecs"][0]["PodCount"] = 10**20
    assert spec.validate(body) == {"JobSpecs[0].PodCount": [
        f"The number of nodes is too large (at most {spec.MAX_POD_COUNT} per role)."]}


def test_huge_wire_memory_is_too_large_not_unreadable():
    sections = _apply(Case("", QUOTA))
    body = spec.build(sections)
    body["JobSpecs"][0]["ResourceConfig"]["Memory"] = "9" * 30 + "Gi"
    errors = spec.validate(body, spec.Context(hints=spec.hints_from_sections(sections)))
    assert errors == {"JobSpecs[0].ResourceConfig.Memory": [
        f"Memory is too large (at most {spec.MAX_MEMORY_GIB} GiB per node)."]}


# ---- reserved environment variable names (QA: a sweep could set PATH or RANK) -----------------------------


def test_the_reserved_names_hold_the_documented_dlc_variables_and_the_process_critical_ones():
    documented = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "JOB_NAME", "CUSTOM_PORTS"}  # [000][004]
    assert {n for n, why in spec.RESERVED_ENVS.items() if why == spec.DLC_INJECTED} >= documented | {"LOCAL_RANK"}
    assert {n for n, why in spec.RESERVED_ENVS.items() if why == spec.PROCESS_CRITICAL} == {
        "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "HOME", "SHELL", "PYTHONHOME", "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES"}
    # PYTHONPATH stays free: a sweep over code variants may set it (QA Q2.5, docs/spec-notes.md D26).
    assert "PYTHONPATH" not in spec.RESERVED_ENVS


@pytest.mark.parametrize("name", ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PATH", "PYTHONPATH"])
def test_an_ordinary_variable_named_like_a_process_critical_one_is_valid_without_a_note(name):
    sections = _apply(Case("", {"environment.envs": [{"key": name, "value": "0"}]}))
    assert spec.validate_sections(sections) == {}
    assert "environment.envs[0].key" not in spec.notes(sections)


@pytest.mark.parametrize("name", ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "TF_CONFIG"])
def test_an_ordinary_variable_named_like_a_dlc_one_is_valid_with_a_warning(name):
    sections = _apply(Case("", {"environment.envs": [{"key": name, "value": "1"}]}))
    assert spec.validate_sections(sections) == {}
    assert any("set by DLC" in n for n in spec.notes(sections)["environment.envs[0].key"])


@pytest.mark.parametrize("name", ["PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME", "SHELL", "PYTHONHOME"])
def test_an_ordinary_variable_a_custom_image_may_need_is_valid_without_a_note(name):
    sections = _apply(Case("", {"environment.image_type": "custom",
                                "environment.envs": [{"key": name, "value": "/opt/x"}]}))
    assert spec.validate_sections(sections) == {}
    assert "environment.envs[0].key" not in spec.notes(sections)


# ---- the code mount path hint only for a valid path (QA: it echoed a relative one) ------------------------


@pytest.mark.parametrize("mount", ["rel/path", "/mnt/../etc", "/"])
def test_no_code_mount_hint_for_an_invalid_path(mount):
    sections = _apply(Case("", {"environment.code_mode": "git", "environment.code_source_id": "code-1",
                                "environment.code_mount_path": mount}))
    assert "environment.code_mount_path" in spec.validate_sections(sections)
    assert "environment.command" not in spec.notes(sections)


# ---- what cannot be stored or sent, tiny numbers, CRLF (audit) -------------------------------------------------

_WIRE = {"DisplayName": "x", "JobType": "PyTorchJob", "UserCommand": "echo hi",
         "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                       "EcsSpec": "ecs.g7.xlarge"}]}
_RAY_WIRE = {**_WIRE, "JobType": "RayJob", "JobSpecs": [{**_WIRE["JobSpecs"][0], "Type": "Head"}]}


def _nested(levels: int) -> dict:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("bad", "words"), [("\x00", "NUL character"), ("\ud800", "lone surrogate")])
@pytest.mark.parametrize(("edit", "path"), [
    ({"Description": "a{}"}, "Description"),
    ({"UserCommand": "echo {}"}, "UserCommand"),
    ({"Envs": {"A": "x{}"}}, "Envs.A"),
    ({"Settings": {"Tags": {"team": "v{}"}}}, "Settings.Tags.team"),
    ({"DataSources": [{"DataSourceId": "d-1", "MountPath": "/mnt/a{}"}]}, "DataSources[0].MountPath"),
    ({"DataSources": [{"Uri": "oss://bucket/x{}", "MountPath": "/mnt/o"}]}, "DataSources[0].Uri"),
    ({"CodeSource": {"CodeSourceId": "code-1", "Branch": "main{}"}}, "CodeSource.Branch"),
    ({"Settings": {"EnableErrorMonitoringInAIMaster": True, "ErrorMonitoringArgs": "--x {}"}},
     "Settings.ErrorMonitoringArgs"),
])
def test_unstorable_text_in_a_body_is_an_error_at_its_wire_path(edit, path, bad, words):
    """validate() said valid: the create then 500ed on PostgreSQL (NUL) or in the size check's encode() (a lone
    surrogate). The API refuses them at its door too (api_jobs.json_body); clone and import only have this."""
    body = {**_WIRE, **{key: _filled(value, bad) for key, value in edit.items()}}
    errors = spec.validate(body)
    assert path in errors and any(words in m for m in errors[path]), errors


def _filled(value: Any, bad: str) -> Any:
    if isinstance(value, str):
        return value.format(bad)
    if isinstance(value, dict):
        return {k: _filled(v, bad) for k, v in value.items()}
    return [_filled(v, bad) for v in value] if isinstance(value, list) else value


@pytest.mark.parametrize(("advanced", "words"), [
    ({"RayRedisAddress": "a\x00"}, "RayRedisAddress: Must not contain a NUL character"),
    ({"RayRedisAddress": "\ud800"}, "RayRedisAddress: Must not contain a lone surrogate"),
    ({"RayRuntimeEnv": {"x": float("nan")}}, "NaN is not a JSON number"),
    ({"RayRuntimeEnv": _nested(600)}, "RayRuntimeEnv: Nested too deeply: at most 32 levels"),
])
def test_unstorable_advanced_settings_in_a_body_are_an_error_not_an_exception(advanced, words):
    errors = spec.validate({**_RAY_WIRE, "Settings": {"AdvancedSettings": advanced}})
    assert any(words in m for m in errors["Settings.AdvancedSettings"]), errors


def test_a_value_nested_far_beyond_recursion_is_reported_not_raised():
    sections = base()
    sections["resources"]["advanced"] = {"RayRuntimeEnv": _nested(20_000)}
    assert spec.validate_sections(sections) == {
        "resources.advanced": ["RayRuntimeEnv: Nested too deeply: at most 32 levels of objects and lists."]}
    assert spec.parse_advanced('{"RayRuntimeEnv": ' + '{"a":' * 33 + "1" + "}" * 34)[0] is None


def test_what_build_sends_is_always_storable_text():
    """An invalid job still has a best-effort body (the preview, the API panel): never with what a page, the
    database or DLC cannot take."""
    sections = base()
    sections["basic"]["description"] = "a\x00b\ud800c"
    sections["environment"]["envs"] = [{"key": "A\x00", "value": "x\ud800"}]
    body = spec.build(sections)
    assert body["Description"] == "ab\ufffdc" and body["Envs"] == {"A": "x\ufffd"}
    assert "\\u0000" not in json.dumps(body)
    json.dumps(body, ensure_ascii=False).encode("utf-8")
    assert set(spec.validate_sections(sections)) == {"basic.description", "environment.envs[0].key",
                                                     "environment.envs[0].value"}


def test_a_command_is_sent_with_lf_line_breaks_and_a_body_with_cr_is_refused_saying_so():
    sections = base()
    sections["environment"]["command"] = "cd /mnt/code\r\npython train.py\recho done\r\n"
    assert spec.validate_sections(sections) == {}
    assert spec.build(sections)["UserCommand"] == "cd /mnt/code\npython train.py\necho done"
    errors = spec.validate({**_WIRE, "UserCommand": "cd /mnt/code\r\npython train.py"})
    assert errors == {"UserCommand": ['Has CR (\\r) line breaks, which the console turns into LF (a shell takes a CR '
                                      'as part of its line): send "cd /mnt/code\\npython train.py".']}


@pytest.mark.parametrize(("cpu", "memory", "sent"), [
    (1e-7, 1e-9, {"CPU": "0.0000001", "Memory": "0.000000001Gi"}),
    ("0.00001", "0.0000005", {"CPU": "0.00001", "Memory": "0.0000005Gi"}),
    ("0.001", "0.0625", {"CPU": "0.001", "Memory": "0.0625Gi"}),
])
def test_cpu_and_memory_are_sent_as_plain_decimals_never_with_an_exponent(cpu, memory, sent):
    sections = base()
    sections["resources"].update(source="quota", quota_id="quota-gen")
    sections["resources"]["roles"] = [{"role": "Worker", "count": 1, "cpu": cpu, "memory_gib": memory}]
    assert spec.build(sections)["JobSpecs"][0]["ResourceConfig"] == sent
