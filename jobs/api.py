"""The wizard's JSON endpoint: the dry run, POST /api/v1/jobs/validate; and the API's JSON 404 and 405.

Authentication and CSRF come from the API's one helper, jobs.apitokens.api_view: a signed-in session
(CSRF-checked like a form post, so our JavaScript sends X-CSRFToken) or an API token (`Authorization:
Bearer ...`, CSRF-exempt: no cookie is involved, so a forged page has nothing to ride on).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_POST

from jobs import access, api_jobs, policies, spec
from jobs.apitokens import api_view, error
from jobs.views import current_workspace


def _errors(status: int, message: str, path: str = "") -> JsonResponse:
    return JsonResponse({"errors": {path: [message]}}, status=status)


@api_view
@require_POST
def validate_job(request: HttpRequest) -> JsonResponse:
    """Run exactly the wizard's validation (jobs.spec with the workspace's context) on a CreateJob body.

    200 {"valid": true, "notes": {...}} or 400 {"errors": {"<wire path, e.g. JobSpecs[0].PodCount>": [...]}}.
    `?workspace=<id>` picks the workspace whose region, guardrails and instance types apply.
    """
    try:
        body = json.loads(request.body or b"")
    except RequestDataTooBig:
        return _errors(413, "The request body is too large.")
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError too
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return _errors(400, f"The request body is not valid JSON{where}: {getattr(exc, 'msg', exc)}.")
    wanted = request.GET.get("workspace", "")
    if wanted:
        pk = api_jobs.parse_id(wanted)
        workspace = access.workspaces_for(request.api_user).filter(pk=pk).first() if pk else None
        if workspace is None:
            return _errors(404, "No such workspace.", "workspace")
    else:
        workspace = current_workspace(request) if request.user.is_authenticated else \
            access.workspaces_for(request.api_user).first()
    context = policies.context_for(workspace) if workspace else spec.Context(reserved_tags=1)
    env_errors: dict[str, list[str]] = {}
    if isinstance(body, dict):  # SecretEnvs and run_after, as POST /api/v1/jobs takes them (jobs.api_jobs)
        from jobs.api_jobs import merge_secret_envs, take_run_after

        body, _secrets, env_errors = merge_secret_envs(body)
        if workspace is not None:
            body, after = take_run_after(request.api_user, workspace, body)
            env_errors.update(after.errors)
    errors = {**env_errors, **spec.validate(body, context)}
    if errors:
        return JsonResponse({"errors": errors}, status=400)
    return JsonResponse({"valid": True, "notes": spec.notes(spec.inverse(body), context)})


class JsonErrorsMiddleware:
    """Under /api/, the 404 of a path no endpoint has and the 405 of a method an endpoint does not take are
    answered in the API's error format ({"error": ...}), not as Django's HTML page or an empty body: a client
    parsing JSON would otherwise fail on the answer that tells it what is wrong."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith("/api/") or response.status_code not in (404, 405) \
                or response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return error(404, "Not found: no API endpoint at this path (see /api/v1/openapi.json).")
        allowed = response.get("Allow", "")
        answer = error(405, f"Method {request.method} is not allowed here; allowed: {allowed or 'none'}.")
        answer["Allow"] = allowed
        return answer
