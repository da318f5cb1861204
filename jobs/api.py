"""The dry run, POST /api/v1/jobs/validate; and the API's JSON 404, 405 and 413, and its caching headers.

Authentication and CSRF come from the API's one helper, jobs.apitokens.api_view: a signed-in session
(CSRF-checked like a form post, so our JavaScript sends X-CSRFToken) or an API token (`Authorization:
Bearer ...`, CSRF-exempt: no cookie is involved, so a forged page has nothing to ride on).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_POST

from jobs import access, api_jobs, spec
from jobs.apitokens import api_view, error


def _errors(status: int, message: str, path: str = "") -> JsonResponse:
    return JsonResponse({"errors": {path: [message]}}, status=status)


@api_view
@require_POST
def validate_job(request: HttpRequest) -> JsonResponse:
    """Run exactly the create's checks (POST /api/v1/jobs: jobs.spec with the workspace's guardrails, WorkspaceId,
    SecretEnvs, run_after, ?template= locks) on a CreateJob body, saving nothing.

    200 {"valid": true, "notes": {"<wire path>": [...]}, "can_create": bool[, "cannot_create": "<the create's 403
    message>"]} or
    400 {"errors": {"<wire path, e.g. JobSpecs[0].PodCount>": [...]}}.
    The workspace is chosen as the create chooses it (api_jobs.request_workspace): ?workspace=<id>, else the
    caller's only one, else the one whose DLC workspace is the body's WorkspaceId; else 400 with `candidates`.
    Viewers may ask too: a dry run changes nothing, and `can_create` says whether the create would be refused.
    """
    if unknown := api_jobs.query_errors(request, api_jobs.CREATE_PARAMS):  # as the create refuses them
        return api_jobs.bad_request(unknown)
    body, refused = api_jobs.json_body(request)  # the create's own reading: the same 400, 413 and 415
    if refused:
        return refused
    try:
        workspace = api_jobs.request_workspace(request, "view", dlc_workspace_id=api_jobs.body_workspace_id(body))
    except api_jobs.Problem as problem:
        return problem.response()
    locks, extra = api_jobs.template_start(request, workspace) if isinstance(body, dict) else (None, {})
    checked, _after, errors = api_jobs.check_submit(request.api_user, workspace, body, extra_errors=extra,
                                                    locks=locks)
    if checked is None:
        return JsonResponse({"errors": errors}, status=400)
    # The notes at wire paths, as the errors are: a section path (environment.storages[0].uri) names no field of
    # the body it is about (DataSources[1].Uri when a dataset comes first).
    sections = spec.inverse(checked.wire)
    notes: dict[str, list[str]] = {}
    for path, messages in spec.notes(sections, checked.context).items():
        notes.setdefault(spec.wire_path(path, sections), []).extend(messages)
    answer = {"valid": True, "notes": notes, "can_create": True}
    try:  # a viewer's or a read-only token's valid body would still be the create's 403: say so, and why
        access.require(request.api_user, "create", workspace=workspace)
    except PermissionDenied as refused:
        answer.update(can_create=False, cannot_create=str(refused) or "Not permitted.")
    return JsonResponse(answer)


class JsonErrorsMiddleware:
    """Under /api/: the 404 of a path no endpoint has, the 405 of a method an endpoint does not take (with its
    Allow) and the 413 of too large a body are answered in the API's error format, not as Django's HTML page (or a
    400 page and a logged traceback: RequestDataTooBig) or an empty body: a client parsing JSON would otherwise
    fail on the answer that tells it what is wrong. Every API answer is private and not to be stored (it is one
    caller's data, behind a token or a session), and a 204 has no Content-Type, as it has no content."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith("/api/"):
            return response
        response = self._as_json(request, response)
        if response.status_code == 204:
            del response["Content-Type"]
        if "Cache-Control" not in response:
            response["Cache-Control"] = "private, no-store"
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if request.path.startswith("/api/") and isinstance(exception, RequestDataTooBig):
            return _errors(413, f"The request body is too large (at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} "
                                "bytes).")
        return None

    @staticmethod
    def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.status_code not in (404, 405) or response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return error(404, "Not found: no API endpoint at this path (see /api/v1/openapi.json).")
        allowed = response.get("Allow", "")
        answer = error(405, f"Method {request.method} is not allowed here; allowed: {allowed or 'none'}.")
        answer["Allow"] = allowed
        return answer
