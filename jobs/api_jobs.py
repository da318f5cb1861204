"""JSON API for jobs: list, get, create from a CreateJob body, stop, clone; and its OpenAPI description.

Every endpoint authenticates through apitokens.api_view (session or `Authorization: Bearer <token>`) and
asks jobs.access; bodies are validated by jobs.spec with the workspace's guardrails (policies.context_for),
exactly as the wizard does. Secrets sent in a body are sealed for the worker and never stored or echoed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from jobs import access, dependencies, idempotency, listing, policies, secretbox, spec
from jobs.apitokens import api_view
from jobs.models import Job, JobTemplate, JobTemplateVersion, Membership, Workspace
from jobs.spec.base import MAX_NESTING, loads_json, storable_problems

API_VERSION = "1.16.0"  # 1.1: /api/v1/workspaces rows gained effective_role and read_only; 1.2: PATCH a job's priority
# 1.3: sweeps (/api/v1/sweeps) and a workspace's usage report (/api/v1/workspaces/{id}/usage), jobs.api_sweeps
# 1.4: scheduled (recurring) jobs (/api/v1/schedules), jobs.api_schedules
# 1.5: job dependencies: run_after and run_after_when in a create body and in a job (jobs.dependencies)
# 1.6: schedules by cron expression (recurrence kind "cron" with "cron"), jobs.api_schedules
# 1.7: sweep ranking by best or last value and early stopping (EarlyStopping), job notes (/api/v1/jobs/{id}/notes),
#      a job's queue_position; stricter: list filters answer 400 for an unknown status or framework, a clone for an
#      unknown key, a create for a bad ?version=; schedules take weekday numbers as cron does (0/7 = Sunday, was
#      0 = Monday) and refuse another kind's fields; a revoked token's 401 says token_revoked; ?template= that is not
#      a whole number answers 400 at template; a lock on the environment variables holds for SecretEnvs / a clone's
#      secret_envs; a clone refuses changes.SecretEnvs; a sweep's goal= / value= are checked without rank= too
# 1.8: costs at the workspace's prices (jobs.costs): a job's detail has `cost` {amount, currency, running} or null
#      (no price, or never ran); /api/v1/workspaces/{id}/usage has `cost` and `no_price_jobs` per line, `cost` per
#      job, `currency`, `priced` and `budget` (this month's spend against the monthly budget, or null). Amounts are
#      decimal strings to the cent. A workspace that refuses jobs once its budget is spent answers a create 400
#      with the reason at "".
#      Idle resources (jobs.idle): a job's detail has `idle`, null or {since, metric, value, threshold_percent,
#      window_minutes, stops_at} while the workspace's idle policy finds it running idle (null once it ended).
#      A job the console stopped (the idle policy, a sweep's early stopping): its detail's reason.message is the
#      console's reason (reason.code stays DLC's; was DLC's "stopped by the user" message).
#      GET /api/v1/jobs filters by tag (`tag`, repeatable: `key` or `key=value`, all must hold; a malformed one
#      answers 400 at `tag`) and by `idle=1` (running jobs the idle policy flagged).
#      Also: POST /api/v1/jobs/validate picks the workspace as the create does (?workspace=, else your only one, else by
#      the body's WorkspaceId: 400 with candidates when ambiguous; was: your session's or first workspace), refuses a
#      WorkspaceId of another DLC workspace and takes ?template= / &version= as the create does; ?workspace= that is
#      not a whole number answers 400 at workspace (was 404) on every endpoint taking it; documented: the 404 of
#      an unknown workspace, JobPage next/previous as URLs (format uri) whose after/before parameter is the cursor,
#      that sort=status may repeat or skip a job whose status changes between pages, the {"errors": ...} body of a
#      priority change's 409 and 502. Names that differ only in case from another of the same scope are refused
#      (400 at name): schedules here; workspaces, templates and webhooks in the portal. A webhook's test POST has
#      an event_id (new on each test). The dry run's 200 has `can_create` and, when false (a viewer, a read-only
#      token), `cannot_create`: the create's 403 message.
# 1.9: a create (and its dry run) stores and sends exactly the body it checked: empty values (null, "", [], {}) mean
#      "not set" and are left out, but an empty SpotSpec is refused (it is what makes a role spot). Errors of a
#      variable or tag are at Envs.<NAME> / SecretEnvs.<NAME> / Settings.Tags.<key> (were Envs / Settings.Tags).
#      Refused with 400 at their path, on every endpoint taking JSON: NUL and lone surrogates in text, NaN and
#      Infinity, nesting deeper than 64 levels (the spec's own fields: 32); a command with CR line breaks; CPU under
#      0.001 cores or finer than a millicore, memory under 0.001 GiB; over-long images, paths, ids and ARNs, a git
#      branch git would refuse, a customPortList with non-ASCII digits or leading zeros. Wrong values of
#      OversoldType, JobReservedPolicy, SpotStrategy and MountAccess name the allowed ones.
#      An optional Idempotency-Key header on POST /jobs, /sweeps and /schedules (jobs.idempotency): a retry with the
#      same key and request replays the first answer (Idempotent-Replayed: true) for 24 h; another request with the
#      key is a 422, one still running a 409 with Retry-After. Stricter edges: a non-JSON Content-Type is a 415, an
#      empty body a 400 (a clone's means "no changes"), any over-large body a JSON 413; unknown or repeated query
#      parameters of the GET endpoints (but `tag`) and unknown keys of a note are 400s; HEAD works wherever GET does;
#      answers carry Cache-Control: private, no-store; a note's 201 has a Location. A `previous` page at the start of
#      the list holds only the rows before the cursor (was topped up to a full first page, repeating rows). The
#      document describes every answer exactly (JobDetail for GET/PATCH /jobs/{id}; tests/test_api_openapi.py).
#      Wrong tokens past API_TOKEN_MAX_FAILURES_PER_IP a window get a 429 (code too_many_failures, Retry-After).
#      GET /sweeps and /schedules list every workspace the caller may see unless ?workspace= (was a 400 with
#      candidates), 50 a page by id with `next` and ?after=; schedules now come by id (were by name).
# 1.10: PATCH /api/v1/schedules/{id} edits a schedule: name, recurrence (the fields sent over the schedule's own; a
#      new kind needs its fields), skip_if_active and enabled, checked as POST checks them (SchedulePatch); the
#      next run is computed from now. `job` stays unchangeable (400 at job); {"enabled": "no"} is now a 400 at
#      enabled (was at "").
# 1.11: PATCH /api/v1/schedules/{id} takes `job`, the CreateJob body, replacing the schedule's job configuration as
#      the wizard's Edit configuration does (checked as POST checks it, errors at job.<path>; secrets as POST takes
#      them; a secret variable left as "********" keeps its sealed value for the schedule's owner only); a PATCH is
#      all or nothing (was: `job` refused at job).
# 1.12: a schedule's owner who may no longer create jobs in its workspace (made viewer) may still disable it
#      (PATCH {"enabled": false} alone) and DELETE it (was 403); any other change still needs create. A registry or
#      Ray Redis password sent empty in a PATCH's job keeps the sealed one for the owner.
# 1.13: POST /api/v1/schedules/{id}/take-over: an admin becomes the schedule's owner; its sealed values are dropped
#      (`dropped` names them) and, if any was, it is disabled. Enabling (PATCH enabled=true) is refused, 400 at
#      enabled, while its job needs a sealed value it no longer holds.
# 1.14: a query parameter a call does not take, or one sent twice, is a 400 at it on every call (was ignored outside
#      the lists: `?templat=3` created a job without its template's locks); a stop (job, sweep) or take-over
#      refuses a body with a field (400) or not JSON (415); clone honours Idempotency-Key (per source job); clone's
#      secret_envs/registry_password/ray_redis_password of a wrong type are 400s at them; a read-only token's
#      create is a 403 even without ?workspace=; the idempotency 409/422 are documented as sent ({errors, code}).
# 1.15: a job's pods, logs and events (jobs.api_logs): GET /api/v1/jobs/{id}/pods, /pods/{pod_id}/log (the newest
#      lines, then those after a cursor: ?tail=, ?since=, ?q=; masked as the page shows them), /pods/{pod_id}/log.txt
#      (the whole log, masked text) and /events, for anyone who may see the job.
#      Stricter, from a QA walk: run_after must be an integer or null (a string was taken) and run_after_when comes
#      only with it; SecretEnvs refuses the mask ******** as Envs does; a clone's registry_password without a
#      registry username is a 400 at it (was dropped), and is used when the username comes in changes; likewise its
#      ray_redis_password is used for a RayJob and a 400 for another job type (was dropped); a clone's
#      secret_envs errors are at secret_envs.<NAME>; a notes POST whose body is not an object is a 400 at "";
#      another Authorization scheme's 401 says to use Bearer; the 429's message gives Retry-After's seconds.
# 1.16: from QA walks: the dry run's notes are keyed by wire path, as its errors are (were section paths such as
#      vpc.vpc_id or environment.storages[0].uri, which name no field of the body); a job PATCH's unknown keys are
#      errors at each key and a missing priority at `priority` (all were at ""); EarlyStopping's AfterSucceeded and
#      NotBeforeStep, and a sweep's Search.Trials and Search.Seed, are JSON integers only (a string was taken);
#      SchedulingStrategy and UserVpc.DefaultRoute errors name the wire values; AdvancedSettings text with an
#      entry running onto the next line is refused; a note's text with a NUL is refused in the notes' own words;
#      GET /workspaces/<id>/usage's budget is as of the report (was a month's spend up to a minute old) and its
#      percent, like the 80%/100% notices, alerts and refusal, is of the spend to the cent as shown (0.7996 of a
#      budget of 1 was 79%, now 80), and a line's cost is "" when none of its jobs had a price, as documented
#      (was 0.00); a sweep's uniform distribution whose width overflows (-1e308 to 1e308) is
#      a 400 at Parameters.<NAME> (every trial was its Max), and a trial refused names its values cut to 60
#      characters (a huge value was repeated whole); a sweep's ?rank= asked while its ended trials' metrics are
#      still being read from their logs says so (it said no trial printed METRIC lines); a sweep of lists
#      without Search.Method (a grid) refuses Search.Trials and Search.Seed as the document says (they were dropped);
#      a schedule's job.run_after and job.run_after_when are refused saying a schedule's job cannot wait for another
#      (they were "not supported by this console"), and the document says so: a schedule's job is ScheduleJob,
#      CreateJobBody without them (it listed them); a schedule's recurrence_text for every N hours gives the time it
#      counts from, with its UTC offset, "Every 6 hours (from 2026-12-01 22:40 UTC+01:00)" (was "Every 6 hours").
#      Costs are kept by date: a price change applies from when it is saved, each hour at the prices then in force
#      (a change re-priced every past job). A spot job is costed at its bid's ceiling (was the full price): a job's
#      `cost` has `ceiling`, a usage line `ceiling_jobs`, a usage job `cost_is_ceiling` (the CSV too), and the
#      usage's budget `ceiling_jobs` (its `spent` counts them at their ceiling: at most that).
TOKEN_SCOPE = ("A token acts with its user's role, narrowed by the scope chosen when it was created: one workspace "
               "(anything of another workspace answers 404, as if it did not exist) or all of the user's; "
               "read-only (every call that changes something answers 403: create, clone, stop, a priority change, a "
               "note) or "
               "read-write; and "
               "an expiry of 7, 30, 90 (the default) or 365 days, or none. An expired token answers 401 with "
               "`\"code\": \"token_expired\"` and `expires_at` (ISO 8601); a revoked one 401 with `\"code\": "
               "\"token_revoked\"`; an unknown one 401 without a code. GET /api/v1/workspaces "
               "shows what the token may do in each workspace: `read_only`, and `effective_role` (viewer when "
               "read-only, else your role).")


# --- representation ---------------------------------------------------------------------------------------


def _time(value) -> str | None:
    return value.isoformat() if value else None


def job_json(job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
    """A job as the API shows it: what the job page shows, from the database, without secrets."""
    url = reverse("api_job", args=[job.pk])
    return {
        "id": job.pk,
        "name": job.display_name,
        "workspace": {"id": job.workspace_id, "name": job.workspace.name},
        "owner": job.owner.get_username() if job.owner else None,
        "status": job.status,
        "status_label": job.status_label,
        "active": job.is_active,
        "sub_status": job.sub_status,
        "reason": {"code": job.reason_code, "message": job.reason_message} if job.reason_code else None,
        "job_type": job.job_type,
        "dlc_job_id": job.dlc_job_id or None,
        "imported": job.imported,
        "cloned_from": job.cloned_from_id,
        "run_after": job.run_after_id,
        "run_after_when": job.run_after_when,
        "submit_error": job.submit_error or None,
        "submit_next_attempt_at": _time(job.submit_next_attempt_at),
        "created_at": _time(job.created_at),
        "submitted_at": _time(job.submitted_at),
        "started_at": _time(job.started_at),
        "finished_at": _time(job.finished_at),
        "pods": [
            {k: p.get(k) for k in ("PodId", "Type", "Status", "Ip", "GmtStartTime", "GmtFinishTime")}
            for p in job.pods or [] if isinstance(p, dict)
        ],
        "body": spec.strip_secrets(job.body),
        "url": request.build_absolute_uri(url) if request else url,
        "page": request.build_absolute_uri(job.get_absolute_url()) if request else job.get_absolute_url(),
    }


# Levels of objects and lists a request may nest: a CreateJob body with advanced settings nested as deep as they
# may be (spec MAX_NESTING), inside a sweep's or a schedule's payload, fits; a deeper one is garbage, refused before
# anything copies or encodes it recursively.
MAX_REQUEST_NESTING = 2 * MAX_NESTING


def json_body(request: HttpRequest, *, optional: bool = False) -> tuple[Any, JsonResponse | None]:
    """(the request's JSON, None) or (None, the answer refusing it): 415 for a Content-Type that is not JSON; 400 at
    "" for an empty body (no JSON; `optional`: an endpoint whose body may be left out takes it as {}), for what is
    not JSON (NaN and Infinity are not), and for what no field can store or send (NUL, a lone surrogate, nesting
    beyond MAX_REQUEST_NESTING), each at its path. Too large a body raises RequestDataTooBig: the API's one 413
    (api.JsonErrorsMiddleware)."""
    if refused := refuse_content_type(request):
        return None, refused
    if not request.body:
        if optional:
            return {}, None
        return None, bad_request({"": ["The request body is empty, which is not valid JSON: send a JSON object."]})
    try:
        payload = loads_json(request.body)
    except RecursionError:
        return None, bad_request({"": [f"The request body is nested too deeply (at most {MAX_REQUEST_NESTING} "
                                       "levels of objects and lists)."]})
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return None, bad_request({"": [f"The request body is not valid JSON{where}: {getattr(exc, 'msg', exc)}."]})
    refused = refuse_unstorable(payload)
    return (None, refused) if refused else (payload, None)


def refuse_content_type(request: HttpRequest) -> JsonResponse | None:
    """The 415 of a body sent as something other than JSON (application/json or a +json type), else None. A body
    without a Content-Type is taken as JSON (it says nothing else, and the parse is strict); a form-encoded one is
    refused, not parsed as JSON: it is what `curl -d` sends unless told otherwise, and other clients mean a form."""
    given = (request.content_type or "").strip().lower()
    if not given or given == "application/json" or (given.startswith("application/") and given.endswith("+json")):
        return None
    return JsonResponse({"errors": {"": [
        f"Content-Type {given} is not JSON: send the body as JSON with Content-Type: application/json "
        "(curl: -H 'Content-Type: application/json'; curl -d alone sends a form)."]}}, status=415)


def refuse_unstorable(payload: Any) -> JsonResponse | None:
    """The 400 of a parsed request holding what no field can store or send (spec.base.storable_problems: NUL, a
    lone surrogate, NaN, nesting beyond MAX_REQUEST_NESTING), each at its path; None when there is none. Every
    JSON endpoint asks it before anything copies, encodes or saves the payload (json_body, the dry run)."""
    errors: dict[str, list[str]] = {}
    for path, message in storable_problems(payload, max_depth=MAX_REQUEST_NESTING):
        errors.setdefault(path, []).append(message)
    return bad_request(errors) if errors else None


def parse_id(text: str) -> int:
    # Anything but a plausible row id names no row: the lookup answers 404. ASCII digits only: "²".isdigit() is
    # true, and int("²") raises.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else 0


def bad_request(errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse({"errors": errors}, status=400)


def unknown_field_message(known: Iterable[str]) -> str:
    """The error at a key a request object does not take, naming the fields it does (in the order given)."""
    return f"Unknown field; the fields are: {', '.join(known)}."


def unknown_fields(payload: Mapping[str, Any], allowed: Iterable[str]) -> dict[str, list[str]]:
    """An error at each key of a request object that is not one of `allowed`, naming those: a misspelt key
    silently ignored would leave the caller believing it took effect."""
    known = sorted(allowed)
    return {key: [unknown_field_message(known)] for key in payload if key not in known}


def query_errors(request: HttpRequest, single: Iterable[str], repeatable: Iterable[str] = ()) \
        -> dict[str, list[str]]:
    """An error at each query parameter an endpoint does not take (naming those it takes) and at each
    single-valued one sent more than once: a misspelt filter silently ignored answers what was not asked for, and
    a repeated one would silently be its last value. The API's only: the list page's forms add their own."""
    many = set(repeatable)
    known = sorted({*single, *many})
    errors: dict[str, list[str]] = {}
    for key in request.GET:
        if key not in known:
            errors[key] = [f"Unknown parameter: send {', '.join(known)}." if known
                           else "Unknown parameter: this endpoint takes none."]
        elif key not in many and len(request.GET.getlist(key)) > 1:
            errors[key] = ["Sent more than once: send it once."]
    return errors


def no_body(request: HttpRequest) -> JsonResponse | None:
    """The 400 (or json_body's 415/400) of a body sent to a call that takes none (a stop), else None. Nothing, an
    empty object or a form without fields is fine (`curl -X POST -d ''` sends a form type, some clients an empty
    multipart form); a field (a `reason`, say) is an error at it: silently dropped, the caller would believe it kept."""
    if not request.body:
        return None
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        payload: Any = {**request.POST, **request.FILES}
    else:
        payload, bad = json_body(request)
        if bad:
            return bad
    if not isinstance(payload, dict):
        return bad_request({"": ["This call takes no body: send none, or {}."]})
    return bad_request({key: ["Unknown field: this call takes no body (send none, or {})."] for key in payload}) \
        if payload else None


class Problem(Exception):
    """Errors keyed by field path, answered as a 400 (with `extra` top-level keys, e.g. candidates)."""

    def __init__(self, errors: dict[str, list[str]], **extra: Any) -> None:
        super().__init__(errors)
        self.errors = errors
        self.extra = extra

    def response(self) -> JsonResponse:
        return JsonResponse({"errors": self.errors, **self.extra}, status=400)


# How many of the caller's workspaces a "name the workspace" answer lists.
CANDIDATES_SHOWN = 20


def request_workspace(request: HttpRequest, action: str, *, dlc_workspace_id: Any = None) -> Workspace:
    """The console workspace a call is about: ?workspace=<id>; else the caller's only one; else the one (of the
    caller's) whose DLC workspace is the body's WorkspaceId (`dlc_workspace_id`). 404 when ?workspace= is not
    theirs; a Problem listing the candidates when none of these names exactly one (or ?workspace= is no number)."""
    chosen = workspace_param(request)
    if chosen is not None:
        return access.get_workspace(request.api_user, chosen, action)
    scope = access.scope_of(request.api_user)
    if action != "view" and scope is not None and scope.read_only:
        # Refused in every workspace: "name the workspace" first would only lead the caller to this 403.
        raise PermissionDenied(access.read_only_refusal(action))
    mine = access.workspaces_for(request.api_user).order_by("pk")
    found = list(mine[:2])
    if not found:  # "name one of your workspaces" would list none
        raise Problem({"workspace": ["You are a member of no workspace: ask a workspace admin to add you."]},
                      candidates=[])
    given = dlc_workspace_id if isinstance(dlc_workspace_id, str) and dlc_workspace_id else ""
    if len(found) > 1 and given:
        found = list(mine.filter(dlc_workspace_id=given)[:2])
        if not found:  # none of the caller's workspaces: list them all, as when the body names none
            given = ""
    if len(found) == 1:
        access.require(request.api_user, action, workspace=found[0])
        return found[0]
    candidates = mine.filter(dlc_workspace_id=given) if given else mine
    shown = [{"id": ws.pk, "name": ws.name, "dlc_workspace_id": ws.dlc_workspace_id}
             for ws in candidates[:CANDIDATES_SHOWN + 1]]
    listed = ", ".join(f"{ws['id']} ({ws['name']})" for ws in shown[:CANDIDATES_SHOWN])
    more = ", ..." if len(shown) > CANDIDATES_SHOWN else ""
    why = (f"{len(shown)}{'+' if more else ''} of your workspaces have DLC workspace '{given}'" if given else
           "you have several workspaces")
    raise Problem({"workspace": [f"Name the console workspace with ?workspace=<id>: {why}: {listed}{more}. "
                                 "(Without it, the body's WorkspaceId picks the one workspace of yours with that "
                                 "DLC workspace ID.)"]},
                  candidates=shown[:CANDIDATES_SHOWN])


def workspace_param(request: HttpRequest) -> int | None:
    """?workspace=<id> (None: not given). Not a whole number: a Problem at workspace, not the 404 of a workspace that
    does not exist, since a typo (`?workspace=team-a`) would otherwise read as "no such workspace"."""
    given = request.GET.get("workspace", "")
    if not given:
        return None
    if not (given.isascii() and given.isdigit()):
        raise Problem({"workspace": ["Must be a workspace id, a whole number (GET /api/v1/workspaces lists yours)."]})
    return parse_id(given)


def id_page(request: HttpRequest, rows: QuerySet, url_name: str, *, size: int, newest_first: bool) \
        -> tuple[list[Any], str | None]:
    """One page of a list endpoint other than the jobs' (sweeps, schedules): the rows of all the caller's workspaces
    (the token's scope), or of ?workspace= alone, keyset-paginated by id from ?after=, and the absolute URL of the
    next page (None: the last). As the jobs list chooses its workspaces. Raises Problem for a ?workspace= or
    ?after= that is no whole number, Http404 (via access) for a workspace not the caller's."""
    chosen = workspace_param(request)
    if chosen is not None:
        rows = rows.filter(workspace=access.get_workspace(request.api_user, chosen))
    else:
        rows = rows.filter(workspace__in=access.workspaces_for(request.api_user))
    after = request.GET.get("after", "")
    if after:
        cursor = parse_id(after)
        if not cursor:
            raise Problem({"after": ["Must be a cursor: request the page's `next` URL as it is."]})
        rows = rows.filter(pk__lt=cursor) if newest_first else rows.filter(pk__gt=cursor)
    found = list(rows.order_by("-pk" if newest_first else "pk")[:size + 1])
    if len(found) <= size:
        return found, None
    found = found[:size]
    query = urlencode({**({"workspace": chosen} if chosen is not None else {}), "after": found[-1].pk})
    return found, request.build_absolute_uri(f"{reverse(url_name)}?{query}")


def id_page_parameters(ws_param: dict[str, Any]) -> list[dict[str, Any]]:
    """The query parameters of an id_page list, for the OpenAPI document."""
    return [{**ws_param, "description": "Only this console workspace's (GET /api/v1/workspaces lists yours). "
                                        "Without it: all your workspaces (a workspace-scoped token: its one), each "
                                        "row with its `workspace`. Not a whole number: 400 at `workspace`; not one "
                                        "of yours: 404."},
            {"name": "after", "in": "query", "schema": {"type": "integer"},
             "description": "A cursor, the `after` of the page's `next` URL: simplest, request `next` as it is. Not "
                            "a whole number from 1: 400 at `after`."}]


def body_workspace_id(body: Any) -> Any:
    """The WorkspaceId a CreateJob body names, if it is an object: request_workspace's hint."""
    return body.get("WorkspaceId") if isinstance(body, dict) else None


# --- secrets ---------------------------------------------------------------------------------------------


def take_secrets(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(body without secrets, the secrets) — the secrets travel sealed to the worker, never stored."""
    found: dict[str, str] = {}
    for role in body.get("JobSpecs") or []:
        password = (role.get("ImageConfig") or {}).get("Password") if isinstance(role, dict) else None
        if isinstance(password, str) and password:
            found["registry_password"] = password
    advanced = ((body.get("Settings") or {}).get("AdvancedSettings") or {}) if isinstance(
        body.get("Settings"), dict) else {}
    if isinstance(advanced, dict) and isinstance(advanced.get("RayRedisPassword"), str):
        found["RayRedisPassword"] = advanced["RayRedisPassword"]
    envs = body.get("Envs")
    for key, value in envs.items() if isinstance(envs, dict) else ():
        # A value named like a secret is sealed too (strip_secrets leaves the placeholder): the job still gets it.
        if spec.looks_like_secret(key) and isinstance(value, str) and value and value != spec.SECRET_PLACEHOLDER:
            found[spec.SECRET_ENV_PREFIX + key] = value
    return spec.strip_secrets(body), found


SECRET_ENVS = "SecretEnvs"


def merge_secret_envs(body: dict[str, Any], *, field: str = SECRET_ENVS) \
        -> tuple[dict[str, Any], dict[str, str], dict[str, list[str]]]:
    """(the body with each `SecretEnvs` name in Envs as the placeholder, their values as sealed-secret names,
    errors). `SecretEnvs` is the API's Secret tick box: {"WANDB_API_KEY": "..."} next to the CreateJob fields.
    `field`: what the caller calls it (the clone endpoint: secret_envs), where its values' errors are and what the error
    of a secret with no value names."""
    given = body.get(SECRET_ENVS)
    out = {k: v for k, v in body.items() if k != SECRET_ENVS}
    if given is None:
        given = {}
    if not isinstance(given, dict):
        return out, {}, {SECRET_ENVS: ["Must be an object of variable names to secret values."]}
    envs = dict(out.get("Envs") or {}) if isinstance(out.get("Envs"), dict) else out.get("Envs")
    errors: dict[str, list[str]] = {}
    secrets: dict[str, str] = {}
    for key, value in given.items():
        if not isinstance(value, str) or not value:
            errors[f"{field}.{key}"] = ["Must be a non-empty string."]
        elif value == spec.SECRET_PLACEHOLDER:  # the mask, not a value: refused here as it is in Envs
            errors[f"{field}.{key}"] = [_placeholder_problem(field)]
        elif isinstance(envs, dict) and envs.get(key) not in (None, spec.SECRET_PLACEHOLDER):
            errors[f"{field}.{key}"] = [f"{key} is in Envs too: set it in one of them."]
        else:
            secrets[spec.SECRET_ENV_PREFIX + key] = value
    if isinstance(envs, dict):
        envs.update({key: spec.SECRET_PLACEHOLDER for key in given})
        for key, value in envs.items():
            if value == spec.SECRET_PLACEHOLDER and spec.SECRET_ENV_PREFIX + key not in secrets \
                    and f"{field}.{key}" not in errors:
                errors[f"Envs.{key}"] = [_placeholder_problem(field)]
        out["Envs"] = envs
    elif given and envs is None:  # any other Envs is refused by spec.validate, not replaced
        out["Envs"] = {key: spec.SECRET_PLACEHOLDER for key in given}
    return out, secrets, errors


def _placeholder_problem(field: str) -> str:
    # One message for the mask wherever a value is expected (Envs, SecretEnvs): it is what GET shows, not a secret.
    return f"{spec.SECRET_PLACEHOLDER} stands for a secret value that is never copied: send the value in {field}."


def _check_workspace_id(body: dict[str, Any], workspace: Workspace) -> dict[str, list[str]]:
    # The body's WorkspaceId would send the job, with this workspace's credentials, to another DLC workspace.
    given = body.get("WorkspaceId")
    if given and given != workspace.dlc_workspace_id:
        return {"WorkspaceId": [f"This console workspace submits to DLC workspace "
                                f"'{workspace.dlc_workspace_id or '(default)'}'; leave WorkspaceId out."]}
    return {}


Locks = tuple[JobTemplate, JobTemplateVersion]


def template_start(request: HttpRequest, workspace: Workspace) -> tuple[Locks | None, dict[str, list[str]]]:
    """(template, version) a create call says its job starts from, ?template=<id>[&version=<n>] (None: none), or
    the errors at template / version that refuse the call. check_body(locks=) then holds the job to its locks."""
    from jobs import templates_lib

    try:
        template_id, number = templates_lib.parse_start(request.GET.get("template"), request.GET.get("version"))
    except ValidationError as exc:
        return None, exc.message_dict
    if template_id is None:
        return None, {}
    template = JobTemplate.objects.filter(pk=template_id, workspace=workspace).first()
    if template is None:
        return None, {"template": ["No such template in this workspace."]}
    try:
        return (template, templates_lib.version_of(template, number)), {}
    except JobTemplateVersion.DoesNotExist:
        return None, {"version": ["No such version of the template."]}


def template_link(locks: Locks | None) -> dict[str, Any]:
    """The hints entry of a job started from a template (templates_lib.link), so that its locks bind its clones."""
    from jobs import templates_lib

    return templates_lib.link(*locks) if locks else {}


def lock_errors(template: JobTemplate, version: JobTemplateVersion, body: Mapping[str, Any],
                hints: Mapping[str, Any] | None = None, *, secret_names: Iterable[str] = (),
                secret_envs_field: str = SECRET_ENVS) -> dict[str, list[str]]:
    """templates_lib.locked_errors of a CreateJob body, at its wire fields. `body` must hold every variable the job
    will have (merge_secret_envs' Envs: secret ones as the placeholder), or a secret one would slip past a lock on
    the variables; the error is at `secret_envs_field` when a variable sent there is what the template has not."""
    from jobs import templates_lib

    sections = spec.inverse(body, hints)
    errors = {spec.wire_path(path, sections): messages
              for path, messages in templates_lib.locked_errors(template, version, sections).items()}
    envs_path = spec.wire_path("environment.envs", sections)
    if envs_path in errors and _secret_names_differ(version, secret_names):
        errors[secret_envs_field] = errors.pop(envs_path)
    return errors


def _secret_names_differ(version: JobTemplateVersion, names: Iterable[str]) -> bool:
    # A template's secret variable (ticked Secret, or named like one) is one the job may send in SecretEnvs.
    rows = ((version.sections or {}).get("environment") or {}).get("envs") if isinstance(version.sections, dict) \
        else None
    secret = {row.get("key") for row in rows if isinstance(row, dict)
              and (row.get("secret") is True or spec.looks_like_secret(row.get("key")))} \
        if isinstance(rows, list) else set()
    return any(name not in secret for name in names)


@dataclass(frozen=True)
class Checked:
    """A CreateJob body that passed submit_body's checks, not yet saved."""

    wire: dict[str, Any]  # as validated: secrets still in it, SecretEnvs names in Envs as the placeholder
    secret_envs: dict[str, str]  # SecretEnvs' values by sealed-secret name
    hints: dict[str, Any]
    context: spec.Context


def check_body(workspace: Workspace, body: Any, *, extra_errors: dict[str, list[str]] | None = None,
               hints: Mapping[str, Any] | None = None, secret_envs_field: str = SECRET_ENVS,
               locks: Locks | None = None) -> tuple[Checked | None, dict[str, list[str]]]:
    """Validate a CreateJob body with the workspace's guardrails, as submit_body does (a sweep's job too).
    `hints`: the console-only choices the body cannot carry, when known (a clone's, from its source); else what
    the body, quotas and instance types tell. `secret_envs_field`: the caller's name for SecretEnvs, for errors.
    `locks`: the template the job starts from (template_start, templates_lib.linked): its locked fields must keep
    their values, checked on the body with SecretEnvs merged in."""
    if not isinstance(body, dict):
        return None, {"": ["The request body must be a JSON object (a CreateJob body)."]}
    errors = dict(extra_errors or {})
    errors.update(_check_workspace_id(body, workspace))
    given_secrets = body.get(SECRET_ENVS)
    body, secret_envs, env_errors = merge_secret_envs(body, field=secret_envs_field)
    errors.update(env_errors)
    wire = {k: v for k, v in body.items() if k != "WorkspaceId"}
    if locks:
        names = list(given_secrets) if isinstance(given_secrets, dict) else []
        for path, messages in lock_errors(*locks, wire, hints, secret_names=names,
                                          secret_envs_field=secret_envs_field).items():
            errors.setdefault(path, []).extend(messages)
    context = policies.context_for(workspace)
    if hints:
        context = dataclasses.replace(context, hints=dict(hints))
    secret_names = set(given_secrets) if isinstance(given_secrets, dict) else set()
    for path, messages in spec.validate(wire, context).items():
        errors.setdefault(_secret_envs_path(path, secret_names, secret_envs_field), []).extend(messages)
    if errors:
        return None, errors
    wire = spec.sendable(wire)  # what was validated is what is stored and sent: no unchecked empty structures
    # The body alone cannot say Lingjun vs general computing: the workspace's quotas and instance types can.
    hints = spec.hints_from_sections(spec.inverse(wire, spec.infer_hints(wire, context, context.hints)))
    if body.get("WorkspaceId"):  # kept as given (it is this workspace's, checked above), as the wizard's body has it
        wire = {**wire, "WorkspaceId": body["WorkspaceId"]}
    return Checked(wire, secret_envs, hints, context), {}


def _secret_envs_path(path: str, names: set[str], field: str) -> str:
    # A variable sent in SecretEnvs is in Envs (as the placeholder) only for the checks: its error is where it was sent.
    name = path.removeprefix("Envs.")
    return f"{field}.{name}" if name != path and name in names else path


def take_run_after(user, workspace: Workspace, body: Any) -> tuple[Any, dependencies.Choice]:
    """(the body without the console's `run_after` / `run_after_when`, their checked choice): next to the
    CreateJob fields like SecretEnvs, they are never sent to DLC."""
    if not isinstance(body, dict):
        return body, dependencies.Choice()
    rest = {k: v for k, v in body.items() if k not in (dependencies.FIELD, dependencies.WHEN_FIELD)}
    return rest, dependencies.check_json(user, workspace, body)


def check_submit(user, workspace: Workspace, body: Any, *, extra_errors: dict[str, list[str]] | None = None,
                 hints: Mapping[str, Any] | None = None, secret_envs_field: str = SECRET_ENVS,
                 locks: Locks | None = None) -> tuple[Checked | None, dependencies.Choice, dict[str, list[str]]]:
    """submit_body's checks without saving anything: (the checked body or None, its run_after choice, errors). The
    dry run (jobs.api.validate_job) asks this, so that its verdict is the create's."""
    body, after = take_run_after(user, workspace, body)
    checked, errors = check_body(workspace, body, extra_errors={**(extra_errors or {}), **after.errors},
                                 hints=hints, secret_envs_field=secret_envs_field, locks=locks)
    return checked, after, errors


def submit_body(user, workspace: Workspace, body: Any, *, cloned_from: Job | None = None,
                extra_errors: dict[str, list[str]] | None = None, hints: Mapping[str, Any] | None = None,
                secret_envs_field: str = SECRET_ENVS, locks: Locks | None = None) \
        -> tuple[Job | None, dict[str, list[str]]]:
    """Validate a CreateJob body with the workspace's guardrails and save + enqueue it (or hold it, when its
    run_after job is still active). Returns (job, errors). `hints`, `secret_envs_field`, `locks`: as check_body's;
    the template of `locks` is kept in the job's hints, so that it binds its clones too."""
    checked, after, errors = check_submit(user, workspace, body, extra_errors=extra_errors, hints=hints,
                                          secret_envs_field=secret_envs_field, locks=locks)
    if checked is None:
        return None, errors
    clean, secrets = take_secrets(checked.wire)
    secrets.update(checked.secret_envs)
    from jobs.views import save_and_enqueue

    hints = {**checked.hints, **template_link(locks)}
    job = save_and_enqueue(workspace=workspace, owner=user, body=clean, hints=hints,
                           sealed_secrets=secretbox.seal(secrets), cloned_from=cloned_from,
                           run_after=after.upstream, run_after_when=after.when)
    return job, {}


# --- endpoints --------------------------------------------------------------------------------------------


# The list's query parameters (listing.ListFilters' but the page's own tag box) and ?workspace=; tag may repeat.
LIST_PARAMS = ("q", "status", "framework", "owner", "created_from", "created_to", "sort", "size", "idle", "after",
               "before", "workspace")
# A create's (and the dry run's): the workspace, and the template the job starts from.
CREATE_PARAMS = ("workspace", "template", "version")


@api_view
@require_http_methods(["GET", "HEAD", "POST"])
def jobs(request: HttpRequest) -> JsonResponse:
    """GET: the caller's jobs, filtered and paginated like the list page. POST: create a job."""
    if request.method == "POST":
        return _create(request)
    if refused := query_errors(request, LIST_PARAMS, repeatable=["tag"]):
        return bad_request(refused)
    filters = listing.Filters.from_query(request.GET)
    if filters.errors:
        return bad_request(filters.errors)
    rows = access.jobs_for(request.api_user).select_related("workspace", "owner")
    try:
        chosen = workspace_param(request)
    except Problem as problem:
        return problem.response()
    if chosen is not None:
        rows = rows.filter(workspace=access.get_workspace(request.api_user, chosen))
    page = listing.page(rows, filters, user=request.api_user)
    base = {**filters.query(), **({"workspace": chosen} if chosen is not None else {})}

    def link(**cursor: str) -> str:
        from urllib.parse import urlencode

        return request.build_absolute_uri(reverse("api_jobs") + "?" + urlencode({**base, **cursor}, doseq=True))

    return JsonResponse({
        "jobs": [job_json(job, request) for job in page.jobs],
        "next": link(after=page.next_cursor) if page.next_cursor else None,
        "previous": link(before=page.prev_cursor) if page.prev_cursor else None,
    })


def create_request(request: HttpRequest, job_key: str | None = None, *, params: Iterable[str] = ("workspace",)) \
        -> tuple[Any, Workspace | None, JsonResponse | None]:
    """(JSON body, workspace) of a POST that creates something, or (None, None, the answer refusing it): the
    opening every create endpoint shares (jobs, sweeps, schedules). The workspace is request_workspace's, the
    CreateJob body (the payload, or its `job_key` member) giving the WorkspaceId hint. `params`: the query
    parameters the endpoint takes; any other (a misspelt ?templat=, which would create a job free of the template's
    locks) or one sent twice is a 400 at it, as on the lists."""
    if refused := query_errors(request, params):
        return None, None, bad_request(refused)
    payload, bad = json_body(request)
    if bad:
        return None, None, bad
    job_body = payload.get(job_key) if job_key and isinstance(payload, dict) else payload
    try:
        return payload, request_workspace(request, "create", dlc_workspace_id=body_workspace_id(job_body)), None
    except Problem as problem:
        return None, None, problem.response()


def _create(request: HttpRequest) -> JsonResponse:
    return idempotency.once(request, idempotency.JOBS, lambda: _create_job(request),
                            lambda pk: JsonResponse(job_json(access.get_job(request.api_user, pk), request)))


def _create_job(request: HttpRequest) -> JsonResponse:
    body, workspace, refused = create_request(request, params=CREATE_PARAMS)
    if refused:
        return refused
    locks, extra = template_start(request, workspace) if isinstance(body, dict) else (None, {})
    job, errors = submit_body(request.api_user, workspace, body, extra_errors=extra, locks=locks)
    if errors:
        return bad_request(errors)
    response = JsonResponse(job_json(job, request), status=201)
    response["Location"] = request.build_absolute_uri(reverse("api_job", args=[job.pk]))
    return response


@api_view
@require_http_methods(["GET", "HEAD", "PATCH"])
def job(request: HttpRequest, pk: int) -> JsonResponse:
    """GET: one job. PATCH {"priority": n}: change a queued quota job's priority (jobs.priority), answered once
    DLC has."""
    if refused := query_errors(request, ()):
        return bad_request(refused)
    if request.method == "PATCH":
        return _patch(request, pk)
    return JsonResponse(job_detail_json(access.get_job(request.api_user, pk), request))


def job_detail_json(job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
    """One job as GET /api/v1/jobs/{id} shows it: job_json and, while it is queued, its place in its quota's queue
    (jobs.now; one query, so not in the list)."""
    from jobs import costs, idle, now
    from jobs.jobpage import console_stop_reason

    position = now.queue_position(job)
    cost = costs.job_cost(job)
    found = job_json(job, request)
    # The console stopped it (the idle policy, early stopping): its reason, as DLC's message only says the user
    # did; the code stays DLC's. Not in the list: a query per stopped job.
    own = console_stop_reason(job)
    if own:
        found["reason"] = {"code": job.reason_code, "message": own}
    return {**found, "queue_position": position.as_json() if position else None,
            "cost": cost.as_json() if cost else None, "idle": idle.as_json(job)}


def _patch(request: HttpRequest, pk: int) -> JsonResponse:
    from jobs import priority

    target = access.get_job(request.api_user, pk)
    payload, bad = json_body(request)
    if bad:
        return bad
    if not isinstance(payload, dict):
        return bad_request({"": ['Send {"priority": <1-9>}: priority is the one field that can be changed.']})
    # Each other key at its own path, as every body of the API says it ("Priority", "DisplayName": not changed).
    errors = unknown_fields(payload, ["priority"])
    if "priority" not in payload:
        errors["priority"] = ['Send {"priority": <1-9>}: priority is the one field that can be changed.']
    if errors:
        return bad_request(errors)
    try:
        priority.change_priority(request.api_user, target, payload["priority"], typed=True)
    except priority.PriorityError as err:
        if err.kind == "forbidden":
            raise PermissionDenied(err.message) from err
        if err.kind == "invalid":
            return bad_request({"priority": [err.message]})
        return JsonResponse({"errors": {"priority": [err.message]}}, status=err.http_status)
    return JsonResponse(job_detail_json(target, request))


@api_view
@require_POST
def stop(request: HttpRequest, pk: int) -> JsonResponse:
    """Ask DLC to stop the job (through Celery); 202 with the outcome and the job."""
    from jobs import lifecycle

    target = access.get_job(request.api_user, pk, "stop")
    if refused := query_errors(request, ()):
        return bad_request(refused)
    if refused_body := no_body(request):
        return refused_body
    outcome = lifecycle.request_stop(request.api_user, target)
    target.refresh_from_db()
    return JsonResponse({"result": outcome, "job": job_json(target, request)}, status=202)


@api_view
@require_POST
def clone(request: HttpRequest, pk: int) -> JsonResponse:
    """A new job from this one's configuration, by the clone policy table (jobs.clone) the wizard uses.

    `changes` overrides top-level CreateJob fields; secrets are never copied, so each secret the policy
    re-prompts must be sent again (`registry_password`, `ray_redis_password`, and `secret_envs` {NAME: value} for
    each environment variable the source kept secret). A source started from a template (directly or as a clone)
    binds the clone to the template's locks, as the wizard's clone is bound. An Idempotency-Key makes it safe to
    retry, as a create (jobs.idempotency; a key is per source job).
    """
    if refused := query_errors(request, ()):
        return bad_request(refused)
    source = access.get_job(request.api_user, pk, "clone")  # before the key is claimed: an existing job's id
    return idempotency.once(request, idempotency.clone_endpoint(source.pk), lambda: _clone(request, source),
                            lambda made: JsonResponse(job_json(access.get_job(request.api_user, made), request)))


def _clone(request: HttpRequest, source: Job) -> JsonResponse:
    payload, bad = json_body(request, optional=True)  # no body: a clone without changes
    if bad:
        return bad
    if not isinstance(payload, dict):
        return bad_request({"": ["Send a JSON object: {\"changes\": {...}, \"registry_password\": \"...\"}."]})
    refused = unknown_fields(payload, CLONE_FIELDS)
    changes = payload.get("changes", {})
    if not isinstance(changes, dict):
        refused["changes"] = ['Must be an object of top-level CreateJob fields, e.g. {"DisplayName": "x"}.']
    elif SECRET_ENVS in changes:  # one place for a clone's secrets; replaced below, it would be dropped unsaid
        refused[f"changes.{SECRET_ENVS}"] = [
            'Send secret variables in the top-level secret_envs, e.g. {"secret_envs": {"WANDB_API_KEY": "..."}}.']
    # At the key the caller sent: checked further down they would be SecretEnvs' errors, or "send it again".
    if payload.get("secret_envs") is not None and not isinstance(payload["secret_envs"], dict):
        refused["secret_envs"] = ['Must be an object of variable names to secret values, e.g. '
                                  '{"WANDB_API_KEY": "..."}.']
    refused.update({key: ["Must be a string."] for key in PUT_SECRET
                    if key in payload and not isinstance(payload[key], str)})
    if refused:
        return bad_request(refused)
    body, reprompts, hints = clone_start(source)
    body.update(changes)
    # A secret variable of the source is the placeholder in body: its value must come again, in secret_envs.
    secret_envs = payload.get("secret_envs")
    body[SECRET_ENVS] = secret_envs if secret_envs is not None else {}
    errors: dict[str, list[str]] = {}
    for key in reprompts:
        if not isinstance(payload.get(key), str) or not payload[key]:
            errors[key] = ["The source job used this secret; secrets are never copied, send it again."]
        else:
            PUT_SECRET[key](body, payload[key])
    if payload.get("registry_password") and not _registry_username(body):  # else dropped unsaid: no role takes it
        errors["registry_password"] = ["The job has no registry username for this password: send JobSpecs with "
                                       "ImageConfig {\"Username\": ...} in changes, or leave registry_password out."]
    elif payload.get("registry_password") and "registry_password" not in reprompts:  # credentials given in changes
        put_registry_password(body, payload["registry_password"])
    ray = payload.get("ray_redis_password")
    if ray and "ray_redis_password" not in reprompts:  # a password the source had none of: dropped unsaid before
        if body.get("JobType") == "RayJob":
            put_ray_password(body, ray)
        else:
            errors["ray_redis_password"] = [f"Only a RayJob has a Ray Redis password, and this job is a "
                                            f"{body.get('JobType') or 'job of no type'}: leave ray_redis_password out."]
    from jobs import templates_lib

    # The source's template locks hold for its clones: a locked field in `changes` (or a variable in secret_envs) is
    # refused as at a template start.
    job, problems = submit_body(request.api_user, source.workspace, body, cloned_from=source, extra_errors=errors,
                                hints=hints, secret_envs_field="secret_envs", locks=templates_lib.linked(source))
    if problems:
        return bad_request(problems)
    response = JsonResponse(job_json(job, request), status=201)
    response["Location"] = request.build_absolute_uri(reverse("api_job", args=[job.pk]))
    return response


def clone_body(source: Job) -> tuple[dict[str, Any], list[str]]:
    """(the clone's CreateJob body, the secrets to ask for again): jobs.clone's policy applied to source."""
    body, reprompts, _hints = clone_start(source)
    return body, reprompts


def clone_start(source: Job) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """clone_body's, and the clone's hints: the console-only choices (image type, resource type...) the body cannot
    carry, copied by the policy as the wizard's clone copies them (else they would be guessed from the body)."""
    from jobs import clone as policy
    from jobs.forms.wizard import PASSWORD

    workspace = source.workspace
    taken = Job.objects.filter(workspace=workspace).values_list("display_name", flat=True)
    prefill = policy.prefill(source, taken_names=taken, workspace_id=workspace.dlc_workspace_id,
                             context=policies.context_for(workspace))
    body = spec.build(prefill.sections)
    # By the secret, not the field alone: a dropped WandbApiKey is re-prompted at the same field as RayRedisPassword.
    asked = set(prefill.reprompts)
    reprompts = [key for key, entry in (
        ("registry_password", (PASSWORD, policy.POLICY["environment.registry_password"][1])),
        ("ray_redis_password", ("resources-advanced", policy.POLICY["resources.advanced.RayRedisPassword"][1])),
    ) if entry in asked]
    return body, reprompts, spec.hints_from_sections(prefill.sections)


def _registry_username(body: dict[str, Any]) -> bool:
    """Whether a role of the body has registry credentials' username: what put_registry_password's password pairs
    with (spec: credentials need both)."""
    return any(isinstance(role, dict) and isinstance(role.get("ImageConfig"), dict)
               and role["ImageConfig"].get("Username") for role in body.get("JobSpecs") or [])


def put_registry_password(body: dict[str, Any], password: str) -> None:
    for role in body.get("JobSpecs") or []:
        if isinstance(role, dict) and isinstance(role.get("ImageConfig"), dict):
            role["ImageConfig"]["Password"] = password


def put_ray_password(body: dict[str, Any], password: str) -> None:
    body.setdefault("Settings", {}).setdefault("AdvancedSettings", {})["RayRedisPassword"] = password


PUT_SECRET = {"registry_password": put_registry_password, "ray_redis_password": put_ray_password}
CLONE_FIELDS = {"changes", "secret_envs", *PUT_SECRET}


@api_view
@require_safe
def workspaces(request: HttpRequest) -> JsonResponse:
    """The caller's workspaces (a workspace-scoped token: its one workspace), each with what the caller may do.

    `role` stays the user's membership role, as before; `read_only` and `effective_role` say what this
    credential may do with it: a read-only token may only read, which is a viewer's right, whatever the role.
    """
    if refused := query_errors(request, ()):
        return bad_request(refused)
    user = request.api_user
    scope = access.scope_of(user)
    read_only = bool(scope and scope.read_only)
    rows = []
    for ws in access.workspaces_with_roles(user):  # one query, roles included
        role = access.role_in(user, ws)
        rows.append({"id": ws.pk, "name": ws.name, "role": role,
                     "effective_role": Membership.VIEWER if read_only else role, "read_only": read_only,
                     "region": ws.region, "dlc_workspace_id": ws.dlc_workspace_id,
                     "policy": policies.hints_for(ws)})
    return JsonResponse({"workspaces": rows})


@require_safe
def openapi(request: HttpRequest) -> JsonResponse:
    """The API's OpenAPI 3 description (public: it describes the API, not anyone's data)."""
    return JsonResponse(openapi_document(request.build_absolute_uri("/")[:-1]))


def response_object(properties: dict[str, Any], *, optional: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
    """An object schema of an answer: every property required but the `optional` ones (those present only on some
    calls). The API adds no other field, which the document's test (tests/test_api_openapi.py) holds it to."""
    skipped = set(optional)
    return {"type": "object", "properties": properties, "required": [k for k in properties if k not in skipped],
            **extra}


# {id, name} of the workspace a job, sweep or schedule belongs to.
WORKSPACE_REF = response_object({"id": {"type": "integer"}, "name": {"type": "string"}})


STOP_RESULTS = ("stopping", "stopped", "already-finished", "not-permitted")  # lifecycle.request_stop's


def job_schema_of() -> dict[str, Any]:
    """The `Job` schema: job_json's fields (GET /api/v1/jobs/{id} adds JobDetail's)."""
    from jobs import status as st

    when = {"type": "string", "format": "date-time", "nullable": True}
    pod_time = {"type": "string", "nullable": True, "description": "As DLC gives it (ISO 8601, UTC); null: not yet."}
    return response_object({
        "id": {"type": "integer"}, "name": {"type": "string"},
        "workspace": WORKSPACE_REF, "owner": {"type": "string", "nullable": True},
        "status": {"type": "string", "enum": list(st.ALL)},
        "status_label": {"type": "string"}, "active": {"type": "boolean"},
        "sub_status": {"type": "string", "description": "DLC's sub-status (\"\": none)."},
        "reason": response_object(
            {"code": {"type": "string"}, "message": {"type": "string"}}, nullable=True,
            description="Why the job is where it is: DLC's code and message. In GET /api/v1/jobs/{id}, a job the "
                        "console stopped (the idle policy, a sweep's early stopping) has the console's reason as "
                        "message (code stays DLC's)."),
        "job_type": {"type": "string"},
        "dlc_job_id": {"type": "string", "nullable": True},
        "imported": {"type": "boolean", "description": "Found in DLC by a sync, not created by the console."},
        "cloned_from": {"type": "integer", "nullable": True},
        "run_after": {"type": "integer", "nullable": True,
                      "description": "The job this one runs after (null: none, or deleted)."},
        "run_after_when": {"type": "string", "enum": list(dependencies.WHEN)},
        "submit_error": {"type": "object", "nullable": True,
                         "description": "DLC's error of the last failed CreateJob (Code, Message, ...); null: none."},
        "submit_next_attempt_at": {**when, "description": "When the worker retries the CreateJob; null: no retry "
                                                          "planned."},
        "created_at": {"type": "string", "format": "date-time"},
        "submitted_at": when, "started_at": when, "finished_at": when,
        "pods": {"type": "array", "items": response_object({
            "PodId": {"type": "string", "nullable": True}, "Type": {"type": "string", "nullable": True},
            "Status": {"type": "string", "nullable": True}, "Ip": {"type": "string", "nullable": True},
            "GmtStartTime": pod_time, "GmtFinishTime": pod_time})},
        "body": {"type": "object", "description": "The CreateJob body, without secrets."},
        "url": {"type": "string", "format": "uri", "description": "This job in the API."},
        "page": {"type": "string", "format": "uri", "description": "This job's page in the console."}})


def job_detail_members() -> dict[str, Any]:
    """What GET /api/v1/jobs/{id} (and a priority change) adds to a Job: job_detail_json's extra fields."""
    return {
        "queue_position": response_object(
            {"position": {"type": "integer"}, "of": {"type": "integer"},
             "quota": {"type": "string", "nullable": True}, "held": {"type": "boolean"}}, nullable=True,
            description="Not in lists: while the job is queued, its place in its quota's queue in DLC's order "
                        "(higher priority first, then earlier submitted); 1 is admitted next. `quota`: the quota's "
                        "name (null on public resources). `held`: the job waits for the job it runs after, so this "
                        "is the place it will take once released. Null when not queued."),
        "idle": response_object(
            {"since": {"type": "string", "format": "date-time"},
             "metric": {"type": "string", "enum": ["GPU", "CPU"]},
             "value": {"type": "number"}, "threshold_percent": {"type": "number"},
             "window_minutes": {"type": "number"},
             "stops_at": {"type": "string", "format": "date-time", "nullable": True}}, nullable=True,
            description="While the workspace's idle policy finds the running job idle, since when, what was "
                        "measured (metric GPU or CPU, the busiest pod's average percent over window_minutes, under "
                        "threshold_percent) and when the policy stops it (stops_at, null: never). Null when not "
                        "idle, and once the job ended."),
        "cost": response_object(
            {"amount": {"type": "string", "description": "Decimal, to the cent."},
             "currency": {"type": "string"}, "running": {"type": "boolean"},
             "ceiling": {"type": "boolean", "description": "A spot job's cost at its bid's ceiling (the list price "
                                                           "x SpotDiscountLimit, or SpotPriceLimit): at most "
                                                           "`amount`, as DLC charges the market price."}},
            nullable=True,
            description="What the job cost at the workspace's prices in force when each hour ran (so far while "
                        "`running`). Null when it never ran or has no price."),
    }


def openapi_document(server: str) -> dict[str, Any]:
    from jobs.api_logs import log_paths, log_schemas
    from jobs.api_schedules import schedule_paths, schedule_schemas
    from jobs.api_sweeps import sweep_paths, sweep_schemas
    from jobs.note_views import note_paths, note_schemas

    err = {"$ref": "#/components/responses/Error"}
    roles = [role for role, _ in Membership.ROLES]
    validation = {"description": "Invalid body: messages keyed by field path (e.g. JobSpecs[0].PodCount).",
                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ValidationErrors"}}}}
    job_ok = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Job"}}}}
    detail_ok = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobDetail"}}}}
    job_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    ws_param = {"name": "workspace", "in": "query", "schema": {"type": "integer"},
                "description": "Console workspace id (GET /api/v1/workspaces); optional if you have only one. "
                               "Without it, a create call (job, sweep, schedule) uses the one workspace of yours "
                               "whose dlc_workspace_id is the CreateJob body's WorkspaceId; else 400 with "
                               "`candidates` [{id, name, dlc_workspace_id}]. Not a whole number: 400 at "
                               "`workspace`. An id that is none of your workspaces (or outside the token's "
                               "workspace): 404."}
    list_params = [ws_param] + [
        {"name": n, "in": "query", "schema": {"type": "string"}, "description": d} for n, d in (
            ("q", "Name contains (at most 256 characters; longer: 400 at q)."),
            ("status", "A status, or 'active' / 'finished'. Another value: 400 at status."),
            ("framework", "JobType, e.g. PyTorchJob."), ("owner", "Username, or 'me'."),
            ("created_from", "YYYY-MM-DD"), ("created_to", "YYYY-MM-DD"),
            ("sort", "-created (default), created, name, -name, status. The pages are keyset-paginated on the "
                     "sort key: with `status`, a job whose status changes while you page through may appear on "
                     "two pages or on none (its place in the order moved); the other orders are on keys that do "
                     "not change."),
            ("size", "10, 20 (default), 50, 100"),
            ("idle", "1: only running jobs the workspace's idle policy found idle (a job's `idle` is not null). "
                     "Any other value: 400 at `idle`."),
            ("after", "A cursor, not a URL: the `after` query parameter of the page's `next` URL. Simplest: "
                      "request `next` as it is."),
            ("before", "A cursor, not a URL: the `before` query parameter of the page's `previous` URL."))
    ] + [{"name": "tag", "in": "query", "style": "form", "explode": True,
           "schema": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
           "description": "A job tag (Settings.Tags), as `key` (any value) or `key=value`; repeat it for jobs that "
                          "have all of them: ?tag=team=vision&tag=experiment. A key of ASCII letters (a-z, A-Z), "
                          "digits, '-', '_' and '.' (up to 128), a value up to 256 characters; else 400 at `tag`. "
                          "The console's own submission tag is not a tag here."}]
    template_params = [
        {"name": "template", "in": "query", "schema": {"type": "integer"},
         "description": "Template the job starts from: its locked fields must keep their values (a lock on the "
                        "environment variables holds for SecretEnvs too). Not a whole number from 1: 400 at "
                        "template."},
        {"name": "version", "in": "query", "schema": {"type": "integer", "minimum": 1},
         "description": "The template's version (default: its default version, else its latest); only with "
                        "template. Not a whole number from 1, or without template: 400 at version."}]
    job_schema = job_schema_of()
    by_name = {p["name"]: p for p in list_params}
    by_name["q"]["schema"]["maxLength"] = listing.ListFilters.base_fields["q"].max_length
    by_name["status"]["schema"]["enum"] = [choice for choice, _ in listing.STATUS_CHOICES if choice]
    # What a call answers when it cannot say which workspace is meant (request_workspace).
    invalid_or_candidates = {
        **validation, "description": validation["description"] + " Without ?workspace=, when it cannot tell which "
        "of your workspaces is meant: `errors.workspace` and `candidates` [{id, name, dlc_workspace_id}]."}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "DLC Console API", "version": API_VERSION,
                 "description": "Jobs of the console's workspaces, their sweeps, schedules and usage. Authenticate "
                                "with a personal token (`Authorization: Bearer dlcc_...`, create one on /account/api) "
                                "or a signed-in "
                                "session (which must also send X-CSRFToken on POST). " + TOKEN_SCOPE},
        "servers": [{"url": server}],
        "security": [{"bearer": []}, {"session": []}],
        "paths": {
            "/api/v1/workspaces": {"get": {
                "summary": "Your workspaces (a workspace-scoped token: its one workspace), your role, what this "
                           "credential may do there, and their guardrails",
                "responses": {"200": {"description": "Workspaces", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/WorkspaceList"}}}}, "401": err}}},
            "/api/v1/jobs": {
                "get": {"summary": "List jobs (keyset pagination like the list page)", "parameters": list_params,
                        "responses": {"200": {"description": "A page of jobs", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/JobPage"}}}}, "400": validation, "401": err,
                            "404": err}},
                "post": {"summary": "Create a job from a CreateJob body (same validation as the wizard)",
                         "parameters": [ws_param, *template_params, idempotency.parameter()],
                         "requestBody": {"required": True, "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/CreateJobBody"}}}},
                         "responses": {"201": {"description": "Created; the worker submits it to DLC", **job_ok},
                                       "400": invalid_or_candidates, "401": err, "403": err, "404": err,
                                       **idempotency.responses()}},
            },
            "/api/v1/jobs/{id}": {
                "get": {"summary": "One job", "parameters": [job_id],
                        "responses": {"200": {"description": "The job", **detail_ok}, "401": err, "404": err}},
                "patch": {
                    "summary": "Change the priority of a job waiting in a resource quota's queue (DLC UpdateJob; "
                               "members: their own jobs; admins: any)",
                    "description": "Only for a job on a resource quota (its body has ResourceId) while it is "
                                   "Creating or Queuing. The call returns once DLC has answered; the new value is "
                                   "in the job's body.Priority. Setting the same value again is harmless.",
                    "parameters": [job_id],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["priority"], "additionalProperties": False,
                        "properties": {"priority": {"type": "integer", "minimum": 1, "maximum": 9,
                                                    "description": "1 lowest, 9 highest."}}}}}},
                    "responses": {"200": {"description": "Changed; the job", **detail_ok},
                                  "400": validation, "401": err, "403": err, "404": err,
                                  "409": {**validation,
                                          "description": "The job is not on a resource quota or no longer waits "
                                                         "in its queue: `errors.priority` says which."},
                                  "502": {**validation,
                                          "description": "DLC refused the change or did not answer: "
                                                         "`errors.priority` says what happened."}}},
            },
            "/api/v1/jobs/{id}/stop": {"post": {
                "summary": "Stop a job (members: their own; admins: any)", "parameters": [job_id],
                "responses": {"202": {"description": "Stop requested: `result` stopping (sent to DLC), stopped "
                                                     "(it never reached DLC), already-finished; and the job",
                                      "content": {"application/json": {"schema": response_object({
                                          "result": {"type": "string", "enum": list(STOP_RESULTS)},
                                          "job": {"$ref": "#/components/schemas/Job"}})}}},
                              "400": {**validation, "description": "A query parameter, or a body with a field (a "
                                                                   "stop takes none: send no body, or {})."},
                              "401": err, "403": err, "404": err,
                              "415": {**validation, "description": "A body whose Content-Type is not JSON."}}}},
            "/api/v1/jobs/{id}/clone": {"post": {
                "summary": "Create a copy of a job (new name `<name>-copy`; secrets must be sent again)",
                "parameters": [job_id, idempotency.parameter()],
                "requestBody": {"content": {"application/json": {"schema": {
                    # Any other key is refused (400 at the key), as is a `changes` that is not an object.
                    "type": "object", "additionalProperties": False, "properties": {
                        "changes": {"type": "object", "description": "Top-level CreateJob fields to replace. A "
                                    "job started from a template keeps its locks: a locked field is refused (400), "
                                    "as is a variable in secret_envs under a lock on the environment variables. "
                                    "SecretEnvs here is refused (400 at changes.SecretEnvs): send secret_envs."},
                        "registry_password": {"type": "string", "writeOnly": True},
                        "ray_redis_password": {"type": "string", "writeOnly": True},
                        "secret_envs": {"type": "object", "writeOnly": True,
                                        "additionalProperties": {"type": "string"},
                                        "description": "The value of each secret environment variable of the "
                                                       "source (shown as ******** in its Envs)."}}}}}},
                "responses": {"201": {"description": "The new job", **job_ok}, "400": validation, "401": err,
                              "403": err, "404": err, **idempotency.responses()}}},
            "/api/v1/jobs/validate": {"post": {
                "summary": "Dry run: validate a CreateJob body without creating anything",
                "description": "The checks of POST /api/v1/jobs, in the workspace that call would use (same "
                               "`workspace`, `template` and `version` parameters): valid here means the create "
                               "accepts the body. Any member may ask, a viewer or a read-only token too.",
                "parameters": [ws_param, *template_params],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/CreateJobBody"}}}},
                "responses": {"200": {"description": "Valid: `notes` are the wizard's remarks on the job, keyed by "
                                                     "wire path as errors are; "
                                                     "`can_create` false (a viewer, a read-only token): the create "
                                                     "would answer 403 with `cannot_create`.",
                                      "content": {"application/json": {"schema": {
                                          "type": "object", "required": ["valid", "notes", "can_create"],
                                          "properties": {
                                              "valid": {"type": "boolean"}, "notes": {"type": "object"},
                                              "can_create": {"type": "boolean"},
                                              "cannot_create": {"type": "string", "description": "Only when "
                                                                "can_create is false: the create's 403 message."}}}}}},
                              "400": invalid_or_candidates, "401": err, "404": err,
                              "403": {**err, "description": "A signed-in session that sent no X-CSRFToken "
                                                            "(the dry run itself is open to any member)."}}}},
            **note_paths(err, validation),
            **log_paths(err, validation),
            **sweep_paths(err, validation, ws_param),
            **schedule_paths(err, validation, ws_param),
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "Personal API token. " + TOKEN_SCOPE},
                "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            },
            "responses": {"Error": {"description": "Error: 401 no or bad credentials (`code` token_expired: the "
                                                   "token expired, with `expires_at`; token_revoked: it was "
                                                   "revoked), 403 not permitted (also: a read-only token on an "
                                                   "unsafe call; a session's unsafe call without X-CSRFToken), 404 "
                                                   "not found or outside the token's workspace. Any /api/ path: 404 "
                                                   "where no endpoint is, 405 for a method the path does not take "
                                                   "(its Allow header lists those it takes), 429 too many "
                                                   "invalid tokens (see TooManyFailures), in this format.",
                                    "content": {"application/json": {"schema": response_object({
                                        "error": {"type": "string"},
                                        "code": {"type": "string",
                                                 "enum": ["token_expired", "token_revoked", "too_many_failures"]},
                                        "expires_at": {"type": "string", "format": "date-time"}},
                                        optional=["code", "expires_at"])}}},
                          "TooManyFailures": {
                              "description": "Too many requests with an invalid token from your client IP (more than "
                                             "API_TOKEN_MAX_FAILURES_PER_IP, 20 by default, in "
                                             "API_TOKEN_FAILURE_WINDOW_SECONDS, 60): `code` too_many_failures, in "
                                             "the Error format. A valid token is never refused this way; expired "
                                             "and revoked tokens keep their 401.",
                              "headers": {"Retry-After": {"description": "Seconds until the window ends.",
                                                          "schema": {"type": "integer"}}}}},
            "schemas": {
                "CreateJobBody": {"type": "object", "description": "The PAI-DLC CreateJob request body "
                                  "(POST /api/v1/jobs of the PAI-DLC 2020-12-03 API). A registry password in "
                                  "JobSpecs[].ImageConfig.Password is sealed for the worker, never stored. "
                                  "Secret environment variables (e.g. a W&B API key) go in `SecretEnvs`, "
                                  "{\"WANDB_API_KEY\": \"...\"}, next to `Envs`: sealed the same way, shown as "
                                  "******** in Envs. An Envs value whose name looks like a secret's (TOKEN, "
                                  "API_KEY, SECRET, PASSWORD, ...) is sealed too.",
                                  "required": ["DisplayName", "JobType", "JobSpecs"],
                                  "properties": {"DisplayName": {"type": "string"}, "JobType": {"type": "string"},
                                                 "JobSpecs": {"type": "array", "items": {"type": "object"}},
                                                 "UserCommand": {"type": "string"},
                                                 "Envs": {"type": "object",
                                                          "additionalProperties": {"type": "string"}},
                                                 SECRET_ENVS: {"type": "object", "writeOnly": True,
                                                               "additionalProperties": {"type": "string"},
                                                               "description": "Console extension: environment "
                                                               "variables whose values are secrets (never stored "
                                                               "or shown in plain text)."},
                                                 dependencies.FIELD: {
                                                     "type": "integer", "nullable": True,
                                                     "description": "Console extension: the id of a job of the "
                                                     "same workspace to run after. While it is active this job "
                                                     "is held (status Waiting), never sent to DLC; if the "
                                                     "condition can no longer hold it ends Stopped, reason "
                                                     f"{dependencies.SKIPPED}, without running. An upstream that "
                                                     "already failed, with run_after_when succeeded, is refused "
                                                     "(400 at run_after)."},
                                                 dependencies.WHEN_FIELD: {
                                                     "type": "string", "enum": list(dependencies.WHEN),
                                                     "default": dependencies.SUCCEEDED,
                                                     "description": "Console extension: run when the run_after "
                                                     "job succeeded (default), or when it ended, whatever the "
                                                     "outcome (not if it never ran: stopped while Waiting, or "
                                                     "skipped, it has no outcome and this job is skipped too). "
                                                     "Only with a run_after (else 400 at run_after_when)."}},
                                  "additionalProperties": True},
                "ValidationErrors": response_object({
                    "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                               "description": "Messages keyed by field path (\"\": the body as a whole)."},
                    "candidates": {"type": "array", "description": "Only when a call cannot tell which of your "
                                   "workspaces is meant (errors.workspace): those it could be, at most "
                                   f"{CANDIDATES_SHOWN}.",
                                   "items": response_object({"id": {"type": "integer"}, "name": {"type": "string"},
                                                             "dlc_workspace_id": {"type": "string"}})},
                    "code": {"type": "string", "enum": ["idempotency_key_invalid"],
                             "description": "Only for a malformed Idempotency-Key (errors at Idempotency-Key)."}},
                    optional=["candidates", "code"]),
                "Job": job_schema,
                "JobDetail": response_object({**job_schema["properties"], **job_detail_members()}),
                "WorkspaceList": response_object({"workspaces": {"type": "array", "items": response_object({
                        "id": {"type": "integer"}, "name": {"type": "string"},
                        "role": {"type": "string", "enum": roles,
                                 "description": "Your membership role (admin for a superuser)."},
                        "effective_role": {"type": "string", "enum": roles,
                                           "description": "The role this request acts with: viewer for a read-only "
                                                          "token (it may only read), else `role`."},
                        "read_only": {"type": "boolean",
                                      "description": "True when the request used a read-only token: every call "
                                                     "that changes something answers 403."},
                        "region": {"type": "string"}, "dlc_workspace_id": {"type": "string"},
                        "policy": {"type": "object", "description": "The workspace's guardrails."}})}}),
                "JobPage": response_object({
                    "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}},
                    "next": {"type": "string", "format": "uri", "nullable": True,
                             "description": "The URL of the next page, to request as it is (null: last page). Its "
                                            "`after` query parameter is the cursor."},
                    "previous": {"type": "string", "format": "uri", "nullable": True,
                                 "description": "The URL of the previous page (null: first page). Its `before` "
                                                "query parameter is the cursor."}}),
                **note_schemas(),
                **log_schemas(),
                **sweep_schemas(),
            },
        },
    }
    shared = document["components"]["responses"]
    shared["TooManyFailures"]["content"] = shared["Error"]["content"]  # the same body, one definition
    schemas = document["components"]["schemas"]
    schemas.update(schedule_schemas(schemas["CreateJobBody"]))  # a schedule's job: CreateJobBody less run_after
    return with_body_errors(document, validation, err)


def with_body_errors(document: dict[str, Any], validation: dict[str, Any], err: dict[str, Any]) -> dict[str, Any]:
    """Every operation taking a body may answer 413 (too large: api.JsonErrorsMiddleware) and 415 (not JSON:
    json_body); every unsafe one 403 (a session without X-CSRFToken, apitokens.api_view); every authenticated one
    429 (too many invalid tokens from one address, apitokens.api_view) and 400 (a query parameter it does not take,
    or one sent twice: query_errors). Said once, here, so that no new operation misses them."""
    too_large = {**validation, "description": "The body is too large (error at \"\")."}
    too_many = {"$ref": "#/components/responses/TooManyFailures"}
    not_json = {**validation, "description": "The body's Content-Type is not JSON (error at \"\")."}
    bad_query = {**validation, "description": "A query parameter the operation does not take, or one sent twice "
                                              "(error at the parameter)."}
    for operations in document["paths"].values():
        for method, operation in operations.items():
            answers = operation["responses"]
            if "requestBody" in operation:
                answers.setdefault("413", too_large)
                answers.setdefault("415", not_json)
            if method in ("post", "put", "patch", "delete"):
                answers.setdefault("403", err)
            if "401" in answers:  # every authenticated operation: apitokens.api_view counts invalid tokens
                answers.setdefault("429", too_many)
                answers.setdefault("400", bad_query)
    return document
