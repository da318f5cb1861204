"""GET /healthz: database, Redis, a Celery worker, and each workspace's DLC endpoint."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import redis
from django.conf import settings
from django.db import connection
from django.http import JsonResponse

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
    replies = app.control.ping(timeout=3)
    if not replies:
        raise RuntimeError("no Celery worker answered a ping")
    return f"{len(replies)} worker(s)"


def _workspace(ws: Workspace):
    return lambda: dlc.list_ecs_specs(ws, PageSize=1) and None


def healthz(request):
    """Open to load balancers; only staff see workspace names and error texts, others just the ok flags."""
    detailed = request.user.is_authenticated and request.user.is_staff
    # The database is checked on the request's own connection; the rest in parallel, each with a timeout.
    results = {"database": _check(_database)}
    workspaces = list(Workspace.objects.all()) if results["database"]["ok"] else []
    checks = {"redis": _redis, "worker": _worker} | {
        f"workspace:{ws.name if detailed else ws.pk}": _workspace(ws) for ws in workspaces
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        results |= dict(zip(checks, pool.map(_check, checks.values()), strict=True))
    ok = all(r["ok"] for r in results.values())
    body: dict = {"ok": ok}
    if not detailed:
        results = {name: {"ok": r["ok"]} for name, r in results.items()}
    elif results["database"]["ok"]:
        body["failing_syncs"] = syncstate.failing_count()  # details on each workspace's settings page
    return JsonResponse({**body, "checks": results}, status=200 if ok else 503)
