"""GET /healthz: database, Redis, a Celery worker, and each workspace's DLC endpoint."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from consoleapp.celery import app
from jobs import dlc, syncstate
from jobs.models import Workspace


def _check(fn) -> dict:
    try:
        detail = fn()
        return {"ok": True, **({"detail": detail} if detail else {})}
    except Exception as exc:  # noqa: BLE001 - a health check reports every failure
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis() -> None:
    redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2).ping()


def _worker() -> str:
    # limit=1: a ping without it waits out its whole timeout collecting replies, so every /healthz took 3 s.
    replies = app.control.ping(timeout=3, limit=1)
    if not replies:
        raise RuntimeError("no Celery worker answered a ping")
    return f"{next(iter(replies[0]))} answered"


def _workspace(ws: Workspace):
    return lambda: dlc.list_ecs_specs(ws, PageSize=1) and None


# The DLC checks' results, kept DLC_HEALTH_CACHE_SECONDS: /healthz is open to anyone, and without this every request
# cost one DLC call per workspace (seconds each while DLC fails). Kept in this process, not in Django's cache: the
# production cache is the Redis that /healthz checks, and the lock lets a flood of requests wait for one round of
# calls instead of each starting its own. Several web processes each make at most one round per period.
_dlc_results: dict[tuple, tuple[float, dict]] = {}
_dlc_lock = threading.Lock()


def _dlc_key(ws: Workspace) -> tuple:
    # Everything the check's outcome depends on: an edited endpoint or credential is checked afresh at once.
    return (ws.pk, ws.backend, ws.region, ws.endpoint, ws.dlc_workspace_id, ws.credential_profile, ws.role_arn)


def _dlc_checks(workspaces: list[Workspace], pool: ThreadPoolExecutor) -> dict[int, dict]:
    """Each workspace's DLC check result by pk: the kept one while fresh, else checked now in the pool (beside the
    other checks). Under the lock, so requests arriving meanwhile wait for this round and then reuse it."""
    ttl = float(getattr(settings, "DLC_HEALTH_CACHE_SECONDS", 30))
    with _dlc_lock:
        now = time.monotonic()
        for key in [k for k, (expires, _) in _dlc_results.items() if expires <= now]:
            del _dlc_results[key]  # stale, or of a workspace deleted or edited since
        stale = [ws for ws in workspaces if _dlc_key(ws) not in _dlc_results]
        for ws, result in zip(stale, pool.map(_check, [_workspace(ws) for ws in stale]), strict=True):
            _dlc_results[_dlc_key(ws)] = (time.monotonic() + ttl, result)
        return {ws.pk: _dlc_results[_dlc_key(ws)][1] for ws in workspaces}


@csrf_exempt  # it changes nothing: a POST gets the 405 below, not the HTML page of a CSRF failure
def healthz(request: HttpRequest) -> JsonResponse:
    """Open to load balancers; only staff see workspace names and error texts, others just the ok flags."""
    if request.method not in ("GET", "HEAD"):
        return JsonResponse({"error": f"{request.method} not allowed: /healthz answers GET and HEAD."}, status=405,
                            headers={"Allow": "GET, HEAD"})
    detailed = request.user.is_authenticated and request.user.is_staff
    # The database is checked on the request's own connection; the rest in parallel, each with a timeout.
    results = {"database": _check(_database)}
    workspaces = list(Workspace.objects.all()) if results["database"]["ok"] else []
    with ThreadPoolExecutor(max_workers=8) as pool:
        others = {"redis": pool.submit(_check, _redis), "worker": pool.submit(_check, _worker)}
        dlc_results = _dlc_checks(workspaces, pool)
        results |= {name: future.result() for name, future in others.items()}
    results |= {f"workspace:{ws.name if detailed else ws.pk}": dlc_results[ws.pk] for ws in workspaces}
    ok = all(r["ok"] for r in results.values())
    body: dict = {"ok": ok}
    if not detailed:
        results = {name: {"ok": r["ok"]} for name, r in results.items()}
    elif results["database"]["ok"]:
        body["failing_syncs"] = syncstate.failing_count()  # details on each workspace's settings page
    return JsonResponse({**body, "checks": results}, status=200 if ok else 503)
