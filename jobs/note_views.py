"""The Notes card of the job page (jobs.notes) and its API: add, edit, delete.

HTMX requests get the card (templates/jobs/notes_card.html) in place; without JavaScript a change that worked
redirects to the job page (POST-redirect-GET), and a refused one shows the card on a page of its own with the text
as typed and the reason at the field.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from jobs import access, notes
from jobs.api_jobs import json_body, query_errors, unknown_fields
from jobs.apitokens import api_view
from jobs.models import Job
from jobs.spec.base import text_problem
from jobs.views import wants_partial

_NUL_PROBLEM = text_problem("\x00")  # json_body's words for a NUL, at any path


def _note_id(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _card(request: HttpRequest, job: Job, **state: Any) -> HttpResponse:
    context = {"card": notes.card(request.user, job, **state)}
    if wants_partial(request):
        return render(request, "jobs/notes_card.html", context)
    return render(request, "jobs/notes.html", context)


def _done(request: HttpRequest, job: Job, anchor: str = "notes") -> HttpResponse:
    if wants_partial(request):
        return _card(request, job)
    return redirect(f"{job.get_absolute_url()}#{anchor}")


@login_required
@require_http_methods(["GET", "POST"])
def job_notes(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the card (?edit=<note id>: with that note's edit form). POST: add a note (members and admins)."""
    if request.method == "GET":
        job = access.get_job(request.user, pk)
        return _card(request, job, editing=_note_id(request.GET.get("edit", "")))
    job = access.get_job(request.user, pk, "note")
    form = notes.NoteForm(request.POST)
    if not form.is_valid():
        return _card(request, job, form=form)
    note = notes.add(request.user, job, form.cleaned_data["text"])
    return _done(request, job, f"note-{note.pk}")


@login_required
@require_POST
def job_note_edit(request: HttpRequest, pk: int, note_id: int) -> HttpResponse:
    job = access.get_job(request.user, pk)
    note = notes.find_or_none(job, note_id)
    if refusal := notes.edit_refusal(request.user, note):
        # htmx swaps no 4xx answer: the card comes back (200) saying why, the typed text kept in it.
        answer = _card(request, job, notice=refusal, kept=str(request.POST.get("text", ""))[:notes.MAX_CHARS * 2])
        if not wants_partial(request):
            answer.status_code = 404 if note is None else 403
        return answer
    form = notes.NoteForm(request.POST)
    if not form.is_valid():
        return _card(request, job, editing=note.pk, edit_form=form)
    notes.edit(request.user, note, form.cleaned_data["text"])
    return _done(request, job, f"note-{note.pk}")


@login_required
@require_POST
def job_note_delete(request: HttpRequest, pk: int, note_id: int) -> HttpResponse:
    job = access.get_job(request.user, pk)
    note = notes.find_or_none(job, note_id)
    if note is None:
        if wants_partial(request):  # deleted by another tab meanwhile: the card as it is now (htmx swaps no 404)
            return _card(request, job)
        raise Http404("No such note on this job.")
    notes.delete(request.user, note)
    return _done(request, job)


# --- API ---------------------------------------------------------------------------------------------------


@api_view
@require_http_methods(["GET", "HEAD", "POST"])
def api_job_notes(request: HttpRequest, pk: int) -> JsonResponse:
    """GET: the job's notes, oldest first. POST {"text": "..."}: add one (members and admins; not a read-only
    token); 201 with the note, its Location the notes' URL (a note has none of its own)."""
    if unknown := query_errors(request, ()):
        return JsonResponse({"errors": unknown}, status=400)
    if request.method in ("GET", "HEAD"):
        job = access.get_job(request.api_user, pk)
        return JsonResponse({"notes": [notes.note_json(note) for note in notes.thread(job)]})
    job = access.get_job(request.api_user, pk, "note")
    payload, bad = json_body(request)
    if bad:
        return _in_notes_words(bad)
    if not isinstance(payload, dict):  # the body as a whole is wrong, not its text: at "", as api_jobs says it
        return JsonResponse({"errors": {"": ['The request body must be a JSON object: {"text": "..."}.']}},
                            status=400)
    if "text" not in payload:
        return JsonResponse({"errors": {"text": ['Send {"text": "..."}: the note\'s text is required.']}},
                            status=400)
    if unknown := unknown_fields(payload, ["text"]):  # e.g. "pinned": notes have no such thing, say so
        return JsonResponse({"errors": unknown}, status=400)
    try:
        note = notes.add(request.api_user, job, payload["text"])
    except notes.NoteError as err:
        return JsonResponse({"errors": {"text": [err.message]}}, status=400)
    answer = JsonResponse(notes.note_json(note), status=201)
    answer["Location"] = request.build_absolute_uri(reverse("api_job_notes", args=[job.pk]))
    return answer


def _in_notes_words(bad: JsonResponse) -> JsonResponse:
    """json_body's 400 with a NUL in the text said as the form and notes.clean_text say it: json_body refuses what
    no field can store in any body, before the note's own rules are asked, in the API's general words."""
    body = json.loads(bad.content)
    said = body.get("errors", {}).get("text") if isinstance(body.get("errors"), dict) else None
    if not said or _NUL_PROBLEM not in said:
        return bad
    body["errors"]["text"] = [notes.NUL_MESSAGE if message == _NUL_PROBLEM else message for message in said]
    return JsonResponse(body, status=bad.status_code)


def note_paths(err: dict[str, Any], validation: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI paths of the notes API, with the jobs API's shared Error response and 400 (jobs.api_jobs)."""
    job_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    note = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobNote"}}}}
    return {"/api/v1/jobs/{id}/notes": {
        "get": {"summary": "A job's notes, oldest first (anyone who may see the job)", "parameters": [job_id],
                "responses": {"200": {"description": "The notes", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"notes": {"type": "array", "items": {
                        "$ref": "#/components/schemas/JobNote"}}}}}}}, "401": err, "404": err}},
        "post": {"summary": "Add a note to a job (members and admins of its workspace; not a read-only token). "
                            "Console-side only: never sent to DLC, not copied into a clone nor exported",
                 "parameters": [job_id],
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {
                     "type": "object", "required": ["text"], "properties": {"text": {
                         "type": "string", "minLength": 1, "maxLength": notes.MAX_CHARS,
                         "description": "Plain text; blank space around it is stripped, line breaks are kept."}}}}}},
                 "responses": {"201": {"description": "The note", **note}, "400": validation, "401": err,
                               "403": err, "404": err}},
    }}


def note_schemas() -> dict[str, Any]:
    return {"JobNote": {"type": "object", "properties": {
        "id": {"type": "integer"}, "job": {"type": "integer"},
        "author": {"type": "string", "nullable": True, "description": "Username; null once the user is deleted."},
        "text": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"},
        "edited_at": {"type": "string", "format": "date-time", "nullable": True}}}}
