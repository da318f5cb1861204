"""`Idempotency-Key` for the API's creates (POST /api/v1/jobs, /sweeps, /schedules) and clones
(/jobs/{id}/clone), as Stripe and the IETF draft httpapi-idempotency-key-header have it.

A script that retries a create after a timeout cannot know whether the first attempt created anything; with the
same key it gets the first attempt's answer instead of a second job (or sweep of GPU jobs). A key is its user's,
per endpoint, for KEEP (24 h):

- the first request claims the key (a row, committed at once: the unique constraint decides between concurrent
  requests, whichever process they run in), creates, and records the status and what it created; a create that
  fails (400, 403...) or raises drops the claim, so the client fixes the request and retries with the same key;
- a retry with the same query and body is answered with the recorded status, the created object as it is now and
  the same Location, and creates nothing (`Idempotent-Replayed: true`);
- the same key with another query or body: 422; while the first request still runs, a retry waits up to WAIT
  seconds for its outcome, then answers 409 (Retry-After).

Only a keyed hash of the request is kept, never the request (it may carry secrets). Expired rows are treated as absent
and deleted by `prune` (the beat's sweep_stuck task).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, JsonResponse
from django.utils import timezone

from jobs.portal_models import ApiIdempotencyKey

HEADER = "Idempotency-Key"
MAX_LENGTH = 255
KEEP = timedelta(hours=24)
# How long a retry waits for a first request still running before answering 409: a create takes well under a
# second (it never calls DLC), and a client that retries at once after a dropped connection should get the answer.
WAIT = 3.0
POLL = 0.05
# A claim this old whose request never finished (its process died between creating and recording): what it
# created is unknown, so the key stays refused (409) until it expires rather than risk a second create.
STALE = timedelta(minutes=5)

JOBS, SWEEPS, SCHEDULES = "jobs", "sweeps", "schedules"


def clone_endpoint(source_id: int) -> str:
    """A clone's endpoint: its path, so a key is per source job (the fingerprint holds the query and body, not the
    path: the same key and empty body cloning another job is another request). At most 29 characters."""
    return f"jobs/{source_id}/clone"


def parameter() -> dict:
    """The OpenAPI header parameter of the create operations (and the clone)."""
    return {"name": HEADER, "in": "header", "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_LENGTH, "pattern": "^[ -~]+$"},
            "description": "Makes the create safe to retry (IETF draft httpapi-idempotency-key-header, Stripe's "
                           "semantics): a unique value of yours (a UUID), 1-255 printable ASCII characters, kept 24 h "
                           "per user and endpoint. A retry with the same key, query and body creates nothing and "
                           "answers the first request's status with the created object as it is now and the same "
                           "Location (header `Idempotent-Replayed: true`). The same key with another query or body: "
                           "422; while the first request with it still runs: 409 with Retry-After (retry then). A "
                           "create that failed (400, 403...) is not recorded: fix the request and retry with the "
                           "same key. Errors are at `Idempotency-Key`."}


def responses() -> dict:
    """The extra OpenAPI responses a create with the header may answer: _refuse's body, `errors` at the header and
    a `code` (not the shared Error)."""
    def answer(description: str, *codes: str) -> dict:
        return {"description": description, "content": {"application/json": {"schema": {
            "type": "object", "required": ["errors", "code"], "properties": {
                "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                           "description": f"At {HEADER}."},
                "code": {"type": "string", "enum": list(codes)}}}}}}

    return {"409": answer("A request with this Idempotency-Key is still in progress (retry after Retry-After "
                          "seconds), or what it created no longer exists.", "idempotency_key_in_progress",
                          "idempotency_key_target_gone"),
            "422": answer("This Idempotency-Key was used for a request with another query or body.",
                          "idempotency_key_reused")}


def _refuse(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"errors": {HEADER: [message]}, "code": code}, status=status)


def key_of(request: HttpRequest) -> tuple[str | None, JsonResponse | None]:
    """(the request's key or None when it sends none, None) or (None, the 400 refusing a malformed one)."""
    if HEADER not in request.headers:
        return None, None
    key = request.headers[HEADER]
    if not 1 <= len(key) <= MAX_LENGTH or not all(" " <= c <= "~" for c in key):
        return None, _refuse(400, "idempotency_key_invalid",
                             f"Must be 1 to {MAX_LENGTH} printable ASCII characters (a UUID, say).")
    return key, None


def fingerprint(request: HttpRequest) -> str:
    """What makes two requests "the same": the query (it picks the workspace, the template) and the body as sent.
    Keyed with SECRET_KEY: a plain hash of a body whose other fields the job row shows would let whoever reads the
    database try guesses at a weak secret sent in it (a registry password) offline."""
    query = urlencode(sorted((k, v) for k in request.GET for v in request.GET.getlist(k))).encode()
    return hmac.new(settings.SECRET_KEY.encode(), query + b"\n" + request.body, hashlib.sha256).hexdigest()


def once(request: HttpRequest, endpoint: str, create: Callable[[], JsonResponse],
         replay: Callable[[int], JsonResponse]) -> JsonResponse:
    """Answer a create at most once per Idempotency-Key: `create()` makes the answer (a 2xx whose JSON has the
    created object's `id`, and its Location), `replay(id)` the created object as it is now. Without the header,
    just create()."""
    key, refused = key_of(request)
    if refused is not None:
        return refused
    if key is None:
        return create()
    claim, answer = _claim(request.api_user, endpoint, key, fingerprint(request), replay)
    if claim is None:
        return answer
    try:
        response = create()
    except BaseException:
        _drop(claim)
        raise
    if 200 <= response.status_code < 300:
        _record(claim, response)
    else:
        _drop(claim)
    return response


def _claim(user, endpoint: str, key: str, mark: str, replay: Callable[[int], JsonResponse]) \
        -> tuple[ApiIdempotencyKey | None, JsonResponse | None]:
    """(this request's claim on the key, None), or (None, the answer): a replay, a 422, a 409."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            with transaction.atomic():  # a savepoint when the caller is in a transaction: it stays usable
                return ApiIdempotencyKey.objects.create(user=user, endpoint=endpoint, key=key, fingerprint=mark), None
        except IntegrityError:
            pass
        found = ApiIdempotencyKey.objects.filter(user=user, endpoint=endpoint, key=key).first()
        now = timezone.now()
        if found is not None and found.created_at <= now - KEEP:
            # Expired: a new request. Deleted only if no other request replaced it meanwhile.
            ApiIdempotencyKey.objects.filter(pk=found.pk, created_at=found.created_at).delete()
            found = None
        if found is not None and found.fingerprint != mark:
            return None, _refuse(422, "idempotency_key_reused",
                                 "This key was used for another request (a different query or body) in the last "
                                 "24 hours: send a new key for a new request.")
        if found is not None and found.status is not None:
            return None, _replayed(found, replay)
        if time.monotonic() >= deadline:
            return None, _in_progress(found, now)
        if found is not None:
            time.sleep(POLL)
        # else: the first request failed (its claim dropped) or expired: claim the key for this one


def _in_progress(found: ApiIdempotencyKey | None, now) -> JsonResponse:
    if found is not None and found.created_at <= now - STALE:
        message = (f"A request with this key started at {found.created_at.isoformat(timespec='seconds')} and never "
                   "finished: whether it created anything is unknown. Look for it (GET the list), then send a new "
                   "key.")
    else:
        message = "A request with this key is in progress: retry in a moment for its answer."
    response = _refuse(409, "idempotency_key_in_progress", message)
    response["Retry-After"] = "1"
    return response


def _replayed(found: ApiIdempotencyKey, replay: Callable[[int], JsonResponse]) -> JsonResponse:
    try:
        response = replay(found.object_id)
    except (Http404, PermissionDenied):
        return _refuse(409, "idempotency_key_target_gone",
                       f"The request with this key created {found.location or 'an object'}, which no longer exists "
                       "(or you may no longer see it): send a new key to create again.")
    response.status_code = found.status
    if found.location:
        response["Location"] = found.location
    response["Idempotent-Replayed"] = "true"
    return response


def _record(claim: ApiIdempotencyKey, response: JsonResponse) -> None:
    try:
        created = json.loads(response.content).get("id")
    except (ValueError, AttributeError):
        created = None
    ApiIdempotencyKey.objects.filter(pk=claim.pk).update(
        status=response.status_code, object_id=created if isinstance(created, int) else None,
        location=response.get("Location", "")[:2000])


def _drop(claim: ApiIdempotencyKey) -> None:
    ApiIdempotencyKey.objects.filter(pk=claim.pk, status__isnull=True).delete()


def prune(now=None) -> int:
    """Delete the keys older than KEEP; how many."""
    cutoff = (now or timezone.now()) - KEEP
    return ApiIdempotencyKey.objects.filter(created_at__lte=cutoff).delete()[0]
