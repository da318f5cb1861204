"""The create-job wizard pages: a new job, a clone (`?clone=<id>`), edit and resubmit (`?edit=<id>`), a schedule's
job configuration (`?schedule=<id>`: saved to the schedule, no job made), and the HTMX partials (one section
re-rendered or validated, the live API request panel).

Edit and resubmit creates a new Job (with `cloned_from` pointing at the failed one) instead of reusing the
failed row: the failed row keeps DLC's error and RequestId as the record of what happened, the new row gets
its own idempotency tag, and no web request ever rewrites a job a worker might still be looking at.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_POST

from consoleapp.middleware import page_path
from jobs import (
    access,
    clone,
    costs,
    dependencies,
    early_stop,
    export,
    portal_wizard,
    schedules,
    secretbox,
    spec,
    suggestions,
    sweeps,
    templates_lib,
)
from jobs import status as st
from jobs.api_jobs import take_secrets
from jobs.forms import environment
from jobs.forms import wizard as glue
from jobs.models import Job, Schedule, Sweep, Workspace
from jobs.views import current_workspace, save_and_enqueue, show_workspace

# A change of one of these choices re-renders other sections too (their fields or notes depend on it).
ALSO_RENDER = {
    "resources-resource_type": ("environment", "vpc", "fault_tolerance"),
    "resources-source": ("vpc", "fault_tolerance"),
    "resources-framework": ("environment",),
}


# The sign-in page says this after a wizard request that found its session gone (expired, or ended on the server).
SESSION_ENDED = ("Your session ended, so the job form was not sent and no job was created. Sign in to open the form "
                 "again: what you had typed was not saved, so check it or type it again.")
# The hidden fields that say what a wizard page started from, and the parameter that opens the same page.
_START_PARAMS = (("_clone", "clone"), ("_edit", "edit"), ("_schedule", "schedule"), ("_template", "template"),
                 ("_template_version", "version"), ("_workspace", "_workspace"))


def _page_url(request: HttpRequest) -> str:
    """The wizard page a posted form came from: the Referer's path and query when it is the wizard's (the very URL,
    so after the sign-in the browser caches the new page under the old one's address, and Back shows the typed
    form with a valid CSRF token), else rebuilt from the form's hidden fields (a clone's, an edit's, a template's,
    a workspace's), only ids, so nothing but a number the browser sent reaches next=."""
    page = page_path(request.headers.get("Referer", ""))
    if urlsplit(page).path == reverse("job_create"):
        return page
    query = {}
    for key, name in _START_PARAMS:
        value = str(request.POST.get(key) or "")
        if value.isascii() and value.isdigit() and len(value) <= 18:
            query[name] = value
    return reverse("job_create") + (f"?{urlencode(query)}" if query else "")


def _signed_in(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """login_required for the wizard's views. A POST without a session is a form the user filled in while the
    session was alive: its input cannot be kept (it may hold secrets, and nobody is signed in to keep it for), so
    the sign-in page says the session ended, and next= is the wizard page the form came from, not the POST's URL.
    (An htmx request's next= is its page's, set by consoleapp.middleware from HX-Current-URL.)"""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if request.method != "POST":
            return redirect_to_login(request.get_full_path())
        messages.warning(request, SESSION_ENDED)
        return redirect_to_login(_page_url(request))

    return wrapped


@dataclass
class Start:
    """What the page is about: the workspace, and the job (clone or edit) or schedule it starts from, if any."""

    workspace: Workspace
    source: Job | None = None
    mode: str = "new"  # new | clone | edit | schedule
    prefill: clone.Prefill | None = None
    portal: portal_wizard.PortalStart | None = None  # started from a template or an import
    hidden: dict[str, str] = field(default_factory=dict)
    # The "Run after (optional)" box (jobs.dependencies): its text as typed, and once submitted, the checked choice.
    after: dict[str, str] = field(default_factory=dict)
    after_choice: dependencies.Choice | None = None
    schedule: Schedule | None = None  # mode "schedule": the schedule whose job configuration the page edits
    # Mode "schedule", its owner's edit: the sealed passwords (schedules.kept_passwords) that a field left empty keeps.
    kept_passwords: tuple[str, ...] = ()


def _pk(value: str | None) -> int | None:
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > 18:  # "²".isdigit() is true; int("²") raises
        raise Http404("No such job.")
    return int(value)


def _start(request: HttpRequest, params) -> Start | None:
    """Resolve the workspace and the source job from GET (?clone / ?edit) or the form's hidden fields,
    checking permissions on every request: view on the source and create in the target workspace."""
    user = request.user
    schedule_id = _pk(params.get("schedule") or params.get("_schedule"))
    if schedule_id:
        return _schedule_start(user, schedule_id)
    clone_id, edit_id = _pk(params.get("clone") or params.get("_clone")), _pk(params.get("edit") or params.get("_edit"))
    if clone_id or edit_id:
        source = access.get_job(user, clone_id or edit_id)
        workspace = source.workspace
        access.require(user, "clone" if clone_id else "create", workspace=workspace)
        mode = "clone" if clone_id else "edit"
        hidden = {f"_{mode}": str(source.pk)}
        taken = Job.objects.filter(workspace=workspace, display_name__startswith=clone.copy_base(
            source.display_name)).values_list("display_name", flat=True)
        # Sealed secrets go only into their owner's edit of a failed job: another member could otherwise run
        # someone else's API key with a command of their own (and read it from the pod's log).
        keep = mode == "edit" and source.owner_id == user.pk and source.status == st.SUBMIT_FAILED
        prefill = clone.prefill(source, taken_names=taken, workspace_id=workspace.dlc_workspace_id,
                                edit=mode == "edit", context=glue.context_for(workspace), keep_sealed=keep)
        if params.get("_baseline_name"):
            prefill.rename(params["_baseline_name"])
        hidden["_baseline_name"] = prefill.sections["basic"]["name"]
        # A source started from a template binds its clone and edit to the same locks, read from the source on every
        # request (never from the page), as a template start's are.
        bound = portal_wizard.PortalStart(workspace, template=prefill.template[0], version=prefill.template[1]) \
            if prefill.template else None
        return Start(workspace, source=source, mode=mode, prefill=prefill, portal=bound, hidden=hidden)
    begun = portal_wizard.wizard_start(request, params)
    if begun is not None:
        return Start(begun.workspace, hidden=begun.hidden, portal=begun)
    chosen = _pk(params.get("_workspace"))
    workspace = access.workspaces_for(user).filter(pk=chosen).first() if chosen else None
    workspace = workspace or current_workspace(request)
    if workspace is None:
        return None
    access.require(user, "create", workspace=workspace)
    return Start(workspace, hidden={"_workspace": str(workspace.pk)})


def _schedule_start(user, pk: int) -> Start:
    """A schedule's job configuration, for who may change the schedule (a viewer: 403; another workspace's: 404),
    checked on every request. Prefilled from its stored body as an edit of a job is (the name kept: each run's job
    is named after the schedule anyway), in its workspace, bound to the locks of the template its job came from.
    Its sealed secret variables are kept for its owner's edit only, as a failed job's are (_keep_sealed_envs)."""
    schedule = get_object_or_404(Schedule.objects.select_related("workspace", "owner", "source_job"), pk=pk,
                                 workspace__in=access.workspaces_for(user))
    if not schedules.can_change(user, schedule):
        raise PermissionDenied("Only the workspace's admins and the schedule's owner may change it.")
    workspace = schedule.workspace
    prefill = clone.prefill(schedule, workspace_id=workspace.dlc_workspace_id, edit=True,
                            context=glue.context_for(workspace), keep_sealed=schedules.keeps_sealed(user, schedule))
    found = schedules.template_of(schedule)
    if found and not prefill.template:  # a schedule made before it kept its job's link: the job's is imposed
        prefill.template = found
        prefill.resets.extend(templates_lib.impose(*found, prefill.sections))
    bound = portal_wizard.PortalStart(workspace, template=found[0], version=found[1]) if found else None
    # Its owner is not asked again for the registry and Ray Redis passwords the schedule keeps sealed (as the API's
    # edit keeps them): left empty, they stay (_keep_sealed_passwords). Anyone else types them.
    kept = tuple(schedules.kept_passwords(schedule)) if schedules.keeps_sealed(user, schedule) else ()
    prefill.reprompts = [(name, what) for name, what in prefill.reprompts
                         if not any(_KEPT_PASSWORDS[key] == (name, what) for key in kept)]
    return Start(workspace, mode="schedule", prefill=prefill, portal=bound, hidden={"_schedule": str(schedule.pk)},
                 schedule=schedule, kept_passwords=kept)


# The re-prompt (clone.prefill's) of each password a schedule's owner may keep: (field name, what).
_KEPT_PASSWORDS = {
    "registry_password": (glue.PASSWORD, clone.POLICY["environment.registry_password"][1]),
    "RayRedisPassword": ("resources-advanced", clone.POLICY["resources.advanced.RayRedisPassword"][1]),
}


# The wizard's one-time submission token: a uuid4 made when the page is rendered, carried in a hidden input and
# used as the job's idempotency tag (a sweep's trials derive theirs from it), so a form posted again, after Back
# or a lost response, finds what it made instead of making a duplicate.
TOKEN_FIELD = "_submission"
ALREADY_SUBMITTED = "This form was already submitted: here is its {what}."


def submission_token(value: object) -> uuid.UUID | None:
    """The posted token if it is a uuid4 (RFC 4122), else None."""
    try:
        token = uuid.UUID(str(value or ""))
    except ValueError:
        return None
    return token if token.variant == uuid.RFC_4122 and token.version == 4 else None


def claim_token(value: object, *, owner, workspace: Workspace) -> tuple[uuid.UUID, Job | Sweep | None]:
    """(the tag to create with, the job or sweep this form already made, if any). The token is the browser's, so
    it is trusted only to find the same user's own submission in the same workspace: one that is malformed or that
    a job of another user or workspace holds is replaced by a fresh uuid4 (the post then makes a new job)."""
    token = submission_token(value)
    if token is None:
        return uuid.uuid4(), None
    found = (Job.objects.filter(idempotency_tag__in=[token, sweeps.trial_tag(token, 1)])
             .select_related("sweep_trial__sweep").first())
    if found is None:
        return token, None
    if found.owner_id != owner.pk or found.workspace_id != workspace.pk:
        return uuid.uuid4(), None
    trial = getattr(found, "sweep_trial", None) if found.idempotency_tag != token else None
    return token, trial.sweep if trial is not None else found


def _already_submitted(request: HttpRequest, made: Job | Sweep) -> HttpResponse:
    messages.info(request, ALREADY_SUBMITTED.format(what="sweep" if isinstance(made, Sweep) else "job"))
    return redirect(made)


def _keep_sealed_envs(start: Start, data):
    """Edit and resubmit: a secret variable posted empty takes the failed job's sealed value (spec.fill_secrets'
    rule, applied to the POST so that the value never goes to the page). Typing a value replaces it."""
    if start.mode not in ("edit", "schedule") or data is None or not start.prefill or not start.prefill.kept_secrets:
        return data
    sealed = clone.kept_envs(start.schedule or start.source)
    out = {key: data.get(key) for key in data.keys()}
    for key, flag in list(out.items()):
        found = re.fullmatch(r"environment-envs-(\d{1,6})-secret", key)
        if not found or flag not in ("on", "true", "True", "1"):
            continue
        name = str(out.get(f"environment-envs-{found[1]}-key") or "").strip()
        if name in sealed and not out.get(f"environment-envs-{found[1]}-value"):
            out[f"environment-envs-{found[1]}-value"] = sealed[name]
    return out


def _keep_sealed_passwords(start: Start, data):
    """A schedule's owner editing its configuration: a registry password left empty (with a username) or a
    RayRedisPassword left as the mask or empty means "keep the sealed one". The form then carries no value for it
    (never the sealed one, so nothing reaches the page): the registry password becomes the mask, which the
    credentials rule accepts and the body leaves out, and the Ray password leaves the advanced settings; both stay
    out of wizard.secrets(), and schedules.edit_config keeps the sealed values the body still needs."""
    if start.mode != "schedule" or data is None or not start.kept_passwords:
        return data
    out = data.copy()  # a QueryDict's copy is mutable and keeps its lists
    if "registry_password" in start.kept_passwords and not out.get(glue.PASSWORD) \
            and str(out.get("environment-registry_username") or "").strip():
        out[glue.PASSWORD] = spec.SECRET_PLACEHOLDER
    advanced, _problem = spec.parse_advanced(out.get("resources-advanced"))
    if "RayRedisPassword" in start.kept_passwords and advanced \
            and advanced.get("RayRedisPassword") in ("", spec.SECRET_PLACEHOLDER):
        del advanced["RayRedisPassword"]
        out["resources-advanced"] = spec.format_advanced(advanced) if advanced else ""
    return out


def _wizard(start: Start, data, show=None, only=None) -> glue.Wizard:
    data = _keep_sealed_passwords(start, _keep_sealed_envs(start, data))
    catalog = glue.instance_catalog(start.workspace)
    # Template locks: read-only fields and lists (built into the Wizard), and a change to one is an error.
    wizard = glue.Wizard(data, catalog=catalog, context=glue.context_for(start.workspace, catalog), show=show,
                         locked=portal_wizard.locks(start.portal), only=only)
    portal_wizard.apply(start.portal, wizard)
    _refuse_unticked_secrets(start, wizard)
    return wizard


def _refuse_unticked_secrets(start: Start, wizard: glue.Wizard) -> None:
    """A variable that came Secret (from a clone, an edit or a template) has no value on the page: unticking
    Secret without typing one would send it empty, not the source's value."""
    origin = start.prefill.sections if start.prefill else start.portal.sections if start.portal else None
    rows = ((origin or {}).get("environment") or {}).get("envs") or []
    came = {str(r.get("key") or "").strip() for r in rows if isinstance(r, dict) and r.get("secret") is True}
    for i, row in enumerate(wizard.sections["environment"].get("envs") or []):
        key = str(row.get("key") or "").strip()
        if key in came and row.get("secret") is not True and not str(row.get("value") or "").strip():
            wizard.messages.setdefault(f"environment.envs[{i}].value", []).append(
                f"Type the value of {key} again: secrets are never copied, and unticking Secret does not bring "
                "the value back.")


def _preview(wizard: glue.Wizard, start: Start, *boxes: dict[str, list[str]]) -> dict:
    """The API panel; `boxes`: the sweep's and the run-after box's errors, counted with the form's."""
    body = wizard.preview_body(start.workspace.dlc_workspace_id)
    if isinstance(body.get("Envs"), dict):  # a value named like a secret is sealed at submit (take_secrets)
        body["Envs"] = spec.strip_secrets({"Envs": body["Envs"]})["Envs"]
    clean = wizard.body(start.workspace.dlc_workspace_id)
    return {
        "json": json.dumps(body, indent=2, ensure_ascii=False),
        "sdk": export.to_python_sdk(clean, region=start.workspace.region),
        "params": export.to_params_file(clean),
        "params_command": export.params_submit_command(clean),
        "params_problem": export.params_file_problem(clean),
        "problems": glue.problem_count(wizard, *boxes),
        # DLC's CreateJob has no such field: the panel says where a copied request must send it instead.
        "run_after": start.after.get(dependencies.FIELD, "").strip(),
    }


def _diff(wizard: glue.Wizard, start: Start) -> list[clone.Change] | None:
    if start.prefill is None:
        return None
    return clone.changes(start.prefill.sections, wizard.sections, start.prefill.source_sections, wizard.label)


def _reprompts(wizard: glue.Wizard, start: Start) -> list[tuple[str, str]]:
    """Secrets the user has to type (again): from the clone policy, or dropped from a re-rendered page."""
    found = list(start.prefill.reprompts) if start.prefill else []
    names = {name for name, _ in found}
    secrets = wizard.secrets()  # empty for a page built from stored data: only a POST carries secrets
    if "registry_password" in secrets and glue.PASSWORD not in names:
        found.append((glue.PASSWORD, "registry password"))
    if "RayRedisPassword" in secrets and "resources-advanced" not in names:
        found.append(("resources-advanced", "RayRedisPassword (advanced framework configuration)"))
    kept = {key for _name, key in start.prefill.kept_secrets} if start.prefill else set()
    for i, row in enumerate(wizard.sections["environment"].get("envs") or []):
        key = str(row.get("key") or "").strip()
        name = environment.secret_value_name(f"environment-envs-{i}", key)
        if spec.SECRET_ENV_PREFIX + key in secrets and name not in names and key not in kept:
            found.append((name, f"value of {key}"))
    return found


# The sweep box's fields: (name, label in the error summary).
_SWEEP_FIELDS = ((sweeps.FIELD, "Sweep"), (sweeps.TRIALS_FIELD, "Trials"), (sweeps.SEED_FIELD, "Seed"),
                 (early_stop.METRIC_FIELD, "Early stopping metric"), (early_stop.GOAL_FIELD, "Early stopping goal"),
                 (early_stop.AFTER_FIELD, "After N succeeded trials"), (early_stop.STEP_FIELD, "Not before step"))


def _sweep_input(params: QueryDict) -> dict[str, str]:
    """The sweep box's text, Trials and Seed as typed (a request's GET or POST)."""
    return {name: str(params.get(name, "")) for name, _label in _SWEEP_FIELDS}


NO_SWEEP = "Only for a sweep: fill the Sweep box above, or clear this (the job would be submitted once without it)."


def _without_sweep(given: dict[str, str]) -> dict[str, list[str]]:
    """With the Sweep box empty the wizard submits one job: Trials, Seed and early stopping typed beside it would be
    ignored without a word, so each is an error at its field."""
    if given[sweeps.FIELD].strip():
        return {}
    return {name: [NO_SWEEP] for name, _label in _SWEEP_FIELDS[1:] if given[name].strip()}


# The run-after box's fields: (name, label in the error summary).
_AFTER_FIELDS = ((dependencies.FIELD, "Run after"), (dependencies.WHEN_FIELD, "Run when it"))


def _after_input(params: QueryDict) -> dict[str, str]:
    """The run-after box as typed (GET: `?run_after=<id>` prefills it, e.g. from a job page's link)."""
    return {name: str(params.get(name, ""))[:300] for name, _label in _AFTER_FIELDS}


def _after(start: Start) -> dict:
    errors = start.after_choice.errors if start.after_choice else {}
    return {"value": start.after.get(dependencies.FIELD, ""),
            "when": start.after.get(dependencies.WHEN_FIELD) or dependencies.SUCCEEDED,
            "errors": errors.get(dependencies.FIELD, []), "when_errors": errors.get(dependencies.WHEN_FIELD, []),
            "error_count": sum(map(len, errors.values())), "when_choices": list(dependencies.WHEN.items()),
            "choices": dependencies.recent_choices(start.workspace)}


def _context(wizard: glue.Wizard, start: Start, sweep_input: dict[str, str] | None = None,
             sweep_errors: dict[str, list[str]] | None = None) -> dict:
    sweep_input, sweep_errors = sweep_input or {}, sweep_errors or {}
    summary = wizard.summary() if wizard.show else []
    after_errors = start.after_choice.errors if start.after_choice else {}
    # At a submit the summary lists every problem, so its length is the panel's count (glue.problem_count).
    preview = _preview(wizard, start, sweep_errors, after_errors)
    return {
        "wizard": wizard,
        "sections": wizard.views(),
        "summary": summary + [glue.Problem(f"id_{name}", label, m) for name, label in _SWEEP_FIELDS
                              for m in sweep_errors.get(name, [])]
        + [glue.Problem(f"id_{name}", label, m) for name, label in _AFTER_FIELDS for m in after_errors.get(name, [])],
        "after": _after(start),
        "sweep": {"text": sweep_input.get(sweeps.FIELD, ""), "trials": sweep_input.get(sweeps.TRIALS_FIELD, ""),
                  "seed": sweep_input.get(sweeps.SEED_FIELD, ""), "errors": sweep_errors.get(sweeps.FIELD, []),
                  "trials_errors": sweep_errors.get(sweeps.TRIALS_FIELD, []),
                  "seed_errors": sweep_errors.get(sweeps.SEED_FIELD, []),
                  "error_count": sum(map(len, sweep_errors.values())), "max_trials": sweeps.max_trials(),
                  "stop": {name: sweep_input.get(name, "") for name in early_stop.FIELDS},
                  "stop_errors": {name: sweep_errors.get(name, []) for name in early_stop.FIELDS}},
        "start": start,
        "workspace": start.workspace,
        "hidden": start.hidden,
        "preview": preview,
        "diff": _diff(wizard, start),
        "reprompts": _reprompts(wizard, start),
        "suggest": _suggest(wizard, start),
        **portal_wizard.page_context(start.portal, start.workspace),
        "template_choices": _template_choices(start),
        "estimate": _estimate(wizard, start, sweep_input),
        "budget_notice": costs.notice(start.workspace),
    }


def _estimate(wizard: glue.Wizard, start: Start,
              sweep_input: dict[str, str] | None = None) -> costs.Estimate | costs.Unpriced | None:
    """The resources section's cost estimate at the workspace's prices (jobs.costs), times a sweep's trials; None
    when the workspace has no prices or a role has no instance type or quota resources yet. The API panel's refresh
    sends it too, so it follows every field."""
    prices = costs.prices_for(start.workspace)
    if not prices.any:
        return None
    body = wizard.body()
    trials = 1
    if sweep_input and sweep_input.get(sweeps.FIELD, "").strip():
        search, _errors = sweeps.parse_form(sweep_input[sweeps.FIELD], sweep_input.get(sweeps.TRIALS_FIELD),
                                            sweep_input.get(sweeps.SEED_FIELD), env_names=body.get("Envs") or {})
        trials = search.size if search is not None else 1
    minutes = body.get("JobMaxRunningTimeMinutes")
    found = costs.estimate(prices, body.get("JobSpecs"), minutes if isinstance(minutes, int) else None, trials)
    if found is None:  # "no estimate" only for a job complete enough to price, not a blank wizard
        return costs.Unpriced() if costs.sized(body.get("JobSpecs")) else None
    return found


def _template_choices(start: Start) -> list[tuple[int, str]]:
    """The workspace's templates, for a blank Create job page's "Start from a template" picker."""
    if start.mode != "new" or start.portal:
        return []
    return list(templates_lib.templates_in(start.workspace).values_list("pk", "name")[:200])


def _suggest(wizard: glue.Wizard, start: Start, sections: set[str] | None = None) -> dict:
    """Datalists of the values the workspace's recent jobs used (jobs.suggestions), for the sections rendered; a
    re-rendered section without free-text suggestions costs no query."""
    if sections is not None and not sections & set(suggestions.SECTIONS):
        return {}
    return suggestions.offer(wizard, suggestions.recent_values(start.workspace))


@_signed_in
def job_new(request: HttpRequest) -> HttpResponse:
    params = request.POST if request.method == "POST" else request.GET
    start = _start(request, params)
    if start is None:
        return render(request, "jobs/no_workspace.html", status=403)
    show_workspace(request, start.workspace)  # a clone's, an edit's or a template's workspace, not the chosen one
    if start.mode == "edit" and start.source.status != st.SUBMIT_FAILED:
        messages.info(request, "Only a job whose submission failed can be edited and resubmitted; this is a clone.")
        return redirect(f"{reverse('job_create')}?clone={start.source.pk}")
    start.after = _after_input(params)
    # A re-rendered form keeps its token: the submission it finally makes is the one this page stands for.
    start.hidden[TOKEN_FIELD] = str(submission_token(params.get(TOKEN_FIELD)) or uuid.uuid4())
    if portal_wizard.import_details(params):  # kept through re-renders, for the job's audit event
        start.hidden[portal_wizard.IMPORT_FIELD] = params[portal_wizard.IMPORT_FIELD]
    if request.method != "POST":
        initial = start.portal.sections if start.portal and start.portal.sections else None
        sweep_input = _sweep_input(request.GET)
        sections = start.prefill.sections if start.prefill else initial or _fresh(start)
        if sweep_input[sweeps.FIELD] and start.prefill:
            sections = _as_sweep(start, sections) or sections
        data = glue.sections_to_data(sections)
        return _page(request, _context(_wizard(start, data, show=set()), start, sweep_input))
    wizard = _wizard(start, request.POST)
    if start.mode == "schedule":  # no job, no sweep, no run-after: the schedule's configuration is replaced
        return _save_schedule_config(request, start, wizard)
    if wizard.action == "submit":  # checked with the form, so one round trip shows every problem
        start.after_choice = dependencies.check(request.user, start.workspace, start.after[dependencies.FIELD],
                                                start.after[dependencies.WHEN_FIELD])
    if wizard.action == "submit":
        token, made = claim_token(request.POST.get(TOKEN_FIELD), owner=request.user, workspace=start.workspace)
        if made is not None:
            return _already_submitted(request, made)
        start.hidden[TOKEN_FIELD] = str(token)  # a replaced token is this page's from now on
    sweep_input = _sweep_input(request.POST)
    if sweep_input[sweeps.FIELD].strip():
        return _submit_sweep(request, start, wizard, sweep_input)
    if wizard.action == "submit" and (unused := _without_sweep(sweep_input)):
        return _page(request, _context(wizard, start, sweep_input, unused))
    if wizard.action == "submit" and wizard.is_valid and not start.after_choice.errors:
        # As the API does (take_secrets): a variable named like a secret but not ticked Secret is sealed too, so
        # its value is not in the database in plain text (every view of the body hides it already).
        body, named = take_secrets(wizard.body(start.workspace.dlc_workspace_id))
        try:
            job = save_and_enqueue(
                workspace=start.workspace,
                owner=request.user,
                body=body,
                hints=_hints(start, wizard),
                sealed_secrets=secretbox.seal({**named, **wizard.secrets()}),
                cloned_from=start.source,
                run_after=start.after_choice.upstream,
                run_after_when=start.after_choice.when,
                idempotency_tag=token,
                audit_details=portal_wizard.import_details(request.POST),
            )
        except IntegrityError:  # the same form posted twice at once: the other post made the job
            if (answer := _made_meanwhile(request, start, token)) is None:
                raise
            return answer
        portal_wizard.done(request, start.portal)
        return redirect(job)
    return _page(request, _context(wizard, start, sweep_input))


@_signed_in
def job_new_form(request: HttpRequest) -> HttpResponse:
    """Where the wizard's form posts (Submit, and without JavaScript Apply choices, Add and Remove): a URL other
    than the page's. A browser drops its cached copy of a URL that a form posts to (RFC 9111, 4.4), so a form
    posted to /jobs/new made Back after Submit ask the server for /jobs/new again: a new page with a new token,
    whose Submit made a second job (unless the back/forward cache kept the page). A GET here (a reloaded or
    bookmarked address) opens the wizard."""
    if request.method != "POST":
        query = request.GET.urlencode()
        return redirect(reverse("job_create") + (f"?{query}" if query else ""))
    return job_new(request)


def _save_schedule_config(request: HttpRequest, start: Start, wizard: glue.Wizard) -> HttpResponse:
    """Save configuration: the schedule's body, hints and sealed secrets replaced by schedules.edit_config, which
    checks them again as a schedule's creation does; nothing goes to DLC. The page's token, recorded with the edit,
    makes the same form posted again (Back, a retry) save nothing."""
    schedule = start.schedule
    if wizard.action != "submit" or not wizard.is_valid:
        return _page(request, _context(wizard, start))
    token = submission_token(request.POST.get(TOKEN_FIELD))
    if schedules.config_saved(schedule, token):
        messages.info(request, ALREADY_SUBMITTED.format(what="schedule"))
        return redirect("schedule_list", ws=start.workspace.pk)
    body, named = take_secrets(wizard.body(start.workspace.dlc_workspace_id))
    errors = schedules.edit_config(request.user, schedule, body, {**named, **wizard.secrets()},
                                   hints=_hints(start, wizard), token=token)
    if errors:  # the form passed the same rules: only a rule changed since the page was checked gets here
        for path, said in errors.items():
            messages.error(request, f"The configuration, {path.removeprefix(f'{schedules.JOB}.')}: {' '.join(said)}")
        return _page(request, _context(wizard, start))
    messages.success(request, f"Schedule {schedule.name}: configuration saved; its next runs use it.")
    return redirect("schedule_list", ws=start.workspace.pk)


def _submit_sweep(request: HttpRequest, start: Start, wizard: glue.Wizard, given: dict[str, str]) -> HttpResponse:
    """The wizard's job as a sweep's trials (jobs.sweeps: a grid, or a random search with Trials and Seed): its
    problems at the sweep's fields, nothing saved."""
    body = wizard.body(start.workspace.dlc_workspace_id)
    text, trials, seed = given[sweeps.FIELD], given[sweeps.TRIALS_FIELD], given[sweeps.SEED_FIELD]
    if wizard.action != "submit" or not wizard.is_valid:
        # The sweep's own problems are shown with the form's, so one round trip shows them all.
        errors = {}
        if wizard.action == "submit":
            search, errors = sweeps.parse_form(text, trials, seed, env_names=body.get("Envs") or {})
            errors = errors | early_stop.parse(given, trials=search.size if search else None)[1]
        return _page(request, _context(wizard, start, given, errors))
    grid, found, errors = sweeps.check_form(text, body, context=wizard.context, hints=wizard.hints(),
                                            locked=wizard.locked, trials=trials, seed=seed)
    early, early_errors = early_stop.parse(given, trials=grid.size if grid is not None else None)
    errors = {**errors, **early_errors}
    if errors or start.after_choice.errors:
        return _page(request, _context(wizard, start, given, errors))
    # Every trial waits on the same upstream, if one was chosen.
    token = submission_token(start.hidden.get(TOKEN_FIELD))
    try:
        sweep = sweeps.launch(workspace=start.workspace, owner=request.user, name=body["DisplayName"], grid=grid,
                              found=found, hints=_hints(start, wizard), secrets=wizard.secrets(),
                              cloned_from=start.source, run_after=start.after_choice.upstream,
                              run_after_when=start.after_choice.when, token=token, early=early)
    except IntegrityError:
        if (answer := _made_meanwhile(request, start, token)) is None:
            raise
        return answer
    portal_wizard.done(request, start.portal)
    return redirect(sweep)


def _hints(start: Start, wizard: glue.Wizard) -> dict:
    """The job's hints, with the template it started from (itself or through the job it clones), whose locks then
    bind the job's own clones."""
    portal = start.portal
    bound = templates_lib.link(portal.template, portal.version) if portal and portal.template else {}
    return {**wizard.hints(), **bound}


def _made_meanwhile(request: HttpRequest, start: Start, token: uuid.UUID | None) -> HttpResponse | None:
    """A unique tag refused: a concurrent post of the same form made the job (or sweep) first. None when it was
    not the token's collision (the caller re-raises)."""
    made = claim_token(str(token), owner=request.user, workspace=start.workspace)[1] if token else None
    return _already_submitted(request, made) if made is not None else None


def _as_sweep(start: Start, sections: dict) -> dict | None:
    """"Clone as sweep" of a trial: without the parameters among its variables (the sweep sets them again) and
    named after its sweep, so the new trials are not named `<name>-01-copy-01`."""
    trial = getattr(start.source, "sweep_trial", None) if start.source is not None else None
    if trial is None or start.mode != "clone":
        return None
    taken = Job.objects.filter(workspace=start.workspace, display_name__startswith=trial.sweep.name).values_list(
        "display_name", flat=True)
    # The clone policy's note, the name field and the baseline the page posts back all say the sweep's copy name.
    name = clone.copy_name(trial.sweep.name, taken)
    start.prefill.rename(name)
    start.hidden["_baseline_name"] = name
    out = copy.deepcopy(sections)
    out["basic"]["name"] = name
    names = set(trial.values or {})
    envs = out.get("environment", {}).get("envs") or []
    out["environment"]["envs"] = [r for r in envs if not (isinstance(r, dict) and r.get("key") in names)]
    return out


def _page(request: HttpRequest, context: dict) -> HttpResponse:
    """The whole wizard page. The browser may keep it (never `no-store`): Back after Submit then shows the form as
    it was, from the back/forward cache (typed secrets stay in that tab's memory, as they were while it was open)
    or, without it, from the HTTP cache's copy of the server's HTML, which never holds a secret; either way with
    the same token, so Submit again finds the job made. `no-cache`: a new visit still gets a new page and token;
    `private`: no shared cache stores a member's page."""
    response = render(request, "jobs/wizard/page.html", context)
    patch_cache_control(response, private=True, no_cache=True)
    return response


def _fresh(start: Start) -> dict:
    return spec.defaults(glue.context_for(start.workspace))


TOUCHED_FIELD = "_touched"  # the names of the fields the user changed, kept by static/js/wizard.js


def _touched(params: QueryDict, trigger: str = "") -> set[str]:
    """The places whose errors a re-rendered section may show: those it showed already (its `_shown` inputs) and
    the fields the user changed (`_touched`, and the field whose change sent the request)."""
    names = str(params.get(TOUCHED_FIELD, ""))[:20000].split()
    paths = {glue.path_of(n) for n in [*names, trigger]}
    return {p for p in paths if p} | {p[:300] for p in params.getlist("_shown")[:500]}


@_signed_in
@require_POST
def wizard_section(request: HttpRequest, name: str) -> HttpResponse:
    """One section re-rendered from the whole form: after a choice changed, a row was added or removed,
    or (with `_validate=<section>`) because the user left the section, with its errors shown."""
    if name not in glue.BY_SECTION:
        raise Http404("No such section.")
    start = _start(request, request.POST)
    if start is None:
        return HttpResponse("No workspace.", status=403)
    checked = {s for s in glue.BY_SECTION if f"_checked-{s}" in request.POST}
    trigger = request.headers.get("HX-Trigger-Name", "")
    # Only the section's own focusout asks to validate it (it has no name, so no HX-Trigger-Name). htmx adds the
    # section's hx-vals to the requests of the buttons and choices inside it too (hx-disinherit does not stop it),
    # so an Add, a Remove or a choice also posts `_validate`: those must not show errors nobody made yet.
    if request.POST.get("_validate") == name and not trigger:
        checked.add(name)
        only = None  # the user left the section: all of its problems
    else:  # a choice changed or a row came or went: the fields it brought are not the user's mistakes yet
        only = _touched(request.POST, trigger)
    wizard = _wizard(start, request.POST, show=checked, only=only)
    views = {v.name: v for v in wizard.views()}
    also = [views[s] for s in ALSO_RENDER.get(trigger, ()) if s != name]
    response = render(request, "jobs/wizard/_sections_response.html",
                      {"s": views[name], "also": also, "wizard": wizard, "start": start,
                       "reprompts": _reprompts(wizard, start),
                       "estimate": _estimate(wizard, start, _sweep_input(request.POST))
                       if "resources" in {name, *(v.name for v in also)} else None,
                       "suggest": _suggest(wizard, start, {name, *(v.name for v in also)})})
    # A row's choice can change what the page posts (a public dataset's Access becomes read-only): the API panel's
    # refresh, started by the same change, may have read the form before this swap, so it is asked again.
    if wizard.action in ("add", "remove", "refresh") or glue.row_dependent(trigger):
        response["HX-Trigger"] = "wizard-changed"
    return response


@_signed_in
@require_POST
def wizard_preview(request: HttpRequest) -> HttpResponse:
    """The live API request panel (and, for a clone, the diff against the source job)."""
    start = _start(request, request.POST)
    if start is None:
        return HttpResponse("No workspace.", status=403)
    wizard = _wizard(start, request.POST, show=set())
    # The boxes' problems as a submit would find them, so the panel's count is the one the summary will state.
    given = _sweep_input(request.POST)
    search, sweep_errors = sweeps.parse_form(given[sweeps.FIELD], given[sweeps.TRIALS_FIELD],
                                             given[sweeps.SEED_FIELD], env_names=wizard.body().get("Envs") or {})
    if given[sweeps.FIELD].strip():
        sweep_errors |= early_stop.parse(given, trials=search.size if search else None)[1]
    sweep_errors |= _without_sweep(given)
    after = start.after = _after_input(request.POST)
    after_errors = dependencies.check(request.user, start.workspace, after[dependencies.FIELD],
                                      after[dependencies.WHEN_FIELD]).errors
    return render(request, "jobs/wizard/_preview_response.html",
                  {"preview": _preview(wizard, start, sweep_errors, after_errors), "diff": _diff(wizard, start),
                   "start": start, "estimate": _estimate(wizard, start, given)})
