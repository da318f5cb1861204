"""JSON API for sweeps, grid or random search (create, list, get, stop all) and a workspace's usage report.

The sweep's rules are jobs.sweeps' (the wizard's "Sweep" box) and its job's are those of POST /api/v1/jobs
(api_jobs.check_body: guardrails, SecretEnvs, the body's WorkspaceId, a template's locks); trials are saved by
sweeps.launch, as the wizard saves them. Access is jobs.access's: a sweep or workspace outside the caller's
workspaces (or the token's scope) answers 404, as the jobs API does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from jobs import access, api_jobs, costs, early_stop, idempotency, jobpage, lifecycle, sweeps, usage
from jobs import status as st
from jobs.api_jobs import (
    Problem,
    bad_request,
    create_request,
    id_page,
    id_page_parameters,
    parse_id,
    query_errors,
    response_object,
)
from jobs.apitokens import api_view
from jobs.models import Job, Membership, Sweep, SweepTrial

LIST_SIZE = 50  # as the sweep list page
PARAMETERS = "Parameters"
JOB = "Job"
SEARCH = "Search"
EARLY_STOPPING = "EarlyStopping"
SEARCH_KEYS = ("Method", "Trials", "Seed")
DISTRIBUTION_KEYS = ("Distribution", "Min", "Max")
# The API's words for the parts of the sweep rules the wizard words for its text box.
WORDING = sweeps.Wording('(a list: ["0.1", "0.01"])', "", "POST /api/v1/jobs for a single job")
QUERY_FIELDS = {"workspace", "template", "version"}  # error keys that name the query, not the body


# --- the grid --------------------------------------------------------------------------------------------


def _value_text(value: Any) -> str | None:
    """A parameter value as the environment variable's text; None for what cannot be one."""
    if isinstance(value, bool):
        return None  # true/false would become "True"/"False": say what is meant, as a string
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal) and value.is_finite():
        return str(value)  # as typed: 0.00001 stays 0.00001, not 1e-05
    return None


def parameters_grid(given: Any, env_names: Iterable[str] = (), *, search: Any = None, limit: int | None = None) \
        -> tuple[sweeps.Search | None, dict[str, list[str]]]:
    """(search, errors keyed Parameters / Parameters.<NAME> / Search / Search.<Field>) of the API's
    {"NAME": [values] or {"Distribution": ..., "Min": ..., "Max": ...}} and "Search", by jobs.sweeps' rules.

    Values are strings or numbers (numbers parsed as Decimal keep the digits sent) in the order given. Without
    Search.Method, any distribution makes a random search, as a distribution line does in the wizard's box.
    """
    errors: dict[str, list[str]] = {}
    method, trials, seed = _search(search, errors)
    if not isinstance(given, dict) or not given:
        errors[PARAMETERS] = ['Must be an object of parameter names to lists of values or distributions: '
                              '{"LR": ["0.1", "0.01"], "BS": ["32", "64"]} or '
                              '{"LR": {"Distribution": "loguniform", "Min": 1e-5, "Max": 0.1}}.']
        return None, errors
    inferred = method is None
    method = method or (sweeps.RANDOM if any(isinstance(raw, dict) for raw in given.values()) else sweeps.GRID)
    if inferred and method == sweeps.GRID:
        # Lists only and no Method make a grid, which runs every combination: Trials or Seed would be dropped unsaid
        # (with "Method": "grid" they are refused by _search).
        for key, sent in (("Trials", trials), ("Seed", seed)):
            if sent is not None and f"{SEARCH}.{key}" not in errors:
                errors[f"{SEARCH}.{key}"] = [
                    "Only for a random search: these parameters are lists of values, so they make a grid (every "
                    'combination). To sample some of them instead, send "Method": "random".']
    taken = {str(n) for n in env_names}
    parameters: list[sweeps.Param] = []
    seen: set[str] = set()
    found: list[str] = []
    for name, raw in given.items():
        param, problem = _parameter(name, raw, method, taken, seen)
        seen.add(name)
        if problem:
            errors[f"{PARAMETERS}.{name}"] = [problem[:1].upper() + problem[1:]]
            found.append(problem)
            continue
        parameters.append(param)
    if any(k.startswith(SEARCH) for k in errors):
        return None, errors  # the search's own shape is wrong: its trials and seed are not worth judging
    found_search, problems = sweeps.search_from(parameters, len(seen), found, method=method, trials=trials, seed=seed,
                                                limit=limit, wording=WORDING)
    if problems.get(sweeps.FIELD, [])[len(found):]:
        errors[PARAMETERS] = problems[sweeps.FIELD][len(found):]
    for key, path in ((sweeps.TRIALS_FIELD, f"{SEARCH}.Trials"), (sweeps.SEED_FIELD, f"{SEARCH}.Seed")):
        if problems.get(key):
            errors[path] = problems[key]
    return (None, errors) if errors else (found_search, errors)


def _search(search: Any, errors: dict[str, list[str]]) -> tuple[str | None, Any, Any]:
    """(method or None to infer it, trials, seed) of the request's Search, its problems added to `errors`."""
    if search is None:
        return None, None, None
    if not isinstance(search, dict):
        errors[SEARCH] = ['Must be an object: {"Method": "random", "Trials": 20, "Seed": 7} or {"Method": "grid"}.']
        return None, None, None
    for key in search:
        if key not in SEARCH_KEYS:
            errors[f"{SEARCH}.{key}"] = [api_jobs.unknown_field_message(SEARCH_KEYS)]
    method = search.get("Method")
    if method is not None and method not in (sweeps.GRID, sweeps.RANDOM):
        errors[f"{SEARCH}.Method"] = [f'Must be "{sweeps.GRID}" or "{sweeps.RANDOM}".']
        method = None
    if method == sweeps.GRID:
        for key in ("Trials", "Seed"):
            if search.get(key) is not None:
                errors[f"{SEARCH}.{key}"] = ["Only for a random search: a grid runs every combination of the values."]
    counts = {}
    for key in ("Trials", "Seed"):
        # JSON integers, as the document says (the wizard's text boxes are sweeps.parse_form's strings): "20" would
        # hide a client's type error.
        if isinstance(search.get(key), str) and f"{SEARCH}.{key}" not in errors:
            errors[f"{SEARCH}.{key}"] = [f"Must be a JSON integer, not the string {search[key][:24]!r}."]
        else:
            counts[key] = search.get(key)
    return method, counts.get("Trials"), counts.get("Seed")


def _parameter(name: str, raw: Any, method: str, taken: set[str], seen: set[str]) \
        -> tuple[sweeps.Param | None, str | None]:
    """(param, None) of one entry of Parameters, or (None, why not), by the wizard's rules."""
    if not name:
        return None, "the parameter name is empty."
    if isinstance(raw, dict):
        if method == sweeps.GRID:
            return None, (f'A distribution needs a random search: "{SEARCH}": {{"Method": "random", "Trials": 20}}, '
                          "or give a list of values for a grid.")
        return _distribution(name, raw, taken, seen)
    values = [_value_text(v) for v in raw] if isinstance(raw, list) else []
    problem = _shape_problem(raw, values) or sweeps.parameter_problem(name, values, taken, seen, WORDING)
    return (None, problem) if problem else (sweeps.Param(name, tuple(values)), None)


def _distribution(name: str, raw: dict, taken: set[str], seen: set[str]) -> tuple[sweeps.Param | None, str | None]:
    unknown = [k for k in raw if k not in DISTRIBUTION_KEYS]
    missing = [k for k in DISTRIBUTION_KEYS if raw.get(k) is None]
    if unknown or missing:
        wrong = f"unknown {', '.join(unknown)}" if unknown else f"missing {', '.join(missing)}"
        return None, ('A distribution is {"Distribution": "uniform" | "loguniform" | "int", "Min": <number>, '
                      f'"Max": <number>}}: {wrong}.')
    problem = sweeps.name_problem(name, taken, seen)
    if problem:
        return None, problem
    function = raw["Distribution"]
    if not isinstance(function, str):
        return None, 'Distribution must be one of "uniform", "loguniform", "int".'
    low, high = _value_text(raw["Min"]), _value_text(raw["Max"])
    if low is None or high is None:
        return None, "Min and Max must be numbers."
    return sweeps.distribution(name, function, low, high, WORDING)


def _shape_problem(raw: Any, values: list[str | None]) -> str | None:
    """What the JSON of one parameter's values gets wrong before the sweep's own rules apply, or None."""
    if not isinstance(raw, list):
        return ('Must be a list of values (strings or numbers), or a distribution: {"Distribution": "loguniform", '
                '"Min": 1e-5, "Max": 0.1}.')
    if None in values:
        return "Each value must be a string or a number."
    if any("," in v or "\n" in v or "\r" in v for v in values):
        # The sweep page shows, and "Clone as sweep" reopens, the grid as `NAME = v1, v2` lines.
        return "A value may not contain a comma or a line break."
    return None


def early_stopping(given: Any, trials: int | None = None) -> tuple[early_stop.Settings | None, dict[str, list[str]]]:
    """(settings or None, errors keyed EarlyStopping / EarlyStopping.<Key>) of the request's EarlyStopping, by
    jobs.early_stop's rules (the wizard's); `trials`: the sweep's number of trials, when its grid is valid."""
    if given is None:
        return None, {}
    keys = ", ".join(early_stop.API_KEYS)
    if not isinstance(given, dict):
        return None, {EARLY_STOPPING: [f'Must be an object of {keys}: {{"Metric": "loss", "Goal": "min", '
                                       '"AfterSucceeded": 3, "NotBeforeStep": 0}.']}
    errors = {f"{EARLY_STOPPING}.{key}": [api_jobs.unknown_field_message(early_stop.API_KEYS)] for key in given
              if key not in early_stop.API_KEYS}
    if given.get("Metric") in (None, ""):
        errors[f"{EARLY_STOPPING}.Metric"] = ["Required: the metric the rule compares (as METRIC lines name it)."]
        return None, errors
    found, problems = early_stop.parse({field: given.get(key) for key, field in early_stop.API_KEYS.items()},
                                       trials=trials, typed=True)
    by_field = {field: key for key, field in early_stop.API_KEYS.items()}
    errors.update({f"{EARLY_STOPPING}.{by_field[field]}": messages for field, messages in problems.items()})
    return (None, errors) if errors else (found, {})


def _in_job(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    # The CreateJob body is the request's "Job": its paths are said from the request's root.
    return {(k if k in QUERY_FIELDS else f"{JOB}.{k}" if k else JOB): v for k, v in errors.items()}


def _names(envs: Any) -> list[str]:
    return [str(k) for k in envs] if isinstance(envs, dict) else []


def _lock_paths(locks: api_jobs.Locks | None) -> list[str]:
    from jobs import templates_lib

    return templates_lib.lock_paths(locks[0]) if locks else []


# --- representation ---------------------------------------------------------------------------------------


def _link(request: HttpRequest, url: str) -> str:
    return request.build_absolute_uri(url)


def _tally(statuses: list[str]) -> dict[str, int]:
    """{status: trials}, in order of first appearance (the page's tally)."""
    return dict(Counter(statuses))


def sweep_json(sweep: Sweep, request: HttpRequest, trials: list[SweepTrial] | None = None,
               statuses: list[str] | None = None) -> dict[str, Any]:
    """A sweep as the API shows it; with `trials` (their jobs loaded), each trial too."""
    grid = sweeps.search_of(sweep)
    if trials is not None:
        statuses = [t.job.status for t in trials]
    out: dict[str, Any] = {
        "id": sweep.pk,
        "name": sweep.name,
        "workspace": {"id": sweep.workspace_id, "name": sweep.workspace.name},
        "owner": sweep.owner.get_username() if sweep.owner else None,
        "created_at": sweep.created_at.isoformat(),
        "search": {"method": grid.method, "trials": sweep.trials_asked, "seed": sweep.seed},
        "parameters": _parameters_json(grid),
        "trial_count": len(statuses or []),
        "tally": _tally(statuses or []),
        "active": any(st.is_active(s) for s in statuses or []),
        "early_stopping": early_stop.as_json(sweep),
        "url": _link(request, reverse("api_sweep", args=[sweep.pk])),
        "page": _link(request, sweep.get_absolute_url()),
    }
    if trials is not None:
        out["trials"] = [_trial_json(t, grid.names, request) for t in trials]
    return out


def _parameters_json(search: sweeps.Search) -> dict[str, Any]:
    """{NAME: [values]} of a grid; a random search's distributions as {"Distribution", "Min", "Max"}, as sent."""
    if search.method == sweeps.GRID:
        return {name: list(values) for name, values in search.parameters}
    out: dict[str, Any] = {}
    for p in search.parameters:
        number = int if p.distribution == "int" else float
        out[p.name] = ({"Distribution": p.distribution, "Min": number(p.low), "Max": number(p.high)}
                       if p.distribution else list(p.values))
    return out


def _trial_json(trial: SweepTrial, names: list[str], request: HttpRequest) -> dict[str, Any]:
    values = trial.values or {}
    job: Job = trial.job
    return {
        "number": trial.number,
        # In the sweep's parameter order: PostgreSQL's jsonb does not keep the keys' order.
        "values": {n: values[n] for n in [*names, *(k for k in values if k not in names)] if n in values},
        "job": {"id": job.pk, "name": job.display_name, "status": job.status, "status_label": job.status_label,
                "active": job.is_active, "url": _link(request, reverse("api_job", args=[job.pk])),
                "page": _link(request, job.get_absolute_url())},
        "stopped_early": trial.stopped_early or None,
    }


def _trials(sweep: Sweep) -> list[SweepTrial]:
    return list(sweep.trials.select_related("job", "job__workspace", "job__owner").order_by("number"))


def _get_sweep(request: HttpRequest, pk: int) -> Sweep:
    """A sweep of one of the caller's workspaces (narrowed by a token's scope); 404 otherwise, so ids don't leak."""
    found = Sweep.objects.select_related("workspace", "owner").filter(
        workspace__in=access.workspaces_for(request.api_user), pk=pk).first()
    if found is None:
        raise Http404
    return found


# --- endpoints --------------------------------------------------------------------------------------------


@api_view
@require_http_methods(["GET", "HEAD", "POST"])
def sweep_list(request: HttpRequest) -> JsonResponse:
    """GET: the sweeps of the caller's workspaces (or ?workspace=), newest first, 50 a page. POST: create a sweep
    ({"Job": ..., "Parameters": ...})."""
    if request.method == "POST":
        return _create(request)
    if refused := query_errors(request, ["workspace", "after"]):
        return bad_request(refused)
    try:
        found, following = id_page(request, Sweep.objects.select_related("workspace", "owner"), "api_sweeps",
                                   size=LIST_SIZE, newest_first=True)
    except Problem as problem:
        return problem.response()
    statuses: dict[int, list[str]] = {s.pk: [] for s in found}
    rows = SweepTrial.objects.filter(sweep__in=found).order_by("sweep", "number")
    for sweep_id, status in rows.values_list("sweep_id", "job__status"):
        statuses[sweep_id].append(status)
    return JsonResponse({"sweeps": [sweep_json(s, request, statuses=statuses[s.pk]) for s in found],
                         "limit": LIST_SIZE, "next": following})


def _create(request: HttpRequest) -> JsonResponse:
    def replay(pk: int) -> JsonResponse:
        sweep = _get_sweep(request, pk)
        return JsonResponse(sweep_json(sweep, request, _trials(sweep)))

    return idempotency.once(request, idempotency.SWEEPS, lambda: _create_sweep(request), replay)


def _create_sweep(request: HttpRequest) -> JsonResponse:
    payload, workspace, refused = create_request(request, JOB, params=api_jobs.CREATE_PARAMS)
    if refused:
        return refused
    if not isinstance(payload, dict):
        return bad_request(
            {"": ['Send a JSON object: {"Job": {<CreateJob body>}, "Parameters": {"LR": ["0.1", "0.01"]}}.']})
    unknown = api_jobs.unknown_field_message([JOB, PARAMETERS, f"{SEARCH} (optional)", f"{EARLY_STOPPING} (optional)"])
    errors: dict[str, list[str]] = {
        key: [unknown] for key in payload if key not in (JOB, PARAMETERS, SEARCH, EARLY_STOPPING)}
    body = payload.get(JOB)
    checked, locks = None, None
    # Every trial runs after the same job, when the Job body names one (run_after, as POST /api/v1/jobs takes it).
    body, after = api_jobs.take_run_after(request.api_user, workspace, body)
    if isinstance(body, dict):
        locks, template_errors = api_jobs.template_start(request, workspace)
        checked, job_errors = api_jobs.check_body(workspace, body, extra_errors={**template_errors, **after.errors},
                                                  locks=locks)
        errors.update(_in_job(job_errors))
    else:
        errors[JOB] = ["Must be a JSON object: the CreateJob body, as POST /api/v1/jobs takes it."]
        body = {}
    # The wizard reports the grid's problems with the job's; so does this, in one answer. Parsed again with
    # numbers as Decimal, so that a value is the text sent (0.00001, not 1e-05).
    numbers = json.loads(request.body, parse_float=Decimal) if request.body else {}
    grid, grid_errors = parameters_grid(numbers.get(PARAMETERS),
                                        [*_names(body.get("Envs")), *_names(body.get(api_jobs.SECRET_ENVS))],
                                        search=numbers.get(SEARCH))
    errors.update(grid_errors)
    early, early_errors = early_stopping(payload.get(EARLY_STOPPING), grid.size if grid is not None else None)
    errors.update(early_errors)
    if errors or checked is None or grid is None:
        return bad_request(errors)
    grid, found, problems = sweeps.check_trials(grid, checked.wire, context=checked.context,
                                                hints=checked.context.hints, locked=_lock_paths(locks))
    if problems:
        return bad_request({PARAMETERS: problems})
    sweep = sweeps.launch(workspace=workspace, owner=request.api_user, name=checked.wire["DisplayName"], grid=grid,
                          found=found, hints={**checked.hints, **api_jobs.template_link(locks)},
                          secrets=checked.secret_envs, run_after=after.upstream,
                          run_after_when=after.when, early=early)
    response = JsonResponse(sweep_json(sweep, request, _trials(sweep)), status=201)
    response["Location"] = _link(request, reverse("api_sweep", args=[sweep.pk]))
    return response


@api_view
@require_safe
def sweep_detail(request: HttpRequest, pk: int) -> JsonResponse:
    """The sweep and its trials; with ?rank=<metric> (and goal=min|max, value=best|last) ranked as its page ranks
    them (jobs.sweeps.leaderboard), saying which goal and value were used."""
    from jobs import scalars

    sweep = _get_sweep(request, pk)
    if refused := query_errors(request, ["rank", "goal", "value"]):
        return bad_request(refused)
    trials = _trials(sweep)
    out = sweep_json(sweep, request, trials)
    rank = request.GET.get("rank", "").strip()
    out["ranking"] = None
    # goal and value alone are checked too (by the one rule of sweeps.leaderboard), though nothing is ranked.
    if rank or request.GET.get("goal", "").strip() or request.GET.get("value", "").strip():
        now = timezone.now()
        # archiving: a rank asked seconds after the last trial ended is refused saying its metrics are coming.
        rows = [sweeps.TrialRow(t.number, [], {"pk": t.job_id, "status": t.job.status}, "", "",
                                archiving=sweeps.awaiting_archive(t.job, now)) for t in trials]
        values = scalars.last_values(t.job_id for t in trials)
        board = sweeps.leaderboard(rows, values, rank, request.GET.get("goal"), request.GET.get("value"))
        if board.error:
            return bad_request({board.error_field: [board.error]})
    if rank:
        out["ranking"] = board.as_json()
        places = {r.number: r for r in board.rows}
        for trial, item in zip(trials, out["trials"], strict=True):
            row, found = places[trial.number], values.get(trial.job_id, {}).get(rank)
            item["rank"], item["best"] = row.rank, row.best
            item["ranked_value"] = sweeps.score(found, board.goal, board.value) if found is not None else None
    return JsonResponse(out)


@api_view
@require_POST
def sweep_stop(request: HttpRequest, pk: int) -> JsonResponse:
    """Stop every active trial with the page's rule (members their own trials, admins any): 202 with each trial's
    result. A caller who may stop nothing here (a viewer, a read-only token) gets 403, as for a job's stop."""
    sweep = _get_sweep(request, pk)
    scope = access.scope_of(request.api_user)
    if (scope is not None and scope.read_only) or \
            access.role_in(request.api_user, sweep.workspace) == Membership.VIEWER:
        access.require(request.api_user, "stop", workspace=sweep.workspace)  # raises, saying why
    if refused := query_errors(request, ()):
        return bad_request(refused)
    if refused_body := api_jobs.no_body(request):  # as a job's stop
        return refused_body
    trials = _trials(sweep)
    active = [t.job for t in trials if st.is_active(t.job.status)]
    outcome = lifecycle.bulk_stop(request.api_user, active) if active else {}
    # Every trial answers; one that had already ended is said so without asking lifecycle.
    stops = [jobpage.stop_outcome(outcome.get(t.job_id, "already-finished"), t.job, t.job_id) for t in trials]
    results = [{"number": t.number, "job": t.job_id, "result": stop.code, "text": stop.text}
               for t, stop in zip(trials, stops, strict=True)]
    summary = sweeps.stop_summary([stop for stop in stops if stop.job_id in outcome])
    return JsonResponse({"results": results, "summary": summary or "No trial is active.",
                         "sweep": sweep_json(sweep, request, _trials(sweep))}, status=202)


def _line_json(line: usage.Line) -> dict[str, Any]:
    return {"key": line.key, "jobs": line.jobs, "running": line.running, "hours": round(line.hours, 4),
            "node_hours": round(line.node_hours, 4), "cpu_hours": round(line.cpu_hours, 4),
            "gpu_hours": round(line.gpu_hours, 4), "unknown_size_jobs": line.unknown,
            # Decimal text to the cent (jobs.costs.money), in the report's currency; jobs without a price left out,
            # "" when none had one (as documented: not a "0.00" that reads as free).
            "cost": costs.money(line.cost) if line.jobs > line.no_price else "", "no_price_jobs": line.no_price,
            "ceiling_jobs": line.ceiling}


def _usage_job_json(job: usage.JobUsage, request: HttpRequest) -> dict[str, Any]:
    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    return {"id": job.pk, "name": job.name, "owner": job.owner, "job_type": job.job_type, "running": job.running,
            "hours": round(job.hours, 4), "nodes": job.size.nodes, "cpus": job.size.cpu, "gpus": job.size.gpu,
            "node_hours": round(job.hours * job.size.nodes, 4), "cpu_hours": rounded(job.cpu_hours),
            "gpu_hours": rounded(job.gpu_hours), "cost": costs.money(job.cost) if job.cost is not None else None,
            "cost_is_ceiling": job.cost_is_ceiling, "url": _link(request, reverse("api_job", args=[job.pk]))}


@api_view
@require_safe
def workspace_usage(request: HttpRequest, pk: int) -> JsonResponse:
    """The usage report of the page /workspaces/<id>/usage (jobs.usage), as JSON; every member may read it."""
    from jobs.forms.wizard import instance_catalog

    workspace = access.get_workspace(request.api_user, pk)
    if refused := query_errors(request, ["days"]):
        return bad_request(refused)
    given = request.GET.get("days", "")
    days = parse_id(given) if given else usage.DEFAULT_DAYS
    if days not in usage.PERIODS:
        return bad_request({"days": [f"One of {', '.join(str(d) for d in usage.PERIODS)} (days)."]})
    catalog = instance_catalog(workspace)
    result = usage.report(workspace, days, specs=catalog.by_type())
    return JsonResponse({
        "workspace": {"id": workspace.pk, "name": workspace.name},
        "period": {"days": days, "label": usage.PERIODS[days], "start": result.start.isoformat(),
                   "end": result.end.isoformat()},
        "totals": _line_json(result.total),
        "by_owner": [_line_json(line) for line in result.by_owner],
        "by_type": [_line_json(line) for line in result.by_type],
        "top_jobs": [_usage_job_json(job, request) for job in result.top_jobs],
        # CPU- and GPU-hours leave out jobs of unknown size (their node-hours count): say how many, and why.
        "sizes_unknown": result.total.unknown > 0,
        "unknown_size_jobs": result.total.unknown,
        "catalog_missing": result.catalog_missing,
        "catalog_error": catalog.error or None,
        "currency": result.currency,
        "priced": result.priced,
        # Fresh and at the report's end, as the page's: a cached figure could be less than the report's cost.
        "budget": budget.as_json() if (budget := costs.budget(workspace, result.end, fresh=True)) else None,
    })


# --- OpenAPI (merged into api_jobs.openapi_document) -------------------------------------------------------


def _ref(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def sweep_paths(err: dict[str, Any], validation: dict[str, Any], ws_param: dict[str, Any]) -> dict[str, Any]:
    """The paths of this module, with the jobs API's shared Error response, 400 and workspace parameter."""
    sweep_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    sweep_errors = {**validation, "description": "Invalid request: messages keyed by field path. The job's are "
                    "under Job (e.g. Job.JobSpecs[0].PodCount), the sweep's under Parameters (the sweep as a whole: "
                    "too many parameters or trials, a trial the workspace's rules would refuse), "
                    "Parameters.<NAME> (one parameter), Search or Search.Method / Search.Trials / Search.Seed."}
    return {
        "/api/v1/sweeps": {
            "get": {"summary": f"The sweeps of your workspaces, newest (highest id) first, {LIST_SIZE} a page: "
                               "`next` is the URL of the next page (any member)",
                    "parameters": id_page_parameters(ws_param),
                    "responses": {"200": {"description": "Sweeps, without their trials", **_ref("SweepList")},
                                  "400": validation, "401": err, "404": err}},
            "post": {
                "summary": "Create a sweep: a grid (one trial job per combination of the parameters' values) or a "
                           "random search (Trials jobs sampling the parameters), as the wizard's Sweep box; members "
                           "and admins",
                "description": "Each trial is the job with DisplayName `<DisplayName>-01`, `-02`... and each "
                               "parameter added to Envs (the command reads `$NAME`), in grid order: trial 1 takes "
                               "every parameter's first value, the last parameter changes fastest. The job is "
                               "checked as POST /api/v1/jobs checks it (guardrails, SecretEnvs, ?template= locks), "
                               f"the grid by the wizard's rules: at most {sweeps.MAX_PARAMETERS} parameters, "
                               f"{sweeps.MIN_TRIALS} to DLC_SWEEP_MAX_TRIALS (default 50) trials, names that are "
                               "environment variable names, not already in Envs or SecretEnvs and not named like "
                               "a secret (values are stored and shown in plain text), values unique per "
                               "parameter, without commas or line breaks. Every trial must pass the workspace's "
                               "rules; nothing is saved otherwise. A random search (Search.Method random, the "
                               "default when a parameter is a distribution) runs Search.Trials trials (2 to "
                               "DLC_SWEEP_MAX_TRIALS), each sampling every parameter independently with Python's "
                               "random.Random(Search.Seed): a list is a uniform choice among its values, "
                               "uniform(Min, Max) and loguniform(Min, Max) (0 < Min) give floats formatted to 4 "
                               "significant digits, int(Min, Max) an integer with both ends included; Min < Max. "
                               "Trials repeat a combination only when resampling it 100 times fails; fewer "
                               "combinations than Trials is refused. Without Seed a new one is drawn and stored, "
                               "so GET shows it and the same request with it samples the same trials.",
                "parameters": [ws_param,
                               {"name": "template", "in": "query", "schema": {"type": "integer"},
                                "description": "Template the job starts from: its locked fields must keep their "
                                               "values, and a lock on the environment variables refuses a sweep."},
                               {"name": "version", "in": "query", "schema": {"type": "integer"}},
                               idempotency.parameter()],
                "requestBody": {"required": True, **_ref("CreateSweepBody")},
                "responses": {"201": {"description": "Created; the worker submits each trial", **_ref("Sweep")},
                              "400": sweep_errors, "401": err, "403": err, "404": err,
                              **idempotency.responses()}},
        },
        "/api/v1/sweeps/{id}": {"get": {
            "summary": "One sweep with its trials, ranked by a metric on ?rank= as its page ranks them",
            "parameters": [sweep_id,
                           {"name": "rank", "in": "query", "schema": {"type": "string"},
                            "description": "A metric the trials print; the ended trials that have it are ranked. "
                                           "A metric no trial has (yet): 400 at rank."},
                           {"name": "goal", "in": "query", "schema": {"type": "string", "enum": list(sweeps.GOALS)},
                            "description": "Default: min for a loss, an error or a perplexity, else max. Another "
                                           "value: 400 at goal, with or without rank."},
                           {"name": "value", "in": "query",
                            "schema": {"type": "string", "enum": list(sweeps.VALUES), "default": sweeps.DEFAULT_VALUE},
                            "description": "best: the best value each trial reached; last: its last value. "
                                           "Another value: 400 at value, with or without rank."}],
            "responses": {"200": {"description": "The sweep", **_ref("Sweep")},
                          "400": {**validation, "description": "At rank: a metric no trial has; at goal or value: "
                                                               "another value than those listed."},
                          "401": err, "404": err}}},
        "/api/v1/sweeps/{id}/stop": {"post": {
            "summary": "Stop every active trial (members: their own trials; admins: any), as the sweep page's "
                       "Stop all; a viewer or a read-only token gets 403",
            "parameters": [sweep_id],
            "responses": {"202": {"description": "Each trial's result: stopping, stopped, already-finished, "
                                                 "not-permitted or failed", **_ref("SweepStop")},
                          "400": {**validation, "description": "A query parameter, or a body with a field (a stop "
                                                               "takes none: send no body, or {})."},
                          "401": err, "403": err, "404": err,
                          "415": {**validation, "description": "A body whose Content-Type is not JSON."}}}},
        "/api/v1/workspaces/{id}/usage": {"get": {
            "summary": "The workspace's usage report (any member): GPU-, CPU core- and node-hours per owner, per "
                       "job type and for the largest jobs",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                           {"name": "days", "in": "query",
                            "schema": {"type": "integer", "enum": list(usage.PERIODS),
                                       "default": usage.DEFAULT_DAYS}}],
            "responses": {"200": {"description": "The report", **_ref("Usage")}, "400": validation, "401": err,
                          "404": err}}},
    }


def sweep_schemas() -> dict[str, Any]:
    values = {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "number"}]}}
    link = {"type": "string", "format": "uri"}
    sweep = response_object({
        "id": {"type": "integer"}, "name": {"type": "string"}, "workspace": api_jobs.WORKSPACE_REF,
        "owner": {"type": "string", "nullable": True}, "created_at": {"type": "string", "format": "date-time"},
        "search": response_object({
            "method": {"type": "string", "enum": [sweeps.GRID, sweeps.RANDOM]},
            "trials": {"type": "integer", "nullable": True, "description": "Trials asked (random search)."},
            "seed": {"type": "integer", "nullable": True, "description": "The seed sampled with (random search)."}}),
        "parameters": {"type": "object", "additionalProperties": {"oneOf": [
                           {"type": "array", "items": {"type": "string"}},
                           {"$ref": "#/components/schemas/SweepDistribution"}]},
                       "description": "{NAME: [values] or a distribution} in the order given."},
        "trial_count": {"type": "integer"},
        "tally": {"type": "object", "additionalProperties": {"type": "integer"},
                  "description": "Trials per job status."},
        "active": {"type": "boolean", "description": "Whether any trial is still active."},
        "early_stopping": {"$ref": "#/components/schemas/SweepEarlyStopping"},
        "ranking": response_object(
            {"metric": {"type": "string"}, "goal": {"type": "string", "enum": list(sweeps.GOALS)},
             "value": {"type": "string", "enum": list(sweeps.VALUES)},
             "order": {"type": "array", "items": {"type": "integer"}}}, nullable=True,
            description="GET /api/v1/sweeps/{id} only (null without ?rank=): the metric, goal and value the trials "
                        "were ranked by (value best by default: the best value each trial reached) and the ranked "
                        "trials' numbers, best first."),
        "url": link, "page": link,
        "trials": {"type": "array", "description": "Only on POST /api/v1/sweeps and GET /api/v1/sweeps/{id}.",
                   "items": response_object({
                       "number": {"type": "integer"},
                       "values": {"type": "object", "additionalProperties": {"type": "string"}},
                       "stopped_early": {"type": "string", "nullable": True,
                                         "description": "Why early stopping stopped it; null if it did not."},
                       "rank": {"type": "integer", "nullable": True,
                                "description": "With ?rank=: its place (ties share one: 1, 1, 3); null if unranked."},
                       "best": {"type": "boolean", "description": "With ?rank=: in the first place."},
                       "ranked_value": {"type": "number", "nullable": True,
                                        "description": "With ?rank=: the value it is ranked by."},
                       "job": response_object({
                           "id": {"type": "integer"}, "name": {"type": "string"},
                           "status": {"type": "string", "enum": list(st.ALL)},
                           "status_label": {"type": "string"}, "active": {"type": "boolean"},
                           "url": link, "page": link})}, optional=["rank", "best", "ranked_value"])}},
        optional=["ranking", "trials"])
    money = {"type": "string", "description": "Decimal, to the cent, in `currency` (\"\": no job had a price)."}
    line = response_object({
        "key": {"type": "string"}, "jobs": {"type": "integer"}, "running": {"type": "integer"},
        "hours": {"type": "number"}, "node_hours": {"type": "number"}, "cpu_hours": {"type": "number"},
        "gpu_hours": {"type": "number"},
        "unknown_size_jobs": {"type": "integer", "description": "Jobs whose CPU and GPU hours are not counted: "
                                                                "their instance type is unknown."},
        "cost": money,
        "no_price_jobs": {"type": "integer", "description": "Jobs left out of `cost`: no price for their size."},
        "ceiling_jobs": {"type": "integer", "description": "Spot jobs counted in `cost` at their bid's ceiling (the "
                                                           "market price DLC charges is unknown here): when more "
                                                           "than 0, `cost` is at most that."}})
    number = {"type": "number", "nullable": True, "description": "null: the instance type is unknown."}
    return {
        "CreateSweepBody": {"type": "object", "required": [JOB, PARAMETERS], "additionalProperties": False,
                            "properties": {
                                JOB: {"$ref": "#/components/schemas/CreateJobBody"},
                                PARAMETERS: {"type": "object", "additionalProperties": {"oneOf": [
                                                 values, {"$ref": "#/components/schemas/SweepDistribution"}]},
                                             "description": "{NAME: [values] or a distribution}: each parameter "
                                                            "becomes the environment variable NAME of every "
                                                            "trial; numbers in lists are taken as written. A "
                                                            "distribution needs a random search.",
                                             "example": {"LR": {"Distribution": "loguniform", "Min": 1e-5,
                                                                "Max": 0.1}, "BS": [32, 64]}},
                                SEARCH: {"type": "object", "additionalProperties": False, "properties": {
                                    "Method": {"type": "string", "enum": [sweeps.GRID, sweeps.RANDOM],
                                               "description": "Default: random if a parameter is a distribution, "
                                                              "else grid."},
                                    "Trials": {"type": "integer", "minimum": sweeps.MIN_TRIALS,
                                               "description": "Required for a random search; refused for a grid."},
                                    "Seed": {"type": "integer", "minimum": 0, "maximum": sweeps.MAX_SEED,
                                             "description": "Random search only; omitted: a new seed, stored."}},
                                         "example": {"Method": "random", "Trials": 20, "Seed": 7}},
                                EARLY_STOPPING: {"$ref": "#/components/schemas/SweepEarlyStopping"}}},
        "SweepEarlyStopping": {
            "type": "object", "required": ["Metric"], "additionalProperties": False, "nullable": True,
            "description": "Median early stopping (Katib's medianstop): a running trial whose best value so far is "
                           "worse than the median of the succeeded trials' running averages up to its last step is "
                           "stopped through the console's stop, with the reason on the trial and in the audit log.",
            "properties": {
                "Metric": {"type": "string", "description": "As the trials' METRIC lines name it."},
                "Goal": {"type": "string", "enum": list(sweeps.GOALS),
                         "description": "Default: min for a loss, an error or a perplexity, else max."},
                "AfterSucceeded": {"type": "integer", "minimum": 1, "default": early_stop.DEFAULT_AFTER,
                                   "description": "Succeeded trials that reported the metric before any is stopped. "
                                                  "Left out: 3, or one less than the trials on a sweep of 2-3."},
                "NotBeforeStep": {"type": "integer", "minimum": 0, "default": early_stop.DEFAULT_STEP,
                                  "description": "No trial is stopped before it reports this step."}}},
        "SweepDistribution": {"type": "object", "required": list(DISTRIBUTION_KEYS), "additionalProperties": False,
                              "properties": {"Distribution": {"type": "string", "enum": list(sweeps.DISTRIBUTIONS)},
                                             "Min": {"type": "number"}, "Max": {"type": "number"}},
                              "description": "uniform and loguniform: floats between Min and Max (loguniform: "
                                             "0 < Min, uniform in log scale); int: an integer, Min and Max "
                                             "included. Min < Max."},
        "Sweep": sweep,
        "SweepList": response_object({
            "sweeps": {"type": "array", "items": {"$ref": "#/components/schemas/Sweep"}},
            "limit": {"type": "integer", "description": "The page size."},
            "next": {"type": "string", "format": "uri", "nullable": True,
                     "description": "The URL of the next page, to request as it is (null: the last page)."}}),
        "SweepStop": response_object({
            "results": {"type": "array", "items": response_object({
                "number": {"type": "integer"}, "job": {"type": "integer"},
                "result": {"type": "string", "enum": ["stopping", "stopped", "already-finished", "not-permitted",
                                                      "failed"]},
                "text": {"type": "string"}})},
            "summary": {"type": "string"}, "sweep": {"$ref": "#/components/schemas/Sweep"}}),
        "Usage": response_object({
            "workspace": api_jobs.WORKSPACE_REF,
            "period": response_object({
                "days": {"type": "integer"}, "label": {"type": "string"},
                "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"}}),
            "totals": line, "by_owner": {"type": "array", "items": line}, "by_type": {"type": "array", "items": line},
            "top_jobs": {"type": "array", "items": response_object({
                "id": {"type": "integer"}, "name": {"type": "string"}, "owner": {"type": "string"},
                "job_type": {"type": "string"}, "running": {"type": "boolean"}, "hours": {"type": "number"},
                "nodes": {"type": "integer"}, "cpus": number, "gpus": number, "node_hours": {"type": "number"},
                "cpu_hours": number, "gpu_hours": number,
                "cost": {**money, "nullable": True, "description": "Decimal, to the cent; null: no price for it."},
                "cost_is_ceiling": {"type": "boolean", "description": "A spot job's `cost` at its bid's ceiling: "
                                                                      "at most that. False without a cost."},
                "url": link})},
            "sizes_unknown": {"type": "boolean", "description": "Some jobs ran on instance types the backend did "
                                                                "not describe: CPU- and GPU-hours leave them out."},
            "unknown_size_jobs": {"type": "integer"},
            "catalog_missing": {"type": "boolean", "description": "The backend could not list instance types."},
            "catalog_error": {"type": "string", "nullable": True},
            "currency": {"type": "string", "description": "The currency of every `cost`."},
            "priced": {"type": "boolean", "description": "Whether the workspace has any price: false, every cost "
                                                         "is \"\"."},
            "budget": response_object({
                "amount": {"type": "string", "description": "The monthly budget, decimal to the cent."},
                "spent": {"type": "string", "description": "Spent this month, decimal to the cent."},
                "currency": {"type": "string"}, "percent": {"type": "integer"},
                "no_price_jobs": {"type": "integer", "description": "This month's jobs without a price, left out."},
                "ceiling_jobs": {"type": "integer", "description": "This month's spot jobs counted in `spent` at "
                                                                   "their bid's ceiling: when more than 0, `spent` "
                                                                   "is at most that."},
                "refuse_when_spent": {"type": "boolean"}, "month": {"type": "string"}}, nullable=True,
                description="This month's spend against the workspace's monthly budget; null: no budget.")}),
    }
