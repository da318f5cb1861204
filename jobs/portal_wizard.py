"""How the team portal plugs into the create-job wizard (jobs/wizard.py calls these three functions):

- `wizard_start(request, params)`: a wizard started from a template (`?template=<id>&version=<n>`) or from
  an import waiting in the session (`?prefill=<key>`, jobs.portal.take_prefill); None for a plain new job.
- `done(request, start)`: a job or sweep was made from the page: its import stops waiting.
- `locks(start)`: the section paths the template locks, for the Wizard to build (read-only fields with a
  "Locked by the template" badge, no rows added to or removed from a locked list).
- `apply(start, wizard)`: after every Wizard is built: any change to a locked field is an error at that
  field, so the server refuses it whatever the browser sends.
- `page_context(start, workspace)`: the guardrail hints and template/import notes the page shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages as notices
from django.core.exceptions import BadRequest, ValidationError
from django.http import Http404, HttpRequest

from jobs import access, policies, templates_lib
from jobs.models import JobTemplate, JobTemplateVersion, Workspace

# The hidden field that carries an import's format through the wizard's posts, and its values.
IMPORT_FIELD = "_import"
IMPORT_FORMATS = ("json", "params")
# The hidden field that carries the import's key (jobs.portal.stash_prefill) through the page's posts.
PREFILL_FIELD = "_prefill"


def import_details(params) -> dict[str, str]:
    """The audit details of a job created from an imported body (the browser's claim: it only labels the event)."""
    fmt = params.get(IMPORT_FIELD)
    return {"imported_from": fmt} if fmt in IMPORT_FORMATS else {}


@dataclass
class PortalStart:
    workspace: Workspace
    sections: dict | None = None  # the initial wizard data, when the page is first shown
    hidden: dict[str, str] = field(default_factory=dict)  # carried through every POST of the page
    template: JobTemplate | None = None
    version: JobTemplateVersion | None = None
    origin: str = ""
    notes: list[dict[str, str]] = field(default_factory=list)  # an import's (jobs.portal_forms.import_note_rows)
    prefill: str = ""  # an import's key in the session

    @property
    def locked(self) -> list[str]:
        return templates_lib.lock_paths(self.template) if self.template else []


def wizard_start(request: HttpRequest, params) -> PortalStart | None:
    """A template or import start for this request, permissions checked (view the template, create in its
    workspace); None when the request is about neither."""
    try:
        template_id, number = templates_lib.parse_start(params.get("template") or params.get("_template"),
                                                        params.get("version") or params.get("_template_version"))
    except ValidationError as exc:  # the API answers the same 400 at "template" or "version"
        raise BadRequest(" ".join(exc.messages)) from exc
    if template_id is not None:
        template = access.get_template(request.user, template_id)
        access.require(request.user, "create", workspace=template.workspace)
        try:
            version = templates_lib.version_of(template, number)
        except JobTemplateVersion.DoesNotExist as exc:
            raise Http404("No such version of the template.") from exc
        sections = templates_lib.strip_secrets(version.sections)
        return PortalStart(
            template.workspace, sections=sections, template=template, version=version,
            hidden={"_template": str(template.pk), "_template_version": str(version.number),
                    "_workspace": str(template.workspace_id)},
            origin=f"template {template.name} v{version.number}",
        )
    # The page's first GET names the import in its URL (a reload names it again); its posts carry the key.
    key = params.get("prefill") if request.method == "GET" else params.get(PREFILL_FIELD)
    if key:
        return _import_start(request, str(key))
    return None


def _import_start(request: HttpRequest, key: str) -> PortalStart | None:
    from jobs import portal

    data = portal.take_prefill(request, key)
    workspace = access.workspaces_for(request.user).filter(pk=data.get("workspace")).first() if data else None
    if workspace is None:
        if request.method == "GET":  # not a silent blank wizard; a post goes on in its posted workspace
            notices.warning(request, portal.PREFILL_GONE)
        return None
    access.require(request.user, "create", workspace=workspace)
    hidden = {"_workspace": str(workspace.pk), PREFILL_FIELD: key}
    if data.get("format") in IMPORT_FORMATS:  # so the job's "created" audit event says it was imported
        hidden[IMPORT_FIELD] = data["format"]
    return PortalStart(workspace, sections=data.get("sections") or None, hidden=hidden,
                       origin=str(data.get("origin", "import")),
                       notes=data["notes"] if isinstance(data.get("notes"), list) else [], prefill=key)


def done(request: HttpRequest, start: PortalStart | None) -> None:
    """A job or sweep was made from the page: the import it started from stops waiting."""
    if start is not None and start.prefill:
        from jobs import portal

        portal.drop_prefill(request, start.prefill)


def locks(start: PortalStart | None) -> list[str]:
    """The section paths (fields and lists) the start's template locks; none without a template."""
    return start.locked if start is not None else []


def apply(start: PortalStart | None, wizard) -> None:
    """Report every change to a locked field at its field (the Wizard was built with `locks(start)`, so it
    already shows them read-only and refuses row actions on locked lists)."""
    if start is None or start.template is None:
        return
    for path, messages in templates_lib.locked_errors(start.template, start.version, wizard.sections).items():
        wizard.messages.setdefault(path, []).extend(messages)


def page_context(start: PortalStart | None, workspace: Workspace) -> dict[str, Any]:
    return {
        "policy_hints": policies.hints_for(workspace),
        "portal_start": start,
        "locked_labels": [templates_lib.LOCKABLE[p][0] for p in (start.template.locked if start and start.template
                                                                  else []) if p in templates_lib.LOCKABLE],
    }
