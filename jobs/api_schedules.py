"""JSON API for scheduled jobs: create, list, get, edit (enable/disable, name, timing, job configuration), delete
(jobs.schedules holds the rules).

The schedule's job is checked as POST /api/v1/jobs checks a body (api_jobs.check_body: guardrails, SecretEnvs,
the body's WorkspaceId); its secrets are sealed and never shown. Access is jobs.access's: a schedule outside the
caller's workspaces (or the token's scope) answers 404; any member may read; the workspace's admins and the
schedule's owner may change or delete it; an owner who may no longer create jobs there (a viewer) may still disable
it ({"enabled": false} alone) or delete it; an admin may take it over (become its owner, its sealed values dropped).
A read-only token changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from jobs import access, idempotency, schedules, spec
from jobs.api_jobs import (
    SECRET_ENVS,
    WORKSPACE_REF,
    Problem,
    bad_request,
    create_request,
    id_page,
    id_page_parameters,
    json_body,
    no_body,
    query_errors,
    response_object,
    unknown_fields,
)
from jobs.apitokens import api_view
from jobs.models import Schedule

RECURRENCE = "recurrence"
FIELDS = {"name", RECURRENCE, "skip_if_active", "enabled", schedules.JOB}
SETTINGS_FIELDS = FIELDS - {schedules.JOB}  # what schedules.edit changes; the job is schedules.edit_config's
JOB_OBJECT = "Must be a JSON object: the CreateJob body, as POST /api/v1/jobs takes it."
_RECURRENCE_KEYS = {"kind", "every_hours", "at", "weekdays", "cron"}
LIST_SIZE = 50  # a page of GET /api/v1/schedules


def _time(value) -> str | None:
    return value.isoformat() if value else None


def schedule_json(schedule: Schedule, request: HttpRequest | None = None) -> dict[str, Any]:
    """A schedule as the API shows it: without its secrets (its body never had them)."""
    recurrence = schedule.recurrence
    url = reverse("api_schedule", args=[schedule.pk])
    runs = []
    recent = getattr(schedule, "recent", None)  # prefetched by a list (schedules.recent_runs)
    for run in recent if recent is not None else schedule.runs.select_related("job")[:schedules.RUNS_SHOWN]:
        runs.append({"due_at": _time(run.due_at), "job": run.job_id,
                     "job_status": run.job.status if run.job else None,
                     "skipped_reason": run.skipped_reason or None})
    return {
        "id": schedule.pk,
        "name": schedule.name,
        "workspace": {"id": schedule.workspace_id, "name": schedule.workspace.name},
        "owner": schedule.owner.get_username() if schedule.owner else None,
        RECURRENCE: {"kind": recurrence.kind, "every_hours": recurrence.every_hours,
                     "at": recurrence.at.strftime("%H:%M") if recurrence.at else None,
                     "weekdays": [schedules.WEEKDAYS[d] for d in recurrence.weekdays],
                     "cron": recurrence.cron or None},
        "recurrence_text": schedules.describe(recurrence),
        "time_zone": schedules.zone().key,
        "enabled": schedule.enabled,
        "skip_if_active": schedule.skip_if_active,
        "next_run_at": _time(schedule.next_run_at),
        "created_at": _time(schedule.created_at),
        schedules.JOB: schedule.body,
        "runs": runs,
        "url": request.build_absolute_uri(url) if request else url,
    }


def _schedule(request: HttpRequest, pk: int) -> Schedule:
    found = get_object_or_404(Schedule.objects.select_related("workspace", "owner").filter(
        workspace__in=access.workspaces_for(request.api_user)), pk=pk)
    access.require(request.api_user, "view", workspace=found.workspace)
    return found


def _require_change(request: HttpRequest, schedule: Schedule, *, stopping: bool = False) -> None:
    """403 unless the caller may change the schedule; stopping (DELETE, PATCH {"enabled": false} alone): also its
    owner in any role (schedules.can_stop)."""
    refused = schedules.change_refusal(request.api_user, schedule, stopping=stopping)
    if refused:
        raise PermissionDenied(refused)


@api_view
@require_http_methods(["GET", "HEAD", "POST"])
def schedule_list(request: HttpRequest) -> JsonResponse:
    """GET: the schedules of the caller's workspaces (or ?workspace=), oldest first, LIST_SIZE a page. POST: create
    one."""
    if request.method == "POST":
        return _create(request)
    if refused := query_errors(request, ["workspace", "after"]):
        return bad_request(refused)
    try:
        found, following = id_page(request, Schedule.objects.select_related("workspace", "owner").prefetch_related(
            schedules.recent_runs()), "api_schedules", size=LIST_SIZE, newest_first=False)
    except Problem as problem:
        return problem.response()
    return JsonResponse({"schedules": [schedule_json(s, request) for s in found], "next": following})


RUN_AFTER_KEYS = ("run_after", "run_after_when")  # POST /api/v1/jobs's dependency keys of a CreateJob body
NO_RUN_AFTER = ("A schedule's job cannot run after another job: each run starts at its slot (skip_if_active skips a "
                "run while the previous one is active). Leave run_after and run_after_when out.")


def _run_after_errors(job: Any) -> dict[str, list[str]]:
    """The job's run_after keys, each refused in words of its own: the check of a CreateJob body (check_body) calls
    them "not supported by this console", which POST /api/v1/jobs and sweeps contradict."""
    if not isinstance(job, dict):
        return {}
    return {f"{schedules.JOB}.{key}": [NO_RUN_AFTER] for key in RUN_AFTER_KEYS if key in job}


def _create(request: HttpRequest) -> JsonResponse:
    return idempotency.once(request, idempotency.SCHEDULES, lambda: _create_schedule(request),
                            lambda pk: JsonResponse(schedule_json(_schedule(request, pk), request)))


def _create_schedule(request: HttpRequest) -> JsonResponse:
    payload, workspace, refused = create_request(request, schedules.JOB)
    if refused:
        return refused
    if not isinstance(payload, dict):
        return bad_request({"": ['Send a JSON object: {"name": ..., "recurrence": {...}, "job": {<CreateJob body>}}.']})
    errors = unknown_fields(payload, FIELDS)
    recurrence = payload.get(RECURRENCE)
    if not isinstance(recurrence, dict):
        errors[RECURRENCE] = ['Must be an object: {"kind": "hourly", "every_hours": 6}, {"kind": "daily", "at": '
                              '"02:00"}, {"kind": "weekly", "weekdays": ["mon", "thu"], "at": "02:00"} or '
                              '{"kind": "cron", "cron": "*/30 * * * *"}.']
        recurrence = {}
    errors.update({f"{RECURRENCE}.{key}": ["Unknown field."] for key in recurrence if key not in _RECURRENCE_KEYS})
    chosen, problems = schedules.parse_settings(
        payload.get("name"), recurrence.get("kind"), recurrence.get("every_hours"), recurrence.get("at"),
        recurrence.get("weekdays"), payload.get("skip_if_active", True), payload.get("enabled", True),
        recurrence.get("cron"), from_json=True)
    errors.update({key if key in FIELDS else f"{RECURRENCE}.{key}": v for key, v in problems.items()
                   if key in FIELDS or RECURRENCE not in errors})  # not an object: said once, at recurrence
    if not isinstance(payload.get(schedules.JOB), dict):
        errors[schedules.JOB] = [JOB_OBJECT]
    errors.update(_run_after_errors(payload.get(schedules.JOB)))
    if errors or chosen is None:
        return bad_request(errors)
    schedule, errors = schedules.create(request.api_user, workspace, payload[schedules.JOB], chosen)
    if schedule is None:
        return bad_request(errors)
    response = JsonResponse(schedule_json(schedule, request), status=201)
    response["Location"] = request.build_absolute_uri(reverse("api_schedule", args=[schedule.pk]))
    return response


@api_view
@require_http_methods(["GET", "HEAD", "PATCH", "DELETE"])
def schedule_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: one schedule with its last runs. PATCH: its name, recurrence, skip_if_active, enabled, job (the fields
    sent). DELETE: the schedule (its jobs stay)."""
    schedule = _schedule(request, pk)
    if refused := query_errors(request, ()):
        return bad_request(refused)
    if request.method in ("GET", "HEAD"):
        return JsonResponse(schedule_json(schedule, request))
    if request.method == "DELETE":
        _require_change(request, schedule, stopping=True)
        schedules.delete(request.api_user, schedule)
        return HttpResponse(status=204)
    payload, bad = json_body(request)
    # A disable alone is a stop; anything else (a bad body too) needs the right to change the schedule.
    _require_change(request, schedule, stopping=not bad and _disable_only(payload))
    if bad:
        return bad
    return _change(request, schedule, payload)


def _disable_only(payload: Any) -> bool:
    return isinstance(payload, dict) and set(payload) == {"enabled"} and payload["enabled"] is False


def _change(request: HttpRequest, schedule: Schedule, payload: Any) -> JsonResponse:
    """PATCH: the fields sent change, those not sent keep their value; all or nothing (a refused part saves none)."""
    if not isinstance(payload, dict) or not payload:
        return bad_request({"": [f"Send a JSON object with at least one of: {', '.join(sorted(FIELDS))}."]})
    errors = unknown_fields(payload, FIELDS)
    job = payload.get(schedules.JOB)
    if schedules.JOB in payload and not isinstance(job, dict):
        errors[schedules.JOB] = [JOB_OBJECT]
    errors.update(_run_after_errors(job))
    if set(payload) == {"enabled"}:  # as before 1.10: enabling starts from the next future slot
        if not isinstance(payload["enabled"], bool):
            return bad_request({"enabled": ["Must be true or false."]})
        if payload["enabled"] != schedule.enabled and \
                (refused := schedules.set_enabled(request.api_user, schedule, payload["enabled"])):
            return bad_request({"enabled": [refused]})
        return JsonResponse(schedule_json(schedule, request))
    # A job alone is the wizard's edit (edit_config): the timing is neither checked again nor saved.
    chosen = _patched_settings(schedule, payload, errors) if SETTINGS_FIELDS & set(payload) else None
    if errors:
        return bad_request(errors)
    with transaction.atomic():
        # All or nothing: a job refused after the timing was saved (or a name taken before a valid job) undoes
        # both. The timing first, so that the job is checked with the name and next run its runs will have.
        if chosen is not None:
            errors = schedules.edit(request.api_user, schedule, chosen,
                                    enabled=payload["enabled"] if "enabled" in payload else None)
        if job is not None:
            body, secrets = _split_secret_envs(job)
            # Said with a taken name's error, as POST says both.
            errors = {**errors, **schedules.edit_config(request.api_user, schedule, body, secrets)}
        # After the job: one sent with the values a take-over dropped may enable the schedule in the same request.
        if not errors and payload.get("enabled") is True and (refused := schedules.enable_refusal(schedule)):
            errors = {"enabled": [refused]}
        if errors:
            transaction.set_rollback(True)
    if errors:
        return bad_request(errors)
    return JsonResponse(schedule_json(schedule, request))


@api_view
@require_POST
def schedule_take_over(request: HttpRequest, pk: int) -> JsonResponse:
    """An admin becomes the schedule's owner (schedules.take_over): the schedule as GET shows it, and `dropped`, the
    sealed values that were the previous owner's, named as PATCH's job takes them again."""
    schedule = _schedule(request, pk)
    refused = schedules.take_over_refusal(request.api_user, schedule)
    if refused:
        raise PermissionDenied(refused)
    if refused_query := query_errors(request, ()):
        return bad_request(refused_query)
    if refused_body := no_body(request):  # takes none, as a stop: a field sent would be silently dropped
        return refused_body
    dropped = schedules.take_over(request.api_user, schedule)
    return JsonResponse({**schedule_json(schedule, request), "dropped": schedules.sealed_paths(dropped)})


def _patched_settings(schedule: Schedule, payload: dict[str, Any], errors: dict[str, list[str]]) \
        -> schedules.Settings | None:
    """The schedule's settings with the fields sent over its own, or None with the problems added to `errors`."""
    recurrence, problems = _patched_recurrence(schedule, payload.get(RECURRENCE, {}))
    errors.update(problems)
    chosen, problems = schedules.parse_settings(
        payload.get("name", schedule.name), recurrence.get("kind"), recurrence.get("every_hours"),
        recurrence.get("at"), recurrence.get("weekdays"), payload.get("skip_if_active", schedule.skip_if_active),
        payload.get("enabled", schedule.enabled), recurrence.get("cron"), from_json=True)
    errors.update({key if key in FIELDS else f"{RECURRENCE}.{key}": v for key, v in problems.items()
                   if key in FIELDS or RECURRENCE not in errors})  # not an object: said once, at recurrence
    return chosen


def _split_secret_envs(job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the CreateJob body without SecretEnvs, its values as edit_config takes secrets: env:NAME). edit_config puts
    the secrets back as SecretEnvs (with the owner's kept ones) and checks them as POST does, at SecretEnvs.<NAME>;
    SecretEnvs that is not an object stays in the body, for that check's error."""
    given = job.get(SECRET_ENVS)
    if not isinstance(given, dict):
        return job, {}
    return ({key: value for key, value in job.items() if key != SECRET_ENVS},
            {spec.SECRET_ENV_PREFIX + name: value for name, value in given.items()})


def _patched_recurrence(schedule: Schedule, sent: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(the recurrence to check, errors): the sent fields over the schedule's own while the kind stays; a new kind
    takes only what was sent, so its fields are required as in POST."""
    if not isinstance(sent, dict):
        return {}, {RECURRENCE: ['Must be an object with the fields to change, e.g. {"at": "03:00"}, or a new kind '
                                 'with its fields: {"kind": "cron", "cron": "*/30 * * * *"}.']}
    errors = {f"{RECURRENCE}.{key}": ["Unknown field."] for key in sent if key not in _RECURRENCE_KEYS}
    kind = sent.get("kind", schedule.kind)
    if kind != schedule.kind:
        return dict(sent), errors
    own = schedule.recurrence
    # As GET shows them, and as from_json reads them: weekdays by name (a number would be cron's).
    current = {"kind": own.kind, "every_hours": own.every_hours, "at": own.at.strftime("%H:%M") if own.at else None,
               "weekdays": [schedules.WEEKDAYS[d] for d in own.weekdays], "cron": own.cron or None}
    return {**current, **sent}, errors


# --- OpenAPI ---------------------------------------------------------------------------------------------------


def _ref(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def schedule_paths(err: dict[str, Any], validation: dict[str, Any], ws_param: dict[str, Any]) -> dict[str, Any]:
    """The paths of this module, with the jobs API's shared Error response, 400 and workspace parameter."""
    schedule_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    invalid = {**validation, "description": "Invalid request: messages keyed name, recurrence.<field>, "
               "skip_if_active, enabled, or job.<CreateJob field path> (e.g. job.JobSpecs[0].PodCount)."}
    return {
        "/api/v1/schedules": {
            "get": {"summary": f"The scheduled jobs of your workspaces, oldest (lowest id) first, {LIST_SIZE} a page: "
                               "`next` is the URL of the next page (any member)",
                    "parameters": id_page_parameters(ws_param),
                    "responses": {"200": {"description": "Schedules", **_ref("ScheduleList")},
                                  "400": validation, "401": err, "404": err}},
            "post": {
                "summary": "Schedule a recurring job (members and admins)",
                "description": "At every slot of the recurrence the console starts a job from `job`, owned by you, "
                               "named `<name>-YYYYMMDD-HHMM` (the slot in the console's time zone, `time_zone`). "
                               "The body is checked now as POST /api/v1/jobs checks it, and again at every run "
                               "against the workspace's rules of that day: a run that no longer passes, or whose "
                               "owner may no longer create jobs, is skipped with the reason. With skip_if_active "
                               "(default true) a run is skipped while the previous run's job is still active. "
                               "Slots missed while the console was down are not all replayed: one run, then the "
                               "next future slot. Every N hours counts elapsed time from the creation (the first "
                               "run N hours later); daily and weekly times are wall-clock in the console's zone. A "
                               "cron expression (5 fields) is evaluated in the console's zone as cron does; its runs "
                               "must be at least DLC_SCHEDULE_MIN_MINUTES apart (10 by default).",
                "parameters": [ws_param, idempotency.parameter()],
                "requestBody": {"required": True, **_ref("ScheduleCreate")},
                "responses": {"201": {"description": "The schedule", **_ref("Schedule")}, "400": invalid,
                              "401": err, "403": err, "404": err, **idempotency.responses()}},
        },
        "/api/v1/schedules/{id}": {
            "get": {"summary": "One schedule and its last runs", "parameters": [schedule_id],
                    "responses": {"200": {"description": "The schedule", **_ref("Schedule")}, "401": err,
                                  "404": err}},
            "patch": {"summary": "Edit a schedule (admins and its owner): its name, recurrence, skip_if_active, "
                                 "enabled or job configuration; the fields not sent keep their value",
                      "description": "Its owner who may no longer create jobs in the workspace (a viewer now) may "
                                     "still disable it, with {\"enabled\": false} alone; any other change needs an "
                                     "admin, or the owner as a member. "
                                     "Enabling alone ({\"enabled\": true}) starts from the next future slot. Any "
                                     "other change computes the next run from now, as a create does: a slot passed "
                                     "meanwhile does not run. A recurrence of the same kind takes the fields sent "
                                     "over the schedule's own (e.g. {\"at\": \"03:00\"}); a new kind needs its "
                                     "fields, as in POST, and every N hours then counts from now. `job` replaces "
                                     "the job configuration: the whole CreateJob body, checked as POST checks it "
                                     "(errors at job.<path>; the locks of the template its job came from hold), "
                                     "with its secrets as POST takes them (SecretEnvs, registry and Ray Redis "
                                     "passwords, sealed and never shown). A secret variable left as \"********\" "
                                     "in Envs, as GET shows it, keeps its sealed value when you are the schedule's "
                                     "owner; anyone else sends it in SecretEnvs. So is a registry password while "
                                     "the body keeps its ImageConfig.Username, and a RayJob's Redis password. "
                                     "`job` alone keeps the timing and the next run. Enabling is refused (400 "
                                     "at enabled, naming them) while the job needs a sealed value the schedule no "
                                     "longer holds (dropped by a take-over): send them in the same request's job. "
                                     "The request is all or nothing: when any part is refused, nothing changes.",
                      "parameters": [schedule_id],
                      "requestBody": {"required": True, **_ref("SchedulePatch")},
                      "responses": {"200": {"description": "The schedule", **_ref("Schedule")}, "400": invalid,
                                    "401": err, "403": err, "404": err}},
            "delete": {"summary": "Delete a schedule (admins and its owner, in any role); the jobs it started stay",
                       "parameters": [schedule_id],
                       "responses": {"204": {"description": "Deleted"}, "401": err, "403": err, "404": err}},
        },
        "/api/v1/schedules/{id}/take-over": {"post": {
            "summary": "Take a schedule over (the workspace's admins; never a read-only token): you become its owner "
                       "and its runs start as you",
            "description": "For any schedule of the workspace, e.g. one whose owner was removed or made viewer (its "
                           "runs are skipped). Its sealed values (secret variables, the registry password, the Ray "
                           "Redis password) were the previous owner's and are dropped: `dropped` names them as "
                           "PATCH's job takes them again (SecretEnvs.<NAME>, JobSpecs[*].ImageConfig.Password, "
                           "Settings.AdvancedSettings.RayRedisPassword). When any was dropped the schedule is "
                           "disabled, and enabling it is refused (400 at enabled) while its job needs one of them; "
                           "else its enabled state stays. Taking over your own schedule changes nothing.",
            "parameters": [schedule_id],
            "responses": {"200": {"description": "The schedule, with `dropped`", **_ref("ScheduleTakenOver")},
                          "400": {**invalid, "description": "A query parameter, or a body with a field (it takes "
                                                            "none: send no body, or {})."},
                          "401": err, "403": err, "404": err,
                          "415": {**invalid, "description": "A body whose Content-Type is not JSON."}}}},
    }


def schedule_job_schema(create_job: dict[str, Any]) -> dict[str, Any]:
    """A schedule's `job`: the CreateJob body (`create_job`, POST /api/v1/jobs's schema) without the keys a schedule
    refuses (RUN_AFTER_KEYS, _run_after_errors), which `not` says, as its properties are open."""
    return {**create_job,
            "description": f"{create_job['description']} In a schedule, run_after and run_after_when are refused "
                           f"(400 at job.run_after, job.run_after_when): {NO_RUN_AFTER}",
            "properties": {k: v for k, v in create_job["properties"].items() if k not in RUN_AFTER_KEYS},
            "not": {"anyOf": [{"required": [key]} for key in RUN_AFTER_KEYS]}}


def schedule_schemas(create_job: dict[str, Any]) -> dict[str, Any]:
    """The schemas of this module; `create_job`: the CreateJobBody schema, of which a schedule's job is a part."""
    recurrence = {"type": "object", "required": ["kind"], "properties": {
        "kind": {"type": "string", "enum": [k for k, _ in Schedule.KINDS]},
        "every_hours": {"type": "integer", "minimum": 1, "maximum": schedules.MAX_EVERY_HOURS, "nullable": True,
                        "description": "hourly only: hours between runs, a JSON whole number (\"6\" and 6.0 are "
                                       "refused, as in the jobs API)."},
        "at": {"type": "string", "pattern": "^[0-2]?[0-9]:[0-5][0-9]$", "nullable": True,
               "description": "daily and weekly only: HH:MM in the console's time zone."},
        "weekdays": {"type": "array", "items": {"oneOf": [
            {"type": "string", "description": "mon ... sun or monday ... sunday, any case"},
            {"type": "integer", "minimum": 0, "maximum": 7, "description": "cron's numbers: 0 or 7 = Sunday, "
                                                                           "1 = Monday ... 6 = Saturday"}]},
                     "example": ["mon", "thu"],
                     "description": "weekly only: the days, as names or cron's numbers (1 = Monday, 0 or 7 = "
                                    "Sunday); shown as mon ... sun."},
        "cron": {"type": "string", "maxLength": schedules.CRON_MAX, "example": "*/30 * * * *", "nullable": True,
                 "description": f"cron: {schedules.CRON_FIELDS} (names such as MON and JAN, ranges, lists, steps; "
                                "or @hourly, @daily, @weekly, @monthly, @yearly), in the console's time zone. A "
                                "step larger than its field's range (*/99 in minutes) is refused."}},
        "description": "Send only the fields of the chosen kind (null or [] for the others): a field of another "
                       "kind is refused (400), not dropped."}
    run = response_object({
        "due_at": {"type": "string", "format": "date-time"}, "job": {"type": "integer", "nullable": True},
        "job_status": {"type": "string", "nullable": True},
        "skipped_reason": {"type": "string", "nullable": True}})
    # As a schedule shows it: every field, those of another kind null or [], weekdays as mon ... sun.
    shown = {**recurrence, "required": list(recurrence["properties"]), "properties": {
        **recurrence["properties"], "weekdays": {"type": "array", "items": {"type": "string", "enum": list(
            schedules.WEEKDAYS)}}}}
    fields = {  # a schedule as GET shows it
        "id": {"type": "integer"}, "name": {"type": "string"}, "workspace": WORKSPACE_REF,
        "owner": {"type": "string", "nullable": True}, RECURRENCE: shown,
        "recurrence_text": {"type": "string", "example": "Every 6 hours (from 2026-12-01 22:40 UTC+01:00)",
                            "description": "The recurrence in words. Daily, weekly and cron times are in time_zone; "
                                           "every N hours counts elapsed hours from the time shown (with its UTC "
                                           "offset), whatever time_zone's clocks do."},
        "time_zone": {"type": "string", "description": "The console's time zone (IANA name): of daily, weekly and "
                                                       "cron times, and of each run's job name."},
        "enabled": {"type": "boolean"}, "skip_if_active": {"type": "boolean"},
        "next_run_at": {"type": "string", "format": "date-time", "nullable": True},
        "created_at": {"type": "string", "format": "date-time"},
        schedules.JOB: {"type": "object", "description": "The CreateJob body, without secrets."},
        "runs": {"type": "array", "items": run, "description": f"The last {schedules.RUNS_SHOWN} runs."},
        "url": {"type": "string", "format": "uri"}}
    return {
        "ScheduleCreate": {"type": "object", "required": ["name", RECURRENCE, schedules.JOB], "properties": {
            "name": {"type": "string", "maxLength": schedules.NAME_MAX, "pattern": "^[A-Za-z0-9_.-]+$"},
            RECURRENCE: recurrence,
            "skip_if_active": {"type": "boolean", "default": True},
            "enabled": {"type": "boolean", "default": True},
            schedules.JOB: {"$ref": "#/components/schemas/ScheduleJob"}}},
        "SchedulePatch": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
            "name": {"type": "string", "maxLength": schedules.NAME_MAX, "pattern": "^[A-Za-z0-9_.-]+$"},
            RECURRENCE: {**{k: v for k, v in recurrence.items() if k != "required"},  # kind may stay
                         "description": "The fields to change. Without kind (or with the schedule's kind) the others "
                                        "keep their value; a new kind needs its fields. " + recurrence["description"]},
            "skip_if_active": {"type": "boolean"},
            "enabled": {"type": "boolean"},
            schedules.JOB: {"$ref": "#/components/schemas/ScheduleJob"}}},
        "ScheduleJob": schedule_job_schema(create_job),
        "Schedule": response_object(fields),
        "ScheduleTakenOver": response_object({**fields, "dropped": {
            "type": "array", "items": {"type": "string"},
            "description": "The sealed values dropped, as PATCH's job takes them again: SecretEnvs.<NAME>, "
                           "JobSpecs[*].ImageConfig.Password, Settings.AdvancedSettings.RayRedisPassword."}}),
        "ScheduleList": response_object({
            "schedules": {"type": "array", "items": {"$ref": "#/components/schemas/Schedule"}},
            "next": {"type": "string", "format": "uri", "nullable": True,
                     "description": "The URL of the next page, to request as it is (null: the last page)."}}),
    }
