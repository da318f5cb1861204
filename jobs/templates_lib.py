"""Job templates: named, versioned wizard contents shared in a workspace, with fields admins can lock.

Versions are immutable once saved. Locks live on the template, so starting from an older version cannot
escape them; a job started from version N must keep version N's value of every locked field, and
`locked_errors()` is what the wizard and the API ask before accepting such a job. The job keeps the template and
version in its hints (`link()`), and its clones and edits in the wizard and the API are held to the same locks
(`linked()`), so a clone cannot change what the template start could not.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet
from django.db.models.functions import Lower

from jobs import access, audit, catalog, spec
from jobs.models import AuditEvent, Job, JobTemplate, JobTemplateVersion, Workspace

# Lockable fields: lock path -> (label, the section fields it covers). The error of a changed lock is
# reported at the first covered field, which the wizard shows.
LOCKABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "basic.description": ("Description", ("basic.description",)),
    "basic.tags": ("Tags", ("basic.tags",)),
    "environment.image": ("Image", ("environment.image", "environment.image_type")),
    "environment.registry_username": ("Registry username", ("environment.registry_username",)),
    "environment.datasets": ("Datasets", ("environment.datasets",)),
    "environment.storages": ("Storage mounts", ("environment.storages",)),
    "environment.command": ("Startup command", ("environment.command",)),
    "environment.envs": ("Environment variables", ("environment.envs",)),
    "environment.libs": ("Third-party libraries",
                         ("environment.libs", "environment.libs_mode", "environment.requirements_dir")),
    "environment.code_mode": ("Code", ("environment.code_mode", "environment.code_source_id",
                                       "environment.code_branch", "environment.code_commit",
                                       "environment.code_mount_path", "environment.code_upload_uri")),
    "resources.resource_type": ("Resource type", ("resources.resource_type",)),
    "resources.source": ("Resource source", ("resources.source", "resources.quota_id")),
    "resources.priority": ("Priority", ("resources.priority",)),
    "resources.framework": ("Framework", ("resources.framework",)),
    "resources.roles": ("Nodes and instance types", ("resources.roles",)),
    "resources.bid_method": ("Bid", ("resources.bid_method", "resources.spot_discount", "resources.spot_price")),
    "resources.scheduling_policy": ("Scheduling policy", ("resources.scheduling_policy",
                                                          "resources.node_scheduling", "resources.idle_resources",
                                                          "resources.cpu_affinity")),
    # A duration's unit is locked with its number: a free unit would change the length a lock keeps.
    "resources.max_duration": ("Maximum duration", ("resources.max_duration", "resources.max_duration_unit")),
    "resources.retention": ("Retention period", ("resources.retention", "resources.retention_unit")),
    "resources.dsw": ("Developer machine", ("resources.dsw",)),
    "resources.advanced": ("Advanced framework configuration", ("resources.advanced",)),
    "vpc.vpc_id": ("VPC", ("vpc.vpc_id", "vpc.switch_id", "vpc.security_group_id", "vpc.extended_cidrs",
                           "vpc.gateway")),
    "fault_tolerance.enabled": ("Fault tolerance and diagnosis",
                                ("fault_tolerance.enabled", "fault_tolerance.args", "fault_tolerance.sanity_check",
                                 "fault_tolerance.sanity_args")),
    "ram_role.mode": ("RAM role", ("ram_role.mode", "ram_role.role_arn")),
}
# Durations compare by their length, not by how they are spelled (2 days == 48 hours); so does a duration's unit,
# or the pair's unit alone would refuse 48 hours where the template says 2 days.
_DURATIONS = {"resources.max_duration": "max_duration_unit", "resources.retention": "retention_unit"}
_UNITS = {f"{path.split('.')[0]}.{unit}": path for path, unit in _DURATIONS.items()}


def strip_secrets(sections: Mapping) -> dict:
    """A copy of wizard sections without any secret: templates are shared, secrets are per person."""
    out = copy.deepcopy(dict(sections)) if isinstance(sections, Mapping) else {}
    env = out.get("environment")
    if isinstance(env, dict):
        env["registry_password"] = ""
        for row in env.get("envs") if isinstance(env.get("envs"), list) else []:
            # A variable ticked Secret, or named like one, keeps its name and Secret; its value is typed per job.
            if isinstance(row, dict) and (row.get("secret") is True or spec.looks_like_secret(row.get("key"))):
                row.update(value="", secret=True)
    res = out.get("resources")
    if isinstance(res, dict) and res.get("advanced"):
        res["advanced"] = strip_advanced(res["advanced"])
    return out


def strip_advanced(value: Any) -> str:
    """Advanced framework configuration without RayRedisPassword (text as the wizard shows it)."""
    parsed, problem = spec.parse_advanced(value)
    if problem:
        return ""  # unparseable text might hide a password; better lose it than keep it
    if not parsed:
        return ""
    parsed.pop("RayRedisPassword", None)
    return spec.format_advanced(parsed) if parsed else ""


def sections_of_job(job: Job) -> dict:
    """The wizard content of a saved job, for "save as template"."""
    return strip_secrets(spec.inverse(job.body, job.hints))


def _canonical(sections: Mapping) -> dict:
    clean = strip_secrets(sections)
    return spec.inverse(spec.build(clean), spec.hints_from_sections(clean))


def same_content(saved: Mapping, sections: Mapping) -> bool:
    """Whether two wizard contents make the same job: the same CreateJob body and console hints (the locks are
    the template's, not a version's). Secrets never count: neither side keeps them."""
    def made(value: Mapping) -> str:
        clean = strip_secrets(value)
        return json.dumps([spec.build(clean), spec.hints_from_sections(clean)], sort_keys=True, default=str)

    return made(saved) == made(sections)


def _value(canonical: Mapping, path: str) -> Any:
    path = _UNITS.get(path, path)
    section, name = path.split(".", 1)
    value = (canonical.get(section) or {}).get(name)
    if path in _DURATIONS and isinstance(value, int | float) and not isinstance(value, bool):
        unit = (canonical.get(section) or {}).get(_DURATIONS[path])
        return value * catalog.DURATION_UNITS.get(unit, 1)
    return json.dumps(value, sort_keys=True, default=str)


def locked_errors(template: JobTemplate, version: JobTemplateVersion, sections: Mapping) -> dict[str, list[str]]:
    """Errors keyed by section path for every locked field whose value differs from the version's."""
    errors: dict[str, list[str]] = {}
    if not template.locked:
        return errors
    expected, given = _canonical(version.sections), _canonical(sections)
    for lock in template.locked:
        if lock not in LOCKABLE:
            continue
        label, paths = LOCKABLE[lock]
        if any(_value(expected, p) != _value(given, p) for p in paths):
            errors.setdefault(paths[0], []).append(
                f"{label} is locked by the template '{template.name}' and cannot be changed."
            )
    return errors


def lock_paths(template: JobTemplate) -> list[str]:
    """Every section field the template's locks cover, for a wizard that shows them read-only."""
    return [p for lock in template.locked if lock in LOCKABLE for p in LOCKABLE[lock][1]]


# A job keeps the template and version it started from in its hints (Job.hints: console-only facts next to the body),
# and its clones and edits carry it on: the template's locks then bind every job of the line, not only the first.
LINK = "template"


def link(template: JobTemplate, version: JobTemplateVersion) -> dict[str, dict[str, Any]]:
    """The hints entry of a job started from this template version (the name only labels it)."""
    return {LINK: {"id": template.pk, "version": version.number, "name": template.name}}


def linked(job: Job) -> tuple[JobTemplate, JobTemplateVersion] | None:
    """(template, version) the job started from, directly or through the job it clones; None when it started from
    none, or the template was deleted since (its locks went with it)."""
    found = (job.hints or {}).get(LINK) if isinstance(job.hints, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    pk, number = found.get("id"), found.get("version")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (pk, number)):
        return None
    template = JobTemplate.objects.filter(pk=pk, workspace_id=job.workspace_id).first()
    version = template.versions.filter(number=number).first() if template else None
    return (template, version) if version else None


def impose(template: JobTemplate, version: JobTemplateVersion, sections: dict) -> list[tuple[str, str, str]]:
    """Put the version's value into every locked field of `sections` that differs (a job made before the lock was
    set, whose clone would otherwise be refused at a field the wizard shows read-only). Returns (label, the value
    it had, why) for each, as jobs.clone lists resets."""
    changed: list[tuple[str, str, str]] = []
    if not template.locked:
        return changed
    expected, given = _canonical(version.sections), _canonical(sections)
    source = strip_secrets(version.sections)
    for lock in template.locked:
        if lock not in LOCKABLE:
            continue
        label, paths = LOCKABLE[lock]
        if all(_value(expected, p) == _value(given, p) for p in paths):
            continue
        section, name = paths[0].split(".", 1)
        before = (sections.get(section) or {}).get(name)
        for path in paths:
            section, name = path.split(".", 1)
            if name in (source.get(section) or {}):
                sections.setdefault(section, {})[name] = copy.deepcopy(source[section][name])
        changed.append((label, before if isinstance(before, str) else json.dumps(before, default=str),
                        f"the template's value: locked by the template '{template.name}'"))
    return changed


def templates_in(workspace: Workspace) -> QuerySet[JobTemplate]:
    """The workspace's templates by name, each with its latest version number: the list and the wizard's picker. The
    order is explicit: Django leaves Meta.ordering out of a query with an aggregate (GROUP BY), which would list them
    in insertion order; and case-insensitive, as people read names (SQLite and PostgreSQL sort "TMPL" before "race").
    """
    return (JobTemplate.objects.filter(workspace=workspace).annotate(latest=Max("versions__number"))
            .order_by(Lower("name"), "name", "id"))


VERSION_NOT_A_NUMBER = "Must be a whole number from 1: the template's version, e.g. ?template=4&version=2."
VERSION_WITHOUT_TEMPLATE = "A version needs its template: send ?template=<id>&version=<n>, or neither."
TEMPLATE_NOT_AN_ID = "Must be a template's id, a whole number from 1, e.g. ?template=4."


def parse_start(template: Any, version: Any) -> tuple[int | None, int | None]:
    """(template id, version number) of a start from a template, `?template=<id>&version=<n>`, as the API and the
    wizard both take it: None for what is not given. A template that is not a whole number from 1 raises
    ValidationError at "template" (a well-formed id of no template is the caller's lookup's "no such template");
    a version that is not a whole number from 1, or a version without a template, raises ValidationError at
    "version" rather than quietly starting from the default."""
    template_text, version_text = str(template or "").strip(), str(version or "").strip()
    template_id = None
    if template_text:
        if not (template_text.isascii() and template_text.isdigit() and len(template_text) <= 18
                and int(template_text) >= 1):
            raise ValidationError({"template": TEMPLATE_NOT_AN_ID})
        template_id = int(template_text)
    if not version_text:
        return template_id, None
    if template_id is None:
        raise ValidationError({"version": VERSION_WITHOUT_TEMPLATE})
    if not (version_text.isascii() and version_text.isdigit() and len(version_text) <= 9 and int(version_text) >= 1):
        raise ValidationError({"version": VERSION_NOT_A_NUMBER})
    return template_id, int(version_text)


def version_of(template: JobTemplate, number: int | None = None) -> JobTemplateVersion:
    """The named version, else the template's default, else its latest. Raises DoesNotExist."""
    versions = template.versions.all()
    if number is not None:
        return versions.get(number=number)
    if template.default_version is not None:
        found = versions.filter(number=template.default_version).first()
        if found:
            return found
    latest = versions.order_by("-number").first()
    if latest is None:
        raise JobTemplateVersion.DoesNotExist("The template has no versions.")
    return latest


# A description says what a template is for, in a few lines; the page shows it whole.
DESCRIPTION_MAX = 2000


def name_twin(rows: QuerySet, name: str) -> str | None:
    """The name of a row of `rows` equal to `name` ignoring case, else None: names that differ only in case read as
    one in lists, mail and audit (workspaces, templates, schedules, webhooks refuse them). Compared in Python with
    casefold, since SQLite's iexact folds ASCII only; a scope holds few names. The database holds the rule too, for
    two saves at once (UniqueConstraint on Lower(name), folded as the database folds: PostgreSQL every letter,
    SQLite ASCII only); migration 0040 renamed the case twins saved before."""
    folded = name.casefold()
    twins = [other for other in rows.values_list("name", flat=True) if other.casefold() == folded]
    return name if name in twins else next(iter(twins), None)  # the same name first: that is the plainer error


def save(workspace: Workspace, user, name: str, sections: Mapping, *, description: str = "",
         note: str = "", source: Job | None = None) -> JobTemplateVersion:
    """Save sections as a new template, or as the next version of the workspace's template of that name.

    A template with locked fields takes new versions only from admins, or a member could change a locked
    value by saving a version and starting from it.

    Sections that build the same body and hints as the latest version make no new version (a double-clicked
    Save, a form posted twice): that version is returned with `unchanged` True (False on a new one). The
    template's row is locked meanwhile, so saves of one template at the same moment compare one after another.
    """
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Enter a template name."})
    if len(name) > 100:
        raise ValidationError({"name": "At most 100 characters."})
    if len(description) > DESCRIPTION_MAX:
        raise ValidationError({"description": f"At most {DESCRIPTION_MAX} characters ({len(description)} given)."})
    access.require(user, "create", workspace=workspace)
    mine = JobTemplate.objects.filter(workspace=workspace)
    # A template's exact name saves a version of it; so does another save creating the same name at this moment
    # (get_or_create below): only a new name that differs from another in case alone is refused.
    _refuse_case_twin(mine, name)
    for _attempt in range(3):
        try:
            with transaction.atomic():
                template, created = JobTemplate.objects.get_or_create(
                    workspace=workspace, name=name, defaults={"description": description, "created_by": user}
                )
                if not created and template.locked and not access.can(user, "manage", workspace=workspace):
                    raise PermissionDenied(
                        f"The template '{name}' has locked fields; only a workspace admin can add versions."
                    )
                described = {}
                if not created:  # PostgreSQL: the next save of this template waits here, then sees this one's
                    template = JobTemplate.objects.select_for_update().get(pk=template.pk)
                    # A description typed with a version is the template's now (it was dropped unsaid); left empty,
                    # the template keeps its own.
                    if description.strip() and description != template.description:
                        described = {"description": {"from": template.description, "to": description}}
                        template.description = description
                        template.save(update_fields=["description"])
                clean = strip_secrets(sections)
                latest = template.versions.order_by("-number").first()
                if latest is not None and same_content(latest.sections, clean):
                    if described:
                        audit.record(user, AuditEvent.TEMPLATE, workspace=workspace, job=source,
                                     event="described", template=template.name, template_id=template.pk, **described)
                    latest.unchanged = True
                    latest.described = bool(described)
                    return latest
                number = (latest.number if latest else 0) + 1
                version = JobTemplateVersion.objects.create(
                    template=template, number=number, sections=clean, note=note[:200], created_by=user,
                )
                audit.record(user, AuditEvent.TEMPLATE, workspace=workspace, job=source, event="saved",
                             template=template.name, template_id=template.pk, version=number, **described)
            version.unchanged = False
            return version
        except IntegrityError:
            # Someone saved the same name or version number at the same moment: count again. Or a case twin of a new
            # name (the database's rule, migration 0040): refused as the check above refuses it.
            _refuse_case_twin(mine, name)
            continue
    raise ValidationError({"name": "The template is being saved by someone else; try again."})


def _refuse_case_twin(mine: QuerySet, name: str) -> None:
    """Raise the name's ValidationError when `name` is new to the workspace's templates `mine` and one of them is
    named so but for case."""
    twin = None if mine.filter(name=name).exists() else name_twin(mine.exclude(name=name), name)
    if twin is not None:
        raise ValidationError({"name": f"This workspace has a template named '{twin}': names may not differ "
                                       f"only in case. Save as '{twin}' to add a version of it, or choose another "
                                       "name."})


def unchanged_message(version: JobTemplateVersion) -> str:
    """What a save that made no new version says (save() returned the latest with `unchanged`)."""
    described = " Its description is saved." if getattr(version, "described", False) else ""
    return (f"No change since version {version.number} of the template '{version.template.name}': "
            f"no new version was saved.{described}")


def set_locks(template: JobTemplate, user, paths: Iterable[str]) -> list[str]:
    """Lock exactly these fields (admins only). Unknown paths raise ValidationError."""
    access.require(user, "manage", workspace=template.workspace)
    wanted = list(dict.fromkeys(paths))
    unknown = [p for p in wanted if p not in LOCKABLE]
    if unknown:
        raise ValidationError({"locked": f"Unknown field(s): {', '.join(unknown)}."})
    before = list(template.locked)
    template.locked = wanted
    template.save(update_fields=["locked"])
    audit.record(user, AuditEvent.TEMPLATE, workspace=template.workspace, event="locked",
                 template=template.name, template_id=template.pk, locked=audit.changes({"locked": before},
                                                                                        {"locked": wanted}))
    return wanted


def set_default(template: JobTemplate, user, number: int | None) -> None:
    access.require(user, "manage", workspace=template.workspace)
    if number is not None and not template.versions.filter(number=number).exists():
        raise ValidationError({"default_version": f"There is no version {number}."})
    before = template.default_version
    template.default_version = number
    template.save(update_fields=["default_version"])
    audit.record(user, AuditEvent.TEMPLATE, workspace=template.workspace, event="default-version",
                 template=template.name, template_id=template.pk, default={"from": before, "to": number})


def jobs_started_from(template: JobTemplate) -> int:
    """How many jobs name the template in their hints (`link()`: started from it, or a clone or edit of one): the
    jobs whose lines its locks bind."""
    return Job.objects.filter(workspace_id=template.workspace_id, **{f"hints__{LINK}__id": template.pk}).count()


def delete(template: JobTemplate, user) -> int:
    """Delete the template and its versions; how many jobs started from it (the audit event keeps the count).

    Its locks go with it: `linked()` finds no template, so the clones and edits of those jobs are free again. Kept
    locks would bind a team's jobs to a template nobody can open, explain or unlock any more; the admin deciding
    to delete it is the one who may lift them, and is told so first (template_detail.html). A rule that must
    outlive a template belongs in the workspace's guardrails (jobs.policies)."""
    access.require(user, "manage", workspace=template.workspace)
    jobs = jobs_started_from(template)
    audit.record(user, AuditEvent.TEMPLATE, workspace=template.workspace, event="deleted",
                 template=template.name, template_id=template.pk, jobs=jobs)
    template.delete()
    return jobs


def deleted_message(template: JobTemplate, jobs: int) -> str:
    """What the template list says after a delete: what became of the locks on the jobs started from it."""
    said = f"Template {template.name} deleted."
    if not jobs or not template.locked:
        return said
    if jobs == 1:
        return f"{said} 1 job started from it keeps running; its clones and edits are no longer held to its locked " \
               "fields."
    return f"{said} {jobs} jobs started from it keep running; their clones and edits are no longer held to its " \
           "locked fields."
