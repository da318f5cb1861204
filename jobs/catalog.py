"""Constants behind the console's choices: frameworks, roles, regions, storage types, wire values.

Pure Python (no Django). Everything marked *unverified* is an assumption about the PAI-DLC wire format that
no source confirms; it lives here, in one line each, so a correction is a one-line change.
Sources are tagged as in /work/shared/reference/console-fields.md: [000] [004] seeds, [SDK], [TS], [inf].
See docs/spec-notes.md for the reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- Regions -----------------------------------------------------------------------------------------------

# Lingjun Intelligence Resources are offered only in these regions [000][004]. The seeds give display names;
# the region ids are our mapping [inf]. "Atlanta" -> us-southeast-1 is the least certain one.
LINGJUN_REGIONS: dict[str, str] = {
    "China (Ulanqab)": "cn-wulanchabu",
    "Singapore": "ap-southeast-1",
    "China (Shenzhen)": "cn-shenzhen",
    "China (Beijing)": "cn-beijing",
    "China (Shanghai)": "cn-shanghai",
    "China (Hangzhou)": "cn-hangzhou",
    "China (Guangzhou)": "cn-guangzhou",
    "China (Hong Kong)": "cn-hongkong",
    "Malaysia": "ap-southeast-3",
    "Germany": "eu-central-1",
    "Atlanta": "us-southeast-1",
}
LINGJUN_REGION_IDS: frozenset[str] = frozenset(LINGJUN_REGIONS.values())

# --- Console choices (value -> label) ----------------------------------------------------------------------

RESOURCE_TYPES = {"general": "General Computing", "lingjun": "Lingjun Intelligence Resources"}
SOURCES = {"public": "Public Resources", "quota": "Resource Quota", "spot": "Preemptible Resources"}
IMAGE_TYPES = {"official": "Alibaba Cloud Image", "custom": "Custom Image", "address": "Image Address"}
DATASET_KINDS = {"custom": "Custom Dataset", "public": "Public Dataset"}
READ_ONLY_DATASET_KINDS = frozenset({"public"})  # mounted read-only, never read-write or by default [000][004]
STORAGE_TYPES = {
    "oss": "OSS",
    "nas": "General-purpose NAS",
    "extreme_nas": "Extreme NAS",
    "cpfs": "CPFS",
    "bmcpfs": "BMCPFS",
}
LIBS_MODES = {"none": "None", "list": "Select from List", "requirements": "Directory of requirements.txt"}
CODE_MODES = {"none": "None", "git": "Online configuration", "upload": "Local Upload"}
BID_METHODS = {"discount": "By discount", "price": "By price"}
# Lingjun preemptible resources bid by discount only and need a VPC with a vSwitch (and a security group) [004]:
# jobs.spec's rules refuse anything else, and the wizard offers and says only this.
LINGJUN_SPOT_BID_METHODS = ("discount",)
NEEDS_USER_VPC = frozenset({("lingjun", "spot")})  # (resource type, source) whose jobs need VpcId and SwitchId
GATEWAYS = {"public": "Public Gateway", "private": "Private Gateway"}
RAM_ROLE_MODES = {"none": "Does Not Associate Role", "default": "Default Role of PAI", "custom": "Custom Role"}
DURATION_UNITS = {"minutes": 1, "hours": 60, "days": 1440}

# --- Frameworks and roles ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Framework:
    name: str  # console label
    job_type: str | None  # CreateJob JobType; None = no verified JobType, the console refuses it
    roles: tuple[str, ...]  # allowed JobSpecs[].Type values
    required: tuple[str, ...]  # roles that must be present [inf]
    custom_worker_roles: bool = False  # Ray "Add Role": Worker-xxx
    lingjun_quota: bool = False  # allowed with a Lingjun resource quota [004]
    verified: bool = True  # False: the JobType or the role list is our assumption


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework("TensorFlow", "TFJob", ("Worker", "PS", "Chief", "Evaluator", "GraphLearn"), ("Worker",),
                  lingjun_quota=True),
        Framework("PyTorch", "PyTorchJob", ("Worker", "Master"), ("Worker",), lingjun_quota=True),
        Framework("ElasticBatch", "ElasticBatchJob", ("Worker", "Master"), ("Worker",), lingjun_quota=True),
        Framework("XGBoost", "XGBoostJob", ("Worker", "Master"), ("Worker",)),
        Framework("OneFlow", "OneFlowJob", ("Worker", "Master"), ("Worker",)),
        # MPIJob roles are not documented; the pai CLI only knows chief/evaluator/graphlearn/head/master/ps/
        # worker, so no "Launcher" [inf, unverified].
        Framework("MPIJob", "MPIJob", ("Worker", "Master"), ("Worker",), lingjun_quota=True, verified=False),
        Framework("Ray", "RayJob", ("Head", "Worker"), ("Head",), custom_worker_roles=True, lingjun_quota=True),
        # No JobType exists for "Custom" in any source: refuse it rather than guess [unverified].
        Framework("Custom", None, ("Worker",), ("Worker",), verified=False),
        # DataJuicerJob is in the SDK list; its roles are not documented (Ray-based: Head/Worker) [inf].
        Framework("DataJuicer", "DataJuicerJob", ("Head", "Worker"), (), verified=False),
        # "MPI" has no JobType of its own; we send MPIJob and keep "MPI" in the hints [unverified].
        Framework("MPI", "MPIJob", ("Worker", "Master"), ("Worker",), verified=False),
    )
}

# JobType -> console framework used by inverse() when the hints do not say otherwise.
JOB_TYPE_TO_FRAMEWORK: dict[str, str] = {
    "TFJob": "TensorFlow",
    "PyTorchJob": "PyTorch",
    "ElasticBatchJob": "ElasticBatch",
    "XGBoostJob": "XGBoost",
    "OneFlowJob": "OneFlow",
    "MPIJob": "MPIJob",
    "RayJob": "Ray",
    "DataJuicerJob": "DataJuicer",
}

# Ray custom roles from "Add Role": Worker-<suffix>. Role names end up in pod names, so DNS-label-ish [inf].
RAY_CUSTOM_ROLE_PATTERN = r"Worker-[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?"

# --- Advanced framework configuration (Settings.AdvancedSettings) [000][004] -------------------------------

ADVANCED_KEYS_ALL = (
    "ReleaseResourcePolicy",
    "EnableJumboFrame",  # listed as ALL in both seed tables; missing from the [004] prose list
    "EnableNvidiaIBGDA",
    "EnableNvidiaGDRCopy",
    "EnablePaiNUMACoreBinding",
    "EnableResourcePreCheck",
)
ADVANCED_KEYS_BY_FRAMEWORK: dict[str, tuple[str, ...]] = {
    "PyTorch": ("createSvcForAllWorkers", "customPortList", "customPortNumPerWorker"),
    "Ray": (
        "RayRuntimeEnv",
        "RayRedisAddress",
        "RayRedisUsername",
        "RayRedisPassword",
        "RaySubmitterBackoffLimit",
        "RayObjectStoreMemoryBytes",
    ),
}
ADVANCED_BOOL_KEYS = frozenset(
    {"EnableJumboFrame", "EnableNvidiaIBGDA", "EnableNvidiaGDRCopy", "EnablePaiNUMACoreBinding",
     "EnableResourcePreCheck", "createSvcForAllWorkers"}
)
ADVANCED_POSITIVE_INT_KEYS = frozenset({"RaySubmitterBackoffLimit", "RayObjectStoreMemoryBytes"})
ADVANCED_STRING_KEYS = frozenset({"RayRedisAddress", "RayRedisUsername", "RayRedisPassword", "customPortList"})
RELEASE_RESOURCE_POLICIES = ("pod-exit",)
DEFAULT_MASTER_PORT = 23456  # exposed on the master by default; must not appear in customPortList
MAX_CUSTOM_PORT_NUM = 65536

# --- Storage -----------------------------------------------------------------------------------------------

NAS_ID_PREFIX = {"extreme_nas": "extreme-", "cpfs": "cpfs-"}  # [004] SDK example comments
# Advanced settings JSON accepted per storage type [000][004]. OSS also takes JindoFS "fs.oss.*" keys as in
# the [TS] DataSources.Options example. Extreme NAS and BMCPFS have no documented options.
STORAGE_OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "oss": ("mountType",),
    "nas": ("nconnect",),
    "cpfs": ("nconnect",),
    "extreme_nas": (),
    "bmcpfs": (),
}
OSS_MOUNT_TYPES = ("ossfs",)
OSS_OPTION_PREFIX = "fs.oss."
BMCPFS_URI_SCHEME = "bmcpfs"  # our convention for BMCPFS storage URIs [unverified]

# --- Wire values -------------------------------------------------------------------------------------------

SPOT_STRATEGY = "SpotWithPriceLimit"  # the only documented strategy [SDK][004]
SPOT_DISCOUNTS = tuple(range(10, 100, 10))  # percent; sent as 0.1 .. 0.9 [000][004][inf]
OVERSOLD_ACCEPT = "AcceptQuotaOverSold"  # idle resources toggle on [TS example, unverified]
JOB_RESERVED_POLICY = "Always"  # retention applies to finished and failed jobs [TS example, unverified]
# Scheduling policy -> SchedulingStrategy. Intelligent is the console default and is not sent. The values for
# Centralized / Spread are not documented anywhere [unverified].
SCHEDULING_POLICIES: dict[str, str | None] = {"intelligent": None, "centralized": "Binpack", "spread": "Spread"}
GATEWAY_ROUTES = {"public": "eth0", "private": "eth1"}  # UserVpc.DefaultRoute [SDK]
MOUNT_ACCESS = {True: "RO", False: "RW"}
# RAM role -> CredentialConfig. Shape copied from the DSW CredentialConfig docs (Key "0", Type "Role",
# RoleType "service"); DLC's own docs only name the fields [unverified].
DEFAULT_RAM_ROLE_NAME = "AliyunPAIDLCDefaultRole"
CREDENTIAL_ROLE_KEY = "0"
CREDENTIAL_ITEM_TYPE = "Role"
CREDENTIAL_ROLE_TYPE = "service"

# --- Limits ------------------------------------------------------------------------------------------------

MAX_NAME_LENGTH = 256
MAX_TAGS = 20  # TagResources limit [SDK]
MAX_TAG_KEY_LENGTH = 128
MAX_TAG_VALUE_LENGTH = 256
MAX_ENVS = 20  # [004]
PUBLIC_MAX_GPUS = 2  # per job [000][004]
PUBLIC_MAX_CPUS = 8
PRIORITY_RANGE = (1, 9)
DEFAULT_MAX_DURATION_MINUTES = 30 * 1440  # 30 days [004]
MAX_BODY_BYTES = 65536  # CreateJob parameters in total (API reference page, not the seeds)
AIMASTER_QUOTA_USAGE = "1 CPU core and 1 GiB of memory"
AIMASTER_PUBLIC_INSTANCE = "ecs.c6.large"

# The variables DLC injects itself: jobs.spec.RESERVED_ENVS (one list with the names the pod's processes need).

# --- Statuses [SDK] ----------------------------------------------------------------------------------------

JOB_STATUSES = (
    "Creating", "Queuing", "Bidding", "EnvPreparing", "SanityChecking", "Running", "Restarting", "Stopping",
    "SucceededReserving", "FailedReserving", "Succeeded", "Failed", "Stopped",
)
TERMINAL_JOB_STATUSES = frozenset({"Succeeded", "Failed", "Stopped"})  # [004] polling loop
POD_STATUSES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
