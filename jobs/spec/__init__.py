"""The PAI-DLC CreateJob request body (POST /api/v1/jobs) as the console models it. Pure Python, no Django.

Wizard data ("sections") is a plain dict of six sections; each is a dict of console fields:

=================  =====================  ==================================================================
section            field                  value (default) -> wire key of the CreateJob body
=================  =====================  ==================================================================
basic              name                   str -> DisplayName
basic              tags                   [{key, value}] -> Settings.Tags (map)
basic              description            str -> Description
basic              workspace_id           str, hidden; build(workspace_id=...) wins -> WorkspaceId
environment        image_type             "official"|"custom"|"address" ("official"); console only (hints)
environment        image                  str -> JobSpecs[*].Image (same image on every role)
environment        registry_username      str, image address only -> JobSpecs[*].ImageConfig.Username
environment        registry_password      str, SECRET -> JobSpecs[*].ImageConfig.Password (include_secrets)
environment        datasets               [{kind "custom"|"public", id, version, read_only bool|None,
                                           mount_path}] -> DataSources[] {DataSourceId, DataSourceVersion,
                                           MountAccess RO/RW (None: not sent), MountPath}
environment        storages               [{type "oss"|"nas"|"extreme_nas"|"cpfs"|"bmcpfs", uri, mount_path,
                                           options (JSON text)}] -> DataSources[] {Uri, MountPath, Options},
                                           after the datasets
environment        command                str -> UserCommand
environment        envs                   [{key, value, secret}] -> Envs (map); a secret's value is
                                           SECRET_PLACEHOLDER in the body, the real one only with
                                           include_secrets (extract_secrets: "env:<NAME>")
environment        libs_mode              "none"|"list"|"requirements" ("none")
environment        libs                   str, one pip requirement per line -> ThirdpartyLibs (list)
environment        requirements_dir       str, requirements.txt path or its folder -> ThirdpartyLibDir (folder)
environment        code_mode              "none"|"git"|"upload" ("none")
environment        code_source_id         str -> CodeSource.CodeSourceId
environment        code_branch            str -> CodeSource.Branch
environment        code_commit            str -> CodeSource.Commit
environment        code_mount_path        str -> CodeSource.MountPath (git) / last DataSources[].MountPath
environment        code_upload_uri        str oss://..., set by the uploader -> last DataSources[].Uri (upload)
resources          resource_type          "general"|"lingjun" ("general"); console only (hints)
resources          source                 "public"|"quota"|"spot" ("public"): quota -> ResourceId,
                                           public/spot -> JobSpecs[].EcsSpec, spot -> JobSpecs[].SpotSpec
resources          quota_id               str -> ResourceId
resources          priority               int 1..9 or None (quota only) -> Priority
resources          framework              console name (catalog.FRAMEWORKS) ("PyTorch") -> JobType
resources          roles                  [{role, count, instance_type, cpu, gpu, memory_gib,
                                           shared_memory_gib, node_names}] -> JobSpecs[] {Type, PodCount,
                                           EcsSpec, ResourceConfig {CPU "4", GPU "1", Memory "8Gi",
                                           SharedMemory "4Gi"}, AssignNodeSpec.NodeNames "a,b"}
resources          node_scheduling        bool -> JobSpecs[].AssignNodeSpec.EnableAssignNode
resources          idle_resources         bool -> Settings.OversoldType "AcceptQuotaOverSold"
resources          cpu_affinity           bool -> Settings.EnableCPUAffinity
resources          scheduling_policy      "intelligent"|"centralized"|"spread" -> SchedulingStrategy
resources          bid_method             ""|"discount"|"price" (spot only)
resources          spot_discount          int percent 10..90 -> JobSpecs[].SpotSpec.SpotDiscountLimit 0.1..0.9
resources          spot_price             float > 0 -> JobSpecs[].SpotSpec.SpotPriceLimit
resources          max_duration           int (30) + max_duration_unit "minutes"|"hours"|"days" ("days")
                                           -> JobMaxRunningTimeMinutes
resources          retention              int or None + retention_unit ("hours")
                                           -> Settings.JobReservedMinutes + JobReservedPolicy "Always"
resources          dsw                    bool -> Settings.EnableDSWDev
resources          advanced               text, "k=v,k=v" or JSON -> Settings.AdvancedSettings (map)
vpc                vpc_id                 str -> UserVpc.VpcId
vpc                switch_id              str -> UserVpc.SwitchId
vpc                security_group_id      str -> UserVpc.SecurityGroupId
vpc                extended_cidrs         [str] (or text) -> UserVpc.ExtendedCIDRs
vpc                gateway                "public"|"private"|"" ("public") -> UserVpc.DefaultRoute eth0/eth1
fault_tolerance    enabled                bool -> Settings.EnableErrorMonitoringInAIMaster
fault_tolerance    args                   str -> Settings.ErrorMonitoringArgs
fault_tolerance    sanity_check           bool -> Settings.EnableSanityCheck
fault_tolerance    sanity_args            str -> Settings.SanityCheckArgs
ram_role           mode                   "none"|"default"|"custom" ("none") -> CredentialConfig
ram_role           role_arn               str acs:ram::<uid>:role/<name> -> CredentialConfig...Roles[0].RoleArn
=================  =====================  ==================================================================

A field the current choices hide (e.g. priority without a quota) must be empty: validate_sections()
reports it, and prune_inapplicable() clears such fields for forms that keep hidden values.

Public API: build, validate_sections, validate, sendable (the body as validate() checks it: what to store and send),
notes, inverse, hints_from_sections, defaults, prune_inapplicable, hidden_fields, infer_hints, strip_secrets,
extract_secrets, fill_secrets, wire_path,
field_for_path, parse_advanced, format_advanced, Context, Policy, SECRET_PATHS, SECRET_PLACEHOLDER,
WIRE_SCHEMA, APPLICABLE, SECRET_ENV_PREFIX, looks_like_secret (the one rule of which names hold secrets),
JOB_NAME_RE (a job name's characters; JOB_NAME_CHARSET says them), ENV_NAME_RE (an environment variable's name),
RESERVED_ENVS (names DLC injects or the pod's processes need, DLC_INJECTED / PROCESS_CRITICAL), MAX_POD_COUNT,
MAX_CPU, MAX_GPU, MAX_MEMORY_GIB, MAX_DURATION_DAYS (our bounds of a role's numbers and of durations).
Error and note dicts map a path to messages; "" is the whole job. Decisions: docs/spec-notes.md.

Layout: import from here (jobs.spec); the code lives in the small modules of this package.
    base          fields and their defaults, secret paths, Context, Policy, the error sink, value parsing
    norm          the normalised view of the wizard data; parse_advanced, format_advanced
    applicable    APPLICABLE, ROLE_APPLICABLE: which fields the current choices show
    rules         RULES and validate_sections(): the validation rules (hidden fields: applicable)
    soft_rules    notes(): warnings that do not block submission
    wire          build(), strip_secrets(), WIRE_SCHEMA and the body sanitizer
    from_body     inverse(), hints_from_sections(): body -> wizard data (clone, import, edit)
    paths         wire_path(), field_for_path(): section path <-> wire path
    body_check    validate(body) for the API
    forms         defaults, duration_default / fill_duration (a capped workspace's empty duration), hidden_fields,
                  prune_inapplicable, infer_hints, extract_secrets, fill_secrets
"""

from jobs.spec.applicable import APPLICABLE, ROLE_APPLICABLE
from jobs.spec.base import (
    DLC_INJECTED,
    FIELDS,
    MAX_CPU,
    MAX_DURATION_DAYS,
    MAX_GPU,
    MAX_MEMORY_GIB,
    MAX_POD_COUNT,
    PROCESS_CRITICAL,
    RESERVED_ENVS,
    ROW_FIELDS,
    SECRET_ENV_PREFIX,
    SECRET_PATHS,
    SECRET_PLACEHOLDER,
    SECTIONS,
    Context,
    Policy,
    looks_like_secret,
)
from jobs.spec.body_check import validate
from jobs.spec.forms import (
    defaults,
    duration_default,
    extract_secrets,
    fill_duration,
    fill_secrets,
    hidden_fields,
    infer_hints,
    prune_inapplicable,
)
from jobs.spec.from_body import hints_from_sections, inverse
from jobs.spec.norm import format_advanced, parse_advanced
from jobs.spec.paths import field_for_path, wire_path
from jobs.spec.rules import ENV_NAME_CHARSET, ENV_NAME_RE, JOB_NAME_CHARSET, JOB_NAME_RE, RULES, validate_sections
from jobs.spec.soft_rules import notes
from jobs.spec.wire import WIRE_SCHEMA, build, sendable, strip_secrets

__all__ = [
    "ENV_NAME_CHARSET", "ENV_NAME_RE", "JOB_NAME_CHARSET", "JOB_NAME_RE", "DLC_INJECTED", "PROCESS_CRITICAL",
    "RESERVED_ENVS",
    "MAX_CPU", "MAX_DURATION_DAYS", "MAX_GPU", "MAX_MEMORY_GIB", "MAX_POD_COUNT",
    "APPLICABLE", "FIELDS", "ROLE_APPLICABLE", "ROW_FIELDS", "RULES", "SECRET_ENV_PREFIX", "SECRET_PATHS",
    "SECRET_PLACEHOLDER", "SECTIONS", "WIRE_SCHEMA", "Context", "Policy", "build", "defaults",
    "duration_default", "extract_secrets", "fill_duration",
    "field_for_path", "fill_secrets", "format_advanced", "hidden_fields", "hints_from_sections", "infer_hints",
    "inverse", "looks_like_secret", "notes", "parse_advanced", "prune_inapplicable",
    "sendable", "strip_secrets", "validate", "validate_sections", "wire_path",
]
