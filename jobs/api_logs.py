"""JSON API for what the job page shows of a running or ended job besides its configuration: its pods, each pod's
log (the newest lines, then only the new ones from a cursor, as the page's live tail; or the whole log as text),
and its events.

Nothing here reads a log itself: the lines come from jobs.podlogs, the page's one reader (the archive once the job
has ended, else DLC's window and tail by time cursor), masked by it (jobs.logmask: secret values as ********), and
sent as the text the page shows (jobs.ansi: escape codes dropped, the part after a `\\r`); the download keeps the
codes, as the page's download does. The pods are jobpage.pods (the row as last synced), the events
dlc.get_job_events read as the page reads them (jobpage.events). Access is the job page's: anyone who may see the
job (a viewer, a read-only token); a job outside the caller's workspaces (or the token's) answers 404.
"""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_safe

from jobs import access, dlc, jobpage, podlogs
from jobs.api_jobs import bad_request, query_errors
from jobs.apitokens import api_view, error
from jobs.models import Job

# The most lines a first view sends, and its default: the page's first view (older lines are in the download).
TAIL_MAX = podlogs.FIRST_VIEW_LINES
LOG_PARAMS = ("tail", "since", "q")
# An answer's cursor: the page's tail cursor (epoch µs) and, when known, the number of the last line read (the
# page's `n`), as "<µs>" or "<µs>.<n>". Opaque to a script, which sends it back as it is.
_CURSOR = re.compile(r"([0-9]{1,17})(?:\.([0-9]{1,12}))?")
_TAG = re.compile(r"<[^>]*>")
_WHOLE = re.compile(r"[0-9]{1,9}")


def _time(value) -> str | None:
    return value.isoformat() if value else None


def _job_pod(request: HttpRequest, pk: int, pod_id: str) -> tuple[Job, jobpage.PodRow]:
    job = access.get_job(request.api_user, pk)
    pod = jobpage.find_pod(job, pod_id)
    if pod is None:  # as the page: a pod the job's last sync does not list (api_view answers it in JSON)
        raise Http404("Unknown pod.")
    return job, pod


def pod_json(job: Job, pod: jobpage.PodRow, request: HttpRequest) -> dict[str, Any]:
    """A pod as the job page's pods table shows it, with the URLs of its log."""
    log = reverse("api_pod_log", args=[job.pk, pod.pod_id])
    text = reverse("api_pod_log_text", args=[job.pk, pod.pod_id])
    return {"id": pod.pod_id, "role": pod.role, "index": pod.index, "status": pod.status, "ip": pod.ip or None,
            "started_at": _time(pod.start), "finished_at": _time(pod.end),
            "log": request.build_absolute_uri(log), "log_text": request.build_absolute_uri(text)}


@api_view
@require_safe
def job_pods(request: HttpRequest, pk: int) -> JsonResponse:
    """The job's pods as last synced from DLC (the job page's table), by role and index."""
    job = access.get_job(request.api_user, pk)
    if refused := query_errors(request, ()):
        return bad_request(refused)
    return JsonResponse({"pods": [pod_json(job, pod, request) for pod in jobpage.pods(job)]})


def _text(line: SafeString) -> str:
    """A line of a podlogs chunk as text: the page's line (ansi.render: escaped text in colour spans and search
    marks) without its markup, so the API sends exactly the text the page shows, masked as it is there."""
    return html.unescape(_TAG.sub("", line))


def _cursor(chunk: podlogs.Chunk) -> str | None:
    if chunk.cursor is None:
        return None
    return str(chunk.cursor) if chunk.number is None else f"{chunk.cursor}.{chunk.number}"


def _since(raw: str, job: Job, pod_id: str) -> tuple[datetime, int | None]:
    """(the instant, the line number carried) of a `since` cursor, checked as the page's tail checks its own.
    Raises podlogs.BadCursor."""
    match = _CURSOR.fullmatch(raw)
    if match is None:
        raise podlogs.BadCursor("Must be the `cursor` of an earlier answer for this pod, sent as it is.")
    try:
        instant = podlogs.parse_cursor(match.group(1), job, pod_id)
    except podlogs.BadCursor as err:
        raise podlogs.BadCursor(str(err).replace("reload the page", "ask again without `since` for a new cursor")) \
            from None
    number, _ = podlogs.parse_carried({"n": match.group(2)} if match.group(2) else {})
    return instant, number


def _tail_size(raw: str | None) -> int:
    """`?tail=N`: how many of the newest lines a first view sends (1 to TAIL_MAX; default TAIL_MAX). Raises
    ValueError with the message."""
    if raw is None:
        return TAIL_MAX
    if not _WHOLE.fullmatch(raw) or not 1 <= int(raw) <= TAIL_MAX:
        raise ValueError(f"Must be a whole number from 1 to {TAIL_MAX}: the newest lines to send (the whole log "
                         "is the log.txt download).")
    return int(raw)


def _log_answer(pod: jobpage.PodRow, chunk: podlogs.Chunk, job: Job, *, size: int | None = None,
                truncated: bool = False) -> JsonResponse:
    """The JSON of a chunk: its last `size` lines (all: None), as text, with their numbers where known."""
    lines = chunk.lines if size is None else chunk.lines[-size:]
    truncated = truncated or chunk.cut or bool(chunk.skipped) or len(lines) < len(chunk.lines)
    return JsonResponse({"pod": pod.pod_id, "lines": [_text(text) for _, text in lines],
                         "line_numbers": [number for number, _ in lines], "cursor": _cursor(chunk),
                         "more": podlogs.following(job, pod, chunk.cursor), "truncated": truncated})


@api_view
@require_safe
def pod_log(request: HttpRequest, pk: int, pod_id: str) -> HttpResponse:
    """Without `since`: the newest `tail` lines (the page's first view: the archive once the job has ended, else
    DLC's last lines up to a settled cursor). With `since=<cursor>`: the lines logged after it, up to a new cursor
    (the page's live tail: each line is sent once). `q`: only the lines containing it, as the page's search."""
    job, pod = _job_pod(request, pk, pod_id)
    if refused := query_errors(request, LOG_PARAMS):
        return bad_request(refused)
    errors: dict[str, list[str]] = {}
    try:
        query = podlogs.parse_query(request.GET.get("q", ""))
    except podlogs.BadQuery as err:
        errors["q"] = [str(err)]
    since = number = size = None
    if "since" in request.GET:
        if "tail" in request.GET:
            errors["tail"] = ["Only without `since`: a request with a cursor sends every line logged after it."]
        try:
            since, number = _since(request.GET["since"], job, pod_id)
        except podlogs.BadCursor as err:
            errors["since"] = [str(err)]
    else:
        try:
            size = _tail_size(request.GET.get("tail"))
        except ValueError as err:
            errors["tail"] = [str(err)]
    if errors:
        return bad_request(errors)
    try:
        if since is not None:
            return _log_answer(pod, podlogs.tail(job, pod_id, since, query, number=number), job)
        first = podlogs.first_view(job, pod_id, query)
    except dlc.DLCError as err:
        return error(502, f"Could not read the log from DLC; ask again (with the same cursor, if any): {err}")
    return _log_answer(pod, first, job, size=size, truncated=first.full)


@api_view
@require_safe
def pod_log_text(request: HttpRequest, pk: int, pod_id: str) -> HttpResponse:
    """The pod's whole log as masked text/plain, streamed (the page's download: escape codes kept)."""
    job, _pod = _job_pod(request, pk, pod_id)
    if refused := query_errors(request, ()):
        return bad_request(refused)
    try:
        text = podlogs.download(job, pod_id)
    except dlc.DLCError as err:
        return error(502, f"Could not read the log from DLC; ask again: {err}")
    response = StreamingHttpResponse(text, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{podlogs.filename(job, pod_id)}"'
    return response


def event_json(event: jobpage.Event) -> dict[str, Any]:
    return {"time": _time(event.at), "type": event.kind, "reason": event.reason, "message": event.message}


@api_view
@require_safe
def job_events(request: HttpRequest, pk: int) -> JsonResponse:
    """GetJobEvents, as the job page's Events shows them: none before the job reached DLC."""
    job = access.get_job(request.api_user, pk)
    if refused := query_errors(request, ()):
        return bad_request(refused)
    try:
        events = jobpage.events(dlc.get_job_events(job.workspace, job.dlc_job_id)) if job.dlc_job_id else []
    except dlc.DLCError as err:
        return error(502, f"Could not read the events from DLC; ask again: {err}")
    return JsonResponse({"events": [event_json(event) for event in events]})


# --- OpenAPI ---------------------------------------------------------------------------------------------------


def _ref(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def log_paths(err: dict[str, Any], validation: dict[str, Any]) -> dict[str, Any]:
    """The paths of this module, with the jobs API's shared Error response and 400 (jobs.api_jobs)."""
    job_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    pod_id = {"name": "pod_id", "in": "path", "required": True, "schema": {"type": "string"},
              "description": "A pod's `id`, as GET /api/v1/jobs/{id}/pods lists them."}
    unknown_pod = {**err, "description": "No such job for you, or no such pod in its last synced pod list."}
    dlc_failed = {**err, "description": "DLC could not be read (it did not answer, or refused): ask again."}
    return {
        "/api/v1/jobs/{id}/pods": {"get": {
            "summary": "A job's pods as the job page lists them (as last synced from DLC), by role and index",
            "parameters": [job_id],
            "responses": {"200": {"description": "The pods", **_ref("PodList")}, "401": err, "404": err}}},
        "/api/v1/jobs/{id}/pods/{pod_id}/log": {"get": {
            "summary": "A pod's log as the job page shows it: the newest lines, then only the new ones",
            "description": "Without `since`: the newest `tail` lines, from the console's archive once the job has "
                           "ended, else from DLC up to a moment a couple of seconds ago (lines are read once they "
                           "have surely reached DLC's log store). Follow a running pod by asking again with "
                           "`since` = the answer's `cursor` while `more` is true: each answer has only the lines "
                           "logged after the cursor it was sent, so no line comes twice. Lines are the text the "
                           "page shows: the job's secret values as ********, terminal escape codes dropped, a "
                           "line with carriage returns as its last part (a progress bar's last update). The "
                           "download (log.txt) keeps the codes.",
            "parameters": [job_id, pod_id,
                           {"name": "tail", "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": TAIL_MAX, "default": TAIL_MAX},
                            "description": "Without `since` only: how many of the newest lines to send. Else 400 "
                                           "at `tail`."},
                           {"name": "since", "in": "query", "schema": {"type": "string"},
                            "description": "The `cursor` of an earlier answer for this pod, as it was sent: only "
                                           "the lines logged after it (at most the newest "
                                           f"{podlogs.TAIL_MAX_LINES:,} of them; `truncated` says when more were "
                                           "left out). Anything else, or a cursor before the pod or in the "
                                           "future: 400 at `since`."},
                           {"name": "q", "in": "query", "schema": {"type": "string",
                                                                   "maxLength": podlogs.QUERY_MAX_CHARS},
                            "description": "Only the lines containing this text (case-insensitive), as the page's "
                                           f"search: among the newest {TAIL_MAX:,} lines of a running pod, every "
                                           f"line of an archived log (its last {TAIL_MAX:,} matches sent). Longer: "
                                           "400 at `q`."}],
            "responses": {"200": {"description": "Lines of the log", **_ref("PodLog")},
                          "400": {**validation, "description": "A bad `tail`, `since` or `q` (error at it), or a "
                                                               "query parameter the call does not take."},
                          "401": err, "404": unknown_pod, "502": dlc_failed}}},
        "/api/v1/jobs/{id}/pods/{pod_id}/log.txt": {"get": {
            "summary": "A pod's whole log as a text file (the job page's download), masked",
            "description": "Streamed as text/plain with Content-Disposition: attachment and the page's file name. "
                           "The archive once the job has ended, else all DLC holds so far. The job's secret values "
                           "are ********; terminal escape codes and carriage returns are kept.",
            "parameters": [job_id, pod_id],
            "responses": {"200": {"description": "The log, one line per line",
                                  "headers": {"Content-Disposition": {
                                      "schema": {"type": "string"},
                                      "description": "attachment; filename=\"<job name>-<pod id>.log\""}},
                                  "content": {"text/plain": {"schema": {"type": "string"}}}},
                          "401": err, "404": unknown_pod, "502": dlc_failed}}},
        "/api/v1/jobs/{id}/events": {"get": {
            "summary": "A job's events (DLC GetJobEvents) as the job page shows them, oldest first",
            "description": "None while the job has not reached DLC.",
            "parameters": [job_id],
            "responses": {"200": {"description": "The events", **_ref("JobEvents")}, "401": err, "404": err,
                          "502": dlc_failed}}},
    }


def log_schemas() -> dict[str, Any]:
    from jobs.api_jobs import response_object

    when = {"type": "string", "format": "date-time", "nullable": True}
    return {
        "PodList": response_object({"pods": {"type": "array", "items": response_object({
            "id": {"type": "string"}, "role": {"type": "string", "description": "DLC's Type: Worker, Master, ..."},
            "index": {"type": "integer", "description": "The pod's number within its role."},
            "status": {"type": "string"}, "ip": {"type": "string", "nullable": True},
            "started_at": {**when, "description": "Null: not started yet."},
            "finished_at": {**when, "description": "Null: not finished."},
            "log": {"type": "string", "format": "uri", "description": "Its log (GET .../log)."},
            "log_text": {"type": "string", "format": "uri", "description": "Its whole log as text (.../log.txt)."},
        })}}),
        "PodLog": response_object({
            "pod": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "string"}, "description": "Oldest first, masked."},
            "line_numbers": {"type": "array", "items": {"type": "integer", "nullable": True},
                             "description": "Each line's number in the log (1: its first line), null where it is "
                                            "not known (a running pod's window that does not reach the log's "
                                            "start, and the lines after it)."},
            "cursor": {"type": "string", "nullable": True,
                       "description": "Send it as `since` for the lines logged after these. Null: nothing more "
                                      "will come this way (an ended job)."},
            "more": {"type": "boolean", "description": "Ask again with `since` = `cursor`: the pod runs, or ended so "
                                                       "recently that its last lines may still come."},
            "truncated": {"type": "boolean", "description": "Lines before these were left out: the log has earlier "
                                                            "lines than a first view sends (log.txt has them all), "
                                                            "or a `since` answer fell over "
                                                            f"{podlogs.TAIL_MAX_LINES:,} lines behind."},
        }),
        "JobEvents": response_object({"events": {"type": "array", "items": response_object({
            "time": {**when, "description": "Null: the event had no (valid) time."},
            "type": {"type": "string", "nullable": True, "description": "Normal, Warning, ...; null: not said."},
            "reason": {"type": "string", "nullable": True, "description": "Null: not said."},
            "message": {"type": "string", "description": "The rest of the event (all of it, without type and "
                                                         "reason)."}})}}),
    }
